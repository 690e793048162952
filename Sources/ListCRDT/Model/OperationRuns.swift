import Foundation

/// Operations named by id, as runs of counters per replica: sorted, disjoint and not adjacent,
/// so that one set has one value (and one encoding).
///
/// Two uses: the operations a daemon's copy took from a peer link rather than from their author
/// (Docs/Semantics.md §7, "Relayed operations, kept in the log"), which a merge back does not
/// make again, since the daemon that took each from its author does (the store keeps them in the
/// log beside the batches, ``ListStore``'s relayed records); and the operations the daemons of a
/// document parted in merges back (`PartedRanges` in ListSync, the same type).
///
/// Inserting a run that starts after a replica's last run (operations noted in counter order, as
/// a relay notes them) is O(1); any other insert is O(g) for the g runs of its replica.
public struct OperationRuns: Hashable, Sendable, CustomStringConvertible {
    /// Per replica, its runs of counters, sorted, disjoint and not adjacent.
    public private(set) var runs: [ReplicaID: [ClosedRange<UInt64>]] = [:]

    /// No operation.
    public init() {}

    /// The runs of `ops` (each operation's counters, first to last).
    ///
    /// - Complexity: O(k) for k operations in counter order per replica.
    public init(_ ops: some Sequence<ListOperation>) {
        for op in ops { insert(op) }
    }

    /// One run per replica (what an older daemon's entry or an older stability file holds).
    public init(hulls: [ReplicaID: ClosedRange<UInt64>]) {
        for (r, range) in hulls { insert(range, of: r) }
    }

    /// No operation named.
    public var isEmpty: Bool { runs.isEmpty }

