import Foundation

// The operations a copy that is merged back held waiting for their causes
// (Docs/Semantics.md §7, "A copy left out of a peer's floor", "Waiting operations"): taken and
// acknowledged (durable) while their causes were missing, never applied, so what the copy shows
// does not hold them. A device that roamed from a compacted peer to the left-out daemon sends
// edits made on operations that only the peer held: the left-out daemon keeps them waiting until
// the peer's snapshot comes, which holds their causes as state only, so they never apply as they
// are. ``ListDocument/mergeBack(from:remakes:relayed:named:)`` takes or makes them again here.

extension ListDocument {
    /// `local`'s waiting operations this document lacks, in causal order, split as
    /// ``mergeBack(from:remakes:relayed:named:)`` splits the applied ones: each one not made before this
    /// document's floor, nor named by `stale` (the parted ones) or made on one it names, nor refused here,
    /// is received as it is (applied, or waiting here as it waited there) and returned in
    /// `taken`; the others (and one this version counts though it does not hold it, `holds`:
    /// ``heldOperations()``) are returned in `parted` (and named in `stale`).
    ///
    /// - Complexity: O(w² × d) for w waiting operations of d dependencies, plus receiving them.
    mutating func mergeWaiting(of local: ListDocument, stale: inout [ReplicaID: [ClosedRange<UInt64>]], holds: (OpID) -> Bool)
        -> (taken: [ListOperation], parted: [ListOperation]) {
        var taken: [ListOperation] = [], parted: [ListOperation] = []
        for op in Self.causalOrder(local.pendingOperations) where !holds(op.id) && !isWaiting(op) {
            func isStale(_ id: OpID) -> Bool { stale[id.replica]?.contains { $0.contains(id.counter) } ?? false }
            // Named itself: a daemon parted it (``mergeBack(from:remakes:relayed:named:)``).
            let onStale = isStale(op.id) || op.deps.contains(where: isStale)
            if !onStale && !isBeforeFloor(op) && !version.contains(op.lastID) {
                var copy = self
                if copy.receive([op]).refused.isEmpty {
                    self = copy
                    taken.append(op)
                    continue
                }
            }
            parted.append(op)
            stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter)
        }
        return (taken, parted)
    }

    /// The item each move slot of `ops` moved (what ``Remaker/remakeWaiting(_:on:slots:)`` reads
    /// for an origin that names one; an insert slot is its item's id).
    ///
    /// - Complexity: O(k + m) for k operations moving m items in all.
    static func moveSlots<S: Sequence<ListOperation>>(_ ops: S) -> [OpID: ItemID] {
        var slots: [OpID: ItemID] = [:]
        for op in ops {
            guard case let .moveItems(list, _, _) = op.kind else { continue }
            for (i, x) in list.enumerated() { slots[OpID(counter: op.id.counter + UInt64(i), replica: op.id.replica)] = x }
        }
        return slots
    }

    /// `ops` in an order in which every operation comes after those of `ops` it depends on (a
    /// cycle, which causal operations never form, is broken by id order).
    ///
    /// - Complexity: O(k² × d) for k operations of d dependencies.
    static func causalOrder(_ ops: [ListOperation]) -> [ListOperation] {
        var left = ops.sorted { $0.id < $1.id }
        var ordered: [ListOperation] = []
        ordered.reserveCapacity(left.count)
        while !left.isEmpty {
            let ready = left.firstIndex { op in
                !op.deps.contains { d in left.contains { $0.id != op.id && $0.id.replica == d.replica && ($0.id.counter...$0.lastID.counter).contains(d.counter) } }
            } ?? 0
            ordered.append(left.remove(at: ready))
        }
        return ordered
    }
}

