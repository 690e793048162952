/// What a NATS server sends a client: one parsed protocol operation.
public enum NATSServerOperation: Sendable, Equatable {
    /// `INFO {json}`: the server's description (the JSON text, unparsed; ``NATSServerInfo`` reads it).
    case info(String)
    /// `MSG` or `HMSG`: a message delivered to one of the client's subscriptions.
    case message(NATSMessage)
    /// `PING`: the client must answer `PONG`.
    case ping
    /// `PONG`: the answer to the client's `PING`.
    case pong
    /// `+OK` (verbose mode only).
    case ok
    /// `-ERR 'text'`: the server's error text, quotes removed.
    case error(String)
}

/// A message as the server delivered it.
public struct NATSMessage: Sendable, Equatable {
    /// The subject it was published to.
    public var subject: String
    /// The client's subscription id it was delivered for.
    public var sid: UInt64
    /// The subject to answer on, if the publisher asked for an answer.
    public var replyTo: String?
    /// The headers (`HMSG` only).
    public var headers: NATSHeaders?
    /// The payload.
    public var payload: [UInt8]

    /// A message with the given parts.
    public init(subject: String, sid: UInt64, replyTo: String? = nil, headers: NATSHeaders? = nil, payload: [UInt8]) {
        self.subject = subject
        self.sid = sid
        self.replyTo = replyTo
        self.headers = headers
        self.payload = payload
    }
}

/// A byte stream from a NATS server that is not the client protocol. Once thrown, the parser
/// stays failed (every later call throws the same error): the connection must be closed.
public enum NATSProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A control line longer than the limit without its `\r\n`.
    case controlLineTooLong(limit: Int)
    /// An operation name the client protocol does not have.
    case unknownOperation(String)
    /// A known operation with the wrong arguments (count, a number that is not one).
    case malformedArguments(operation: String, line: String)
    /// A payload over the limit.
    case payloadTooLarge(size: Int, limit: Int)
    /// The payload was not followed by `\r\n`.
    case missingPayloadTerminator
    /// An `HMSG` header block that is not `NATS/1.0…\r\n(Name: value\r\n)*\r\n`.
    case malformedHeaders(String)
    /// A control line that is not UTF-8.
    case notText

    public var description: String {
        switch self {
        case let .controlLineTooLong(limit): return "control line over \(limit) bytes"
        case let .unknownOperation(op): return "unknown operation '\(op)'"
        case let .malformedArguments(op, line): return "malformed \(op) line '\(line)'"
        case let .payloadTooLarge(size, limit): return "payload of \(size) bytes is over the limit of \(limit)"
        case .missingPayloadTerminator: return "payload not followed by CRLF"
        case let .malformedHeaders(why): return "malformed headers: \(why)"
        case .notText: return "control line is not UTF-8"
        }
    }
}

/// The client side of the NATS client protocol's decoder: bytes in, operations out; no I/O.
///
/// A state machine with two states, reading a control line (up to `\r\n`) or reading the
/// `n + 2` bytes of a payload and its terminator. Bytes may come in any split: one at a time or
/// many operations at once give the same operations. Operation names are case-insensitive and
/// arguments are separated by spaces or tabs, as the protocol says.
public struct NATSParser: Sendable {
    private enum State: Sendable {
        case line
        case payload(subject: String, sid: UInt64, replyTo: String?, headerSize: Int, total: Int)
        case failed(NATSProtocolError)
    }

    /// The longest control line taken (the server's own default limit is 4,096).
    public let maxControlLine: Int
    /// The largest payload (headers included) taken.
    public let maxPayload: Int
    private var state: State = .line
    private var buffer: [UInt8] = []
    /// How far `buffer` was searched for `\r\n` already (so a line fed byte by byte is O(n)).
    private var scanned = 0

    /// A parser with these limits.
    public init(maxControlLine: Int = 4_096, maxPayload: Int = 8 << 20) {
        precondition(maxControlLine > 0 && maxPayload >= 0)
        self.maxControlLine = maxControlLine
        self.maxPayload = maxPayload
    }

    /// Bytes held for an operation not yet complete.
    public var buffered: Int { buffer.count }

