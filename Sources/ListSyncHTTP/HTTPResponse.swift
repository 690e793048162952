/// An HTTP response: status, headers and a body, serialized by the server with `Content-Length`.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code (`200`, `404`, …).
    public var status: Int
    /// The reason phrase; the standard one for ``status`` unless given.
    public var reason: String
    /// Header fields to send. `Content-Length`, `Connection` and `Transfer-Encoding` are the
    /// server's: given ones are dropped. Without `Content-Type`, `text/plain; charset=utf-8` is sent.
    public var headers: [(name: String, value: String)]
    /// The body (not sent in answer to `HEAD`, though its length is).
    public var body: [UInt8]
    /// A body written over time instead of ``body`` (server-sent events): the head goes without
    /// `Content-Length`, with `Connection: close`, and the body ends with the connection.
    public var stream: HTTPStream?

    /// A response with `body` as bytes.
    public init(status: Int, reason: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? Self.standardReason(status)
        self.headers = headers
        self.body = body
    }

    /// A response whose body is `text` in UTF-8, with the given `Content-Type`.
    public init(status: Int = 200, text: String, contentType: String = "text/plain; charset=utf-8",
                headers: [(name: String, value: String)] = []) {
        self.init(status: status, headers: [("Content-Type", contentType)] + headers, body: Array(text.utf8))
    }

    /// A response whose body is `stream`, written as the handler sends on it.
    public init(status: Int = 200, headers: [(name: String, value: String)] = [], stream: HTTPStream) {
        self.init(status: status, headers: headers)
        self.stream = stream
    }

    /// The first value of the header `name` (case-insensitive), or `nil`.
    ///
    /// - Complexity: O(*n*) in the number of headers.
    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.reason == b.reason && a.body == b.body && a.stream === b.stream && a.headers.count == b.headers.count
            && zip(a.headers, b.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// The bytes on the wire: status line, headers (with `Content-Length`, `Content-Type` and,
    /// when the connection closes after it, `Connection: close`), the empty line, and the body
    /// unless `includeBody` is false (answers to `HEAD`). CR and LF in header names, values and
    /// the reason become spaces, so a handler cannot split the response.
    ///
    /// - Parameter keepAlive: `nil` sends no `Connection` header (1.1 keep-alive); `false` sends
    ///   `close`; `true` sends `keep-alive` (for HTTP/1.0 clients that asked for it). A response
    ///   with a ``stream`` is the head alone, without `Content-Length` and with `Connection: close`.
    /// - Complexity: O(*n*) in the size of the response.
    public func serialized(keepAlive: Bool?, includeBody: Bool = true) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.clean(reason))\r\n"
        var hasType = false
        for (name, value) in headers {
            switch name.lowercased() {
            case "content-length", "connection", "transfer-encoding": continue
            case "content-type": hasType = true
            default: break
            }
            head += "\(Self.clean(name)): \(Self.clean(value))\r\n"
        }
        if !hasType { head += "Content-Type: text/plain; charset=utf-8\r\n" }
        if stream == nil { head += "Content-Length: \(body.count)\r\n" }
        switch stream == nil ? keepAlive : false {
        case false?: head += "Connection: close\r\n"
        case true?: head += "Connection: keep-alive\r\n"
        case nil: break
        }
        head += "\r\n"
        var out = Array(head.utf8)
        if includeBody, stream == nil { out += body }
        return out
    }

    private static func clean(_ s: String) -> String {
        s.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" })
            ? String(s.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" ? " " : $0 }) : s
    }

    /// The standard reason phrase of `status` (RFC 9110), or `"Unknown"`.
    public static func standardReason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 421: return "Misdirected Request"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Unknown"
        }
    }
}
