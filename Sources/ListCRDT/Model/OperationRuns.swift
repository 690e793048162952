import Foundation

/// Operations named by id, as runs of counters per replica: those a daemon's copy took from a
/// peer link rather than from their author (Docs/Semantics.md §7, "A lost stability file"),
/// which a merge back does not make again, since the daemon that took each from its author does.
/// The store keeps them in the log beside the batches (`ListStore`'s relayed records), so that a
/// restart, with its stability file or without, still knows.
public struct OperationRuns: Hashable, Sendable {
    /// Per replica, runs of counters in the order noted (merged when they touch).
    public private(set) var runs: [ReplicaID: [ClosedRange<UInt64>]] = [:]

    public init() {}

    /// The runs of `ops` (each operation's counters, first to last).
    ///
    /// - Complexity: O(k) for k operations.
    public init(_ ops: some Sequence<ListOperation>) {
        for op in ops { insert(op.id.replica, op.id.counter...op.lastID.counter) }
    }

    public var isEmpty: Bool { runs.isEmpty }

    /// How many counters the runs hold.
    ///
    /// - Complexity: O(g) for g runs.
    public var count: Int { runs.values.reduce(0) { $0 + $1.reduce(0) { $0 + Int($1.upperBound - $1.lowerBound + 1) } } }

    /// Whether `id` is in a run.
    ///
    /// - Complexity: O(g) for the g runs of `id`'s replica.
    public func contains(_ id: OpID) -> Bool { runs[id.replica]?.contains { $0.contains(id.counter) } ?? false }

    /// Notes `range` of `replica`, merged into the last run when it touches it.
    public mutating func insert(_ replica: ReplicaID, _ range: ClosedRange<UInt64>) {
        if let last = runs[replica]?.last, last.upperBound &+ 1 >= range.lowerBound, last.lowerBound <= range.lowerBound {
            runs[replica]![runs[replica]!.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
        } else {
            runs[replica, default: []].append(range)
        }
    }

    /// Every run of `other` added.
    ///
    /// - Complexity: O(g) for the g runs of `other`, each merged with the last of its replica.
    public mutating func formUnion(_ other: OperationRuns) {
        for (r, list) in other.runs { for range in list { insert(r, range) } }
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
    ///
    /// - Throws: ``WireError`` for bytes that are not such runs.
    /// - Complexity: O(n) for n bytes.
    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        var r = WireReader(bytes)
        for _ in 0..<(try r.count(minBytes: 2)) {
            let replica = ReplicaID(try r.varint())
            for _ in 0..<(try r.count(minBytes: 2)) {
                let at = r.offset
                let first = try r.varint(), last = try r.varint()
                guard first >= 1, first <= last else { throw .invalidValue("run \(first)...\(last) of \(replica)", offset: at) }
                insert(replica, first...last)
            }
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
    }
}
