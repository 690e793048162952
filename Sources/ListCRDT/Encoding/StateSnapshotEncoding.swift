import Foundation

/// The state snapshot (format version 2, Docs/WireFormat.md §5.2): the document's own tables in a
/// compact form, so that loading rebuilds them directly instead of replaying the history.
///
/// What is written, in the order the loader rebuilds it:
/// 1. the replica table (every replica named below, by index);
/// 2. the slot runs (``SlotStore``), each with the entities its slots place: new entities (an
///    insert's slot) or existing ones (a move's), which also gives the sections' and items' ids;
/// 3. the op log (``OpLog``): insert and move records name their first slot (their ids are the
///    slots'), delete records their seen slots as arithmetic runs, the rare kinds whole;
/// 4. every entity's delete register, run-length coded;
/// 5. the values: their lengths run-length coded, then their bytes, then the value writes that
///    replaced an insert's value;
/// 6. the frontier;
/// 7. each tree's order as runs of consecutive local versions.
///
/// Not written, because the loader derives them: the version vector and the clock (the log's
/// greatest counters), the position registers (the greatest write among an entity's slots), every
/// slot's visibility (§3.4, §3.5), each item's section, the B-tree shape and ``SlotForest/leafOf``.
/// Buffered operations, rejected and dropped ones are not part of a snapshot (as in version 1).
extension ListDocument {
    /// Which snapshot format ``encodedSnapshot(format:)`` writes.
    public enum SnapshotFormat: Sendable, Hashable {
        /// Version 1: the version vector and the history as one operation batch; loading replays it.
        case history
        /// Version 2: the document's tables; loading rebuilds them without replaying anything.
        case state
    }

    /// The state snapshot format version (``SnapshotFormat/state``).
    public static let stateSnapshotFormatVersion: UInt8 = 2
    /// The state snapshot of a document whose history writes fields: version 2 with the log's
    /// operations of other kinds in one batch ahead of the log, instead of one batch each inside it
    /// (Docs/WireFormat.md §5.5). Documents without field writes keep writing version 2.
    public static let stateFieldsSnapshotFormatVersion: UInt8 = 5
    /// The state snapshot of a document with a text field: version 5 with the records that hold
    /// text written as state ahead of the log, so that a load does not replay every keystroke
    /// (Docs/WireFormat.md §5.7). Documents without text keep writing version 5.
    public static let stateTextSnapshotFormatVersion: UInt8 = 7
    /// The state snapshot of a document whose log holds text runs (typed text): version 7's layout,
    /// the text records always present (maybe none), with a text run as one log record (tag 6)
    /// instead of one per keystroke, its operations in the batch ahead as wire format 6 runs
    /// (Docs/WireFormat.md §5.8). Documents without text runs keep writing versions 2 to 7.
    public static let stateTextRunsSnapshotFormatVersion: UInt8 = 8
    /// The state snapshot of a document with fields: version 8's layout with every record written
    /// as state ahead of the log (each field's registers, increments, adds and text as they are),
    /// so that a load replays no field write and reads a record without text on first use
    /// (Docs/WireFormat.md §5.9, `StateRecordsCoding.swift`). Documents without records keep
    /// writing versions 2 to 8.
    public static let stateRecordsSnapshotFormatVersion: UInt8 = 9
    /// Version 9 with the records that hold a pasted text (fewer than one logged text edit per 16
    /// characters) left out of the records part: their fields are made again at the load from the
    /// log's field writes, as version 5 makes them, so that their characters are in the snapshot
    /// once, in the log (Docs/WireFormat.md §5.10). Written only when there is such a record;
    /// otherwise version 9.
    public static let stateRecordsPastedSnapshotFormatVersion: UInt8 = 10
    /// Version 10 for a document whose log holds text runs (typed text), with a typed text's
    /// characters and slot runs left to the log's typing operations (the loader makes them as it
    /// reads the log), its order written as runs of consecutive local versions without
    /// visibility, and consecutive text run records of one replica written as one
    /// (Docs/WireFormat.md §5.11, `DerivedTextCoding.swift`). Documents without text runs keep
    /// writing versions 2 to 10.
    public static let stateDerivedTextSnapshotFormatVersion: UInt8 = 11

