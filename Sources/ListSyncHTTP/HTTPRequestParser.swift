/// An HTTP version this server speaks: 1.0 or 1.1.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    /// The major version (1).
    public var major: Int
    /// The minor version (0 or 1).
    public var minor: Int

    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// `HTTP/major.minor`.
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// A parsed HTTP request head (this server takes no request bodies).
public struct HTTPRequest: Sendable, Equatable, CustomStringConvertible {
    /// The method as sent (`GET`, `HEAD`, …); methods are case-sensitive.
    public var method: String
    /// The request target's path, without its query (`/metrics`); `*` for `OPTIONS *`.
    public var path: String
    /// The query after `?`, without the `?`; `nil` when the target has none.
    public var query: String?
    /// The version of the request line.
    public var version: HTTPVersion
    /// The header fields in the order sent, values trimmed of surrounding spaces and tabs.
    public var headers: [(name: String, value: String)]

    /// A request head.
    public init(method: String, path: String, query: String? = nil, version: HTTPVersion = .http1_1,
                headers: [(name: String, value: String)] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
    }

    /// The first value of the header `name` (case-insensitive), or `nil`.
    ///
    /// - Complexity: O(*n*) in the number of headers.
    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }

    /// Whether the connection stays open after the response: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive`.
    ///
    /// - Complexity: O(*n*) in the size of the headers.
    public var keepAlive: Bool {
        var close = false, keep = false
        for (name, value) in headers where name.lowercased() == "connection" {
            for token in value.split(separator: ",") {
                switch token.trimmingSpaces.lowercased() {
                case "close": close = true
                case "keep-alive": keep = true
                default: break
                }
            }
        }
        if close { return false }
        return version == .http1_1 || keep
    }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.version == b.version
            && a.headers.count == b.headers.count
            && zip(a.headers, b.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public var description: String {
        "\(method) \(path)\(query.map { "?" + $0 } ?? "") \(version)"
    }
}

/// Why a request head was refused; each case maps to the status the server answers before it
/// closes the connection (``statusCode``).
public enum HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The request line alone is over the head limit (414).
    case requestLineTooLong(limit: Int)
    /// The request line and headers are over the head limit (431).
    case headersTooLarge(limit: Int)
    /// More header fields than allowed (431).
    case tooManyHeaders(limit: Int)
    /// The request line is not `method SP target SP HTTP/x.y` (400).
    case malformedRequestLine
    /// A well-formed version other than 1.0 or 1.1 (505).
    case unsupportedVersion(String)
    /// A header line is malformed: no colon, a bad name, a control character, a folded line, a
    /// bad or conflicting `Content-Length` or `Host` (400); the text says which.
    case badHeader(String)
    /// HTTP/1.1 requires a `Host` header (400).
    case missingHost
    /// The request announces a body (`Content-Length` > 0 or `Transfer-Encoding`), which this
    /// server does not take (413).
    case bodyNotSupported

    /// The HTTP status the server answers with.
    public var statusCode: Int {
        switch self {
        case .requestLineTooLong: return 414
        case .headersTooLarge, .tooManyHeaders: return 431
        case .malformedRequestLine, .badHeader, .missingHost: return 400
        case .unsupportedVersion: return 505
        case .bodyNotSupported: return 413
        }
    }

    public var description: String {
        switch self {
        case let .requestLineTooLong(limit): return "request line over \(limit) bytes"
        case let .headersTooLarge(limit): return "request head over \(limit) bytes"
        case let .tooManyHeaders(limit): return "more than \(limit) header fields"
        case .malformedRequestLine: return "malformed request line"
        case let .unsupportedVersion(v): return "unsupported version \(v)"
        case let .badHeader(why): return "bad header: \(why)"
        case .missingHost: return "HTTP/1.1 request without Host"
        case .bodyNotSupported: return "request bodies are not supported"
        }
    }
}

/// Turns bytes, split anywhere, into request heads: a pure state machine with no socket.
///
/// Append bytes with ``append(_:)``, then call ``next()`` until it returns `nil` (more bytes
/// needed). Several pipelined requests in one buffer come out one per call. Lines end in CRLF or
/// a bare LF; empty lines before a request line are skipped (and counted against the limit). The
/// head (request line, headers and the empty line that ends them) may be at most `maxHeadBytes`
/// bytes: exactly that many pass, one more fails, and the failure is detected as soon as it is
/// certain, before the rest arrives. After an error the parser stays failed: every later
/// ``next()`` throws the same error.
///
/// - Complexity: each byte is scanned once (amortized O(1) per byte appended).
public struct HTTPRequestParser: Sendable {
    /// The most bytes a request head may have.
    public let maxHeadBytes: Int
    /// The most header fields a request may have.
    public let maxHeaders: Int

    private var buffer: [UInt8] = []
    /// Where the current head starts in `buffer`.
    private var headStart = 0
    /// Where the current (unfinished) line starts.
    private var lineStart = 0
    /// Where the search for the next LF resumes.
    private var scanned = 0
    private var inHeaders = false
    private var pending = HTTPRequest(method: "", path: "")
    private var failure: HTTPParseError?

