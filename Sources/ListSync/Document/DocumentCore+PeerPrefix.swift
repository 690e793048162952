import ListCRDT

// Compaction at a stable prefix on a document that peer daemons sync while its devices keep
// editing (Docs/Semantics.md §7, "Peers while busy"). Each daemon's entry of the stability table
// offers the prefix it could vouch for (``PeerStability/Entry/offer``); the least daemon of the
// table (``PeerStability/prefixLeader``) proposes a version within the meet of the offers as its
// own entry's version; every other daemon takes it as its own version when it can vouch for it
// (its senders acknowledged it, and everything it holds outside it is causally after it), or says
// it never can (``PeerStability/Entry/refused``); once every entry names the same version, each
// daemon compacts there, as at a quiescent point every daemon reported (``peersHold(_:)``).

extension DocumentCore {
    /// What this daemon says of a version proposed as the next stable prefix.
    enum PrefixAnswer: Equatable {
        /// It vouches for it now: it may become its entry's version.
        case take
        /// Not yet (it lacks some of it, or its senders have not acknowledged all of it).
        case wait
        /// Never (it does not include what this daemon vouched for already, or an operation held
        /// here outside it is not causally after it).
        case refuse
    }

    /// Whether this daemon takes part in the stable prefixes of its peers now: peered, nothing in
    /// flight or waiting for its causes, all of it durable, not merged back since it last
    /// published (its entry may name what its copy no longer holds).
    ///
    /// - Complexity: O(n) for n subscribers.
    public var isReadyForPeerPrefix: Bool {
        variant != .compactsOnlyWhenQuiescent && failure == nil && destroyedReason == nil && inFlight.isEmpty
            && document.pendingCount == 0 && document.version == durableVersion && partedVersion == nil && isPeered
    }

    /// Whether this daemon can vouch for `proposal` as its entry's version (Docs/Semantics.md §7,
    /// "Peers while busy"), `stable` being its senders' stable version (``sendersStableVersion``):
    /// it includes what this daemon vouched for already and the floor, and goes past the floor
    /// (else never); this copy holds it whole and the senders acknowledged it (else not yet);
    /// every operation held here outside it is causally after it (else never).
    ///
    /// - Complexity: O(m × r) for m operations logged since the floor and r replicas
    ///   (``ListDocument/compactablePrefix(within:)``).
    func answer(_ proposal: VersionVector, stable: VersionVector?) -> PrefixAnswer {
        let published = stability.peers.entries[document.replica]?.version ?? VersionVector()
        guard proposal.includes(published) else { return .refuse }
        if let floor = document.historyFloor, floor.includes(proposal) || !proposal.includes(floor) { return .refuse }
        guard document.version.includes(proposal), let stable, stable.includes(proposal) else { return .wait }
        if variant == .peerPrefixIgnoresHeldOperations { return .take }
        return prefix(within: proposal) == proposal ? .take : .refuse
    }

