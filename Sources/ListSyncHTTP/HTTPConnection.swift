import ListSyncTransport
import ListSyncTCP

/// One connection of an ``HTTPServer``, on its loop's thread: reads feed the parser, parsed
/// requests wait in order, one handler runs at a time, its response is written back, and one
/// timer holds whichever deadline applies now (read, idle, write or linger).
final class HTTPConnection: EventHandler, @unchecked Sendable {
    // @unchecked Sendable: every mutable property is used only on the loop's thread; the handler
    // task only carries the connection back there with `loop.execute`.

    let fd: Int32
    let server: HTTPServer   // strong: the server drops its connections as they close
    let loop: EventLoop
    let options: HTTPServerOptions
    /// Called once when the socket is closed.
    var onClose: (() -> Void)?

    private var parser: HTTPRequestParser
    /// Requests read ahead (or the parse error that ends the connection), in order.
    private var queue: [Result<HTTPRequest, HTTPParseError>] = []
    /// The handler running now, if any.
    private var task: Task<Void, Never>?
    private var outbound: [UInt8] = []
    private var sent = 0
    private var watchingWrites = false
    /// The last response is queued: close once it is written.
    private var closeAfterWrite = false
    /// Writing side shut down; input is read and dropped until end of stream or the deadline.
    private var lingering = false
    /// The streamed response being written, if any: no deadline while nothing waits to be
    /// written, input is dropped, and the connection closes when it finishes.
    private var stream: HTTPStream?
    private var closed = false

    // Deadlines (monotonic nanoseconds).
    private let acceptedAt = EventLoop.now()
    private var partialStart: UInt64?
    private var lastResponse: UInt64 = 0
    private var writeStart: UInt64 = 0
    private var lingerStart: UInt64 = 0
    private var served = 0
    /// When its last bytes arrived (the accept, before any).
    private var lastReceived = EventLoop.now()
    /// Whether any byte arrived.
    private var hasReceived = false
    private var timer: TimerQueue.ID?
    private var armed: UInt64?

    init(fd: Int32, server: HTTPServer) {
        self.fd = fd
        self.server = server
        self.loop = server.loop
        self.options = server.options
        self.parser = HTTPRequestParser(maxHeadBytes: server.options.maxHeadBytes, maxHeaders: server.options.maxHeaders)
    }

    func start() {
        do { try loop.register(fd, self, writable: false) } catch {
            closeNow()
            return
        }
        rearm()
    }

    // MARK: EventHandler

    func readable() {
        guard !closed else { return }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while !closed {
            let n: Int?
            do { n = try buffer.withUnsafeMutableBytes { b throws(TransportError) in try System.read(fd, b) } } catch {
                closeNow()
                return
            }
            guard let n else { break }
            if n == 0 {
                // The peer is gone (or half-closed): nothing more can be asked; stop here.
                closeNow()
                return
            }
            hasReceived = true
            lastReceived = EventLoop.now()
            if lingering || parser.hasFailed || closeAfterWrite || stream != nil { continue }   // drained and dropped
            parser.append(buffer[0..<n])
            if partialStart == nil { partialStart = EventLoop.now() }
            var completed = false
            while true {
                do {
                    guard let request = try parser.next() else { break }
                    queue.append(.success(request))
                    completed = true
                } catch {
                    queue.append(.failure(error))
                    break
                }
                if queue.count > options.maxPipelinedRequests {
                    closeNow()
                    return
                }
            }
            if parser.hasFailed || parser.bufferedByteCount == 0 {
                partialStart = nil
            } else if completed {
                partialStart = EventLoop.now()
            }
            if n < buffer.count { break }
        }
        advance()
        rearm()
    }

    func writable() {
        guard !closed else { return }
        flush()
        rearm()
    }

    // MARK: Eviction

