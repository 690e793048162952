import ListSyncTransport
import ListSyncTCP

/// A connection to a NATS server or cluster, driven on an ``EventLoop``: publish, subscribe,
/// request/reply, flush; it reconnects (to the next server of the list, with backoff) when the
/// connection drops and subscribes again to everything it had.
///
/// Every mutable property is used on the loop's thread only; the public methods hop there.
/// While disconnected, publishes are kept (up to ``NATSOptions/pendingLimit`` bytes) and sent
/// after the reconnection; requests and flushes in flight fail with ``NATSError/disconnected``.
public final class NATSConnection: @unchecked Sendable {
    // @unchecked Sendable: the state below is touched on `loop`'s thread only (every public
    // method hops there with `loop.execute`); `servers`, `options` and `loop` are constants.

    /// The servers, tried in order (round-robin on reconnection).
    public let servers: [NATSServerAddress]
    /// The options.
    public let options: NATSOptions
    let loop: EventLoop

    private var socket: NATSSocket?
    private var connected = false
    private var userClosed = false
    private var finished = false
    private var nextServer = 0
    private var failuresInRound = 0
    private var round = 0
    private var attemptErrors: [String] = []
    private var firstConnect: ((Result<Void, NATSError>) -> Void)?
    private var connectTimer: TimerQueue.ID?
    private var keepAliveTimer: TimerQueue.ID?
    private var pending: [UInt8] = []
    private var flushWaiters: [(Result<Void, NATSError>) -> Void] = []
    private var eventListeners: [UInt64: (NATSConnectionEvent) -> Void] = [:]
    private var rng = SystemRandomNumberGenerator()

    /// Subscriptions by sid: what is sent again on reconnection.
    var subscriptions: [UInt64: Subscription] = [:]
    var nextSID: UInt64 = 0
    /// Requests in flight by their inbox token.
    var requests: [String: (timer: TimerQueue.ID, done: (Result<NATSMessage, NATSError>) -> Void)] = [:]
    var nextToken: UInt64 = 0
    /// The prefix of this connection's reply subjects (`_INBOX.<random>`).
    public let inboxPrefix: String
    var requestSID: UInt64?

    /// One subscription: its subject, queue group and who takes its messages (on the loop).
    struct Subscription {
        var subject: String
        var queue: String?
        var deliver: (NATSMessage) -> Void
        var finish: () -> Void
    }

    /// How many times the connection was re-established after a drop.
    public private(set) var reconnections = 0

