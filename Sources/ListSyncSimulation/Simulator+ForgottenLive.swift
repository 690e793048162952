import ListCRDT
import ListSync

// A daemon forgotten while it still runs (`listsync simulate --forget-live`): an operator's
// mistake. The last daemon is only cut off from its peers (every peer link of it resets and none
// comes back for a while), and its operator, taking it for lost, forgets it on one of the others
// (`listsync serve --forget-peer`, Docs/Semantics.md §7, "Forgetting a daemon"); the gossip
// forgets it on the rest, and they compact without it. Its own clients keep editing on it
// meanwhile (their daemons are not reconfigured: the operator told the daemons only). Later the
// cut heals: its links come back, and its copy holds acknowledged operations that the others'
// floor passed. The oracle demands what it always does: every acknowledged operation on every
// copy, every copy converged, `copies parted: 0`.

extension Simulator {
    /// When the cut starts and when it heals, as edit numbers drawn from the seed: it starts in
    /// the second quarter of the edits and lasts a quarter of them or more; a heal at or past
    /// the last edit comes once the run is quiet, after the others compacted
    /// (``healForgottenLive(settlingFirst:)``).
    mutating func scheduleForgetLive() -> (at: Int, heal: Int)? {
        guard configuration.forgetsLiveDaemon, compacting, daemons.count > 1 else { return nil }
        let k = configuration.operations, quarter = max(k / 4, 1)
        let at = quarter + rng.below(quarter)
        return (at, at + quarter + rng.below(k / 2 + 1))
    }

    /// Cuts the last daemon off from its peers (its links reset, kept down until
    /// ``healForgottenLive(settlingFirst:)``) and forgets it on one of the others, picked at
    /// random, as its operator would with `--forget-peer`. Its clients stay connected to it.
    mutating func cutAndForgetLive() {
        let l = daemons.count - 1
        precondition(daemons.count > 1 && cutOff == nil && lost == nil, "a daemon to cut off, and another to forget it")
        cutOff = l
        for other in daemons.indices where other != l && configuration.areLinked(l, other, daemons: daemons.count) {
            reset(daemon: l, other: other)
        }
        let forgetting = rng.below(l)
        if configuration.trace { trace("d\(l) is cut off from its peers; its operator forgets it on d\(forgetting) while it still runs") }
        let forgotten = daemons[l].replica
        daemons[forgetting].policy.compaction?.forgottenPeers.insert(forgotten)
        report.daemonsForgottenLive += 1
        compactionsBeforeCut = report.compactions - report.compactionsPerDaemon[l]
    }

    /// The cut heals: the forgotten daemon's links come up again. With `settlingFirst` (the
    /// edits are over), the network heals and the others first run until they compacted what
    /// they hold (at most 30 anti-entropy intervals per client), as ``unhideDaemon()`` does.
    /// Counts what the forgotten daemon acknowledged that no other daemon holds now, and the
    /// others' compactions during the cut (the case is provoked when both are some).
    mutating func healForgottenLive(settlingFirst: Bool) {
        guard let l = cutOff else { return }
        if settlingFirst {
            network.healAll()
            network.faults = NetworkFaults(latency: configuration.faults.latency)
            let minOperations = configuration.compactAfter ?? 0
            for _ in 1...(30 * clients.count) where daemons.indices.contains(where: { $0 != l && daemons[$0].core.document.operationCount >= minOperations }) {
                step(until: network.now + configuration.antiEntropyInterval)
            }
        }
        let alone = daemons[l].acknowledged.filter { id in
            !daemons.indices.contains { $0 != l && daemons[$0].core.document.version.contains(id) }
        }
        let compactedWithout = report.compactions - report.compactionsPerDaemon[l] - compactionsBeforeCut
        report.forgottenLiveAlone += alone.count
        report.forgottenLiveCompactions += compactedWithout
        if !alone.isEmpty && compactedWithout > 0 { report.forgottenLiveProvoked += 1 }
        if configuration.trace {
            trace("the cut of d\(l) heals: it alone holds \(alone.count) operations it acknowledged (first \(alone.min().map { "\($0)" } ?? "none")); the others compacted \(compactedWithout) times without it")
        }
        cutOff = nil
        for (a, b) in configuration.links(daemons.count) where (a == l || b == l) && daemons[a].links[b] == nil { connectLink(a, b) }
    }
}
