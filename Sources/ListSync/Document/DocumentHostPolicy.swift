import ListCRDT

// The daemon's policy for one resident document, as a state machine with no I/O and no clock of
// its own: when to snapshot the log, when to write the stability down, when to refresh it
// (retiring silent senders), gossip it and compact. The daemon's host (`DocumentHost`) and the
// simulator's daemons (`SimulatedDaemon`) both feed it the same events and do the I/O its
// actions name, so that what the simulator checks is the daemon's decision, not a copy of it.

/// When a daemon snapshots, writes its stability down and compacts one document
/// (Docs/Storage.md, "Snapshots"; Docs/Semantics.md §7): events in, actions out.
///
/// The driver holds the document's ``DocumentCore`` and passes it to each call; the policy keeps
/// only the snapshot threshold. Actions are done in their order; the two that write the store
/// report back: ``Action/snapshot`` with ``snapshotWritten(snapshotBytes:)`` or
/// ``snapshotFailed(logBytes:retryNextBatch:)``, ``Action/compact(floor:report:)`` with
/// ``compactionWritten(core:snapshotBytes:)`` (the floor is told only once it is durable).
public struct DocumentHostPolicy: Sendable {
    /// When to compact, in the driver's clocks (nil: the daemon never compacts, and peer
    /// daemons' stability tables are ignored).
    public var compaction: CompactionRule?
    /// The log size past which the document is snapshotted (a new generation).
    public let snapshotLogBytes: Int64
    /// Where the next snapshot check fires: past both the threshold and the last snapshot's size
    /// (a large document is not snapshotted again for every few bytes logged).
    public private(set) var nextSnapshotAt: Int64

    /// What the driver does for an event, in order.
    public enum Action: Equatable, Sendable {
        /// Write the core's document as the store's next snapshot (a new generation), then
        /// report with ``DocumentHostPolicy/snapshotWritten(snapshotBytes:)`` or
        /// ``DocumentHostPolicy/snapshotFailed(logBytes:retryNextBatch:)``.
        case snapshot
        /// Write the core's ``DocumentCore/stability`` down (it changed in a way that matters,
        /// or a compaction follows).
        case saveStability
        /// Frames of the core to deliver: the floor, the stability table (only `.send`).
        case send([DocumentCore.Action])
        /// Senders retired now (silent past the rule's period), for the log and metrics.
        case retired([ReplicaID])
        /// Peer daemons forgotten now on the operator's word, for the log.
        case forgotten([ReplicaID])
        /// The core compacted its document in memory at `floor`: write it as the store's
        /// compacted snapshot (a new generation, the old log dropped), then report with
        /// ``DocumentHostPolicy/compactionWritten(core:snapshotBytes:)``.
        case compact(floor: VersionVector, report: CompactionReport)
        /// The core refused its own compaction point (a fault; nothing changed): log it.
        case compactionRefused(CompactionError)
        /// The core keeps operations waiting on ones a peer parted in a merge back
        /// (``DocumentCore/waitsOnParted``), or holds such originals (logged since its floor)
        /// (``DocumentCore/holdsPartedOriginals()``): take ``DocumentCore/remakePartedWaiting()``, write
        /// its document as the store's next generation (``ListStore`` `DocumentStore.replace(with:)`),
        /// then call ``DocumentCore/replace(with:parting:)`` and do its actions. Nothing if it
        /// gives nil by then.
        case remakeParted
    }

    /// What happened to the document, as the driver tells it.
    public enum Event: Sendable {
        /// An append's round committed (after ``DocumentCore/durable(ticket:)``, before the
        /// batches it released go out); `logBytes` is the log's size now (nil: unknown).
        case committed(logBytes: Int64?)
        /// The batches a commit released went out: the document may be due for compaction.
        case released
        /// A subscriber's `seen` (``DocumentCore/seen(_:replica:version:role:now:)``).
        case seen(SubscriberID, replica: ReplicaID, version: VersionVector, role: SeenRole)
        /// A peer daemon's stability table (``DocumentCore/peerStability(_:from:entries:now:)``).
        case peerStability(SubscriberID, from: ReplicaID, entries: [ReplicaID: PeerStability.Entry])
        /// A device's own edits it made again (``DocumentCore/remade(_:ranges:now:)``).
        case remade(SubscriberID, ranges: PartedRanges)
        /// The daemon's housekeeping timer (about once a second; the simulator's timers).
        case tick
        /// The shared log asks for a snapshot of this document (its oldest segment holds records of it).
        case checkpoint(logBytes: Int64?)
        /// The document is unloaded or the daemon stops: a snapshot if the log is large.
        case unloading(logBytes: Int64?)
        /// The store closes: the stability written down a last time.
        case closing
    }

    /// A policy with these settings, for a document whose last snapshot is `snapshotBytes` long.
    public init(snapshotLogBytes: Int64, snapshotBytes: Int64, compaction: CompactionRule?) {
        self.snapshotLogBytes = snapshotLogBytes
        self.compaction = compaction
        nextSnapshotAt = max(snapshotLogBytes, snapshotBytes)
    }

