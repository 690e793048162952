import Foundation

/// Why a JetStream call failed.
public enum JetStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The NATS request failed (no JetStream: ``NATSError/noResponders(_:)``).
    case nats(NATSError)
    /// The API answered with an error: its HTTP-like code, JetStream error code and text.
    /// (10071 is a wrong last sequence for a compare-and-set; 10037 no message found;
    /// 10059 stream not found.)
    case api(code: Int, errorCode: Int, description: String)
    /// The answer was not the JSON the API documents.
    case malformedResponse(String)

    public var description: String {
        switch self {
        case let .nats(e): return "JetStream: \(e)"
        case let .api(code, errorCode, text): return "JetStream error \(code)/\(errorCode): \(text)"
        case let .malformedResponse(why): return "JetStream answered malformed JSON: \(why)"
        }
    }

    /// The JetStream error code for a compare-and-set that lost (wrong last sequence).
    public static let wrongLastSequence = 10071
    /// The JetStream error code for "no message found".
    public static let noMessageFound = 10037
    /// The JetStream error code for "stream not found".
    public static let streamNotFound = 10059
}

/// A stream's settings (the fields ListSync uses; JSON names as the API spells them).
public struct StreamConfig: Sendable, Codable, Equatable {
    /// Where a stream keeps its messages.
    public enum Storage: String, Sendable, Codable { case file, memory }
    /// What a full stream does with a new message.
    public enum Discard: String, Sendable, Codable { case old, new }

    public var name: String
    public var subjects: [String]
    public var storage: Storage = .file
    public var replicas: Int = 1
    /// `discard: new` refuses a publish to a full stream (the publisher learns it) rather than
    /// dropping its oldest messages.
    public var discard: Discard = .new
    public var maxMsgs: Int = -1
    public var maxBytes: Int = -1
    public var maxMsgsPerSubject: Int = -1
    public var maxMsgSize: Int = -1
    /// The window in nanoseconds in which a repeated `Nats-Msg-Id` is a duplicate.
    public var duplicateWindow: Int64 = 120_000_000_000
    public var allowRollupHeaders = false
    public var denyDelete = false
    public var allowDirect = false
    public var retention = "limits"

    enum CodingKeys: String, CodingKey {
        case name, subjects, storage, replicas = "num_replicas", discard, maxMsgs = "max_msgs", maxBytes = "max_bytes"
        case maxMsgsPerSubject = "max_msgs_per_subject", maxMsgSize = "max_msg_size", duplicateWindow = "duplicate_window"
        case allowRollupHeaders = "allow_rollup_hdrs", denyDelete = "deny_delete", allowDirect = "allow_direct", retention
    }

    /// A stream named `name` on `subjects`, with the defaults above (file storage, one replica,
    /// no limits, discard new, a two-minute duplicate window).
    public init(name: String, subjects: [String]) {
        self.name = name
        self.subjects = subjects
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        subjects = try c.decodeIfPresent([String].self, forKey: .subjects) ?? []
        storage = try c.decodeIfPresent(Storage.self, forKey: .storage) ?? .file
        replicas = try c.decodeIfPresent(Int.self, forKey: .replicas) ?? 1
        discard = try c.decodeIfPresent(Discard.self, forKey: .discard) ?? .old
        maxMsgs = try c.decodeIfPresent(Int.self, forKey: .maxMsgs) ?? -1
        maxBytes = try c.decodeIfPresent(Int.self, forKey: .maxBytes) ?? -1
        maxMsgsPerSubject = try c.decodeIfPresent(Int.self, forKey: .maxMsgsPerSubject) ?? -1
        maxMsgSize = try c.decodeIfPresent(Int.self, forKey: .maxMsgSize) ?? -1
        duplicateWindow = try c.decodeIfPresent(Int64.self, forKey: .duplicateWindow) ?? 0
        allowRollupHeaders = try c.decodeIfPresent(Bool.self, forKey: .allowRollupHeaders) ?? false
        denyDelete = try c.decodeIfPresent(Bool.self, forKey: .denyDelete) ?? false
        allowDirect = try c.decodeIfPresent(Bool.self, forKey: .allowDirect) ?? false
        retention = try c.decodeIfPresent(String.self, forKey: .retention) ?? "limits"
    }
}

/// What the API says of a stream.
public struct StreamInfo: Sendable, Equatable {
    /// The settings in force.
    public var config: StreamConfig
    /// Messages held.
    public var messages: Int
    /// The first and last sequence held.
    public var firstSequence: UInt64, lastSequence: UInt64
    /// Messages per subject, when asked for with a subjects filter.
    public var subjects: [String: Int]
}

