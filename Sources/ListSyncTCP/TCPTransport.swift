#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport
import ListSyncCrypto
import Synchronization

/// A TCP connection that has proved the pre-shared key, carrying sealed frames: a ``Transport``.
///
/// Make one with ``connect(host:port:key:options:loop:)`` (a client) or get it from
/// ``TCPListener/accept()`` (a server). Its socket is non-blocking and driven by an
/// ``EventLoop``; ``send(_:)`` queues a frame (bounded by ``TCPOptions/sendQueueLimit``) and
/// ``incoming`` yields the peer's frames. Either side's ``close()`` ends both `incoming`s.
public final class TCPTransport: Transport, @unchecked Sendable {
    // @unchecked Sendable: `socket` (and everything in it) is touched only on `loop`'s thread;
    // the other stored properties are immutable or Sendable (Mutex, AsyncStream).

    public let incoming: AsyncStream<[UInt8]>
    /// The peer's address.
    public let remoteAddress: SocketAddress
    /// The largest frame ``send(_:)`` accepts.
    public let maxFrame: Int
    /// The device claims the peer proved (a server's view of a device; nil for a holder of the
    /// daemon's key, and on the client side).
    public let peerClaims: DeviceClaims?
    let loop: EventLoop
    let socket: SocketConnection

    init(socket: SocketConnection, incoming: AsyncStream<[UInt8]>, peerClaims: DeviceClaims?) {
        self.socket = socket
        self.peerClaims = peerClaims
        self.loop = socket.loop
        self.incoming = incoming
        self.remoteAddress = socket.remote
        self.maxFrame = socket.machine.maxPayload
    }

    /// Why the connection closed, once it has.
    public var closeReason: CloseReason? { socket.status.withLock { $0.reason } }
    /// Bytes written to and read from the socket so far (handshake, headers and tags included).
    public var traffic: (sent: Int, received: Int) { socket.traffic.withLock { $0 } }
    /// Whether the connection is open.
    public var isOpen: Bool { socket.status.withLock { $0.open } }

    /// Connects to a listener and runs the handshake.
    ///
    /// - Parameters:
    ///   - host: a numeric IPv4/IPv6 address or a name (resolved with `getaddrinfo`).
    ///   - key: the pre-shared key (32 bytes).
    ///   - localHost: the local address to bind before connecting (tests use other 127.x addresses).
    /// - Throws: ``TransportError/system(call:errno:)`` if no address accepts the connection;
    ///   ``TransportError/handshake(_:)`` if the handshake fails (wrong key, a deadline, a refusal).
    public static func connect(host: String, port: UInt16, key: [UInt8], options: TCPOptions = .init(),
                               localHost: String? = nil, loop: EventLoop = .shared) async throws(TransportError) -> TCPTransport {
        try await connect(host: host, port: port, authentication: .key(key), options: options, localHost: localHost, loop: loop)
    }

    /// Connects to a listener and runs the handshake, proving `authentication`: the daemon's key
    /// or a device's credential (Docs/Security.md).
    ///
    /// - Throws: as ``connect(host:port:key:options:localHost:loop:)``.
    public static func connect(host: String, port: UInt16, authentication: ClientAuthentication, options: TCPOptions = .init(),
                               localHost: String? = nil, loop: EventLoop = .shared) async throws(TransportError) -> TCPTransport {
        let addresses = try SocketAddress.resolve(host: host, port: port)
        var last = TransportError.system(call: "getaddrinfo(\(host))", errno: 0)
        for address in addresses {
            let local = try localHost.map { h throws(TransportError) -> SocketAddress in
                guard let a = SocketAddress(numeric: h, port: 0) else { throw .system(call: "inet_pton(\(h))", errno: 22) }
                return a
            }
            var attempt = 0
            while true {
                do {
                    return try await connect(address, authentication: authentication, options: options, local: local, loop: loop)
                } catch {
                    attempt += 1
                    if Self.cutInHandshake(error), attempt < Self.handshakeAttempts {
                        // A listener under a flood of strangers' connections evicts handshakes:
                        // a key holder gets through on a later try. Backing off (10, 20, 40 … ms,
                        // 1.27 s in all) outlasts a burst; a slow machine's handshakes are the
                        // stalled ones a listener evicts first.
                        try? await Task.sleep(for: .milliseconds(10 << min(attempt - 1, 6)))
                        continue
                    }
                    last = error
                    if case .handshake = error { throw error }
                    break
                }
            }
        }
        throw last
    }

