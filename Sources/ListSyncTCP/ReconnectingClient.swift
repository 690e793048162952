import ListSync

/// Jittered exponential backoff: the wait before reconnect attempt `n` is drawn from
/// `[d/2, d]` where `d = min(initial · 2ⁿ, maximum)`.
public struct Backoff: Sendable {
    /// The first wait (before jitter).
    public var initial: Duration
    /// The longest wait.
    public var maximum: Duration

    /// 0.5 s doubling to 15 s.
    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(15)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait before attempt `attempt` (0-based), jittered with `rng`.
    public func delay(attempt: Int, using rng: inout some RandomNumberGenerator) -> Duration {
        let base = Double(initial.nanoseconds) * Double(1 << min(attempt, 30))
        let capped = min(base, Double(maximum.nanoseconds))
        let jittered = capped / 2 + Double.random(in: 0...(capped / 2), using: &rng)
        return .nanoseconds(Int64(jittered))
    }
}

/// Keeps a ``Replica`` connected to a server over TCP: connects, hands each connection to the
/// replica (which says hello, so the two resync by version vector), and when a connection is
/// lost or cannot be made, tries again after a jittered exponential ``Backoff``, reset by every
/// connection that completes its handshake.
public actor ReconnectingClient {
    /// The replica kept connected.
    public let replica: Replica
    private let host: String
    private let port: UInt16
    private let key: [UInt8]
    private let options: TCPOptions
    private let backoff: Backoff
    private let loop: EventLoop
    private var task: Task<Void, Never>?
    private var current: TCPTransport?
    /// Connections made so far (handshakes completed).
    public private(set) var connections = 0
    /// The last failure to connect, if the last attempt failed.
    public private(set) var lastError: TransportError?

    /// A client for `replica` that will connect to `host:port` once ``start()`` is called.
    public init(replica: Replica, host: String, port: UInt16, key: [UInt8], options: TCPOptions = .init(),
                backoff: Backoff = .init(), loop: EventLoop = .shared) {
        self.replica = replica
        self.host = host
        self.port = port
        self.key = key
        self.options = options
        self.backoff = backoff
        self.loop = loop
    }

    /// Whether a connection is open now.
    public var isConnected: Bool { current?.isOpen ?? false }

    /// Starts connecting (and reconnecting until ``stop()``).
    public func start() {
        guard task == nil else { return }
        task = Task { await self.run() }
    }

    /// Stops reconnecting and closes the connection; returns once it is closed.
    public func stop() async {
        task?.cancel()
        let t = task
        task = nil
        await current?.close()
        await t?.value
        current = nil
    }

    /// Closes the current connection as if the network dropped it (tests, and a manual "reconnect now").
    public func dropConnection() async {
        await current?.close(reason: "dropped by the client")
    }

    private func run() async {
        var attempt = 0
        var rng = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            do {
                let transport = try await TCPTransport.connect(host: host, port: port, key: key, options: options, loop: loop)
                if Task.isCancelled {
                    await transport.close()
                    return
                }
                current = transport
                connections += 1
                lastError = nil
                attempt = 0
                await replica.connect(transport)
                await transport.closed()
                current = nil
            } catch {
                lastError = error
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: backoff.delay(attempt: attempt, using: &rng))
            attempt += 1
        }
    }
}
