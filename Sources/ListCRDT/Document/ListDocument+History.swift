import Foundation

/// The applied history: logging an applied operation as a compact record (see ``OpLog``), and
/// turning records back into the operations that were applied, equal (`==`) to them.
///
/// A record stores only what the state cannot give back; the rest is read from the state here:
/// a slot's id, origins and sequence from `slots`, an entity's id from `items` or `sections`. The
/// state only grows where history needs it (slots are never removed, entities never forgotten),
/// and an insert's value, the one register a later write replaces, is kept aside the first time
/// that happens.
extension ListDocument {
    // MARK: Public history

    /// Every operation applied here, in the causal order they were applied.
    ///
    /// - Complexity: O(m) for m operations (each one is rebuilt from the log).
    public var operations: [ListOperation] { operations(fromValid: 0) }

    /// The operations applied from log position `logIndex` on (`0...operationCount`), in the order
    /// they were applied: `operations(from: k) == Array(operations[k...])`. After an edit or a
    /// receive, `operations(from: countBefore)` is what it applied.
    ///
    /// - Throws: ``ListError/logPositionOutOfRange(_:count:)`` unless `0 <= logIndex <= operationCount`.
    /// - Complexity: O(k + log r) for the k operations returned, r records in the log.
    public func operations(from logIndex: Int) throws(ListError) -> [ListOperation] {
        guard logIndex >= 0, logIndex <= log.count else { throw .logPositionOutOfRange(logIndex, count: log.count) }
        return operations(fromValid: logIndex)
    }

    /// ``operations(from:)`` for a position known to be in `0...operationCount`.
    func operations(fromValid logIndex: Int) -> [ListOperation] {
        var out: [ListOperation] = []
        out.reserveCapacity(log.count - logIndex)
        var (r, k) = log.locate(position: logIndex)
        while r < log.records.count {
            appendOperations(ofRecord: r, from: k, to: log.records[r].operations, into: &out)
            r += 1
            k = 0
        }
        return out
    }

    /// Operations this document has applied and `version` has not seen, in causal order.
    ///
    /// - Complexity: O(r + k) for r records in the log and the k operations returned; the records
    ///   of a typed run that `version` has seen whole are skipped without rebuilding them.
    public func operations(since version: VersionVector) -> [ListOperation] {
        operations(since: version, before: log.count)
    }

    /// The operations applied before log position `end` (`0...operationCount`) that `version` has
    /// not seen, in the order they were applied: ``operations(since:)`` of the log's first `end`
    /// operations. A daemon answers with it while the operations after `end` are not yet durable.
    ///
    /// - Complexity: O(r + k) for the r records before `end` and the k operations returned.
    public func operations(since version: VersionVector, before end: Int) -> [ListOperation] {
        var out: [ListOperation] = []
        _ = appendOperations(since: version, from: 0, before: end, into: &out)
        return out
    }

    /// Appends to `out` the operations applied at log positions `start..<end` (within
    /// `0...operationCount`) that `version` has not seen, in the order they were applied, at most
    /// `limit` of them; returns the log position to go on from (`end` once there is nothing more).
    ///
    /// Reading `start..<end` this way in steps, each from the position the one before returned,
    /// appends exactly ``operations(since:before:)`` (for `start` 0), a step's worth at a time: a
    /// daemon streams a catch-up from its log without holding it whole.
    ///
    /// - Precondition: `0 <= start <= end <= operationCount`, `limit > 0`.
    /// - Complexity: O(k + s + log r) for the k operations appended, the s records looked at (the
    ///   records of a typed run that `version` has seen whole are skipped without rebuilding them)
    ///   and r records in the log.
    @discardableResult
    public func appendOperations(since version: VersionVector, from start: Int, before end: Int, limit: Int = .max,
                                 into out: inout [ListOperation]) -> Int {
        forEachUnseen(since: version, from: start, before: end, limit: limit) { r, from, to in
            appendOperations(ofRecord: r, from: from, to: to, into: &out)
        }
    }

    /// How many operations applied before log position `end` (`0...operationCount`) `version` has
    /// not seen: `operations(since: version, before: end).count`, without rebuilding them.
    ///
    /// - Complexity: O(r) for the r records before `end`.
    public func countOperations(since version: VersionVector, before end: Int) -> Int {
        var n = 0
        forEachUnseen(since: version, from: 0, before: end, limit: .max) { _, from, to in n += to - from }
        return n
    }

