import ListSyncTransport
import ListSyncTCP
import Synchronization

/// Limits of an ``HTTPServer`` (defaults suit a local admin port).
public struct HTTPServerOptions: Sendable {
    /// Connections open at once (64). When they are all open, a new one evicts an idle or slow
    /// one (see ``HTTPServer``); it is closed as soon as it is accepted only when every open
    /// connection is being answered.
    public var maxConnections = 64
    /// Longer than this without a byte, a connection waiting for a request counts as silent, and
    /// a request head begun as stalled (100 ms): the first evicted when the server is full.
    public var silentAfter: Duration = .milliseconds(100)
    /// Bytes of a request head: request line, headers and the empty line (8 KiB). Over it: 414
    /// (request line) or 431 (headers), then close.
    public var maxHeadBytes = 8192
    /// Header fields per request (64). Over it: 431, then close.
    public var maxHeaders = 64
    /// Time from the first byte of a request (or from the accept, for the first request) until
    /// its head is complete (5 s); a slow sender is closed without an answer.
    public var readTimeout: Duration = .seconds(5)
    /// Time a kept-alive connection may wait for its next request (10 s).
    public var idleTimeout: Duration = .seconds(10)
    /// Time a response may take to leave once queued (10 s): a client that does not read is closed.
    public var writeTimeout: Duration = .seconds(10)
    /// Requests read ahead while an earlier one is answered (16); more: the connection is closed.
    public var maxPipelinedRequests = 16
    /// After the last response of a closing connection, how long unread input is drained before
    /// the socket is closed (so the peer gets the response rather than a reset) (1 s).
    public var lingerTimeout: Duration = .seconds(1)
    /// The methods handed to the handler (`GET` and `HEAD`); others get 405 with `Allow`. A
    /// request with a body is refused whatever its method (413), so a `POST` carries its
    /// arguments in the query.
    public var methods: Set<String> = ["GET", "HEAD"]
    /// Bytes of a streamed response (``HTTPStream``) waiting for a client that does not read
    /// (1 MiB); over it the connection is closed.
    public var maxStreamBuffer = 1 << 20
    /// Streamed responses open at once (16); over it a handler's streamed response gets 503.
    public var maxStreams = 16

    /// The defaults.
    public init() {}
}

/// Counts kept by an ``HTTPServer`` (for its own `/metrics`).
public struct HTTPServerStatistics: Sendable, Hashable {
    /// Connections accepted and served.
    public var accepted = 0
    /// Connections closed at once because ``HTTPServerOptions/maxConnections`` were open, every
    /// one of them being answered.
    public var refused = 0
    /// Idle or slow connections closed to make room for a new one.
    public var evicted = 0
    /// Connections open now.
    public var open = 0
    /// Responses queued, error responses included.
    public var responses = 0
    /// Requests refused with 4xx/5xx by the server itself (malformed, over a limit, method).
    public var rejected = 0
    /// Connections closed at a read, idle or write deadline.
    public var timeouts = 0
    /// Streamed responses open now.
    public var streams = 0
    /// Streamed responses cut off: their client did not read (``HTTPServerOptions/maxStreamBuffer``).
    public var slowStreams = 0
}

