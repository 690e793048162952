import ListCRDT

/// A place in the shared log: the segment's base plus the byte offset in its file. Positions only
/// grow: a segment's base is the previous segment's base plus the end of its last record.
public typealias LogPosition = UInt64

/// The byte layouts of the shared write-ahead log (Docs/Storage.md, "The shared log"). Every
/// integer is little-endian.
///
/// ```
/// segment header (32 B)  0 "LSYNCWAL" | 8 format u16 (1) | 10 flags u16 (0) | 12 base position u64
///                        | 20 zeros (8) | 28 masked CRC32C of bytes 0..<28, u32
/// record                 as in a document's log: len u32 | masked CRC32C(len ‖ type ‖ payload) u32
///                        | type u8 | payload, where the type is 3 (operations: document id (16) ‖
///                        ListOperation.encode(batch)), 4 (epoch: document id (16) ‖ u64) or
///                        5 (removed: document id (16))
/// file name              wal/segment-<base, 16 hex digits>
/// ```
public enum SharedLogFormat {
    /// The first eight bytes of every segment.
    public static let magic: [UInt8] = Array("LSYNCWAL".utf8)
    /// The segment format written and read.
    public static let formatVersion: UInt16 = 1
    /// The segment header's size.
    public static let headerSize = 32
    /// A document id's size at the start of every payload.
    static let idSize = 16

    /// The file name of the segment at `base`.
    public static func segmentName(_ base: LogPosition) -> String {
        let hex = String(base, radix: 16)
        return "segment-" + String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }

    /// The base of a segment file's name, or nil for another name.
    public static func base(ofSegment name: String) -> LogPosition? {
        guard name.hasPrefix("segment-"), name.count == 24 else { return nil }
        return UInt64(name.dropFirst(8), radix: 16)
    }

    /// The header of the segment at `base`.
    public static func header(base: LogPosition) -> [UInt8] {
        var h = magic
        LogFormat.put16(formatVersion, &h)
        LogFormat.put16(0, &h)
        LogFormat.put64(base, &h)
        LogFormat.put64(0, &h)
        LogFormat.put32(CRC32C.masked(CRC32C.checksum(h)), &h)
        return h
    }

    /// Checks a segment's header against the base its name gives; throws
    /// ``StoreError/notOurs(path:reason:)`` with what is wrong.
    public static func checkHeader(_ bytes: ArraySlice<UInt8>, base: LogPosition, path: String) throws(StoreError) {
        guard bytes.count >= headerSize else {
            throw .notOurs(path: path, reason: "\(bytes.count) bytes, shorter than the \(headerSize)-byte segment header")
        }
        let s = bytes.startIndex
        guard Array(bytes[s..<s + 8]) == magic else { throw .notOurs(path: path, reason: "no LSYNCWAL magic") }
        guard CRC32C.masked(CRC32C.checksum(bytes[s..<s + 28])) == LogFormat.get32(bytes, s + 28) else {
            throw .notOurs(path: path, reason: "segment header checksum mismatch")
        }
        let format = LogFormat.get16(bytes, s + 8)
        guard format == formatVersion else {
            throw .notOurs(path: path, reason: "segment format \(format); this build reads format \(formatVersion)")
        }
        let stored = LogFormat.get64(bytes, s + 12)
        guard stored == base else { throw .notOurs(path: path, reason: "the header's base is \(stored), the name's \(base)") }
    }

    /// The records of an operation batch of `document`: one if it fits, else the batch split in
    /// halves until each fits (as ``DocumentStore/records(for:)``).
    ///
    /// - Throws: ``StoreError/recordTooLarge(bytes:limit:)`` for one operation too large for a record.
    /// - Complexity: O(n) for n operations (O(n log n) when split).
    public static func records(for ops: [ListOperation], document: DocumentID) throws(StoreError) -> [UInt8] {
        var out: [UInt8] = []
        try appendRecords(ops[...], document: document, to: &out)
        return out
    }

    private static func appendRecords(_ ops: ArraySlice<ListOperation>, document: DocumentID,
                                      to out: inout [UInt8]) throws(StoreError) {
        var payload = document.bytes
        payload += ListOperation.encode(ops)
        if payload.count < LogFormat.maxRecordLength, ops.count <= ListOperation.defaultMaxBatchOperations {
            LogFormat.appendRecord(.documentOperations, payload: payload, to: &out)
            return
        }
        guard ops.count > 1 else { throw .recordTooLarge(bytes: payload.count + 1, limit: LogFormat.maxRecordLength) }
        let mid = ops.startIndex + ops.count / 2
        try appendRecords(ops[..<mid], document: document, to: &out)
        try appendRecords(ops[mid...], document: document, to: &out)
    }

    /// The records naming `runs` of `document` as relayed (``LogRecordType/documentRelayed``):
    /// none when `runs` is empty, several when they do not fit one.
    public static func relayedRecords(_ runs: OperationRuns, document: DocumentID) -> [UInt8] {
        var out: [UInt8] = []
        for part in runs.parts() { LogFormat.appendRecord(.documentRelayed, payload: document.bytes + part.encoded(), to: &out) }
        return out
    }

    /// The record of `document`'s epoch.
    public static func epochRecord(_ epoch: UInt64, document: DocumentID) -> [UInt8] {
        var payload = document.bytes
        LogFormat.put64(epoch, &payload)
        var out: [UInt8] = []
        LogFormat.appendRecord(.documentEpoch, payload: payload, to: &out)
        return out
    }

    /// The record saying that `document` was removed.
    public static func removalRecord(document: DocumentID) -> [UInt8] {
        var out: [UInt8] = []
        LogFormat.appendRecord(.documentRemoved, payload: document.bytes, to: &out)
        return out
    }