    private init(servers: [NATSServerAddress], options: NATSOptions, loop: EventLoop) {
        precondition(!servers.isEmpty, "a NATS connection needs at least one server")
        self.servers = servers
        self.options = options
        self.loop = loop
        var g = SystemRandomNumberGenerator()
        inboxPrefix = "_INBOX." + String((0..<22).map { _ in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".randomElement(using: &g)! })
    }

    /// Connects to the first of `servers` that answers (each tried once, in order).
    ///
    /// - Throws: ``NATSError/connectFailed(_:)`` listing why each server failed.
    public static func connect(to servers: [NATSServerAddress], options: NATSOptions = NATSOptions(),
                               loop: EventLoop = .shared) async throws(NATSError) -> NATSConnection {
        let connection = NATSConnection(servers: servers, options: options, loop: loop)
        let result: Result<Void, NATSError> = await withCheckedContinuation { c in
            loop.execute {
                connection.firstConnect = { c.resume(returning: $0) }
                connection.attempt()
            }
        }
        try result.get()
        return connection
    }

    // MARK: Connecting

    private func attempt() {
        assert(loop.inLoop)
        guard !userClosed else { return }
        let server = servers[nextServer % servers.count]
        nextServer += 1
        let address: SocketAddress
        let s: NATSSocket
        do {
            guard let a = try SocketAddress.resolve(host: server.host, port: server.port).first else {
                throw TransportError.system(call: "getaddrinfo(\(server.host))", errno: 0)
            }
            address = a
            s = try NATSSocket(address: a, machine: NATSClientMachine(name: options.name, maxOutstandingPings: options.maxOutstandingPings), loop: loop)
        } catch {
            attemptFailed("\(server): \(error)")
            return
        }
        socket = s
        s.onAction = { [weak self, weak s] action in
            guard let self, let s, self.socket === s else { return }
            self.socketAction(action)
        }
        connectTimer = loop.schedule(after: options.connectTimeout) { [weak s] in
            s?.close("no handshake within \(self.options.connectTimeout)")
        }
        s.start(connectingTo: address)
    }

    private func attemptFailed(_ why: String) {
        assert(loop.inLoop)
        attemptErrors.append(why)
        failuresInRound += 1
        if let first = firstConnect, failuresInRound >= servers.count {
            firstConnect = nil
            userClosed = true
            first(.failure(.connectFailed(attemptErrors)))
            return
        }
        if userClosed { return }
        var delay = Duration.milliseconds(10)
        if failuresInRound >= servers.count {
            failuresInRound = 0
            round += 1
            if let max = options.maxReconnectRounds, round > max {
                close(because: "gave up after \(max) rounds of reconnection")
                return
            }
            delay = options.reconnectBackoff.delay(attempt: round - 1, using: &rng)
        }
        loop.schedule(after: delay) { [weak self] in self?.attempt() }
    }

    private func socketAction(_ action: NATSClientMachine.Action) {
        switch action {
        case let .connected(info):
            if let t = connectTimer { loop.cancel(t) }
            connectTimer = nil
            didConnect(info)
        case let .deliver(message):
            route(message)
        case .pong:
            if !flushWaiters.isEmpty { flushWaiters.removeFirst()(.success(())) }
        case let .serverError(text):
            emit(.serverError(text))
        case let .close(reason):
            if let t = connectTimer { loop.cancel(t) }
            connectTimer = nil
            socket = nil
            if connected {
                didDisconnect(reason)
            } else {
                attemptFailed(reason)
            }
        case .write:
            assertionFailure("the socket writes its own bytes")
        }
    }

    private func didConnect(_ info: NATSServerInfo) {
        guard let s = socket else { return }
        let again = firstConnect == nil
        connected = true
        failuresInRound = 0
        round = 0
        attemptErrors = []
        // Everything subscribed before, in sid order, then what was published while away.
        for sid in subscriptions.keys.sorted() {
            let sub = subscriptions[sid]!
            if let bytes = try? NATSCommand.subscribe(sub.subject, queue: sub.queue, sid: sid) { s.write(bytes) }
        }
        if !pending.isEmpty {
            s.write(pending)
            pending = []
        }
        armKeepAlive()
        if again {
            reconnections += 1
            emit(.reconnected(info))
        } else {
            let first = firstConnect
            firstConnect = nil
            first?(.success(()))
        }
    }

    private func didDisconnect(_ reason: String) {
        connected = false
        if let t = keepAliveTimer { loop.cancel(t) }
        keepAliveTimer = nil
        let waiters = flushWaiters
        flushWaiters = []
        for w in waiters { w(.failure(.disconnected(reason))) }
        let inFlight = requests
        requests = [:]
        for (_, r) in inFlight {
            loop.cancel(r.timer)
            r.done(.failure(.disconnected(reason)))
        }
        emit(.disconnected(reason))
        guard !userClosed else { return }
        if let max = options.maxReconnectRounds, max == 0 {
            close(because: "disconnected (\(reason)); reconnection is off")
            return
        }
        loop.schedule(after: .milliseconds(10)) { [weak self] in self?.attempt() }
    }

    private func armKeepAlive() {
        keepAliveTimer = loop.schedule(after: options.pingInterval) { [weak self] in
            guard let self, let s = self.socket, self.connected else { return }
            s.perform(s.machine.keepAliveTick())
            if self.connected { self.armKeepAlive() }
        }
    }

    // MARK: Writing

    /// Writes `bytes` now, or keeps them for the reconnection. Loop thread only.
    ///
    /// - Throws: ``NATSError/closed`` after ``close()``; ``NATSError/pendingLimit(_:)`` when
    ///   disconnected with too much kept.
    func send(_ bytes: [UInt8]) throws(NATSError) {
        assert(loop.inLoop)
        guard !userClosed else { throw .closed }
        if connected, let s = socket {
            s.write(bytes)
            if s.queued > options.pendingLimit {
                s.close("slow connection: over \(options.pendingLimit) bytes queued")
            }
            return
        }
        guard pending.count + bytes.count <= options.pendingLimit else { throw .pendingLimit(options.pendingLimit) }
        pending += bytes
    }

    /// Runs `body` on the loop's thread and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in loop.execute { c.resume(returning: body()) } }
    }

    /// Publishes `payload` to `subject` (with `headers`: `HPUB`). Returns once the bytes are
    /// queued, not when the server has them (``flush(timeout:)`` waits for that).
    ///
    /// - Throws: ``NATSError/invalid(_:)`` for a subject or headers that do not encode,
    ///   ``NATSError/closed``, ``NATSError/pendingLimit(_:)``.
    public func publish(_ subject: String, replyTo: String? = nil, headers: NATSHeaders? = nil, payload: [UInt8]) async throws(NATSError) {
        let bytes: [UInt8]
        do { bytes = try NATSCommand.publish(subject, replyTo: replyTo, headers: headers, payload: payload) } catch { throw .invalid(error) }
        let result: Result<Void, NATSError> = await onLoop { [self] in Result { () throws(NATSError) in try send(bytes) } }
        try result.get()
    }

    /// Waits until the server has processed everything sent before (a `PING` answered).
    ///
    /// - Throws: ``NATSError/timeout(_:)``, ``NATSError/disconnected(_:)``, ``NATSError/closed``.
    public func flush(timeout: Duration = .seconds(5)) async throws(NATSError) {
        let result: Result<Void, NATSError> = await withCheckedContinuation { c in
            loop.execute { [self] in
                guard !userClosed else { return c.resume(returning: .failure(.closed)) }
                guard connected, let s = socket else { return c.resume(returning: .failure(.disconnected("not connected"))) }
                var done = false
                let timer = loop.schedule(after: timeout) {
                    if !done { done = true; c.resume(returning: .failure(.timeout("flush"))) }
                }
                flushWaiters.append { r in
                    self.loop.cancel(timer)
                    if !done { done = true; c.resume(returning: r) }
                }
                s.perform(s.machine.ping())
            }
        }
        try result.get()
    }

    // MARK: Events and closing

    /// Calls `body` on the loop's thread for each later connection event; returns a handle for
    /// ``removeListener(_:)``. Loop thread only.
    package func addListener(_ body: @escaping (NATSConnectionEvent) -> Void) -> UInt64 {
        assert(loop.inLoop)
        nextSID += 1
        eventListeners[nextSID] = body
        return nextSID
    }

    /// ``addListener(_:)`` from any thread: `body` runs on the loop's thread for each later event.
    package func listen(_ body: @escaping @Sendable (NATSConnectionEvent) -> Void) async -> UInt64 {
        await onLoop { [self] in addListener(body) }
    }

    /// Stops calling a listener. Loop thread only.
    package func removeListener(_ id: UInt64) { eventListeners[id] = nil }

    private func emit(_ event: NATSConnectionEvent) {
        for (_, l) in eventListeners.sorted(by: { $0.key < $1.key }) { l(event) }
    }

    /// Whether the connection is up now.
    public var isConnected: Bool { get async { await onLoop { [self] in connected } } }

    /// Closes the connection for good: subscriptions end, requests fail with ``NATSError/closed``.
    public func close() async {
        await onLoop { [self] in close(because: "closed by the client") }
    }

    private func close(because reason: String) {
        assert(loop.inLoop)
        guard !finished else { return }
        finished = true
        let wasConnected = connected
        userClosed = true
        if let s = socket {
            socket = nil
            s.onAction = nil
            s.close(reason)
        }
        if let t = connectTimer { loop.cancel(t) }
        if let t = keepAliveTimer { loop.cancel(t) }
        if wasConnected || connected { didDisconnect(reason) }
        connected = false
        for w in flushWaiters { w(.failure(.closed)) }
        flushWaiters = []
        finishSubscriptions()
        emit(.closed(reason))
        eventListeners = [:]
    }
}

/// Something that happened to a ``NATSConnection``.
public enum NATSConnectionEvent: Sendable, Equatable {
    /// The connection dropped; it is reconnecting (unless closed).
    case disconnected(String)
    /// The connection is back, to this server; subscriptions were sent again.
    case reconnected(NATSServerInfo)
    /// A `-ERR` that did not end the connection.
    case serverError(String)
    /// The connection is closed for good.
    case closed(String)
}
