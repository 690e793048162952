// Operations a compacted copy keeps waiting for causes that another daemon parted in a merge back
// (Docs/Semantics.md §7, "Waiting edits on parted originals"): a device took a left-out daemon's
// originals, made edits on them and sent those to a compacted peer, which kept them waiting for
// their causes and acknowledged them (durable). The left-out daemon then merged back and parted
// the originals: they are made again there under new ids and no copy compacted at that floor
// ever takes them as they are, so the edits wait for ever (seed 11030 of `listsync simulate
// --daemons 2 --compact-after 10 --hide-daemon --roam 30 --crashes 2 --ops 80`). The copy that
// holds them makes them again itself, as a merge back makes again what it keeps waiting
// (``Remaker/remakeWaiting(_:on:slots:)``).

extension ListDocument {
    /// Whether some waiting operation depends on an operation `isParted` names that this copy
    /// does not hold (``heldOperations()``): ``remakeWaiting(onParted:remakes:)`` would change
    /// something.
    ///
    /// - Complexity: O(k + p × d) for the k operations of the log after the floor, p waiting
    ///   operations of d dependencies; O(1) with nothing waiting.
    public func waitsOnParted(_ isParted: (OpID) -> Bool) -> Bool {
        guard buffer.count > 0 else { return false }
        let held = heldOperations()
        return buffer.all.contains { op in op.deps.contains { d in !held(d) && isParted(d) } }
    }

    /// Takes out of the causal buffer every waiting operation that depends, directly or through
    /// other waiting ones, on an operation `isParted` names (parted by some daemon's merge back:
    /// made before a floor, it never comes to a copy compacted there) that this copy does not
    /// hold, and makes again, as new operations of this document's replica, those `remakes`
    /// names (the others are dropped: the daemon that parted them held them and made them again,
    /// or they came relayed and the daemon that took them from their author makes them again).
    /// Made again from what they say (``Remaker/remakeWaiting(_:on:slots:)``: an item inserted
    /// goes after its left origin's item where this copy shows it, else before its right
    /// origin's, else at its section's start; values, deletes and field writes written again on
    /// what this copy shows; an edit of an entity this copy does not show is dropped). The others
    /// stay waiting. Nil, and nothing changes, when no waiting operation is on a parted one. A copy
    /// without a floor does the same: the daemon that parted the cause no longer holds it and a
    /// device that holds it loads a snapshot in its place once told the ranges (Docs/Semantics.md
    /// §7, "Waiting edits on parted originals"), so the cause does not come.
    ///
    /// - Returns: `parted`, the operations taken out; `made`, the operations made again (append
    ///   them); `dropped`, those of `parted` not made again.
    /// - Complexity: O(k + p log p + p × (d + n)) for the k operations of the log after the floor,
    ///   p waiting operations of d dependencies and n visible items.
    public mutating func remakeWaiting(onParted isParted: (OpID) -> Bool, remakes: (ListOperation) -> Bool) -> MergeBack? {
        guard let (parted, kept) = waitingOnParted(isParted, orNamed: false) else { return nil }
        keepWaiting(kept)
        let ordered = Self.causalOrder(parted)
        var result = MergeBack()
        result.parted = ordered
        result.dropped = ordered.filter { !remakes($0) }
        var remaker = Remaker(local: snapshot())
        for op in ordered where op.insertsSection && remakes(op) { remaker.sectionInserts[SectionID(op.id)] = op }
        let slots = Self.moveSlots(operations(since: historyFloor ?? VersionVector()) + ordered)
        for op in ordered where remakes(op) { remaker.remakeWaiting(op, on: &self, slots: slots) }
        result.made = remaker.made
        return result
    }

    /// The waiting operations that depend, directly or through other waiting ones, on an
    /// operation `isParted` names that this copy does not hold (``heldOperations()``), and with
    /// `orNamed` also those `isParted` names themselves; and the others. Nil when none is.
    ///
    /// - Complexity: O(k + p log p + p × d) for the k operations of the log after the floor and
    ///   p waiting operations of d dependencies.
    func waitingOnParted(_ isParted: (OpID) -> Bool, orNamed: Bool) -> (parted: [ListOperation], kept: [ListOperation])? {
        guard buffer.count > 0 else { return nil }
        let held = heldOperations()
        // By counter: every dependency of an operation has a lesser one, so its fate is known
        // when the operation is looked at.
        let waiting = buffer.all.sorted { ($0.id.counter, $0.id.replica) < ($1.id.counter, $1.id.replica) }
        var stale: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        var kept: [ListOperation] = [], parted: [ListOperation] = []
        for op in waiting {
            let onParted = (orNamed && isParted(op.id)) || op.deps.contains { d in
                !held(d) && (isParted(d) || (stale[d.replica]?.contains { $0.contains(d.counter) } ?? false))
            }
            if onParted {
                parted.append(op)
                stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter)
            } else {
                kept.append(op)
            }
        }
        return parted.isEmpty ? nil : (parted, kept)
    }

    /// Whether ``dropWaiting(onParted:)`` would drop something.
    ///
    /// - Complexity: O(1) with nothing waiting; else that of ``waitingOnParted(_:orNamed:)``.
    public func holdsWaitingOnParted(_ isParted: (OpID) -> Bool) -> Bool {
        buffer.count > 0 && waitingOnParted(isParted, orNamed: true) != nil
    }

    /// Drops from the causal buffer every waiting operation that `isParted` names, or that
    /// depends, directly or through other waiting ones, on an operation `isParted` names that
    /// this copy does not hold, and returns them (by counter); nothing is made again. A
    /// device's copy told what the daemons parted (Docs/Semantics.md §7, "A device drops what
    /// waits on parted originals"): each such operation is an original, or an edit made on one,
    /// that the daemon holding it made again (or parted and made again) under new ids, which come
    /// to the device as they do to every copy; the original's causes never come, so it would
    /// wait for ever. What it shows does not change (waiting operations show nothing).
    ///
    /// - Complexity: that of ``waitingOnParted(_:orNamed:)``, and O(p log p) to rebuild the
    ///   buffer; O(1) with nothing waiting.
    public mutating func dropWaiting(onParted isParted: (OpID) -> Bool) -> [ListOperation] {
        guard let (parted, kept) = waitingOnParted(isParted, orNamed: true) else { return [] }
        keepWaiting(kept)
        return parted
    }
}
