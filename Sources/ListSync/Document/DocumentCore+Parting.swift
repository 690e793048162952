import ListCRDT

/// A copy left out of a peer's floor (Docs/Semantics.md §7, "A copy left out of a peer's
/// floor"): a peer compacted at a floor this daemon's copy was not part of (it did not know this
/// daemon), while this copy took operations made before that floor. The peer refuses them; this
/// copy takes the peer's compacted copy and makes them again on it, as a device does after a
/// refusal, so that nothing it acknowledged is lost. No I/O: the driver fetches the snapshot
/// (``PeerSession/Action/behindFloor(_:snapshot:)``), writes the merged copy to its store, then
/// calls ``replace(with:parting:)``.
extension DocumentCore {
    /// The peer's compacted copy `snapshot` with what this copy holds that it lacks merged back
    /// (``ListCRDT/ListDocument/mergeBack(from:remakes:relayed:named:)``), or nil: this copy holds nothing it
    /// lacks (take the snapshot as it is, ``replace(with:)``), its history does not go back to
    /// what the snapshot holds, a batch is in flight, or the core is ``Variant/partsCopies``.
    /// Changes nothing.
    ///
    /// Made again here are the operations this daemon took from their authors (every author but
    /// the relay authors, retired or not, that it does not count itself:
    /// ``DocumentStability/tookDirectly(_:me:)``; and no operation it took from a peer link:
    /// ``relayedOperations``, kept in the log across restarts; those came through a peer link,
    /// and the daemon that took them from their author merges them back itself, having the same
    /// refusal); the others before the floor are dropped, those after it
    /// kept as they are, except those some daemon's entry says it parted
    /// (``PeerStability/Entry/parted``), and those made on them: parted like the ones before the
    /// floor (that daemon's snapshot no longer holds them, and refuses them for ever).
    ///
    /// - Complexity: that of ``ListCRDT/ListDocument/mergeBack(from:remakes:relayed:named:)``.
    public func mergeBack(_ snapshot: ListDocument) -> (document: ListDocument, merge: ListDocument.MergeBack)? {
        guard variant != .partsCopies, isQuiet, !isHeld(by: snapshot) else { return nil }
        var merged = variant == .countsSkippedAsHeld ? snapshot.forgettingFloorSkipped() : snapshot
        merged.pendingLimits = document.pendingLimits
        let me = document.replica, counted = stability
        let runs = relayedOperations
        // What a daemon's entry says it parted is parted here too, even after the floor
        // (Docs/Semantics.md §7, "A merge back that knows what was parted").
        let ranges = variant == .keepsNamedInMergeBack ? PartedRanges() : PartedRanges(stability.peers.entries.values)
        guard let merge = merged.mergeBack(from: document, remakes: { counted.tookDirectly($0, me: me) },
                                           relayed: { runs.contains($0) },
                                           named: { ranges.contains($0) })
        else { return nil }
        return (merged, merge)
    }

    /// Whether some operation this copy keeps waiting depends on one that a daemon's entry says
    /// it parted in a merge back (``PeerStability/Entry/parted``) and this copy lacks (with a
    /// floor or without), nothing in flight: ``remakePartedWaiting()`` would make them again. The
    /// policy asks this at each housekeeping (``DocumentHostPolicy/Action/remakeParted``).
    ///
    /// - Complexity: O(1) when nothing waits or nothing was parted; else that of
    ///   ``ListCRDT/ListDocument/waitsOnParted(_:)``.
    public var waitsOnParted: Bool {
        guard variant != .keepsPartedWaiting, isQuiet, document.pendingCount > 0,
              stability.peers.entries.values.contains(where: { !$0.parted.isEmpty }) else { return false }
        let entries = stability.peers.entries
        return document.waitsOnParted { id in entries.values.contains { $0.parted.contains(id) } }
    }

