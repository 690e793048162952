import ListCRDT

// What the core refuses with `compacted` (Docs/Semantics.md §7): operations made before the
// compaction floor, and those that depend on one refused; and, on a document peer daemons sync,
// what a client may still send once this daemon has published a version to its peers ("Peers",
// "Replicas no daemon counts"): an operation whose author no daemon accounts for must be causally
// after that version, or it is refused (its author re-syncs), on every daemon alike, whether it
// compacted or not.

extension DocumentCore {
    /// Takes out of `fresh` (in order) the operations made before the compaction floor, those
    /// that depend on an operation refused for it, and those that depend on an operation of
    /// their own author not received yet while the author has not said it has seen the floor
    /// (sent ahead of its causes, which may be refused for the floor when they come: kept
    /// waiting, it would be woken without them once its author's edits made again on the
    /// snapshot raise the version past their counters); returns their refusals. `waiting`: the
    /// batch's operations this core keeps waiting already (taken before; they count as taken).
    ///
    /// - Complexity: O(k × d) for k operations of d dependencies.
    mutating func refuseBeforeFloor(_ fresh: inout [ListOperation], waiting: VersionVector) -> [ApplyError] {
        guard let floor = document.historyFloor else { return [] }
        var refusals: [ApplyError] = []
        var taken = waiting   // earlier operations of the batch that pass, and those waiting here
        fresh = fresh.filter { op in
            let onRefused = dependsOnRefused(op, taken: taken)
            let aheadOfOwn = op.deps.contains { d in
                d.replica == op.id.replica && !document.version.contains(d) && !taken.contains(d)
            } && stability.tracker.acknowledged[op.id.replica].map { $0.includes(floor) } != true
            guard onRefused || aheadOfOwn || document.isBeforeFloor(op) else {
                taken.observe(op.lastID)
                return true
            }
            refusals.append(refuse(op, "it was made before its author had seen the version this document was compacted at; re-sync from a snapshot"))
            return false
        }
        return refusals
    }

    /// Of a client's batch `fresh` (not a peer link's), takes each operation the document refused
    /// as malformed (`refused`, its receive's) that names an operation this copy will never hold
    /// as it is: one its version counts that it does not hold, or one a daemon parted in a merge
    /// back (``ListCRDT/ListDocument/unheldName(of:isParted:)``). Such an operation is an edit of
    /// an original only a daemon left out of a peer's floor took, made by a device that took it
    /// there; it can never apply here (Docs/Semantics.md §7, "An edit of an original the copy
    /// counts"). It is refused as made before the floor instead (remembered, as the others so
    /// refused), and so is every operation of `fresh` that waits here on it, directly or through
    /// others of the batch (taken out of the causal buffer: kept, it would wait for ever). Its
    /// author re-syncs and makes its unsent edits again on what this copy holds. Returns the
    /// refusals to put in place of `refused`, and whether any is such (the batch is then
    /// answered `compacted`). Waiting operations of other batches are never taken out.
    ///
    /// - Complexity: O(1) when nothing was refused; else O(f + r × n log m) for the f operations
    ///   of the batch, r refused ones naming n ids, m log records per replica, and the ranges'
    ///   union (``partedRanges``), plus the buffer rebuilt once when something waits on them.
    mutating func refuseUnheldNames(_ fresh: [ListOperation], refused: [ApplyError]) -> (refusals: [ApplyError], beforeFloor: Bool) {
        guard !refused.isEmpty, variant != .refusesUnheldNamesAsMalformed else { return (refused, false) }
        let ids = Set(refused.compactMap { e -> OpID? in if case let .malformed(id, _) = e { id } else { nil } })
        guard !ids.isEmpty else { return (refused, false) }
        let ranges = partedRanges
        var unheld: [OpID: ApplyError] = [:]
        for op in fresh where ids.contains(op.id) {
            guard let name = document.unheldName(of: op, isParted: ranges.contains) else { continue }
            unheld[op.id] = refuse(op, "it edits \(name), an operation this copy counts or a daemon parted but that it never holds as it is (made before a floor some daemon compacted at, and made again by the daemon that took it); re-sync from a snapshot")
        }
        guard !unheld.isEmpty else { return (refused, false) }
        var refusals = refused.map { e -> ApplyError in
            if case let .malformed(id, _) = e, let instead = unheld[id] { instead } else { e }
        }
        for op in document.takeWaiting(fresh, on: Array(unheld.keys)) {
            refusals.append(refuse(op, "it depends on an operation refused for the compaction floor; re-sync from a snapshot"))
        }
        return (refusals, true)
    }

