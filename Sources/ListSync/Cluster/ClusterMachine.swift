import ListCRDT

// One node's part in one document's cluster life (Docs/Cluster.md), as a state machine with no
// I/O, no NATS types and no clock of its own: the daemon's NATS driver (`ClusterNode` in
// ListSyncServer) and the simulator's cluster (`ClusterSimulator` in ListSyncSimulation) feed it
// the same events and do the I/O its actions name, so that what the simulator checks is the
// daemon's decision, not a copy of it.

/// One node's side of one document in a cluster: publishing what the node appended (durable in
/// the stream before acknowledged), following what others published (in stream order, each
/// message once), the trim lease, snapshots and trimming (only below a snapshot whose head the
/// stream acknowledged), read checkpoints, and interest. Events in, actions out.
///
/// The driver calls ``handle(_:)`` with each event and does the actions in their order. Every
/// action that does I/O is answered by exactly one event naming its outcome (a failure included:
/// the driver logs its typed error and reports the failure, never drops it): ``Action/publish(piece:operations:delay:)``
/// with ``Event/published(piece:)`` or ``Event/publishFailed(piece:)``, and so on, as each case says.
public struct ClusterMachine: Sendable {
    /// The cluster's rules for one document, in the driver's clock (nanoseconds).
    public struct Configuration: Sendable {
        /// With `true` (`--ack cluster`), a batch is released to its client only once the stream
        /// acknowledged every piece of it; with `false`, as soon as it is appended here.
        public var acknowledgeAfterStream = true
        /// Messages read after which the lease holder snapshots and trims (0: never).
        public var trimMessages = 10_000
        /// How long a lease revision lasts without a renewal (``ClusterLease/duration``).
        public var leaseDuration: UInt64 = 15_000_000_000
        /// How long the node keeps following after its last interest.
        public var interestGrace: UInt64 = 30_000_000_000
        /// The largest payload published in one piece (one operation alone may be more).
        public var maxPayload = 256 << 10
        /// The first delay before a publish is retried, doubled up to ``retryMax``.
        public var retryFirst: UInt64 = 50_000_000
        /// The longest delay between publish retries.
        public var retryMax: UInt64 = 1_000_000_000

        /// The defaults above.
        public init() {}
    }

    /// What the machine does differently, for measuring the simulator's power (tests only).
    @_spi(Testing) public enum Variant: Sendable {
        /// As documented.
        case correct
        /// Trims the subject as soon as it asks for the snapshot, before the stream acknowledged
        /// the snapshot's head: a node that had not read what was trimmed loses it.
        case trimsBeforeSnapshotAcknowledged
    }

    /// Where a node stopped reading the subject: every operation of the subject up to
    /// `sequence` (and of the snapshots loaded before) is in `version`.
    public struct Position: Equatable, Sendable {
        /// The last stream sequence read.
        public var sequence: UInt64
        /// The operations read up to there.
        public var version: VersionVector

        /// The position after `sequence`, covering `version`.
        public init(sequence: UInt64, version: VersionVector) {
            self.sequence = sequence
            self.version = version
        }
    }