    /// Calls `body(r, from, to)` for each record `r` with operations `from..<to` at log positions
    /// `start..<end` that `version` has not seen, in log order, until `limit` operations were
    /// given; returns the log position after the last operation looked at (`end` when done).
    ///
    /// - Complexity: O(s + log r) for s records looked at, plus what `body` costs.
    @discardableResult
    private func forEachUnseen(since version: VersionVector, from start: Int, before end: Int, limit: Int,
                               _ body: (_ record: Int, _ from: Int, _ to: Int) -> Void) -> Int {
        precondition(start >= 0 && start <= end && end <= log.count, "log range \(start)..<\(end) out of 0...\(log.count)")
        precondition(limit > 0, "a limit of \(limit) operations")
        guard start < end else { return end }
        let seen = log.seenCounters(version)
        var (r, k) = log.locate(position: start)
        let (lastRecord, lastEnd) = end == log.count ? (log.records.count, 0) : log.locate(position: end)
        var left = limit
        while r < lastRecord || (r == lastRecord && k < lastEnd) {
            let rec = log.records[r]
            let stop = r == lastRecord ? lastEnd : rec.operations
            let seenUpTo = seen[log.replicaIndex(ofRecord: r)]
            if rec.kind == .moveItems || rec.kind == .moveSection || rec.kind == .other {
                if rec.counter > seenUpTo {
                    body(r, 0, 1)
                    left -= 1
                }
            } else {
                // A run: operation k has counter `counter + k`; those up to `seenUpTo` are seen.
                let seenInRun = seenUpTo < rec.counter ? 0 : Int(min(seenUpTo - rec.counter + 1, UInt64(stop)))
                let first = max(k, seenInRun)
                if first < stop {
                    let n = min(stop - first, left)
                    body(r, first, first + n)
                    left -= n
                    if first + n < stop { return Int(rec.position) + first + n }
                }
            }
            r += 1
            k = 0
            if left == 0 { return r < log.records.count ? min(Int(log.records[r].position), end) : end }
        }
        return end
    }

    /// The operations applied at log positions `range` (within `0...operationCount`), in order.
    ///
    /// - Complexity: O(k + log r) for the k operations returned, r records in the log.
    public func operations(in range: Range<Int>) -> [ListOperation] {
        precondition(range.lowerBound >= 0 && range.upperBound <= log.count, "log range \(range) out of 0...\(log.count)")
        var out: [ListOperation] = []
        out.reserveCapacity(range.count)
        guard !range.isEmpty else { return out }
        var (r, k) = log.locate(position: range.lowerBound)
        var left = range.count
        while left > 0 {
            let n = min(log.records[r].operations - k, left)
            appendOperations(ofRecord: r, from: k, to: k + n, into: &out)
            left -= n
            r += 1
            k = 0
        }
        return out
    }

    // MARK: Lookups

    /// The applied operation whose id range holds `id`, if any, rebuilt from the log.
    ///
    /// - Complexity: O(log m) for m records of that replica (plus the items of a multi-item move).
    func loggedOperation(containing id: OpID) -> ListOperation? {
        log.locate(id).map { loggedOperation(record: $0.record, operation: $0.operation) }
    }

    /// Operation `k` of record `r`, rebuilt.
    ///
    /// - Complexity: O(1), plus O(k) for a move of k items.
    func loggedOperation(record r: Int, operation k: Int) -> ListOperation {
        let rec = log.records[r]
        if rec.kind == .other { return log.others[Int(rec.payload)] }
        let id = OpID(counter: rec.counter &+ UInt64(k), replica: log.replica(ofRecord: r))
        if rec.kind == .textRun {
            return log.others.operation(ofRun: Int(rec.payload), k, firstID: OpID(counter: rec.counter, replica: id.replica), deps: log.deps(record: r, operation: k))
        }
        return rebuild(rec, operation: k, id: id, deps: log.deps(record: r, operation: k))
    }

    /// Rebuilds operations `start..<end` of record `r` and appends them to `out`.
    ///
    /// - Complexity: O(end - start), plus O(k) for a move of k items.
    private func appendOperations(ofRecord r: Int, from start: Int, to end: Int, into out: inout [ListOperation]) {
        let rec = log.records[r]
        if rec.kind == .other {
            out.append(log.others[Int(rec.payload)])
            return
        }
        let replica = log.replica(ofRecord: r)
        var deps = log.deps(record: r, operation: start)
        if rec.kind == .textRun {
            log.others.appendOperations(ofRun: Int(rec.payload), from: start, to: end,
                                        firstID: OpID(counter: rec.counter, replica: replica), deps: deps, into: &out)
            return
        }
        for k in start..<end {
            let id = OpID(counter: rec.counter &+ UInt64(k), replica: replica)
            out.append(rebuild(rec, operation: k, id: id, deps: deps))
            deps = Frontier(only: id)  // the next operation of a run depends on exactly this one
        }
    }

