import ListCRDT

// When a daemon compacts, retires and gossips (Docs/Semantics.md §7): one decision that both the
// daemon's host (`DocumentHost.compactIfDue`) and the simulator's daemons take, so that what
// the simulator checks is what the daemon does. The driver only does the I/O it names: writing
// the stability, sending the table, compacting in memory and on disk, telling the floor.

/// The settings of compaction that the core's decision needs, in the driver's clocks.
public struct CompactionRule: Sendable, Equatable {
    /// A sender silent for this long is retired (the stability clock's units: a daemon counts
    /// seconds of the wall clock, the simulator virtual milliseconds).
    public var retireAfter: UInt64
    /// The least number of operations logged since the last compaction worth compacting for.
    public var minOperations: Int
    /// The least time between two compactions (the driver's monotonic clock; 0: none).
    public var interval: UInt64
    /// The least time between two stability tables sent to the peer links (monotonic clock).
    public var gossipInterval: UInt64
    /// Peer daemons the operator declared gone for good (`--forget-peer`).
    public var forgottenPeers: Set<ReplicaID>

    /// A rule with these settings.
    public init(retireAfter: UInt64, minOperations: Int, interval: UInt64, gossipInterval: UInt64,
                forgottenPeers: Set<ReplicaID> = []) {
        self.retireAfter = retireAfter
        self.minOperations = max(minOperations, 1)
        self.interval = interval
        self.gossipInterval = gossipInterval
        self.forgottenPeers = forgottenPeers
    }
}

/// What ``DocumentCore/housekeeping(stabilityNow:now:rule:)`` decided; the driver does it in
/// this order: write the stability (``saveStability``), send ``gossip``, then, with a ``point``,
/// compact (``DocumentCore/compact(at:)``, the snapshot and the log's trim) and send
/// ``DocumentCore/floorAnnouncements()``.
public struct Housekeeping: Sendable {
    /// Whether the stability changed in a way to write down now (always before a compaction).
    public var saveStability = false
    /// Senders retired now (silent past the rule's period), devices and peer daemons alike.
    public var retired: [ReplicaID] = []
    /// Peer daemons forgotten now on the operator's word.
    public var forgotten: [ReplicaID] = []
    /// The stability table to the peer links (``DocumentCore/gossip(now:interval:)``).
    public var gossip: [DocumentCore.Action] = []
    /// Where to compact now, or nil.
    public var point: VersionVector?
}

extension DocumentCore {
    /// The daemon's housekeeping of the document's stability, after every batch and `seen`, a
    /// peer's table, and about once a second: with peers, this daemon's entry is refreshed
    /// (silent senders retired, forgotten daemons dropped) and the table gossiped; then, once
    /// the document is settled (``isSettled(minOperations:)``) and the rule's interval has passed
    /// since the last compaction point, the senders are refreshed (only then can that change
    /// the answer) and the compaction point taken (``compactionPoint(minOperations:)``).
    ///
    /// - Parameters:
    ///   - stabilityNow: the stability clock (the rule's ``CompactionRule/retireAfter`` units).
    ///   - now: the driver's monotonic clock (the rule's intervals).
    /// - Complexity: that of ``refreshPeers(now:retireAfter:forgotten:)`` and ``compactionPoint(minOperations:)``.
    public mutating func housekeeping(stabilityNow: UInt64, now: UInt64, rule: CompactionRule) -> Housekeeping {
        var step = Housekeeping()
        if isPeered {
            // This daemon's entry first, written down before it is gossiped.
            let peers = refreshPeers(now: stabilityNow, retireAfter: rule.retireAfter, forgotten: rule.forgottenPeers)
            step.saveStability = peers.changed
            step.retired = peers.retired
            step.forgotten = peers.forgotten
            step.gossip = gossip(now: now, interval: rule.gossipInterval)
        }
        guard now >= compactionNotBefore, isSettled(minOperations: rule.minOperations) else { return step }
        let local = refreshStability(now: stabilityNow, retireAfter: rule.retireAfter)
        step.retired += local.retired
        step.point = compactionPoint(minOperations: rule.minOperations)
        // Written once: a change of who counts, and always before a compaction.
        step.saveStability = step.saveStability || local.changed || step.point != nil
        if step.point != nil { compactionNotBefore = now &+ rule.interval }
        return step
    }
}