    /// This daemon's part in the peers' stable prefix, at `now` (the stability clock): its offer
    /// is brought up to date (the compactable prefix of its senders' stable version, when that
    /// includes the offer before; else the offer before, or what it vouched for already); the leader proposes the next prefix (``nextProposal(stable:trigger:)``)
    /// as its entry's version; another daemon takes the leader's proposal as its own version, or
    /// refuses it. Nothing when not ready (``isReadyForPeerPrefix``). Returns whether the table
    /// changed (write it down, gossip it).
    ///
    /// The caller refreshes the senders first (``refreshStability(now:retireAfter:)``).
    ///
    /// - Complexity: O(s × e) for s senders and e entries, and O(m × r) per
    ///   ``ListDocument/compactablePrefix(within:)`` (at most three) for m operations logged since
    ///   the floor and r replicas.
    mutating func takePeerPrefix(now: UInt64, trigger: CompactionTrigger, offer offerDue: Bool = true) -> Bool {
        guard isReadyForPeerPrefix else { return false }
        let me = document.replica
        var changed = stability.adoptClaimedAuthors(me: me, now: now)
        let stable = sendersStableVersion
        let mine = stability.peers.entries[me]
        let published = mine?.version ?? VersionVector()
        // The offer only grows (a hint, not a promise: a proposal within it may still have to
        // wait here), so that an entry does not go back and forth, gossiped each time, while a
        // subscriber is behind for a moment; it is looked for once per interval (`offerDue`).
        let previous = mine?.offer ?? published
        let looked = offerDue ? stable.flatMap { prefix(within: $0) } : nil
        let offer = looked.flatMap { $0.includes(previous) ? $0 : nil } ?? previous
        var refused = mine?.refused ?? VersionVector()
        changed = stability.peers.reportPrefix(me, offer: offer, refused: refused, now: now) || changed
        if let leader = stability.peers.prefixLeader {
            if leader == me {
                if let proposal = nextProposal(stable: stable, trigger: trigger) {
                    changed = publishPrefix(proposal, now: now) || changed
                }
            } else if let proposal = stability.peers.entries[leader]?.version,
                      proposal != published, proposal != VersionVector(), proposal != refused {
                switch answer(proposal, stable: stable) {
                case .take: changed = publishPrefix(proposal, now: now) || changed
                case .refuse:
                    // What this daemon could vouch for within the proposal becomes its offer (the
                    // one time an offer goes down): the leader's next meet is within it. Where the
                    // daemons' clients edit concurrently, a proposal made from offers taken at
                    // different moments often holds, outside it here, edits not after it.
                    refused = proposal
                    let within = prefix(within: proposal) ?? document.historyFloor ?? VersionVector()
                    changed = stability.peers.reportPrefix(me, offer: within, refused: refused, now: now) || changed
                case .wait: break
                }
            }
        }
        noteVouchers()
        if changed { gossipDirty = true }
        return changed
    }

    /// The leader's next proposal, or nil: only once its current one (its entry's version) is
    /// done with (none yet, compacted at here, refused by another daemon, or agreed on by every
    /// daemon but not worth compacting at here), the compactable prefix here of the meet of every
    /// daemon's offer, if this daemon can vouch for it, it differs from the current one and it
    /// holds the trigger's operations since the floor.
    ///
    /// - Complexity: O(e × r) for e entries of r replicas, and O(m × r) per
    ///   ``ListDocument/compactablePrefix(within:)`` (at most three).
    mutating func nextProposal(stable: VersionVector?, trigger: CompactionTrigger) -> VersionVector? {
        let me = document.replica
        let peers = stability.peers
        let current = peers.entries[me]?.version ?? VersionVector()
        let done = current == VersionVector() || (document.historyFloor?.includes(current) ?? false)
            || peers.isRefused(current, leader: me)
            || (peers.agree(on: current) && !isPrefixPoint(current, trigger))
        // Looked for once per meet of the offers (the offers change once per interval at most),
        // and again while a candidate has to wait here (a cheap answer).
        guard done, let meet = peers.offersMeet else { return nil }
        if meet == proposedFrom { return nil }
        guard let candidate = prefix(within: meet), candidate != current else {
            proposedFrom = meet
            return nil
        }
        let answer = answer(candidate, stable: stable)
        if answer != .wait { proposedFrom = meet }
        guard answer == .take, isPrefixPoint(candidate, trigger) else { return nil }
        return candidate
    }

    /// Whether this daemon may compact at `version`, as far as its own copy goes:
    /// ``prefixPoint(within:_:)`` is `version` (every operation held outside it causally after
    /// it, and it holds the trigger's operations since the floor). Asked once per version and
    /// floor (``prefixChecks``): the operations taken later are after an agreed prefix, and
    /// those within it do not change; but those within a version past it that vouched for it
    /// need not be after it, and ``noteVouchers()`` has it asked again once it counts one.
    ///
    /// - Complexity: O(m × r) the first time for m operations logged since the floor and r
    ///   replicas; O(r) after.
    mutating func isPrefixPoint(_ version: VersionVector, _ trigger: CompactionTrigger) -> Bool {
        if prefixChecks == nil || prefixChecks!.floor != document.historyFloor { prefixChecks = (document.historyFloor, [:]) }
        if let known = prefixChecks!.checked[version] { return known }
        let ok = prefixPoint(within: version, trigger) == version
        prefixChecks!.checked[version] = ok
        return ok
    }