    /// Whether this copy holds, logged since its floor (if any) or waiting, an original that some
    /// daemon's entry says it parted in a merge back (``PeerStability/Entry/parted``), applied or waiting, nothing in
    /// flight: ``remakePartedWaiting()`` would take it out (Docs/Semantics.md §7, "Parted
    /// originals a copy holds"). The policy asks this at each housekeeping; while the ranges stay
    /// the same, each operation of the log is looked at once (the positions found clean are
    /// remembered).
    ///
    /// - Complexity: O(1) when nothing was parted; else O(k) for the k
    ///   operations logged since it last asked (all of them when the ranges grew), and O(w) for
    ///   w waiting ones.
    mutating func holdsPartedOriginals() -> Bool {
        guard variant != .keepsHeldParted, isQuiet, variant != .keepsHeldPartedOnAFloor || document.historyFloor == nil,
              stability.peers.entries.values.contains(where: { !$0.parted.isEmpty }) else { return false }
        let ranges = PartedRanges(stability.peers.entries.values)
        let count = document.operationCount
        var from = 0
        if let checked = partedHeldChecked, checked.ranges == ranges, checked.logCount <= count { from = checked.logCount }
        let holds = document.holdsParted(ranges.runs, fromLogPosition: from)
        // Remembered only when clean: one found is asked again until it is taken out.
        partedHeldChecked = holds ? nil : (ranges, count)
        return holds
    }

    /// This copy with the operations it keeps waiting on parted ones made again
    /// (Docs/Semantics.md §7, "Waiting edits on parted originals"), or nil (none, a batch in
    /// flight, or ``Variant/keepsPartedWaiting``). Changes nothing: the driver writes
    /// the document as a new generation of its store (the originals leave the log, so a restart
    /// does not find them waiting again), then calls ``replace(with:parting:)``.
    ///
    /// A waiting operation on an operation some daemon's entry says it parted
    /// (``PeerStability/Entry/parted``) that this copy lacks never applies: made before that
    /// daemon's floor, every copy compacted there refuses it. It was acknowledged here (durable),
    /// so it is made again here as a new operation of this daemon's replica
    /// (``ListCRDT/ListDocument/remakeWaiting(onParted:remakes:)``), and so is every waiting one
    /// on it, unless a parted range names it too (the daemon that parted it held it and made it
    /// again), or it came through a peer link (``relayedOperations``, relay authors: the daemon
    /// that took it from its author makes it again): those are dropped.
    ///
    /// Otherwise, on a copy that holds such originals since its floor, or never compacted
    /// (``holdsPartedOriginals()``), the copy rebuilt from its floor without them and without what was made on
    /// them, those of all of them this daemon took from their authors made again, originals
    /// included (their parter got them relayed and dropped them); the others dropped
    /// (``ListCRDT/ListDocument/partHeld(_:remakes:)``, Docs/Semantics.md §7, "Parted originals a
    /// copy holds").
    ///
    /// - Complexity: that of ``ListCRDT/ListDocument/remakeWaiting(onParted:remakes:)``, or of
    ///   ``ListCRDT/ListDocument/partHeld(_:remakes:)``.
    public func remakePartedWaiting() -> (document: ListDocument, merge: ListDocument.MergeBack)? {
        let entries = stability.peers.entries
        guard isQuiet, entries.values.contains(where: { !$0.parted.isEmpty }) else { return nil }
        let counted = stability, runs = relayedOperations, me = document.replica
        func isParted(_ id: OpID) -> Bool { entries.values.contains { $0.parted.contains(id) } }
        func takenFromAuthor(_ op: ListOperation) -> Bool {
            counted.tookDirectly(op.id.replica, me: me)
                && !runs.contains(op.id)
        }
        var remade = document
        if waitsOnParted,
           let merge = remade.remakeWaiting(onParted: isParted, remakes: { !isParted($0.id) && takenFromAuthor($0) }) {
            return (remade, merge)
        }
        // An original taken from its author is made again here too: its parter, for which it
        // came relayed, dropped it (seed 20367 of `listsync simulate --daemons 3 --ring
        // --hide-daemon --roam 30 --crashes 2 --ops 80 --compact-after 10` lost two so).
        guard variant != .keepsHeldParted, variant != .keepsHeldPartedOnAFloor || document.historyFloor == nil,
              let merge = remade.partHeld(PartedRanges(entries.values).runs, remakes: takenFromAuthor) else { return nil }
        return (remade, merge)
    }