    /// How many counters the runs hold.
    ///
    /// - Complexity: O(g) for g runs.
    public var count: Int { runs.values.reduce(0) { $0 + $1.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound + 1) } } }

    /// Whether a run holds `id`'s counter.
    ///
    /// - Complexity: O(log g) for the g runs of `id`'s replica.
    public func contains(_ id: OpID) -> Bool {
        guard let list = runs[id.replica] else { return false }
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].upperBound < id.counter { lo = mid + 1 } else { hi = mid }
        }
        return lo < list.count && list[lo].lowerBound <= id.counter
    }

    /// The runs of `replica` alone.
    public func only(_ replica: ReplicaID) -> OperationRuns {
        var one = OperationRuns()
        if let list = runs[replica] { one.runs[replica] = list }
        return one
    }

    /// Per replica, one run from its first counter to its last (what an older daemon reads of an
    /// entry's parted ranges).
    ///
    /// - Complexity: O(p) for p replicas.
    public var hulls: [ReplicaID: ClosedRange<UInt64>] {
        runs.compactMapValues { list in list.first.map { $0.lowerBound...list.last!.upperBound } }
    }

    /// Whether some replica has more than one run (``hulls`` says less than ``runs``).
    public var hasGaps: Bool { runs.values.contains { $0.count > 1 } }

    /// Adds `range` of `replica`'s counters (`0 < lowerBound`), merged with the runs it touches.
    ///
    /// - Complexity: O(1) when it starts at or after the start of `replica`'s last run, else O(g)
    ///   for g runs of `replica`.
    public mutating func insert(_ range: ClosedRange<UInt64>, of replica: ReplicaID) {
        guard var list = runs[replica], let last = list.last else {
            runs[replica] = [range]
            return
        }
        if range.lowerBound >= last.lowerBound {
            if last.upperBound &+ 1 >= range.lowerBound {
                list[list.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                list.append(range)
            }
            runs[replica] = list
            return
        }
        var low = range.lowerBound, high = range.upperBound
        var kept: [ClosedRange<UInt64>] = []
        kept.reserveCapacity(list.count + 1)
        for run in list {
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
    /// - Complexity: as ``insert(_:of:)``.
    public mutating func insert(_ op: ListOperation) {
        insert(op.id.counter...op.lastID.counter, of: op.id.replica)
    }

    /// Adds every run of `other`. Returns whether anything was new.
    ///
    /// - Complexity: O(p × g²) for p replicas of g runs (O(g) each when `other`'s runs come after).
    @discardableResult
    public mutating func formUnion(_ other: OperationRuns) -> Bool {
        let before = self
        for (r, list) in other.runs { for range in list { insert(range, of: r) } }
        return self != before
    }

    /// Without the counters `version` holds (each replica's up to its counter there).
    ///
    /// - Complexity: O(g) for g runs.
    public mutating func remove(within version: VersionVector) {
        for (r, list) in runs {
            let floor = version[r]
            let kept = list.compactMap { $0.upperBound <= floor ? nil : max($0.lowerBound, floor + 1)...$0.upperBound }
            runs[r] = kept.isEmpty ? nil : kept
        }
    }

    /// Without the runs of `replica`.
    public mutating func remove(_ replica: ReplicaID) { runs[replica] = nil }

    /// The operations of `ops` (in causal order) that a run names, or that depend on one of
    /// those, directly or through others of `ops`; every other is in the second list, in order.
    ///
    /// - Complexity: O(k × d × log g) for k operations of d dependencies and g runs per replica.
    public func split(_ ops: [ListOperation]) -> (named: [ListOperation], others: [ListOperation]) {
        guard !isEmpty else { return ([], ops) }
        var on = OperationRuns()
        var named: [ListOperation] = [], others: [ListOperation] = []
        for op in ops {
            if contains(op.id) || op.deps.contains(where: { on.contains($0) }) {
                named.append(op)
                on.insert(op)
            } else {
                others.append(op)
            }
        }
        return (named, others)
    }

    /// The runs split into parts of at most `maxRuns` runs each (a run encodes in at most 20
    /// bytes, so a part of 40,000 stays well under a log record's 1 MiB); none when empty.
    ///
    /// - Complexity: O(g log g) for g runs.
    public func parts(maxRuns: Int = 40_000) -> [OperationRuns] {
        precondition(maxRuns > 0)
        var parts: [OperationRuns] = [], part = OperationRuns(), n = 0
        for r in runs.keys.sorted() {
            for range in runs[r]! {
                if n == maxRuns { parts.append(part); part = OperationRuns(); n = 0 }
                part.runs[r, default: []].append(range)
                n += 1
            }
        }
        if n > 0 { parts.append(part) }
        return parts
    }

    /// `count (replica count (first last)×)×`, every number a varint, replicas in order.
    ///
    /// - Complexity: O(g log g) for g runs.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.count(runs.count)
        for r in runs.keys.sorted() {
            w.varint(r.rawValue)
            w.count(runs[r]!.count)
            for range in runs[r]! { w.varint(range.lowerBound); w.varint(range.upperBound) }
        }
        return w.bytes
    }

    /// Decodes ``encoded()``: every run ordered (counters from 1, first ≤ last), nothing left over.
    /// Runs that overlap or touch are merged (a build before runs were kept sorted wrote them in
    /// the order noted).
    ///
    /// - Throws: ``WireError`` for bytes that are not such runs.
    /// - Complexity: O(n) for n bytes of runs in order.
    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        var r = WireReader(bytes)
        for _ in 0..<(try r.count(minBytes: 2)) {
            let replica = ReplicaID(try r.varint())
            for _ in 0..<(try r.count(minBytes: 2)) {
                let at = r.offset
                let first = try r.varint(), last = try r.varint()
                guard first >= 1, first <= last else { throw .invalidValue("run \(first)...\(last) of \(replica)", offset: at) }
                insert(first...last, of: replica)
            }
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
    }

    public var description: String {
        runs.keys.sorted().map { r in
            runs[r]!.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)@\(r.rawValue)" : "\($0.lowerBound)-\($0.upperBound)@\(r.rawValue)" }
                .joined(separator: ",")
        }.joined(separator: " ")
    }
}
