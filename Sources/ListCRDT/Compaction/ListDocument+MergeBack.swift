extension ListDocument {
    /// What ``mergeBack(from:remakes:relayed:named:)`` did: the operations it added to this document.
    public struct MergeBack: Sendable, Equatable {
        /// Operations of `local` taken as they are (made after this document's floor), in order.
        public var kept: [ListOperation] = []
        /// Operations made again here, as new operations of this document's replica.
        public var made: [ListOperation] = []
        /// Operations of `local` this document lacks that were made before its floor (or on
        /// one of those), and those `local` kept waiting for their causes that this document
        /// cannot take as they are: made again (`made`) when their author is one `remakes`
        /// names, else dropped.
        public var parted: [ListOperation] = []
        /// Those of ``parted`` dropped (their authors' own daemons make them again); the others
        /// were made again (``made``).
        public var dropped: [ListOperation] = []
        /// The operations another daemon parted that this copy held and took out
        /// (``ListDocument/partHeld(_:remakes:)``): those of ``parted`` the runs named. Empty
        /// for a merge back.
        public var originals: [ListOperation] = []
    }

    /// Merges back into this document (a peer daemon's compacted copy, loaded from its snapshot)
    /// what `local` (this daemon's copy, left out of that peer's floor: Docs/Semantics.md §7, "A
    /// copy left out of a peer's floor") holds and this document lacks, so that nothing `local`
    /// acknowledged is lost.
    ///
    /// Each operation of `local` this document lacks, in causal order: one made after this
    /// document's floor (and not on one made before it) is received as it is, id kept; one made
    /// before it (``isBeforeFloor(_:)``), or on such a one, would be refused by every copy that
    /// compacted there. It is *parted*: if `remakes` names its author (a replica this daemon took
    /// it from directly), it is made again as a new operation of this document's replica, from
    /// what `local` shows now, as a device makes its edits again after a refusal
    /// (``remake(_:from:refused:)``: an item inserted is inserted after the nearest item before it
    /// this document shows, a value written again, a move made again, and so on); otherwise it
    /// is dropped here (it came relayed: the daemon that took it from its author makes it again);
    /// so is one `relayed` names (an operation that came relayed, of an author this daemon also
    /// took others from directly: a roaming device). One `named` names (a daemon said it parted
    /// it: Docs/Semantics.md §7, "A merge back that knows what was parted"), or made on one, is
    /// parted too, wherever it stands: the snapshot's copy took it out (made again there if that
    /// daemon took it from its author, else dropped there), so kept here it would hold an
    /// original the snapshot's daemon refuses for ever.
    /// Operations made again take counters after both documents' clocks. What this document
    /// lacks is found by its floor and its log (``heldOperations()``), not by its version. The
    /// operations `local` kept waiting for their causes (acknowledged: durable) are merged back
    /// too, after the others (``mergeWaiting(of:stale:holds:)``; those parted are made again from
    /// what they say, `local`'s view not holding them).
    ///
    /// Nil, and nothing changes, when `local`'s history does not go back to what this document
    /// holds (`local` compacted at a floor this document does not include): what it lacks cannot
    /// be listed.
    ///
    /// - Complexity: O(r + k × (d + n) + w² × d) for the r records of both logs, k operations
    ///   this document lacks with d dependencies each, n visible items, and w operations `local`
    ///   keeps waiting.
    public mutating func mergeBack(from local: ListDocument, remakes: (ReplicaID) -> Bool,
                                   relayed: (OpID) -> Bool = { _ in false },
                                   named: (OpID) -> Bool = { _ in false }) -> MergeBack? {
        guard local.hasHistory(since: version) else { return nil }
        let (lacking, holds) = lackedOperations(of: local)
        var result = MergeBack()
        guard !lacking.isEmpty || !local.pendingOperations.isEmpty else { return result }
        var direct: [ListOperation]
        (direct, result.parted) = splitAtFloor(lacking, parted: named)
        // One this version counts that is not here (a gap: below) would be taken for a duplicate.
        if direct.contains(where: { version.contains($0.lastID) }) {
            result.parted = lacking
            direct = []
        }
        if !direct.isEmpty {
            // All of them or none (then every one is parted).
            if let taken = receiveWhole(direct) {
                result.kept = taken
            } else {
                result.parted = lacking
            }
        }
        // The operations `local` held waiting for their causes: acknowledged too, so taken as
        // they are, or parted and made again (ListDocument+MergeBackWaiting.swift).
        var stale: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        for op in local.pendingOperations where named(op.id) { stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter) }
        for op in result.parted { stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter) }
        let (waitingTaken, waitingParted) = mergeWaiting(of: local, stale: &stale, holds: holds)
        result.kept += waitingTaken
        result.parted += waitingParted
        let redo = result.parted.filter { remakes($0.id.replica) && !relayed($0.id) }
        result.dropped = result.parted.filter { !remakes($0.id.replica) || relayed($0.id) }
        clock = max(clock, local.clock)
        var remaker = Remaker(local: local.snapshot())
        for op in redo {
            if op.insertsSection { remaker.sectionInserts[SectionID(op.id)] = op }
        }
        let waiting = Set(waitingParted.map(\.id))
        for op in redo where !waiting.contains(op.id) { remaker.remake(op, on: &self) }
        if !waiting.isEmpty {
            // What `local` shows does not hold them: made again from what they say.
            let slots = Self.moveSlots(local.operations + waitingParted)
            for op in redo where waiting.contains(op.id) { remaker.remakeWaiting(op, on: &self, slots: slots) }
        }
        result.made = remaker.made
        return result
    }

    /// Whether this document holds the operation of an id: at or before its floor, or in its log
    /// after it. Not its version: that counts, per replica, every counter up to the greatest it
    /// holds, and a device that made its edits again after a re-sync whose originals only a
    /// left-out daemon holds (Docs/Semantics.md §7, "A copy left out of a peer's floor") makes
    /// them under later counters: the version then counts originals that are in no copy of it.
    ///
    /// - Complexity: O(k) for the k operations of the log after the floor, once; each question
    ///   O(g) for the g runs of counters of the replica asked.
    public func heldOperations() -> (OpID) -> Bool {
        let floor = historyFloor ?? VersionVector()
        var runs: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        for op in operations(since: floor) { runs[op.id.replica, default: []].append(op.id.counter...op.lastID.counter) }
        return { id in floorHolds(id) || (runs[id.replica]?.contains { $0.contains(id.counter) } ?? false) }
    }

    /// The operations of `local`'s log (since its own floor, in causal order) that this document
    /// lacks, and which ids it holds. ``heldOperations()`` answers by this document's floor and
    /// log; but a floor is a version, and counts every counter up to each replica's greatest:
    /// a device that re-synced on a peer's snapshot dropped its acknowledged edits made before
    /// that floor (only the left-out daemon held them, and makes them again) and made its unsent
    /// ones again under later counters, so a floor the peer compacted at after that counts
    /// originals it never held (Docs/Semantics.md §7, "A copy left out of a peer's floor"). Taken
    /// as held, they were neither kept nor made again: lost, and what was made on them dropped
    /// (seed 47 of `listsync simulate --daemons 3 --compact-after 10 --hide-daemon --roam 30
    /// --crashes 1`). So an operation also counts as lacking when one it depends on is lacking
    /// (this document, compacted at a quiescent point, holds the causes of all it holds), or when
    /// it inserts a section this document does not know (sections are never collected).
    ///
    /// - Complexity: O(r + k × d × g) for the r records of both logs, k operations of `local`'s
    ///   log with d dependencies, and g runs of lacking counters per replica (few: they are
    ///   mostly consecutive).
    func lackedOperations(of local: ListDocument) -> (lacking: [ListOperation], holds: (OpID) -> Bool) {
        let held = heldOperations()
        var missing: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        func isMissing(_ id: OpID) -> Bool { missing[id.replica]?.contains { $0.contains(id.counter) } ?? false }
        var lacking: [ListOperation] = []
        for op in local.operations(since: local.historyFloor ?? VersionVector()) {
            guard !held(op.id) || op.deps.contains(where: isMissing)
                    || (op.insertsSection && sectionEntity(SectionID(op.id)) == nil) else { continue }
            lacking.append(op)
            let run = op.id.counter...op.lastID.counter
            if let last = missing[op.id.replica]?.last, last.upperBound &+ 1 == run.lowerBound {
                missing[op.id.replica]![missing[op.id.replica]!.count - 1] = last.lowerBound...run.upperBound
            } else {
                missing[op.id.replica, default: []].append(run)
            }
        }
        return (lacking, { id in held(id) && !isMissing(id) })
    }

    /// Whether this document holds every operation `local` applied and keeps waiting
    /// (``lackedOperations(of:)``, not only by version, which may count what it never held):
    /// `local` may then be replaced by it.
    ///
    /// - Complexity: that of ``lackedOperations(of:)``.
    public func holdsEverything(of local: ListDocument) -> Bool {
        guard version.includes(local.version) else { return false }
        let (lacking, holds) = lackedOperations(of: local)
        return lacking.isEmpty && local.pendingOperations.allSatisfy { holds($0.id) && version.contains($0.lastID) }
    }

    /// Splits `ops` (operations this document lacks, in causal order) into those causally after
    /// its floor, and those made before it (``isBeforeFloor(_:)``), or that `parted` names, or
    /// made on one of those: the latter no copy compacted at the floor ever takes as they are.
    ///
    /// - Complexity: O(k × d) for k operations of d dependencies.
    public func splitAtFloor(_ ops: [ListOperation], parted: (OpID) -> Bool = { _ in false })
        -> (after: [ListOperation], before: [ListOperation]) {
        var stale: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        var after: [ListOperation] = [], before: [ListOperation] = []
        for op in ops {
            let onStale = op.deps.contains { d in stale[d.replica]?.contains { $0.contains(d.counter) } ?? false }
            if onStale || isBeforeFloor(op) || parted(op.id) {
                before.append(op)
                stale[op.id.replica, default: []].append(op.id.counter...op.lastID.counter)
            } else {
                after.append(op)
            }
        }
        return (after, before)
    }

    /// Receives `ops` whole or not at all: applied, none refused and none left waiting, it
    /// returns the operations as applied (from the log); otherwise nil, and nothing changes.
    ///
    /// - Complexity: that of ``receive(_:)-([ListOperation])`` on a copy of the document.
    mutating func receiveWhole(_ ops: [ListOperation]) -> [ListOperation]? {
        var copy = self
        let start = copy.operationCount
        let report = copy.receive(ops)
        guard report.refused.isEmpty, copy.pendingCount == pendingCount, let taken = try? copy.operations(from: start) else { return nil }
        self = copy
        return taken
    }
}