    /// How many times ``connect(host:port:authentication:options:localHost:loop:)`` tries an
    /// address whose connection was cut during the handshake (closed or reset by the listener:
    /// its pool of handshakes evicts under a flood), 10 ms after the first cut and twice as long
    /// after each next one. A refused connect, a failed proof, another version, a refusal or a
    /// deadline are not tried again. (Four tries, 60 ms apart at most, were not enough for an
    /// honest command sharing its address with a reconnecting attacker on a busy machine:
    /// DaemonFloodTests in a CI run beside three builds.)
    public static let handshakeAttempts = 8

    /// Whether `error` is a connection cut during the handshake, worth one more try.
    static func cutInHandshake(_ error: TransportError) -> Bool {
        switch error {
        case .handshake(.peerClosed): return true
        case let .system(call, code): return call != "connect" && (code == ECONNRESET || code == EPIPE)
        default: return false
        }
    }

    static func connect(_ address: SocketAddress, authentication: ClientAuthentication, options: TCPOptions, local: SocketAddress?,
                        loop: EventLoop) async throws(TransportError) -> TCPTransport {
        let fd = try System.socket(family: address.family)
        do {
            try System.setNoDelay(fd)
            if let local { try System.bind(fd, local) }
        } catch {
            System.close(fd)
            throw error
        }
        let machine = ConnectionMachine(role: .client, key: authentication.handshakeKey, claims: authentication.claims,
                                        id: SecureRandom.bytes(Handshake.idSize),
                                        nonce: SecureRandom.bytes(Handshake.nonceSize),
                                        handshakeFrameLimit: options.handshakeFrameLimit, frameLimit: options.frameLimit)
        let result: Result<TCPTransport, TransportError> = await withCheckedContinuation { continuation in
            loop.execute {
                let socket = SocketConnection(fd: fd, remote: address, machine: machine, options: options, loop: loop)
                socket.onEstablished = { transport in continuation.resume(returning: .success(transport)) }
                socket.onFailedHandshake = { error in continuation.resume(returning: .failure(error)) }
                socket.startConnecting(to: address)
            }
        }
        return try result.get()
    }

    /// Queues `frame` for the peer.
    ///
    /// - Throws: ``TransportError/closed`` once the connection is closed;
    ///   ``TransportError/frameTooLarge(size:limit:)`` over ``maxFrame``.
    public func send(_ frame: [UInt8]) async throws(TransportError) {
        guard frame.count <= maxFrame else { throw .frameTooLarge(size: frame.count, limit: maxFrame) }
        guard isOpen else { throw .closed }
        let socket = socket
        loop.execute { socket.sendData(frame) }
    }

    /// Queues `frame` for the peer without waiting (frames queued from one serial context keep their
    /// order); false once the connection is closed or for a frame over ``maxFrame``.
    @discardableResult
    public func enqueue(_ frame: [UInt8]) -> Bool {
        guard frame.count <= maxFrame, isOpen else { return false }
        let socket = socket
        loop.execute { socket.sendData(frame) }
        return true
    }

    /// Runs `body` (on the loop's thread) once less than half of ``TCPOptions/sendQueueLimit`` is
    /// queued, or the connection closed: back-pressure for a sender that streams a large catch-up.
    public func whenRoom(_ body: @escaping @Sendable () -> Void) {
        let socket = socket
        let below = socket.options.sendQueueLimit / 2
        loop.execute { socket.whenRoom(below: below, body) }
    }

    /// Returns once the connection is closed, by either side.
    public func closed() async {
        let socket = socket
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { socket.whenClosed { done.resume() } }
        }
    }

    /// Sends BYE with `reason`, closes the socket and waits until it is closed.
    public func close() async {
        await close(reason: "closed")
    }

    /// As ``close()``, with the reason the peer reads.
    public func close(reason: String) async {
        let socket = socket
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                socket.sayGoodbye(reason)
                socket.whenClosed { done.resume() }
            }
        }
    }
}
