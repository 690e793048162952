import Foundation

/// The operations a compaction floor admits (Docs/Semantics.md §7, "Compacting under a chain of
/// concurrent edits"): held outside the floor when it was made, not causally after it, each with
/// the heads of the floor in its past. An operation received later is after the floor when every
/// head of the floor is in its past: a dependency on the head itself, on an operation after the
/// floor, or on an admitted operation whose past holds that head (``ListDocument/isBeforeFloor(_:)``).
struct AdmittedOperations: Hashable, Sendable {
    /// One admitted operation: its ids, and the indices (in the floor's heads, increasing) of the
    /// heads in its past.
    struct Entry: Hashable, Sendable {
        var first: UInt64
        var last: UInt64
        var seen: [Int32]
    }

    /// Per replica, its admitted operations in increasing, disjoint counter order.
    private(set) var entries: [ReplicaID: [Entry]] = [:]

    init() {}

    var isEmpty: Bool { entries.isEmpty }

    /// Adds an operation after every one of its replica already here.
    mutating func append(_ replica: ReplicaID, _ entry: Entry) {
        precondition(entries[replica]?.last.map { $0.last < entry.first } ?? true, "admitted operations in counter order")
        entries[replica, default: []].append(entry)
    }

    /// The admitted operation whose ids hold `id`.
    ///
    /// - Complexity: O(log a) for the a admitted operations of its replica.
    func entry(containing id: OpID) -> Entry? {
        guard let list = entries[id.replica] else { return nil }
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].last < id.counter { lo = mid + 1 } else { hi = mid }
        }
        return lo < list.count && list[lo].first <= id.counter ? list[lo] : nil
    }

    func contains(_ id: OpID) -> Bool { entry(containing: id) != nil }

    /// Their ids, as runs.
    var runs: OperationRuns {
        var out = OperationRuns()
        for (r, list) in entries { for e in list { out.insert(e.first...e.last, of: r) } }
        return out
    }

    /// `replicas:count`, then per replica in increasing id order: its id (`varint`), a `count` of
    /// operations, and per operation its first and last counter and a `count` of seen heads,
    /// each an index into the floor's heads (`varint`s).
    ///
    /// - Complexity: O(a + s) for a operations and s seen heads.
    func encoded() -> [UInt8] {
        var w = WireWriter()
        w.count(entries.count)
        for r in entries.keys.sorted() {
            w.varint(r.rawValue)
            w.count(entries[r]!.count)
            for e in entries[r]! {
                w.varint(e.first)
                w.varint(e.last)
                w.count(e.seen.count)
                for k in e.seen { w.varint(UInt64(k)) }
            }
        }
        return w.bytes
    }

    /// Decodes ``encoded()`` for a floor at `version` with `heads` heads: at least one operation,
    /// replicas increasing, operations after the floor's counter of their replica, increasing
    /// and disjoint, seen heads increasing and fewer than `heads`, nothing left over.
    ///
    /// - Throws: ``WireError`` for anything else.
    /// - Complexity: O(n) for n bytes.
    init(decoding bytes: some Collection<UInt8>, version: VersionVector, heads: Int) throws(WireError) {
        var r = WireReader(bytes)
        let replicas = try r.count(minBytes: 3)
        guard replicas > 0 else { throw .invalidValue("a floor that admits no operation", offset: 0) }
        var previous: ReplicaID?
        for _ in 0..<replicas {
            let at = r.offset
            let replica = ReplicaID(try r.varint())
            guard previous.map({ $0 < replica }) ?? true else { throw .invalidValue("admitted operations' replicas not in increasing order", offset: at) }
            previous = replica
            let n = try r.count(minBytes: 3)
            guard n > 0 else { throw .invalidValue("a replica with no admitted operation", offset: at) }
            var last = version[replica]
            for _ in 0..<n {
                let at = r.offset
                let first = try r.varint(), end = try r.varint()
                guard first > last, first <= end else { throw .invalidValue("admitted operation \(first)...\(end) of \(replica) within the floor or out of order", offset: at) }
                var seen: [Int32] = []
                for _ in 0..<(try r.count(minBytes: 1)) {
                    let k = try r.varint()
                    guard k < UInt64(heads), seen.last.map({ Int32(k) > $0 }) ?? true else {
                        throw .invalidValue("seen head \(k) of \(heads), or not increasing", offset: r.offset)
                    }
                    seen.append(Int32(k))
                }
                append(replica, Entry(first: first, last: end, seen: seen))
                last = end
            }
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
    }
}

extension ListDocument {
    /// The operations of `after` (those outside `stable`, in causal order) that a floor at
    /// `stable` with these heads must admit, each with the heads in its past: those not causally
    /// after `stable` (``concurrentOperations(outside:)``), found from their dependencies alone:
    /// a head itself, an operation after the floor (all heads), or one admitted (its heads).
    ///
    /// - Complexity: O(k × d × (h + log a)) for k operations of d dependencies, h heads and a
    ///   admitted operations per replica.
    static func admittedAt(heads: [OpID], stable: VersionVector, after: [ListOperation]) -> (ops: [ListOperation], admitted: AdmittedOperations) {
        var admitted = AdmittedOperations()
        var ops: [ListOperation] = []
        for op in after {
            switch Self.headsSeen(by: op.deps, heads: heads, floor: stable, admitted: admitted) {
            case nil:
                break
            case let seen?:
                admitted.append(op.id.replica, .init(first: op.id.counter, last: op.lastID.counter, seen: seen))
                ops.append(op)
            }
        }
        return (ops, admitted)
    }

    /// The heads of a floor in the past of an operation with dependencies `deps`, increasing, or
    /// nil when that is all of them (the operation is after the floor): a dependency on a head,
    /// or on an admitted operation (its heads); a dependency outside the floor that the floor did
    /// not admit is an operation after it (all of them: an operation applied since, or one not
    /// here, for the causal check to judge).
    ///
    /// - Complexity: O(d × (h + log a)) for d dependencies, h heads and a admitted operations.
    static func headsSeen(by deps: Frontier, heads: [OpID], floor: VersionVector, admitted: AdmittedOperations) -> [Int32]? {
        var seen = Array(repeating: false, count: heads.count)
        for d in deps {
            if floor.contains(d) {
                if let k = heads.firstIndex(of: d) { seen[k] = true }
            } else if let e = admitted.entry(containing: d) {
                for k in e.seen { seen[Int(k)] = true }
            } else {
                return nil
            }
        }
        if !seen.contains(false) { return nil }
        return seen.indices.filter { seen[$0] }.map(Int32.init)
    }
}