    /// This daemon's entry names `version`, a stable prefix it vouches for (``answer(_:stable:)``),
    /// with the replicas it counts now (each acknowledged it) and, where it keeps concurrent
    /// operations (``keepsConcurrent``), what its copy holds now (``PeerStability/Entry/held``:
    /// every operation a replica it claims made before it saw `version`). Returns whether the
    /// entry changed.
    ///
    /// - Complexity: that of ``PeerStability/publish(_:version:claimed:retired:now:heartbeat:held:)``.
    mutating func publishPrefix(_ version: VersionVector, now: UInt64) -> Bool {
        stability.peers.publish(document.replica, version: version, claimed: stability.claimed,
                                retired: stability.tracker.retired, now: now, held: keepsConcurrent ? document.version : nil)
    }

    /// Notes which daemons' entries vouch, as this daemon has seen them, for its own entry's
    /// version `V` (``prefixVouchers``); once every daemon of the table does, `V` is agreed
    /// (``agreedPrefix``). An entry seen at exactly `V` was written vouching for it, and stays
    /// true of the moment it was written: the leader may move on to its next proposal (after it
    /// compacted) before this daemon sees every other daemon's entry at this one, and this daemon
    /// still compacts there. An entry at a version `W` past `V` that this copy holds whole vouches
    /// for `V` too (Docs/Semantics.md §7, "An agreement not missed"): its daemon's senders had
    /// acknowledged `W` and every operation it held outside `W` was after `W`, hence after `V`;
    /// those inside `W` this copy holds, and its own compaction checks each of them is after `V`
    /// (``peerPrefixPoint(_:)`` and ``ListCRDT/ListDocument/compact(stable:)``); the versions such
    /// entries named are kept beside (``agreedPrefix``'s `holds`), and this copy must still hold
    /// them to compact at `V`. Such an entry moved on before this daemon saw it at `V` (a
    /// quiescent version published over a proposal it took), which left `V` unagreed here for
    /// minutes. Nothing is noted while the stability file is lost
    /// (``DocumentStability/lostSince``): the table then names this daemon alone, whose own entry
    /// would be an agreement of one (``agreedPrefixNow`` also refuses such an agreement once the
    /// peers' table names the others).
    ///
    /// - Complexity: O(e × r) for e entries of r replicas.
    mutating func noteVouchers() {
        let entries = stability.peers.entries
        guard stability.lostSince == nil, let version = entries[document.replica]?.version, version != VersionVector() else { return }
        if prefixVouchers?.version != version { prefixVouchers = (version, [], VersionVector()) }
        for (d, e) in entries {
            if e.version == version {
                prefixVouchers!.daemons.insert(d)
                // What its copy held when it vouched: operations not after `V` its claimed
                // replicas made (Docs/Semantics.md §7, "Peers compacting under a chain of
                // concurrent edits"); this copy must hold them before compacting at `V`.
                // (Without one, `V` itself, which the compaction needs whole anyway.)
                if variant != .ignoresPeersHeld, let held = e.held { prefixVouchers!.holds.formUnion(held) }
            } else if variant != .agreesOnlyAtExactVersions, e.version.includes(version), document.version.includes(e.version),
                      !prefixVouchers!.daemons.contains(d) {
                prefixVouchers!.daemons.insert(d)
                prefixVouchers!.holds.formUnion(variant == .ignoresPeersHeld ? e.version : e.holds)
                // Its operations within `W` and outside `V` may have come after this copy last
                // checked `V` (``isPrefixPoint(_:_:)``): checked again, with them.
                if variant != .keepsPrefixCheckOnVouchers { prefixChecks?.checked[version] = nil }
            }
        }
        if Set(entries.keys).isSubset(of: prefixVouchers!.daemons) { agreedPrefix = prefixVouchers }
    }

