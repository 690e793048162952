// An operation that names an operation this copy counts but does not hold (Docs/Semantics.md §7,
// "An edit of an original the copy counts"). A version counts every counter of a replica up to
// its greatest, so a copy that took a device's edits made again after a re-sync (under counters
// after its originals) counts the originals too, though only a daemon left out of a peer's floor
// took them: that daemon parts them in its merge back and makes them again under its own ids, so
// this copy never holds them as they are (one that arrives is taken for a duplicate). An edit
// made on one of them (by a device that took it from that daemon) passes the causal check, since
// its dependencies look applied, and fails on the entity it names: it can never apply here
// (seed 11130 of `listsync simulate --daemons 2 --compact-after 10 --hide-daemon --roam 30
// --crashes 2 --ops 80`: `d1` counted 3:21 through `c2`'s edits made again, and `c0`'s 19@1
// edited item 2@3, an original only `d0` held). The daemon's core refuses it as made before the
// floor (`compacted`, so that its author re-syncs), and what waits on it in its batch with it
// (``takeWaiting(_:on:)``).

extension ListOperation {
    /// The operations this one names: the items and sections it edits, the slots of its origins
    /// and those it saw, the writes a field write replaces or saw, and the characters a text edit
    /// goes between or removes. Not its dependencies (``deps``).
    ///
    /// - Complexity: O(n) for the n ids it names.
    public var namedIDs: [OpID] {
        var ids: [OpID] = []
        func origins(_ o: Origins) {
            if let a = o.after { ids.append(a.opID) }
            if let b = o.before { ids.append(b.opID) }
        }
        func fields(_ writes: FieldWrites) {
            for w in writes.writes {
                ids.append(w.replaces)
                ids += w.seen
                if case let .text(edit) = w.change {
                    ids += [edit.after, edit.before]
                    ids += edit.deletes.map(\.first)
                }
            }
        }
        switch kind {
        case let .insertSection(o, _): origins(o)
        case let .insertItem(s, o, _): ids.append(s.opID); origins(o)
        case let .moveSection(s, o): ids.append(s.opID); origins(o)
        case let .moveItems(list, s, o): ids += list.map(\.opID); ids.append(s.opID); origins(o)
        case let .deleteItem(i, seen): ids += [i.opID, seen.opID]
        case let .deleteSection(s, seen, items):
            ids += [s.opID, seen.opID]
            for record in items { ids += [record.item.opID, record.seen.opID] }
        case let .setItemValue(i, _): ids.append(i.opID)
        case let .setSectionValue(s, _): ids.append(s.opID)
        case let .writeFields(target, writes): ids.append(target.opID); fields(writes)
        case let .insertItemWithFields(s, o, _, writes): ids.append(s.opID); origins(o); fields(writes)
        case let .insertSectionWithFields(o, _, writes): origins(o); fields(writes)
        }
        return ids.filter { $0.counter != 0 }
    }
}

extension ListDocument {
    /// The first operation `op` names (``ListOperation/namedIDs``) that this copy does not hold
    /// (``holdsExactly(_:)``: applied, or collected below the floor) although its version counts
    /// it, or that `isParted` names (parted by some daemon's merge back); nil if none. Such an
    /// operation is never taken here as it is: counted, it is taken for a duplicate; parted, no
    /// copy compacted at that floor takes it. Waiting operations are not held.
    ///
    /// - Complexity: O(n log m) for the n ids `op` names and m log records per replica.
    public func unheldName(of op: ListOperation, isParted: (OpID) -> Bool = { _ in false }) -> OpID? {
        op.namedIDs.first { id in !holdsExactly(id) && (versionVector.contains(id) || isParted(id)) }
    }

    /// Takes out of the causal buffer those of `ops` that wait here and depend, directly or
    /// through others of `ops`, on one of `causes` (refused: they can never apply), and returns
    /// them, in the order of `ops`. Waiting operations not among `ops` stay, whatever they wait
    /// for: a refusal of one sender's operation never drops another's.
    ///
    /// - Complexity: O(k × d) for k operations of d dependencies, and O(p log p) to rebuild the
    ///   buffer of p waiting operations when something is taken.
    public mutating func takeWaiting(_ ops: [ListOperation], on causes: [OpID]) -> [ListOperation] {
        guard buffer.count > 0, !causes.isEmpty else { return [] }
        var on = Set(causes)
        var taken: [ListOperation] = []
        for op in ops where op.deps.contains(where: on.contains) && isWaiting(op) {
            taken.append(op)
            for counter in op.id.counter...op.lastID.counter { on.insert(OpID(counter: counter, replica: op.id.replica)) }
        }
        guard !taken.isEmpty else { return [] }
        let out = Set(taken.map(\.id))
        keepWaiting(buffer.all.filter { !out.contains($0.id) })
        return taken
    }

    /// Makes the causal buffer hold exactly `kept` (operations it held), each waiting for its
    /// first missing dependency, or parked on a skipped cause (``awaited(by:)``).
    ///
    /// - Complexity: O(p log p) for p operations kept.
    mutating func keepWaiting(_ kept: [ListOperation]) {
        var fresh = PendingBuffer()
        for op in kept.sorted(by: { $0.id < $1.id }) {
            guard let missing = awaited(by: op) else { continue }
            fresh.add(op, footprint: op.bufferFootprint, waitingFor: missing)
        }
        buffer = fresh
    }
}
