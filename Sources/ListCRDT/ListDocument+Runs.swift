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
        guard case let .insertItem(sectionID, firstOrigins, _) = ops[k - 1].kind else { return k }
        // Each operation that continues the run gets its entity row at once (the row's slot is
        // known ahead: the run's slots are the next local versions); nothing after can fail.
        let s = slots.sequence(of: last.slot)
        let right = slots.origins(of: last.slot).right
        let lv = Int32(slots.count), e = Int32(items.count)
        var previous = last.id
        var end = k
        while end < ops.count {
            let op = ops[end]
            guard op.id.replica == previous.replica, op.id.counter == previous.counter &+ 1,
                  op.id.counter <= OpID.maxCounter, op.deps.isOnly(previous),
                  case let .insertItem(section, origins, value) = op.kind, section == sectionID,
                  origins.after == SlotID(previous), origins.before == firstOrigins.before,
                  value.count <= maxValueSize
            else { break }
            _ = items.append(id: op.id, slot: lv + Int32(end - k), value: value, section: s)
            previous = op.id
            end += 1
        }
        let n = end - k
        if n == 0 { return k }
        _ = slots.appendRun(id: ops[k].id, count: n, left: last.slot, right: right, sequence: s, entity: e)
        leafOf.append(contentsOf: repeatElement(-1, count: n))
        let after = forest.locate(last.slot, leafOf: leafOf)
        forest.insert(tree(ofSequence: s), lv, count: n, visible: true, after: after, leafOf: &leafOf)
        refreshSection(s)

        if previous.counter > clock { clock = previous.counter }
        versionVector.observe(previous)
        if currentFrontier.isOnly(last.id) {
            currentFrontier.set(previous)
        } else {
            currentFrontier.remove(last.id)
            currentFrontier.insert(previous)
        }
        log.extendInsertRun(by: n)
        return end
    }
}
