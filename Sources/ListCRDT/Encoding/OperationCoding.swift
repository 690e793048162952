import Foundation

/// The compact binary encoding of operation batches (Docs/WireFormat.md).
extension ListOperation {
    /// The newest format version; ``decode(_:)`` reads it and every version down to
    /// ``oldestWireFormatVersion``.
    ///
    /// ``encode(_:)`` writes the oldest version that can hold the batch: version 5 only when a
    /// section inserted with its fields is in it (kind 13 with the `variant` bit,
    /// Docs/WireFormat.md §2.7), version 4 when a field write is, version 2 when a move run (§2.6)
    /// is, else version 1, byte for byte as before, so that a peer that reads only an older
    /// version still reads every batch that needs nothing newer. Version 3 (field writes with every
    /// name spelled out and every clock whole) is read, never written.
    public static let wireFormatVersion: UInt8 = 7

    /// The version ``encode(_:)`` writes for a batch with a field write or an item inserted with
    /// its fields, and no section inserted with its fields (Docs/WireFormat.md §2.7).
    public static let fieldsWireFormatVersion: UInt8 = 4

    /// The version ``encode(_:)`` writes for a batch holding a section inserted with its fields
    /// (``ListOperation/needsWireFormat5``); an older decoder refuses it by its version byte.
    public static let sectionFieldsWireFormatVersion: UInt8 = 5

    /// The version ``encode(_:)`` writes for a batch holding a text run: two or more consecutive
    /// one-character splices of one text field by one replica (``ListOperation/needsWireFormat6(_:)``,
    /// Docs/WireFormat.md §2.9); an older decoder refuses it by its version byte.
    public static let textRunWireFormatVersion: UInt8 = 6

    /// The version ``encode(_:)`` writes for a batch holding a text block: two or more consecutive
    /// one-character splices of one text field by one replica, written as one record of runs
    /// (``ListOperation/needsWireFormat7(_:)``, Docs/WireFormat.md §2.10), where version 6 wrote a
    /// record per run; an older decoder refuses it by its version byte. ``encode(_:)`` no longer
    /// writes version 6 (``encodeWithTextRuns(_:)`` does, for tests of older readers).
    public static let textBlockWireFormatVersion: UInt8 = 7

    /// The oldest format version ``decode(_:)`` reads.
    public static let oldestWireFormatVersion: UInt8 = 1

    /// The default limit on the number of operations one batch may decode to: 65,536.
    ///
    /// Runs of deletes cost no bytes per operation, so the bytes of a batch do not bound how many
    /// operations it expands to; this limit does. Raise it when batches are larger.
    public static let defaultMaxBatchOperations = 1 << 16

    /// Encodes a batch of operations (any order; usually causal).
    ///
    /// Operations must be valid (every counter in `1...OpID.maxCounter`) for ``decode(_:)`` to
    /// accept the bytes; then `decode(encode(ops)) == ops` exactly.
    ///
    /// - Complexity: O(n + v) for n operations (counting ids in moves, deps and section deletes)
    ///   and v value bytes.
    public static func encode<C: Collection>(_ ops: C) -> [UInt8] where C.Element == ListOperation {
        var encoder = BatchEncoder(Array(ops))
        return encoder.encode()
    }

    /// ``encode(_:)`` as builds before wire format 7 wrote it: typed text as text runs (kind 14,
    /// version 6), one record per run, and a lone keystroke as a field write. For tests that load
    /// what older builds wrote.
    ///
    /// - Complexity: O(n + v), as ``encode(_:)``.
    static func encodeWithTextRuns<C: Collection>(_ ops: C) -> [UInt8] where C.Element == ListOperation {
        var encoder = BatchEncoder(Array(ops))
        encoder.textBlocks = false
        return encoder.encode()
    }

    /// Decodes a batch completely and validates it before returning anything.
    ///
    /// Values may be up to ``ListDocument/defaultMaxValueSize`` bytes and the batch up to
    /// ``defaultMaxBatchOperations`` operations.
    ///
    /// - Complexity: O(b + n) for b bytes and n operations.
    public static func decode(_ bytes: some Collection<UInt8>) throws(WireError) -> [ListOperation] {
        try decode(bytes, maxValueSize: ListDocument.defaultMaxValueSize)
    }

    /// Decodes a batch completely and validates it before returning anything, refusing a value
    /// longer than `maxValueSize` bytes and a batch of more than `maxOperations` operations.
    ///
    /// - Complexity: O(b + n) for b bytes and n operations.
    public static func decode(
        _ bytes: some Collection<UInt8>,
        maxValueSize: Int,
        maxOperations: Int = ListOperation.defaultMaxBatchOperations
    ) throws(WireError) -> [ListOperation] {
        var reader = WireReader(bytes)
        let ops = try BatchDecoder.decode(from: &reader, maxValueSize: maxValueSize, maxOperations: maxOperations)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        return ops
    }
}

