import Foundation

/// What the server says of itself in `INFO` (the fields the client uses).
public struct NATSServerInfo: Sendable, Equatable, Decodable {
    /// The server's id.
    public var serverID: String
    /// The server's version text.
    public var version: String
    /// The largest payload the server takes.
    public var maxPayload: Int
    /// Whether the server takes headers (`HPUB`).
    public var headers: Bool
    /// Whether JetStream is on.
    public var jetStream: Bool
    /// Other servers of the cluster clients may reconnect to (`host:port`).
    public var connectURLs: [String]

    enum CodingKeys: String, CodingKey {
        case serverID = "server_id", version, maxPayload = "max_payload", headers, jetStream = "jetstream", connectURLs = "connect_urls"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        serverID = try c.decodeIfPresent(String.self, forKey: .serverID) ?? ""
        version = try c.decodeIfPresent(String.self, forKey: .version) ?? ""
        maxPayload = try c.decodeIfPresent(Int.self, forKey: .maxPayload) ?? 1 << 20
        headers = try c.decodeIfPresent(Bool.self, forKey: .headers) ?? false
        jetStream = try c.decodeIfPresent(Bool.self, forKey: .jetStream) ?? false
        connectURLs = try c.decodeIfPresent([String].self, forKey: .connectURLs) ?? []
    }

    /// Reads the JSON of an `INFO` line; `nil` if it is not a JSON object.
    public init?(json: String) {
        guard let v = try? JSONDecoder().decode(NATSServerInfo.self, from: Data(json.utf8)) else { return nil }
        self = v
    }
}

/// One client connection to a NATS server, as a state machine with no I/O: bytes and timer ticks
/// in, actions out. The driver (``NATSConnection``) moves them.
///
/// States: waiting for `INFO`, then (after sending `CONNECT` and `PING`) waiting for the first
/// `PONG`, then connected, then closed. Server `PING`s are answered at once; the keep-alive tick
/// sends a `PING` and closes the connection as stale when `maxOutstandingPings` went unanswered.
public struct NATSClientMachine: Sendable {
    /// What the driver must do.
    public enum Action: Sendable, Equatable {
        /// Write these bytes to the socket.
        case write([UInt8])
        /// The handshake is done (the server answered the first `PING`).
        case connected(NATSServerInfo)
        /// A message for a subscription.
        case deliver(NATSMessage)
        /// A `PONG` answering one of the driver's own `PING`s (``ping()``), in order.
        case pong
        /// A `-ERR` that does not end the connection (a permissions violation).
        case serverError(String)
        /// Close the socket, for this reason; the machine does nothing more.
        case close(String)
    }

    private enum State: Sendable { case awaitingInfo, awaitingPong, connected, closed }

    private var state: State = .awaitingInfo
    private var parser: NATSParser
    private var info: NATSServerInfo?
    private var outstandingPings = 0
    /// The `PING`s sent since the handshake whose `PONG` has not come, oldest first: `true` for
    /// the driver's (``ping()``), `false` for keep-alives (the server answers in order).
    private var unanswered: [Bool] = []
    private let name: String
    /// Keep-alive `PING`s that may go unanswered before the connection counts as stale.
    public let maxOutstandingPings: Int

    /// A machine that will introduce itself as `name`.
    public init(name: String, maxOutstandingPings: Int = 2, maxPayload: Int = 8 << 20) {
        precondition(maxOutstandingPings > 0)
        self.name = name
        self.maxOutstandingPings = maxOutstandingPings
        parser = NATSParser(maxPayload: maxPayload)
    }

    /// Whether the handshake is done and the connection not closed.
    public var isConnected: Bool { state == .connected }
    /// Whether the machine is closed.
    public var isClosed: Bool { state == .closed }

    /// Bytes from the server.
    ///
    /// - Complexity: O(bytes), plus each message's payload copied once.
    public mutating func receive(_ bytes: some Collection<UInt8>) -> [Action] {
        guard state != .closed else { return [] }
        let ops: [NATSServerOperation]
        do { ops = try parser.feed(bytes) } catch {
            state = .closed
            return [.close("protocol error from the server: \(error)")]
        }
        var actions: [Action] = []
        for op in ops {
            actions += handle(op)
            if state == .closed { break }
        }
        return actions
    }

    private mutating func handle(_ op: NATSServerOperation) -> [Action] {
        switch (state, op) {
        case (.closed, _):
            return []
        case (_, .ping):
            return [.write(NATSCommand.pong)]
        case (_, .ok):
            return []
        case let (.awaitingInfo, .info(json)):
            guard let parsed = NATSServerInfo(json: json) else {
                state = .closed
                return [.close("INFO is not a JSON object")]
            }
            info = parsed
            state = .awaitingPong
            return [.write(NATSCommand.connect(name: name) + NATSCommand.ping)]
        case (.awaitingInfo, _):
            state = .closed
            return [.close("the server spoke before its INFO")]
        case (_, .info(let json)):
            // Later INFOs update the cluster's addresses.
            if let parsed = NATSServerInfo(json: json) { info = parsed }
            return []
        case (.awaitingPong, .pong):
            state = .connected
            outstandingPings = 0
            guard let info else { preconditionFailure("connected without INFO") }
            return [.connected(info)]
        case let (_, .error(text)):
            let lower = text.lowercased()
            if lower.hasPrefix("permissions violation") || lower.hasPrefix("invalid subject") {
                return [.serverError(text)]
            }
            state = .closed
            return [.close("server error: \(text)")]
        case (.awaitingPong, .message):
            state = .closed
            return [.close("a message before the handshake ended")]
        case (.connected, .pong):
            outstandingPings = 0
            guard !unanswered.isEmpty else { return [] }
            return unanswered.removeFirst() ? [.pong] : []
        case let (.connected, .message(m)):
            return [.deliver(m)]
        }
    }

    /// The driver wants a `PONG` back (a flush): the bytes to write, or nothing if not connected.
    /// Each such `PING` is answered by exactly one ``Action/pong``, in order.
    public mutating func ping() -> [Action] {
        guard state == .connected else { return [] }
        unanswered.append(true)
        return [.write(NATSCommand.ping)]
    }

    /// The keep-alive tick: sends a `PING`, or closes when too many went unanswered.
    public mutating func keepAliveTick() -> [Action] {
        guard state == .connected else { return [] }
        if outstandingPings >= maxOutstandingPings {
            state = .closed
            return [.close("stale connection: \(outstandingPings) PINGs unanswered")]
        }
        outstandingPings += 1
        unanswered.append(false)
        return [.write(NATSCommand.ping)]
    }

    /// The socket closed (or the driver closed it): the machine is done.
    public mutating func markClosed() { state = .closed }

    /// The server's last `INFO`.
    public var serverInfo: NATSServerInfo? { info }
}
