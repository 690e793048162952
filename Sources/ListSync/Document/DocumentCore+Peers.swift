import ListCRDT

/// Compaction on a daemon with peers (Docs/Semantics.md §7, "Peers"): the document's
/// ``PeerStability`` table, what the peer links say of it, and what this daemon gossips back.
extension DocumentCore {
    /// Whether peers are involved: a peer link is attached, or ever was, or the table holds
    /// something. Compaction then waits for the peers too (``peersAllow(_:)``).
    ///
    /// - Complexity: O(n) for n subscribers.
    public var isPeered: Bool {
        stability.relayed || (stability.lostSince != nil && variant != .compactsWithStabilityLost) || !stability.peers.isEmpty
            || subscribers.values.contains { $0.role == .relay }
    }

    /// The version at which this daemon is locally quiescent now, or nil: nothing in flight or
    /// waiting, every subscriber but the peer links has said it has seen exactly the document's
    /// version, nothing queued, and every sender it counts that is not retired has reported
    /// exactly that version.
    ///
    /// - Complexity: O(n + s × r log r) for n subscribers, s senders and r replicas.
    public var localQuiescentVersion: VersionVector? {
        guard isSettled(minOperations: 0) || isSettledAtFloor else { return nil }
        let version = document.version
        if !stability.tracker.acknowledged.isEmpty {
            guard stability.tracker.quiescentVersion(holding: version) == version else { return nil }
        }
        return version
    }

    /// A peer link attached as `subscriber`: what it delivers came through it (its authors are
    /// relay authors). This daemon's own link (`gossips`, the default) relays what it is sent to
    /// its peer, this document's stability table included; a peer's link known from its earlier
    /// subscriptions (``ServerSession/relayDaemon``) takes the table if it sent one. `daemon`: the
    /// peer's id, if known already (else the peer's next `seen` or table says it).
    public mutating func markRelay(_ subscriber: SubscriberID, daemon: ReplicaID? = nil, gossips: Bool = true) {
        guard subscribers[subscriber] != nil else { return }
        subscribers[subscriber]!.role = .relay
        if let daemon {
            subscribers[subscriber]!.replica = daemon
            if stability.heardFromRelay(daemon, me: document.replica, now: stabilityClock) { stabilityUnsaved = true }
        }
        subscribers[subscriber]!.gossips = gossips
        if gossips { gossipDirty = true }
    }

    /// Notes that daemon `daemon` holds the document too (its link was attached once, as a
    /// daemon that copied the document from it knows): it holds compaction back until it
    /// reports or is retired. Returns whether that is new.
    public mutating func notePeer(_ daemon: ReplicaID, now: UInt64) -> Bool {
        guard stability.heardFromRelay(daemon, me: document.replica, now: now) else { return false }
        gossipDirty = true
        return true
    }

    /// A peer link attached as `subscriber` says daemon `daemon`'s table is `entries`
    /// (``SyncMessage/stability(document:from:entries:)``), at `now` (the stability clock's
    /// seconds): the link is that daemon's, takes this daemon's table from now on, and the
    /// entries are merged (``PeerStability/merge(_:me:floor:now:)``). Not attached: nothing.
    ///
    /// - Returns: whether the table changed (write it down; it is gossiped on).
    /// - Complexity: O(e × c) for e entries of c replicas claimed.
    public mutating func peerStability(_ subscriber: SubscriberID, from daemon: ReplicaID,
                                       entries: [ReplicaID: PeerStability.Entry], now: UInt64) -> Bool {
        guard var sub = subscribers[subscriber], destroyedReason == nil, daemon != document.replica else { return false }
        stabilityClock = now
        let newListener = !sub.gossips
        sub.role = .relay
        sub.replica = daemon
        sub.gossips = true
        subscribers[subscriber] = sub
        var changed = stability.heardFromRelay(daemon, me: document.replica, now: now)
        changed = stability.peers.merge(entries, me: document.replica, floor: document.historyFloor, now: now,
                                        takesBack: variant != .keepsForgottenForGood) || changed
        // A lost stability file (Docs/Semantics.md §7, "A lost stability file"): the peers'
        // table says who they are from now on.
        changed = stability.peersFound() || changed
        lossKeptForPeers = false   // the loss ended: nothing kept to say
        noteVouchers()
        if changed || newListener { gossipDirty = true }
        return changed
    }

