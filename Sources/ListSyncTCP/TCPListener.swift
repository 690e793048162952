import ListSync
import ListSyncCrypto
import Synchronization

/// A listening TCP socket that hands out connections once they have proved the key: a
/// ``TransportListener``.
///
/// Connections are counted against ``TCPOptions``: in all, in their handshake, and per source
/// address; one over a limit is closed at once. An address whose key proofs keep failing waits
/// before its next connection is even read (doubling each time).
public final class TCPListener: TransportListener, @unchecked Sendable {
    // @unchecked Sendable: the counters, the backoff table and `listenSocket` are touched only on
    // `loop`'s thread; the accept queue is behind a Mutex.

    /// The address it listens on (with the port chosen, when 0 was asked).
    public let address: SocketAddress
    /// The port it listens on.
    public var port: UInt16 { address.port }
    let loop: EventLoop
    private let key: [UInt8]
    private let options: TCPOptions
    private let fd: Int32
    private let serverID = SecureRandom.bytes(Handshake.idSize)
    private let queue = Mutex<(ready: [TCPTransport], waiting: [CheckedContinuation<TCPTransport?, Never>], closed: Bool)>(([], [], false))
    private let refusedCounts = Mutex<[String: Int]>([:])

    // Loop-thread state.
    private var total = 0
    private var unauthenticated = 0
    private var perHost: [SocketAddress.Host: (all: Int, unauthenticated: Int)] = [:]
    private var failures: [SocketAddress.Host: (count: Int, until: UInt64)] = [:]
    private var open: [ObjectIdentifier: SocketConnection] = [:]
    private var acceptor: Acceptor?

    /// Listens on `host:port` (port 0: any free port, see ``port``).
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming the call that failed (`bind` on a
    ///   port in use, for one).
    public static func listen(host: String, port: UInt16, key: [UInt8], options: TCPOptions = .init(),
                              loop: EventLoop = .shared) async throws(TransportError) -> TCPListener {
        let (fd, bound) = try System.listeningSocket(host: host, port: port, backlog: 256)
        let listener = TCPListener(fd: fd, address: bound, key: key, options: options, loop: loop)
        let result: Result<Void, TransportError> = await withCheckedContinuation { done in
            loop.execute {
                do throws(TransportError) {
                    let acceptor = Acceptor(listener)
                    listener.acceptor = acceptor
                    try loop.register(fd, acceptor, writable: false)
                    done.resume(returning: .success(()))
                } catch {
                    listener.acceptor = nil
                    done.resume(returning: .failure(error))
                }
            }
        }
        if case let .failure(error) = result {
            System.close(fd)
            throw error
        }
        return listener
    }

    private init(fd: Int32, address: SocketAddress, key: [UInt8], options: TCPOptions, loop: EventLoop) {
        self.fd = fd
        self.address = address
        self.key = key
        self.options = options
        self.loop = loop
    }

    /// The next connection that proved the key.
    ///
    /// - Throws: ``TransportError/closed`` once the listener is closed.
    public func accept() async throws(TransportError) -> any Transport {
        try await acceptTCP()
    }

    /// As ``accept()``, typed.
    public func acceptTCP() async throws(TransportError) -> TCPTransport {
        let next: TCPTransport? = await withCheckedContinuation { c in
            queue.withLock { q in
                if !q.ready.isEmpty {
                    c.resume(returning: q.ready.removeFirst())
                } else if q.closed {
                    c.resume(returning: nil)
                } else {
                    q.waiting.append(c)
                }
            }
        }
        guard let next else { throw .closed }
        return next
    }

    /// Connections refused before or during the handshake, by reason (for status and metrics).
    public var refused: [String: Int] { refusedCounts.withLock { $0 } }

    /// Stops listening, closes the connections still in their handshake and those accepted but
    /// not yet taken by ``accept()``, and wakes waiting ``accept()`` calls. Connections already
    /// handed out stay open.
    public func close() async {
        let (waiting, ready) = queue.withLock { q -> ([CheckedContinuation<TCPTransport?, Never>], [TCPTransport]) in
            defer { q.waiting = []; q.ready = []; q.closed = true }
            return (q.waiting, q.ready)
        }
        for w in waiting { w.resume(returning: nil) }
        for t in ready { await t.close() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if acceptor != nil {
                    loop.deregister(fd)
                    System.close(fd)
                    acceptor = nil
                }
                let pending = Array(open.values)
                guard !pending.isEmpty else { return done.resume() }
                var left = pending.count
                for c in pending {
                    c.whenClosed {
                        left -= 1
                        if left == 0 { done.resume() }
                    }
                    c.sayGoodbye("the server is closing")
                }
            }
        }
    }

    // MARK: Loop thread

