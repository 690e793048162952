import Foundation

/// Every applied operation, in the (causal) order it was applied, stored as compact records, with
/// an index by id.
///
/// The log stores only what the document's state cannot give back. An insert or a move is its
/// slots (`SlotStore` knows each slot's id, origins, sequence and entity), so its record is a first
/// id, a count and a first slot. A delete of an item is the slot of the position write its author
/// saw (4 bytes in ``seenSlots``). Operations typed one after the other by one replica (consecutive
/// ids, each depending on exactly the one before) share one record: a typed run of a thousand
/// inserts, or a thousand backspaces, is one record. Causal dependencies are stored only when they
/// are not the implicit "the operation applied just before". The rare kinds (section deletes,
/// value writes) are kept whole in ``others``, and so are text splices, in parts
/// (`OtherOperations.swift`), but for one-character splices of one field typed one after the
/// other (or removing one character after another) by one replica: those share one record, a
/// text run, as typed items do (`TextRunLog.swift`).
///
/// `ListDocument+History.swift` turns records back into ``ListOperation``s equal to the ones
/// applied; it needs the document's state, so it lives there. The log itself does no I/O.
struct OpLog: Sendable {
    /// What a record holds.
    enum Kind: UInt8, Sendable {
        /// A run of `insertSection` operations, one slot each, at consecutive slots.
        case insertSection
        /// A run of `insertItem` operations, one slot each, at consecutive slots.
        case insertItem
        /// One `moveSection` operation (one slot).
        case moveSection
        /// One `moveItems` operation: `count` items, at consecutive slots with consecutive ids.
        case moveItems
        /// A run of `deleteItem` operations; the seen slots are in ``OpLog/seenSlots``.
        case deleteItem
        /// One operation of another kind, kept whole in ``OpLog/others``.
        case other
        /// A run of one-character splices of one text field (typing forward, or removing one
        /// character after another), one id each: ``OtherOperations/runs``[`payload`] (`TextRunLog.swift`).
        case textRun
    }

    /// Consecutive operations of one replica (or one multi-slot move), stored together.
    struct Record: Sendable {
        /// Counter of the first operation's id.
        var counter: UInt64
        /// The replica of every operation of the record (an index into `replicaIDs`).
        var replica: Int32
        /// Number of ids the record covers: its operations for a run, the items of a
        /// `moveItems`, 1 otherwise. Operation (or item) `k` has counter `counter + k`.
        var count: Int32
        /// Insert runs and moves: local version of the first slot made (operation or item `k`
        /// made slot `payload + k`). Delete runs: index of the first seen slot in `seenSlots`.
        /// Other: index into `others`. Text runs: index into `others.runs`.
        var payload: Int32
        /// Dependencies of the first operation: -1 for the implicit `{last id of the operation
        /// applied just before}` (the empty frontier for the first record), else an index into
        /// `depStarts`. Every later operation of a run depends on exactly the one before it.
        var deps: Int32
        /// Log position (index in application order) of the first operation.
        var position: Int32
        /// What the record holds.
        var kind: Kind

        /// Number of operations in the record.
        @inline(__always) var operations: Int { spansIDs ? 1 : Int(count) }

        /// Whether the record is one operation spanning `count` ids (a move of several items, or a
        /// kept-whole operation that inserts text: one id per character).
        @inline(__always) var spansIDs: Bool { kind == .moveItems || kind == .other }

        /// Insert runs and moves: the first slot made (`payload` as a local version).
        @inline(__always) var firstSlot: LocalVersion { LocalVersion(payload) }
    }

    /// The records, in application order.
    private(set) var records: [Record] = []
    /// Delete runs: the local version of the slot each delete's author saw.
    private(set) var seenSlots: [LocalVersion] = []
    /// Dependencies that are not implicit (see ``Record/deps``), flat: list `k` is
    /// `depIDs[depStarts[k] ..< depStarts[k + 1]]` (to the end for the last). 4 bytes plus 16 per
    /// id, where a ``Frontier`` took 24 bytes plus a heap block for a second id (issue 29).
    private(set) var depIDs: [OpID] = []
    /// Where each dependency list starts in ``depIDs``.
    private(set) var depStarts: [Int32] = []
    /// Operations of the rare kinds, whole, and text splices (kept in parts, `OtherOperations.swift`).
    private(set) var others = OtherOperations()

