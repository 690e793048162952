import ListCRDT

/// The operations the daemons of a document parted in merges back, as a device learns them
/// (the `parted` message, Docs/Protocol.md, "Compaction"; Docs/Semantics.md §7, "A device
/// learns what was parted"): per author, counters in disjoint, sorted, non-adjacent runs. The
/// union of every daemon's ``PeerStability/Entry/parted`` ranges a daemon knows of.
///
/// An operation a range names is an *original*: made before a floor some peer compacted at (or
/// on such an operation), taken only by a daemon left out of that floor, which made its edit
/// again under its own ids. No copy compacted at that floor ever takes it. A range can be wider
/// than what was parted (a second merge back widens a daemon's range): it names counters, not
/// operations.
public struct PartedRanges: Hashable, Sendable, CustomStringConvertible {
    /// Per author, its runs of counters, sorted, disjoint and not adjacent.
    public private(set) var runs: [ReplicaID: [ClosedRange<UInt64>]] = [:]

    /// Nothing parted.
    public init() {}

    /// The union of the ranges of every entry of a stability table.
    ///
    /// - Complexity: O(e × p × g) for e entries of p authors and g runs per author.
    public init(_ entries: some Sequence<PeerStability.Entry>) {
        for e in entries { formUnion(e.parted) }
    }

    /// One run per author (what an older daemon's entry or an older stability file holds).
    public init(hulls: [ReplicaID: ClosedRange<UInt64>]) {
        for (r, range) in hulls { insert(range, of: r) }
    }

    /// Nothing parted.
    public var isEmpty: Bool { runs.isEmpty }

    /// The runs of `replica` alone.
    public func only(_ replica: ReplicaID) -> PartedRanges {
        var one = PartedRanges()
        if let list = runs[replica] { one.runs[replica] = list }
        return one
    }

    /// Per author, one run from its first counter to its last (what an older daemon reads of an
    /// entry's ranges).
    ///
    /// - Complexity: O(p) for p authors.
    public var hulls: [ReplicaID: ClosedRange<UInt64>] {
        runs.compactMapValues { list in list.first.map { $0.lowerBound...list.last!.upperBound } }
    }

    /// Whether some author has more than one run (``hulls`` says less than ``runs``).
    public var hasGaps: Bool { runs.values.contains { $0.count > 1 } }

    /// Whether a range names the operation `id` (its first counter).
    ///
    /// - Complexity: O(g) for g runs of its author.
    public func contains(_ id: OpID) -> Bool {
        runs[id.replica]?.contains { $0.contains(id.counter) } ?? false
    }

    /// Adds `range` of `replica`'s counters (`0 < lowerBound`), merged with the runs it touches.
    ///
    /// - Complexity: O(g) for g runs of `replica`.
    public mutating func insert(_ range: ClosedRange<UInt64>, of replica: ReplicaID) {
        var low = range.lowerBound, high = range.upperBound
        var kept: [ClosedRange<UInt64>] = []
        for run in runs[replica] ?? [] {
            if run.upperBound &+ 1 < low || high &+ 1 < run.lowerBound {
                kept.append(run)
            } else {
                low = min(low, run.lowerBound)
                high = max(high, run.upperBound)
            }
        }
        kept.append(low...high)
        kept.sort { $0.lowerBound < $1.lowerBound }
        runs[replica] = kept
    }

    /// Adds the counters of operation `op` (a run's, from its first to its last).
    ///
    /// - Complexity: O(g) for g runs of its replica.
    public mutating func insert(_ op: ListOperation) {
        insert(op.id.counter...op.lastID.counter, of: op.id.replica)
    }

    /// Adds every run of `other`. Returns whether anything was new.
    ///
    /// - Complexity: O(p × g²) for p authors of g runs.
    @discardableResult
    public mutating func formUnion(_ other: PartedRanges) -> Bool {
        let before = self
        for (r, list) in other.runs { for range in list { insert(range, of: r) } }
        return self != before
    }

    /// The operations of `ops` (in causal order) that a range names, or that depend on one of
    /// those, directly or through others of `ops`: originals, and edits made on them. Every other
    /// is in the second list, in order.
    ///
    /// - Complexity: O(k × d × g) for k operations of d dependencies and g runs per author.
    public func split(_ ops: [ListOperation]) -> (parted: [ListOperation], others: [ListOperation]) {
        guard !isEmpty else { return ([], ops) }
        var on = PartedRanges()
        var parted: [ListOperation] = [], others: [ListOperation] = []
        for op in ops {
            if contains(op.id) || op.deps.contains(where: { on.contains($0) }) {
                parted.append(op)
                on.insert(op)
            } else {
                others.append(op)
            }
        }
        return (parted, others)
    }

    public var description: String {
        runs.keys.sorted().map { r in
            runs[r]!.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)@\(r.rawValue)" : "\($0.lowerBound)-\($0.upperBound)@\(r.rawValue)" }
                .joined(separator: ",")
        }.joined(separator: " ")
    }
}

/// The `parted` message's body after the document (Docs/Protocol.md, "Compaction"):
///
/// ```
/// ranges := count:varint (replica:varint (≠ 0) first:varint last:varint)×
/// ```
/// ordered by replica, then by `first`; within a replica the runs disjoint and not adjacent
/// (`last + 1 < next first`), and `0 < first ≤ last`. A decoder refuses anything else as
/// malformed, so that two encodings never mean one set.
extension WireWriter {
    mutating func partedRuns(_ ranges: PartedRanges) {
        let all = ranges.runs.keys.sorted().flatMap { r in ranges.runs[r]!.map { (r, $0) } }
        count(all.count)
        for (r, range) in all { varint(r.rawValue); varint(range.lowerBound); varint(range.upperBound) }
    }
}

extension WireReader {
    mutating func partedRuns() throws(WireError) -> PartedRanges {
        var ranges = PartedRanges()
        var previous: (replica: UInt64, last: UInt64) = (0, 0)
        for _ in 0..<(try count(minBytes: 3)) {
            let at = offset
            let r = try varint(), first = try varint(), last = try varint()
            let ordered = r > previous.replica || (r == previous.replica && previous.last < UInt64.max - 1 && first > previous.last + 1)
            guard r != 0, first > 0, first <= last, ordered else {
                throw .invalidValue("parted range \(first)...\(last) of replica \(r)", offset: at)
            }
            ranges.insert(first...last, of: ReplicaID(r))
            previous = (r, last)
        }
        return ranges
    }
}
