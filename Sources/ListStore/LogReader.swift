import ListCRDT

/// One intact record of a log.
public enum LogRecord: Hashable, Sendable {
    /// An operation batch, decoded and validated.
    case operations([ListOperation])
    /// The document's epoch from this record on.
    case epoch(UInt64)
    /// Operations (of the batch after it, or of the generation's) that came through a peer link.
    case relayed(OperationRuns)
}

/// Why a log scan stopped before the end of the file: the first bad record.
public enum LogDamage: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer bytes left than a record's 9-byte prefix.
    case shortPrefix(bytes: Int)
    /// A length of zero with something other than zeros after it (an all-zero rest is the log's
    /// preallocated space, not damage: see ``LogScan/preallocated``).
    case zeroLength
    /// A length over the 1 MiB limit.
    case oversizedLength(Int)
    /// A length running past the end of the file (a torn write).
    case truncated(length: Int, available: Int)
    /// The masked CRC32C does not match.
    case checksumMismatch
    /// A type byte this build does not know.
    case unknownType(UInt8)
    /// The payload does not decode (the decoder's message).
    case undecodable(String)

    public var description: String {
        switch self {
        case let .shortPrefix(n): "\(n) bytes, too few for a record"
        case .zeroLength: "zero length"
        case let .oversizedLength(n): "length \(n) over the \(LogFormat.maxRecordLength)-byte limit"
        case let .truncated(length, available): "length \(length) but only \(available) bytes follow"
        case .checksumMismatch: "checksum mismatch"
        case let .unknownType(t): "unknown record type \(t)"
        case let .undecodable(why): "payload does not decode: \(why)"
        }
    }
}

/// The result of scanning a log's bytes: every intact record up to the first bad one.
///
/// Scanning is pure (bytes in, records out): ``DocumentStore`` reads the file, scans it, and only
/// then keeps the tail aside and truncates.
public struct LogScan: Sendable {
    /// The intact records, in file order.
    public var records: [LogRecord] = []
    /// How many bytes from the start of the file are intact (header included): where the next
    /// record goes, and the length to truncate a damaged log to.
    public var validLength: Int
    /// Where the first bad record starts and what is wrong with it; nil when the whole file is intact.
    public var damage: (offset: Int, reason: LogDamage)?
    /// Zero bytes after the last intact record: space the writer preallocated (Docs/Storage.md,
    /// "Preallocation"), where the next record goes. Not damage: no record starts with a zero
    /// length, so an all-zero rest holds no record, whole or torn, that was ever made durable.
    public var preallocated = 0

    /// Scans `bytes`, a whole log of `document`.
    ///
    /// - Throws: ``StoreError/notOurs(path:reason:)`` when the header is not a valid header of
    ///   this document's log (`path` only names the file in the error).
    /// - Complexity: O(n) for n bytes, plus decoding the operation batches.
    public static func scan(_ bytes: [UInt8], document: DocumentID, path: String = "log",
                            maxValueSize: Int = ListDocument.defaultMaxValueSize) throws(StoreError) -> LogScan {
        try LogFormat.checkLogHeader(bytes[...], document: document, path: path)
        let walk = walkRecords(bytes, from: LogFormat.logHeaderSize) { at in
            record(in: bytes, at: at, maxValueSize: maxValueSize)
        }
        return LogScan(records: walk.items, validLength: walk.validLength, damage: walk.damage,
                       preallocated: walk.preallocated)
    }

    /// The records of `bytes` from `start`, each read by `read` (the record at an offset and the
    /// offset after it), up to the first bad one: how far they are intact, and either the damage
    /// there or, when every byte from there on is zero, that many bytes of preallocated space.
    /// A document's log and the shared log's segments are walked alike.
    ///
    /// - Complexity: O(n) for n bytes, plus `read`'s.
    static func walkRecords<T>(_ bytes: [UInt8], from start: Int, _ read: (Int) -> Result<(T, Int), LogDamage>)
        -> (items: [T], validLength: Int, damage: (offset: Int, reason: LogDamage)?, preallocated: Int) {
        var items: [T] = []
        var at = start
        while at < bytes.count {
            switch read(at) {
            case let .success((item, next)):
                items.append(item)
                at = next
            case let .failure(damage):
                if bytes[at...].allSatisfy({ $0 == 0 }) { return (items, at, nil, bytes.count - at) }
                return (items, at, (at, damage), 0)
            }
        }
        return (items, at, nil, 0)
    }