    fileprivate func acceptReady() {
        while acceptor != nil {
            let accepted: (Int32, SocketAddress)?
            do { accepted = try System.accept(fd) } catch {
                count("accept failed: \(error)")
                return
            }
            guard let (client, remote) = accepted else { return }
            if let refusal = admit(remote) {
                // A clear refusal in one non-blocking write (dropped if it does not fit), then close.
                let frame = ConnectionMachine.frame(Handshake.error(.busy, refusal))
                _ = try? frame.withUnsafeBytes { b throws(TransportError) in try System.write(client, b) }
                System.close(client)
                count(refusal)
                continue
            }
            try? System.setNoDelay(client)
            let machine = ConnectionMachine(role: .server, key: key, id: serverID,
                                            nonce: SecureRandom.bytes(Handshake.nonceSize),
                                            handshakeFrameLimit: options.handshakeFrameLimit, frameLimit: options.frameLimit)
            let socket = SocketConnection(fd: client, remote: remote, machine: machine, options: options, loop: loop)
            let id = ObjectIdentifier(socket)
            open[id] = socket
            total += 1
            unauthenticated += 1
            perHost[remote.host, default: (0, 0)].all += 1
            perHost[remote.host, default: (0, 0)].unauthenticated += 1
            var authenticated = false
            socket.onEstablished = { [weak self] transport in
                guard let self else { return }
                authenticated = true
                self.unauthenticated -= 1
                self.perHost[remote.host]?.unauthenticated -= 1
                self.failures[remote.host] = nil
                self.open[id] = nil
                self.deliver(transport)
            }
            socket.onAuthenticationFailure = { [weak self] in self?.recordFailure(remote.host) }
            socket.onClose = { [weak self] reason in
                guard let self else { return }
                self.total -= 1
                if !authenticated {
                    self.unauthenticated -= 1
                    self.perHost[remote.host]?.unauthenticated -= 1
                    self.count("handshake: \(reason.kind)")
                }
                self.open[id] = nil
                if let h = self.perHost[remote.host] {
                    self.perHost[remote.host] = h.all <= 1 ? nil : (h.all - 1, h.unauthenticated)
                }
            }
            socket.startAccepted()
        }
    }

    /// Why a new connection from `remote` is refused, or `nil` to admit it.
    private func admit(_ remote: SocketAddress) -> String? {
        let now = EventLoop.now()
        if let f = failures[remote.host], f.until > now { return "address backing off after failed proofs" }
        if total >= options.maxConnections { return "too many connections" }
        if unauthenticated >= options.maxUnauthenticated { return "too many handshakes" }
        let h = perHost[remote.host] ?? (0, 0)
        if h.all >= options.maxPerAddress { return "too many connections from one address" }
        if h.unauthenticated >= options.maxUnauthenticatedPerAddress { return "too many handshakes from one address" }
        return nil
    }

    private func recordFailure(_ host: SocketAddress.Host) {
        var f = failures[host] ?? (0, 0)
        f.count += 1
        let over = f.count - options.failuresBeforeBackoff
        if over >= 0 {
            let wait = min(options.failureBackoff.nanoseconds << UInt64(min(over, 6)), 60_000_000_000)
            f.until = EventLoop.now() &+ wait
        }
        failures[host] = f
        if failures.count > 4096 { failures = failures.filter { $0.value.until > EventLoop.now() } }
    }

    private func deliver(_ transport: TCPTransport) {
        let waiter = queue.withLock { q -> CheckedContinuation<TCPTransport?, Never>? in
            if q.closed { return nil }
            if q.waiting.isEmpty {
                q.ready.append(transport)
                return nil
            }
            return q.waiting.removeFirst()
        }
        if let waiter {
            waiter.resume(returning: transport)
        } else if queue.withLock({ $0.closed }) {
            transport.socket.sayGoodbye("the server is closing")
        }
    }

    private func count(_ reason: String) {
        refusedCounts.withLock { $0[reason, default: 0] += 1 }
    }
}

/// The listening socket's handler (kept apart so the listener is not retained by the loop twice).
private final class Acceptor: EventHandler {
    weak var listener: TCPListener?
    init(_ listener: TCPListener) { self.listener = listener }
    func readable() { listener?.acceptReady() }
    func writable() {}
}

extension CloseReason {
    /// A short label for counting closes by kind.
    var kind: String {
        switch self {
        case .badMagic: return "bad magic"
        case .frameTooLarge: return "frame too large"
        case .unexpectedMessage: return "unexpected message"
        case .malformed: return "malformed"
        case .versionMismatch: return "no common version"
        case .authenticationFailed: return "authentication failed"
        case .refusedByPeer: return "refused"
        case .decryptionFailed: return "decryption failed"
        case .bye: return "bye"
        case .local: return "deadline or local close"
        case .peerClosed: return "peer closed"
        case .system: return "socket error"
        }
    }
}
