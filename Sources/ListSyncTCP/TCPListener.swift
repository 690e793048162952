import ListSyncTransport
import ListSyncCrypto
import Synchronization

/// A listening TCP socket that hands out connections once they have proved the key: a
/// ``TransportListener``.
///
/// Connections are counted against ``TCPOptions``: in all, in their handshake, and (once
/// authenticated) per source address. Strangers cannot lock key holders out (Docs/Security.md,
/// "Connection limits"): when the pool of connections still in their handshake is full, a new
/// connection evicts one of them (those that failed a proof, then those silent for 100 ms, then
/// the rest; oldest first in each) instead of being refused. An honest handshake sends at once and
/// ends within a round trip, so it keeps its slot while silent connections remain to evict, and
/// otherwise while ``TCPOptions/maxUnauthenticated`` newer ones arrive. No address is ever refused
/// for failed proofs (a failed proof costs its sender a delay, out of the read interest).
public final class TCPListener: TransportListener, @unchecked Sendable {
    // @unchecked Sendable: the counters, the pending table and `listenSocket` are touched only on
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
    private let gauges = Mutex(HandshakeGauges())

    // Loop-thread state.
    private var total = 0
    /// Authenticated connections per source address.
    private var perHost: [SocketAddress.Host: Int] = [:]
    /// Connections still in their handshake, by acceptance order.
    private var pending: [ObjectIdentifier: Pending] = [:]
    private var accepted: UInt64 = 0
    private var acceptor: Acceptor?

    private struct Pending {
        let socket: SocketConnection
        let order: UInt64
        /// When it was accepted (``EventLoop/now()``).
        let since: UInt64
        var failedProof = false
        /// Its bytes wait unread (the loop has not reached it yet): it counts as having sent.
        var sentUnread = false
    }

    /// Longer than this without a byte, a connection in its handshake counts as silent (an honest
    /// client sends its HELLO at once; a newer one may simply not have been read yet).
    private var silentAfter: UInt64 { min(100_000_000, options.handshakeTimeout.nanoseconds / 4) }

    /// Listens on `host:port` (port 0: any free port, see ``port``).
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming the call that failed (`bind` on a
    ///   port in use, for one).
    public static func listen(host: String, port: UInt16, key: [UInt8], options: TCPOptions = .init(),
                              loop: EventLoop = .shared) async throws(TransportError) -> TCPListener {
        let (fd, bound) = try System.listeningSocket(host: host, port: port, backlog: 256)
        let listener = TCPListener(fd: fd, address: bound, key: key, options: options, loop: loop)
        try await loop.registerAcceptor(fd, install: {
            let acceptor = Acceptor(listener)
            listener.acceptor = acceptor
            return acceptor
        }, uninstall: { listener.acceptor = nil })
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

    /// Connections refused or closed before or during the handshake, by reason (for status and
    /// metrics): evictions, deadlines, failed proofs, limits.
    public var refused: [String: Int] { refusedCounts.withLock { $0 } }

    /// The handshake pool now and since the start (for status and metrics).
    public var handshakes: HandshakeGauges { gauges.withLock { $0 } }

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
                let pending = self.pending.values.map(\.socket)
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
            if let refusal = makeRoom() {
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
            self.accepted += 1
            pending[id] = Pending(socket: socket, order: self.accepted, since: EventLoop.now())
            total += 1
            publishPool()
            var authenticated = false
            socket.onEstablished = { [weak self] transport in
                guard let self else { return }
                authenticated = true
                self.pending[id] = nil
                self.publishPool { $0.completed += 1 }
                let n = self.perHost[remote.host, default: 0] + 1
                self.perHost[remote.host] = n
                if n > self.options.maxPerAddress {
                    self.count("too many connections from one address")
                    transport.socket.sayGoodbye("too many connections from one address (\(self.options.maxPerAddress))")
                    return
                }
                self.deliver(transport)
            }
            socket.onAuthenticationFailure = { [weak self] in
                self?.pending[id]?.failedProof = true
                self?.gauges.withLock { $0.failedProofs += 1 }
            }
            socket.onClose = { [weak self] reason in
                guard let self else { return }
                self.total -= 1
                if authenticated {
                    let n = self.perHost[remote.host, default: 1] - 1
                    self.perHost[remote.host] = n <= 0 ? nil : n
                } else {
                    self.pending[id] = nil
                    self.publishPool()
                    self.count("handshake: \(reason.kind)")
                }
            }
            socket.startAccepted()
        }
    }

    /// Makes room for one more connection: evicts a connection still in its handshake when the
    /// pool (or the whole table) is full. Returns why the new one is refused, or `nil` to admit it.
    ///
    /// - Complexity: O(p) for p connections in their handshake (at most
    ///   ``TCPOptions/maxUnauthenticated``), only when the pool is full.
    private func makeRoom() -> String? {
        if pending.count >= options.maxUnauthenticated || total >= options.maxConnections {
            // The victim, by class, the oldest first in each: (0) a failed proof; then those
            // that never sent a byte: (1) quiet past `silentAfter`, (2) younger; then those that
            // sent: (3) a handshake stalled past `silentAfter` (a HELLO, then nothing), (4) one
            // under way. An honest client sends its HELLO at once, so it is in class 3 or 4: any
            // number of silent connections, young or old, go before it, even when a loaded
            // client is slow to answer the challenge. "Sent" counts bytes waiting unread too: a
            // loaded loop may accept a burst of connections before it reads the honest HELLO
            // among them, so a candidate that seems never to have sent is asked (FIONREAD) first.
            // (Each earlier order lost an honest client under load in CI: oldest first alone;
            // three classes; five that ranked a stalled handshake before a young silent
            // connection, which is where a slow honest client sat under a fast silent flood.)
            func rank(_ p: Pending) -> (Int, UInt64) {
                if p.failedProof { return (0, p.order) }
                let quiet = p.socket.quietFor > silentAfter
                if p.socket.hasReceived { return (quiet ? 3 : 4, p.order) }
                if p.sentUnread { return (4, p.order) }   // its first bytes wait to be read
                return (quiet ? 1 : 2, p.order)
            }
            var chosen: Pending?
            while let candidate = pending.values.min(by: { rank($0) < rank($1) }) {
                let r = rank(candidate).0
                if (r == 1 || r == 2), System.hasUnreadBytes(candidate.socket.fd) {
                    // Each connection is promoted once: at most one extra pass per promotion.
                    pending[ObjectIdentifier(candidate.socket)]?.sentUnread = true
                    continue
                }
                chosen = candidate
                break
            }
            guard let victim = chosen else { return "too many connections" }
            count("evicted from a full handshake pool")
            gauges.withLock { $0.evicted += 1 }
            victim.socket.abort("evicted: the handshake pool is full")
        }
        return nil
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

    /// Mirrors the pool's size (and `change`) into the gauges other threads read.
    private func publishPool(_ change: (inout HandshakeGauges) -> Void = { _ in }) {
        gauges.withLock { g in
            g.inHandshake = pending.count
            g.peakInHandshake = max(g.peakInHandshake, pending.count)
            change(&g)
        }
    }

    private func count(_ reason: String) {
        refusedCounts.withLock { $0[reason, default: 0] += 1 }
    }
}

/// The handshake pool of a listener: connections still in their handshake now and at most, and
/// since the start, handshakes completed, proofs failed and connections evicted.
public struct HandshakeGauges: Sendable, Equatable {
    public var inHandshake = 0, peakInHandshake = 0
    public var completed = 0, failedProofs = 0, evicted = 0

    /// Zeros.
    public init() {}
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
