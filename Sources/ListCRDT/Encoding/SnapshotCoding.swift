import Foundation

/// Whole-document snapshots (Docs/WireFormat.md, "Snapshots"), in two formats:
///
/// - version 2, the default (``SnapshotFormat/state``): the document's tables, rebuilt directly
///   on load (`StateSnapshotEncoding.swift`, `StateSnapshotDecoding.swift`);
/// - version 1 (``SnapshotFormat/history``): the causal history in the batch format behind a
///   header that states the version it reaches; loading replays every operation.
///
/// Either way the loaded document is the same as the saved one in every respect
/// (``encodedState()``, ``operations(since:)`` for sync, the clock, further edits).
extension ListDocument {
    /// The first bytes of every snapshot: "LSNP".
    static let snapshotMagic: [UInt8] = Array("LSNP".utf8)
    /// The history snapshot format version (``SnapshotFormat/history``).
    public static let snapshotFormatVersion: UInt8 = 1

    /// Encodes the whole document as a snapshot in `format`: by default its state (version 2),
    /// which loads without a replay; ``SnapshotFormat/history`` writes version 1 (the version
    /// vector and every applied operation, in the order they were applied), which every earlier
    /// build reads. Operations still waiting for their dependencies are not included in either.
    ///
    /// A compacted document (``compact(stable:)``) is always written as version 3: the state at its
    /// floor, then the operations applied since (4 with fields, 6 with text, 12 when its floor
    /// counts counters it never held, ``floorSkipped``).
    ///
    /// A document of more than 16 slots per byte of its state snapshot (millions of items with
    /// empty values) is written as version 1, which the loader's bound on slots does not limit.
    ///
    /// - Complexity: O(n + m + v) for n slots, m operations and v value bytes.
    public func encodedSnapshot(format: SnapshotFormat = .state) -> [UInt8] {
        // A compacted document has no history before its floor: version 3, whatever the format.
        if let floor = compaction { return encodedCompactedSnapshot(floor) }
        if format == .state {
            let bytes = encodedStateSnapshot()
            if slots.count <= (bytes.count - 5) * 16 + 65_536 && log.count <= (bytes.count - 5) * 16 + 65_536 {
                return bytes
            }
        }
        return encodedHistorySnapshot()
    }

    /// The version-1 snapshot: the version vector, then the history as one batch.
    private func encodedHistorySnapshot() -> [UInt8] {
        var w = WireWriter()
        w.bytes.append(contentsOf: Self.snapshotMagic)
        w.byte(Self.snapshotFormatVersion)
        let entries = version.entries
        w.count(entries.count)
        for e in entries {
            w.varint(e.replica.rawValue)
            w.varint(e.counter)
        }
        appendEncodedOperations(since: VersionVector(), to: &w)
        return w.bytes
    }

    /// Loads a snapshot made by ``encodedSnapshot(format:)`` (on any replica, in either format)
    /// into a document that edits as `replica`.
    ///
    /// A state snapshot (version 2) is rebuilt table by table, every field checked as it is read
    /// (indices in range, counts the input can hold, slots, log and trees that agree); what it
    /// does not store is derived (version vector, clock, position registers, visibility, the
    /// B-trees). A history snapshot (version 1) is decoded and validated completely, then replayed
    /// into a fresh document (typed runs and delete runs in one step each, see
    /// ``receive(encoded:maxOperations:)``); every operation must apply at once, and the result
    /// must reach exactly the version the header states.
    ///
    /// - Throws: ``WireError`` for malformed bytes, a value over `maxValueSize`, or a history that
    ///   does not replay cleanly (``WireError/inconsistentSnapshot(_:)``). Nothing is loaded then.
    /// - Complexity: version 2: O(b + n + m) for b bytes, n slots and m log records; version 1:
    ///   O(b) to decode, then the cost of receiving every operation in order.
    public init(
        snapshot: some Collection<UInt8>,
        replica: ReplicaID,
        maxValueSize: Int = ListDocument.defaultMaxValueSize
    ) throws(WireError) {
        try self.init(snapshot: snapshot, replica: replica, maxValueSize: maxValueSize, lazyLog: true)
    }

    /// ``init(snapshot:replica:maxValueSize:)``; `lazyLog` false decodes a state snapshot's field
    /// writes at the load (as builds before `History/LazyOperations.swift` did; for tests).
    init(snapshot: some Collection<UInt8>, replica: ReplicaID, maxValueSize: Int, lazyLog: Bool) throws(WireError) {
        var r = WireReader(snapshot)
        for expected in Self.snapshotMagic {
            let at = r.offset
            let b = try r.byte()
            guard b == expected else { throw .invalidTag(b, offset: at) }
        }
        let version = try r.byte()
        if version == Self.stateSnapshotFormatVersion || version == Self.stateFieldsSnapshotFormatVersion
            || version == Self.stateTextSnapshotFormatVersion || version == Self.stateTextRunsSnapshotFormatVersion
            || version == Self.stateRecordsSnapshotFormatVersion || version == Self.stateRecordsPastedSnapshotFormatVersion
            || version == Self.stateDerivedTextSnapshotFormatVersion {
            var decoder = StateSnapshotDecoder(r, replica: replica, maxValueSize: maxValueSize,
                                               othersInOneBatch: version != Self.stateSnapshotFormatVersion,
                                               textRecords: version >= Self.stateTextSnapshotFormatVersion,
                                               textRuns: version >= Self.stateTextRunsSnapshotFormatVersion,
                                               stateRecords: version >= Self.stateRecordsSnapshotFormatVersion,
                                               pastedRecords: version == Self.stateRecordsPastedSnapshotFormatVersion,
                                               derivedTexts: version == Self.stateDerivedTextSnapshotFormatVersion,
                                               lazyLog: lazyLog)
            self = try decoder.decode()
            records.conflicts = []   // history, not news (Docs/Semantics.md §8.3)
            recountBytes()   // the tables were loaded whole, not operation by operation
            return
        }
        if version == Self.compactedSnapshotFormatVersion || version == Self.compactedRecordsSnapshotFormatVersion
            || version == Self.compactedTextSnapshotFormatVersion {
            self = try Self.loadCompacted(&r, replica: replica, maxValueSize: maxValueSize,
                                          records: version >= Self.compactedRecordsSnapshotFormatVersion,
                                          text: version == Self.compactedTextSnapshotFormatVersion)
            records.conflicts = []
            recountBytes()
            return
        }
        if version == Self.compactedSkippedSnapshotFormatVersion || version == Self.compactedConcurrentSnapshotFormatVersion {
            let at = r.offset
            let flags = try r.byte()
            guard flags == 0 || flags == 1 || flags == 3 else { throw .invalidValue("compacted snapshot flags \(flags)", offset: at) }
            self = try Self.loadCompacted(&r, replica: replica, maxValueSize: maxValueSize,
                                          records: flags & 1 != 0, text: flags & 2 != 0, skipped: true,
                                          admitted: version == Self.compactedConcurrentSnapshotFormatVersion)
            records.conflicts = []
            recountBytes()
            return
        }
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
        doc.records.conflicts = []
        self = doc
    }
}
