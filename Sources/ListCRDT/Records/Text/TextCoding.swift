import Foundation

/// The bytes of a text edit inside a field write (Docs/WireFormat.md §2.8, wire format 4): the
/// change tag ``FieldCode/Change/text``, the two origins and each removed range's first
/// character as references (relative to the operation, as every id of a batch), the inserted
/// text as length-prefixed UTF-8, and the removed ranges.
enum TextCode {
    /// The oldest wire format version that holds a text edit.
    static let version: UInt8 = 4
}

extension FieldWrites {
    /// Whether a write is a text edit (which only wire format 4 holds; every field write is written
    /// as version 4 since field names went into a table, Docs/WireFormat.md §2.7).
    var hasTextEdit: Bool { writes.contains { if case .text = $0.change { true } else { false } } }
}

extension TextEdit {
    /// Calls `body` with every id the edit refers to (so the batch's replica table holds them).
    func forEachReferencedID(_ body: (OpID) -> Void) {
        if after != .none { body(after) }
        if before != .none { body(before) }
        for r in deletes { body(r.first) }
    }
}

extension BatchEncoder {
    /// A field change: a text edit with its references, any other change as
    /// ``WireWriter/fieldChange(_:)`` writes it.
    mutating func fieldChangeOrText(_ change: FieldChange, _ op: ListOperation) {
        guard case .text(let e) = change else { out.fieldChange(change); return }
        out.byte(FieldCode.Change.text.rawValue)
        ref(e.after, op, default: OpID.none)
        ref(e.before, op, default: OpID.none)
        out.data(Data(e.insert.utf8))
        out.count(e.deletes.count)
        for r in e.deletes {
            ref(r.first, op, default: nil)
            out.count(r.count)
        }
    }
}

extension BatchDecoder {
    /// A field change written by ``BatchEncoder/fieldChangeOrText(_:_:)``; a text edit only in a
    /// batch of version 4 or later.
    mutating func fieldChangeOrText(_ id: OpID) throws(WireError) -> FieldChange {
        let at = reader.offset
        guard try reader.byte() == FieldCode.Change.text.rawValue else {
            reader.rewind(to: at)
            return try reader.fieldChange(maxValueSize: maxValueSize)
        }
        guard version >= TextCode.version else { throw .invalidTag(FieldCode.Change.text.rawValue, offset: at) }
        var e = TextEdit()
        e.after = try ref(id, default: OpID.none)
        e.before = try ref(id, default: OpID.none)
        e.insert = try reader.utf8(limit: maxValueSize)
        let countAt = reader.offset
        let n = try reader.count(minBytes: 2)
        guard n <= TextLimits.maxDeleteRanges else { throw .countTooLarge(n, offset: countAt) }
        e.deletes.reserveCapacity(n)
        for _ in 0 ..< n {
            let first = try ref(id, default: nil)
            let lengthAt = reader.offset
            let k = try reader.count(minBytes: 0)
            guard k >= 1, UInt64(k) <= OpID.maxCounter - first.counter else {
                throw .invalidValue("a removed range of \(k) characters", offset: lengthAt)
            }
            e.deletes.append(TextRange(first: first, count: k))
        }
        return .text(e)
    }
}

// MARK: - The text of a record (snapshots, Docs/WireFormat.md §5.6)

extension RecordStore {
    /// Whether any field holds a text sequence (its records are then written in the layout of
    /// snapshot version 6).
    ///
    /// - Complexity: O(f) for f fields.
    var hasText: Bool { materialized.values.contains { $0.values.contains { $0.text != nil } } }
}

