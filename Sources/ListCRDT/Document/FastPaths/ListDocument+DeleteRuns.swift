/// Received item deletes in one step: the run route (README.md in this folder).
extension ListDocument {
    /// Applies the item delete `k` of `source` and the ones after it that continue it as a delete
    /// run (backspaces or forward deletes), in one step, with the general path's effect operation
    /// by operation; declines (changing nothing) when operation `k` does not continue the
    /// operation applied last.
    ///
    /// Operation `k` must be its author's next id after the operation applied last, depending on
    /// exactly it, where that operation is an item delete (the run goes on) or an item insert
    /// (deleting what was just typed: the log record is then a new one). What the general path
    /// checks holds then by construction (the ids are new, the one dependency is applied, the
    /// seen slot is the item's insert slot, so the position write it saw is the item's own id),
    /// except what is checked per operation: the counter is in range, the item is before the
    /// operation (``RunSource/deletedItem(_:)``), and the slot with the item's id is known and is
    /// the insert slot of an item (``applyDeleteChunk(count:step:previous:lookUpFirst:first:deps:startsRecord:after:context:item:)``).
    /// The run stops at the first operation that fails a check; the general path then refuses or
    /// applies it exactly as before. Ids are looked up with `context`'s hint
    /// (``SlotStore/lv(of:hint:)``); the slots of the items that die are hidden at once, or
    /// gathered in `context` (``RunContext/deaths``).
    ///
    /// - Complexity: O(n + log N) for n deletes of consecutive typed items in a document of N
    ///   slots; O(log N) more per item not next to the one before.
    mutating func applyDeleteRun<S: RunSource>(_ source: S, from k: Int, context: inout RunContext) -> FastPath {
        let id = source.id(k)
        let after = OpID(counter: id.counter &- 1, replica: id.replica)
        guard source.deletedItem(k) != nil, source.dependsOnlyOn(k, after), !leftBranch(id, after) else { return .declined }
        let step = source.deleteStep(from: k)
        // The slot the operation before saw: where the next item's slot is looked for first.
        var previous: LocalVersion
        let startsRecord: Bool, lookUpFirst: Bool
        if let last = log.lastItemDelete, last.id == after {
            // A decoded delete run that continues a delete run deletes an item that is not next to
            // the one before (else the encoder had made them one run): its slot is looked up by
            // id at once, rather than guessed next to the one before (two cache misses wasted).
            (previous, startsRecord, lookUpFirst) = (last.seen, false, !S.firstMayContinue)
        } else if let last = log.lastItemInsert, last.id == after {
            // Backspaces right after typing: the first item is most likely the one typed last.
            (previous, startsRecord, lookUpFirst) = (last.slot.advanced(by: -step), true, false)
        } else {
            return .declined
        }
        // A decoded delete run in a history load: one tight pass while its items' rows are where
        // their slots say (ListDocument+ConsecutiveDeletes.swift); the chunks below check the
        // deletes after it, if any.
        var end = k + applyConsecutiveDeletes(source, from: k, step: step, previous: &previous, lookUpFirst: lookUpFirst,
                                              startsRecord: startsRecord, after: after, context: &context)
        while end < source.count {
            let start = end, m = min(source.count - start, Self.deleteChunk)
            let before = start == k ? after : source.id(start - 1)
            let n = applyDeleteChunk(count: m, step: step, previous: &previous, lookUpFirst: lookUpFirst && start == k,
                                     first: source.id(start), deps: Frontier(only: before),
                                     startsRecord: startsRecord && start == k, after: before, context: &context) { j in
                let i = start + j
                guard i == k || source.continuesDeletes(i) else { return nil }
                return source.deletedItem(i)
            }
            end += n
            if n < m { break }
        }
        return end > k ? .applied(end - k) : .declined
    }

    /// The most deletes of a run that ``applyDeleteChunk(count:step:previous:lookUpFirst:first:deps:startsRecord:after:context:item:)``
    /// takes: their slots (`LocalVersion`s) and three numbers for each run of slots that died (4
    /// bytes each), 256 and 768 bytes, each within the 1,024 bytes that
    /// `withUnsafeTemporaryAllocation` always takes from the stack.
    static let deleteChunk = 64

