import Foundation

/// Version 11 of the state snapshot (Docs/WireFormat.md §5.11): a typed text's characters and
/// slot runs are left to the log, whose typing operations hold them already, and the loader
/// makes them as it reads the log (issue 45, W16.text: the text's characters and slot runs were
/// 250,139 of the state snapshot's 572,584 bytes, the log's typed runs holding the same again).
///
/// A text's local versions number its characters in the order the saving replica learned of
/// them, which is the log's order of the operations that typed them (each edit appends its
/// characters' slots, `TextSequence.apply`); its slot runs (ids, origins) are what appending
/// each typing operation's characters makes (``TextSlots/appendRun(id:count:left:right:)``
/// joins runs by the same rule whatever the grouping). The encoder checks that this holds for
/// each text (``StateSnapshotEncoder/derivableTexts(of:)``: a text rebuilt from the log's
/// typing, compared run by run and scalar by scalar) and writes the others whole, as version 10.
///
/// What a derived text still writes is its order: the runs of consecutive local versions of its
/// tree, each as `signed(start − previousEnd) count`, visibility left out (the loader hides
/// exactly the characters the log's edits removed, which version 10 checked instead). The text
/// part of a field (§5.9) starts with a kind: 0, the text whole (§5.6's layout); 1, derived:
/// `m:varint` then the `m` runs.
///
/// After the runs, 4 bytes (little-endian): a digest (``DerivedTextDigest``) of what the loader
/// makes from the log, the slot runs, characters and which of them are removed, so that a damaged
/// byte of the log that makes another text (another letter, origin or removed character, which
/// version 10 found against the text it wrote) is an error, not another document.
///
/// The log: consecutive text run records of one replica, each depending on the one before, are
/// one record (tag 6 with the sum of their counts) where the loader's log, which cuts runs as
/// `OpLog.append(other:)` does, cuts them again where they were cut
/// (``StateSnapshotEncoder/joinedTextRuns()``).
extension StateSnapshotEncoder {
    /// The text kinds of a field's text part in version 11.
    enum TextKind: UInt64 {
        /// §5.6's layout: slot runs, characters, order with visibility.
        case whole = 0
        /// The order only, as runs of consecutive local versions; the rest from the log.
        case derived = 1
    }

    /// The texts of records written as state whose characters and slot runs are exactly what
    /// the log's typing operations make when appended in log order.
    ///
    /// - Complexity: O(m + n) for m log records and n characters.
    static func derivableTexts(of doc: ListDocument) -> Set<TextStateCheck.Key> {
        struct Made {
            var slots = TextSlots()
            var utf8: [UInt8] = []
            var ok = true
            /// Per replica: one past the greatest counter typed.
            var ends: [ReplicaID: UInt64] = [:]

            mutating func type(id: OpID, count n: Int, after: OpID, before: OpID, _ text: some Collection<UInt8>) {
                guard ok else { return }
                let left = after == .none ? LocalVersion.none : slots.lv(of: after)
                let right = before == .none ? LocalVersion.none : slots.lv(of: before)
                guard let left, let right, id.counter >= ends[id.replica] ?? 0,
                      slots.count + n < Int(Int32.max) else { ok = false; return }
                ends[id.replica] = id.counter &+ UInt64(n)
                _ = slots.appendRun(id: id, count: n, left: left, right: right)
                utf8.append(contentsOf: text)
            }
        }
        var made: [TextStateCheck.Key: Made] = [:]
        let log = doc.log, others = log.others
        for (r, rec) in log.records.enumerated() {
            switch rec.kind {
            case .textRun:
                let run = others.runs[Int(rec.payload)]
                guard run.typing else { continue }
                let field = others.field(ofRun: Int(rec.payload))
                let text = others.runText[Int(run.textStart) ..< Int(run.textStart + run.textBytes)]
                made[TextStateCheck.Key(record: field.target.opID, name: field.name), default: Made()]
                    .type(id: OpID(counter: rec.counter, replica: log.replica(ofRecord: r)), count: Int(run.count),
                          after: run.first, before: run.before, text)
            case .other:
                guard !others.isKeptAsBytes(Int(rec.payload)) else { continue }   // no text
                let op = others[Int(rec.payload)]
                let target: OpID, writes: FieldWrites
                switch op.kind {
                case let .writeFields(t, w): (target, writes) = (t.opID, w)
                case let .insertItemWithFields(_, _, _, w), let .insertSectionWithFields(_, _, w): (target, writes) = (op.id, w)
                default: continue
                }
                for w in writes.writes {
                    guard case .text(let e) = w.change, e.insertedCount > 0 else { continue }
                    made[TextStateCheck.Key(record: target, name: w.name), default: Made()]
                        .type(id: op.id, count: e.insertedCount, after: e.after, before: e.before, Array(e.insert.utf8))
                }
            default: continue
            }
        }
        var out = Set<TextStateCheck.Key>()
        var bytes: [UInt8] = []
        for (record, fields) in doc.records.materialized {
            for (name, f) in fields {
                let key = TextStateCheck.Key(record: record, name: name)
                guard let t = f.text, let m = made[key], m.ok, m.slots.count == t.slotCount,
                      m.slots.runs.count == t.slots.runs.count else { continue }
                guard zip(m.slots.runs, t.slots.runs).allSatisfy({ a, b in
                    a.lv == b.lv && a.count == b.count && a.id == b.id && a.left == b.left && a.right == b.right
                }) else { continue }
                bytes.removeAll(keepingCapacity: true)
                t.scalars.appendUTF8(0 ..< t.scalars.count, to: &bytes)
                if bytes == m.utf8 { out.insert(key) }
            }
        }
        return out
    }

