import ListCRDT

// When a daemon compacts, retires and gossips (Docs/Semantics.md §7): one decision that both the
// daemon's host (`DocumentHost.compactIfDue`) and the simulator's daemons take, so that what
// the simulator checks is what the daemon does. The driver only does the I/O it names: writing
// the stability, sending the table, compacting in memory and on disk, telling the floor.

/// When a settled document holds enough to be worth compacting (Docs/Semantics.md §7, "When it
/// is worth it"): `minOperations` operations logged since its last compaction, or bytes that a
/// compaction would free (``ListCRDT/ListDocument/reclaimableBytes``) of at least
/// `reclaimableFloor` and `reclaimableShare` of the document's bytes
/// (``ListCRDT/ListDocument/documentBytes``): a list of few, large, deleted items compacts
/// without waiting for thousands of operations.
public struct CompactionTrigger: Sendable, Equatable {
    /// The least number of operations logged since the last compaction worth compacting for.
    public var minOperations: Int
    /// The least reclaimable bytes worth compacting for, whatever the share (nil: the bytes
    /// trigger is off).
    public var reclaimableFloor: Int?
    /// The least share of the document's bytes, from 0 to 1, that must be reclaimable.
    public var reclaimableShare: Double

    /// The daemon's default share: half the document's bytes (`listsync serve --compact-dead-share`).
    public static let defaultShare = 0.5
    /// The daemon's default floor: 64 KiB (`listsync serve --compact-dead-floor`).
    public static let defaultFloor = 64 * 1024

    /// A trigger with these settings (the share clamped to 0...1, the operations to at least 1).
    public init(minOperations: Int, reclaimableFloor: Int? = CompactionTrigger.defaultFloor,
                reclaimableShare: Double = CompactionTrigger.defaultShare) {
        self.minOperations = max(minOperations, 1)
        self.reclaimableFloor = reclaimableFloor.map { max($0, 0) }
        self.reclaimableShare = min(max(reclaimableShare.isNaN ? 1 : reclaimableShare, 0), 1)
    }

    /// Only after `minOperations` operations (the bytes trigger off).
    public static func operations(_ minOperations: Int) -> CompactionTrigger {
        CompactionTrigger(minOperations: minOperations, reclaimableFloor: nil)
    }

    /// The reclaimable bytes that make a compaction worth it in a document of `documentBytes`:
    /// the floor, or the share of the document if greater; nil when the bytes trigger is off.
    public func reclaimableThreshold(documentBytes: Int) -> Int? {
        guard let floor = reclaimableFloor else { return nil }
        let share = (Double(max(documentBytes, 0)) * reclaimableShare).rounded(.up)
        return max(floor, share >= Double(Int.max) ? Int.max : Int(share))
    }

    /// Whether a document with `operations` logged since its last compaction, `reclaimable` bytes
    /// a compaction would free and `documentBytes` in all is worth compacting: at least one
    /// operation, and either trigger.
    ///
    /// - Complexity: O(1).
    public func isDue(operations: Int, reclaimable: Int, documentBytes: Int) -> Bool {
        guard operations >= 1 else { return false }
        if operations >= minOperations { return true }
        guard let threshold = reclaimableThreshold(documentBytes: documentBytes) else { return false }
        return reclaimable >= threshold
    }
}

/// The settings of compaction that the core's decision needs, in the driver's clocks.
public struct CompactionRule: Sendable, Equatable {
    /// A sender silent for this long is retired (the stability clock's units: a daemon counts
    /// seconds of the wall clock, the simulator virtual milliseconds).
    public var retireAfter: UInt64
    /// When a settled document is worth compacting (operations, or reclaimable bytes).
    public var trigger: CompactionTrigger
    /// The least number of operations logged since the last compaction worth compacting for
    /// (``trigger``'s).
    public var minOperations: Int {
        get { trigger.minOperations }
        set { trigger.minOperations = max(newValue, 1) }
    }
    /// The least time between two compactions (the driver's monotonic clock; 0: none).
    public var interval: UInt64
    /// The least time between two stability tables sent to the peer links (monotonic clock).
    public var gossipInterval: UInt64
    /// Peer daemons the operator declared gone for good (`--forget-peer`).
    public var forgottenPeers: Set<ReplicaID>
    /// Whether a document that is not quiescent is compacted at a stable prefix
    /// (Docs/Semantics.md §7, "A stable prefix"). Off in a rule made here; the daemon's policy
    /// (`listsync serve`, unless `--compact-quiescent-only`) and the simulator (unless
    /// `--compact-quiescent-only`) turn it on.
    public var stablePrefixes = false
    /// Whether this daemon has peers (it dials one, or a peer's link attached to it once; the
    /// driver knows). A document whose stability file was lost then stays lost until a peer's
    /// table arrives, whatever the time: its peers may have compacted without its clients' edits,
    /// and daemons are not retired by silence (Docs/Semantics.md §7, "A lost stability file").
    /// False: the retire period with no table also ends the loss (a daemon without peers).
    public var peered = false