    /// Encodes the document as a state snapshot (format version 2).
    ///
    /// - Complexity: O(n + m + v) for n slots, m log records and v value bytes.
    func encodedStateSnapshot() -> [UInt8] {
        var e = StateSnapshotEncoder(self)
        return e.encode()
    }
}

/// Writes a ``ListDocument`` as a state snapshot. Field by field: Docs/WireFormat.md §5.2.
struct StateSnapshotEncoder {
    let doc: ListDocument
    var w = WireWriter()
    var replicaIndex: [ReplicaID: Int] = [:]
    var replicaList: [ReplicaID] = []

    /// Version 5: the log's other operations go in one batch ahead of the log (field writes make
    /// most of a board's history; one batch spells each field name once and shares its context).
    let othersInOneBatch: Bool
    /// Whether version 7 may be written (the records that hold typed text go ahead of the log, as
    /// state, with version 5's layout): it is when ``textState`` holds a record.
    let textRecords: Bool
    /// The records written as state (``textStateRecords(of:)``), when version 7 is written.
    let textState: RecordStore
    /// Whether version 8 is written: the log holds text runs, each written as one record.
    let textRunRecords: Bool
    /// Whether version 9 or 10 is written: every record as state (``putStateRecords()``), but
    /// those in ``pastedRecords``.
    let stateRecords: Bool
    /// Version 10: the records left to the log (``pastedTextRecords(of:)``); none in version 9.
    let pastedRecords: Set<OpID>
    /// Version 11: the texts whose characters and slot runs the log's typing gives
    /// (``derivableTexts(of:)``), each written as its order only; nil before version 11.
    let derivedTexts: Set<TextStateCheck.Key>?
    /// Where each part of the body ends (after ``encode()``), and the bytes of the records'
    /// texts: the breakdown of a snapshot's size (Docs/Benchmarks.md).
    private(set) var partEnds: [(part: String, end: Int)] = []
    var textBytes = 0

    /// `othersInOneBatch` nil: version 5 exactly when the history writes fields (false: version 2
    /// whatever it holds, as builds before version 5 wrote it; for tests). `textRecords` nil:
    /// version 7 exactly when a field holds text (false: version 5, as builds before version 7
    /// wrote it; for tests).
    /// `stateRecords` nil: version 9 or 10 exactly when the document has records and none of the
    /// other three was given (false, or another given: versions 2 to 8, as builds before version 9
    /// wrote them; for tests). `pastedToLog` false: version 9 whatever the texts, as builds before
    /// version 10 wrote it (for tests). `derivedTexts` false: version 9 or 10 where version 11
    /// would be written (the log holds text runs), as builds before version 11 wrote it (for tests);
    /// `derivedTextsGiven`: the texts version 11 writes as derived, in place of
    /// ``derivableTexts(of:)`` (empty: every text whole; for tests).
    init(_ doc: ListDocument, othersInOneBatch: Bool? = nil, textRecords: Bool? = nil, textRuns: Bool? = nil,
         stateRecords: Bool? = nil, pastedToLog: Bool = true, derivedTexts: Bool = true,
         derivedTextsGiven: Set<TextStateCheck.Key>? = nil) {
        self.doc = doc
        let others = othersInOneBatch ?? (doc.log.others.hasRuns || doc.log.others.anyCarriesFields)
        self.othersInOneBatch = others
        let olderAsked = othersInOneBatch != nil || textRecords != nil || textRuns != nil
        if others, stateRecords ?? (!olderAsked && !doc.records.isEmpty) {
            self.stateRecords = true
            pastedRecords = pastedToLog ? Self.pastedTextRecords(of: doc) : []
            textState = RecordStore()
            textRunRecords = doc.log.others.hasRuns
            self.textRecords = false
            self.derivedTexts = derivedTexts && textRunRecords ? derivedTextsGiven ?? Self.derivableTexts(of: doc) : nil
            return
        }
        self.stateRecords = false
        pastedRecords = []
        self.derivedTexts = nil
        let mayWrite = others && (textRecords ?? doc.records.hasText)
        textState = mayWrite ? Self.textStateRecords(of: doc) : RecordStore()
        textRunRecords = others && (textRuns ?? doc.log.others.hasRuns) && doc.log.others.hasRuns
        self.textRecords = textRunRecords || (mayWrite && !textState.materialized.isEmpty)
    }