    /// Where this connection stands to be evicted when the server is full (lower first, then
    /// the older `since`), or `nil` when it must not be: a request is being answered (a handler
    /// runs, requests wait) or a streamed response is open. The classes, as the sync port's
    /// handshake pool (``ListSyncTCP/TCPListener``): (0) closing anyway (lingering); (1) never
    /// sent a byte, quiet past `silentAfter`; (2) kept alive and idle between requests; (3) a
    /// request head begun and stalled past `silentAfter` (a slow sender); (4) never sent a byte,
    /// young; (5) a head under way; (6) an answer its client does not read. An honest client sends
    /// its request at once and reads its answer, so any number of idle and slow connections go
    /// before it.
    func evictionRank(now: UInt64, silentAfter: UInt64) -> (rank: Int, since: UInt64)? {
        if closed { return nil }
        if lingering { return (0, lingerStart) }
        if task != nil || !queue.isEmpty || stream != nil { return nil }
        if sent < outbound.count { return (6, writeStart) }
        let quiet = now &- lastReceived > silentAfter
        if let p = partialStart { return (quiet ? 3 : 5, p) }
        if served > 0 { return (2, lastResponse) }
        return hasReceived ? (quiet ? 3 : 5, lastReceived) : (quiet ? 1 : 4, acceptedAt)
    }

    /// Whether bytes wait unread on its socket (the loop has not reached it yet).
    var hasUnreadInput: Bool { System.hasUnreadBytes(fd) }

    /// Closes it to make room for a new connection (counted as an eviction).
    func evict() {
        server.stats.withLock { $0.evicted += 1 }
        closeNow()
    }

    // MARK: Requests

    /// Starts the next queued request if none is running.
    private func advance() {
        while !closed, task == nil, !closeAfterWrite, stream == nil, !queue.isEmpty {
            switch queue.removeFirst() {
            case let .failure(error):
                server.stats.withLock { $0.rejected += 1 }
                respond(HTTPResponse(status: error.statusCode, text: "\(error)\n"), to: nil)
            case let .success(request) where !options.methods.contains(request.method):
                server.stats.withLock { $0.rejected += 1 }
                respond(HTTPResponse(status: 405, text: "method \(request.method) not allowed\n",
                                     headers: [("Allow", options.methods.sorted().joined(separator: ", "))]), to: request)
            case let .success(request):
                let handler = server.handler
                let loop = self.loop
                task = Task { [self] in
                    let response = await handler(request)
                    loop.execute { [self] in
                        guard !closed else { return }
                        task = nil
                        respond(response, to: request)
                        advance()
                        rearm()
                    }
                }
            }
        }
    }

    /// Queues `response` for `request` (`nil`: a parse error, so the connection closes after it).
    private func respond(_ response: HTTPResponse, to request: HTTPRequest?) {
        if let s = response.stream { return respond(streaming: s, response, to: request) }
        let keepAlive = request?.keepAlive ?? false
        let header: Bool? = !keepAlive ? false : (request?.version == .http1_0 ? true : nil)
        // Counted before the bytes leave: a client that read the response sees it counted.
        server.stats.withLock { $0.responses += 1 }
        write(response.serialized(keepAlive: header, includeBody: request?.method != "HEAD"))
        served += 1
        lastResponse = EventLoop.now()
        if !keepAlive {
            closeAfterWrite = true
            queue = []
            if sent == outbound.count { startLinger() }
        }
    }

    /// Queues the head of a streamed response and attaches its stream; the connection takes no
    /// more requests and closes when the stream finishes (or at once, for `HEAD` or over the
    /// limit of streams).
    private func respond(streaming s: HTTPStream, _ response: HTTPResponse, to request: HTTPRequest?) {
        let admitted = server.stats.withLock { st -> Bool in
            st.responses += 1
            guard st.streams < options.maxStreams else { return false }
            st.streams += 1
            return true
        }
        queue = []
        served += 1
        lastResponse = EventLoop.now()
        guard admitted else {
            s.connectionClosed()
            var refused = HTTPResponse(status: 503, text: "too many streams open; try again later\n")
            refused.headers.append(("Retry-After", "5"))
            write(refused.serialized(keepAlive: false))
            closeAfterWrite = true
            if sent == outbound.count { startLinger() }
            return
        }
        stream = s
        write(response.serialized(keepAlive: false))
        if request?.method == "HEAD" { s.finish() }
        let loop = self.loop
        s.attach { [weak self] event in
            loop.execute { [weak self] in self?.streamed(event) }
        }
    }

