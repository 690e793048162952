import ListCRDT
import ListSync

// A daemon lost for good (`listsync simulate --lose-daemon`): its machine is gone with its data
// folder, and the operator forgets it on one of the others (`listsync serve --forget-peer`,
// Docs/Semantics.md §7, "Forgetting a daemon"). Daemons are not retired by silence, so until then
// its last entry holds compaction back on every daemon that knew it; once forgotten on one, the
// gossip forgets it on the others, and they compact again (checked by ``settleCompaction()``).
//
// It is lost once the run is quiet, so that it holds nothing the others lack: what only a
// forgotten daemon held is lost by design (a device keeps showing an edit only it acknowledged),
// and the checks could not tell that loss from a fault. What is checked is the rest: the others
// and every client converge, nothing they acknowledged is lost, and they compact once more.

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
        }
        if configuration.forgetsLostDaemon {
            let forgotten = daemons[l].replica
            daemons[rng.below(l)].policy.compaction?.forgottenPeers.insert(forgotten)
        }
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