    /// The records a version-7 snapshot writes as state: those holding a text typed in many edits,
    /// at least one logged text edit per 16 characters kept, whose load by replay would apply
    /// edit after edit (a typed text's history is one edit per keystroke). A text pasted in a few
    /// edits replays faster than its state decodes, and as state it would repeat its history's
    /// characters: its record stays in the log only, as in version 5.
    ///
    /// - Complexity: O(m + r) for m log operations of other kinds and r records.
    static func textStateRecords(of doc: ListDocument) -> RecordStore {
        var store = RecordStore()
        store.clock = doc.records.clock
        for (record, typed) in textRecordsTyped(doc) where typed { store.materialized[record] = doc.records.materialized[record] }
        return store
    }

    /// The records version 10 leaves to the log: those holding a text pasted in a few edits
    /// (``textStateRecords(of:)``'s rule), whose characters the log's edits hold already. Written
    /// as state, a board of pasted notes was twice its text (issue 45, W17.notes).
    ///
    /// - Complexity: O(m + r) for m log operations of other kinds and r records.
    static func pastedTextRecords(of doc: ListDocument) -> Set<OpID> {
        guard doc.records.hasText else { return [] }
        return Set(textRecordsTyped(doc).lazy.filter { !$0.value }.map(\.key))
    }

    /// Each record that holds text (every such record is made at the load, so is in
    /// `materialized`): whether it was typed, at least one logged text edit per 16 characters kept.
    private static func textRecordsTyped(_ doc: ListDocument) -> [OpID: Bool] {
        var edits: [OpID: Int] = [:]
        doc.log.others.forEachTextEditRecord { edits[$0, default: 0] += 1 }
        var out: [OpID: Bool] = [:]
        for (record, fields) in doc.records.materialized {
            let characters = fields.values.reduce(0) { $0 + ($1.text?.slotCount ?? 0) }
            if characters > 0 { out[record] = (edits[record] ?? 0) * 16 >= characters }
        }
        return out
    }

    /// The version this encoder writes.
    var version: UInt8 {
        derivedTexts != nil ? ListDocument.stateDerivedTextSnapshotFormatVersion
            : stateRecords ? (pastedRecords.isEmpty ? ListDocument.stateRecordsSnapshotFormatVersion
                                              : ListDocument.stateRecordsPastedSnapshotFormatVersion)
            : textRunRecords ? ListDocument.stateTextRunsSnapshotFormatVersion
            : textRecords ? ListDocument.stateTextSnapshotFormatVersion
            : othersInOneBatch ? ListDocument.stateFieldsSnapshotFormatVersion : ListDocument.stateSnapshotFormatVersion
    }

    /// Record kinds of the log section (the low three bits of a record's first byte).
    enum RecordTag: UInt8 {
        case insertSection = 0, insertItem, moveSection, moveItems, deleteItem, other
        /// Version 8: a text run, its count; its operations are the next of the batch ahead.
        case textRun
    }
    /// The record's first operation names its dependencies (else: the operation before).
    static let explicitDepsFlag: UInt8 = 0x08
    /// Delete register kinds.
    enum DeletedTag: UInt64 { case none = 0, own, explicit }

    mutating func index(of r: ReplicaID) -> Int {
        if let k = replicaIndex[r] { return k }
        replicaIndex[r] = replicaList.count
        replicaList.append(r)
        return replicaList.count - 1
    }

    mutating func encode() -> [UInt8] {
        // The replica table comes first but is known only at the end: write the body, then join.
        let body = encodeBody()
        var head = WireWriter()
        head.bytes.append(contentsOf: ListDocument.snapshotMagic)
        head.byte(version)
        head.count(replicaList.count)
        for r in replicaList { head.varint(r.rawValue) }
        head.bytes.append(contentsOf: body)
        return head.bytes
    }