// MARK: - Shared between the encoder and the decoder

/// Record kinds: the low four bits of a record's first byte.
enum RecordKind: UInt8 {
    case insertSection = 1, insertItem, moveSection, moveItems, deleteItem, deleteSection
    case setItemValue, setSectionValue
    /// Consecutive single-item inserts by one replica, typed left to right.
    case insertItemRun
    /// Consecutive single-item deletes by one replica (backspace or forward delete).
    case deleteItemRun
    /// Consecutive single-item moves by one replica in one section, fields bit-packed
    /// (version 2, MoveRunCoding.swift).
    case moveItemRun
    /// Field writes of one section or item (version 3, Records/FieldCoding.swift; written as
    /// version 4); the variant flag says the target is a section.
    case writeFields
    /// An item insert with its first fields (version 3; written as version 4); with the variant
    /// flag (version 5), a section insert with its first fields.
    case insertItemWithFields
    /// Consecutive one-character splices of one text field by one replica (version 6,
    /// Records/Text/TextRunCoding.swift): typing forward, or with the variant flag removing one
    /// character after another.
    case textRun
    /// Consecutive one-character splices of one text field by one replica, as several text runs
    /// in one record (version 7, Records/Text/TextBlockCoding.swift).
    case textBlock

    /// The oldest format version that has this kind of record.
    var version: UInt8 {
        switch self {
        case .moveItemRun: 2
        case .writeFields, .insertItemWithFields: 3
        case .textRun: 6
        case .textBlock: 7
        default: 1
        }
    }
}

/// Flags in the high four bits of a record's first byte.
enum RecordFlag {
    /// The replica is the previous operation's (no replica index follows).
    static let sameReplica: UInt8 = 0x10
    /// The counter is the previous operation's last counter + 1 (no counter delta follows).
    static let nextCounter: UInt8 = 0x20
    /// The deps are exactly {previous operation's last id} (no deps follow).
    static let depsPrevious: UInt8 = 0x40
    /// Kind-specific: one-byte values (insert run), descending item ids (delete run), or a single
    /// item (moveItems).
    static let variant: UInt8 = 0x80
}

/// What both sides remember from the operations before the current one: what the shortcuts mean.
struct CodingContext {
    /// The last id of the previous operation (`.none` before the first).
    var previousLast = OpID.none
    /// The section the previous section-bearing operation named (or inserted).
    var lastSection: SectionID?
    /// The record the previous text run or text block record wrote (versions 6 and 7: its
    /// target's default).
    var lastTextTarget: OpID?

    mutating func advance(past op: ListOperation) {
        previousLast = op.lastID
        switch op.kind {
        case .insertSection: lastSection = SectionID(op.id)
        case .insertItem(let s, _, _), .moveSection(let s, _), .moveItems(_, let s, _),
             .deleteSection(let s, _, _), .setSectionValue(let s, _):
            lastSection = s
        case .deleteItem, .setItemValue: break
        case .writeFields(let target, _):
            if case .section(let s) = target { lastSection = s }
        case .insertItemWithFields(let s, _, _, _):
            lastSection = s
        case .insertSectionWithFields:
            lastSection = SectionID(op.id)
        }
    }
}

/// What a version-4 batch has said of fields so far (Docs/WireFormat.md §2.7): each name by its
/// number, in the order the batch first spelled them out, and the last field clock.
struct FieldNameTable {
    var index: [String: Int] = [:]
    var names: [String] = []
    var lastClock: UInt64 = 0
}

/// Reference codes (see Docs/WireFormat.md, "References").
enum RefCode {
    /// The field's default: nil for an origin, the entity itself for `seen`, the last section for
    /// a section; invalid elsewhere.
    static let fieldDefault: UInt64 = 0
    /// The previous operation's last id.
    static let previous: UInt64 = 1
    /// Explicit references start here: code = 2 + 2 × replica index + (1 if the counter is not
    /// below the operation's own), then the distance between the counters.
    static let firstExplicit: UInt64 = 2
}

extension ListOperation {
    /// Whether `next` can follow `op` in an insert run.
    static func continuesInsertRun(_ op: ListOperation, _ next: ListOperation, first: ListOperation) -> Bool {
        guard case .insertItem(let s, let o, _) = op.kind,
              case .insertItem(let s2, let o2, _) = next.kind,
              case .insertItem(_, let o0, _) = first.kind
        else { return false }
        return next.id.replica == op.id.replica && next.id.counter == op.id.counter &+ 1
            && next.deps.isOnly(op.id) && s2 == s
            && o2.after == SlotID(op.id) && o2.before == o0.before && o.before == o0.before
    }