    /// The framing of the record at `at` (a document's log and the shared log alike): its type
    /// byte and the length of its type byte and payload, after checking the length and checksum.
    static func frame(in bytes: [UInt8], at: Int) -> Result<(type: UInt8, length: Int), LogDamage> {
        let available = bytes.count - at
        guard available >= LogFormat.recordOverhead else { return .failure(.shortPrefix(bytes: available)) }
        let all = bytes[...]
        let len = Int(LogFormat.get32(all, at))
        guard len > 0 else { return .failure(.zeroLength) }
        guard len <= LogFormat.maxRecordLength else { return .failure(.oversizedLength(len)) }
        guard len <= available - 8 else { return .failure(.truncated(length: len, available: available - 8)) }
        var crc = CRC32C()
        crc.update(bytes[at..<at + 4])
        crc.update(bytes[at + 8..<at + 8 + len])
        guard CRC32C.masked(crc.value) == LogFormat.get32(all, at + 4) else { return .failure(.checksumMismatch) }
        return .success((bytes[at + 8], len))
    }

    /// The record at `at` and the offset after it, or what is wrong with it.
    static func record(in bytes: [UInt8], at: Int, maxValueSize: Int) -> Result<(LogRecord, Int), LogDamage> {
        let typeByte: UInt8, len: Int
        switch frame(in: bytes, at: at) {
        case let .success(f): (typeByte, len) = f
        case let .failure(damage): return .failure(damage)
        }
        let all = bytes[...]
        let payload = bytes[at + 9..<at + 8 + len]
        let next = at + 8 + len
        switch LogRecordType(rawValue: typeByte) {
        case .operations:
            do {
                let ops = try ListOperation.decode(payload, maxValueSize: maxValueSize)
                return .success((.operations(ops), next))
            } catch {
                return .failure(.undecodable("\(error)"))
            }
        case .epoch:
            guard payload.count == 8 else { return .failure(.undecodable("epoch record of \(payload.count) bytes, not 8")) }
            return .success((.epoch(LogFormat.get64(all, at + 9)), next))
        case .relayed:
            do throws(WireError) {
                return .success((.relayed(try OperationRuns(decoding: payload)), next))
            } catch {
                return .failure(.undecodable("relayed runs: \(error)"))
            }
        case nil, .documentOperations, .documentEpoch, .documentRemoved, .documentRelayed:
            // Types 3 to 5 and 7 belong to the shared log, never to a document's own.
            return .failure(.unknownType(typeByte))
        }
    }
}

/// What opening a store found and did: how much it replayed, and what it kept aside.
public struct RecoveryReport: Hashable, Sendable, CustomStringConvertible {
    /// The generation opened (the `g` of `snapshot-<g>` and `log-<g>`).
    public var generation: UInt64 = 0
    /// Whether the document was created by this open (no files were there).
    public var created = false
    /// Whether a snapshot was loaded.
    public var loadedSnapshot = false
    /// Intact log records replayed (operation batches and epoch records).
    public var recordsReplayed = 0
    /// Operations in the replayed batches.
    public var operationsReplayed = 0
    /// Bytes of damaged tail moved out of the log (0 when the log was intact).
    public var bytesKeptAside = 0
    /// Where they went: `log-<g>.tail-<n>` in the store folder.
    public var tailPath: String?
    /// What was wrong at the start of the tail.
    public var damage: LogDamage?
    /// Whether an interrupted snapshot was finished (older generation files removed, or the
    /// new generation's log started).
    public var finishedSnapshot = false
    /// Whether the document had a log of its own and was moved to the data folder's shared log.
    public var movedToSharedLog = false
    /// The operations the replayed records say came through a peer link (``LogRecord/relayed(_:)``).
    public var relayed = OperationRuns()

    public init() {}

    public var description: String {
        var parts = [created ? "created generation \(generation)" : "opened generation \(generation)"]
        if loadedSnapshot { parts.append("loaded its snapshot") }
        parts.append("replayed \(recordsReplayed) records (\(operationsReplayed) operations)")
        if let tailPath, let damage {
            parts.append("kept \(bytesKeptAside) damaged bytes aside in \(tailPath) (\(damage))")
        }
        if finishedSnapshot { parts.append("finished an interrupted snapshot") }
        if movedToSharedLog { parts.append("moved it to the shared log") }
        return parts.joined(separator: ", ")
    }
}