extension TextSequence {
    /// Writes the text whole, through `put`, as it is (so that a load can still place concurrent inserts): the
    /// slot runs in local-version order (first id through `id`, count, origins as local version
    /// + 1, 0 for an end), every scalar as UTF-8 in local-version order, then the tree's entries
    /// (first local version, signed length: negative for removed characters).
    ///
    /// - Complexity: O(n) for n characters kept.
    func encode(_ put: (TextToken) -> Void) {
        put(.count(slots.runs.count))
        for run in slots.runs {
            put(.id(run.id))
            put(.count(Int(run.count)))
            put(.count(Int(run.left.raw) + 1))
            put(.count(Int(run.right.raw) + 1))
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(scalars.count)
        scalars.appendUTF8(0 ..< scalars.count, to: &bytes)
        put(.data(Data(bytes)))
        var entries: [SlotForest.Entry] = []
        forest.forEachRun(Self.tree) { lv, n, visible in entries.append(SlotForest.Entry(lv: lv, count: n, visible: visible)) }
        put(.count(entries.count))
        for e in entries {
            put(.count(Int(e.lv.raw)))
            put(.signed(Int64(e.len)))
        }
    }

    /// One thing ``encode(_:)`` writes: the writer's owner writes ids with its replica table.
    enum TextToken {
        case id(OpID), count(Int), signed(Int64), data(Data)
    }

    /// Reads a text written by ``encode(_:)``, checking everything the sequence indexes
    /// with: origins before their run, scalars one per slot, entries covering every slot once.
    ///
    /// - Complexity: O(n + r log r) for n characters and r runs.
    init(decoding r: inout WireReader, replicas: [ReplicaID]) throws(WireError) {
        var slots = TextSlots()
        let runCount = try r.count(minBytes: 4)
        var total = 0
        var seenIDs = Set<OpID>()
        for _ in 0 ..< runCount {
            let at = r.offset
            let first = try Self.readID(&r, replicas: replicas)
            let n = try r.count(minBytes: 0)
            let left = try r.count(minBytes: 0), right = try r.count(minBytes: 0)
            guard n >= 1, n <= r.remaining + 1, total + n < Int(Int32.max), left <= total, right <= total,
                  first.counter <= OpID.maxCounter - UInt64(n) else {
                throw .invalidValue("a text run out of range", offset: at)
            }
            // No id twice: each run's first id is new and not inside an earlier run.
            guard slots.lv(of: first) == nil, slots.lv(of: first.advanced(by: n - 1)) == nil,
                  seenIDs.insert(first).inserted else { throw .invalidValue("a text character twice", offset: at) }
            _ = slots.appendRun(id: first, count: n, left: LocalVersion(Int32(left - 1)), right: LocalVersion(Int32(right - 1)))
            total += n
        }
        let textAt = r.offset
        let text = try r.utf8(limit: r.remaining)
        let scalars = TextScalars(text)
        guard scalars.count == total else { throw .invalidValue("\(scalars.count) characters for \(total) slots", offset: textAt) }
        let entriesAt = r.offset
        let m = try r.count(minBytes: 2)
        var covered = [Bool](repeating: false, count: total)
        var entries: [SlotForest.Entry] = []
        entries.reserveCapacity(m)
        for _ in 0 ..< m {
            let lv = try r.count(minBytes: 0)
            let len = try r.signed()
            let n = Int(len.magnitude)
            guard len != 0, n <= SlotForest.maxEntryLength, lv + n <= total else {
                throw .invalidValue("a text entry out of range", offset: entriesAt)
            }
            for k in lv ..< lv + n {
                guard !covered[k] else { throw .invalidValue("a text character placed twice", offset: entriesAt) }
                covered[k] = true
            }
            entries.append(SlotForest.Entry(lv: LocalVersion(Int32(lv)), count: n, visible: len > 0))
        }
        guard !covered.contains(false) else { throw .invalidValue("a text character not placed", offset: entriesAt) }
        var forest = SlotForest()
        forest.addSlots(total)
        forest.appendTree(entries)
        self.init(forest: forest, slots: slots, scalars: scalars)
    }

    /// An id as ``RecordStore/encoded()`` writes one (replica index + 1, then the counter), never
    /// ``OpID/none``.
    private static func readID(_ r: inout WireReader, replicas: [ReplicaID]) throws(WireError) -> OpID {
        let at = r.offset
        let k = try r.varint()
        guard k >= 1, k <= UInt64(replicas.count) else { throw .invalidValue("replica index \(k) not in the table", offset: at) }
        let c = try r.varint()
        guard c >= 1, c <= OpID.maxCounter else { throw .invalidValue("counter \(c) out of range", offset: at) }
        return OpID(counter: c, replica: replicas[Int(k - 1)])
    }
}
