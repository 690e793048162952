import ListCRDT

/// The kinds of log record (the type byte).
public enum LogRecordType: UInt8, Sendable, CaseIterable {
    /// An operation batch: the payload is `ListOperation.encode(batch)`.
    case operations = 1
    /// The document's epoch from here on: the payload is a u64 LE.
    case epoch = 2
    /// In the shared log: an operation batch of one document: its 16-byte id, then
    /// `ListOperation.encode(batch)`.
    case documentOperations = 3
    /// In the shared log: one document's epoch from here on: its 16-byte id, then a u64 LE.
    case documentEpoch = 4
    /// In the shared log: the document was removed; its earlier records are never read (the
    /// payload is its 16-byte id).
    case documentRemoved = 5
    /// Which operations came through a peer link (``OperationRuns``): the payload is
    /// ``OperationRuns/encoded()``. Written before the batch it names, in the same append.
    case relayed = 6
    /// In the shared log: ``relayed`` of one document: its 16-byte id, then the runs.
    case documentRelayed = 7
}

/// The byte layouts of the log and snapshot files (Docs/Storage.md). Every integer is little-endian.
///
/// ```
/// log header (32 B)   0 "LSYNCLOG" | 8 format u16 | 10 flags u16 | 12 document id (16)
///                     | 28 masked CRC32C of bytes 0..<28, u32
/// record              len u32 (1 ... 1 MiB: the type byte + payload) | crc u32 = masked CRC32C(len ‖ type ‖ payload)
///                     | type u8 | payload (len - 1 bytes)
/// snapshot (52 B + n) 0 "LSYNCSNP" | 8 format u16 | 10 flags u16 | 12 document id (16) | 28 epoch u64
///                     | 36 payload length u64 | 44 masked CRC32C(payload) u32 | 48 masked CRC32C of bytes 0..<48, u32
///                     | 52 payload: ListDocument.encodedSnapshot()
/// ```
public enum LogFormat {
    /// The first eight bytes of every log.
    public static let logMagic: [UInt8] = Array("LSYNCLOG".utf8)
    /// The first eight bytes of every snapshot file.
    public static let snapshotMagic: [UInt8] = Array("LSYNCSNP".utf8)
    /// The format version written (and the only one read) in both headers.
    public static let formatVersion: UInt16 = 1
    /// The log header's size.
    public static let logHeaderSize = 32
    /// The snapshot header's size.
    public static let snapshotHeaderSize = 52
    /// Bytes before a record's payload: len, crc, type.
    public static let recordOverhead = 9
    /// The largest record length (type byte + payload).
    public static let maxRecordLength = 1 << 20

    // MARK: Log header

    /// The 32-byte header of a log of `document`.
    public static func logHeader(_ document: DocumentID) -> [UInt8] {
        var h = logMagic
        put16(formatVersion, &h)
        put16(0, &h)
        h += document.bytes
        put32(CRC32C.masked(CRC32C.checksum(h)), &h)
        return h
    }

    /// Checks a log header; throws ``StoreError/notOurs(path:reason:)`` with what is wrong.
    public static func checkLogHeader(_ bytes: ArraySlice<UInt8>, document: DocumentID, path: String) throws(StoreError) {
        guard bytes.count >= logHeaderSize else {
            throw .notOurs(path: path, reason: "\(bytes.count) bytes, shorter than the \(logHeaderSize)-byte log header")
        }
        let s = bytes.startIndex
        guard Array(bytes[s..<s + 8]) == logMagic else { throw .notOurs(path: path, reason: "no LSYNCLOG magic") }
        let crc = get32(bytes, s + 28)
        guard CRC32C.masked(CRC32C.checksum(bytes[s..<s + 28])) == crc else {
            throw .notOurs(path: path, reason: "log header checksum mismatch")
        }
        let format = get16(bytes, s + 8)
        guard format == formatVersion else {
            throw .notOurs(path: path, reason: "log format \(format); this build reads format \(formatVersion)")
        }
        let id = DocumentID(bytes: bytes[s + 12..<s + 28])!
        guard id == document else { throw .notOurs(path: path, reason: "the log is document \(id)'s, not \(document)'s") }
    }

    // MARK: Records

    /// Appends one record of `type` with `payload` to `out`.
    ///
    /// - Precondition: `payload.count < maxRecordLength`.
    /// - Complexity: O(n).
    public static func appendRecord(_ type: LogRecordType, payload: [UInt8], to out: inout [UInt8]) {
        precondition(payload.count < maxRecordLength, "record payload over the limit")
        let len = UInt32(payload.count + 1)
        var lenBytes: [UInt8] = []
        put32(len, &lenBytes)
        var crc = CRC32C()
        crc.update(lenBytes)
        crc.update(CollectionOfOne(type.rawValue))
        crc.update(payload)
        out += lenBytes
        put32(CRC32C.masked(crc.value), &out)
        out.append(type.rawValue)
        out += payload
    }