    /// Whether `next` can follow `op` in a delete run going `step` (+1 or -1) through item counters.
    static func continuesDeleteRun(_ op: ListOperation, _ next: ListOperation, step: Int64) -> Bool {
        guard case .deleteItem(let item, _) = op.kind,
              case .deleteItem(let item2, let seen2) = next.kind
        else { return false }
        return next.id.replica == op.id.replica && next.id.counter == op.id.counter &+ 1
            && next.deps.isOnly(op.id)
            && item2.opID.replica == item.opID.replica
            && Int64(bitPattern: item2.opID.counter &- item.opID.counter) == step
            && seen2.opID == item2.opID
    }
}

// MARK: - Encoder

/// The replicas a batch refers to, in the order the encoder first meets them (its replica table).
struct ReplicaCollector {
    private(set) var table: [ReplicaID] = []
    private(set) var index = ReplicaTable()
    private var last = ReplicaID(0), seenAny = false

    /// Notes every replica `op` refers to (``ListOperation/forEachReferencedID(_:)``).
    mutating func note(_ op: ListOperation) {
        op.forEachReferencedID { id in
            // Most ids share the previous one's replica: skip the table lookup then.
            if seenAny && id.replica == last { return }
            seenAny = true
            last = id.replica
            if index.insert(id.replica) == table.count { table.append(id.replica) }
        }
    }
}

/// Writes a batch: header, replica table, operation count, records.
///
/// All at once (``encode()``), or a window of operations at a time (``start(_:count:)``,
/// ``records(final:)``, ``finish()``): a run that reaches the end of a window waits for the next,
/// so the bytes are the same either way.
struct BatchEncoder {
    /// The operations not written yet (a window of the batch when it is written in windows).
    var ops: [ListOperation]
    var out = WireWriter()
    var replicaIndex = ReplicaTable()
    var context = CodingContext()
    /// The field names written so far and the last field clock (version 4's shortcuts).
    var fieldNames = FieldNameTable()
    /// The newest format version a record written so far needs.
    var version = ListOperation.oldestWireFormatVersion
    /// Whether typed text is written as text blocks (version 7); else as text runs (version 6),
    /// as builds before version 7 wrote it (``ListOperation/encodeWithTextRuns(_:)``).
    var textBlocks = true
    /// Where the version byte is in `out`.
    private var versionAt = 0

    init(_ ops: [ListOperation]) { self.ops = ops }

    mutating func encode() -> [UInt8] {
        var replicas = ReplicaCollector()
        for op in ops { replicas.note(op) }
        start(replicas, count: ops.count)
        var i = 0
        while i < ops.count { i += record(at: i, final: true)! }
        return finish()
    }

    /// Writes the header: the version (set by ``finish()``), the replica table, the operation count.
    mutating func start(_ replicas: ReplicaCollector, count: Int) {
        replicaIndex = replicas.index
        versionAt = out.bytes.count
        out.byte(0)  // the version, known at the end
        out.count(replicas.table.count)
        for r in replicas.table { out.varint(r.rawValue) }
        out.count(count)
    }

    /// Writes the records of ``ops`` and drops them from it: all of them when `final`, else those
    /// that end before its last operation (a run reaching it may go on in the next window).
    mutating func records(final: Bool) {
        var i = 0
        while i < ops.count, let n = record(at: i, final: final) { i += n }
        ops.removeSubrange(0..<i)
    }

    /// The bytes, once every record is written.
    mutating func finish() -> [UInt8] {
        out.bytes[versionAt] = version
        return out.bytes
    }