    /// Whether `snapshot` (a peer's copy) holds everything this copy holds: what it applied,
    /// and what it keeps waiting for its causes (taken and acknowledged: a copy that took the
    /// snapshot as it is would lose those). Such a copy takes the snapshot as it is
    /// (``replace(with:)``); any other is merged back onto it (``mergeBack(_:)``). Asked of
    /// the operations themselves, not only the version, which may count what the snapshot never
    /// held (``ListCRDT/ListDocument/holdsEverything(of:)``).
    ///
    /// - Complexity: that of ``ListCRDT/ListDocument/holdsEverything(of:)``: O(r + k × d) for
    ///   the records of both logs and the k operations of this copy's log.
    public func isHeld(by snapshot: ListDocument) -> Bool {
        (variant == .countsSkippedAsHeld ? snapshot.forgettingFloorSkipped() : snapshot).holdsEverything(of: document)
    }

    /// Replaces the document with `document`, a merge back (``mergeBack(_:)``) already durable in
    /// the driver's store: every subscriber is cut off (each subscribes again; one that holds
    /// operations this copy held and lacks now gets a snapshot), and this copy's version before
    /// it is remembered (``partedVersion``): an operation of it sent again is acknowledged as
    /// held, and one that depends on such an operation is refused as made before the floor (its
    /// author re-syncs).
    ///
    /// - Precondition: nothing in flight; `document` includes everything of this copy's version
    ///   that was kept (``ListCRDT/ListDocument/MergeBack``).
    /// - Complexity: O(s + r) for s subscribers and r replicas.
    public mutating func replace(with document: ListDocument, parting merge: ListDocument.MergeBack) -> [Action] {
        precondition(inFlight.isEmpty, "a merge back with batches in flight")
        let before = self.document.version
        var parted = partedVersion ?? VersionVector()
        parted.formUnion(before)
        for op in merge.parted where !document.version.contains(op.lastID) {
            // Operations it kept waiting for their causes were acknowledged too: held, as made again.
            parted.observe(op.lastID)
            refusedFloor[op.id.replica] = max(refusedFloor[op.id.replica] ?? 0, op.lastID.counter)
        }
        partedVersion = parted
        // Every daemon learns what was parted (its entry, gossiped and kept on disk): a device
        // that took an original here and roams to a peer is sent a snapshot there too. Named by
        // the operations taken out, as runs of their counters, not by the versions (those count
        // every counter up to an author's greatest, and a copy without a floor takes out what a
        // range names: Docs/Semantics.md §7, "Parted originals a copy holds"); originals another
        // daemon parted and this copy took out are named by that daemon's entry.
        let originals = Set(merge.originals.map(\.id))
        var runs = PartedRanges()
        for op in merge.parted where !originals.contains(op.id) { runs.insert(op) }
        _ = stability.peers.noteParted(self.document.replica, runs: runs, now: stabilityClock)
        stability.lowerAcknowledgements(to: document.version)
        stabilityUnsaved = true
        mergesBack += 1
        operationsMergedBack += merge.made.count
        materialiseCatchUps()
        self.document = document
        partedHeldChecked = nil
        publishedMark = nil
        durableVersion = document.version
        durableCount = document.operationCount
        snapshotCache = nil
        gossipDirty = true
        return cutSubscribers(reason: "the daemon's copy merged back a peer's compacted copy; subscribe again")
    }

    /// The version `subscribed` says this copy holds: the durable version, and after a merge
    /// back what it held before too (``partedVersion``). The operations of it the copy lacks now
    /// are held as their edits, made again: a device that sent one and missed its
    /// acknowledgement (the merge back cut its connection) must count it as taken, or its
    /// re-sync would make it again beside the daemon's (a value shown twice). A peer's link
    /// lacks none of them either: what this copy held of others' is in the snapshot it merged
    /// onto.
    ///
    /// - Complexity: O(r) for r replicas.
    var advertisedVersion: VersionVector {
        guard var version = partedVersion else { return durableVersion }
        version.formUnion(durableVersion)
        return version
    }