    /// Refuses `op` for `reason`: its counters are remembered (``dependsOnRefused(_:taken:)``)
    /// and the refusal returned.
    private mutating func refuse(_ op: ListOperation, _ reason: String) -> ApplyError {
        refusedFloor[op.id.replica] = max(refusedFloor[op.id.replica] ?? 0, op.lastID.counter)
        return .malformed(op.id, reason)
    }

    /// Whether `op` depends on an operation refused for the compaction floor (or as unaccounted
    /// for, ``refuseUnaccounted(_:relay:waiting:)``) that is neither applied here nor `taken` earlier in
    /// its batch (its author's edits made again after a re-sync reuse the refused counters, and
    /// depend on one another within their batch).
    ///
    /// - Complexity: O(d) for d dependencies.
    func dependsOnRefused(_ op: ListOperation, taken: VersionVector) -> Bool {
        op.deps.contains { d in
            !document.version.contains(d) && !taken.contains(d) && refusedFloor[d.replica].map { d.counter <= $0 } == true
        }
    }

    /// The version this daemon last published to its peers (its own entry of the stability
    /// table), its heads, and which operations are known to be causally after it.
    struct PublishedMark {
        var version: VersionVector
        /// The version's frontier (heads found by ``DocumentCore/heads(of:)``).
        var heads: [OpID]
        /// Per replica, the least counter of an operation applied here that is causally after
        /// `version` (a replica's operations form a causal chain, so each later one is too).
        var after: [ReplicaID: UInt64] = [:]

        /// Whether `id` is known to be causally after the version (the operation it names, or
        /// one before it of its replica, was found to be).
        func isAfter(_ id: OpID) -> Bool { after[id.replica].map { $0 <= id.counter } == true }

        mutating func markAfter(_ id: OpID) {
            after[id.replica] = min(after[id.replica] ?? .max, id.counter)
        }
    }

    /// The mark of the version this daemon last published, made again when that changed; nil
    /// when no peer touches the document or this daemon has published nothing (then no daemon
    /// can have compacted at a version it had not).
    ///
    /// - Complexity: O(1) while the published version is the same; else that of ``heads(of:)``.
    mutating func currentMark() -> PublishedMark? {
        // One look-up for a document no peer touches (it has no entries), before anything else.
        // After a merge back, an entry that still names what this copy no longer holds is as
        // good as none (no peer can have compacted at it: only this copy held all of it) until
        // this daemon publishes again (DocumentCore+Parting.swift).
        // A published version the copy's floor includes asks nothing more than the floor: what
        // passes the floor's check (``refuseBeforeFloor(_:waiting:)``) is after it, so after the
        // version too. Its heads may lie below the floor, where no causal query answers (a copy
        // that took a peer's snapshot whole after it published: Docs/Semantics.md §7, "A daemon
        // forgotten while it runs").
        guard let mine = stability.peers.entries[document.replica], mine.version != VersionVector(), isPeered,
              partedVersion == nil || document.version.includes(mine.version),
              variant == .checksPublishedBelowFloor || !(document.historyFloor?.includes(mine.version) ?? false) else {
            publishedMark = nil
            return nil
        }
        if let mark = publishedMark, mark.version == mine.version { return mark }
        publishedMark = PublishedMark(version: mine.version, heads: heads(of: mine.version))
        return publishedMark
    }

