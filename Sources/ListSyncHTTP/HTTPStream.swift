import Synchronization

/// A response body written over time, for server-sent events (`text/event-stream`): the handler
/// returns an ``HTTPResponse`` carrying the stream, and keeps sending on it from any task.
///
/// ```swift
/// let stream = HTTPStream()
/// Task { while stream.send(ServerSentEvent(event: "tick", data: "1").bytes) { try await Task.sleep(for: .seconds(1)) } }
/// return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")], stream: stream)
/// ```
///
/// The response goes without `Content-Length` and with `Connection: close`: its end is the
/// connection's end (HTTP/1.1 §6.3, a body delimited by the close). Bytes sent before the head is
/// written wait in the stream, in order. When the client goes away, or does not read and more
/// than ``HTTPServerOptions/maxStreamBuffer`` bytes wait, the connection closes: ``send(_:)``
/// returns false from then on and the ``onClose(_:)`` handlers run, once.
public final class HTTPStream: Sendable {
    /// What the connection is asked to do.
    enum Event: Sendable { case bytes([UInt8]), finish }

    private struct State {
        var pending: [Event] = []
        var sink: (@Sendable (Event) -> Void)?
        var finished = false
        var closed = false
        var onClose: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    /// A stream not yet attached to a connection.
    public init() {}

    /// Queues `bytes` for the client; false (and nothing queued) once the stream is finished or
    /// its connection closed.
    ///
    /// - Complexity: O(1) amortized (the bytes are copied once onto the connection's queue).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        state.withLock { s in
            guard !s.closed, !s.finished else { return false }
            if let sink = s.sink { sink(.bytes(bytes)) } else { s.pending.append(.bytes(bytes)) }
            return true
        }
    }

    /// Ends the response: the connection closes once what was sent is written.
    public func finish() {
        state.withLock { s in
            guard !s.closed, !s.finished else { return }
            s.finished = true
            if let sink = s.sink { sink(.finish) } else { s.pending.append(.finish) }
        }
    }

    /// Whether the connection closed (the client left, was too slow, or the server stopped).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` once when the connection closes (at once if it has).
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.closed { return true }
            s.onClose.append(body)
            return false
        }
        if now { body() }
    }

    /// Attaches the connection (once its head is queued): what waited goes first, in order.
    func attach(_ sink: @escaping @Sendable (Event) -> Void) {
        state.withLock { s in
            precondition(s.sink == nil, "a stream serves one response")
            guard !s.closed else { return }
            for e in s.pending { sink(e) }
            s.pending = []
            s.sink = sink
        }
    }

    /// The connection closed: sends fail from now on; the close handlers run.
    func connectionClosed() {
        let handlers = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.closed else { return [] }
            s.closed = true
            s.sink = nil
            s.pending = []
            defer { s.onClose = [] }
            return s.onClose
        }
        for h in handlers { h() }
    }
}

/// One server-sent event (the HTML Living Standard's `text/event-stream`), encoded.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type (`event:`); nil: `message`.
    public var event: String?
    /// The data: each line becomes a `data:` line (CR LF, CR and LF all end a line).
    public var data: String
    /// The event id (`id:`), if any.
    public var id: String?

    /// An event of type `event` with `data`.
    public init(event: String? = nil, data: String, id: String? = nil) {
        (self.event, self.data, self.id) = (event, data, id)
    }

    /// The event on the wire, ending with the empty line. Line breaks in `event` and `id` become
    /// spaces, so neither can start another field.
    ///
    /// - Complexity: O(*n*) in the size of the data.
    public var bytes: [UInt8] {
        var out = ""
        if let event { out += "event: " + Self.oneLine(event) + "\n" }
        if let id { out += "id: " + Self.oneLine(id) + "\n" }
        for line in data.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            out += "data: " + line + "\n"
        }
        out += "\n"
        return Array(out.utf8)
    }

    /// A comment line (`: text`), which clients ignore: a keep-alive.
    public static func comment(_ text: String) -> [UInt8] { Array((": " + oneLine(text) + "\n\n").utf8) }

    private static func oneLine(_ s: String) -> String {
        String(s.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 })
    }
}