    /// Brings the peers' side of ``stability`` up to `now` (seconds): this daemon's entry is kept
    /// heard of (a heartbeat every quarter of `retireAfter`), and, when this daemon is locally
    /// quiescent, its entry becomes that version (the senders refreshed first,
    /// ``refreshStability(now:retireAfter:)``). Nothing for a document no peer touched.
    ///
    /// The senders this daemon counts are retired after `retireAfter` as without peers; its
    /// entry then claims less, and no daemon compacts until every other daemon acknowledged that
    /// entry at a moment its own copy was exactly its entry's version, nothing in flight or
    /// waiting (which this daemon does here, when its copy has not moved since it published;
    /// Docs/Semantics.md §7, "Retiring with peers"; ``PeerStability/allows(_:me:acknowledgedRetirements:)``).
    /// Daemons are not retired by silence; those in `forgotten` (the operator's `--forget-peer`)
    /// are forgotten (``PeerStability/forget(daemon:me:now:)``), and so, through the gossip, on every
    /// other daemon; but not one that came back (``PeerStability/returned``).
    ///
    /// `keepsLoss`: a lost stability file ends only with a peer's table (``CompactionRule/peered``).
    ///
    /// - Returns: whether ``stability`` changed, who was retired now, and which daemons were
    ///   forgotten now.
    /// - Complexity: that of ``localQuiescentVersion``, and O(f) for f daemons forgotten.
    public mutating func refreshPeers(now: UInt64, retireAfter: UInt64, forgotten: Set<ReplicaID> = [], keepsLoss: Bool = false)
        -> (changed: Bool, retired: [ReplicaID], forgotten: [ReplicaID]) {
        guard isPeered, destroyedReason == nil else { return (false, [], []) }
        stabilityClock = now
        let me = document.replica
        let beat = max(1, retireAfter / 4)
        var changed = stability.peers.heartbeat(me, now: now, every: beat)
        var retired: [ReplicaID] = []
        // A daemon forgotten here that came back (Docs/Semantics.md §7, "A daemon forgotten while
        // it runs") is not forgotten again on the operator's word.
        let forgottenNow = forgotten.subtracting(stability.peers.returned).sorted()
            .filter { stability.peers.forget(daemon: $0, me: me, now: now) }
        changed = changed || !forgottenNow.isEmpty
        changed = changed || stabilityUnsaved
        stabilityUnsaved = false
        if isSettled(minOperations: 0) {
            changed = stability.adoptClaimedAuthors(me: me, now: now) || changed
            let local = refreshStability(now: now, retireAfter: retireAfter, keepsLoss: keepsLoss)
            retired += local.retired
            changed = changed || local.changed
        }
        // Settled, or a copy that holds nothing past its floor (it took a peer's snapshot whole)
        // settled there, which publishes the floor's version rather than keep an entry below it
        // until an operation comes (Docs/Semantics.md §7, "A daemon forgotten while it runs"):
        // ``localQuiescentVersion`` asks both.
        if let version = localQuiescentVersion {
            changed = stability.peers.publish(me, version: version, claimed: stability.claimed,
                                              retired: stability.tracker.retired, now: now, heartbeat: beat) || changed
        }
        // Not quiescent (a subscriber has not said `seen` yet), but the copy has not moved since
        // it was: the peers' retirements it holds are acknowledged all the same.
        if failure == nil, inFlight.isEmpty, document.pendingCount == 0, document.version == durableVersion,
           stability.peers.entries[me]?.version == document.version {
            changed = stability.peers.acknowledgeRetirements(me, now: now) || changed
        }
        if changed { gossipDirty = true }
        return (changed, retired, forgottenNow)
    }

