/// Typed runs and delete runs in a received batch, applied in one step.
extension ListDocument {
    /// Called right after `ops[k - 1]` was applied (waking nothing): applies the operations from
    /// `k` on that continue it as a typed run (``receiveInsertRun(_:from:)``) or a delete run
    /// (``receiveDeleteRun(_:from:)``) and returns the index after them; else returns `k` and
    /// changes nothing.
    @inline(__always)
    mutating func receiveRun(_ ops: [ListOperation], from k: Int) -> Int {
        guard k < ops.count else { return k }
        switch ops[k - 1].kind {
        case .insertItem:
            // Text typed and then deleted (backspaces right after typing): the deletes go in in one
            // step too.
            let end = receiveInsertRun(ops, from: k)
            return end < ops.count ? receiveDeleteRun(ops, from: end) : end
        case .deleteItem: return receiveDeleteRun(ops, from: k)
        default: return k
        }
    }

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
        commitInsertRun(after: last, count: n, sequence: s, entity: e)
        return end
    }

    /// Applies `n` item inserts that continue the item insert applied last (`last`: its id and
    /// slot) as a typed run (ids `last.id + 1 …`, each depending on exactly the one before, right
    /// after its slot, with `last`'s right origin, in its sequence `s`), whose entity rows
    /// `e ..< e + n` are appended already (their slots are the next local versions): the slots
    /// (one slot run), one tree entry, the section, the clock, version vector and frontier, and
    /// the log record, which it extends.
    ///
    /// - Complexity: O(n + log N) in a document of N slots.
    mutating func commitInsertRun(after last: (id: OpID, slot: Int32), count n: Int, sequence s: Int32, entity e: Int32) {
        let lv = Int32(slots.count)
        let right = slots.origins(of: last.slot).right
        _ = slots.appendRun(id: last.id.advanced(by: 1), count: n, left: last.slot, right: right, sequence: s, entity: e)
        leafOf.append(contentsOf: repeatElement(-1, count: n))
        let after = forest.locate(last.slot, leafOf: leafOf)
        forest.insert(tree(ofSequence: s), lv, count: n, visible: true, after: after, leafOf: &leafOf)
        refreshSection(s)

        advance(from: last.id, to: last.id.advanced(by: n))
        log.extendInsertRun(by: n)
    }

    /// Called right after `ops[k - 1]` was applied (waking nothing): when it was an item delete,
    /// applies the operations from `k` on that continue it as a delete run (backspaces or forward
    /// deletes: ``ListOperation/continuesDeleteRun(_:_:step:)``, each the next id of the same author,
    /// depending on exactly the one before, deleting the item next to the one before as seen at its
    /// insert slot), and returns the index after them; else returns `k` and changes nothing.
    /// When `ops[k - 1]` was the item insert applied last, the run may start at `k` itself: a
    /// delete by the same author, the next id, depending on exactly that insert, seeing the item's
    /// insert slot (backspaces right after typing); its log record is then a new one.
    ///
    /// What the general path checks and holds here by construction: the ids are new (each follows
    /// the author's latest applied id), the one dependency is the operation before, applied, and
    /// the seen slot is the item's insert slot, so the position write it saw is the item's own id.
    /// What is checked per operation: the counter is in range, the item is before the operation,
    /// and the slot with the item's id is known and is the insert slot of an item (found next to
    /// the slot before, else looked up). An operation that fails a check ends the run there; the
    /// general path then refuses or applies it exactly as before.
    ///
    /// Each delete has the effect of the general path's (its item's delete register is raised; an
    /// item that dies has its slot hidden; the section is refreshed; one log entry), but the slots
    /// that die next to each other in one section are hidden together
    /// (``SlotForest/hideRange(_:count:leafOf:)``), and the clock, version vector and frontier are
    /// advanced once.
    ///
    /// - Complexity: O(n + log N) for a run of n deletes of consecutive typed items in a document
    ///   of N slots.
    mutating func receiveDeleteRun(_ ops: [ListOperation], from k: Int) -> Int {
        guard k < ops.count, continuationFastPath, variant == .correct, buffer.count == 0,
              ops[k - 1].id.replica != replica, case let .deleteItem(item, seen) = ops[k].kind
        else { return k }
        // The slot of the item deleted before (the slot its author saw: usually its insert slot),
        // or -2 (none) when the run starts at `k`.
        var previous: Int32
        let startsRecord: Bool
        if let last = log.lastItemDelete, last.id == ops[k - 1].id {
            // The run goes on from the delete applied last.
            previous = last.seen
            startsRecord = false
        } else if let last = log.lastItemInsert, last.id == ops[k - 1].id, seen.opID == item.opID,
                  ops[k].id.replica == last.id.replica, ops[k].id.counter == last.id.counter &+ 1,
                  ops[k].deps.isOnly(last.id) {
            // The run starts right after the insert applied last, by its author (deleting what
            // it just typed): its first delete is new and depends on exactly that insert.
            previous = -2
            startsRecord = true
        } else {
            return k
        }
        let step: Int64
        let after = startsRecord ? k : k - 1
        if after + 1 < ops.count && ListOperation.continuesDeleteRun(ops[after], ops[after + 1], step: 1) {
            step = 1
        } else if after + 1 < ops.count && ListOperation.continuesDeleteRun(ops[after], ops[after + 1], step: -1) {
            step = -1
        } else if startsRecord {
            step = 0  // a single delete
        } else {
            return k
        }

        // First the checks (they read nothing the deletes change), collecting each item's slot.
        var found: [Int32] = []
        ops.withUnsafeBufferPointer { buf in
            let delta = Int32(step)
            let slotCount = Int32(slots.count)
            var end = k
            while end < buf.count {
                guard end == k || (step != 0 && ListOperation.continuesDeleteRun(buf[end - 1], buf[end], step: step)),
                      case let .deleteItem(item, _) = buf[end].kind else { break }
                let counter = buf[end].id.counter
                guard counter <= OpID.maxCounter, item.opID.counter < counter else { break }
                let id = item.opID
                var lv = previous &+ delta
                if lv < 0 || lv >= slotCount || slots.id(of: lv) != id {
                    guard let at = slots.lv(of: id) else { break }
                    lv = at
                }
                guard slots.sequence(of: lv) >= 0, items.rows[Int(slots.entity(of: lv))].id == id else { break }
                if found.isEmpty { found.reserveCapacity(min(buf.count - k, 64)) }
                found.append(lv)
                previous = lv
                end += 1
            }
        }
        let n = found.count
        if n == 0 { return k }
        found.withUnsafeMutableBufferPointer {
            commitDeleteRun($0, first: ops[k].id, deps: ops[k].deps, startsRecord: startsRecord, after: ops[k - 1].id)
        }
        return k + n
    }

    /// Applies `found.count` item deletes, ids `first`, `first + 1`, …, each depending on exactly
    /// the one before, the first on `deps`, which is exactly `{after}`, the operation applied last;
    /// the author of each saw the insert slot `found[j]` of the item it deletes (checked by the
    /// caller, with everything else the general path checks). When `startsRecord`, the first
    /// delete is logged with ``OpLog/append(id:deps:kind:span:payload:)`` (which extends the last
    /// record when it continues it); else the last record is a delete run that they all extend.
    /// `found` is scratch space afterwards.
    ///
    /// Each delete has the effect of the general path's (see ``receiveDeleteRun(_:from:)``), in
    /// three passes: the log and the clock first (they keep the slots), then every item's delete
    /// register (``EntityTable/deleteSeeingInserts(_:)``), then the slots of the items that died,
    /// those next to each other in one section hidden together. (Registers and tree visibility
    /// do not depend on each other, so the order of the passes changes nothing.)
    ///
    /// - Complexity: O(n + log N) for n deletes of consecutive typed items in a document of N slots.
    mutating func commitDeleteRun(_ found: UnsafeMutableBufferPointer<Int32>, first: OpID, deps: Frontier,
                                  startsRecord: Bool, after: OpID) {
        let n = found.count
        if startsRecord {
            log.append(id: first, deps: deps, kind: .deleteItem, span: 1, payload: found[0])
            if n > 1 { log.extendDeleteRun(seen: found[1...]) }
        } else {
            log.extendDeleteRun(seen: found[...])
        }
        advance(from: after, to: first.advanced(by: n - 1))

        for j in found.indices { found[j] = slots.entity(of: found[j]) }
        let dead = items.deleteSeeingInserts(found)
        hideDeadItems(UnsafeBufferPointer(rebasing: found[..<dead]))
    }

    /// Hides the winning slots of `dead`, items that just died, in order, those next to each
    /// other in one section together (a backspace run walks down, a forward-delete run up).
    ///
    /// - Complexity: O(k + p log N) for k items whose slots lie in p runs of neighbours.
    private mutating func hideDeadItems(_ dead: UnsafeBufferPointer<Int32>) {
        var low: Int32 = 0, pending = 0, section: Int32 = -1
        for e in dead {
            let row = items.rows[Int(e)]
            let w = row.winner
            if pending > 0 && row.section == section && (w == low &+ Int32(pending) || w == low &- 1) {
                if w < low { low = w }
                pending += 1
            } else {
                if pending > 0 { hideDead(low, count: pending, section: section) }
                (low, pending, section) = (w, 1, row.section)
            }
        }
        if pending > 0 { hideDead(low, count: pending, section: section) }
    }

    /// The clock, version vector and frontier after a run of operations by one author, each
    /// depending on exactly the one before, the first on `first` (applied last), up to `last`:
    /// what recording each of them one at a time would do.
    mutating func advance(from first: OpID, to last: OpID) {
        if last.counter > clock { clock = last.counter }
        versionVector.observe(last)
        if currentFrontier.isOnly(first) {
            currentFrontier.set(last)
        } else {
            currentFrontier.remove(first)
            currentFrontier.insert(last)
        }
    }

    /// Hides the `n` visible slots `lv ..< lv + n` of section `s`'s sequence, whose items just
    /// died, and refreshes the section.
    private mutating func hideDead(_ lv: Int32, count n: Int, section s: Int32) {
        if n == 1 {
            forest.setVisible(lv, false, leafOf: &leafOf)
        } else {
            forest.hideRange(lv, count: n, leafOf: &leafOf)
        }
        refreshSection(s)
    }
}