    /// Checks and applies up to `m` (at most ``deleteChunk``) item deletes of a delete run: ids
    /// `first`, `first + 1`, …, each depending on exactly the one before, the first on `deps`,
    /// which is exactly `{after}`, the operation applied last. Operation `j` deletes item
    /// `item(j)`, as seen at its insert slot; `item(j)` is nil when operation `j` does not
    /// continue the run or fails a check of its own (which the caller makes). Returns how many
    /// were applied: those before the first that fails a check (0: nothing changed).
    ///
    /// What is checked here per operation: the slot with the item's id is known (found at
    /// `previous + step`, the slot next to the one before, else looked up with `context`'s hint,
    /// which the first is at once when `lookUpFirst`; `previous` ends as the last one found) and
    /// is the insert slot of an item. Each delete has the effect of the general path's: its item's delete register is raised (``EntityTable/Row/deleteSeeingInsert()``),
    /// an item that dies has its slot hidden and its section refreshed (or the slot is gathered in
    /// `context` when its ``RunContext/deaths`` is set, for ``settle(_:)``), one log entry (the first
    /// with ``OpLog/append(id:deps:kind:span:payload:)`` when `startsRecord`, which extends the
    /// last record when it continues it; else they all extend the last record, a delete run).
    /// But the checks and the registers go in one pass, the slots that die next to each other in
    /// one section are hidden together, and the clock, version vector and frontier are advanced
    /// once. (Registers, tree visibility and the log do not depend on each other, so doing them
    /// in this order changes nothing.)
    ///
    /// - Complexity: O(m + log N) for deletes of consecutive typed items in a document of N
    ///   slots; O(log N) more per item not next to the one before.
    @inline(__always)
    mutating func applyDeleteChunk(count m: Int, step: Int32, previous: inout LocalVersion, lookUpFirst: Bool = false,
                                   first: OpID, deps: Frontier,
                                   startsRecord: Bool, after: OpID, context: inout RunContext,
                                   item: (Int) -> OpID?) -> Int {
        precondition(m > 0 && m <= Self.deleteChunk, "a chunk of \(m) deletes")
        // The slots the authors saw, the items' entities, and the runs of slots of the items that died.
        return withUnsafeTemporaryAllocation(of: LocalVersion.self, capacity: Self.deleteChunk) { seenScratch in
          withUnsafeTemporaryAllocation(of: EntityIndex.self, capacity: Self.deleteChunk) { entityScratch in
          withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3 * Self.deleteChunk) { deadScratch in
            let seen = UnsafeMutableBufferPointer(rebasing: seenScratch[0 ..< m])
            let entities = UnsafeMutableBufferPointer(rebasing: entityScratch[0 ..< m])
            var dead = DeadSlotRuns(storage: UnsafeMutableBufferPointer(rebasing: deadScratch[0 ..< 3 * m]))
            // First the checks, which only read the document (so that the slots are read in
            // place: a closure that also wrote the document would make `withView` work on a copy
            // of the slot store, five retains and releases a chunk), then the registers.
            let n = findDeleted(count: m, step: step, from: previous, lookUpFirst: lookUpFirst, seen: seen,
                                entities: entities, hint: &context.ids, item: item)
            // What the items that die count for (ListDocument+Reclaimable.swift), read from the
            // tables the loops below do not write.
            var deathBytes = 0
            if items.registers.isEmpty {
                // No item has registers (no move, no delete that saw a move): the rows alone. (A
                // loop that may write the registers makes the empty table unique once per chunk.)
                items.rows.withUnsafeMutableBufferPointer { rows in
                    for j in 0 ..< n {
                        let e = entities[j].int
                        precondition(e >= 0 && e < rows.count, "slot \(seen[j]) places no item")
                        assert(rows[e].packedState < 0, "a row with registers, but the table is empty")
                        if rows[e].deleteSeeingInsert() {
                            dead.add(rows[e].winner, section: rows[e].section)
                            deathBytes += Self.deathBytes(ofItem: EntityIndex(e), id: rows[e].id, values: items.insertValues,
                                                          replaced: items.replaced, records: records)
                        }
                    }
                }
            } else {
                items.rows.withUnsafeMutableBufferPointer { rows in
                    for j in 0 ..< n {
                        let e = entities[j].int
                        precondition(e >= 0 && e < rows.count, "slot \(seen[j]) places no item")
                        let died: Bool
                        if case .registers(let k) = rows[e].state {
                            died = items.registers[k].deleteSeeingInsert(id: rows[e].id)
                        } else {
                            died = rows[e].deleteSeeingInsert()
                        }
                        if died {
                            dead.add(rows[e].winner, section: rows[e].section)
                            deathBytes += Self.deathBytes(ofItem: EntityIndex(e), id: rows[e].id, values: items.insertValues,
                                                          replaced: items.replaced, records: records)
                        }
                    }
                }
            }
            byteAccount.dead += deathBytes
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
                if context.deaths != nil {
                    context.deaths!.append((run.first, Int32(run.count), run.section))
                } else {
                    hideDead(run.first, count: run.count, section: run.section)
                }
            }
            return n
          }
          }
        }
    }

    /// The checks of ``applyDeleteChunk(count:step:previous:lookUpFirst:first:deps:startsRecord:after:context:item:)``,
    /// which only read the document: for each operation `j` from 0 on, while `item(j)` is an item
    /// whose slot with its id is known (found at the slot next to the one before, `previous +
    /// step` for the first, else looked up with `hint`; the first is looked up at once when
    /// `lookUpFirst`: a guess that misses costs two cache misses, a look-up mostly reads id runs
    /// in cache) and is the insert slot of an item with that id, writes
    /// the slot to `seen[j]` and the item's entity to `entities[j]`. Returns how many passed (the
    /// first `n` of at most `m`).
    ///
    /// - Complexity: O(m), plus O(log N) for each item not next to the one before.
    @inline(__always)
    private func findDeleted(count m: Int, step: Int32, from previous: LocalVersion, lookUpFirst: Bool,
                             seen: UnsafeMutableBufferPointer<LocalVersion>,
                             entities: UnsafeMutableBufferPointer<EntityIndex>, hint: inout SlotStore.IDHint,
                             item: (Int) -> OpID?) -> Int {
        precondition(seen.count >= m && entities.count >= m, "no room for \(m) deletes")
        var n = 0
        var lv = previous
        // Slots and item rows are mostly appended together (a typed run's slots and rows are
        // consecutive), so an item's entity is mostly its insert slot less this.
        let entityOffset = slots.count - items.rows.count
        slots.withView { view in
            items.rows.withUnsafeBufferPointer { rows in
                while n < m, let id = item(n) {
                    if n == 0 && lookUpFirst, let at = slots.lv(of: id, hint: &hint) {
                        lv = at
                    } else {
                        lv = lv.advanced(by: step)
                    }
                    // Usually the slot next to the one before is the item's insert slot, and the
                    // item never moved: its row says so (its id, no registers, its winning slot
                    // `lv`: an item's winning slot while it never moved is its insert slot, whose
                    // entity it is). The row is guessed (the entity next to the one before, or
                    // `lv` less the offset), so that neither the slot nor its run, each a cache
                    // miss away, need be read; else the slot says.
                    let guess = n > 0 ? entities[n - 1].int &+ Int(step) : lv.int &- entityOffset
                    if guess >= 0, guess < rows.count, rows[guess].winner == lv, rows[guess].id == id,
                       rows[guess].packedState < 0 {
                        seen[n] = lv
                        entities[n] = EntityIndex(guess)
                        n += 1
                        continue
                    }
                    if let slot = view.slot(lv), case let e = slot.entity.int, e >= 0, e < rows.count, rows[e].id == id,
                       rows[e].packedState < 0, rows[e].winner == lv {
                        seen[n] = lv
                        entities[n] = slot.entity
                        n += 1
                        continue
                    }
                    var slot = view.slot(lv)
                    if slot.map({ view.id(of: $0, at: lv) }) != id {
                        guard let at = slots.lv(of: id, hint: &hint) else { break }
                        lv = at
                        slot = view.slot(at)
                    }
                    guard let slot, view.sequence(of: slot).isItems else { break }
                    let e = slot.entity.int
                    precondition(e >= 0 && e < rows.count, "slot \(lv) places no item")
                    guard rows[e].id == id else { break }
                    seen[n] = lv
                    entities[n] = slot.entity
                    n += 1
                }
            }
        }
        return n
    }

    /// Hides the `n` slots `lv ..< lv + n` of section `s`'s sequence, whose items died, and
    /// refreshes the section.
    ///
    /// - Complexity: O(p × log N) for slots in p entries (``SlotForest/hideRange(_:count:)``).
    mutating func hideDead(_ lv: LocalVersion, count n: Int, section s: EntityIndex) {
        forest.hideRange(lv, count: n)
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
    private var low = LocalVersion(Int32(0)), pending: Int32 = 0, section: EntityIndex = .none

    init(storage: UnsafeMutableBufferPointer<Int32>) { self.storage = storage }

    /// Adds slot `w` of section `s`, next to the run being gathered or starting the next one.
    @inline(__always) mutating func add(_ w: LocalVersion, section s: EntityIndex) {
        if pending > 0 && s == section && (w == low.advanced(by: pending) || w == low.advanced(by: -1)) {
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
        (storage[3 * count], storage[3 * count + 1], storage[3 * count + 2]) = (low.raw, pending, section.raw)
        count += 1
        pending = 0
    }

    /// Closed run `r`.
    func run(_ r: Int) -> (first: LocalVersion, count: Int, section: EntityIndex) {
        (LocalVersion(storage[3 * r]), Int(storage[3 * r + 1]), EntityIndex(storage[3 * r + 2]))
    }
}
