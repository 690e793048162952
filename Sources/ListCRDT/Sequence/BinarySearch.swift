extension RandomAccessCollection where Index == Int {
    /// The index of the first element for which `isBefore` is false, in a collection where
    /// `isBefore` holds for a prefix and fails for the rest (`endIndex` when it holds for all).
    /// Every sorted lookup of the module (id runs, log records, version vectors) is this search with its own predicate.
    ///
    /// - Complexity: O(log n).
    /// (Shared with ListTable through `@_spi(Algorithms)`; not part of the public API.)
    @inlinable @inline(__always)
    @_spi(Algorithms) public func partitionPoint(_ isBefore: (Element) -> Bool) -> Int {
        var lo = startIndex, hi = endIndex
        while lo < hi {
            // 0 <= lo < hi <= endIndex: nothing here can overflow, so the arithmetic is unchecked.
            let mid = lo &+ (hi &- lo) >> 1
            if isBefore(self[mid]) { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }
}