    /// Whether `op` is an operation this copy held before a merge back and no longer holds: its
    /// edit is here, made again under another id.
    ///
    /// - Complexity: O(1).
    func isMergedBack(_ op: ListOperation) -> Bool {
        guard let partedVersion else { return false }
        return partedVersion.contains(op.lastID) && !document.version.contains(op.lastID)
    }

    /// Whether `version` (a subscriber's) holds operations this copy held before a merge back and
    /// lacks now, or, on a copy with a floor, operations some daemon's entry says it parted in a
    /// merge back (``PeerStability/Entry/parted``; this daemon's own after a restart) that this
    /// copy lacks: its catch-up is a snapshot, which it loads in place of its copy. Those
    /// operations were made before a floor (or on such an operation), so no copy compacted there
    /// ever takes them; their edits came to it made again (Docs/Semantics.md §7, "What a parted
    /// original's holder is sent").
    ///
    /// - Complexity: O(r + e × p) for r replicas and e entries of p authors parted.
    func holdsParted(_ version: VersionVector) -> Bool {
        if let partedVersion,
           version.entries.contains(where: { min($0.counter, partedVersion[$0.replica]) > document.version[$0.replica] }) {
            return true
        }
        return holdsPeerParted(version)
    }

    /// Whether `version` ends on an operation some daemon's entry says it parted
    /// (``PeerStability/Entry/parted``) and this copy lacks: by its version where that is past
    /// this copy's, else by the operations it holds (floor, log, waiting), with a floor or
    /// without, since its version may count a parted operation it lacks: a device that re-synced
    /// makes its edits again under later counters, and a copy with a floor that merged back twice
    /// made its own operations of the first merge again under later counters in the second
    /// (Docs/Semantics.md §7, "A second merge back"). A device caught up here while holding such
    /// operations is sent a snapshot of this copy, and drops them (Docs/Semantics.md §7, "A device
    /// learns what was parted"). An original still on its way here (a range wider than what was
    /// parted) costs that device a re-sync it did not need, nothing more.
    ///
    /// - Complexity: O(e × p) for e entries of p authors parted; only when `version` ends in a
    ///   range at a counter this copy's version counts, O(k) more for the k operations of the log.
    func holdsPeerParted(_ version: VersionVector) -> Bool {
        guard variant != .sendsPartedOperations else { return false }
        if document.historyFloor != nil {
            if variant == .countsPartedByVersion { return stability.peers.countsParted(version, lacking: document.version) }
            return endsOnUnheld(version, PartedRanges(stability.peers.entries.values))
        }
        guard variant != .hidesPartedFromDevices else { return false }
        return endsOnUnheld(version, partedRanges)
    }

    /// Whether `version` ends, for some author, on a counter `ranges` name that this copy does not
    /// hold: past its version, or counted by it and neither held (``ListCRDT/ListDocument/heldOperations()``)
    /// nor waiting.
    ///
    /// - Complexity: O(r) for r replicas of `version`; O(k) more for the k operations of the log
    ///   when an end in `ranges` is counted by this copy's version.
    private func endsOnUnheld(_ version: VersionVector, _ ranges: PartedRanges) -> Bool {
        let ends = version.entries.map { OpID(counter: $0.counter, replica: $0.replica) }.filter(ranges.contains)
        guard !ends.isEmpty else { return false }
        if ends.contains(where: { $0.counter > document.version[$0.replica] }) { return true }
        let held = document.heldOperations()
        let waiting = document.pendingOperations
        return ends.contains { id in
            !held(id) && !waiting.contains { $0.id.replica == id.replica && ($0.id.counter...$0.lastID.counter).contains(id.counter) }
        }
    }

