/// A map from replica to a small dense index (0, 1, 2, … in order of first sight), by open
/// addressing with a multiplicative hash: the per-operation lookups of the id indexes stay a few
/// nanoseconds instead of a `Dictionary`'s SipHash.
struct ReplicaTable: Sendable {
    private var keys: [UInt64] = Array(repeating: 0, count: 8)
    private var values: [Int32] = Array(repeating: -1, count: 8)
    private(set) var count = 0

    @inline(__always) private func home(_ key: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    /// The index of `replica`, or nil if never seen.
    ///
    /// - Complexity: O(1) expected.
    func index(of replica: ReplicaID) -> Int? {
        let mask = keys.count - 1
        var i = home(replica.rawValue, mask: mask)
        while values[i] >= 0 {
            if keys[i] == replica.rawValue { return Int(values[i]) }
            i = (i + 1) & mask
        }
        return nil
    }

    /// The index of `replica`, adding it (with the next index) if new.
    ///
    /// - Complexity: O(1) amortized.
    mutating func insert(_ replica: ReplicaID) -> Int {
        if let known = index(of: replica) { return known }
        if (count + 1) * 2 > keys.count { grow() }
        let mask = keys.count - 1
        var i = home(replica.rawValue, mask: mask)
        while values[i] >= 0 { i = (i + 1) & mask }
        keys[i] = replica.rawValue
        values[i] = Int32(count)
        count += 1
        return count - 1
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        values = Array(repeating: -1, count: oldKeys.count * 2)
        let mask = keys.count - 1
        for (k, v) in zip(oldKeys, oldValues) where v >= 0 {
            var i = home(k, mask: mask)
            while values[i] >= 0 { i = (i + 1) & mask }
            keys[i] = k
            values[i] = v
        }
    }
}