extension Remaker {
    /// Makes again on `doc` the edit of `op`, an operation the returning copy held waiting for
    /// its causes (so what it shows does not hold it): from what `op` says itself, the entities
    /// it names taken as made again (``items``, ``sections``) where they were: an item inserted
    /// or moved goes right after the item of its left origin if `doc` shows it in that section
    /// (else before the item of its right origin, else at the section's start); a section
    /// inserted goes after its left origin's section; values, deletes and field writes as
    /// ``remake(_:on:)`` makes them. `slots` names the item of each move slot the returning copy
    /// knows (an insert slot is its item's id). Section moves are not made again.
    ///
    /// - Complexity: O(n) for n visible items.
    mutating func remakeWaiting(_ op: ListOperation, on doc: inout ListDocument, slots: [OpID: ItemID]) {
        func item(_ slot: SlotID?) -> ItemID? {
            guard let slot else { return nil }
            let x = slots[slot.opID] ?? ItemID(slot.opID)
            return items[x] ?? x
        }
        func place(in s: SectionID, _ origins: ListOperation.Origins, moving: ItemID? = nil) -> IndexPath? {
            let snapshot = doc.snapshot()
            guard let section = snapshot.indexOfSection(sections[s] ?? s) else { return nil }
            var index = 0
            if let after = item(origins.after), after != moving, let p = snapshot.indexPath(of: after), p.section == section {
                index = p.item + 1
            } else if let before = item(origins.before), before != moving, let p = snapshot.indexPath(of: before), p.section == section {
                index = p.item
            }
            if let moving, let from = snapshot.indexPath(of: moving), from.section == section, from.item < index { index -= 1 }
            return IndexPath(item: index, section: section)
        }
        switch op.kind {
        case let .insertSection(origins, value):
            insertSection(op.id, origins, value: value, fields: [:], on: &doc)
        case let .insertSectionWithFields(origins, value, writes):
            var changes: [String: FieldChange] = [:]
            for w in writes.writes { changes[w.name] = w.change }
            insertSection(op.id, origins, value: value, fields: changes, on: &doc)
        case let .insertItem(s, origins, value):
            guard let to = place(in: s, origins) else { return }
            if let made = record(try? doc.insertItem(at: to, value: value)) { items[ItemID(op.id)] = ItemID(made.id) }
        case let .insertItemWithFields(s, origins, value, writes):
            guard let to = place(in: s, origins) else { return }
            var changes: [String: FieldChange] = [:]
            for w in writes.writes { changes[w.name] = w.change }
            if let made = record(try? doc.insertItem(at: to, value: value, fields: changes)) { items[ItemID(op.id)] = ItemID(made.id) }
        case let .moveItems(list, s, origins):
            var origins = origins
            for x in list {
                let here = items[x] ?? x
                guard doc.contains(here), let to = place(in: s, origins, moving: here) else { continue }
                if case let moved?? = try? doc.moveItem(here, to: to) { made.append(moved) }
                origins = .init(after: SlotID(here.opID), before: nil)
            }
        case let .setItemValue(x, value):
            let here = items[x] ?? x
            guard doc.contains(here) else { return }
            record(try? doc.setValue(value, forItem: here))
        case let .setSectionValue(s, value):
            let here = sections[s] ?? s
            guard doc.contains(here) else { return }
            record(try? doc.setValue(value, forSection: here))
        case let .deleteItem(x, _):
            guard let at = doc.snapshot().indexPath(of: items[x] ?? x) else { return }
            record(try? doc.deleteItem(at: at))
        case let .deleteSection(s, _, _):
            let here = sections[s] ?? s
            guard doc.contains(here) else { return }
            record(try? doc.deleteSection(here))
        case let .writeFields(target, writes):
            // Never in what the returning copy shows (it waited): written again in any case.
            writeAgain(writes, of: target, on: &doc)
        case .moveSection:
            return
        }
    }

    /// Makes again a section `id` inserted at `origins` (after its left origin's section as
    /// `doc` shows it, else before its right origin's, else first), with `fields`.
    ///
    /// - Complexity: O(s) for s sections.
    private mutating func insertSection(_ id: OpID, _ origins: ListOperation.Origins, value: Data,
                                        fields: [String: FieldChange], on doc: inout ListDocument) {
        let snapshot = doc.snapshot()
        var at = 0
        if let after = origins.after, let i = snapshot.indexOfSection(sections[SectionID(after.opID)] ?? SectionID(after.opID)) {
            at = i + 1
        } else if let before = origins.before, let i = snapshot.indexOfSection(sections[SectionID(before.opID)] ?? SectionID(before.opID)) {
            at = i
        }
        if let made = record(try? doc.insertSection(at: at, value: value, fields: fields)) { sections[SectionID(id)] = SectionID(made.id) }
    }
}