    private mutating func encodeBody() -> [UInt8] {
        w.bytes.reserveCapacity(doc.slots.count + doc.items.count + 4096)
        putSlots()
        partEnds.append(("slots", w.bytes.count))
        if othersInOneBatch { putOthers() }
        partEnds.append(("batch", w.bytes.count))
        if stateRecords { putStateRecords() } else if textRecords { putTextRecords() }
        partEnds.append(("records", w.bytes.count))
        putLog()
        partEnds.append(("log", w.bytes.count))
        putDeleted(doc.sections)
        putDeleted(doc.items)
        putValues(doc.sections)
        putValues(doc.items)
        let frontier = doc.currentFrontier.ids
        w.count(frontier.count)
        for id in frontier { putID(id) }
        putTrees()
        partEnds.append(("registers, values, frontier, trees", w.bytes.count))
        return w.bytes
    }

    private mutating func putID(_ id: OpID) {
        w.count(index(of: id.replica))
        w.varint(id.counter)
    }

    // MARK: Slots

    /// Each slot run, cut where its slots change from new entities to existing ones (a run can
    /// hold a move's slots right after an insert's; the loader joins the pieces again).
    private mutating func putSlots() {
        let slots = doc.slots
        w.count(slots.count)
        var pieces: [(lv: LocalVersion, count: Int32, new: Bool)] = []
        var runOf: [Int] = []
        for (r, run) in slots.runs.enumerated() {
            var k: Int32 = 0
            while k < run.count {
                let new = isNew(run.lv.advanced(by: k))
                var end = k + 1
                while end < run.count && isNew(run.lv.advanced(by: end)) == new { end += 1 }
                pieces.append((run.lv.advanced(by: k), end - k, new))
                runOf.append(r)
                k = end
            }
        }
        w.count(pieces.count)
        var previousEnd: UInt64 = 0
        for (p, piece) in pieces.enumerated() {
            let run = slots.runs[runOf[p]]
            let id = run.id.advanced(by: Int(piece.lv.distance(from: run.lv)))
            let left = piece.lv == run.lv ? run.left : piece.lv.advanced(by: -1)
            w.count(Int(piece.count))
            w.count(index(of: id.replica))
            w.signed(Int64(bitPattern: id.counter &- previousEnd))
            w.count(left.exists ? Int(piece.lv.distance(from: left)) : 0)
            w.count(run.right.exists ? Int(piece.lv.distance(from: run.right)) : 0)
            w.count(Int(run.sequence.raw + 1))
            w.byte(piece.new ? 0 : 1)
            if !piece.new {
                for k in 0..<piece.count { w.count(slots.entity(of: piece.lv.advanced(by: k)).int) }
            }
            previousEnd = id.counter &+ UInt64(piece.count)
        }
    }

    /// Whether slot `lv` is its entity's insert slot (not a move's).
    private func isNew(_ lv: LocalVersion) -> Bool {
        let table = doc.slots.sequence(of: lv).isItems ? doc.items : doc.sections
        return table.rows[doc.slots.entity(of: lv).int].id == doc.slots.id(of: lv)
    }

    // MARK: Log

    /// Version 5: the log's operations of other kinds, in log order, as one batch (their
    /// dependencies left out: the log's records give them).
    private mutating func putOthers() {
        let log = doc.log
        var ops: [ListOperation] = []
        for (r, rec) in log.records.enumerated() {
            if rec.kind == .textRun {
                // Its operations, each later one depending on the one before (so that the batch
                // writes them as one run). The log's records give the first one's dependencies, so
                // the batch's are free: none, or the operation before in the batch when that is a
                // splice with the id just before, so that the batch's text block (wire format 7)
                // goes on across the log's runs.
                let firstID = OpID(counter: rec.counter, replica: log.replica(ofRecord: r))
                let chained = ops.last.map { $0.runTextEdit != nil && $0.id.replica == firstID.replica && $0.id.counter &+ 1 == firstID.counter } ?? false
                log.others.appendOperations(ofRun: Int(rec.payload), from: 0, to: Int(rec.count), firstID: firstID,
                                            deps: chained ? Frontier(only: ops.last!.id) : Frontier(), into: &ops)
                continue
            }
            guard rec.kind == .other else { continue }
            var op = log.others[Int(rec.payload)]
            op.deps = Frontier()
            ops.append(op)
        }
        let batch = ListOperation.encode(ops)
        w.count(batch.count)
        w.bytes.append(contentsOf: batch)
    }

