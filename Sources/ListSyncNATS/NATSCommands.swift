import Foundation

/// What a client sends a NATS server, encoded: `CONNECT`, `PUB`, `HPUB`, `SUB`, `UNSUB`, `PING`,
/// `PONG`. Pure functions; each checks its subject so that no text can change the line's meaning.
public enum NATSCommand {
    /// `PING\r\n`.
    public static let ping: [UInt8] = Array("PING\r\n".utf8)
    /// `PONG\r\n`.
    public static let pong: [UInt8] = Array("PONG\r\n".utf8)

    /// `CONNECT {json}\r\n` with the options the client uses: not verbose, not pedantic, headers
    /// and no-responders on (a request nobody serves fails at once with status 503).
    public static func connect(name: String, user: String? = nil, password: String? = nil, token: String? = nil) -> [UInt8] {
        var object: [String: Any] = [
            "verbose": false, "pedantic": false, "tls_required": false, "name": name,
            "lang": "swift", "version": "1.0", "protocol": 1, "headers": true, "no_responders": true, "echo": true,
        ]
        if let user { object["user"] = user }
        if let password { object["pass"] = password }
        if let token { object["auth_token"] = token }
        // A dictionary of strings, booleans and integers always serialises.
        let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array("CONNECT ".utf8) + Array(json) + [13, 10]
    }

    /// `PUB subject [reply] n\r\npayload\r\n`, or `HPUB subject [reply] h n\r\nheaders payload\r\n`
    /// when `headers` is given.
    ///
    /// - Throws: ``NATSProtocolError/malformedArguments(operation:line:)`` for a subject or reply
    ///   subject that ``isValidSubject(_:wildcards:)`` refuses; ``NATSProtocolError/malformedHeaders(_:)``
    ///   for headers that do not encode.
    /// - Complexity: O(payload).
    public static func publish(_ subject: String, replyTo: String? = nil, headers: NATSHeaders? = nil,
                               payload: [UInt8]) throws(NATSProtocolError) -> [UInt8] {
        guard isValidSubject(subject, wildcards: false) else { throw .malformedArguments(operation: "PUB", line: "subject '\(subject)'") }
        if let replyTo, !isValidSubject(replyTo, wildcards: false) {
            throw .malformedArguments(operation: "PUB", line: "reply subject '\(replyTo)'")
        }
        let reply = replyTo.map { " \($0)" } ?? ""
        if let headers {
            let h = try headers.encoded()
            return Array("HPUB \(subject)\(reply) \(h.count) \(h.count + payload.count)\r\n".utf8) + h + payload + [13, 10]
        }
        return Array("PUB \(subject)\(reply) \(payload.count)\r\n".utf8) + payload + [13, 10]
    }

    /// `SUB subject [queue] sid\r\n`.
    ///
    /// - Throws: ``NATSProtocolError/malformedArguments(operation:line:)`` for a subject with a
    ///   space or an empty token, or a queue group with a space.
    public static func subscribe(_ subject: String, queue: String? = nil, sid: UInt64) throws(NATSProtocolError) -> [UInt8] {
        guard isValidSubject(subject, wildcards: true) else { throw .malformedArguments(operation: "SUB", line: "subject '\(subject)'") }
        if let queue, queue.isEmpty || queue.utf8.contains(where: { $0 <= 32 }) {
            throw .malformedArguments(operation: "SUB", line: "queue '\(queue)'")
        }
        return Array("SUB \(subject)\(queue.map { " \($0)" } ?? "") \(sid)\r\n".utf8)
    }

    /// `UNSUB sid [max]\r\n`.
    public static func unsubscribe(sid: UInt64, after max: Int? = nil) -> [UInt8] {
        Array("UNSUB \(sid)\(max.map { " \($0)" } ?? "")\r\n".utf8)
    }

    /// Whether `subject` is a subject the protocol carries: dot-separated tokens, none empty, no
    /// space, tab, CR or LF; with `wildcards`, `*` as a whole token and `>` as the whole last one.
    ///
    /// - Complexity: O(subject).
    public static func isValidSubject(_ subject: String, wildcards: Bool) -> Bool {
        guard !subject.isEmpty, !subject.utf8.contains(where: { $0 <= 32 || $0 == 127 }) else { return false }
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        for (i, t) in tokens.enumerated() {
            if t.isEmpty { return false }
            if t.contains("*") || t.contains(">") {
                guard wildcards else { return false }
                if t == "*" { continue }
                if t == ">" && i == tokens.count - 1 { continue }
                return false
            }
        }
        return true
    }
}