    /// Decides what to do about `event`.
    ///
    /// - Parameters:
    ///   - core: the document's core (housekeeping and compaction change it).
    ///   - stabilityNow: the stability clock (the rule's ``CompactionRule/retireAfter`` units:
    ///     the daemon's wall-clock seconds, the simulator's virtual milliseconds).
    ///   - now: the driver's monotonic clock (the rule's intervals).
    ///   - storeBusy: whether a blocking store call of this document runs now (nothing more is
    ///     written then: the store takes one at a time).
    /// - Complexity: that of ``DocumentCore/housekeeping(stabilityNow:now:rule:)`` and
    ///   ``DocumentCore/compact(at:)`` when it compacts; O(1) for a snapshot decision.
    public mutating func handle(_ event: Event, core: inout DocumentCore, stabilityNow: UInt64, now: UInt64,
                                storeBusy: Bool = false) -> [Action] {
        switch event {
        case let .committed(logBytes):
            // Before the acknowledgements go out: a snapshot adds its time to the batch that
            // triggered it, and whoever reads the acknowledgement finds the snapshot made.
            guard let logBytes, logBytes > nextSnapshotAt, core.isQuiet, !storeBusy else { return [] }
            return [.snapshot]
        case .released, .tick:
            return housekeeping(core: &core, stabilityNow: stabilityNow, now: now, storeBusy: storeBusy)
        case let .seen(subscriber, replica, version, role):
            var out: [Action] = []
            if core.seen(subscriber, replica: replica, version: version, role: role, now: stabilityNow) { out.append(.saveStability) }
            // A kept copy's `seen` is answered with the floor.
            let answer = core.floorAnswer(to: subscriber)
            if !answer.isEmpty { out.append(.send(answer)) }
            return out + housekeeping(core: &core, stabilityNow: stabilityNow, now: now, storeBusy: storeBusy)
        case let .remade(subscriber, ranges):
            guard compaction != nil else { return [] }
            var out: [Action] = []
            if core.remade(subscriber, ranges: ranges, now: stabilityNow) { out.append(.saveStability) }
            return out + housekeeping(core: &core, stabilityNow: stabilityNow, now: now, storeBusy: storeBusy)
        case let .peerStability(subscriber, daemon, entries):
            guard compaction != nil else { return [] }
            var out: [Action] = []
            if core.peerStability(subscriber, from: daemon, entries: entries, now: stabilityNow) { out.append(.saveStability) }
            return out + housekeeping(core: &core, stabilityNow: stabilityNow, now: now, storeBusy: storeBusy)
        case let .checkpoint(logBytes):
            guard logBytes != nil, core.isQuiet, !storeBusy else { return [] }
            return [.snapshot]
        case let .unloading(logBytes):
            guard let logBytes, logBytes > snapshotLogBytes, core.isQuiet, !storeBusy else { return [] }
            return [.snapshot]
        case .closing:
            return compaction == nil ? [] : [.saveStability]
        }
    }

    /// The core's housekeeping (``DocumentCore/housekeeping(stabilityNow:now:rule:)``) under the
    /// rule, then, at a compaction point, the compaction in memory.
    private func housekeeping(core: inout DocumentCore, stabilityNow: UInt64, now: UInt64, storeBusy: Bool) -> [Action] {
        // Not while the store writes: it takes one blocking call at a time.
        guard let rule = compaction, !storeBusy else { return [] }
        let step = core.housekeeping(stabilityNow: stabilityNow, now: now, rule: rule)
        var out: [Action] = []
        if !step.forgotten.isEmpty { out.append(.forgotten(step.forgotten)) }
        if !step.retired.isEmpty { out.append(.retired(step.retired)) }
        if step.saveStability { out.append(.saveStability) }
        if !step.gossip.isEmpty { out.append(.send(step.gossip)) }
        // Waiting operations on parted ones never apply: the core makes them again (never
        // together with a compaction: a copy with operations waiting does not compact).
        // So are a copy's own originals that another daemon parted (Docs/Semantics.md §7,
        // "Parted originals a copy holds").
        if core.waitsOnParted || core.holdsPartedOriginals() { out.append(.remakeParted) }
        guard let point = step.point else { return out }
        do {
            out.append(.compact(floor: point, report: try core.compact(at: point)))
        } catch {
            out.append(.compactionRefused(error))
        }
        return out
    }

    /// A snapshot was written; the last snapshot is now `snapshotBytes` long.
    public mutating func snapshotWritten(snapshotBytes: Int64) {
        nextSnapshotAt = max(snapshotLogBytes, snapshotBytes)
    }

    /// A snapshot failed with the log `logBytes` long. `retryNextBatch`: it failed only because
    /// an append was on its way (the next commit tries again); otherwise the next try waits for
    /// another threshold's worth of log.
    public mutating func snapshotFailed(logBytes: Int64, retryNextBatch: Bool) {
        guard !retryNextBatch else { return }
        nextSnapshotAt = logBytes + max(snapshotLogBytes, 1)
    }

    /// The compacted document is durable (its snapshot `snapshotBytes` long): devices that
    /// compact their copies hear of the floor now.
    public mutating func compactionWritten(core: DocumentCore, snapshotBytes: Int64) -> [Action] {
        snapshotWritten(snapshotBytes: snapshotBytes)
        let floor = core.floorAnnouncements()
        return floor.isEmpty ? [] : [.send(floor)]
    }
}
