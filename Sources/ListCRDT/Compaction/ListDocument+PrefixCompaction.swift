import Foundation

// Compaction at a stable prefix (Docs/Semantics.md §7, "A stable prefix"): a document that keeps
// receiving operations is compacted at a version `S` it has passed, as if it had been quiescent
// at `S`, compacted there, and received the operations after `S` since.

extension ListDocument {
    /// The greatest version within `stable` at which ``compact(stable:)`` may compact this
    /// document now: a version `C` that this document holds whole (`C` ⊆ ``version``), that
    /// includes the floor (``historyFloor``) and that every operation applied here outside it is
    /// causally after (its author had seen all of `C`). Nil when that is no more than the floor
    /// (nothing to collect), or when `stable` does not include the floor.
    ///
    /// `stable` is a causally closed version, such as the stable version a daemon computes
    /// (the pointwise minimum of what the senders acknowledged): an operation it holds that was
    /// made before its author had seen all of `stable` (made before the acknowledgement, sent
    /// after the others' minimum) is not after `stable`, so `C` is shrunk to what that operation's
    /// author had seen, until every operation outside `C` is after it. Operations still waiting
    /// for their causes are not looked at: the caller compacts only when none waits.
    ///
    /// The shrinking is a worklist, not passes over the log until nothing shrinks: an operation
    /// is looked at once, when it is outside `C` from the start or when a shrink leaves it
    /// outside (found among its replica's operations, logged in counter order, by binary
    /// search). `C` only shrinks, so an operation after `C` stays after it. The answer is
    /// the one the passes gave, the greatest such version within `stable`: every version that
    /// qualifies is within each meet taken. The passes cost O(m × r) each, and a long chain of
    /// concurrent edits (devices that each edit before taking the others' last edits) made them
    /// as many as its links: a daemon 250,000 operations into a busy run spent 70 % of its time
    /// here (Docs/Benchmarks.md, "A stable prefix found in one pass").
    ///
    /// - Complexity: O(m × r log r) for m operations logged since the floor and r replicas.
    public func compactablePrefix(within stable: VersionVector) -> VersionVector? {
        let floor = compaction?.version ?? VersionVector()
        guard stable.includes(floor) else { return nil }
        var c = VersionVector()
        for e in stable.entries { c[e.replica] = min(e.counter, versionVector[e.replica]) }
        let history = PrefixHistory(self)
        // The logged operations outside `C`, to be looked at.
        var outside = history.ops.indices.filter { !c.contains(history.ops[$0].id) }
        var next = 0
        while next < outside.count {
            let k = outside[next]
            next += 1
            guard !history.pasts[k].includes(c) else { continue }
            let shrunk = c.meet(history.pasts[k])
            for e in c.entries where shrunk[e.replica] < e.counter {
                // The replica's operations whose first id was in `C` and is not in the meet.
                outside += history.positions(of: e.replica, firstAfter: shrunk[e.replica], through: e.counter)
            }
            c = shrunk
        }
        return c.includes(floor) && !floor.includes(c) ? c : nil
    }

    /// Why `stable` is not a version ``compactAtPrefix(_:)`` may compact at, or nil if it is:
    /// this document holds it whole, it includes the floor and goes past it (a document that is
    /// not quiescent is not compacted at its floor again), it is causally closed here (every
    /// dependency of an operation in it is in it, or in the floor), it ends at operation
    /// boundaries, and every operation applied here outside it is causally after it.
    ///
    /// - Complexity: O(m × r) for m operations logged since the floor and r replicas.
    func prefixProblem(_ stable: VersionVector, history: PrefixHistory, keepingConcurrent: Bool = false) -> String? {
        let floor = compaction?.version ?? VersionVector()
        guard versionVector.includes(stable) else { return "this document has not applied all of it" }
        guard stable.includes(floor) else { return "it does not include the floor \(floor)" }
        guard !floor.includes(stable) else { return "it is the floor already: nothing to collect" }
        for (k, op) in history.ops.enumerated() {
            let inside = stable.contains(op.id)
            if inside != stable.contains(op.lastID) { return "it ends inside operation \(op.id)" }
            if inside {
                if !stable.includes(history.pasts[k]) { return "operation \(op.id) in it depends on one outside it" }
            } else if !keepingConcurrent, !history.pasts[k].includes(stable) {
                return "operation \(op.id) outside it was made before its author had seen all of it"
            }
        }
        return nil
    }