    /// Whether the peers let this daemon compact at `version`, its local quiescent version:
    /// nothing of theirs holds it back (``peersHold(_:)``).
    ///
    /// - Complexity: that of ``peersHold(_:)``.
    public func peersAllow(_ version: VersionVector) -> Bool { peersHold(version) == nil }

    /// What of the peers holds this daemon back from compacting at `version`, its local quiescent
    /// version (nil: nothing): a peer link attached that is not a daemon the table knows (or
    /// retired), or what the table says (``PeerStability/hold(_:me:acknowledgedRetirements:exactly:)``:
    /// a daemon at another version, a retirement not acknowledged, a relay author no daemon claims),
    /// or, `exactly`, an entry that held operations outside its version this copy lacks
    /// (``PeerStability/Entry/held``). `exactly` false: an agreed stable prefix (``peerPrefixPoint(_:)``), which every entry must
    /// include rather than name.
    ///
    /// - Complexity: O(n + e × r + e² + a × e) for n subscribers, e entries of r replicas and a
    ///   relay authors.
    func peersHold(_ version: VersionVector, exactly: Bool = true) -> String? {
        if let since = stability.lostSince, variant != .compactsWithStabilityLost {
            return "the stability file was lost (at \(since)): no peer's table yet"
                + (lossKeptForPeers ? " (the retire period passed; this daemon has peers, so only a peer's table ends the loss)" : "")
        }
        let peers = stability.peers
        for sub in subscribers.values where sub.role == .relay {
            guard let d = sub.replica, peers.entries[d] != nil || peers.retired.contains(d) else {
                return "a peer link of an unknown daemon \(sub.replica.map { "\($0)" } ?? "(unnamed)")"
            }
        }
        if let hold = peers.hold(version, me: document.replica, acknowledgedRetirements: variant != .retiresWithoutAgreement,
                                 exactly: exactly) { return hold.description }
        // An entry at this version written with concurrent operations outside it (its
        // ``PeerStability/Entry/held``): this copy must hold them first. (An agreed prefix
        // checks what its vouchers held: ``agreedPrefixNow``.)
        if exactly, variant != .ignoresPeersHeld,
           let d = peers.entries.keys.sorted().first(where: { !document.version.includes(peers.entries[$0]!.holds) }) {
            return "daemon \(d) vouched for its version holding operations this copy lacks"
        }
        return nil
    }

    /// Why this daemon does not compact now, in words (for a report or a log): not settled, not
    /// locally quiescent (and which senders are behind), or what of its peers holds it back
    /// (``peersHold(_:)``); "nothing" when it may (``compactionPoint(minOperations:)`` then gives a
    /// point, with at least one operation logged).
    ///
    /// - Complexity: that of ``localQuiescentVersion`` and ``peersHold(_:)``.
    public var compactionBlock: String {
        guard isSettled(minOperations: 0) else {
            let behind = subscribers.keys.sorted().filter { !isSettled(subscribers[$0]!) }.map { s in
                let sub = subscribers[s]!
                return "\(s) (\(sub.role.map { "\($0)" } ?? "no role"), replica \(sub.replica.map { "\($0)" } ?? "?"), "
                    + "seen \(sub.seen.map { "\($0)" } ?? "nothing"), queued \(!sub.outbox.isEmpty), snapshot due \(sub.snapshotDue))"
            }
            return "not settled: \(inFlight.count) batches in flight, \(document.pendingCount) operations waiting, "
                + "durable \(document.version == durableVersion), subscribers behind \(behind)"
        }
        guard let version = localQuiescentVersion else {
            let behind = stability.tracker.acknowledged.filter { $0.value != document.version }.keys.sorted()
            return "not locally quiescent: senders behind \(behind)"
        }
        guard isPeered else { return "nothing" }
        return peersHold(version) ?? "nothing"
    }

