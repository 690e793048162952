import Foundation

/// What compaction left of a document's history: the version it was compacted at (the floor),
/// its greatest counter, the state at the floor (encoded, for snapshots: ``ListDocument/encodedSnapshot(format:)``
/// writes it, then the operations applied since), and the write ids of kept slots that the
/// dropped log no longer gives.
struct CompactionFloor: Sendable {
    var version: VersionVector
    /// The floor's heads: an operation is causally after the floor when it depends on all of them,
    /// or on any operation applied after the floor (each of which is after it, or was refused).
    var frontier: [OpID]
    var base: [UInt8]
    var writes: [OpID: OpID]
    /// The floor's records, encoded (``RecordStore/encoded()``); empty when it has none and its
    /// field clock is 0 (with none left but a clock, the clock is written, with no record).
    var records: [UInt8] = []
    /// Whether `records` are in the layout with text (snapshot version 5).
    var recordsHaveText = false
    /// The counters `version` counts that the copy never held, per replica, as runs
    /// (``ListDocument/floorSkipped``); written by snapshot version 12 when there are any.
    var skipped: [ReplicaID: [ClosedRange<UInt64>]] = [:]
    /// The operations outside `version` that were not causally after it when the floor was made
    /// (a compaction keeping concurrent operations, ``ListDocument/compact(stable:keepingConcurrent:)``):
    /// taken when received, as if after the floor (written by snapshot version 13 when there are any).
    var admitted = AdmittedOperations()
}

/// Why ``ListDocument/compact(stable:)`` did nothing.
public enum CompactionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable version is not this document's version: compaction runs only at a quiescent
    /// stable point, where every operation applied here is stable (Docs/Semantics.md, "Compaction").
    case notQuiescent(stable: VersionVector, version: VersionVector)
    /// The stable version is not one this document may be compacted at as a prefix
    /// (``ListDocument/compactablePrefix(within:)``): `why` says which condition fails.
    case notStablePrefix(stable: VersionVector, version: VersionVector, why: String)

    public var description: String {
        switch self {
        case let .notStablePrefix(stable, version, why):
            return "the document at \(version) cannot be compacted at \(stable): \(why)"
        case let .notQuiescent(stable, version):
            return "the stable version \(stable) is not this document's version \(version): compact when every operation applied here is stable"
        }
    }
}

/// What one compaction collected.
public struct CompactionReport: Hashable, Sendable {
    /// Slots before and after (hidden slots dropped: the interior of every run of dead item slots).
    public var slotsBefore: Int, slotsAfter: Int
    /// Items before and after (dead items with no kept slot dropped).
    public var itemsBefore: Int, itemsAfter: Int
    /// Operations of the log dropped (the history before the stable version).
    public var operationsDropped: Int
    /// The bytes still reclaimable right after the compaction at the floor (``ListDocument/reclaimableBytes``
    /// then: the hidden text characters kept as anchors), before any operation after the floor
    /// was applied again: what a later compaction cannot free by being at a later floor alone.
    public var reclaimableAtFloor = 0
}

extension ListDocument {
    /// Collects what no replica can still need, once the operations of `stable` are causally
    /// stable: `stable` is a version that every replica that can still send operations to this
    /// document has seen, and every operation any of them will send is causally after it
    /// (Docs/Semantics.md, "Compaction": the daemon computes it from what replicas acknowledged).
    ///
    /// `stable` is this document's version (a quiescent document), or a version it has passed,
    /// a *stable prefix* (``compactablePrefix(within:)`` finds one): the result is then the
    /// document that was quiescent at `stable`, compacted there, and received the operations
    /// applied here after `stable` since, in the order they were applied here.
    ///
    /// Collected: the operation log (the history before `stable`), dead items' values and
    /// registers, and every dead item slot inside a run of dead slots (the first and last of each
    /// run stay, as anchors a later insert may name). The visible document is unchanged, and a
    /// replica that was never compacted converges with this one on every later operation.
    ///
    /// Afterwards: ``operations(since:)`` answers only for versions that include `stable`
    /// (``hasHistory(since:)``); an operation not causally after `stable` (depending neither on all
    /// of `stable`'s heads, nor on anything applied since) is refused with ``ApplyError/malformed(_:_:)`` and
    /// changes nothing; a duplicate of an operation before `stable` is a duplicate (its content
    /// can no longer be compared, so an equivocation before the floor goes unnoticed).
    ///
    /// - Throws: ``CompactionError/notStablePrefix(stable:version:why:)`` unless `stable` equals
    ///   ``version``, or is a version this document holds whole, goes past the floor, is causally
    ///   closed, and every operation applied here outside it is causally after it; nothing
    ///   changes then.
    /// - Complexity: O(n + e + m) for n slots, e entities and m logged operations at a quiescent
    ///   point; at a prefix O(n + e + m × r) for r replicas, plus receiving the m operations
    ///   again (``compactAtPrefix(_:)``).
    @discardableResult
    public mutating func compact(stable: VersionVector) throws(CompactionError) -> CompactionReport {
        guard stable.includes(versionVector), versionVector.includes(stable) else {
            return try compactAtPrefix(stable)
        }
        return try compactQuiescent(stable: stable)
    }