    /// What happened, reported by the driver.
    public enum Event: Sendable {
        /// The node has (re)started with the document (its checkpoint read before, in ``init(node:configuration:checkpoint:)``);
        /// `mayHoldUnpublished`: its durable version is not within the checkpoint, so it follows
        /// the subject once, to publish what the stream lacks.
        case started(mayHoldUnpublished: Bool, now: UInt64)
        /// A batch was appended (durable) here; `ticket` is the client's, to release (nil: a
        /// republish, nobody waits).
        case appended(ticket: UInt64?, [ListOperation])
        /// Answer to ``Action/republish(since:)``: the document's operations the stream lacks
        /// (published ahead of every batch appended since the node started).
        case missing([ListOperation])
        /// The stream acknowledged the piece (stored, or a duplicate of one stored).
        case published(piece: UInt64)
        /// The publish of the piece failed (no answer, an error): retried.
        case publishFailed(piece: UInt64)
        /// A subscriber attached here.
        case interest(now: UInt64)
        /// Answer to ``Action/checkSnapshot``: the cluster's snapshot head (nil: none) and the
        /// document's version here.
        case snapshotChecked(Position?, documentVersion: VersionVector)
        /// Answer to ``Action/checkSnapshot`` or ``Action/loadSnapshot(_:)``: the head or its
        /// chunks could not be read, or were refused.
        case snapshotUnreadable
        /// Answer to ``Action/loadSnapshot(_:)``: its operations were given to the document.
        case snapshotLoaded(Position)
        /// Answer to ``Action/readSubjectEnd``: the subject's last sequence (0: empty).
        case subjectEnded(at: UInt64)
        /// Answer to ``Action/startConsumer(from:)``: messages come.
        case following
        /// Answer to ``Action/readSubjectEnd`` or ``Action/startConsumer(from:)``: failed.
        case followFailed
        /// A message of the subject, in stream order; `operations` nil when it was refused (no
        /// tag, a wrong tag, not operations).
        case message(sequence: UInt64, operations: [ListOperation]?)
        /// The consumer ended (the connection lost for good, the server gone).
        case consumerLost
        /// A snapshot head was written by some node, or the connection came back (heads may
        /// have been written unheard).
        case headWritten
        /// Time passed: what is durable here, and whether a subscriber is attached.
        case tick(now: UInt64, durable: VersionVector, subscribed: Bool)
        /// Answer to ``Action/readLease``.
        case leaseRead(ClusterLease.Entry?, now: UInt64)
        /// Answer to ``Action/readLease`` or ``Action/writeLease(revision:sentAt:taking:)``: failed.
        case leaseFailed
        /// Answer to ``Action/writeLease(revision:sentAt:taking:)``: stored as `revision`.
        case leaseWritten(revision: UInt64, sentAt: UInt64, now: UInt64)
        /// Answer to ``Action/prepareSnapshot(_:)``: the snapshot head in force (nil: none) with
        /// its revision (0: none), and the document's durable version here.
        case snapshotPrepared(head: Position?, revision: UInt64, durable: VersionVector, now: UInt64)
        /// Answer to ``Action/writeSnapshot(_:after:)``: its head is stored, acknowledged by the stream.
        case snapshotStored(sequence: UInt64, now: UInt64)
        /// Answer to ``Action/prepareSnapshot(_:)`` or ``Action/writeSnapshot(_:after:)``: not
        /// stored (another write came first, no answer, the store failing here); nothing trimmed.
        case snapshotFailed
        /// Answer to ``Action/trim(keepFrom:)``.
        case trimmed(keptFrom: UInt64)
        /// Answer to ``Action/trim(keepFrom:)``: failed.
        case trimFailed
        /// Answer to ``Action/writeCheckpoint(_:)``: durable.
        case checkpointWritten(Position)
        /// Answer to ``Action/writeCheckpoint(_:)``: failed.
        case checkpointFailed
        /// The node stops: what is durable here.
        case stopping(durable: VersionVector)
    }