    /// The stability table, to every peer link that takes it, if it changed since it was last
    /// sent and `interval` has passed since then (coalesced; `now` and `interval` in the
    /// driver's clock). Kept for later if no link takes it, or the frame would not fit one.
    ///
    /// - Complexity: O(size) of the table.
    public mutating func gossip(now: UInt64, interval: UInt64) -> [Action] {
        guard gossipDirty, destroyedReason == nil, !stability.peers.entries.isEmpty else { return [] }
        if let lastGossip, now < lastGossip &+ interval { return [] }
        let targets = subscribers.keys.sorted().filter { subscribers[$0]!.gossips }
        guard !targets.isEmpty else { return [] }
        guard let frame = stabilityFrame() else { return [] }
        gossipDirty = false
        lastGossip = now
        return targets.map { .send($0, frame) }
    }

    /// Replaces the document with `document`, a peer's snapshot that holds everything this copy
    /// holds (``PeerSession/Action/behindFloor(_:snapshot:)``): every subscriber is cut off (each
    /// subscribes again, from what it holds; a catch-up behind the new floor is a snapshot).
    /// The driver writes the new document to its store first.
    ///
    /// - Precondition: nothing in flight; `document` includes this copy's version.
    /// - Complexity: O(s) for s subscribers.
    public mutating func replace(with document: ListDocument) -> [Action] {
        precondition(inFlight.isEmpty && document.version.includes(self.document.version), "a replacement that loses operations")
        var document = document
        document.pendingLimits = self.document.pendingLimits
        self.document = document
        partedHeldChecked = nil
        publishedMark = nil
        durableVersion = document.version
        durableCount = document.operationCount
        return cutSubscribers(reason: "the daemon's copy was replaced by a peer's snapshot; subscribe again")
    }

    /// Cuts every subscriber off (each subscribes again, from what it holds), with `reason`.
    ///
    /// - Complexity: O(s log s) for s subscribers.
    mutating func cutSubscribers(reason: String) -> [Action] {
        let cut = subscribers.keys.sorted()
        for s in cut { subscribers[s] = nil }
        presenceListeners = []
        activePresence = [:]
        return cut.map { .close($0, reason: reason) }
    }

    /// The operations this copy took from a peer link since its last compaction
    /// (``relayedOperations``): what the driver writes at the head of each new generation of its
    /// store (a snapshot, a compaction, a merge back), whose old log said so batch by batch.
    public var relayedRuns: OperationRuns { relayedOperations }

    /// Takes back what the store's log said came through a peer link (its relayed records, read
    /// when the driver opened or reopened the store): a merge back after a restart makes none of
    /// them again. Runs of this daemon's own replica are left out.
    ///
    /// - Complexity: O(g) for g runs.
    public mutating func noteRelayed(_ runs: OperationRuns) {
        guard variant != .forgetsRelayedOnRestart else { return }
        var runs = runs
        runs.remove(document.replica)
        relayedOperations.formUnion(runs)
    }

    /// Whether a gossip is waiting for its interval (the driver's timer asks).
    public var gossipDue: Bool { gossipDirty && !stability.peers.entries.isEmpty }

    /// Notes the authors of operations a batch from `sender` accepted: through a peer link, those
    /// this daemon does not count itself are relay authors; from a client, an author is counted
    /// here (no longer a relay author).
    ///
    /// - Complexity: O(k) for k operations.
    mutating func noteAuthors(of accepted: [ListOperation], from sender: SubscriberID?) {
        guard let sender, let sub = subscribers[sender], !accepted.isEmpty else { return }
        var authors = Set(accepted.map(\.id.replica))
        authors.remove(document.replica)
        if sub.role == .relay {
            for op in accepted where op.id.replica != document.replica {
                relayedOperations.insert(op)
            }
            let local = authors.filter { stability.isLocal($0) }
            if stability.peers.noteRelayAuthors(authors, now: stabilityClock, isLocal: { local.contains($0) }) { stabilityUnsaved = true }
        } else {
            for a in authors where stability.peers.local(a) { stabilityUnsaved = true }
        }
    }
}
