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
        let off = Int(c.offset)
        let count = e.count
        guard e.isVisible, off + n <= count else { return false }
        let headCount = off, tailCount = count - off - n
        // Split into [head][lv ..< lv + n][tail] (head or tail may be empty).
        let pieces = (headCount > 0 ? 1 : 0) + 1 + (tailCount > 0 ? 1 : 0)
        let (leaf, i) = makeRoom(leaf: c.leaf, at: Int(c.entry) + 1, needed: pieces - 1, leafOf: &leafOf)
        let at = i - 1
        let base = Int(leaf) * Self.leafCapacity
        let middle = Entry(lv: lv, count: n, visible: false)
        let tail = tailCount > 0 ? Entry(lv: lv + Int32(n), count: tailCount, visible: true) : nil
        if headCount > 0 {
            entries[base + at] = Entry(lv: e.lv, count: headCount, visible: true)
            insertEntries(leaf: leaf, at: at + 1, middle, tail)
        } else {
            entries[base + at] = middle
            if let tail { insertEntries(leaf: leaf, at: at + 1, tail) }
        }
        addCounts(leaf: leaf, all: 0, visible: -n)
        mergeAround(leaf: leaf, entry: at + (headCount > 0 ? 1 : 0))
        return true
    }
}
