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

        var end = k
        while end < ops.count {
            let start = end, m = min(ops.count - start, Self.deleteChunk)
            let n = applyDeleteChunk(count: m, step: Int32(step), previous: &previous, first: ops[start].id,
                                     deps: start == k ? ops[k].deps : Frontier(only: ops[start - 1].id),
                                     startsRecord: startsRecord && start == k, after: ops[start - 1].id) { j in
                let i = start + j
                guard i == k || (step != 0 && ListOperation.continuesDeleteRun(ops[i - 1], ops[i], step: step)),
                      case let .deleteItem(item, _) = ops[i].kind,
                      ops[i].id.counter <= OpID.maxCounter, item.opID.counter < ops[i].id.counter else { return nil }
                return item.opID
            }
            end += n
            if n < m { break }
        }
        return end
    }

    /// The most deletes of a run that ``applyDeleteChunk(count:step:previous:first:deps:startsRecord:after:item:)``
    /// takes: their slots, and three numbers for each run of slots that died (4 bytes each), fit
    /// in the 1,024 bytes that `withUnsafeTemporaryAllocation` always takes from the stack.
    static let deleteChunk = 64

    /// Checks and applies up to `m` (at most ``deleteChunk``) item deletes of a delete run: ids
    /// `first`, `first + 1`, …, each depending on exactly the one before, the first on `deps`,
    /// which is exactly `{after}`, the operation applied last. Operation `j` deletes item
    /// `item(j)`, as seen at its insert slot; `item(j)` is nil when operation `j` does not
    /// continue the run or fails a check of its own (which the caller makes). Returns how many
    /// were applied: those before the first that fails a check (0: nothing changed).
    ///
    /// What is checked here per operation: the slot with the item's id is known (found at
    /// `previous + step`, the slot next to the one before, else looked up; `previous` ends as the
    /// last one found) and is the insert slot of an item. Each delete has the effect of the
    /// general path's: its item's delete register is raised (``EntityTable/Row/deleteSeeingInsert()``),
    /// an item that dies has its slot hidden, its section is refreshed, one log entry (the first
    /// with ``OpLog/append(id:deps:kind:span:payload:)`` when `startsRecord`, which extends the
    /// last record when it continues it; else they all extend the last record, a delete run).
    /// But the checks and the registers go in one pass, the slots that die next to each other in
    /// one section are hidden together, and the clock, version vector and frontier are advanced
    /// once. (Registers, tree visibility and the log do not depend on each other, so doing them
    /// in this order changes nothing.)
    ///
    /// - Complexity: O(m + log N) for deletes of consecutive typed items in a document of N
    ///   slots; O(log N) more per item not next to the one before.
    mutating func applyDeleteChunk(count m: Int, step: Int32, previous: inout Int32, first: OpID, deps: Frontier,
                                   startsRecord: Bool, after: OpID, item: (Int) -> OpID?) -> Int {
        precondition(m > 0 && m <= Self.deleteChunk, "a chunk of \(m) deletes")
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: 4 * Self.deleteChunk) { scratch in
            // The slots the authors saw, and the runs of slots of the items that died.
            let seen = UnsafeMutableBufferPointer(rebasing: scratch[0 ..< m])
            var dead = DeadSlotRuns(storage: UnsafeMutableBufferPointer(rebasing: scratch[m ..< 4 * m]))
            var n = 0
            var lv = previous
            slots.withView { view in
                items.rows.withUnsafeMutableBufferPointer { rows in
                    while n < m, let id = item(n) {
                        lv &+= step
                        var slot = view.slot(lv)
                        if slot.map({ view.id(of: $0, at: lv) }) != id {
                            guard let at = slots.lv(of: id) else { break }
                            lv = at
                            slot = view.slot(at)
                        }
                        guard let slot, slot.sequence >= 0 else { break }
                        let e = Int(slot.entity)
                        precondition(e >= 0 && e < rows.count, "slot \(lv) places no item")
                        guard rows[e].id == id else { break }
                        seen[n] = lv
                        n += 1
                        let died = rows[e].state < 0 ? rows[e].deleteSeeingInsert()
                                                     : items.registers[Int(rows[e].state)].deleteSeeingInsert(id: id)
                        if died { dead.add(rows[e].winner, section: rows[e].section) }
                    }
                }
            }
            guard n > 0 else { return 0 }
            previous = seen[n - 1]
            if startsRecord {
                log.append(id: first, deps: deps, kind: .deleteItem, span: 1, payload: seen[0])
                if n > 1 { log.extendDeleteRun(seen: seen[1 ..< n]) }
            } else {
                log.extendDeleteRun(seen: seen[..<n])
            }
            advance(from: after, to: first.advanced(by: n - 1))
            dead.close()
            for r in 0 ..< dead.count {
                let run = dead.run(r)
                hideDead(run.first, count: run.count, section: run.section)
            }
            return n
        }
    }

    /// The clock, version vector and frontier after a run of operations by one author, each
    /// depending on exactly the one before, the first on `first` (applied last), up to `last`:
    /// what recording each of them one at a time would do.
    @inline(__always)
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
        forest.hideRange(lv, count: n, leafOf: &leafOf)
        refreshSection(s)
    }
}

/// The slots of items that died in a delete run, gathered as they come into runs of neighbours in
/// one section (a backspace run walks down, a forward-delete run up), each of which is then hidden
/// in one step. The closed runs are kept in `storage`, three numbers each (first slot, count,
/// section): room for a third of its size.
private struct DeadSlotRuns {
    let storage: UnsafeMutableBufferPointer<Int32>
    /// Number of closed runs.
    private(set) var count = 0
    /// The run being gathered: slots `low ..< low + pending` of `section`.
    private var low: Int32 = 0, pending: Int32 = 0, section: Int32 = -1

    init(storage: UnsafeMutableBufferPointer<Int32>) { self.storage = storage }

    /// Adds slot `w` of section `s`, next to the run being gathered or starting the next one.
    @inline(__always) mutating func add(_ w: Int32, section s: Int32) {
        if pending > 0 && s == section && (w == low &+ pending || w == low &- 1) {
            if w < low { low = w }
            pending &+= 1
        } else {
            close()
            (low, pending, section) = (w, 1, s)
        }
    }

    /// Closes the run being gathered, if any.
    @inline(__always) mutating func close() {
        guard pending > 0 else { return }
        precondition(3 * count + 2 < storage.count, "no room for another run of slots")
        (storage[3 * count], storage[3 * count + 1], storage[3 * count + 2]) = (low, pending, section)
        count += 1
        pending = 0
    }

    /// Closed run `r`.
    func run(_ r: Int) -> (first: Int32, count: Int, section: Int32) {
        (storage[3 * r], Int(storage[3 * r + 1]), storage[3 * r + 2])
    }
}