    /// Device `subscriber` made edits of its own again under new ids after a refusal it took as
    /// final (the `remade` message): the runs of `ranges` of the replica its `seen` named are
    /// noted in this daemon's entry as parted (``PeerStability/noteParted(_:runs:now:)``), so that
    /// a copy holding one of those originals, which a daemon the device can no longer ask had
    /// relayed before it was lost, takes it out (Docs/Semantics.md §7, "An edit its author made
    /// again"). Runs of other replicas are ignored (a device speaks for its own edits only), and
    /// so is the message on a document without peers (no other copy can hold what this one
    /// refused), from a subscriber that never said `seen`, or from a peer link. Returns whether
    /// the table changed (written down, gossiped and told to devices at the next housekeeping).
    ///
    /// - Complexity: O(g²) for the g runs of the device's replica.
    public mutating func remade(_ subscriber: SubscriberID, ranges: PartedRanges, now: UInt64) -> Bool {
        guard destroyedReason == nil, variant != .ignoresRemade, stability.relayed,
              let sub = subscribers[subscriber], sub.role?.isDevice == true, let replica = sub.replica else { return false }
        let own = ranges.only(replica)
        guard !own.isEmpty else { return false }
        stabilityClock = now
        // (``holdsPartedOriginals()`` looks again by itself: its memo is of the ranges it saw.)
        guard stability.peers.noteParted(document.replica, runs: own, now: now) else { return false }
        stabilityUnsaved = true
        gossipDirty = true
        return true
    }

    /// What the daemons parted in merges back, as far as this daemon knows: the union of every
    /// entry's ``PeerStability/Entry/parted`` ranges (nothing with
    /// ``Variant/hidesPartedFromDevices``).
    ///
    /// - Complexity: O(e × p × g) for e entries of p authors and g runs per author.
    public var partedRanges: PartedRanges {
        guard variant != .hidesPartedFromDevices else { return PartedRanges() }
        return PartedRanges(stability.peers.entries.values)
    }

    /// `parted` for `subscriber` if it learns them and anything was parted (right after
    /// `subscribed`).
    ///
    /// - Complexity: that of ``partedRanges``.
    func partedFor(_ subscriber: SubscriberID) -> [Action] {
        guard subscribers[subscriber]?.learnsParted == true else { return [] }
        let ranges = partedRanges
        guard !ranges.isEmpty else { return [] }
        let frame = SyncMessage.parted(document: id, ranges: ranges).encoded()
        return frame.count <= maxFrame ? [.send(subscriber, frame)] : []
    }

    /// Tells every subscriber that learns them (``subscribe(_:epoch:version:ownLink:learnsParted:)``)
    /// what the daemons parted, when that grew since it was last told (a peer's table brought a
    /// merge back): a device re-syncing here stops waiting for its acknowledged originals
    /// (Docs/Semantics.md §7, "A device learns what was parted"). Asked at each housekeeping.
    ///
    /// - Complexity: that of ``partedRanges``, and O(s) for s subscribers when it grew.
    mutating func announceParted() -> [Action] {
        let ranges = partedRanges
        guard ranges != partedAnnounced else { return [] }
        partedAnnounced = ranges
        guard !ranges.isEmpty else { return [] }
        let frame = SyncMessage.parted(document: id, ranges: ranges).encoded()
        guard frame.count <= maxFrame else { return [] }
        return subscribers.keys.sorted().filter { subscribers[$0]!.learnsParted }.map { .send($0, frame) }
    }

    /// Cuts off every device subscriber whose `seen` holds operations some daemon parted in a
    /// merge back that this copy lacks (``holdsPeerParted(_:)``: it caught up before this daemon heard
    /// of that merge back, and was sent operations): it subscribes again, and its catch-up is a
    /// snapshot, which it loads in place of its copy. Not a peer link, nor a subscriber a
    /// snapshot is due to already.
    ///
    /// - Complexity: O(n × e × p) for n subscribers and e entries of p authors parted.
    mutating func cutPartedHolders() -> [Action] {
        guard variant != .sendsPartedOperations, document.historyFloor != nil || variant != .hidesPartedFromDevices,
              stability.peers.entries.values.contains(where: { !$0.parted.isEmpty }) else { return [] }
        let holders = subscribers.keys.sorted().filter { s in
            let sub = subscribers[s]!
            guard sub.role?.isDevice == true, !sub.snapshotDue, let seen = sub.seen else { return false }
            return holdsPeerParted(seen)
        }
        var actions: [Action] = []
        for s in holders {
            actions += unsubscribe(s)
            actions.append(.close(s, reason: "the subscriber holds operations a peer parted in a merge back; subscribe again"))
        }
        return actions
    }
}
