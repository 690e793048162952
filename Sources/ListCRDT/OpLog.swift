/// Every applied operation, in the (causal) order it was applied, with an index by id.
struct OpLog: Sendable {
    private(set) var ops: [ListOperation] = []
    /// Per replica (by `replicaSlot`): first counters of its operations and their log positions,
    /// in counter order (a replica's operations are applied in counter order).
    private var starts: [[(counter: UInt64, index: Int32)]] = []
    private var replicaSlot = ReplicaTable()

    var count: Int { ops.count }

    /// Appends an applied operation.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(_ op: ListOperation) {
        let k = replicaSlot.insert(op.id.replica)
        if k == starts.count { starts.append([]) }
        starts[k].append((op.id.counter, Int32(ops.count)))
        ops.append(op)
    }

    /// The log position of the applied operation whose id range holds `id`, if any.
    ///
    /// - Complexity: O(log m) for m operations of that replica.
    func index(containing id: OpID) -> Int? {
        guard let k = replicaSlot.index(of: id.replica) else { return nil }
        var lo = 0, hi = starts[k].count
        while lo < hi {
            let mid = (lo + hi) / 2
            if starts[k][mid].counter <= id.counter { lo = mid + 1 } else { hi = mid }
        }
        if lo == 0 { return nil }
        let index = Int(starts[k][lo - 1].index)
        return ops.withUnsafeBufferPointer { id.counter <= $0[index].lastID.counter } ? index : nil
    }

    /// The id of the applied operation whose id range holds `id`, if any (no copy of the operation).
    ///
    /// - Complexity: O(log m) for m operations of that replica.
    func operationID(containing id: OpID) -> OpID? {
        guard let index = index(containing: id) else { return nil }
        return ops.withUnsafeBufferPointer { $0[index].id }
    }

    /// The applied operation whose id range holds `id`, if any.
    ///
    /// - Complexity: O(log m) for m operations of that replica.
    func operation(containing id: OpID) -> ListOperation? {
        index(containing: id).map { ops[$0] }
    }

    /// The operations not covered by `version`, in application order (a causal order).
    ///
    /// - Complexity: O(m) for m operations.
    func operations(notIn version: VersionVector) -> [ListOperation] {
        ops.filter { !version.contains($0.id) }
    }
}

/// Received operations waiting for causal dependencies, filed under the replica of the first
/// missing dependency so that they are looked at again only when that replica advances.
struct PendingBuffer: Sendable {
    private var waiting: [ReplicaID: [ListOperation]] = [:]
    private var byID: [OpID: ListOperation] = [:]

    var count: Int { byID.count }

    /// The buffered operation with this id, if any.
    func operation(_ id: OpID) -> ListOperation? { byID[id] }

    /// All buffered operations, sorted by id.
    var all: [ListOperation] { byID.values.sorted { $0.id < $1.id } }

    mutating func add(_ op: ListOperation, waitingFor replica: ReplicaID) {
        byID[op.id] = op
        waiting[replica, default: []].append(op)
    }

    /// Removes and returns the operations filed under `replica`.
    mutating func take(waitingFor replica: ReplicaID) -> [ListOperation] {
        guard let ops = waiting.removeValue(forKey: replica) else { return [] }
        for op in ops { byID[op.id] = nil }
        return ops
    }
}