/// The API's acknowledgement of a publish: the message is stored (on the stream's replicas).
public struct PublishAck: Sendable, Equatable {
    /// The stream that stored it.
    public var stream: String
    /// Its sequence in the stream.
    public var sequence: UInt64
    /// Whether it repeated a `Nats-Msg-Id` within the duplicate window (stored once, before).
    public var duplicate: Bool
}

/// A message read back from a stream.
public struct StoredMessage: Sendable, Equatable {
    /// Its subject.
    public var subject: String
    /// Its sequence in the stream.
    public var sequence: UInt64
    /// Its headers (`nil` if it had none).
    public var headers: NATSHeaders?
    /// Its payload.
    public var payload: [UInt8]
}

/// The JetStream API over a ``NATSConnection``: JSON requests on `$JS.API.*`.
public struct JetStream: Sendable {
    /// The connection it uses.
    public let connection: NATSConnection
    /// The API's subject prefix.
    public let prefix: String
    /// The wait for each API answer.
    public let timeout: Duration

    /// The API of the connection's account, with `timeout` per call.
    public init(_ connection: NATSConnection, prefix: String = "$JS.API", timeout: Duration = .seconds(5)) {
        self.connection = connection
        self.prefix = prefix
        self.timeout = timeout
    }

    /// Sends `body` to `$JS.API.<api>` and returns the answer's JSON object, or the error it
    /// carries.
    ///
    /// - Throws: ``JetStreamError``.
    public func call(_ api: String, _ body: [String: Any]? = nil) async throws(JetStreamError) -> [String: Any] {
        var payload: [UInt8] = []
        if let body {
            guard let data = try? JSONSerialization.data(withJSONObject: body) else {
                throw .malformedResponse("request body for \(api) is not JSON")
            }
            payload = Array(data)
        }
        let reply: NATSMessage
        do { reply = try await connection.request("\(prefix).\(api)", payload: payload, timeout: timeout) } catch { throw .nats(error) }
        return try Self.decodeAnswer(reply.payload)
    }