    /// A parser with the given limits (defaults: 8 KiB of head, 64 headers).
    public init(maxHeadBytes: Int = 8192, maxHeaders: Int = 64) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaders = maxHeaders
    }

    /// Bytes appended and not yet part of a request returned by ``next()``.
    public var bufferedByteCount: Int { buffer.count - headStart }

    /// Whether the parser has failed (every ``next()`` throws).
    public var hasFailed: Bool { failure != nil }

    /// Appends received bytes.
    ///
    /// - Complexity: O(*m*) in the number of bytes appended (amortized).
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        guard failure == nil else { return }
        if headStart > 0 && headStart >= buffer.count / 2 {
            buffer.removeFirst(headStart)
            lineStart -= headStart
            scanned -= headStart
            headStart = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete request head, or `nil` if more bytes are needed.
    ///
    /// - Throws: ``HTTPParseError`` when the bytes are not an acceptable request head; the parser
    ///   then stays failed.
    /// - Complexity: O(*m*) in the bytes not scanned before.
    public mutating func next() throws(HTTPParseError) -> HTTPRequest? {
        if let failure { throw failure }
        do {
            return try parse()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parse() throws(HTTPParseError) -> HTTPRequest? {
        while true {
            guard let lf = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) else {
                scanned = buffer.count
                // Not complete: fail as soon as the head cannot fit any more.
                if buffer.count - headStart >= maxHeadBytes { throw overLimit() }
                return nil
            }
            scanned = lf + 1
            if lf + 1 - headStart > maxHeadBytes { throw overLimit() }
            var end = lf
            if end > lineStart && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = buffer[lineStart..<end]
            lineStart = lf + 1
            if !inHeaders {
                if line.isEmpty { continue }   // tolerated empty lines before a request
                pending = try Self.requestLine(line)
                inHeaders = true
                continue
            }
            if line.isEmpty {
                let request = pending
                try Self.validate(request)
                pending = HTTPRequest(method: "", path: "")
                inHeaders = false
                headStart = lineStart
                return request
            }
            if pending.headers.count >= maxHeaders { throw .tooManyHeaders(limit: maxHeaders) }
            pending.headers.append(try Self.header(line))
        }
    }

    private func overLimit() -> HTTPParseError {
        inHeaders ? .headersTooLarge(limit: maxHeadBytes) : .requestLineTooLong(limit: maxHeadBytes)
    }

    // MARK: Lines

    private static func requestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else { throw .malformedRequestLine }
        let version = try Self.version(parts[2])
        let target = parts[1]
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else {
            throw .malformedRequestLine
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        var text = String(decoding: target, as: UTF8.self)
        if text == "*" {
            guard method == "OPTIONS" else { throw .malformedRequestLine }
            return HTTPRequest(method: method, path: "*", version: version)
        }
        if !text.hasPrefix("/") {
            // absolute-form: scheme "://" authority [path]
            let lower = text.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
                  let schemeEnd = text.range(of: "://") else { throw .malformedRequestLine }
            let rest = text[schemeEnd.upperBound...]
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else {
                return HTTPRequest(method: method, path: "/", version: version)
            }
            text = (rest[slash] == "?" ? "/" : "") + String(rest[slash...])
        }
        if let q = text.firstIndex(of: "?") {
            return HTTPRequest(method: method, path: String(text[..<q]),
                               query: String(text[text.index(after: q)...]), version: version)
        }
        return HTTPRequest(method: method, path: text, version: version)
    }

    private static func version(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        let b = Array(bytes)
        guard b.count == 8, b[0..<5].elementsEqual("HTTP/".utf8), b[6] == UInt8(ascii: "."),
              isDigit(b[5]), isDigit(b[7]) else { throw .malformedRequestLine }
        let v = HTTPVersion(major: Int(b[5] - 48), minor: Int(b[7] - 48))
        guard v == .http1_0 || v == .http1_1 else { throw .unsupportedVersion(v.description) }
        return v
    }

    private static func header(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (name: String, value: String) {
        if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
            throw .badHeader("folded line (obs-fold)")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .badHeader("no colon") }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw .badHeader("bad field name") }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
        while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw .badHeader("control character in the value of \(String(decoding: name, as: UTF8.self))")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// Checks the head as a whole: Host, and no body.
    private static func validate(_ request: HTTPRequest) throws(HTTPParseError) {
        var hosts = 0
        var length: String?
        for (name, value) in request.headers {
            switch name.lowercased() {
            case "host":
                hosts += 1
            case "transfer-encoding":
                throw .bodyNotSupported
            case "content-length":
                for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let v = part.trimmingSpaces
                    guard !v.isEmpty, v.utf8.allSatisfy(isDigit) else { throw .badHeader("bad Content-Length") }
                    if let length, length != v { throw .badHeader("conflicting Content-Length") }
                    length = v
                }
            default:
                break
            }
        }
        if hosts > 1 { throw .badHeader("more than one Host") }
        if hosts == 0 && request.version == .http1_1 { throw .missingHost }
        if let length, length.contains(where: { $0 != "0" }) { throw .bodyNotSupported }
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
