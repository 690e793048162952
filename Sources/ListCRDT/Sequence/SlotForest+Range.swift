/// Hiding a run of slots in few steps.
extension SlotForest {
    /// Hides the slots `lv ..< lv + n` (a run of backspaces or forward deletes over typed text):
    /// each piece of the range that lies in one visible entry is hidden in one step, with at most
    /// two entry splits, one count update on the path to the root and one merge with the
    /// neighbours; hidden slots stay hidden.
    ///
    /// The slots end up hidden exactly as `n` calls of ``setVisible(_:_:)`` would leave
    /// them (the entries may be cut differently, which nothing outside the forest sees).
    ///
    /// - Complexity: O(p × (log N + leafCapacity × maxEntryLength)) for a range in p entries (a
    ///   leaf split rewrites `leafOf` for at most `leafCapacity / 2 × maxEntryLength` slots).
    mutating func hideRange(_ lv: LocalVersion, count n: Int) {
        precondition(n > 0, "an empty range")
        var lv = lv, left = n
        while left > 0 {
            let c = locate(lv)
            let e = entry(c)
            let k = min(left, e.count - Int(c.offset))
            if e.isVisible { flip(at: c, count: k) }
            lv = lv.advanced(by: k)
            left -= k
        }
    }
}
