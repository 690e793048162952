/// For each replica, the greatest operation counter seen from it.
///
/// Operations are applied in causal order, so a replica's operations arrive in counter order and
/// "counter ≤ vector[replica]" means "already seen".
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// The greatest counter seen per replica; replicas never seen are absent.
    public private(set) var counters: [ReplicaID: UInt64]

    /// An empty vector: nothing seen.
    public init() { counters = [:] }

    /// A vector with the given counters.
    public init(_ counters: [ReplicaID: UInt64]) { self.counters = counters.filter { $0.value > 0 } }

    /// The greatest counter seen from `replica`, 0 if none.
    public subscript(replica: ReplicaID) -> UInt64 {
        get { counters[replica] ?? 0 }
        set { if newValue > 0 { counters[replica] = newValue } else { counters[replica] = nil } }
    }

    /// Whether the operation with this id has been seen.
    @inlinable public func contains(_ id: OpID) -> Bool { id.counter <= self[id.replica] }

    /// Raises each counter to the other vector's where that is greater.
    ///
    /// - Complexity: O(r) for r replicas in `other`.
    public mutating func formUnion(_ other: VersionVector) {
        for (r, c) in other.counters where c > self[r] { counters[r] = c }
    }

    /// Whether everything `other` has seen, this has seen too.
    ///
    /// - Complexity: O(r) for r replicas in `other`.
    public func includes(_ other: VersionVector) -> Bool {
        other.counters.allSatisfy { self[$0.key] >= $0.value }
    }

    /// Raises the counter for `id.replica` to `id.counter` if that is greater.
    mutating func observe(_ id: OpID) {
        if id.counter > self[id.replica] { counters[id.replica] = id.counter }
    }

    public var description: String {
        "[" + counters.sorted { $0.key < $1.key }.map { "\($0.key.rawValue):\($0.value)" }.joined(separator: ", ") + "]"
    }
}