    /// An event of the streamed response, on the loop's thread.
    private func streamed(_ event: HTTPStream.Event) {
        guard !closed else { return }
        switch event {
        case let .bytes(b):
            write(b)
            if outbound.count - sent > options.maxStreamBuffer {
                server.stats.withLock { $0.slowStreams += 1 }
                closeNow()
                return
            }
        case .finish:
            closeAfterWrite = true
            if sent == outbound.count { startLinger() }
        }
        rearm()
    }

    // MARK: Writing and closing

    private func write(_ bytes: [UInt8]) {
        guard !closed else { return }
        if sent == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            sent = 0
            writeStart = EventLoop.now()
        }
        outbound += bytes
        flush()
    }

    private func flush() {
        while sent < outbound.count {
            let n: Int?
            do {
                n = try outbound.withUnsafeBytes { b throws(TransportError) in
                    try System.write(fd, UnsafeRawBufferPointer(rebasing: b[sent...]))
                }
            } catch {
                closeNow()
                return
            }
            guard let n else { break }
            sent += n
        }
        let want = sent < outbound.count
        if want != watchingWrites {
            watchingWrites = want
            loop.setWritable(fd, want)
        }
        if !want && closeAfterWrite && !lingering { startLinger() }
    }

    /// The last response is out: shut down the writing side, so the peer reads end of stream,
    /// and drain its input until it closes or the linger deadline (closing with unread input
    /// would reset the connection and could lose the response on the way).
    private func startLinger() {
        guard !lingering, !closed else { return }
        endStream()
        lingering = true
        lingerStart = EventLoop.now()
        do { try System.shutdownWrite(fd) } catch { closeNow() }
    }

    /// The streamed response is over (written whole, or the connection closes): it stops counting.
    private func endStream() {
        guard let s = stream else { return }
        stream = nil
        server.stats.withLock { $0.streams -= 1 }
        s.connectionClosed()
    }

    /// The deadline that applies now, re-armed only when it changes.
    private func rearm() {
        guard !closed else { return }
        let deadline: UInt64?
        if lingering {
            deadline = lingerStart &+ options.lingerTimeout.nanoseconds
        } else if sent < outbound.count {
            deadline = writeStart &+ options.writeTimeout.nanoseconds
        } else if task != nil || !queue.isEmpty || closeAfterWrite || stream != nil {
            deadline = nil
        } else if let p = partialStart {
            deadline = p &+ options.readTimeout.nanoseconds
        } else if served == 0 {
            deadline = acceptedAt &+ options.readTimeout.nanoseconds
        } else {
            deadline = lastResponse &+ options.idleTimeout.nanoseconds
        }
        guard deadline != armed else { return }
        if let t = timer { loop.cancel(t) }
        timer = nil
        armed = deadline
        guard let deadline else { return }
        let now = EventLoop.now()
        let delay = deadline > now ? Duration.nanoseconds(Int64(deadline - now)) : .zero
        timer = loop.schedule(after: delay) { [weak self] in
            guard let self, !self.closed else { return }
            self.timer = nil
            self.armed = nil
            if !self.lingering { self.server.stats.withLock { $0.timeouts += 1 } }
            self.closeNow()
        }
    }

    /// Closes the socket at once (queued output is dropped) and cancels a running handler.
    func closeNow() {
        guard !closed else { return }
        closed = true
        if let t = timer { loop.cancel(t) }
        timer = nil
        task?.cancel()
        task = nil
        endStream()
        queue = []
        outbound = []
        loop.deregister(fd)
        System.close(fd)
        onClose?()
        onClose = nil
    }
}