    /// ``compact(stable:)`` at a version `stable` this document has passed: the document at
    /// `stable` is rebuilt (the floor's state, then the logged operations in `stable`, in log
    /// order), compacted there as a quiescent document is, and the logged operations outside
    /// `stable` are received on it, in log order. What the document keeps beside its operations
    /// (clock, wall clock, conflicts, the causal buffer, refusals, limits) is carried over.
    ///
    /// - Complexity: O(n + e + m × r) for n slots, e entities, m logged operations and r
    ///   replicas, plus receiving the m operations again.
    mutating func compactAtPrefix(_ stable: VersionVector, keepingConcurrent: Bool = false) throws(CompactionError) -> CompactionReport {
        let history = PrefixHistory(self)
        if let why = prefixProblem(stable, history: history, keepingConcurrent: keepingConcurrent) {
            throw .notStablePrefix(stable: stable, version: versionVector, why: why)
        }
        var before: [ListOperation] = [], after: [ListOperation] = []
        for op in history.ops {
            if stable.contains(op.id) { before.append(op) } else { after.append(op) }
        }
        var doc = floorDocument()
        _ = doc.receive(before)
        guard doc.versionVector == stable, doc.pendingCount == 0 else {
            throw .notStablePrefix(stable: stable, version: versionVector, why: "its operations did not apply on the floor")
        }
        var keep = ConcurrentKeep()
        if keepingConcurrent {
            let found = Self.admittedAt(heads: Array(doc.frontier), stable: stable, after: after)
            keep = concurrentKeep(at: stable, concurrent: found.ops)
            keep.admitted = found.admitted
        }
        let slotsBefore = slots.count, itemsBefore = items.count
        var report: CompactionReport
        report = try doc.compactQuiescent(stable: stable, keep: keep)
        report.slotsBefore = slotsBefore
        report.itemsBefore = itemsBefore
        report.operationsDropped = before.count
        let again = doc.receive(after)
        guard doc.versionVector == versionVector, doc.pendingCount == 0 else {
            let what = again.refused.first.map { "refused: \($0)" }
                ?? doc.pendingOperations.first.map { "\($0.id) waits for its causes" } ?? "\(again)"
            throw .notStablePrefix(stable: stable, version: versionVector, why: "the operations after it did not apply on the compacted document (\(what))")
        }
        // What the rebuilt document shows must be what this one shows, fields and text included;
        // otherwise nothing changes (a safety net: seed 15 of SimulatorTextTests found a case).
        if let why = doc.visibleDifference(from: self) {
            throw .notStablePrefix(stable: stable, version: versionVector, why: "the document compacted there shows something else: \(why)")
        }
        doc.clock = max(doc.clock, clock)
        doc.keepBeside(from: self)
        report.slotsAfter = doc.slots.count
        report.itemsAfter = doc.items.count
        self = doc
        return report
    }

    /// Where this document shows something else than `other`: its visible snapshot, or the
    /// fields of a visible section or item; nil if nothing.
    ///
    /// - Complexity: O(n + f) for n visible entities and f fields.
    func visibleDifference(from other: ListDocument) -> String? {
        guard snapshot() == other.snapshot() else { return "the visible list" }
        for (s, id) in sectionIDs.enumerated() {
            if fields(of: id) != other.fields(of: id) { return "the fields of section \(id)" }
            for item in (try? itemIDs(inSection: s)) ?? [] where fields(of: item) != other.fields(of: item) {
                return "the fields of item \(item)"
            }
        }
        return nil
    }