    /// What the driver does, in order.
    public enum Action: Equatable, Sendable {
        /// Publish `operations` to the document's subject (after waiting `delay` ns: a retry),
        /// with the message id ``messageID(_:_:)`` makes, so that a retry is one message.
        case publish(piece: UInt64, operations: [ListOperation], delay: UInt64)
        /// Acknowledge the client's batch: it is in the stream (or appended, with local acknowledgement).
        case release(ticket: UInt64)
        /// Tell the client its batch is not acknowledged: the node stopped first.
        case refuse(ticket: UInt64)
        /// Read the snapshot head; answer ``Event/snapshotChecked(_:documentVersion:)``.
        case checkSnapshot
        /// Read the snapshot's chunks and give their operations to the document; answer
        /// ``Event/snapshotLoaded(_:)``.
        case loadSnapshot(Position)
        /// Read the subject's last sequence; answer ``Event/subjectEnded(at:)``.
        case readSubjectEnd
        /// Start an ordered consumer of the subject at `from`; answer ``Event/following``.
        case startConsumer(from: UInt64)
        /// Give these operations to the document (a batch from the cluster: never published again).
        case apply([ListOperation])
        /// Answer ``Event/missing(_:)`` with the document's operations not in `since`: what this
        /// node appended and the stream lacks.
        case republish(since: VersionVector)
        /// Stop the consumer (no event answers).
        case stopConsumer
        /// Read the lease entry; answer ``Event/leaseRead(_:now:)``.
        case readLease
        /// Write this node's name into the lease, expecting `revision` (`taking`: from another
        /// holder, a released entry or none; else a renewal); answer ``Event/leaseWritten(revision:sentAt:now:)``.
        case writeLease(revision: UInt64, sentAt: UInt64, taking: Bool)
        /// Give the lease back (best effort, no event answers).
        case releaseLease(revision: UInt64)
        /// Read the snapshot head in force and what is durable here; answer
        /// ``Event/snapshotPrepared(head:revision:durable:now:)``.
        case prepareSnapshot(Position)
        /// Store a snapshot of the document's durable operations covering the position, its
        /// chunks first and its head last, by compare-and-set on `after` (the head's revision
        /// read, 0: none); answer ``Event/snapshotStored(sequence:now:)``.
        case writeSnapshot(Position, after: UInt64)
        /// Purge the subject's messages below `keepFrom`; answer ``Event/trimmed(keptFrom:)``.
        case trim(keepFrom: UInt64)
        /// Write the read checkpoint; answer ``Event/checkpointWritten(_:)``.
        case writeCheckpoint(Position)
    }

    enum Follow: Equatable, Sendable { case idle, preparing, readingEnd, starting, following }
    enum Check: Equatable, Sendable { case none, checking, loading }
    struct Piece: Sendable {
        var id: UInt64
        var operations: [ListOperation]
        /// The ticket released once this piece (its last) is acknowledged.
        var releases: UInt64?
    }

    /// The rules.
    public let configuration: Configuration
    @_spi(Testing) public var variant = Variant.correct
    var lease: ClusterLease

    // Publishing.
    var queue: [Piece] = []
    var queueStart = 0
    var inFlight = false
    var retryDelay: UInt64 = 0
    var nextPiece: UInt64 = 1
    var stopped = false
    /// Until the republish after the first catch-up: batches appended since the start wait, so
    /// that the stream keeps a prefix of this node's appends (a later batch published first
    /// would make the stream's version claim the earlier ones, never republished then).
    var holding = false

    // Following.
    var follow = Follow.idle
    var check = Check.none
    var recheck = false
    /// The last sequence read (or covered by a snapshot) and what the subject held up to there.
    public internal(set) var read: Position
    var checkpointed: UInt64
    var checkpointInFlight = false
    var followedOnce = false
    var unpublished = false
    var catchUpTarget: UInt64?
    var lastInterest: UInt64?
    var lastDurable = VersionVector()

    // Trimming.
    var sinceSnapshot = 0
    var leaseInFlight = false
    var snapshotInFlight = false
    /// The position the snapshot in flight covers.
    var snapshotPosition: Position?

    /// What happened, for status and the simulator's report.
    public struct Counts: Sendable, Equatable {
        /// Pieces the stream acknowledged.
        public var published = 0
        /// Acknowledgements for a piece not in flight (duplicated or late), ignored.
        public var duplicateAcknowledgements = 0
        /// Messages read at or below the position (redelivered), ignored.
        public var duplicateMessages = 0
        /// Messages refused (their operations were not applied).
        public var refused = 0
        /// Snapshots stored by this node, and trims done after them.
        public var snapshots = 0, trims = 0
        /// Trims given up because the lease lapsed while the snapshot was stored.
        public var trimsSkipped = 0
        /// Snapshots loaded into a copy that lacked what they cover.
        public var snapshotsLoaded = 0
        /// Republishes asked for after a catch-up.
        public var republishes = 0

        /// Nothing counted yet.
        public init() {}
    }

    /// What happened so far.
    public internal(set) var counts = Counts()