    /// The lengths of the whole records in `bytes` (as written by ``records(for:document:)``).
    static func recordLengths(_ bytes: [UInt8]) -> [Int] {
        var lengths: [Int] = []
        var at = 0
        while at + LogFormat.recordOverhead <= bytes.count {
            let n = 8 + Int(LogFormat.get32(bytes[...], at))
            lengths.append(n)
            at += n
        }
        assert(at == bytes.count, "records(for:) makes whole records")
        return lengths
    }
}

/// One intact record of the shared log as the scan found it: whose, what, where. The payload is
/// not decoded here; a document's load decodes its own records only.
public struct SharedLogEntry: Hashable, Sendable {
    /// The document the record belongs to.
    public var document: DocumentID
    /// Operations or epoch.
    public var type: LogRecordType
    /// Where the record starts (its length prefix).
    public var position: LogPosition
    /// The whole record's bytes, prefix included.
    public var length: Int
    /// The epoch, for an epoch record.
    public var epoch: UInt64?
}

/// The result of scanning one segment's bytes: every intact record up to the first bad one.
/// Pure: ``SharedLog`` reads the file, scans it, then keeps a damaged tail aside.
public struct SharedLogScan: Sendable {
    /// The intact records, in file order.
    public var entries: [SharedLogEntry] = []
    /// Bytes from the file's start that are intact (header included): the end of the last record.
    public var validLength: Int
    /// Where the first bad record starts and what is wrong with it; nil when intact.
    public var damage: (offset: Int, reason: LogDamage)?
    /// Zeros after the last record (preallocated space, not damage).
    public var preallocated = 0

    /// Scans `bytes`, the whole segment at `base`.
    ///
    /// Checks every record's length and checksum, its type (3 or 4) and that its payload holds a
    /// document id (and 8 bytes of epoch for type 4); the operations are decoded when the
    /// document is loaded. Stops at the first bad record; an all-zero rest is preallocated space.
    ///
    /// - Throws: ``StoreError/notOurs(path:reason:)`` when the header is not this segment's.
    /// - Complexity: O(n) for n bytes (one checksum pass).
    public static func scan(_ bytes: [UInt8], base: LogPosition, path: String = "segment") throws(StoreError) -> SharedLogScan {
        try SharedLogFormat.checkHeader(bytes[...], base: base, path: path)
        let walk = LogScan.walkRecords(bytes, from: SharedLogFormat.headerSize) { at in
            entry(in: bytes, at: at, base: base).map { ($0, at + $0.length) }
        }
        return SharedLogScan(entries: walk.items, validLength: walk.validLength, damage: walk.damage,
                             preallocated: walk.preallocated)
    }

    static func entry(in bytes: [UInt8], at: Int, base: LogPosition) -> Result<SharedLogEntry, LogDamage> {
        let typeByte: UInt8, len: Int
        switch LogScan.frame(in: bytes, at: at) {
        case let .success(f): (typeByte, len) = f
        case let .failure(damage): return .failure(damage)
        }
        let all = bytes[...]
        let payloadCount = len - 1
        guard let type = LogRecordType(rawValue: typeByte),
              type == .documentOperations || type == .documentEpoch || type == .documentRemoved
                || type == .documentRelayed else {
            return .failure(.unknownType(typeByte))
        }
        guard payloadCount >= SharedLogFormat.idSize else {
            return .failure(.undecodable("payload of \(payloadCount) bytes, too short for a document id"))
        }
        let id = DocumentID(bytes: bytes[at + 9..<at + 9 + SharedLogFormat.idSize])!
        var entry = SharedLogEntry(document: id, type: type, position: base + UInt64(at), length: 8 + len)
        if type == .documentEpoch {
            guard payloadCount == SharedLogFormat.idSize + 8 else {
                return .failure(.undecodable("epoch record of \(payloadCount) bytes, not \(SharedLogFormat.idSize + 8)"))
            }
            entry.epoch = LogFormat.get64(all, at + 9 + SharedLogFormat.idSize)
        }
        if type == .documentRemoved, payloadCount != SharedLogFormat.idSize {
            return .failure(.undecodable("removal record of \(payloadCount) bytes, not \(SharedLogFormat.idSize)"))
        }
        return .success(entry)
    }

    /// Decodes one whole record (`bytes`, prefix included) of the shared log, checking it again.
    ///
    /// - Complexity: O(n) for n bytes, plus decoding the operations.
    public static func decode(_ bytes: ArraySlice<UInt8>, maxValueSize: Int) -> Result<(DocumentID, LogRecord), LogDamage> {
        let record = Array(bytes)
        let entry: SharedLogEntry
        switch Self.entry(in: record, at: 0, base: 0) {
        case let .success(e): entry = e
        case let .failure(damage): return .failure(damage)
        }
        guard entry.length == record.count else { return .failure(.truncated(length: entry.length, available: record.count)) }
        if let epoch = entry.epoch { return .success((entry.document, .epoch(epoch))) }
        if entry.type == .documentRelayed {
            do throws(WireError) {
                return .success((entry.document, .relayed(try OperationRuns(decoding: record[(9 + SharedLogFormat.idSize)...]))))
            } catch {
                return .failure(.undecodable("relayed runs: \(error)"))
            }
        }
        guard entry.type == .documentOperations else { return .failure(.unknownType(entry.type.rawValue)) }
        do {
            let ops = try ListOperation.decode(record[(9 + SharedLogFormat.idSize)...], maxValueSize: maxValueSize)
            return .success((entry.document, .operations(ops)))
        } catch {
            return .failure(.undecodable("\(error)"))
        }
    }
}
