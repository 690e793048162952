/// A JetStream key-value bucket: the stream `KV_<bucket>` on the subjects `$KV.<bucket>.>`, one
/// message per key kept (its latest value), with compare-and-set through the subject's last
/// sequence.
public struct KeyValue: Sendable {
    /// An entry: its value and its revision (the stream sequence that stored it).
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var value: [UInt8]
        public var revision: UInt64

        /// An entry from its parts.
        public init(key: String, value: [UInt8], revision: UInt64) {
            self.key = key
            self.value = value
            self.revision = revision
        }
    }

    /// The API it uses.
    public let js: JetStream
    /// The bucket's name.
    public let bucket: String
    /// The stream that holds the bucket.
    public var streamName: String { "KV_\(bucket)" }
    var stream: String { streamName }
    /// The subject of `key` (a key with wildcards names a subject filter, for a purge).
    public func subject(_ key: String) -> String { "$KV.\(bucket).\(key)" }

    /// Opens (creating if needed) the bucket, with `replicas` copies on `storage`.
    ///
    /// - Throws: ``JetStreamError``.
    public static func open(_ js: JetStream, bucket: String, replicas: Int = 1,
                            storage: StreamConfig.Storage = .file) async throws(JetStreamError) -> KeyValue {
        var config = StreamConfig(name: "KV_\(bucket)", subjects: ["$KV.\(bucket).>"])
        config.replicas = replicas
        config.storage = storage
        config.maxMsgsPerSubject = 1
        config.discard = .new
        config.allowRollupHeaders = true
        config.denyDelete = true
        config.allowDirect = true
        config.duplicateWindow = 120_000_000_000
        do { try await js.createStream(config) } catch {
            // Made by another node with other settings (a newer or older one): use it as it is.
            guard case .api = error else { throw error }
            _ = try await js.streamInfo(config.name)
        }
        return KeyValue(js: js, bucket: bucket)
    }

    /// Whether `key` is a key a bucket takes: dot-separated tokens of `A-Z a-z 0-9 - _ = /`.
    public static func isValidKey(_ key: String) -> Bool {
        NATSCommand.isValidSubject(key, wildcards: false)
            && key.utf8.allSatisfy { c in
                (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || "-_=/.".utf8.contains(c)
            }
    }

    /// Sets `key` to `value`; returns the new revision.
    ///
    /// - Throws: ``JetStreamError``; `.malformedResponse` naming the key for an invalid key.
    @discardableResult
    public func put(_ key: String, _ value: [UInt8]) async throws(JetStreamError) -> UInt64 {
        guard Self.isValidKey(key) else { throw .malformedResponse("invalid key '\(key)'") }
        return try await js.publish(subject(key), payload: value).sequence
    }

    /// Sets `key` only if its revision is still `revision` (0: only if it has none); returns the
    /// new revision.
    ///
    /// - Throws: ``JetStreamError/api(code:errorCode:description:)`` with
    ///   ``JetStreamError/wrongLastSequence`` when another write came first.
    @discardableResult
    public func update(_ key: String, _ value: [UInt8], revision: UInt64) async throws(JetStreamError) -> UInt64 {
        guard Self.isValidKey(key) else { throw .malformedResponse("invalid key '\(key)'") }
        return try await js.publish(subject(key), payload: value, expectedLastSubjectSequence: revision).sequence
    }

    /// The entry of `key`, or `nil` if it has none.
    public func get(_ key: String) async throws(JetStreamError) -> Entry? {
        guard Self.isValidKey(key) else { throw .malformedResponse("invalid key '\(key)'") }
        guard let m = try await js.getMessage(stream, lastBySubject: subject(key)) else { return nil }
        return Entry(key: key, value: m.payload, revision: m.sequence)
    }

    /// Every key of the bucket, sorted.
    ///
    /// - Complexity: one request; the answer lists every key (the server pages past 100,000).
    public func keys() async throws(JetStreamError) -> [String] {
        try await keysAndRevision().keys
    }

    /// Every key of the bucket, sorted, and the bucket's latest revision (the greatest revision
    /// of any key, or of a deletion): a reader that saw the same revision before has seen every
    /// entry as it is now.
    ///
    /// - Complexity: as ``keys()``.
    public func keysAndRevision() async throws(JetStreamError) -> (keys: [String], revision: UInt64) {
        let info = try await js.streamInfo(stream, subjectsFilter: "$KV.\(bucket).>")
        let prefix = "$KV.\(bucket)."
        return (info.subjects.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }.sorted(),
                info.lastSequence)
    }
}
