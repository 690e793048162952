import Foundation

/// Loading encoded batches (a saved history, a snapshot, a sync frame) without building one
/// ``ListOperation`` per typed character or deleted item.
extension ListDocument {
    /// Decodes a batch (Docs/WireFormat.md §2) and applies it, refusing a batch of more than
    /// `maxOperations` operations: exactly
    /// `receive(try ListOperation.decode(bytes, maxValueSize: maxValueSize, maxOperations: maxOperations))`
    /// (the same state, history, version, frontier, buffer and returned errors), but the batch's
    /// insert runs and delete runs are never expanded into operations: a run whose first operation
    /// applies at once (or, for a delete run, continues the operation applied last) goes in in one
    /// step. Anything else (other records, a run that waits for a dependency, duplicates, a
    /// document with buffered operations) takes the general path of ``receive(_:)-([ListOperation])``.
    ///
    /// - Throws: ``WireError`` when the bytes are malformed (values are limited to
    ///   ``maxValueSize``); the whole batch is decoded and validated first, so the document is then
    ///   exactly as it was.
    /// - Returns: the errors of the operations refused (see ``receive(_:)-(ListOperation)``).
    /// - Complexity: O(b) to decode b bytes; then O(n + log N) for an insert or delete run of n
    ///   operations that goes in in one step in a document of N slots (a delete run: of consecutive
    ///   typed items), plus the general path's cost of each other operation.
    @discardableResult
    public mutating func receive(
        encoded bytes: some Collection<UInt8>,
        maxOperations: Int = ListOperation.defaultMaxBatchOperations
    ) throws(WireError) -> [ApplyError] {
        let batch = try DecodedBatch.decode(bytes, maxValueSize: maxValueSize, maxOperations: maxOperations)
        return try apply(batch, strict: false)
    }

    /// Applies a decoded batch in order, with the run fast paths; returns the errors of the
    /// operations refused.
    ///
    /// When `strict` (loading a snapshot), every operation must apply at once (no error, no
    /// duplicate, none buffered, none waking buffered ones): else it throws
    /// ``WireError/inconsistentSnapshot(_:)`` naming the first that does not, and the document is
    /// left part-way (the caller discards it).
    mutating func apply(_ batch: DecodedBatch, strict: Bool) throws(WireError) -> [ApplyError] {
        var errors: [ApplyError] = []
        var position = 0  // index in the batch of the part's first operation
        var lastSection: (id: SectionID, entity: Int32)?  // the section the last insert run went in
        reserveCapacity(for: batch)
        for part in batch.parts {
            switch part {
            case .operations(let ops):
                try receiveAll(ops, at: position, strict: strict, errors: &errors)
                position += ops.count
            case .insertRun(let r):
                let n = batch.insertRuns[r].count
                var k = receiveInsertRun(r, in: batch, lastSection: &lastSection)
                if k == 0 {
                    if try receiveStep(batch.operation(insertRun: r, 0), at: position, strict: strict, errors: &errors) {
                        k = receiveInsertRun(r, in: batch, from: 1)
                    } else {
                        k = 1
                    }
                }
                if k < n {
                    try receiveAll((k..<n).map { batch.operation(insertRun: r, $0) }, at: position + k,
                                   strict: strict, errors: &errors)
                }
                position += n
            case .deleteRun(let r):
                let n = batch.deleteRuns[r].count
                var k = receiveDeleteRun(r, in: batch, from: 0)
                if k == 0 {
                    if try receiveStep(batch.operation(deleteRun: r, 0), at: position, strict: strict, errors: &errors) {
                        k = receiveDeleteRun(r, in: batch, from: 1)
                    } else {
                        k = 1
                    }
                }
                if k < n {
                    try receiveAll((k..<n).map { batch.operation(deleteRun: r, $0) }, at: position + k,
                                   strict: strict, errors: &errors)
                }
                position += n
            }
        }
        return errors
    }

    /// Makes room in the slot and item tables for the slots and items the batch's new insert runs
    /// add (at least doubling the room when it grows, as appending does): a run appends many at
    /// once. Runs whose first id is known here (duplicates) are not counted.
    private mutating func reserveCapacity(for batch: DecodedBatch) {
        var n = 0
        for run in batch.insertRuns where run.id.counter > versionVector[run.id.replica] { n += run.count }
        if n == 0 { return }
        slots.reserveCapacity(forMore: n)
        leafOf.reserveCapacity(more: n)
        items.rows.reserveCapacity(more: n)
        items.value.reserveCapacity(more: n)
    }