    /// The frontier of `version`, a version this document held: the document's own frontier if
    /// it holds exactly that, else the last operation of each replica of `version` that no other
    /// such operation has seen (taken in decreasing counter order: an operation can only have been
    /// seen by one of a greater Lamport counter).
    ///
    /// - Complexity: O(1) when `version` is the document's; else O(r × h) causal queries
    ///   (``ListDocument/hasSeen(_:at:)``) for r replicas and h heads.
    func heads(of version: VersionVector) -> [OpID] {
        if version == document.version { return document.frontier.ids }
        let last = version.counters.map { OpID(counter: $0.value, replica: $0.key) }.sorted { $0.counter > $1.counter }
        var heads: [OpID] = []
        for candidate in last where !heads.contains(where: { document.hasSeen(candidate, at: $0) }) {
            heads.append(candidate)
        }
        return heads
    }

    /// Takes out of `fresh` (in order) the operations of a client (not a peer link: `relay`
    /// false) that no daemon can account for: on a peered document where this daemon published
    /// version `P`, an operation whose author no daemon's entry claims and that is not causally
    /// after `P` (it depends on something unknown, or its author had not seen all of `P`); and
    /// those that depend on an operation refused so. Returns their refusals (the batch is answered
    /// `compacted`: its author re-syncs). Every operation that passes and is causally after `P`
    /// is noted as such, from any sender, so that what depends on it is known to be after `P`
    /// at once. `waiting`: the batch's operations this core keeps waiting already (checked when
    /// first taken; they count as taken).
    ///
    /// Why (Docs/Semantics.md §7, "Peers"): a peer may have compacted at any version this daemon
    /// published, the latest of which includes every earlier one; an author some daemon claims
    /// reported there, so what it sends is in that daemon's copy or after its report. Any other
    /// operation must be after `P`, or a daemon that did not compact would take it and relay it
    /// to one that did, which refuses it: the copies would differ.
    ///
    /// - Complexity: O(k × d) for k operations of d dependencies while they are known to be after
    ///   `P` or claimed; an unclaimed author's operation that is not known so costs up to h causal
    ///   queries (``ListDocument/hasSeen(_:at:)``) for the h heads of `P`.
    mutating func refuseUnaccounted(_ fresh: inout [ListOperation], relay: Bool, waiting: VersionVector) -> [ApplyError] {
        guard var mark = currentMark() else { return [] }
        // Taken out while it is marked, so that its table is not copied for every batch.
        publishedMark = nil
        defer { publishedMark = mark }
        let peers = stability.peers
        let me = document.replica
        let mine = peers.entries[me]?.claimed ?? []
        var refusals: [ApplyError] = []
        var taken = waiting   // operations of the batch that pass (and those waiting here), for the later ones
        fresh = fresh.filter { op in
            let author = op.id.replica
            let onRefused = !relay && dependsOnRefused(op, taken: taken)
            var after = !onRefused && coversHeads(op, mark, quick: true)
            // An author this daemon claims acknowledged exactly P: what it sends that P lacks, it
            // made later.
            if !after, !onRefused, mine.contains(author) { after = true }
            // Looked up only for what is not known to be after P (most operations are).
            let claimed = after || author == me || relay || peers.isClaimed(author)
            if !after, !onRefused, !claimed {
                after = op.deps.allSatisfy { document.version.contains($0) || taken.contains($0) }
                    && coversHeads(op, mark, quick: false)
            }
            guard !onRefused, after || claimed else {
                refusals.append(refuse(op, onRefused
                    ? "it depends on an operation refused for the compaction floor; re-sync from a snapshot"
                    : "no daemon accounts for its author, and it was made before the author had seen the version this daemon reported to its peers (which may have compacted there); re-sync from a snapshot"))
                return false
            }
            if after { mark.markAfter(op.id) }
            taken.observe(op.lastID)
            return true
        }
        return refusals
    }

    /// Whether every head of the mark's version is in `op`'s causal past: one of its dependencies
    /// is known to be after the version, or each head is a dependency or before one of them (of
    /// the same replica, or, unless `quick`, by a causal query on the applied history).
    private func coversHeads(_ op: ListOperation, _ mark: PublishedMark, quick: Bool) -> Bool {
        let deps = op.deps.ids
        if deps.contains(where: mark.isAfter) { return true }
        return mark.heads.allSatisfy { h in
            deps.contains { d in
                (d.replica == h.replica && d.counter >= h.counter)
                    || (!quick && document.version.contains(d) && document.hasSeen(h, at: d))
            }
        }
    }
}