    /// The machine of node `node` (its name in leases), starting from its read `checkpoint`.
    public init(node: String, configuration: Configuration, checkpoint: Position? = nil) {
        precondition(configuration.maxPayload > 0 && configuration.retryFirst > 0, "a payload limit and a retry delay")
        self.configuration = configuration
        lease = ClusterLease(node: node, duration: configuration.leaseDuration)
        read = checkpoint ?? Position(sequence: 0, version: VersionVector())
        checkpointed = checkpoint?.sequence ?? 0
    }

    /// Whether the node reads the subject now (its consumer started).
    public var isFollowing: Bool { follow == .following }
    /// Pieces appended here and not yet acknowledged by the stream.
    public var publishesPending: Int { queue.count - queueStart }
    /// Where the machine stands, in words (for a report of a run that did not come to rest).
    public var restState: String {
        "follow \(follow), check \(check), \(publishesPending) pieces pending\(inFlight ? " (one in flight)" : "")\(holding ? " (held)" : ""), read to \(read.sequence)"
    }

    /// Whether this node may act as the lease holder at `now`.
    public func holdsLease(now: UInt64) -> Bool { lease.isHeld(now: now) }

    /// `ops` in runs whose encodings are at most `maxBytes` each (one operation alone may be more).
    ///
    /// - Complexity: O(operations).
    public static func pieces(_ ops: [ListOperation], maxBytes: Int) -> [[ListOperation]] {
        var out: [[ListOperation]] = [], current: [ListOperation] = [], size = 0
        for op in ops {
            let n = ListOperation.encode([op]).count
            if !current.isEmpty, size + n > maxBytes {
                out.append(current)
                current = []
                size = 0
            }
            current.append(op)
            size += n
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// Does what `event` means; returns what the driver does, in order.
    ///
    /// - Complexity: O(operations in the event) plus O(operations appended) for a batch split
    ///   into pieces.
    public mutating func handle(_ event: Event) -> [Action] {
        var out: [Action] = []
        switch event {
        case let .started(mayHoldUnpublished, now):
            unpublished = mayHoldUnpublished
            holding = mayHoldUnpublished
            if mayHoldUnpublished { beginFollow(now: now, &out) }
        case let .appended(ticket, ops): appended(ticket, ops, &out)
        case let .missing(ops): missing(ops, &out)
        case let .published(piece): published(piece, &out)
        case let .publishFailed(piece): publishFailed(piece, &out)
        case let .interest(now):
            lastInterest = now
            beginFollow(now: now, &out)
        case let .snapshotChecked(head, documentVersion): snapshotChecked(head, documentVersion, &out)
        case .snapshotUnreadable: snapshotUnreadable(&out)
        case let .snapshotLoaded(head):
            counts.snapshotsLoaded += 1
            cover(head, &out)
            checkDone(&out)
        case let .subjectEnded(last): subjectEnded(last, &out)
        case .following:
            if follow == .starting { follow = .following }
        case .followFailed:
            if follow == .readingEnd || follow == .starting { follow = .idle }
        case let .message(sequence, ops): message(sequence, ops, &out)
        case .consumerLost:
            if follow == .following || follow == .starting { follow = .idle }
        case .headWritten: headWritten(&out)
        case let .tick(now, durable, subscribed): tick(now, durable, subscribed, &out)
        case let .leaseRead(entry, now): leaseRead(entry, now, &out)
        case .leaseFailed:
            leaseInFlight = false
            lease.lost()
        case let .leaseWritten(revision, sentAt, now):
            leaseInFlight = false
            lease.won(revision: revision, sentAt: sentAt)
            snapshotIfDue(now, &out)
        case let .snapshotPrepared(head, revision, durable, now): snapshotPrepared(head, revision, durable, now, &out)
        case let .snapshotStored(sequence, now): snapshotStored(sequence, now, &out)
        case .snapshotFailed: snapshotInFlight = false
        case .trimmed: counts.trims += 1
        case .trimFailed: break
        case let .checkpointWritten(p):
            checkpointInFlight = false
            checkpointed = max(checkpointed, p.sequence)
        case .checkpointFailed: checkpointInFlight = false
        case let .stopping(durable): stop(durable, &out)
        }
        return out
    }
}