    // MARK: The general path

    /// ``receive(_:)-([ListOperation])`` for operations `at ..< at + ops.count` of a batch,
    /// appending the errors to `errors` (in `strict` mode, see ``apply(_:strict:)``).
    private mutating func receiveAll(_ ops: [ListOperation], at position: Int, strict: Bool,
                                     errors: inout [ApplyError]) throws(WireError) {
        var k = 0
        while k < ops.count {
            let applied = try receiveStep(ops[k], at: position + k, strict: strict, errors: &errors)
            k += 1
            // A typed run or a delete run that follows an applied insert or delete goes in in one step.
            if applied { k = receiveRun(ops, from: k) }
        }
    }

    /// ``receive(_:)-(ListOperation)`` for operation `position` of a batch: returns whether it was
    /// applied at once, waking nothing; records an error in `errors` (in `strict` mode, throws
    /// instead, and also when the operation was not applied at once).
    private mutating func receiveStep(_ op: ListOperation, at position: Int, strict: Bool,
                                      errors: inout [ApplyError]) throws(WireError) -> Bool {
        let outcome: ReceiveOutcome
        do { outcome = try receive(op) } catch {
            if strict { throw .inconsistentSnapshot("operation \(position) (\(op.id)) refused: \(error)") }
            errors.append(error)
            return false
        }
        if outcome == .applied(woken: 1) { return true }
        if strict { throw .inconsistentSnapshot("operation \(position) (\(op.id)) was not applied in order: \(outcome)") }
        return false
    }

    // MARK: Runs in one step

    /// Applies insert run `r` of `batch` from its first operation on, in one step, when that
    /// operation passes every check of the general path (``receive(_:)-(ListOperation)``) and
    /// applies at once: its id is new, its dependencies are applied, its section and origins are
    /// known, before it, in that section and in order, and its value is within
    /// ``maxValueSize``. Returns how many operations it applied: the run up to the first value
    /// over the limit, or 0 (nothing changed) when the first operation is not such a one; the
    /// general path then takes it, and refuses, buffers or applies it as before.
    ///
    /// The effect is the general path's, operation by operation: the first slot goes where the
    /// integration rule puts it (``SlotForest/placement(_:id:left:right:slots:leafOf:tieBreak:)``)
    /// and the others right after it, one after the other (see ``receiveInsertRun(_:from:)``);
    /// the slots are one slot run, one tree entry and one log record (extending the last record
    /// when the first operation continues it, as logging it alone would). `lastSection` caches
    /// the section looked up last, across the runs of a batch.
    ///
    /// - Complexity: O(n + log N) for a run of n operations in a document of N slots, plus
    ///   O(k log N) for k concurrent slots between the first operation's origins.
    mutating func receiveInsertRun(_ r: Int, in batch: DecodedBatch,
                                   lastSection: inout (id: SectionID, entity: Int32)?) -> Int {
        let run = batch.insertRuns[r]
        let id = run.id
        guard continuationFastPath, variant == .correct, buffer.count == 0, id.replica != replica,
              id.counter > versionVector[id.replica] else { return 0 }
        let deps = batch.frontier(run.deps)
        for d in deps {
            guard d.counter < id.counter, versionVector.contains(d) else { return 0 }
        }
        // The values within the limit, from the first on.
        var n = run.count
        if run.oneByte {
            if maxValueSize < 1 { return 0 }
        } else {
            for j in 0..<n where batch.valueRanges[run.values + j].count > maxValueSize {
                n = j
                break
            }
            if n == 0 { return 0 }
        }
        // The references, as `resolve` checks them.
        guard run.section.opID.counter < id.counter else { return 0 }
        // A section's entity never changes once known (sections are never forgotten).
        let s: Int32
        if let last = lastSection, last.id == run.section {
            s = last.entity
        } else {
            guard let known = sectionEntity(run.section) else { return 0 }
            s = known
            lastSection = (run.section, known)
        }
        var left: Int32 = -1, right: Int32 = -1
        if let after = run.origins.after {
            guard after.opID.counter < id.counter, let lv = slots.lv(of: after.opID), slots.sequence(of: lv) == s
            else { return 0 }
            left = lv
        }
        if let before = run.origins.before {
            guard before.opID.counter < id.counter, let lv = slots.lv(of: before.opID), slots.sequence(of: lv) == s
            else { return 0 }
            right = lv
        }
        // Where the first slot goes: right after the left origin when the right origin follows it
        // (nothing sits between them: the usual case), else where the integration rule puts it.
        let t = tree(ofSequence: s)
        let leftCursor = left >= 0 ? forest.locate(left, leafOf: leafOf) : nil
        let following = leftCursor.map { forest.next($0) } ?? forest.first(t)
        let adjacent = following.map { forest.lv(at: $0) == right } ?? (right < 0)
        if !adjacent && left >= 0 && right >= 0 && !forest.isBefore(left, right, leafOf: leafOf) { return 0 }

        // `commit` of the first operation, with the others' slots and rows added at once.
        let lv = Int32(slots.count), e = Int32(items.count)
        appendItems(of: run, from: 0, count: n, in: batch, slot: lv, section: s)
        _ = slots.appendRun(id: id, count: n, left: left, right: right, sequence: s, entity: e)
        leafOf.append(contentsOf: repeatElement(-1, count: n))
        let after = adjacent ? leftCursor
                             : forest.placement(t, id: id, left: left, right: right, slots: slots, leafOf: leafOf)
        forest.insert(t, lv, count: n, visible: true, after: after, leafOf: &leafOf)
        refreshSection(s)
        // What `record` does for the first operation and `advance` for the others: the clock,
        // version and frontier end as after the last one alone (its id is the greatest, and each
        // later operation replaces the one before in the frontier).
        advance(to: id.advanced(by: n - 1), deps: deps)
        log.append(id: id, deps: deps, kind: .insertItem, span: 1, payload: lv)
        if n > 1 { log.extendInsertRun(by: n - 1) }
        return n
    }