    /// The replica of each dense replica index.
    private var replicaIDs: [ReplicaID] = []
    private var replicaIndex = ReplicaTable()
    /// Per replica (by dense index): its records, in counter order (a replica's operations are
    /// applied in counter order).
    private(set) var byReplica: [[Int32]] = []

    /// Number of operations.
    private(set) var count = 0
    /// The bytes the operations kept whole in ``others`` carry (``ListOperation/loggedPayloadBytes``):
    /// values and fields that only the log holds once they are written over (Compaction/ListDocument+Reclaimable.swift).
    private(set) var keptWholeBytes = 0

    // MARK: Appending

    /// Makes room for `n` more records (a loaded log's, whose count is known), so that they go in
    /// without reallocating on the way.
    ///
    /// - Complexity: O(records) when it grows, else O(1).
    mutating func reserveCapacity(records n: Int) {
        records.reserveCapacity(records.count + n)
    }

    /// Makes room for `seen` more item deletes (a received batch's delete runs), at least doubling
    /// the room when it grows (as appending does, so that calling it for every batch stays
    /// amortized O(1) per delete).
    ///
    /// - Complexity: O(seen slots) when it grows, else O(1).
    mutating func reserveCapacity(seen: Int) {
        seenSlots.reserveCapacity(more: seen)
    }

    /// Appends an applied insert, move or item delete. `payload` is the local version of the first
    /// slot the operation made (inserts, moves), or of the slot the delete's author saw. `span` is
    /// the number of ids the operation uses.
    ///
    /// - Complexity: O(1) amortized (O(1) with no allocation when it extends the last record).
    mutating func append(id: OpID, deps: Frontier, kind: Kind, span: Int, payload: LocalVersion) {
        precondition(kind != .other, "use append(other:)")
        if kind != .moveItems, kind != .moveSection, var last = records.last, last.kind == kind,
           last.counter &+ UInt64(last.count) == id.counter, replicaIDs[Int(last.replica)] == id.replica,
           deps.isOnly(OpID(counter: id.counter &- 1, replica: id.replica)),
           kind == .deleteItem || last.payload &+ last.count == payload.raw {
            last.count += 1
            records[records.count - 1] = last
            if kind == .deleteItem { seenSlots.append(payload) }
            count += 1
            return
        }
        var stored = payload.raw
        if kind == .deleteItem {
            stored = Int32(seenSlots.count)
            seenSlots.append(payload)
        }
        newRecord(id: id, deps: deps, kind: kind, count: span, payload: stored, operations: 1)
    }

    /// Extends the last record, an item insert run, by `n` inserts that continue it: the next ids of
    /// its replica, each depending on exactly the one before, at the next slots.
    ///
    /// - Complexity: O(1).
    @inline(__always)
    mutating func extendInsertRun(by n: Int) {
        growLastRecord(.insertItem, by: n)
    }

    /// Extends the last record, an item delete run, by one delete that continues it: the next id of
    /// its replica, depending on exactly the one before, whose author saw slot `lv` (what
    /// ``append(id:deps:kind:span:payload:)`` does for such a delete).
    ///
    /// - Complexity: O(1) amortized.
    mutating func extendDeleteRun(seenOne lv: LocalVersion) {
        growLastRecord(.deleteItem, by: 1)
        seenSlots.append(lv)
    }

    /// ``extendDeleteRun(seenOne:)`` for several deletes.
    ///
    /// - Complexity: O(n) amortized for n deletes.
    mutating func extendDeleteRun(seen: some Collection<LocalVersion>) {
        growLastRecord(.deleteItem, by: seen.count)
        seenSlots.append(contentsOf: seen)
    }