    /// Operation `k` of `rec` (not of kind `.other`), given its id and dependencies.
    @inline(__always)
    private func rebuild(_ rec: OpLog.Record, operation k: Int, id: OpID, deps: Frontier) -> ListOperation {
        let kind: ListOperation.Kind
        switch rec.kind {
        case .insertSection:
            let lv = rec.firstSlot.advanced(by: k)
            kind = .insertSection(origins(ofSlot: lv), value: sections.insertValue(slots.entity(of: lv)))
        case .insertItem:
            let lv = rec.firstSlot.advanced(by: k)
            let section = SectionID(sections.rows[slots.sequence(of: lv).section.int].id)
            kind = .insertItem(section: section, origins(ofSlot: lv), value: items.insertValue(slots.entity(of: lv)))
        case .moveSection:
            let lv = rec.firstSlot
            kind = .moveSection(SectionID(sections.rows[slots.entity(of: lv).int].id), origins(ofSlot: lv))
        case .moveItems:
            let lv = rec.firstSlot
            let moved = ItemIDList((0..<rec.count).lazy.map { ItemID(self.items.rows[self.slots.entity(of: lv.advanced(by: $0)).int].id) })
            kind = .moveItems(moved, section: SectionID(sections.rows[slots.sequence(of: lv).section.int].id), origins(ofSlot: lv))
        case .deleteItem:
            let lv = log.seenSlots[Int(rec.payload) + k]
            kind = .deleteItem(ItemID(items.rows[slots.entity(of: lv).int].id), seen: SlotID(slots.id(of: lv)))
        case .other, .textRun:
            preconditionFailure("kept in OtherOperations")
        }
        return ListOperation(id: id, deps: deps, kind: kind)
    }

    /// The origins an operation gave slot `lv`, as ids. Inside a slot run the left origin is the
    /// slot before, whose id is the one before.
    private func origins(ofSlot lv: LocalVersion) -> ListOperation.Origins {
        let run = slots.run(of: lv)
        let after: SlotID?
        if lv != run.lv {
            after = SlotID(run.id.advanced(by: Int(lv.distance(from: run.lv) - 1)))
        } else {
            after = run.left.exists ? SlotID(slots.id(of: run.left)) : nil
        }
        return ListOperation.Origins(after: after, before: run.right.exists ? SlotID(slots.id(of: run.right)) : nil)
    }

    // MARK: Recording

    /// Logs an applied operation, after its effects on the state (its slots exist).
    ///
    /// - Complexity: O(1) amortized.
    mutating func appendToLog(_ op: ListOperation, _ resolved: ResolvedOperation) {
        let kind: OpLog.Kind, span: Int, payload: LocalVersion
        switch resolved {
        case .insertSection:
            (kind, span, payload) = (.insertSection, 1, LocalVersion(slots.count - 1))
        case .insertItem:
            (kind, span, payload) = (.insertItem, 1, LocalVersion(slots.count - 1))
        case .moveSection:
            (kind, span, payload) = (.moveSection, 1, LocalVersion(slots.count - 1))
        case .moveItems(let list, _, _, _):
            (kind, span, payload) = (.moveItems, list.count, LocalVersion(slots.count - list.count))
        case .moveItem:
            (kind, span, payload) = (.moveItems, 1, LocalVersion(slots.count - 1))
        case .deleteItem(_, _, let lv):
            (kind, span, payload) = (.deleteItem, 1, lv)
        case .deleteSection, .setItemValue, .setSectionValue, .writeFields:
            log.append(other: op)
            return
        case .insertItemWithFields, .insertSectionWithFields:
            // Kept whole (its fields are not in the state's tables); its slot is the last one.
            assert(slots.id(of: LocalVersion(slots.count - 1)) == op.id, "the slot of \(op.id) is not the last one")
            log.append(other: op)
            return
        }
        assert(kind == .deleteItem || slots.id(of: payload) == op.id, "the slots of \(op.id) are not the last ones")
        log.append(id: op.id, deps: op.deps, kind: kind, span: span, payload: payload)
    }
}