    /// Version 7: the records that hold a typed text, whole, as a compacted snapshot writes records
    /// (``RecordStore/encoded()``, with the text layout), behind their length. The loader checks
    /// them against the log's text edits instead of replaying those (`StateSnapshotDecoding+Text.swift`).
    private mutating func putTextRecords() {
        let bytes = textState.encoded()
        w.count(bytes.count)
        w.bytes.append(contentsOf: bytes)
    }

    private mutating func putLog() {
        let log = doc.log
        // A text run is written as its operations, a record each (as the log kept them before).
        let runExtra = textRunRecords ? 0 : log.records.reduce(0) { $0 + ($1.kind == .textRun ? Int($1.count) - 1 : 0) }
        // Version 11: text runs that the loader's log cuts again where this one did, as one record.
        let joined = derivedTexts != nil ? joinedTextRuns() : []
        w.count(log.records.count + runExtra - joined.reduce(0) { $0 + ($1 ? 1 : 0) })
        var nextSlot = LocalVersion(0)
        var previousEnd: UInt64 = 0
        for (r, var rec) in log.records.enumerated() {
            if !joined.isEmpty {
                if joined[r] { continue }
                var next = r + 1
                while next < joined.count, joined[next] { rec.count += log.records[next].count; next += 1 }
            }
            if rec.kind == .textRun, !textRunRecords {
                putTextRun(r, rec)
                previousEnd = rec.counter &+ UInt64(rec.count)
                continue
            }
            let tag: RecordTag = switch rec.kind {
            case .insertSection: .insertSection
            case .insertItem: .insertItem
            case .moveSection: .moveSection
            case .moveItems: .moveItems
            case .deleteItem: .deleteItem
            case .other: .other
            case .textRun: .textRun
            }
            let explicit = rec.deps >= 0
            w.byte(tag.rawValue | (explicit ? Self.explicitDepsFlag : 0))
            w.count(index(of: log.replica(ofRecord: r)))
            switch rec.kind {
            case .insertSection, .insertItem, .moveSection, .moveItems:
                w.signed(Int64(rec.firstSlot.raw) - Int64(nextSlot.raw))
                w.count(Int(rec.count))
                nextSlot = rec.firstSlot.advanced(by: rec.count)
            case .deleteItem:
                w.signed(Int64(bitPattern: rec.counter &- previousEnd))
                w.count(Int(rec.count))
                putSeen(log.seenSlots[Int(rec.payload) ..< Int(rec.payload) + Int(rec.count)])
            case .textRun:
                // Version 8: its operations are the next of the batch ahead of the log.
                w.count(Int(rec.count))
            case .other:
                // Version 5: the operation is the next of the batch ahead of the log.
                guard !othersInOneBatch else { break }
                let op = log.others[Int(rec.payload)]
                let bytes = ListOperation.encode(CollectionOfOne(op))
                w.count(bytes.count)
                w.bytes.append(contentsOf: bytes)
            }
            previousEnd = rec.counter &+ UInt64(rec.count)
            if explicit {
                let deps = log.deps(record: r, operation: 0).ids
                w.count(deps.count)
                for id in deps { putID(id) }
            }
        }
    }

    /// Text run `r` (`rec`) as one `.other` record per operation (its operations are in the
    /// batch ahead of the log: ``putOthers()``); the first names its dependencies when the run's
    /// record does, every later one depends on the one before.
    private mutating func putTextRun(_ r: Int, _ rec: OpLog.Record) {
        let k = index(of: doc.log.replica(ofRecord: r))
        var ops: [ListOperation] = []
        if !othersInOneBatch {
            doc.log.others.appendOperations(ofRun: Int(rec.payload), from: 0, to: Int(rec.count),
                                            firstID: OpID(counter: rec.counter, replica: doc.log.replica(ofRecord: r)),
                                            deps: doc.log.deps(record: r, operation: 0), into: &ops)
        }
        for j in 0 ..< Int(rec.count) {
            let explicit = j == 0 && rec.deps >= 0
            w.byte(RecordTag.other.rawValue | (explicit ? Self.explicitDepsFlag : 0))
            w.count(k)
            if !othersInOneBatch {
                let bytes = ListOperation.encode(CollectionOfOne(ops[j]))
                w.count(bytes.count)
                w.bytes.append(contentsOf: bytes)
            }
            if explicit {
                let deps = doc.log.deps(record: r, operation: 0).ids
                w.count(deps.count)
                for id in deps { putID(id) }
            }
        }
    }