    /// Version 11: per log record, whether it is written as part of the text run record before
    /// it (a text run of the same replica whose first operation has the next id and depends on
    /// exactly the one before, and does not continue the run before by `OpLog`'s rule, so that
    /// the loader's log starts a record there again).
    ///
    /// - Complexity: O(m) for m log records.
    func joinedTextRuns() -> [Bool] {
        let log = doc.log
        var out = Array(repeating: false, count: log.records.count)
        for r in log.records.indices.dropFirst() {
            let a = log.records[r - 1], b = log.records[r]
            guard a.kind == .textRun, b.kind == .textRun, a.replica == b.replica, b.deps < 0,
                  a.counter &+ UInt64(a.count) == b.counter else { continue }
            let lastOfA = OpID(counter: b.counter &- 1, replica: log.replica(ofRecord: r))
            out[r] = !log.others.continues(Int(a.payload), lastID: lastOfA, with: Int(b.payload))
        }
        return out
    }

    /// A derived text's part: its order as runs of consecutive local versions.
    static func putDerivedText(_ t: TextSequence, into b: inout WireWriter) {
        var runs: [(start: Int, count: Int)] = []
        t.forest.forEachRun(TextSequence.tree) { lv, n, _ in
            if let last = runs.last, last.start + last.count == lv.int {
                runs[runs.count - 1].count += n
            } else {
                runs.append((lv.int, n))
            }
        }
        b.count(Int(TextKind.derived.rawValue))
        b.count(runs.count)
        var previousEnd = 0
        var removed = [Bool](repeating: false, count: t.slotCount)
        for run in runs {
            b.signed(Int64(run.start - previousEnd))
            b.count(run.count)
            previousEnd = run.start + run.count
        }
        t.forest.forEachRun(TextSequence.tree) { lv, n, visible in
            if !visible { for k in lv.int ..< lv.int + n { removed[k] = true } }
        }
        let digest = DerivedTextDigest.of(t.slots, t.scalars, removed: removed)
        for k in 0 ..< 4 { b.byte(UInt8(truncatingIfNeeded: digest >> (8 * k))) }
    }
}

