/// A connection that carries whole frames between two peers.
///
/// Implementations: ``InMemoryTransport`` (tests and simulations) and, in `ListSyncTCP`, TCP.
/// A transport only moves frames, each holding one of the sync protocol's messages (`SyncMessage`
/// in `ListSync`); the protocol's state machines repair anything lost when a connection is made
/// again (Docs/Protocol.md). This module depends on nothing: the sockets, HTTP, NATS and the
/// fault proxy build on it without the engine or the protocol.
public protocol Transport: Sendable {
    /// Sends one frame. Throws ``TransportError/closed`` once the connection is closed.
    func send(_ frame: [UInt8]) async throws(TransportError)
    /// The frames received, in order; it ends when the connection closes.
    var incoming: AsyncStream<[UInt8]> { get }
    /// Closes the connection; both ends' `incoming` sequences finish.
    func close() async
    /// The largest frame ``send(_:)`` accepts.
    var maxFrame: Int { get }
    /// Runs `body` once the connection can take more (its send queue has room again), or closed.
    func whenRoom(_ body: @escaping @Sendable () -> Void)
}

extension Transport {
    /// No limit unless the transport states one.
    public var maxFrame: Int { Int.max }
    /// No send queue: room at once.
    public func whenRoom(_ body: @escaping @Sendable () -> Void) { body() }
}

/// Something that yields connections as peers connect.
public protocol TransportListener: Sendable {
    /// Waits for the next connection.
    func accept() async throws(TransportError) -> any Transport
}

/// Why a transport failed.
public enum TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The connection is closed.
    case closed
    /// A frame is over the transport's size limit.
    case frameTooLarge(size: Int, limit: Int)
    /// An operating-system call failed.
    case system(call: String, errno: Int32)
    /// The connection did not get through its handshake: the reason it closed (a wrong key, no
    /// common version, a deadline, a refusal, cut by the peer).
    case handshake(CloseReason)

    public var description: String {
        switch self {
        case .closed: return "the connection is closed"
        case let .frameTooLarge(size, limit): return "frame of \(size) bytes is over the limit of \(limit)"
        case let .system(call, errno): return "\(call) failed with errno \(errno)"
        case let .handshake(why): return "handshake failed: \(why)"
        }
    }
}