    /// The document at its floor, operations none: the floor's state built again (as a compacted
    /// snapshot's load builds it), or an empty document if it was never compacted.
    ///
    /// - Complexity: O(b + n log n) for b bytes of the floor's state and n kept slots.
    func floorDocument() -> ListDocument {
        guard let floor = compaction else {
            var doc = ListDocument(replica: replica, maxValueSize: maxValueSize)
            doc.fastPaths = fastPaths
            doc.variant = variant
            return doc
        }
        var r = WireReader(floor.base)
        // The floor's state was built and checked when the floor was made or loaded: it decodes.
        var state = try! CompactedState(decoding: &r, maxValueSize: maxValueSize)
        if !floor.records.isEmpty {
            state.records = try! RecordStore(decoding: floor.records, maxValueSize: maxValueSize, text: floor.recordsHaveText)
        }
        var doc = state.build(replica: replica, maxValueSize: maxValueSize)
        doc.compaction = floor
        doc.fastPaths = fastPaths
        doc.variant = variant
        return doc
    }
}

/// The operations logged since a document's floor, in log order, each with its causal past as a
/// version (the floor, and every logged operation it depends on, directly or not; for an operation
/// the floor admitted, of the floor only what its dependencies there name).
struct PrefixHistory {
    var ops: [ListOperation]
    var pasts: [VersionVector]
    /// Each replica's logged operations as runs of counters with their log positions, in counter
    /// order (a replica's operations are logged in counter order).
    private var index: [ReplicaID: [(first: UInt64, last: UInt64, k: Int)]] = [:]

    /// - Complexity: O(m × r) for m logged operations and r replicas.
    init(_ doc: ListDocument) {
        ops = doc.operations
        pasts = []
        pasts.reserveCapacity(ops.count)
        let floor = doc.compaction?.version ?? VersionVector()
        let admitted = doc.compaction?.admitted ?? AdmittedOperations()
        // Every logged operation is after the floor, its past holding the floor whole, except
        // those the floor admitted (concurrent with it): theirs holds, of the floor, what their
        // dependencies there are sure to (each one's replica up to it). Less than their past, so
        // they are never taken for after a version they are not after.
        for (k, op) in ops.enumerated() {
            var past = floor
            if !admitted.isEmpty, admitted.contains(op.id) {
                past = VersionVector()
                for d in op.deps where floor.contains(d) { past.observe(d) }
            }
            for d in op.deps where !floor.contains(d) {
                guard let j = Self.find(d, in: index[d.replica] ?? []) else { continue }
                past.formUnion(pasts[j])
                past.observe(ops[j].lastID)
            }
            pasts.append(past)
            index[op.id.replica, default: []].append((op.id.counter, op.lastID.counter, k))
        }
    }

    /// The log positions of `replica`'s operations whose first counter is in `after + 1 ... through`,
    /// in counter order.
    ///
    /// - Complexity: O(log n + k) for n operations of the replica and k found.
    func positions(of replica: ReplicaID, firstAfter after: UInt64, through: UInt64) -> [Int] {
        let runs = index[replica] ?? []
        var lo = 0, hi = runs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if runs[mid].first <= after { lo = mid + 1 } else { hi = mid }
        }
        var found: [Int] = []
        while lo < runs.count, runs[lo].first <= through {
            found.append(runs[lo].k)
            lo += 1
        }
        return found
    }

    /// The index of the logged operation whose ids hold `id` (a replica's operations are logged
    /// in counter order).
    private static func find(_ id: OpID, in runs: [(first: UInt64, last: UInt64, k: Int)]) -> Int? {
        var lo = 0, hi = runs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if runs[mid].last < id.counter { lo = mid + 1 } else { hi = mid }
        }
        return lo < runs.count && runs[lo].first <= id.counter ? runs[lo].k : nil
    }
}

extension VersionVector {
    /// The pointwise minimum of two versions: the operations both include (a causally closed
    /// version when both are).
    ///
    /// - Complexity: O(r log r) for r replicas.
    public func meet(_ other: VersionVector) -> VersionVector {
        var out = VersionVector()
        for e in entries {
            let c = min(e.counter, other[e.replica])
            if c > 0 { out[e.replica] = c }
        }
        return out
    }
}