/// A small HTTP/1.1 server for `GET` and `HEAD` (the daemon's `/healthz`, `/readyz` and
/// `/metrics`) and, where ``HTTPServerOptions/methods`` allows, other methods without a body;
/// responses with a length or streamed (``HTTPStream``, server-sent events); on the
/// ``EventLoop`` with non-blocking sockets.
///
/// Each request's handler runs in its own `Task`; its response is written back on the loop, in
/// request order (pipelined requests are read ahead and answered one after the other). Other
/// methods get 405 with `Allow`; malformed or oversized requests get 400, 413, 414,
/// 431 or 505 and the connection is closed. Keep-alive follows HTTP/1.1 and 1.0 rules and
/// `Connection: close`. Request bodies are not supported. Limits: ``HTTPServerOptions``.
///
/// Strangers cannot lock it (as the sync port, Docs/Security.md, "Connection limits"): when
/// ``HTTPServerOptions/maxConnections`` are open, a new connection evicts an idle or slow one
/// (closing ones, then those silent since their accept, kept-alive idle ones, stalled request
/// heads; oldest first in each) instead of being refused. A connection whose request is being
/// answered, or that holds a streamed response, is never evicted.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `acceptor` and `open` are touched only on `loop`'s thread (every entry
    // point hops there with `loop.execute`); `stats` is a Mutex; the rest is immutable.

    /// The handler of requests.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// The address it listens on (with the port chosen, when 0 was asked).
    public let address: SocketAddress
    /// The port it listens on.
    public var port: UInt16 { address.port }
    let loop: EventLoop
    let options: HTTPServerOptions
    let handler: Handler
    private let fd: Int32
    let stats = Mutex(HTTPServerStatistics())

    // Loop-thread state.
    private var acceptor: HTTPAcceptor?
    private var open: [ObjectIdentifier: HTTPConnection] = [:]

    /// Listens on `host:port` (port 0: any free port, see ``port``) and answers with `handler`.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming the call that failed (`bind` on a
    ///   port in use, for one).
    public static func listen(host: String, port: UInt16, options: HTTPServerOptions = .init(),
                              loop: EventLoop = .shared,
                              handler: @escaping Handler) async throws(TransportError) -> HTTPServer {
        let (fd, bound) = try System.listeningSocket(host: host, port: port, backlog: 128)
        let server = HTTPServer(fd: fd, address: bound, options: options, loop: loop, handler: handler)
        try await loop.registerAcceptor(fd, install: {
            let acceptor = HTTPAcceptor(server)
            server.acceptor = acceptor
            return acceptor
        }, uninstall: { server.acceptor = nil })
        return server
    }

    private init(fd: Int32, address: SocketAddress, options: HTTPServerOptions, loop: EventLoop, handler: @escaping Handler) {
        self.fd = fd
        self.address = address
        self.options = options
        self.loop = loop
        self.handler = handler
    }

    /// What the server has counted so far.
    public var statistics: HTTPServerStatistics { stats.withLock { $0 } }

    /// Stops listening and closes every open connection (handlers still running are cancelled
    /// and their responses dropped); returns once all are closed. The loop must still run.
    ///
    /// - Complexity: O(*c*) in the number of open connections.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if acceptor != nil {
                    loop.deregister(fd)
                    System.close(fd)
                    acceptor = nil
                }
                for c in Array(open.values) { c.closeNow() }
                open = [:]
                done.resume()
            }
        }
    }

    // MARK: Loop thread

    fileprivate func acceptReady() {
        while acceptor != nil {
            let accepted: (Int32, SocketAddress)?
            do { accepted = try System.accept(fd) } catch { return }
            guard let (client, _) = accepted else { return }
            if open.count >= options.maxConnections, !makeRoom() {
                stats.withLock { $0.refused += 1 }   // counted before the peer can see the close
                System.close(client)
                continue
            }
            try? System.setNoDelay(client)
            let connection = HTTPConnection(fd: client, server: self)
            let id = ObjectIdentifier(connection)
            open[id] = connection
            stats.withLock { $0.accepted += 1; $0.open += 1 }
            connection.onClose = { [weak self] in
                guard let self else { return }
                self.open[id] = nil
                self.stats.withLock { $0.open -= 1 }
            }
            connection.start()
        }
    }
}

extension HTTPServer {
    /// Evicts the open connection that ranks first (``HTTPConnection/evictionRank(now:silentAfter:)``);
    /// `false` when none may be evicted. A connection that seems never to have sent a byte is
    /// asked first whether bytes wait unread (a loaded loop may accept a burst before it reads
    /// the honest request among them): if so it ranks as a head under way.
    ///
    /// - Complexity: O(*c*) per candidate passed over, for *c* open connections (64 by default).
    fileprivate func makeRoom() -> Bool {
        let now = EventLoop.now()
        let silentAfter = options.silentAfter.nanoseconds
        var promoted: Set<ObjectIdentifier> = []
        func rank(_ id: ObjectIdentifier, _ c: HTTPConnection) -> (Int, UInt64)? {
            guard let r = c.evictionRank(now: now, silentAfter: silentAfter) else { return nil }
            return promoted.contains(id) ? (5, r.since) : (r.rank, r.since)
        }
        while true {
            var best: (ObjectIdentifier, HTTPConnection, (Int, UInt64))?
            for (id, c) in open {
                guard let r = rank(id, c) else { continue }
                if best.map({ r < $0.2 }) ?? true { best = (id, c, r) }
            }
            guard let (id, victim, r) = best else { return false }
            if (r.0 == 1 || r.0 == 4), victim.hasUnreadInput {
                promoted.insert(id)   // each once: at most one extra pass per promotion
                continue
            }
            victim.evict()
            return true
        }
    }
}

/// The listening socket's handler (kept apart so the server is not retained by the loop).
private final class HTTPAcceptor: EventHandler {
    weak var server: HTTPServer?
    init(_ server: HTTPServer) { self.server = server }
    func readable() { server?.acceptReady() }
    func writable() {}
}
