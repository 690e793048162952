/// The headers of a NATS message (`HPUB`, `HMSG`): an optional status line and ordered fields.
///
/// On the wire: `NATS/1.0[ status[ description]]\r\n(Name: value\r\n)*\r\n`. Names keep their
/// case; ``subscript(_:)`` looks them up case-insensitively, as the servers do for their own.
public struct NATSHeaders: Sendable, Equatable {
    /// The status code of a server-made message (`100` heartbeat or flow control, `404` no
    /// messages, `408` request timeout, `503` no responders), `nil` for a publisher's headers.
    public var status: Int?
    /// The status's description (`Idle Heartbeat`, `No Messages`…), empty if none.
    public var statusDescription: String
    /// The fields, in order; a name may repeat.
    public var fields: [(name: String, value: String)]

    /// Headers with these fields and no status.
    public init(_ fields: [(name: String, value: String)] = []) {
        status = nil
        statusDescription = ""
        self.fields = fields
    }

    /// The first value of `name` (case-insensitive), or `nil`.
    ///
    /// - Complexity: O(fields).
    public subscript(_ name: String) -> String? {
        let lower = name.lowercased()
        return fields.first(where: { $0.name.lowercased() == lower })?.value
    }

    public static func == (a: NATSHeaders, b: NATSHeaders) -> Bool {
        a.status == b.status && a.statusDescription == b.statusDescription
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// The wire form of these headers (for `HPUB`).
    ///
    /// - Throws: ``NATSProtocolError/malformedHeaders(_:)`` for a name with a colon, space or
    ///   control character, or a value with CR or LF (they would change the message's meaning).
    public func encoded() throws(NATSProtocolError) -> [UInt8] {
        var text = "NATS/1.0"
        if let status { text += " \(status)" + (statusDescription.isEmpty ? "" : " \(statusDescription)") }
        text += "\r\n"
        for (name, value) in fields {
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }) else {
                throw .malformedHeaders("header name '\(name)' is empty or has a colon, space or control character")
            }
            guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 }) else {
                throw .malformedHeaders("value of header '\(name)' has CR or LF")
            }
            text += "\(name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Reads a header block (the first `headerSize` bytes of an `HMSG` payload).
    ///
    /// - Throws: ``NATSProtocolError/malformedHeaders(_:)`` saying what is wrong.
    /// - Complexity: O(bytes).
    public init(parsing bytes: some Collection<UInt8>) throws(NATSProtocolError) {
        let all = Array(bytes)
        guard all.count >= 4, Array(all.suffix(4)) == [13, 10, 13, 10] else {
            throw .malformedHeaders("block does not end with an empty line")
        }
        var lines: [String] = []
        var lineStart = 0, i = 0
        let body = all.count - 4
        while i <= body {
            if i == body || (all[i] == 13 && i + 1 < body && all[i + 1] == 10) {
                guard let line = String(validating: all[lineStart..<i], as: UTF8.self) else { throw .malformedHeaders("not UTF-8") }
                guard !line.utf8.contains(where: { $0 == 13 || $0 == 10 }) else { throw .malformedHeaders("bare CR or LF in a line") }
                lines.append(line)
                i += 2
                lineStart = i
            } else {
                i += 1
            }
        }
        guard let first = lines.first, first.hasPrefix("NATS/1.0") else {
            throw .malformedHeaders("no NATS/1.0 version line")
        }
        lines.removeFirst()
        self.init()
        let statusPart = first.dropFirst("NATS/1.0".count)
        if !statusPart.isEmpty {
            guard statusPart.first == " " || statusPart.first == "\t" else { throw .malformedHeaders("version line '\(first)'") }
            let trimmed = String(statusPart).trimmingSpaces()
            let codeEnd = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) ?? trimmed.endIndex
            if !trimmed.isEmpty {
                guard let code = Int(trimmed[..<codeEnd]), (100...999).contains(code) else {
                    throw .malformedHeaders("status '\(trimmed)' is not a 3-digit code")
                }
                status = code
                statusDescription = String(trimmed[codeEnd...]).trimmingSpaces()
            }
        }
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .malformedHeaders("field line '\(line.prefix(64))' has no name or colon")
            }
            let name = String(line[..<colon])
            guard name.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                throw .malformedHeaders("field name '\(name.prefix(64))' has a space or control character")
            }
            fields.append((name, String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
    }
}