    /// ``compact(stable:)`` at `stable`, this document's version.
    ///
    /// - Complexity: O(n + e + m) for n slots, e entities and m logged operations.
    mutating func compactQuiescent(stable: VersionVector, keep: ConcurrentKeep = ConcurrentKeep()) throws(CompactionError) -> CompactionReport {
        guard stable.includes(versionVector), versionVector.includes(stable) else {
            throw .notQuiescent(stable: stable, version: versionVector)
        }
        let state = CompactedState(extracting: self, keep: keep)
        let skipped = skippedCounters()
        var report = CompactionReport(slotsBefore: slots.count, slotsAfter: state.slotCount,
                                      itemsBefore: items.count, itemsAfter: state.items.count,
                                      operationsDropped: log.count)
        var doc = state.build(replica: replica, maxValueSize: maxValueSize)
        doc.compaction = CompactionFloor(version: state.version, frontier: state.frontier,
                                         base: state.encoded(), writes: state.writes,
                                         records: state.records.isBlank ? [] : state.records.encoded(),
                                         recordsHaveText: state.records.hasText, skipped: skipped,
                                         admitted: keep.admitted)
        doc.keepBeside(from: self)
        self = doc
        recountBytes()   // built from the kept state, not operation by operation
        report.slotsAfter = slots.count
        report.reclaimableAtFloor = reclaimableBytes
        return report
    }

    /// Takes from `old` what a document keeps beside its operations, which the document a
    /// compaction rebuilds (at the document's version or at a stable prefix) keeps too: the
    /// conflicts, the wall clock, the causal buffer, the refusals, the limits, the fast paths and
    /// the engine variant.
    mutating func keepBeside(from old: ListDocument) {
        records.conflicts = old.records.conflicts
        records.conflictsDropped = old.records.conflictsDropped
        wallClock = old.wallClock
        buffer = old.buffer
        rejected = old.rejected
        dropped = old.dropped
        refusedBeforeFloor = old.refusedBeforeFloor
        skipsCounter = old.skipsCounter
        pendingLimits = old.pendingLimits
        fastPaths = old.fastPaths
        variant = old.variant
    }

    /// The version this document was last compacted at (``compact(stable:)``): its history starts
    /// there. Nil if it was never compacted.
    public var historyFloor: VersionVector? { compaction?.version }

    /// Whether ``operations(since:)`` can answer for `version`: true unless the document was
    /// compacted at a version that `version` does not include (a replica that far behind needs a
    /// snapshot instead, ``encodedSnapshot(format:)``).
    public func hasHistory(since version: VersionVector) -> Bool {
        compaction.map { version.includes($0.version) } ?? true
    }

    /// Whether `op` (not applied here) is not causally after the compaction floor: its
    /// dependencies include neither every head of the floor nor any operation applied after it
    /// other than those the floor admitted (concurrent with it, ``compact(stable:keepingConcurrent:)``;
    /// an admitted operation itself is taken).
    /// Its author had not seen the whole floor, so it may name collected state; it is refused.
    ///
    /// - Complexity: O(d × h) for d dependencies and h heads of the floor.
    public func isBeforeFloor(_ op: ListOperation) -> Bool {
        guard let floor = compaction else { return false }
        // An operation the floor admitted is taken. One that depends on an admitted operation is
        // after the floor when every head is in its past: the heads it names, those in the pasts
        // of the admitted ones it names, or all of them through one applied after the floor.
        if !floor.admitted.isEmpty, variant != .takesDependentsOfAdmitted {
            if floor.admitted.contains(op.id) { return false }
            return Self.headsSeen(by: op.deps, heads: floor.frontier, floor: floor.version, admitted: floor.admitted) != nil
        }
        if variant == .takesDependentsOfAdmitted, floor.admitted.contains(op.id) { return false }
        for d in op.deps where !floor.version.contains(d) { return false }
        for f in floor.frontier where !op.deps.contains(f) { return true }
        return false
    }
}
