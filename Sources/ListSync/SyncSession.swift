import ListCRDT

/// The sync protocol with one peer, as a state machine with no I/O: frames in, actions out.
///
/// Both sides send ``SyncMessage/hello(replica:version:)`` when they connect. On a peer's hello
/// the session sends every operation the peer lacks, in causal order and in bounded batches, and
/// from then on streams new local operations as they are made. A hello received later (the peer's
/// periodic anti-entropy, see ``tick(document:)``) is answered the same way, which repairs frames
/// lost on the way. Duplicates are harmless: the document ignores operations it has.
///
/// The session never touches a socket, a clock or the document's state: it reads the document to
/// answer a hello. The caller moves ``SyncAction/send(_:)`` frames to the peer, applies
/// ``SyncAction/deliver(_:)`` operations to its document, feeds received frames to
/// ``receive(_:document:)``, and calls ``tick(document:)`` on its own schedule.
public struct SyncSession: Sendable {
    /// Where the session is.
    public enum State: Hashable, Sendable {
        /// Created; ``start(document:)`` not called yet.
        case idle
        /// Our hello is sent; the peer's has not arrived.
        case greeted
        /// The peer's hello arrived and its missing operations are sent: new operations stream.
        case live
    }

    /// The largest number of operations in one frame.
    public let maxOperationsPerFrame: Int
    /// The largest frame, in bytes, the session makes when it can (a batch over it is split; a
    /// single operation over it is sent alone, and a transport with a smaller limit refuses it).
    public let maxFrameBytes: Int
    /// Our replica.
    public let local: ReplicaID
    /// Where the session is.
    public private(set) var state = State.idle
    /// The peer's replica, once its hello arrived.
    public private(set) var peer: ReplicaID?
    /// What the peer is known to have: its last hello plus every operation sent to or received from it.
    public private(set) var peerVersion = VersionVector()

    /// The version our last request for missing operations carried (see ``requestMissing(document:)``).
    private var requestedAt: VersionVector?

    /// Counters for reports.
    public private(set) var framesSent = 0, framesReceived = 0, operationsSent = 0, operationsReceived = 0

    /// A session for `local`'s side of one connection.
    public init(local: ReplicaID, maxOperationsPerFrame: Int = 512, maxFrameBytes: Int = 1 << 20 - 64) {
        self.local = local
        self.maxOperationsPerFrame = max(1, maxOperationsPerFrame)
        self.maxFrameBytes = max(64, maxFrameBytes)
    }

    /// Opens the session: says hello.
    public mutating func start(document: ListDocument) -> [SyncAction] {
        state = .greeted
        return [send(.hello(replica: local, version: document.version))]
    }

    /// Handles one frame from the peer.
    ///
    /// - Parameter document: the local document as it is now (read to answer a hello).
    /// - Throws: ``SyncError`` for a frame that does not decode completely; the session is then
    ///   unchanged and nothing is to be applied.
    /// - Complexity: O(m) in the document's log for a hello (see `ListDocument.operations(since:)`);
    ///   O(size) for operations.
    public mutating func receive(_ frame: [UInt8], document: ListDocument) throws(SyncError) -> [SyncAction] {
        let message = try SyncMessage(decoding: frame)
        framesReceived += 1
        switch message {
        case let .hello(replica, version):
            if let peer, peer != replica { throw .peerChanged(from: peer, to: replica) }
            peer = replica
            peerVersion.formUnion(version)
            var actions: [SyncAction] = []
            if state == .idle { actions.append(send(.hello(replica: local, version: document.version))) }
            state = .live
            actions += batches(document.operations(since: version))
            return actions
        case let .operations(ops):
            operationsReceived += ops.count
            for op in ops { peerVersion.observe(op.lastID) }
            return ops.isEmpty ? [] : [.deliver(ops)]
        }
    }

    /// New local operations (or operations received from a third replica) to forward: sent now
    /// when live, else left for the catch-up that follows the peer's hello.
    public mutating func forward(_ ops: [ListOperation]) -> [SyncAction] {
        guard state == .live else { return [] }
        let fresh = ops.filter { !peerVersion.contains($0.lastID) }
        return batches(fresh)
    }

    /// Anti-entropy: says hello again, so the peer sends whatever we lack (lost frames, missed
    /// forwards). Call it periodically.
    public mutating func tick(document: ListDocument) -> [SyncAction] {
        guard state != .idle else { return [] }
        return [send(.hello(replica: local, version: document.version))]
    }

    /// Asks the peer for the operations the document's causal buffer waits for: when operations
    /// wait (`pendingCount > 0`), says hello with the document's version, so the peer sends
    /// everything after it, the gap included (and operations refused with
    /// `ApplyError.bufferFull`). Asks once per version: nothing more is sent until the document
    /// has applied something new. Call it after delivering operations.
    public mutating func requestMissing(document: ListDocument) -> [SyncAction] {
        guard state == .live, document.pendingCount > 0, requestedAt != document.version else { return [] }
        requestedAt = document.version
        return [send(.hello(replica: local, version: document.version))]
    }

    // MARK: Helpers

    /// Frames of at most ``maxOperationsPerFrame`` operations and (where one operation allows)
    /// ``maxFrameBytes`` bytes: a batch over the byte limit is halved until it fits.
    private mutating func batches(_ ops: [ListOperation]) -> [SyncAction] {
        var actions: [SyncAction] = []
        var start = 0
        while start < ops.count {
            var end = min(start + maxOperationsPerFrame, ops.count)
            var frame = SyncMessage.operations(Array(ops[start..<end])).encoded()
            while frame.count > maxFrameBytes, end - start > 1 {
                end = start + (end - start) / 2
                frame = SyncMessage.operations(Array(ops[start..<end])).encoded()
            }
            for op in ops[start..<end] { peerVersion.observe(op.lastID) }
            operationsSent += end - start
            framesSent += 1
            actions.append(.send(frame))
            start = end
        }
        return actions
    }

    private mutating func send(_ message: SyncMessage) -> SyncAction {
        framesSent += 1
        return .send(message.encoded())
    }
}

/// What a ``SyncSession`` asks its caller to do, or tells it.
public enum SyncAction: Equatable, Sendable {
    /// Send this frame to the peer.
    case send([UInt8])
    /// Apply these operations, received from the peer in causal order, to the document
    /// (`ListDocument.receive(_:)` or `LiveDocument.receive(_:)`).
    case deliver([ListOperation])
}
