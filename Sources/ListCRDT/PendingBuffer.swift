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