/// FNV-1a (32 bits) of a derived text's slot runs (each run's id, count and origins), its
/// characters' UTF-8 and whether each is removed: what version 11 leaves to the log. One byte
/// changed anywhere in its input always changes it (each step is a bijection of the state).
enum DerivedTextDigest {
    /// The digest of a text's slot runs, scalars and removed flags (one per character).
    ///
    /// - Complexity: O(n + r) for n characters in r slot runs.
    static func of(_ slots: TextSlots, _ scalars: TextScalars, removed: [Bool]) -> UInt32 {
        var h: UInt32 = 0x811C_9DC5
        @inline(__always) func add(_ b: UInt8) { h = (h ^ UInt32(b)) &* 0x0100_0193 }
        @inline(__always) func add64(_ v: UInt64) { for k in 0 ..< 8 { add(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        for run in slots.runs {
            add64(run.id.replica.rawValue)
            add64(run.id.counter)
            add64(UInt64(UInt32(bitPattern: run.count)))
            add64(UInt64(UInt32(bitPattern: run.left.raw)) << 32 | UInt64(UInt32(bitPattern: run.right.raw)))
        }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(scalars.count)
        scalars.appendUTF8(0 ..< scalars.count, to: &utf8)
        for b in utf8 { add(b) }
        for r in removed { add(r ? 1 : 0) }
        return h
    }
}

extension StateRecords {
    /// A field's text part: §5.6's layout, or in version 11 its kind first, a derived text's
    /// order put in `derived` (its state then holds an empty text until the log has made it).
    /// Out of line, so that reading a record without text compiles as before.
    ///
    /// - Complexity: O(n) for n characters (or order runs) written.
    @inline(never)
    func readText(_ r: inout WireReader, name k: Int, derived: UnsafeMutablePointer<DerivedOrders>?) throws(WireError) -> TextSequence {
        let at = r.offset
        switch derivedTexts ? try r.varint() : StateSnapshotEncoder.TextKind.whole.rawValue {
        case StateSnapshotEncoder.TextKind.whole.rawValue: return try TextSequence(decoding: &r, replicas: replicas)
        case StateSnapshotEncoder.TextKind.derived.rawValue:
            guard let derived else { throw .invalidValue("a text made from the log where none can be", offset: at) }
            derived.pointee[names[k]] = try Self.readDerivedOrder(&r)
            return TextSequence()
        case let v: throw .invalidValue("a text of kind \(v)", offset: at)
        }
    }

    /// Version 11: a derived text's order (``StateSnapshotEncoder/putDerivedText(_:into:)``), as
    /// `start, count` pairs, each start at least 0 and each run within `Int32`; whether they
    /// place every character once is checked when the log has made the characters.
    ///
    /// - Complexity: O(m) for m runs.
    static func readDerivedOrder(_ r: inout WireReader) throws(WireError) -> (order: [Int], digest: UInt32) {
        let m = try r.count(minBytes: 2)
        var out: [Int] = []
        out.reserveCapacity(2 * m)
        var previousEnd: Int64 = 0
        for _ in 0 ..< m {
            let at = r.offset
            let (start, overflow) = previousEnd.addingReportingOverflow(try r.signed())
            let n = try r.varint()
            guard !overflow, start >= 0, n >= 1, n < UInt64(Int32.max), start + Int64(n) < Int64(Int32.max) else {
                throw .invalidValue("a text order run out of range", offset: at)
            }
            out.append(Int(start))
            out.append(Int(n))
            previousEnd = start + Int64(n)
        }
        var digest: UInt32 = 0
        for k in 0 ..< 4 { digest |= UInt32(try r.byte()) << (8 * k) }
        return (out, digest)
    }
}

extension TextStateCheck.Field {
    /// A text of version 11 to be made from the log (its order, from ``StateRecords/readDerivedOrder(_:)``).
    init(derivedOrder: (order: [Int], digest: UInt32)) {
        self.init(TextSequence())
        self.derivedOrder = derivedOrder.order
        derivedDigest = derivedOrder.digest
    }

    /// Version 11: the log's edit `edit` of operation `id`, appended to the text being made:
    /// its origins and removed characters must be characters the log typed before it
    /// (`earlier`), its characters new ids of their replica; its origins' order is checked once
    /// the order is known (``finishDerived()``). Why not, or nil.
    ///
    /// - Complexity: O(d log r + log r + k) for d removed and k inserted characters.
    mutating func appendDerived(_ edit: TextEdit, id: OpID, earlier: (OpID) -> Bool) -> String? {
        edits += 1
        var left = LocalVersion.none, right = LocalVersion.none
        if let why = noteOrigins(of: edit, earlier: earlier, left: &left, right: &right) { return why }
        let k = edit.insertedCount
        guard k > 0 else { return nil }
        if let why = appendCharacters(id: id, count: k, left: left, right: right, edit.insert) { return why }
        return nil
    }

    /// Appends `n` characters typed by operations `id ..< id + n` (`text`, n scalars), the first
    /// with origins `left` and `right`, each later one right after the one before.
    private mutating func appendCharacters(id: OpID, count n: Int, left: LocalVersion, right: LocalVersion, _ typed: String) -> String? {
        guard id.counter >= derivedEnds[id.replica] ?? 0, text.slotCount + n < Int(Int32.max) else {
            return "its characters are the text's already"
        }
        derivedEnds[id.replica] = id.counter &+ UInt64(n)
        _ = text.slots.appendRun(id: id, count: n, left: left, right: right)
        guard text.scalars.append(contentsOf: typed) == n else { return "\(n) characters typed as another number of scalars" }
        removed.append(contentsOf: repeatElement(false, count: n))
        inserted += n
        return nil
    }

    /// ``noteSplices(_:_:from:count:earlier:)`` for a text of version 11: the typed characters
    /// appended (their origins checked as there, their order once the order is known), the
    /// removed ones noted. False, with nothing changed, when one step cannot take them; a
    /// problem found after the text changed is kept for ``finishDerived()``.
    ///
    /// - Complexity: O(log r + n) for n splices.
    mutating func appendDerivedSplices(_ batch: DecodedBatch, _ run: DecodedBatch.SpliceRun, from: Int, count: Int,
                                       earlier: (OpID, OpID) -> Bool) -> Bool {
        let firstID = run.id.advanced(by: from)
        guard let (left, right) = origins(of: run, from: from, earlier: earlier) else { return false }
        guard firstID.counter >= derivedEnds[firstID.replica] ?? 0 else { return false }
        let bytes = batch.characterBytes(run, from: from, count: count)
        let typed = batch.bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[bytes]), as: UTF8.self) }
        edits += count
        if let why = appendCharacters(id: firstID, count: count, left: left, right: right, typed) { failure = why }
        return true
    }

