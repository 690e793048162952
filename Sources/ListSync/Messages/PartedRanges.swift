import ListCRDT

/// The operations the daemons of a document parted in merges back, as a device learns them
/// (the `parted` message, Docs/Protocol.md, "Compaction"; Docs/Semantics.md §7, "A device
/// learns what was parted"): per author, counters in disjoint, sorted, non-adjacent runs. The
/// union of every daemon's ``PeerStability/Entry/parted`` ranges a daemon knows of. The same
/// type as the runs of relayed operations (``OperationRuns``, in ListCRDT).
///
/// An operation a range names is an *original*: made before a floor some peer compacted at (or
/// on such an operation), taken only by a daemon left out of that floor, which made its edit
/// again under its own ids. No copy compacted at that floor ever takes it. A range can be wider
/// than what was parted (a second merge back widens a daemon's range): it names counters, not
/// operations.
public typealias PartedRanges = OperationRuns

extension OperationRuns {
    /// The union of the parted ranges of every entry of a stability table.
    ///
    /// - Complexity: O(e × p × g) for e entries of p authors and g runs per author.
    public init(_ entries: some Sequence<PeerStability.Entry>) {
        self.init()
        for e in entries { formUnion(e.parted) }
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
