import ListSyncTCP
import ListSyncTransport

/// A NATS server's address: `nats://host:port`, `host:port` or `host` (port 4222).
public struct NATSServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or numeric address.
    public var host: String
    /// The port.
    public var port: UInt16

    /// An address from its parts.
    public init(host: String, port: UInt16 = 4222) {
        self.host = host
        self.port = port
    }

    /// Parses `nats://host:port`, `host:port` or `host`; `[v6]:port` for IPv6. `nil` if malformed.
    public init?(parsing text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("nats://") { rest = rest.dropFirst(7) }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@") else { return nil }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let tail = rest[rest.index(after: close)...]
            if tail.isEmpty { port = 4222 } else {
                guard tail.hasPrefix(":"), let p = UInt16(tail.dropFirst()), p > 0 else { return nil }
                port = p
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let p = UInt16(rest[rest.index(after: colon)...]), p > 0 else { return nil }
            host = String(rest[..<colon])
            port = p
        } else {
            host = String(rest)
            port = 4222
        }
        guard !host.isEmpty, !host.contains(" ") else { return nil }
    }

    /// Parses a comma-separated list (`nats://a:4222,nats://b:4222`); `nil` if any is malformed
    /// or the list is empty.
    public static func list(_ text: String) -> [NATSServerAddress]? {
        let parts = text.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        guard !parts.isEmpty else { return nil }
        var out: [NATSServerAddress] = []
        for p in parts {
            guard let a = NATSServerAddress(parsing: p) else { return nil }
            out.append(a)
        }
        return out
    }

    public var description: String { host.contains(":") ? "nats://[\(host)]:\(port)" : "nats://\(host):\(port)" }
}

/// How a ``NATSConnection`` behaves.
public struct NATSOptions: Sendable {
    /// The name the client gives in `CONNECT` (shown by the server's monitoring).
    public var name: String = "listsync"
    /// The longest wait for a server's handshake.
    public var connectTimeout: Duration = .seconds(5)
    /// How often a keep-alive `PING` goes out.
    public var pingInterval: Duration = .seconds(10)
    /// Keep-alive `PING`s unanswered before the connection counts as stale and is dropped.
    public var maxOutstandingPings: Int = 2
    /// The wait between rounds over the server list when none answers.
    public var reconnectBackoff = Backoff(initial: .milliseconds(100), maximum: .seconds(2))
    /// Rounds over the server list before giving up (`nil`: never; `0`: no reconnection).
    public var maxReconnectRounds: Int? = nil
    /// Bytes kept while disconnected (and queued on a slow socket) before publishing fails.
    public var pendingLimit: Int = 8 << 20
    /// The default wait for an answer to a request.
    public var requestTimeout: Duration = .seconds(5)

    /// The defaults.
    public init() {}
}

/// Why a NATS call failed.
public enum NATSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No server of the list could be reached; why for each attempt.
    case connectFailed([String])
    /// The connection was closed with ``NATSConnection/close()`` (or gave up reconnecting).
    case closed
    /// The connection dropped while this call waited; it is reconnecting.
    case disconnected(String)
    /// No answer in time.
    case timeout(String)
    /// Nobody listens on the request's subject (status 503).
    case noResponders(String)
    /// A subject, queue or headers that do not encode.
    case invalid(NATSProtocolError)
    /// Too many bytes kept while disconnected.
    case pendingLimit(Int)

    public var description: String {
        switch self {
        case let .connectFailed(why): return "cannot connect to NATS: \(why.joined(separator: "; "))"
        case .closed: return "the NATS connection is closed"
        case let .disconnected(why): return "the NATS connection dropped: \(why)"
        case let .timeout(what): return "no answer in time: \(what)"
        case let .noResponders(subject): return "no responders on \(subject)"
        case let .invalid(e): return "invalid: \(e)"
        case let .pendingLimit(n): return "over \(n) bytes kept while disconnected"
        }
    }
}