    /// Called right after operation `k - 1` of insert run `r` of `batch` was applied (waking
    /// nothing): applies operations `k...` of the run in one step, as
    /// ``receiveInsertRun(_:from:)`` does for operations; returns the index after the last one
    /// applied (`k` when none was: the fast path does not hold).
    ///
    /// The checks of the general path hold by construction, as there: the run's operations
    /// continue each other (the decoder built them so), and operation `k - 1` was the item insert
    /// applied last. Only the value sizes are checked (the decoder's limit is this document's,
    /// but a one-byte value still needs ``maxValueSize`` ≥ 1).
    ///
    /// - Complexity: O(n + log N) for the n operations applied, in a document of N slots.
    mutating func receiveInsertRun(_ r: Int, in batch: DecodedBatch, from k: Int) -> Int {
        let run = batch.insertRuns[r]
        guard k < run.count, continuationFastPath, variant == .correct, buffer.count == 0,
              let last = log.lastItemInsert, last.id == run.id.advanced(by: k - 1), last.id.replica != replica
        else { return k }
        var n = run.count - k
        if run.oneByte {
            if maxValueSize < 1 { return k }
        } else {
            for j in 0..<n where batch.valueRanges[run.values + k + j].count > maxValueSize {
                n = j
                break
            }
            if n == 0 { return k }
        }
        // Operation k - 1 went into the run's section: the entity rows get its sequence.
        let s = slots.sequence(of: last.slot)
        let lv = Int32(slots.count), e = Int32(items.count)
        appendItems(of: run, from: k, count: n, in: batch, slot: lv, section: s)
        commitInsertRun(after: last, count: n, sequence: s, entity: e)
        return k + n
    }

    /// The entity rows and values of operations `k ..< k + n` of insert run `run`, items placed
    /// at slots `lv ...` of section `s`.
    private mutating func appendItems(of run: DecodedBatch.InsertRun, from k: Int, count n: Int, in batch: DecodedBatch,
                                      slot lv: Int32, section s: Int32) {
        let id = run.id.advanced(by: k), start = run.values + k
        if run.oneByte {
            batch.withOneByteValues(start ..< start + n) { items.appendRun(id: id, slot: lv, section: s, values: $0) }
        } else {
            batch.withRangeValues(start ..< start + n) { items.appendRun(id: id, slot: lv, section: s, values: $0) }
        }
    }

