import ListCRDT
import ListSync

// A daemon lost for good (`listsync simulate --lose-daemon`): its machine is gone with its data
// folder, and the operator forgets it on one of the others (`listsync serve --forget-peer`,
// Docs/Semantics.md §7, "Forgetting a daemon"). Daemons are not retired by silence, so until then
// its last entry holds compaction back on every daemon that knew it; once forgotten on one, the
// gossip forgets it on the others, and they compact again (checked by ``settleCompaction()``).
//
// `--lose-daemon` loses it once the run is quiet, so that it holds nothing the others lack.
// `--lose-daemon-early` loses it right after a client counts acknowledged an edit of its own that
// no other daemon holds (its relay is lost with it): the device, its daemons reconfigured without
// the lost one, sends that edit again (Docs/Semantics.md §7, "An edit only a forgotten daemon
// held"). Either way the others and every client converge, nothing any daemon acknowledged (the
// lost one included) is missing from a copy, and they compact once more.

extension Simulator {
    /// Loses the last daemon for good: every connection to it resets and nothing reaches it
    /// again; the operator takes it out of every device's daemons (its clients reconnect to
    /// another daemon) and forgets it on one of the others, picked at random.
    mutating func loseDaemon() {
        let l = daemons.count - 1
        precondition(daemons.count > 1 && lost == nil, "a daemon to lose, and another to go on")
        resetConnections(of: l)
        lost = l
        report.daemonsLost += 1
        // The operator takes it out of every device's daemons; one that knew no other is given
        // another, picked at random.
        let gone = Self.daemonName(l)
        for c in clients.indices where clients[c].reconnect.addresses.contains(gone) {
            var known = clients[c].reconnect.addresses.filter { $0 != gone }
            if known.isEmpty { known = [Self.daemonName(rng.below(l))] }
            clients[c].reconnect.configure(known)
            if clients[c].daemon == l { clients[c].daemon = Self.daemonIndex(known[clients[c].reconnect.current]) }
            // Lost early: a device given its new daemons is relaunched with them (SyncClient's
            // daemons are fixed for its life): it connects again, and catches up afresh.
            else if configuration.losesDaemonEarly, clients[c].connected { reset(daemon: clients[c].daemon, other: clients[c].node) }
        }
        if configuration.forgetsLostDaemon {
            let forgotten = daemons[l].replica
            daemons[rng.below(l)].policy.compaction?.forgottenPeers.insert(forgotten)
        }
    }

    /// `--lose-daemon-early`: a frame from daemon `from` reached client `c`. If `from` is the last
    /// daemon and the client now counts acknowledged an operation of its own that `from`
    /// acknowledged and no other daemon holds, `from` is lost for good now (its relays in flight
    /// with it) and forgotten (``loseDaemon()``).
    ///
    /// - Complexity: O(a × d) for the a operations `from` acknowledged and d daemons.
    mutating func loseDaemonIfUnrelayed(from: Int, to c: Int) {
        guard lost == nil, from == daemons.count - 1, daemons.count > 1, compacting else { return }
        let own = clients[c].document.replica, counted = machines[c].acknowledged[own]
        guard counted > 0 else { return }
        let unrelayed = daemons[from].acknowledged.filter { id in
            id.replica == own && id.counter <= counted
                && !daemons.indices.contains { $0 != from && daemons[$0].core.document.version.contains(id) }
        }
        guard let first = unrelayed.min() else { return }
        if configuration.trace { trace("d\(from) is lost for good right after c\(c) counted \(first) acknowledged (\(unrelayed.count) operations only it holds)") }
        report.daemonsLostEarly += 1
        loseDaemon()
    }

    /// After the run: every other daemon forgot the lost one (the operator told one; the gossip,
    /// the others), so none counts it any longer.
    mutating func checkLostDaemonForgotten() {
        guard let lost, configuration.forgetsLostDaemon else { return }
        let gone = daemons[lost].replica
        for d in daemons.indices where d != lost && daemons[d].core.stability.peers.entries[gone] != nil {
            report.failures.append("daemon \(d) still counts daemon \(lost), lost for good and forgotten")
        }
    }
}
