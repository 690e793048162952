import Synchronization

/// A connection inside one process: what one end sends, the other receives, in order.
///
/// For tests of code that uses ``Transport``. Deterministic simulations with delay, loss,
/// duplication and partitions use `InMemoryNetwork` (`ListSyncSimulation`) instead, which runs on
/// a virtual clock.
public final class InMemoryTransport: Transport {
    public let incoming: AsyncStream<[UInt8]>
    private let inbox: AsyncStream<[UInt8]>.Continuation
    // The peer's inbox; behind a mutex so that `close` and `send` race safely.
    private let peer = Mutex<AsyncStream<[UInt8]>.Continuation?>(nil)
    private let limit: Int
    /// The largest frame ``send(_:)`` accepts.
    public var maxFrame: Int { limit }

    private init(limit: Int) {
        (incoming, inbox) = AsyncStream.makeStream(of: [UInt8].self)
        self.limit = limit
    }

    /// Two connected ends.
    public static func pair(frameLimit: Int = 16 << 20) -> (InMemoryTransport, InMemoryTransport) {
        let a = InMemoryTransport(limit: frameLimit), b = InMemoryTransport(limit: frameLimit)
        a.peer.withLock { $0 = b.inbox }
        b.peer.withLock { $0 = a.inbox }
        return (a, b)
    }

    public func send(_ frame: [UInt8]) async throws(TransportError) {
        if frame.count > limit { throw .frameTooLarge(size: frame.count, limit: limit) }
        guard let peer = peer.withLock({ $0 }) else { throw .closed }
        if case .terminated = peer.yield(frame) { throw .closed }
    }

    public func close() async {
        let other = peer.withLock { p -> AsyncStream<[UInt8]>.Continuation? in
            defer { p = nil }
            return p
        }
        other?.finish()
        inbox.finish()
    }
}

/// An in-memory "server": ``connect()`` makes a connection whose other end the next ``accept()``
/// returns, like a listening socket.
public actor InMemoryListener: TransportListener {
    private var queued: [InMemoryTransport] = []
    private var waiting: [CheckedContinuation<InMemoryTransport?, Never>] = []
    private var closed = false

    /// A listener with no connections yet.
    public init() {}

    /// Connects to the listener: returns the client end; the server end goes to ``accept()``.
    public func connect() -> InMemoryTransport {
        let (client, server) = InMemoryTransport.pair()
        if waiting.isEmpty { queued.append(server) } else { waiting.removeFirst().resume(returning: server) }
        return client
    }

    /// Stops accepting: waiting and later ``accept()`` calls throw ``TransportError/closed``.
    public func close() {
        closed = true
        for w in waiting { w.resume(returning: nil) }
        waiting = []
    }

    public func accept() async throws(TransportError) -> any Transport {
        if !queued.isEmpty { return queued.removeFirst() }
        if closed { throw .closed }
        let next = await withCheckedContinuation { waiting.append($0) }
        guard let next else { throw .closed }
        return next
    }
}
