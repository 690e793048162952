/// A decoded delete run loaded into an empty document in one tight pass: the delete run route's
/// first way (README.md in this folder).
extension ListDocument {
    /// Applies the deletes of `source` from `k` on that delete consecutive items (a decoded delete
    /// run: ``RunSource/deletesConsecutiveItems``), checking and applying each in one pass;
    /// returns how many it applied (0: nothing changed). The delete run route
    /// (``applyDeleteRun(_:from:context:)``) takes the deletes after them, if any, its usual way.
    ///
    /// Only while the slots that die are gathered (``RunContext/deaths``: a load into an empty
    /// document) and no item has ``EntityTable/Registers`` (no move, no delete that saw a move).
    /// Operation `k` continues the operation applied last, `after` (an item delete or insert,
    /// which ``applyDeleteRun(_:from:context:)`` checked). `startsRecord`: operation `k` starts a
    /// log record (after an insert). `previous` is the slot the operation applied last saw, and
    /// ends as the slot the last delete applied saw.
    ///
    /// Each delete passes exactly the checks of
    /// ``applyDeleteChunk(count:step:previous:lookUpFirst:first:deps:startsRecord:after:context:item:)``
    /// (its counter is in range and its item before it, ``RunSource/deletedItem(_:)``; the slot
    /// with the item's id is known and is the insert slot of an item with that id) and has its
    /// effect. The items go in segments whose slots and rows are consecutive (one typed run's):
    /// a segment's first slot is guessed next to the slot before (`previous + step` for the first
    /// item, unless `lookUpFirst`) or, when that misses, looked up by id
    /// (``SlotStore/lv(of:hint:)``); each item's row is guessed (the slot less the slots that are
    /// not items' rows, then the next row in `step`'s direction) and must have the item's id, no
    /// registers and the slot as its winning slot (an item's winning slot while it never moved
    /// is its insert slot, whose entity it is), so that neither the slot nor its run, each a
    /// cache miss away, is read. The first item that fails this stops the pass; the route's
    /// chunks then check it their way.
    ///
    /// - Complexity: O(n) for n deletes, plus a look-up (O(log N) at most) per segment.
    @inline(__always)
    mutating func applyConsecutiveDeletes<S: RunSource>(_ source: S, from k: Int, step: Int32, previous: inout LocalVersion,
                                                        lookUpFirst: Bool, startsRecord: Bool, after: OpID,
                                                        context: inout RunContext) -> Int {
        guard S.deletesConsecutiveItems, context.deaths != nil, items.registers.isEmpty else { return 0 }
        let m = source.count - k
        let entityOffset = slots.count - items.rows.count
        var n = 0
        // The next item's slot, guessed (nil: look it up), and the slot the last delete applied saw.
        var guess: LocalVersion? = lookUpFirst ? nil : previous.advanced(by: step)
        var last = previous
        // The run of neighbouring slots that died, in one section, being gathered.
        var low = LocalVersion.none, dead: Int32 = 0, section = EntityIndex.none
        // What the items that die count for (ListDocument+Reclaimable.swift).
        var deathBytes = 0
        defer { byteAccount.dead += deathBytes }
        while n < m, let item = source.deletedItem(k + n) {
            let first: LocalVersion
            if let guess {
                first = guess
            } else {
                guard let at = slots.lv(of: item, hint: &context.ids) else { break }
                first = at
            }
            // One segment: the items from `n` on whose slots and rows follow `first`'s (one typed run's).
            let start = n
            items.rows.withUnsafeMutableBufferPointer { rows in
                var lv = first, e = first.int &- entityOffset
                while n < m {
                    guard let item = source.deletedItem(k + n), e >= 0, e < rows.count, rows[e].winner == lv,
                          rows[e].id == item, rows[e].packedState < 0 else { break }
                    // Untouched: the delete kills it; deleted at its insert: nothing changes
                    // (EntityTable.Row.deleteSeeingInsert()).
                    if rows[e].packedState == -1 {
                        rows[e].packedState = -2
                        deathBytes += Self.deathBytes(ofItem: EntityIndex(e), id: rows[e].id, values: items.insertValues,
                                                      replaced: items.replaced, records: records)
                        let s = rows[e].section
                        if dead > 0 && s == section && (lv == low.advanced(by: dead) || lv == low.advanced(by: -1)) {
                            if lv < low { low = lv }
                            dead &+= 1
                        } else {
                            if dead > 0 { context.deaths!.append((low, dead, section)) }
                            (low, dead, section) = (lv, 1, s)
                        }
                    }
                    n += 1
                    lv = lv.advanced(by: step)
                    e &+= Int(step)
                }
            }
            let segment = n - start
            if segment == 0 {
                // A guess that missed is looked up once; else the route's chunks take it.
                if guess == nil { break }
                guess = nil
                continue
            }
            if start == 0 && startsRecord {
                log.append(id: source.id(k), deps: Frontier(only: after), kind: .deleteItem, span: 1, payload: first)
                if segment > 1 { log.extendDeleteRun(seenFrom: first.advanced(by: step), step: step, count: segment - 1) }
            } else {
                log.extendDeleteRun(seenFrom: first, step: step, count: segment)
            }
            last = first.advanced(by: step &* Int32(segment - 1))
            guess = last.advanced(by: step)
        }
        if dead > 0 { context.deaths!.append((low, dead, section)) }
        guard n > 0 else { return 0 }
        advance(from: after, to: source.id(k).advanced(by: n - 1))
        previous = last
        return n
    }
}