    /// A delete record's seen slots as arithmetic runs `(start, step, length)`: backspacing or
    /// forward-deleting typed text is one run.
    private mutating func putSeen(_ seen: ArraySlice<LocalVersion>) {
        var k = seen.startIndex
        var previous: Int64 = 0
        while k < seen.endIndex {
            let start = Int64(seen[k].raw)
            var step: Int64 = 0, end = k + 1
            if end < seen.endIndex {
                step = Int64(seen[end].raw) - start
                while end < seen.endIndex && Int64(seen[end].raw) - Int64(seen[end - 1].raw) == step { end += 1 }
            }
            w.signed(start - previous)
            w.signed(step)
            w.count(end - k)
            previous = Int64(seen[end - 1].raw)
            k = end
        }
    }

    // MARK: Registers and values

    /// Each entity's delete register as runs of one kind: none, the entity's own id (a delete saw
    /// its insert), or explicit ids.
    private mutating func putDeleted(_ table: EntityTable) {
        var runs: [(tag: DeletedTag, start: Int, count: Int)] = []
        for e in table.indices {
            let d = table.deleted(e)
            let tag: DeletedTag = d == .none ? .none : d == table.rows[e.int].id ? .own : .explicit
            if let last = runs.last, last.tag == tag {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((tag, e.int, 1))
            }
        }
        w.count(runs.count)
        for run in runs {
            w.count(run.count)
            w.varint(run.tag.rawValue)
            if run.tag == .explicit {
                for e in run.start ..< run.start + run.count { putID(table.deleted(EntityIndex(e))) }
            }
        }
    }

    /// The values: runs of equal lengths, then every value's bytes, then the replaced insert
    /// values.
    private mutating func putValues(_ table: EntityTable) {
        var runs: [(length: Int, count: Int)] = []
        let current = table.replaced.isEmpty ? nil : table.indices.map { table.value($0) }
        for e in 0 ..< table.count {
            let length = current?[e].count ?? table.insertValues.length(e)
            if let last = runs.last, last.length == length {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((length, 1))
            }
        }
        w.count(runs.count)
        for run in runs {
            w.count(run.count)
            w.count(run.length)
        }
        if let current {
            for v in current { w.bytes.append(contentsOf: v) }
        } else {
            w.bytes.append(contentsOf: table.insertValues.bytes)
        }
        let replaced = table.replaced.sorted { $0.key < $1.key }
        w.count(replaced.count)
        var previous = -1
        for (e, r) in replaced {
            w.count(e.int - previous - 1)
            putID(r.write)
            w.data(table.insertValue(e))
            previous = e.int
        }
    }

    // MARK: Trees

    /// Every tree's order, tree 0 (the sections) first: runs of consecutive local versions,
    /// visibility left out (the loader derives it).
    private mutating func putTrees() {
        var previousEnd: Int64 = 0
        var runs: [(LocalVersion, Int)] = []
        for t in 0 ..< Int32(doc.forest.trees.count) {
            runs.removeAll(keepingCapacity: true)
            doc.forest.forEachRun(t) { lv, n, _ in
                if let last = runs.last, last.0.advanced(by: last.1) == lv {
                    runs[runs.count - 1].1 += n
                } else {
                    runs.append((lv, n))
                }
            }
            w.count(runs.count)
            for (lv, n) in runs {
                w.signed(Int64(lv.raw) - previousEnd)
                w.count(n)
                previousEnd = Int64(lv.raw) + Int64(n)
            }
        }
    }
}