    /// Version 11, once the log is read: the text's order from its runs (every character placed
    /// once; a character hidden exactly when the log removed it), and each slot run's origins in
    /// that order (as a received edit's are checked). Why not, or nil; the text is then whole.
    ///
    /// - Complexity: O(n + r log n) for n characters in r slot runs.
    mutating func finishDerived() -> String? {
        guard let order = derivedOrder else { return nil }
        derivedOrder = nil
        if let failure { return failure }
        let total = text.slotCount
        var covered = [Bool](repeating: false, count: total)
        var entries: [SlotForest.Entry] = []
        for p in stride(from: 0, to: order.count, by: 2) {
            let start = order[p], end = order[p] + order[p + 1]
            guard end <= total else { return "a text order run past its \(total) characters" }
            var k = start
            while k < end {
                let visible = !removed[k]
                var e = k
                while e < end, e - k < SlotForest.maxEntryLength, removed[e] != visible {
                    guard !covered[e] else { return "a text character placed twice" }
                    covered[e] = true
                    e += 1
                }
                entries.append(SlotForest.Entry(lv: LocalVersion(Int32(k)), count: e - k, visible: visible))
                k = e
            }
        }
        guard !covered.contains(false) else { return "a text character not placed" }
        guard DerivedTextDigest.of(text.slots, text.scalars, removed: removed) == derivedDigest else {
            return "a text the log makes other than the snapshot's digest says"
        }
        var forest = SlotForest()
        forest.addSlots(total)
        forest.appendTree(entries)
        for run in text.slots.runs where run.right.exists {
            if run.left.exists, !forest.isBefore(run.left, run.right) { return "a text's origins out of order" }
            guard forest.allBefore(run.lv, count: Int(run.count) - 1, run.right) else { return "a text's origins out of order" }
        }
        text = TextSequence(forest: forest, slots: text.slots, scalars: text.scalars)
        return nil
    }
}