    /// ``agreedPrefix``'s version while every daemon the table names now is one of those seen at
    /// it (a daemon the table learned of since, a peer's table after a lost stability file,
    /// has not vouched for it) and this copy holds every version past it that vouched for it
    /// (a merge back may have taken some out); nil otherwise.
    ///
    /// - Complexity: O(e) for e entries.
    var agreedPrefixNow: VersionVector? {
        guard let agreed = agreedPrefix, stability.peers.entries.keys.allSatisfy(agreed.daemons.contains),
              document.version.includes(agreed.holds) else { return nil }
        return agreed.version
    }

    /// The stable prefix at which a peered document may be compacted now, though it is not
    /// quiescent: the latest version every daemon's entry was seen at here (``agreedPrefix``),
    /// if nothing else of the peers holds it back (``peersHold(_:exactly:)``: every link a known
    /// daemon, every entry at it or past it, retirements acknowledged, relay authors claimed), it
    /// is past the floor, the senders still acknowledge it, every operation held here outside it
    /// is causally after it and it holds the trigger's operations since the floor. Nil
    /// otherwise, or when not ready (``isReadyForPeerPrefix``).
    ///
    /// - Complexity: that of ``peersHold(_:exactly:)`` and ``sendersStableVersion``, then
    ///   O(m × r) for m operations logged since the floor (``prefixPoint(within:_:)``).
    public func peerPrefixPoint(_ trigger: CompactionTrigger) -> VersionVector? {
        var core = self
        return core.takePeerPrefixPoint(trigger)
    }

    /// ``peerPrefixPoint(_:)``, noting its pass over the history (``isPrefixPoint(_:_:)``).
    mutating func takePeerPrefixPoint(_ trigger: CompactionTrigger) -> VersionVector? {
        let own = stability.peers.entries[document.replica]?.version
        guard isReadyForPeerPrefix, let version = variant == .peerPrefixWithoutAgreement ? own : agreedPrefixNow,
              version != VersionVector(), !(document.historyFloor?.includes(version) ?? false) else { return nil }
        guard variant == .peerPrefixWithoutAgreement || peersHold(version, exactly: false) == nil else { return nil }
        guard let stable = sendersStableVersion, stable.includes(version) else { return nil }
        return isPrefixPoint(version, trigger) ? version : nil
    }
}

extension DocumentCore {
    /// Why a peered document does not compact at a stable prefix now, in words (for `status`,
    /// `prefix_waits_for`; Docs/Semantics.md §7, "Peers while busy"): not ready and why, no
    /// leader and which entries lack an offer, or each entry's version and offer beside the
    /// senders' stable version and the agreed prefix (versions as the sum of their counters,
    /// which only grows: a lagging one shows). "not peered" without peers.
    ///
    /// - Complexity: O(n × r + s × r log r + e × r) for n subscribers, s senders, e entries and
    ///   r replicas.
    public var peerPrefixBlock: String {
        guard isPeered else { return "not peered" }
        // Said first, then where the agreement stands all the same (`status` is answered between
        // two turns of the host, often while a batch's append is on its way).
        let ready = isReadyForPeerPrefix ? "ready" : "not ready now (\(inFlight.count) batches in flight, "
            + "\(document.pendingCount) operations waiting, durable \(document.version == durableVersion), "
            + "merged back since it last published \(partedVersion != nil))"
        func sum(_ v: VersionVector?) -> String {
            guard let v else { return "none" }
            return "Σ\(v.entries.reduce(UInt64(0)) { $0 &+ $1.counter })"
        }
        let peers = stability.peers
        guard let leader = peers.prefixLeader else {
            return "\(ready); no leader: entries without an offer \(peers.entries.filter { $0.value.offer == nil }.keys.sorted())"
        }
        var words = "\(ready); leader \(leader); here \(sum(document.version)), floor \(sum(document.historyFloor)), "
            + "senders' stable version \(sum(sendersStableVersion)), agreed \(sum(agreedPrefix?.version))"
        for (d, e) in peers.entries.sorted(by: { $0.key < $1.key }) {
            words += "; \(d == document.replica ? "this daemon" : "\(d)"): version \(sum(e.version)), offer \(sum(e.offer))"
                + (e.refused == VersionVector() ? "" : ", refused \(sum(e.refused))")
        }
        return words
    }
}
