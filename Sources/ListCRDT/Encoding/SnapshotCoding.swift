import Foundation

/// Whole-document snapshots: the document's causal history in the batch format, behind a header
/// that states the version it reaches (Docs/WireFormat.md, "Snapshots").
///
/// A snapshot is history, not state: loading replays every operation with ``receive(_:)``, so
/// the loaded document is the same as the saved one in every respect (``encodedState()``,
/// ``operations(since:)`` for sync, the clock), at the price of a replay on load.
extension ListDocument {
    /// The first bytes of every snapshot: "LSNP".
    static let snapshotMagic: [UInt8] = Array("LSNP".utf8)
    /// The snapshot format version written by ``encodedSnapshot()``.
    public static let snapshotFormatVersion: UInt8 = 1

    /// Encodes the whole document: its version vector and every applied operation, in the order
    /// they were applied (a causal order). Operations still waiting for their dependencies are
    /// not included.
    ///
    /// - Complexity: O(n + v) for n operations and v value bytes.
    public func encodedSnapshot() -> [UInt8] {
        var w = WireWriter()
        w.bytes.append(contentsOf: Self.snapshotMagic)
        w.byte(Self.snapshotFormatVersion)
        let entries = version.entries
        w.count(entries.count)
        for e in entries {
            w.varint(e.replica.rawValue)
            w.varint(e.counter)
        }
        w.bytes.append(contentsOf: ListOperation.encode(operations))
        return w.bytes
    }

    /// Loads a snapshot made by ``encodedSnapshot()`` (on any replica) into a document that edits
    /// as `replica`.
    ///
    /// The bytes are decoded and validated completely, then replayed into a fresh document (typed
    /// runs and delete runs in one step each, see ``receive(encoded:maxOperations:)``); every
    /// operation must apply at once, and the result must reach exactly the version the header
    /// states.
    ///
    /// - Throws: ``WireError`` for malformed bytes, a value over `maxValueSize`, or a history that
    ///   does not replay cleanly (``WireError/inconsistentSnapshot(_:)``).
    /// - Complexity: O(b) to decode b bytes, then the cost of receiving every operation in order.
    public init(
        snapshot: some Collection<UInt8>,
        replica: ReplicaID,
        maxValueSize: Int = ListDocument.defaultMaxValueSize
    ) throws(WireError) {
        var r = WireReader(snapshot)
        for expected in Self.snapshotMagic {
            let at = r.offset
            let b = try r.byte()
            guard b == expected else { throw .invalidTag(b, offset: at) }
        }
        let version = try r.byte()
        guard version == Self.snapshotFormatVersion else { throw .unsupportedVersion(version) }
        let n = try r.count(minBytes: 2)
        var counters: [ReplicaID: UInt64] = [:]
        var last: ReplicaID?
        for _ in 0..<n {
            let at = r.offset
            let replica = ReplicaID(try r.varint())
            let counter = try r.varint()
            guard last.map({ $0 < replica }) ?? true else {
                throw .invalidValue("version vector not in increasing replica order", offset: at)
            }
            guard counter >= 1, counter <= OpID.maxCounter else {
                throw .invalidValue("version vector counter \(counter) out of range", offset: at)
            }
            last = replica
            counters[replica] = counter
        }
        let expected = VersionVector(counters)
        // Each operation costs at least one byte, except in runs of deletes; an item is deleted
        // at most once per replica that saw it, so a real history expands to a few operations per
        // byte at most. The bound keeps a tiny malicious snapshot from claiming billions.
        let maxOperations = r.remaining > (Int.max - 65_536) / 16 ? Int.max : r.remaining * 16 + 65_536
        let batch = try DecodedBatch.decode(from: &r, maxValueSize: maxValueSize, maxOperations: maxOperations)
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }

        // Every operation must apply at once (typed runs and delete runs in one step each).
        var doc = ListDocument(replica: replica, maxValueSize: maxValueSize)
        _ = try doc.apply(batch, strict: true)
        guard doc.version == expected else {
            throw .inconsistentSnapshot("the operations reach \(doc.version), the header says \(expected)")
        }
        self = doc
    }
}
