/// Typed runs in a received batch, applied in one step.
extension ListDocument {
    /// Called right after `ops[k - 1]` was applied (waking nothing): when it was an item insert,
    /// applies the operations from `k` on that continue it as a typed run (each the next id of the
    /// same author, depending on exactly the one before, right after its slot, with the first one's
    /// right origin and section) in one step, and returns the index after them; else returns `k`
    /// and changes nothing.
    ///
    /// Every check of ``receive(_:)-(ListOperation)`` holds for them by construction: the ids are
    /// new (they follow the author's latest applied id), each dependency is the operation before,
    /// the origins are known, adjacent and in the right section. And each slot goes right after the
    /// one before: the integration rule scans from the left origin, and the only slots that could
    /// sort between are ones whose left origin is that new slot, which no applied operation has
    /// yet. So the run becomes one slot run, one tree entry and one log record.
    ///
    /// - Complexity: O(n + log N) for a run of n operations in a document of N slots.
    mutating func receiveInsertRun(_ ops: [ListOperation], from k: Int) -> Int {
        guard k < ops.count, continuationFastPath, variant == .correct, buffer.count == 0,
              let last = log.lastItemInsert, last.id == ops[k - 1].id, last.id.replica != replica
        else { return k }
        let first = ops[k - 1]
        var end = k
        while end < ops.count, ListOperation.continuesInsertRun(ops[end - 1], ops[end], first: first),
              ops[end].id.counter <= OpID.maxCounter, valueSize(ops[end]) <= maxValueSize {
            end += 1
        }
        let n = end - k
        if n == 0 { return k }

        let s = slots.sequence(of: last.slot)
        let right = slots.origins(of: last.slot).right
        let e = Int32(items.count)
        let lv = slots.appendRun(id: ops[k].id, count: n, left: last.slot, right: right, sequence: s, entity: e)
        leafOf.append(contentsOf: repeatElement(-1, count: n))
        for j in 0..<n {
            let op = ops[k + j]
            guard case let .insertItem(_, _, value) = op.kind else { preconditionFailure("not an insert") }
            _ = items.append(id: op.id, slot: lv + Int32(j), value: value, section: s)
        }
        let after = forest.locate(last.slot, leafOf: leafOf)
        forest.insert(tree(ofSequence: s), lv, count: n, visible: true, after: after, leafOf: &leafOf)
        refreshSection(s)

        let lastID = ops[end - 1].id
        if lastID.counter > clock { clock = lastID.counter }
        versionVector.observe(lastID)
        if currentFrontier.isOnly(first.id) {
            currentFrontier.set(lastID)
        } else {
            currentFrontier.remove(first.id)
            currentFrontier.insert(lastID)
        }
        log.extendInsertRun(by: n)
        return end
    }

    @inline(__always)
    private func valueSize(_ op: ListOperation) -> Int {
        if case let .insertItem(_, _, value) = op.kind { return value.count }
        return 0
    }
}