    /// A rule with these settings; the trigger is `minOperations` operations or, with
    /// `reclaimableFloor` (nil: off), that many reclaimable bytes and `reclaimableShare` of the
    /// document (``CompactionTrigger``).
    public init(retireAfter: UInt64, minOperations: Int, interval: UInt64, gossipInterval: UInt64,
                forgottenPeers: Set<ReplicaID> = [], reclaimableFloor: Int? = nil,
                reclaimableShare: Double = CompactionTrigger.defaultShare) {
        self.retireAfter = retireAfter
        self.trigger = CompactionTrigger(minOperations: minOperations, reclaimableFloor: reclaimableFloor,
                                         reclaimableShare: reclaimableShare)
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
    /// the document is settled and worth compacting (``isSettled(_:)``, by the rule's
    /// ``CompactionRule/trigger``) and the rule's interval has passed since the last compaction
    /// point, the senders are refreshed (only then can that change the answer) and the
    /// compaction point taken (``compactionPoint(_:)``).
    ///
    /// - Parameters:
    ///   - stabilityNow: the stability clock (the rule's ``CompactionRule/retireAfter`` units).
    ///   - now: the driver's monotonic clock (the rule's intervals).
    /// - Complexity: that of ``refreshPeers(now:retireAfter:forgotten:)`` and ``compactionPoint(_:)``.
    public mutating func housekeeping(stabilityNow: UInt64, now: UInt64, rule: CompactionRule) -> Housekeeping {
        var step = Housekeeping()
        if rule.peered { ruledPeered = true }
        // A document that keeps moving is compacted at a stable prefix (Docs/Semantics.md §7,
        // "A stable prefix", "Peers while busy"): looking for one costs a pass over the history
        // (O(m × r)), so it is looked for once per interval at most, found or not.
        // With peers, only the offer (a pass over the history) waits for the interval: the
        // proposal, the answers and the compaction at an agreed prefix follow as soon as the
        // tables say so, each pass made once per version it is made for.
        let wait = compactionWait(rule)
        let peerPrefix = rule.stablePrefixes && isReadyForPeerPrefix
        let offerDue = peerPrefix && Self.hasPassed(wait, since: lastOffer, now: now)
        if isPeered {
            // This daemon's entry first, written down before it is gossiped; then its part in the
            // peers' stable prefix.
            let peers = refreshPeers(now: stabilityNow, retireAfter: rule.retireAfter, forgotten: rule.forgottenPeers, keepsLoss: rule.peered)
            step.saveStability = peers.changed
            step.retired = peers.retired
            step.forgotten = peers.forgotten
            if peerPrefix {
                let local = refreshStability(now: stabilityNow, retireAfter: rule.retireAfter, keepsLoss: rule.peered)
                step.retired += local.retired
                if offerDue { lastOffer = now }
                step.saveStability = takePeerPrefix(now: stabilityNow, trigger: rule.trigger, offer: offerDue)
                    || local.changed || step.saveStability
            }
            step.gossip = gossip(now: now, interval: rule.gossipInterval) + announceParted() + cutPartedHolders()
        }
        guard Self.hasPassed(wait, since: lastCompactionPoint, now: now) else { return step }
        let settled = isSettled(rule.trigger)
        let prefix = rule.stablePrefixes && Self.hasPassed(wait, since: lastPrefixSearch, now: now) && isReadyForPrefix(rule.trigger)
        guard settled || prefix || peerPrefix else { return step }
        let local = refreshStability(now: stabilityNow, retireAfter: rule.retireAfter, keepsLoss: rule.peered)
        step.retired += local.retired
        if settled { step.point = quiescentPoint(rule.trigger) }
        if step.point == nil, peerPrefix { step.point = takePeerPrefixPoint(rule.trigger) }
        if step.point == nil, prefix, let stable = sendersStableVersion,
           !(document.historyFloor?.includes(stable) ?? false) {
            lastPrefixSearch = now
            step.point = prefixPoint(within: stable, rule.trigger)
        }
        // Written once: a change of who counts, and always before a compaction.
        step.saveStability = step.saveStability || local.changed || step.point != nil
        if step.point != nil { lastCompactionPoint = now }
        return step
    }

    /// How many times the trigger's operations since the floor make a document *overdue*: its
    /// compactions, and its searches for a stable prefix, are then an eighth of the rule's
    /// interval apart at least, not the whole interval, so that the history a busy list keeps
    /// stays near this many times `--compact-after` whatever the interval (Docs/Semantics.md §7,
    /// "When it is worth it").
    public static let overdueFactor = 4

    /// The least time between two compaction points (and two searches for a prefix): the rule's
    /// ``CompactionRule/interval``, or an eighth of it while the document holds at least
    /// ``overdueFactor`` times the trigger's ``CompactionTrigger/minOperations`` operations
    /// since its floor.
    public func compactionWait(_ rule: CompactionRule) -> UInt64 {
        let overdue = document.operationCount >= Self.overdueFactor * max(rule.trigger.minOperations, 1)
        return overdue ? rule.interval / 8 : rule.interval
    }

    /// Whether `wait` has passed since `last` (nil: never, so it has) at `now`.
    static func hasPassed(_ wait: UInt64, since last: UInt64?, now: UInt64) -> Bool {
        guard let last else { return true }
        return now >= last && now - last >= wait
    }
}