    /// The records naming `runs` as relayed (``LogRecordType/relayed``): none when `runs` is
    /// empty, several when they do not fit one.
    public static func relayedRecords(_ runs: OperationRuns) -> [UInt8] {
        var out: [UInt8] = []
        for part in runs.parts() { appendRecord(.relayed, payload: part.encoded(), to: &out) }
        return out
    }

    /// The record of an epoch.
    public static func epochRecord(_ epoch: UInt64) -> [UInt8] {
        var payload: [UInt8] = []
        put64(epoch, &payload)
        var out: [UInt8] = []
        appendRecord(.epoch, payload: payload, to: &out)
        return out
    }

    // MARK: Snapshot file

    /// The snapshot format of a document kept in the shared log: format 1's header with the log
    /// position the snapshot covers (every record of the document before it is in the snapshot).
    public static let sharedSnapshotFormat: UInt16 = 2
    /// The size of format 2's header.
    public static let sharedSnapshotHeaderSize = 68

    /// A snapshot file: its header, then `payload`; with `position`, format 2 (a document of the
    /// shared log), which also records the log position the snapshot covers:
    ///
    /// ```
    /// 0 "LSYNCSNP" | 8 format u16 (2) | 10 flags u16 | 12 document id (16) | 28 epoch u64
    /// | 36 payload length u64 | 44 masked CRC32C(payload) u32 | 48 covered log position u64
    /// | 56 zeros (8) | 64 masked CRC32C of bytes 0..<64, u32 | 68 payload
    /// ```
    ///
    /// - Complexity: O(n).
    public static func snapshotFile(_ payload: [UInt8], document: DocumentID, epoch: UInt64,
                                    covering position: UInt64? = nil) -> [UInt8] {
        var h = snapshotMagic
        h.reserveCapacity(sharedSnapshotHeaderSize + payload.count)
        put16(position == nil ? formatVersion : sharedSnapshotFormat, &h)
        put16(0, &h)
        h += document.bytes
        put64(epoch, &h)
        put64(UInt64(payload.count), &h)
        put32(CRC32C.masked(CRC32C.checksum(payload)), &h)
        if let position {
            put64(position, &h)
            put64(0, &h)
        }
        put32(CRC32C.masked(CRC32C.checksum(h)), &h)
        h += payload
        return h
    }

    /// The epoch and payload of a snapshot file, and for format 2 the log position it covers,
    /// after checking everything but the payload's content; throws
    /// ``StoreError/corruptSnapshot(path:reason:)`` or, for another document's snapshot,
    /// ``StoreError/notOurs(path:reason:)``.
    ///
    /// - Complexity: O(n).
    public static func readSnapshotFile(_ bytes: [UInt8], document: DocumentID, path: String) throws(StoreError)
        -> (epoch: UInt64, payload: ArraySlice<UInt8>, covering: UInt64?) {
        guard bytes.count >= snapshotHeaderSize else {
            throw .corruptSnapshot(path: path, reason: "\(bytes.count) bytes, shorter than its header")
        }
        guard Array(bytes[0..<8]) == snapshotMagic else { throw .corruptSnapshot(path: path, reason: "no LSYNCSNP magic") }
        let format = get16(bytes[...], 8)
        let headerSize: Int
        switch format {
        case formatVersion: headerSize = snapshotHeaderSize
        case sharedSnapshotFormat: headerSize = sharedSnapshotHeaderSize
        default: headerSize = 0
        }
        guard headerSize > 0, bytes.count >= headerSize,
              CRC32C.masked(CRC32C.checksum(bytes[0..<headerSize - 4])) == get32(bytes[...], headerSize - 4) else {
            throw .corruptSnapshot(path: path, reason: headerSize == 0 || bytes.count < headerSize
                                   ? "format \(format) unreadable; this build reads formats 1 and 2"
                                   : "header checksum mismatch")
        }
        let id = DocumentID(bytes: bytes[12..<28])!
        guard id == document else { throw .notOurs(path: path, reason: "the snapshot is document \(id)'s, not \(document)'s") }
        let length = get64(bytes[...], 36)
        guard length == UInt64(bytes.count - headerSize) else {
            throw .corruptSnapshot(path: path, reason: "header says \(length) payload bytes, file has \(bytes.count - headerSize)")
        }
        let payload = bytes[headerSize...]
        guard CRC32C.masked(CRC32C.checksum(payload)) == get32(bytes[...], 44) else {
            throw .corruptSnapshot(path: path, reason: "payload checksum mismatch")
        }
        return (get64(bytes[...], 28), payload, format == sharedSnapshotFormat ? get64(bytes[...], 48) : nil)
    }

    // MARK: Little-endian integers

    static func put16(_ v: UInt16, _ out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v)); out.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    static func put32(_ v: UInt32, _ out: inout [UInt8]) {
        for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }

    static func put64(_ v: UInt64, _ out: inout [UInt8]) {
        for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) }
    }

    static func get16(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }

    static func get32(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * $1) }
    }

    static func get64(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * $1) }
    }
}