    /// Writes the record starting at `ops[i]`; returns how many operations it holds, or nil (and
    /// writes nothing) when it reaches the last operation and `final` is false.
    private mutating func record(at i: Int, final: Bool) -> Int? {
        let op = ops[i]
        switch op.kind {
        case .insertItem(let section, let origins, let value):
            var n = 1
            while i + n < ops.count, ListOperation.continuesInsertRun(ops[i + n - 1], ops[i + n], first: op) { n += 1 }
            guard final || i + n < ops.count else { return nil }
            if n == 1 {
                header(op, .insertItem)
                sectionRef(section, op)
                origin(origins.after, op)
                origin(origins.before, op)
                out.data(value)
                break
            }
            let run = ops[i..<i + n]
            let oneByte = run.allSatisfy { if case .insertItem(_, _, let v) = $0.kind { v.count == 1 } else { false } }
            header(op, .insertItemRun, variant: oneByte)
            sectionRef(section, op)
            origin(origins.after, op)
            origin(origins.before, op)
            out.count(n)
            for o in run {
                guard case .insertItem(_, _, let v) = o.kind else { continue }
                if oneByte { out.byte(v[v.startIndex]) } else { out.data(v) }
            }
            for o in run { context.advance(past: o) }
            return n
        case .deleteItem(let item, let seen):
            var n = 1
            var step: Int64 = 0
            if seen.opID == item.opID, i + 1 < ops.count {
                if ListOperation.continuesDeleteRun(op, ops[i + 1], step: 1) {
                    step = 1
                } else if ListOperation.continuesDeleteRun(op, ops[i + 1], step: -1) {
                    step = -1
                }
                if step != 0 {
                    n = 2
                    while i + n < ops.count, ListOperation.continuesDeleteRun(ops[i + n - 1], ops[i + n], step: step) { n += 1 }
                }
            }
            guard final || i + n < ops.count else { return nil }
            if n == 1 {
                header(op, .deleteItem)
                ref(item.opID, op, default: nil)
                ref(seen.opID, op, default: item.opID)
                break
            }
            header(op, .deleteItemRun, variant: step < 0)
            ref(item.opID, op, default: nil)
            out.count(n)
            for o in ops[i..<i + n] { context.advance(past: o) }
            return n
        case .insertSection(let origins, let value):
            header(op, .insertSection)
            origin(origins.after, op)
            origin(origins.before, op)
            out.data(value)
        case .moveSection(let section, let origins):
            header(op, .moveSection)
            sectionRef(section, op)
            origin(origins.after, op)
            origin(origins.before, op)
        case .moveItems(let items, let section, let origins):
            let n = moveRunLength(at: i)
            guard final || i + n < ops.count else { return nil }
            if n >= 2 {
                moveRun(ops[i..<i + n])
                return n
            }
            header(op, .moveItems, variant: items.count == 1)
            sectionRef(section, op)
            origin(origins.after, op)
            origin(origins.before, op)
            if items.count != 1 { out.count(items.count) }
            for item in items { ref(item.opID, op, default: nil) }
        case .deleteSection(let section, let seen, let items):
            header(op, .deleteSection)
            sectionRef(section, op)
            ref(seen.opID, op, default: section.opID)
            out.count(items.count)
            for record in items {
                ref(record.item.opID, op, default: nil)
                ref(record.seen.opID, op, default: record.item.opID)
            }
        case .setItemValue(let item, let value):
            header(op, .setItemValue)
            ref(item.opID, op, default: nil)
            out.data(value)
        case .setSectionValue(let section, let value):
            header(op, .setSectionValue)
            sectionRef(section, op)
            out.data(value)
        case .writeFields(let target, let writes):
            // Records/Text/TextBlockCoding.swift (TextRunCoding.swift for version 6).
            if let n = textBlocks ? textBlock(at: i, final: final) : textRun(at: i, final: final) {
                guard n > 0 else { return nil }
                if n > 1 { return n }
            }
            version = max(version, ListOperation.fieldsWireFormatVersion)
            switch target {
            case .item(let item):
                header(op, .writeFields)
                ref(item.opID, op, default: nil)
            case .section(let section):
                header(op, .writeFields, variant: true)
                sectionRef(section, op)
            }
            fieldWrites(writes, op)
        case .insertItemWithFields(let section, let origins, let value, let writes):
            version = max(version, ListOperation.fieldsWireFormatVersion)
            header(op, .insertItemWithFields)
            sectionRef(section, op)
            origin(origins.after, op)
            origin(origins.before, op)
            out.data(value)
            fieldWrites(writes, op)
        case .insertSectionWithFields(let origins, let value, let writes):
            // Kind 13 with the variant bit, version 5 (Docs/WireFormat.md §2.7): no section.
            version = max(version, ListOperation.sectionFieldsWireFormatVersion)
            header(op, .insertItemWithFields, variant: true)
            origin(origins.after, op)
            origin(origins.before, op)
            out.data(value)
            fieldWrites(writes, op)
        }
        context.advance(past: op)
        return 1
    }

    /// A record's field writes (Docs/WireFormat.md §2.7, version 4): the clock as the difference
    /// from the batch's previous field clock, then each write, its name spelled out the first time
    /// the batch names it and by its number in the batch's name table after that.
    private mutating func fieldWrites(_ writes: FieldWrites, _ op: ListOperation) {
        out.signed(Int64(bitPattern: writes.clock &- fieldNames.lastClock))
        fieldNames.lastClock = writes.clock
        out.count(writes.writes.count)
        for w in writes.writes {
            fieldName(w.name)
            ref(w.replaces, op, default: OpID.none)
            out.count(w.seen.count)
            for s in w.seen { ref(s, op, default: nil) }
            fieldChangeOrText(w.change, op)   // Records/Text/TextCoding.swift
        }
    }