    /// The JSON object of an API answer, or its error.
    ///
    /// - Throws: ``JetStreamError/api(code:errorCode:description:)`` for an error answer,
    ///   ``JetStreamError/malformedResponse(_:)`` for one that is not a JSON object.
    public static func decodeAnswer(_ bytes: [UInt8]) throws(JetStreamError) -> [String: Any] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
            throw .malformedResponse(String(decoding: bytes.prefix(200), as: UTF8.self))
        }
        if let error = object["error"] as? [String: Any] {
            throw .api(code: error["code"] as? Int ?? 0, errorCode: error["err_code"] as? Int ?? 0,
                       description: error["description"] as? String ?? "")
        }
        return object
    }

    // MARK: Streams

    /// Creates a stream, or returns the existing one if its settings are the same.
    ///
    /// - Throws: ``JetStreamError/api(code:errorCode:description:)`` when a stream of that name
    ///   exists with other settings, or the subjects overlap another stream.
    @discardableResult
    public func createStream(_ config: StreamConfig) async throws(JetStreamError) -> StreamInfo {
        guard let data = try? JSONEncoder().encode(config),
              let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .malformedResponse("stream config does not encode")
        }
        return try Self.streamInfo(try await call("STREAM.CREATE.\(config.name)", body))
    }

    /// Updates a stream's settings (those the server lets change).
    @discardableResult
    public func updateStream(_ config: StreamConfig) async throws(JetStreamError) -> StreamInfo {
        guard let data = try? JSONEncoder().encode(config),
              let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .malformedResponse("stream config does not encode")
        }
        return try Self.streamInfo(try await call("STREAM.UPDATE.\(config.name)", body))
    }

    /// A stream's settings and state; with `subjectsFilter`, its messages per matching subject.
    ///
    /// - Throws: ``JetStreamError/api(code:errorCode:description:)`` with 10059 if there is no
    ///   such stream.
    public func streamInfo(_ name: String, subjectsFilter: String? = nil) async throws(JetStreamError) -> StreamInfo {
        try Self.streamInfo(try await call("STREAM.INFO.\(name)", subjectsFilter.map { ["subjects_filter": $0] }))
    }

    /// Deletes a stream and its messages.
    public func deleteStream(_ name: String) async throws(JetStreamError) {
        _ = try await call("STREAM.DELETE.\(name)")
    }

    /// Removes a stream's messages below `sequence` (kept: `sequence` and after; nil: every
    /// message), only those of `subject` (wildcards allowed) if given. Returns how many went.
    @discardableResult
    public func purge(_ stream: String, subject: String? = nil, keepFrom sequence: UInt64? = nil) async throws(JetStreamError) -> Int {
        var body: [String: Any] = [:]
        if let sequence { body["seq"] = sequence }
        if let subject { body["filter"] = subject }
        return try await call("STREAM.PURGE.\(stream)", body)["purged"] as? Int ?? 0
    }

    static func streamInfo(_ object: [String: Any]) throws(JetStreamError) -> StreamInfo {
        guard let configObject = object["config"], let state = object["state"] as? [String: Any],
              let data = try? JSONSerialization.data(withJSONObject: configObject),
              let config = try? JSONDecoder().decode(StreamConfig.self, from: data) else {
            throw .malformedResponse("stream info without config or state")
        }
        return StreamInfo(config: config, messages: state["messages"] as? Int ?? 0,
                          firstSequence: (state["first_seq"] as? NSNumber)?.uint64Value ?? 0,
                          lastSequence: (state["last_seq"] as? NSNumber)?.uint64Value ?? 0,
                          subjects: state["subjects"] as? [String: Int] ?? [:])
    }

    // MARK: Messages

    /// Publishes and waits for the stream's acknowledgement (stored, on its replicas).
    ///
    /// - Parameters:
    ///   - messageID: `Nats-Msg-Id`: a repeat within the duplicate window is stored once and
    ///     acknowledged with ``PublishAck/duplicate``.
    ///   - expectedLastSubjectSequence: `Nats-Expected-Last-Subject-Sequence`: stored only if the
    ///     subject's last message has this sequence (0: the subject has none), else error 10071.
    /// - Throws: ``JetStreamError``; ``NATSError/noResponders(_:)`` inside when no stream takes the subject.
    public func publish(_ subject: String, payload: [UInt8], messageID: String? = nil,
                        expectedLastSubjectSequence: UInt64? = nil, headers: NATSHeaders = NATSHeaders()) async throws(JetStreamError) -> PublishAck {
        var h = headers
        if let messageID { h.fields.append(("Nats-Msg-Id", messageID)) }
        if let expectedLastSubjectSequence { h.fields.append(("Nats-Expected-Last-Subject-Sequence", String(expectedLastSubjectSequence))) }
        let reply: NATSMessage
        do {
            reply = try await connection.request(subject, headers: h.fields.isEmpty && h.status == nil ? nil : h,
                                                 payload: payload, timeout: timeout)
        } catch { throw .nats(error) }
        let object = try Self.decodeAnswer(reply.payload)
        guard let stream = object["stream"] as? String, let seq = (object["seq"] as? NSNumber)?.uint64Value else {
            throw .malformedResponse("publish acknowledgement without stream or seq")
        }
        return PublishAck(stream: stream, sequence: seq, duplicate: object["duplicate"] as? Bool ?? false)
    }

    /// The message at `sequence`, or the last one of `lastBySubject`; `nil` if there is none.
    ///
    /// - Throws: ``JetStreamError`` (not for a missing message).
    public func getMessage(_ stream: String, sequence: UInt64? = nil, lastBySubject: String? = nil) async throws(JetStreamError) -> StoredMessage? {
        var body: [String: Any] = [:]
        if let sequence { body["seq"] = sequence }
        if let lastBySubject { body["last_by_subj"] = lastBySubject }
        let object: [String: Any]
        do { object = try await call("STREAM.MSG.GET.\(stream)", body) } catch {
            if case let .api(_, code, _) = error, code == JetStreamError.noMessageFound { return nil }
            throw error
        }
        return try Self.storedMessage(object)
    }

    static func storedMessage(_ object: [String: Any]) throws(JetStreamError) -> StoredMessage {
        guard let m = object["message"] as? [String: Any], let subject = m["subject"] as? String,
              let seq = (m["seq"] as? NSNumber)?.uint64Value else {
            throw .malformedResponse("stored message without subject or seq")
        }
        let payload = (m["data"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []
        var headers: NATSHeaders?
        if let h = m["hdrs"] as? String, let raw = Data(base64Encoded: h) {
            do { headers = try NATSHeaders(parsing: Array(raw)) } catch { throw .malformedResponse("stored headers: \(error)") }
        }
        return StoredMessage(subject: subject, sequence: seq, headers: headers, payload: payload)
    }
}
