/// Hiding a run of slots in one step.
extension SlotForest {
    /// Hides the `n` slots `lv ..< lv + n` when they are all visible and in one entry (a run of
    /// backspaces or forward deletes over typed text), with at most two entry splits, one count
    /// update on the path to the root and one merge with the neighbours; returns false and changes
    /// nothing otherwise (the caller then hides them one at a time with
    /// ``setVisible(_:_:leafOf:)``).
    ///
    /// The slots end up hidden exactly as `n` calls of ``setVisible(_:_:leafOf:)`` would leave
    /// them (the entries may be cut differently, which nothing outside the forest sees).
    ///
    /// - Complexity: O(log N + leafCapacity), plus O(k) for the k slots of the entries moved when
    ///   a leaf splits.
    @discardableResult
    mutating func hideRange(_ lv: Int32, count n: Int, leafOf: inout [Int32]) -> Bool {
        precondition(n > 0, "an empty range")
        let c = locate(lv, leafOf: leafOf)
        let e = entry(c)
        guard e.isVisible, Int(c.offset) + n <= e.count else { return false }
        flip(at: c, count: n, leafOf: &leafOf)
        return true
    }
}