    /// ``extendDeleteRun(seen:)`` for `n` deletes whose authors saw slots `lv`, `lv + step`, …
    /// (a delete run of consecutive typed items, `step` ±1).
    ///
    /// - Complexity: O(n) amortized.
    mutating func extendDeleteRun(seenFrom lv: LocalVersion, step: Int32, count n: Int) {
        growLastRecord(.deleteItem, by: n)
        seenSlots.append(contentsOf: SteppedSlots(slot: lv, step: step, left: n))
    }

    /// Counts `n` more operations in the last record, which must be a run of `kind`.
    @inline(__always)
    private mutating func growLastRecord(_ kind: Kind, by n: Int) {
        let last = records.count - 1
        precondition(last >= 0 && records[last].kind == kind, "the last record is not a run of \(kind)")
        precondition(count + n < Int(Int32.max), "the log is full")
        records[last].count += Int32(n)
        count += n
    }

    /// Appends an applied operation of a rare kind (section delete, value write), kept whole.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(other op: consuming ListOperation) {
        // A splice of one text field (a received one, or one loaded) joins or starts a text run
        // as a local one does.
        if case .writeFields(let target, let writes) = op.kind, writes.writes.count == 1,
           case .text(let edit) = writes.writes[0].change, writes.writes[0].replaces == .none,
           writes.writes[0].seen.isEmpty, OtherOperations.isRunShaped(edit) {
            append(splice: op.id, deps: op.deps, span: op.span, clock: writes.clock, target: target,
                   name: writes.writes[0].name, edit: edit, payloadBytes: writes.footprint)
            return
        }
        keptWholeBytes += op.loggedPayloadBytes
        newRecord(id: op.id, deps: op.deps, kind: .other, count: op.span, payload: Int32(others.count), operations: 1)
        others.append(op)   // moved in, not copied
    }

    /// Starts keeping a loaded state snapshot's field writes as bytes of `source`
    /// (`LazyOperations.swift`); before the first operation.
    mutating func keepLazily(_ source: LazyOperations.Source) {
        others.keepLazily(source)
    }

    /// Appends a field write kept as bytes, checked already: operation `id` (one id, no text),
    /// depending on `deps`, whose record starts at `offset` of the source given to
    /// ``keepLazily(_:)`` with the batch decoder's context there; `payloadBytes` is its
    /// ``ListOperation/loggedPayloadBytes``. What ``append(other:)`` of the decoded operation does.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(lazy id: OpID, deps: Frontier, payloadBytes: Int, offset: Int, previousLast: OpID,
                         lastSection: OpID, lastClock: UInt64) {
        keptWholeBytes += payloadBytes
        newRecord(id: id, deps: deps, kind: .other, count: 1, payload: Int32(others.count), operations: 1)
        others.appendLazy(offset: offset, previousLast: previousLast, lastSection: lastSection, lastClock: lastClock, deps: deps)
    }

    /// Appends an applied splice of one text field (what ``append(other:)`` does with the
    /// operation `id`, `deps`, `.writeFields(target, [name: .text(edit)])` at `clock`, spanning
    /// `span` ids), from its parts.
    ///
    /// - Complexity: O(1) amortized, plus O(r) for r removed ranges.
    mutating func append(splice id: OpID, deps: Frontier, span: Int, clock: UInt64, target: RecordTarget, name: String,
                         edit: TextEdit, payloadBytes: Int) {
        append(splice: id, deps: deps, span: span, clock: clock, target: target, name: name, edit: edit,
               step: span == 1 ? TextRunStep(edit) : nil, payloadBytes: payloadBytes)
    }

    /// ``append(splice:deps:span:clock:target:name:edit:payloadBytes:)`` with the text run step
    /// `edit` is (`TextRunStep(edit)`, nil when it is none or spans more than one id) given: a
    /// local keystroke knows it without looking at its edit.
    ///
    /// - Complexity: O(1) amortized, plus O(r) for r removed ranges.
    @inline(__always)
    mutating func append(splice id: OpID, deps: Frontier, span: Int, clock: UInt64, target: RecordTarget, name: String,
                         edit: TextEdit, step: TextRunStep?, payloadBytes: Int) {
        assert(step == (span == 1 ? TextRunStep(edit) : nil), "a text run step that is not the edit's")
        if let step {
            _ = append(step: step, id: id, deps: deps, clock: clock, target: target, name: name, insert: edit.insert,
                       payloadBytes: payloadBytes)
            return
        }
        keptWholeBytes += payloadBytes
        others.append(splice: id, deps: deps, clock: clock, target: target, name: name, edit: edit)
        newRecord(id: id, deps: deps, kind: .other, count: span, payload: Int32(others.count - 1), operations: 1)
    }

    /// Appends an applied one-character splice of one text field, the text run step `step`
    /// (`insert`: the character it types, empty when it removes one): what
    /// ``append(splice:deps:span:clock:target:name:edit:step:payloadBytes:)`` does with the edit
    /// the step is, without the edit. Returns the index in ``OtherOperations/runs`` of the text
    /// run the splice joined or started (the log's last record then), or -1 when it is kept alone
    /// (the log cannot hold another run).
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func append(step: TextRunStep, id: OpID, deps: Frontier, clock: UInt64, target: RecordTarget, name: String,
                         insert: String, payloadBytes: Int) -> Int32 {
        keptWholeBytes += payloadBytes
        // The next splice of a text run: the next id of the last record's replica, depending
        // on exactly the one before (its last id), into the same field.
        if let last = records.last, last.kind == .textRun, last.counter &+ UInt64(last.count) == id.counter,
           replicaIDs[Int(last.replica)] == id.replica, count < Int(Int32.max) - 1,
           deps.isOnly(OpID(counter: id.counter &- 1, replica: id.replica)),
           others.extendRun(Int(last.payload), id: id, clock: clock, target: target, name: name, step: step, insert: insert) {
            records[records.count - 1].count += 1
            count += 1
            return last.payload
        }
        if let run = others.startRun(clock: clock, target: target, name: name, step: step, insert: insert) {
            newRecord(id: id, deps: deps, kind: .textRun, count: 1, payload: run, operations: 1)
            return run
        }
        others.append(splice: id, deps: deps, clock: clock, target: target, name: name, edit: step.edit(insert: insert))
        newRecord(id: id, deps: deps, kind: .other, count: 1, payload: Int32(others.count - 1), operations: 1)
        return -1
    }

    /// Extends text run `run`, the log's last record, by this replica's next local one-character
    /// splice of the run's field, `step` (`insert`: the character it types, `byte` its byte when
    /// it is ASCII, else 0), whose id is the next
    /// after `previous`, the run's last operation, and which depends on exactly `previous`: what
    /// ``append(step:id:deps:clock:target:name:insert:payloadBytes:)`` does then, without looking
    /// up the last record's replica or the run's field (the caller's splice run knows both: its
    /// last splice went into this run and nothing was logged since). Returns false, changing
    /// nothing, when the step does not continue the run (or the run is not the last record).
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func extendLocalTextRun(_ run: Int32, after previous: OpID, clock: UInt64, step: TextRunStep, insert: String,
                                     byte: UInt8, payloadBytes: Int) -> Bool {
        let last = records.count - 1
        guard last >= 0, records[last].kind == .textRun, records[last].payload == run, count < Int(Int32.max) - 1,
              others.extendLocalRun(Int(run), after: previous, clock: clock, step: step, insert: insert, byte: byte)
        else { return false }
        records[last].count += 1
        count += 1
        keptWholeBytes += payloadBytes
        return true
    }

    /// Extends the text run that is the log's last record, whose last operation is `previous`,
    /// by `n` more one-character splices of its field, each the next id and depending on exactly
    /// the one before: what ``append(other:)`` of each does (`OtherOperations.extendRun(_:by:)`
    /// says which splices). `payloadBytes` is the sum of their ``FieldWrites/footprint``s.
    /// Returns false, changing nothing, when the last record is not that run or the splices do
    /// not continue it.
    ///
    /// - Complexity: O(n + b) for b bytes typed.
    mutating func extendTextRun(after previous: OpID, by n: Int, payloadBytes: Int, _ splices: OtherOperations.RunExtension) -> Bool {
        guard n >= 1, let last = records.last, last.kind == .textRun,
              last.counter &+ UInt64(last.count) == previous.counter &+ 1, replicaIDs[Int(last.replica)] == previous.replica,
              count < Int(Int32.max) - 1 - n, last.count < Int32.max - 1 - Int32(n),
              others.extendRun(Int(last.payload), by: n, splices) else { return false }
        records[records.count - 1].count += Int32(n)
        count += n
        keptWholeBytes += payloadBytes
        return true
    }

    private mutating func newRecord(id: OpID, deps: Frontier, kind: Kind, count span: Int, payload: Int32,
                                    operations: Int) {
        precondition(count < Int(Int32.max) && span < Int(Int32.max), "the log is full")
        let implicit = records.last.map { deps.isOnly(lastID(ofRecord: $0)) } ?? deps.isEmpty
        var depsIndex: Int32 = -1
        if !implicit {
            precondition(depIDs.count + deps.count < Int(Int32.max), "the log is full")
            depsIndex = Int32(depStarts.count)
            depStarts.append(Int32(depIDs.count))
            depIDs.append(contentsOf: deps)
        }
        let k: Int
        if let last = records.last, replicaIDs[Int(last.replica)] == id.replica {
            k = Int(last.replica)
        } else {
            k = replicaIndex.insert(id.replica)
            if k == byReplica.count {
                byReplica.append([])
                replicaIDs.append(id.replica)
            }
        }
        byReplica[k].append(Int32(records.count))
        records.append(Record(counter: id.counter, replica: Int32(k), count: Int32(span), payload: payload,
                              deps: depsIndex, position: Int32(count), kind: kind))
        count += operations
    }

    // MARK: Reading

    /// When the operation applied last was an item insert: its id and its slot.
    ///
    /// - Complexity: O(1).
    var lastItemInsert: (id: OpID, slot: LocalVersion)? {
        guard let rec = records.last, rec.kind == .insertItem else { return nil }
        return (lastID(ofRecord: rec), rec.firstSlot.advanced(by: rec.count - 1))
    }

    /// When the operation applied last was an item delete: its id and the slot its author saw.
    ///
    /// - Complexity: O(1).
    var lastItemDelete: (id: OpID, seen: LocalVersion)? {
        guard let rec = records.last, rec.kind == .deleteItem else { return nil }
        return (lastID(ofRecord: rec), seenSlots[Int(rec.payload + rec.count - 1)])
    }

    /// The replica of every operation of record `r`.
    @inline(__always) func replica(ofRecord r: Int) -> ReplicaID { replicaIDs[Int(records[r].replica)] }

    /// The id of operation `k` of record `r`.
    @inline(__always) func id(record r: Int, operation k: Int) -> OpID {
        let rec = records[r]
        return OpID(counter: rec.counter &+ UInt64(k), replica: replicaIDs[Int(rec.replica)])
    }

    /// The id of the last slot of operation `k` of record `r` (its id unless it moves several items).
    @inline(__always) func lastID(record r: Int, operation k: Int) -> OpID {
        let rec = records[r]
        let last = rec.spansIDs ? UInt64(rec.count - 1) : UInt64(k)
        return OpID(counter: rec.counter &+ last, replica: replicaIDs[Int(rec.replica)])
    }

    /// The last id a record covers.
    @inline(__always) private func lastID(ofRecord rec: Record) -> OpID {
        OpID(counter: rec.counter &+ UInt64(rec.count - 1), replica: replicaIDs[Int(rec.replica)])
    }

    /// The causal dependencies of operation `k` of record `r`.
    ///
    /// - Complexity: O(d) for d dependencies (no allocation for one).
    func deps(record r: Int, operation k: Int) -> Frontier {
        let rec = records[r]
        if rec.kind == .other { return others.deps(at: Int(rec.payload)) }
        if k > 0 { return Frontier(only: OpID(counter: rec.counter &+ UInt64(k - 1), replica: replicaIDs[Int(rec.replica)])) }
        if rec.deps >= 0 {
            let list = Int(rec.deps)
            let lo = Int(depStarts[list]), hi = list + 1 < depStarts.count ? Int(depStarts[list + 1]) : depIDs.count
            return hi - lo == 1 ? Frontier(only: depIDs[lo]) : Frontier(depIDs[lo ..< hi])
        }
        return r == 0 ? Frontier() : Frontier(only: lastID(ofRecord: records[r - 1]))
    }

    /// The record and operation (index in the record) whose id range holds `id`, if applied.
    ///
    /// - Complexity: O(log m) for m records of that replica.
    func locate(_ id: OpID) -> (record: Int, operation: Int)? {
        guard let k = replicaIndex.index(of: id.replica) else { return nil }
        return records.withUnsafeBufferPointer { recs -> (record: Int, operation: Int)? in
            byReplica[k].withUnsafeBufferPointer { list -> (record: Int, operation: Int)? in
                let lo = list.partitionPoint { recs[Int($0)].counter <= id.counter }
                if lo == 0 { return nil }
                let r = Int(list[lo - 1])
                let offset = id.counter - recs[r].counter
                guard offset < UInt64(recs[r].count) else { return nil }
                return (r, recs[r].spansIDs ? 0 : Int(offset))
            }
        }
    }

    /// The counters of `replica` this log holds, as runs in increasing order (touching records
    /// joined).
    ///
    /// - Complexity: O(k) for the k records of that replica.
    func counterRuns(of replica: ReplicaID) -> [ClosedRange<UInt64>] {
        guard let k = replicaIndex.index(of: replica) else { return [] }
        return ListDocument.joined(byReplica[k].map { r in
            let rec = records[Int(r)]
            return rec.counter...(rec.counter &+ UInt64(rec.count - 1))
        })
    }

    /// The id of the applied operation whose id range holds `id`, if any.
    ///
    /// - Complexity: O(log m) for m records of that replica.
    func operationID(containing id: OpID) -> OpID? {
        locate(id).map { self.id(record: $0.record, operation: $0.operation) }
    }

    /// The record and operation holding log position `position` (`0...count`; `count` gives
    /// the end: `(records.count, 0)`).
    ///
    /// - Complexity: O(log r) for r records.
    func locate(position: Int) -> (record: Int, operation: Int) {
        precondition(position >= 0 && position <= count, "log position \(position) out of 0...\(count)")
        if position == count { return (records.count, 0) }
        return records.withUnsafeBufferPointer { recs in
            let lo = recs.partitionPoint { Int($0.position) <= position }
            return (lo - 1, position - Int(recs[lo - 1].position))
        }
    }

    /// For each record, the greatest counter of its replica that `version` has seen (a per-replica
    /// table, so the filter reads the version vector once per replica, not once per record).
    func seenCounters(_ version: VersionVector) -> [UInt64] {
        replicaIDs.map { version[$0] }
    }

    /// The replica index of record `r` (an index into ``seenCounters(_:)``'s answer).
    @inline(__always) func replicaIndex(ofRecord r: Int) -> Int { Int(records[r].replica) }
}

/// Slots `slot`, `slot + step`, … (`left` of them), as a sequence that an array appends in one
/// loop (`_copyContents`; appending them one at a time checks uniqueness and room for each).
private struct SteppedSlots: Sequence, IteratorProtocol {
    var slot: LocalVersion
    let step: Int32
    var left: Int

    var underestimatedCount: Int { left }

    mutating func next() -> LocalVersion? {
        guard left > 0 else { return nil }
        left -= 1
        defer { slot = slot.advanced(by: step) }
        return slot
    }

    /// Writes the slots left (as many as fit) straight into `buffer`; returns the slots not
    /// written and the number written.
    func _copyContents(initializing buffer: UnsafeMutableBufferPointer<LocalVersion>) -> (SteppedSlots, Int) {
        let n = Swift.min(left, buffer.count)
        guard n > 0, let base = buffer.baseAddress else { return (self, 0) }
        for k in 0 ..< n { (base + k).initialize(to: slot.advanced(by: step &* Int32(truncatingIfNeeded: k))) }
        return (SteppedSlots(slot: slot.advanced(by: step &* Int32(truncatingIfNeeded: n)), step: step, left: left - n), n)
    }
}