    /// Applies operations `k...` of delete run `r` of `batch` in one step, as
    /// ``receiveDeleteRun(_:from:)`` does for operations, when operation `k - 1` was the item
    /// delete applied last or, for `k == 0`, when the run's first operation continues the item
    /// insert or delete applied last (its author's next id, depending on exactly that operation);
    /// returns the index after the last one applied (`k` when none was).
    ///
    /// What the general path checks holds by construction (each id is its author's next, the one
    /// dependency is applied, the seen slot is the item's insert slot) except what is checked
    /// here per operation: the item is before the operation, and the slot with the item's id is
    /// known and is the insert slot of an item. The run stops at the first operation that fails a
    /// check; the general path then refuses or applies it exactly as before.
    ///
    /// The deletes go in in chunks (``applyDeleteChunk(count:step:previous:first:deps:startsRecord:after:item:)``);
    /// each chunk after the first continues the delete applied last.
    ///
    /// - Complexity: O(n + log N) for n deletes of consecutive typed items in a document of N
    ///   slots; O(log N) more per item not next to the one before.
    mutating func receiveDeleteRun(_ r: Int, in batch: DecodedBatch, from k: Int) -> Int {
        let run = batch.deleteRuns[r]
        guard continuationFastPath, variant == .correct, buffer.count == 0, run.id.replica != replica else { return k }
        let step: Int32 = run.descending ? -1 : 1
        var k = k
        while k < run.count {
            // The slot the operation before saw (a guess for the next item's slot).
            var previous: Int32
            let after = OpID(counter: run.id.counter &+ UInt64(k) &- 1, replica: run.id.replica)
            if k > 0 {
                guard let last = log.lastItemDelete, last.id == after else { return k }
                previous = last.seen
            } else {
                // The run's first operation must continue the operation applied last, by its author.
                guard run.deps.isOnly(after) else { return k }
                if let last = log.lastItemDelete {
                    guard last.id == after else { return k }
                    previous = last.seen
                } else {
                    // Backspaces right after typing: the first item is most likely the one typed last.
                    guard let last = log.lastItemInsert, last.id == after else { return k }
                    previous = last.slot &- step
                }
            }
            let start = k, m = min(run.count - start, Self.deleteChunk)
            let n = applyDeleteChunk(count: m, step: step, previous: &previous, first: run.id.advanced(by: start),
                                     deps: Frontier(only: after), startsRecord: start == 0, after: after) { j in
                let item = run.item(start + j)
                return item.counter < run.id.counter &+ UInt64(start + j) ? item : nil
            }
            k += n
            if n < m { break }
        }
        return k
    }
}

// MARK: - Entity rows of a run

extension EntityTable {
    /// Adds the rows and values of the items made by a typed run, one per value: ids `id`,
    /// `id + 1`, …, placed at slots `lv`, `lv + 1`, … of section `s`, each with its value written
    /// by its own insert: what one ``append(id:slot:value:section:)`` per value does, with one
    /// reservation per array.
    ///
    /// - Complexity: O(n) amortized for n values.
    @inline(__always)
    mutating func appendRun(id: OpID, slot lv: Int32, section s: Int32, values: some Collection<Data>) {
        rows.append(contentsOf: RunRows(id: id, slot: lv, section: s, count: values.count))
        value.append(contentsOf: values)
    }

    /// The rows of `count` items made by a typed run (see ``appendRun(id:slot:section:values:)``),
    /// as a sequence: appending a sequence reserves room once and writes the elements through a
    /// pointer (appending one at a time checks uniqueness and room for each; a closure, as in
    /// `lazy.map`, is not inlined there).
    private struct RunRows: Sequence, IteratorProtocol {
        var id: OpID
        var lv: Int32
        let section: Int32
        var left: Int

        init(id: OpID, slot lv: Int32, section: Int32, count: Int) {
            (self.id, self.lv, self.section, left) = (id, lv, section, count)
        }

        var underestimatedCount: Int { left }

        mutating func next() -> Row? {
            guard left > 0 else { return nil }
            left -= 1
            defer { (id.counter, lv) = (id.counter &+ 1, lv &+ 1) }
            return Row(id: id, winner: lv, section: section, state: Row.untouched)
        }
    }
}

extension Array {
    /// Makes room for `n` more elements, at least doubling the room when it grows (as appending
    /// does, so that calling it for every batch stays amortized O(1) per element).
    mutating func reserveCapacity(more n: Int) {
        let needed = count + n
        if capacity < needed { reserveCapacity(Swift.max(needed, 2 * capacity)) }
    }
}
