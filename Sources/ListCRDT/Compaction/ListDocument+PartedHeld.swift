// Originals a copy holds after the daemon that took them merged back
// (Docs/Semantics.md §7, "Parted originals a copy holds"): a daemon that never compacted took a
// left-out daemon's originals relayed just before that daemon merged back onto a peer's snapshot,
// parted them and made them again. The originals stay here beside the edits made again, and what
// this copy relays of them, or of edits made on them, every copy compacted at that floor refuses
// (seed 9007 of `listsync simulate --daemons 3 --ring --compact-after 10 --hide-daemon --roam 30
// --crashes 2 --ops 80`). Told the ranges, the copy takes them out itself and makes again what its
// own authors made on them, as a merge back does. A copy with a floor does the same with what it
// logged since its floor: one that merged back onto a peer's snapshot took, before it, originals
// of another daemon that merged back later (seed 612127 of `listsync simulate --daemons 3
// --compact-after 10 --crashes 2 --lose-stability --ops 60`: the copies never met again).

extension ListDocument {
    /// Whether `op` holds a counter that `runs` names (per author, runs of counters).
    ///
    /// - Complexity: O(g) for g runs of its author.
    static func overlaps(_ op: ListOperation, _ runs: [ReplicaID: [ClosedRange<UInt64>]]) -> Bool {
        guard let rs = runs[op.id.replica] else { return false }
        let mine = op.id.counter...op.lastID.counter
        return rs.contains { $0.overlaps(mine) }
    }

    /// Whether this copy holds (applied from log position `logIndex` on, or waiting) an
    /// operation a counter of which `runs` names: ``partHeld(_:remakes:)`` would change
    /// something (for `logIndex` 0). On a compacted copy, only its log since the floor and what
    /// waits are looked at: an original within the floor cannot be taken out.
    ///
    /// - Complexity: O(r + k) for the r records from `logIndex` and the k operations applied
    ///   since; O(w) more for w waiting operations; O(p) when no run starts at or below what
    ///   this copy knows of its author.
    public func holdsParted(_ runs: [ReplicaID: [ClosedRange<UInt64>]], fromLogPosition logIndex: Int = 0) -> Bool {
        guard !runs.isEmpty, logIndex >= 0, logIndex <= log.count else { return false }
        let waiting = buffer.all
        let reachable = runs.contains { r, rs in
            let known = max(version[r], waiting.lazy.filter { $0.id.replica == r }.map(\.lastID.counter).max() ?? 0)
            return rs.contains { $0.lowerBound <= known }
        }
        guard reachable else { return false }
        return waiting.contains { Self.overlaps($0, runs) }
            || operations(fromValid: logIndex).contains { Self.overlaps($0, runs) }
    }

    /// Takes out of this copy every operation a counter of which `runs` names
    /// (originals a daemon parted in a merge back), applied or waiting, and every one made on
    /// such an operation, directly or through others; makes again, as new operations of this
    /// document's replica, those `remakes` names (the caller names those this copy's daemon took
    /// from their authors: the daemon that parted an original made it again only if it took it
    /// from its author too, and dropped it if it came relayed). The copy is
    /// rebuilt from its floor's state (none: empty) and its log without them, the floor kept; those made again are made from what this copy shows
    /// now, as a merge back makes them (``Remaker``: an inserted item goes after the nearest item
    /// before it that the rebuilt copy shows, a value or field written again, a move made again;
    /// an edit of an entity only an original made finds nothing and is dropped), the waiting
    /// ones from what they say. Nil, and nothing changes, when nothing it holds since its floor
    /// is named (``holdsParted(_:fromLogPosition:)``).
    ///
    /// - Returns: `parted`, the operations taken out (in causal order); `made`, the operations
    ///   made again; `dropped`, those of `parted` not made again; `originals`, those of `parted`
    ///   the runs name. `kept` is empty.
    /// - Complexity: O(b + m × log n) to rebuild the copy from its floor's b bytes and the m
    ///   operations logged since, plus
    ///   O(p × (d + n) + w log w) for p operations taken out of d dependencies, n visible items
    ///   and w waiting operations.
    public mutating func partHeld(_ runs: [ReplicaID: [ClosedRange<UInt64>]], remakes: (ListOperation) -> Bool) -> MergeBack? {
        guard holdsParted(runs) else { return nil }
        var stale: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        func onStale(_ op: ListOperation) -> Bool {
            op.deps.contains { d in stale[d.replica]?.contains { $0.contains(d.counter) } ?? false }
        }
        func split(_ ops: [ListOperation]) -> (kept: [ListOperation], parted: [ListOperation]) {
            var kept: [ListOperation] = [], parted: [ListOperation] = []
            for op in ops {
                if Self.overlaps(op, runs) || onStale(op) {
                    parted.append(op)
                    stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter)
                } else {
                    kept.append(op)
                }
            }
            return (kept, parted)
        }
        // The log is in causal order; the waiting ones by counter (a dependency has a lesser one).
        let logged = operations
        let (keptLog, partedLog) = split(logged)
        let (keptWaiting, partedWaiting) = split(buffer.all.sorted { ($0.id.counter, $0.id.replica) < ($1.id.counter, $1.id.replica) })
        // The floor's state (a compacted copy: Docs/Semantics.md §7, "Parted originals a copy
        // holds"), or an empty document, with the same settings.
        var rebuilt = floorDocument()
        rebuilt.wallClock = wallClock
        rebuilt.pendingLimits = pendingLimits
        let report = rebuilt.receive(keptLog)
        // Each kept operation's causes are kept ones before it in the log: all apply.
        guard report.refused.isEmpty, rebuilt.pendingCount == 0 else {
            assertionFailure("a copy rebuilt without parted originals refused or kept waiting \(report)")
            return nil
        }
        rebuilt.receive(keptWaiting)
        // Operations made again take ids after every one this copy knows.
        rebuilt.clock = max(rebuilt.clock, clock)
        var remaker = Remaker(local: snapshot())
        let redo = partedLog.filter(remakes)
        for op in redo where op.insertsSection { remaker.sectionInserts[SectionID(op.id)] = op }
        for op in redo { remaker.remake(op, on: &rebuilt) }
        let orderedWaiting = Self.causalOrder(partedWaiting)
        let redoWaiting = orderedWaiting.filter(remakes)
        if !redoWaiting.isEmpty {
            let slots = Self.moveSlots(logged + orderedWaiting)
            for op in redoWaiting where op.insertsSection { remaker.sectionInserts[SectionID(op.id)] = op }
            for op in redoWaiting { remaker.remakeWaiting(op, on: &rebuilt, slots: slots) }
        }
        var result = MergeBack()
        result.parted = partedLog + orderedWaiting
        result.dropped = result.parted.filter { !remakes($0) }
        result.originals = result.parted.filter { Self.overlaps($0, runs) }
        result.made = remaker.made
        self = rebuilt
        return result
    }
}