    /// A field's name: its number in the batch's name table plus one, or 0 and the name spelled
    /// out the first time the batch names it (which enters it in the table).
    mutating func fieldName(_ name: String) {
        if let k = fieldNames.index[name] {
            out.count(k + 1)
        } else {
            out.count(0)
            out.string(name)
            fieldNames.index[name] = fieldNames.index.count
        }
    }

    /// The first byte (kind and flags), then the replica index, counter delta and deps unless a
    /// flag says they are the usual ones.
    mutating func header(_ op: ListOperation, _ kind: RecordKind, variant: Bool = false) {
        let prev = context.previousLast
        let sameReplica = prev != .none && op.id.replica == prev.replica
        let nextCounter = op.id.counter == prev.counter &+ 1
        let depsPrevious = op.deps.isOnly(prev)  // {prev}, or empty when prev is .none
        var b = kind.rawValue
        if sameReplica { b |= RecordFlag.sameReplica }
        if nextCounter { b |= RecordFlag.nextCounter }
        if depsPrevious { b |= RecordFlag.depsPrevious }
        if variant { b |= RecordFlag.variant }
        out.byte(b)
        if !sameReplica { out.count(replicaIndex.index(of: op.id.replica)!) }
        if !nextCounter { out.signed(Int64(bitPattern: op.id.counter &- prev.counter &- 1)) }
        if !depsPrevious {
            out.count(op.deps.count)
            for d in op.deps { ref(d, op, default: nil) }
        }
    }

    private mutating func origin(_ slot: SlotID?, _ op: ListOperation) {
        if let slot { ref(slot.opID, op, default: nil) } else { out.varint(RefCode.fieldDefault) }
    }

    mutating func sectionRef(_ section: SectionID, _ op: ListOperation) {
        ref(section.opID, op, default: context.lastSection?.opID)
    }

    /// A reference: the field's default, the previous operation, or replica index and the
    /// distance back from the operation's own counter.
    mutating func ref(_ id: OpID, _ op: ListOperation, default fieldDefault: OpID?) {
        if id == fieldDefault {
            out.varint(RefCode.fieldDefault)
        } else if id == context.previousLast, id != .none {
            out.varint(RefCode.previous)
        } else {
            let index = UInt64(replicaIndex.index(of: id.replica)!)
            if id.counter < op.id.counter {
                out.varint(RefCode.firstExplicit + 2 * index)
                out.varint(op.id.counter - 1 - id.counter)
            } else {
                out.varint(RefCode.firstExplicit + 2 * index + 1)
                out.varint(id.counter - op.id.counter)
            }
        }
    }
}

extension ListOperation {
    /// Calls `body` with every id the operation holds (its own, deps, and every reference).
    func forEachReferencedID(_ body: (OpID) -> Void) {
        body(id)
        for d in deps { body(d) }
        func origins(_ o: Origins) {
            if let a = o.after { body(a.opID) }
            if let b = o.before { body(b.opID) }
        }
        switch kind {
        case .insertSection(let o, _): origins(o)
        case .insertItem(let s, let o, _), .moveSection(let s, let o): body(s.opID); origins(o)
        case .moveItems(let items, let s, let o):
            body(s.opID); origins(o)
            for i in items { body(i.opID) }
        case .deleteItem(let i, let seen): body(i.opID); body(seen.opID)
        case .deleteSection(let s, let seen, let items):
            body(s.opID); body(seen.opID)
            for r in items { body(r.item.opID); body(r.seen.opID) }
        case .setItemValue(let i, _): body(i.opID)
        case .setSectionValue(let s, _): body(s.opID)
        case .writeFields(let target, let writes):
            body(target.opID)
            for w in writes.writes {
                if w.replaces != .none { body(w.replaces) }
                for s in w.seen { body(s) }
                if case .text(let e) = w.change { e.forEachReferencedID(body) }
            }
        case .insertItemWithFields(let s, let o, _, let writes):
            body(s.opID); origins(o)
            for w in writes.writes {
                if w.replaces != .none { body(w.replaces) }
                for s in w.seen { body(s) }
            }
        case .insertSectionWithFields(let o, _, let writes):
            origins(o)
            for w in writes.writes {
                if w.replaces != .none { body(w.replaces) }
                for s in w.seen { body(s) }
            }
        }
    }
}