    /// Feeds `bytes`; returns the operations they complete, in order.
    ///
    /// - Throws: ``NATSProtocolError`` for the first malformed operation; the operations before
    ///   it in the same call are lost with it, and the parser stays failed.
    /// - Complexity: O(`bytes.count` + the bytes buffered).
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(NATSProtocolError) -> [NATSServerOperation] {
        if case let .failed(error) = state { throw error }
        buffer.append(contentsOf: bytes)
        var out: [NATSServerOperation] = []
        var start = 0
        do throws(NATSProtocolError) {
            while true {
                guard let (op, used) = try next(from: start) else { break }
                start += used
                if let op { out.append(op) }
            }
        } catch {
            state = .failed(error)
            buffer = []
            throw error
        }
        if start > 0 {
            buffer.removeFirst(start)
            scanned = max(0, scanned - start)
        }
        assert(buffered <= maxControlLine + 2 + maxPayload + 2, "parser holds more than one operation")
        return out
    }

    /// The operation starting at `start`, and the bytes it used; `nil` when more bytes are needed.
    private mutating func next(from start: Int) throws(NATSProtocolError) -> (NATSServerOperation?, Int)? {
        switch state {
        case .failed(let e):
            throw e
        case .line:
            var i = max(start, scanned)
            while i + 1 < buffer.count, !(buffer[i] == 13 && buffer[i + 1] == 10) { i += 1 }
            guard i + 1 < buffer.count else {
                scanned = max(start, buffer.count - 1)
                // + 1: the line's CR may be the last byte held (any split must agree with one piece).
                if buffer.count - start > maxControlLine + 1 { throw .controlLineTooLong(limit: maxControlLine) }
                return nil
            }
            if i - start > maxControlLine { throw .controlLineTooLong(limit: maxControlLine) }
            scanned = i + 2
            let op = try parseLine(buffer[start..<i])
            return (op, i + 2 - start)
        case let .payload(subject, sid, replyTo, headerSize, total):
            guard buffer.count - start >= total + 2 else { return nil }
            guard buffer[start + total] == 13, buffer[start + total + 1] == 10 else { throw .missingPayloadTerminator }
            var headers: NATSHeaders?
            if headerSize >= 0 { headers = try NATSHeaders(parsing: buffer[start..<(start + headerSize)]) }
            let payload = Array(buffer[(start + max(headerSize, 0))..<(start + total)])
            state = .line
            scanned = start + total + 2
            return (.message(NATSMessage(subject: subject, sid: sid, replyTo: replyTo, headers: headers, payload: payload)), total + 2)
        }
    }

    /// One control line (without its CRLF): an operation, or `nil` with the state set to read a
    /// payload.
    private mutating func parseLine(_ line: ArraySlice<UInt8>) throws(NATSProtocolError) -> NATSServerOperation? {
        guard let text = String(validating: line, as: UTF8.self) else { throw .notText }
        let nameEnd = text.firstIndex(where: { $0 == " " || $0 == "\t" }) ?? text.endIndex
        let name = text[..<nameEnd].uppercased()
        let rest = String(text[nameEnd...].drop(while: { $0 == " " || $0 == "\t" }))
        switch name {
        case "PING": return .ping
        case "PONG": return .pong
        case "+OK": return .ok
        case "-ERR":
            var t = Substring(rest.trimmingSpaces())
            if t.count >= 2, t.first == "'", t.last == "'" { t = t.dropFirst().dropLast() }
            return .error(String(t))
        case "INFO":
            guard !rest.isEmpty else { throw .malformedArguments(operation: "INFO", line: text) }
            return .info(rest)
        case "MSG", "HMSG":
            let args = rest.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            let headered = name == "HMSG"
            let counts = headered ? (4, 5) : (3, 4)
            guard args.count == counts.0 || args.count == counts.1,
                  let sid = UInt64(args[1]), let total = Int(args[args.count - 1]), total >= 0 else {
                throw .malformedArguments(operation: name, line: text)
            }
            let replyTo = args.count == counts.1 ? args[2] : nil
            var headerSize = -1
            if headered {
                guard let h = Int(args[args.count - 2]), h >= 0, h <= total else {
                    throw .malformedArguments(operation: name, line: text)
                }
                headerSize = h
            }
            guard total <= maxPayload else { throw .payloadTooLarge(size: total, limit: maxPayload) }
            state = .payload(subject: args[0], sid: sid, replyTo: replyTo, headerSize: headerSize, total: total)
            return nil
        default:
            throw .unknownOperation(String(name.prefix(32)))
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
