/// For each replica, the greatest operation counter seen from it.
///
/// Operations are applied in causal order, so a replica's operations arrive in counter order and
/// "counter ≤ vector[replica]" means "already seen". Stored as a small array sorted by replica, so
/// equal vectors are equal values and hash alike.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    private var replicas: [ReplicaID] = []
    private var values: [UInt64] = []
    /// The index of the replica ``observe(_:)`` raised last: a hint, checked before use, and not
    /// part of the value (equality and hashing ignore it).
    private var recent = 0

    public static func == (a: VersionVector, b: VersionVector) -> Bool {
        a.replicas == b.replicas && a.values == b.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(replicas)
        hasher.combine(values)
    }

    /// An empty vector: nothing seen.
    public init() {}

    /// A vector with the given counters (zero counters are dropped).
    public init(_ counters: [ReplicaID: UInt64]) {
        for (r, c) in counters.sorted(by: { $0.key < $1.key }) where c > 0 {
            replicas.append(r)
            values.append(c)
        }
    }

    /// The greatest counter seen per replica; replicas never seen are absent.
    ///
    /// - Complexity: O(r) for r replicas.
    public var counters: [ReplicaID: UInt64] {
        Dictionary(uniqueKeysWithValues: zip(replicas, values))
    }

    /// The replicas seen, in increasing order, with their counters.
    public var entries: [(replica: ReplicaID, counter: UInt64)] { Array(zip(replicas, values)) }

    /// Number of replicas seen.
    public var count: Int { replicas.count }

    /// Index of `replica`, or where it would be inserted.
    private func position(of replica: ReplicaID) -> (index: Int, found: Bool) {
        let lo = replicas.partitionPoint { $0.rawValue < replica.rawValue }
        return (lo, lo < replicas.count && replicas[lo] == replica)
    }

    /// The greatest counter seen from `replica`, 0 if none.
    ///
    /// - Complexity: O(log r).
    public subscript(replica: ReplicaID) -> UInt64 {
        get {
            // The replica raised last is most often the one asked for (a run of one author's
            // operations): checked first.
            if recent < replicas.count, replicas[recent] == replica { return values[recent] }
            let (i, found) = position(of: replica)
            return found ? values[i] : 0
        }
        set {
            let (i, found) = position(of: replica)
            if found {
                if newValue > 0 { values[i] = newValue } else { replicas.remove(at: i); values.remove(at: i) }
            } else if newValue > 0 {
                replicas.insert(replica, at: i)
                values.insert(newValue, at: i)
            }
        }
    }

    /// Whether the operation with this id has been seen.
    ///
    /// - Complexity: O(log r).
    public func contains(_ id: OpID) -> Bool { id.counter <= self[id.replica] }

    /// Raises each counter to the other vector's where that is greater.
    ///
    /// - Complexity: O(r log r).
    public mutating func formUnion(_ other: VersionVector) {
        for (r, c) in zip(other.replicas, other.values) where c > self[r] { self[r] = c }
    }

    /// Whether everything `other` has seen, this has seen too.
    ///
    /// - Complexity: O(r log r).
    public func includes(_ other: VersionVector) -> Bool {
        zip(other.replicas, other.values).allSatisfy { self[$0.0] >= $0.1 }
    }

    /// Raises the counter for `id.replica` to `id.counter` if that is greater.
    ///
    /// - Complexity: O(log r); O(1) when `id.replica` is the replica observed last (a run of
    ///   operations by one author).
    @inline(__always)
    public mutating func observe(_ id: OpID) {
        let hint = recent
        if hint < replicas.count && replicas[hint] == id.replica {
            if id.counter > values[hint] { values[hint] = id.counter }
            return
        }
        observeSearching(id)
    }

    /// ``observe(_:)`` when `id.replica` is not the one observed last.
    private mutating func observeSearching(_ id: OpID) {
        let (i, found) = position(of: id.replica)
        if found {
            if id.counter > values[i] { values[i] = id.counter }
            recent = i
        } else if id.counter > 0 {
            replicas.insert(id.replica, at: i)
            values.insert(id.counter, at: i)
        }
    }

    public var description: String {
        "[" + zip(replicas, values).map { "\($0.0.rawValue):\($0.1)" }.joined(separator: ", ") + "]"
    }
}
