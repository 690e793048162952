extension SlotForest {
    /// Whether slot `a` comes before slot `b` (both in the same tree).
    ///
    /// - Complexity: O(1) when `b` directly follows `a` (the usual case for origins), else O(log n).
    func isBefore(_ a: Int32, _ b: Int32, leafOf: [Int32]) -> Bool {
        let ca = locate(a, leafOf: leafOf)
        if let n = next(ca), lv(at: n) == b { return true }
        return position(of: ca).all < position(of: locate(b, leafOf: leafOf)).all
    }

    /// The origins of a new slot at visible position `index` as it would be without the visible
    /// positions in `skipping`: left is the slot right before the insertion point (hidden or not),
    /// right the visible slot at it (-1 at the end, and -1 for left at the start).
    ///
    /// - Complexity: O(log n + k log k) for k skipped positions.
    func insertionOrigins(_ t: Int32, at index: Int, skipping: [Int]) -> (Int32, Int32) {
        var target = index
        if skipping.count == 1 {
            if skipping[0] <= target { target += 1 }
        } else if !skipping.isEmpty {
            for p in skipping.sorted() where p <= target { target += 1 }
        }
        let o = origins(t, at: target < visibleCount(t) ? findVisible(t, target) : nil)
        return (o.left, o.right)
    }

    /// The origins of a new slot at visible position `index` of tree `t` (as
    /// ``insertionOrigins(_:at:skipping:)`` with nothing skipped), through the finger, and the
    /// cursor of the left origin: a local insert goes right after it (nil: at the start), with no
    /// search, since nothing can sit between two adjacent slots.
    ///
    /// - Complexity: O(leafCapacity) when the finger hits, else O(log n).
    mutating func localInsertion(_ t: Int32, at index: Int) -> (left: Int32, right: Int32, after: Cursor?) {
        // The finger moves first: a mutating call inside the arguments of a call on `self` would
        // make the compiler copy `self` (and then every array written) around it.
        let c = index < visibleCount(t) ? findVisibleNear(t, index) : nil
        return origins(t, at: c)
    }

    /// The origins of a new slot of tree `t` put right before the visible slot at `c` (at the end
    /// when nil), and the cursor of the left origin.
    @inline(__always)
    private func origins(_ t: Int32, at c: Cursor?) -> (left: Int32, right: Int32, after: Cursor?) {
        let p = c.map { previous($0) } ?? last(t)
        return (p.map { lv(at: $0) } ?? -1, c.map { lv(at: $0) } ?? -1, p)
    }

    /// Where a new slot with these origins goes: the slot it follows (nil for the start).
    ///
    /// This is the FugueMax / "YjsMod" integration rule. Between the left origin and the right
    /// origin there may be slots other replicas inserted concurrently. Scanning them left to right:
    /// a slot whose left origin is left of ours ends the scan (we go before it); one whose left
    /// origin is right of ours is inside a subtree we skip; one with the same left origin is a
    /// sibling, ordered by right origin (the one whose right origin is further right goes first),
    /// and when both origins are equal, by id (smaller id first). Runs inserted left to right stay
    /// contiguous: concurrent runs never interleave.
    ///
    /// - Complexity: O(log n) when nothing concurrent sits between the origins (always, for a local
    ///   edit); O(k log n) for k slots scanned otherwise.
    func placement(_ t: Int32, id: OpID, left: Int32, right: Int32, slots: SlotStore, leafOf: [Int32],
                   tieBreak: Bool = true) -> Cursor? {
        let leftCursor: Cursor? = left >= 0 ? locate(left, leafOf: leafOf) : nil
        var cursor: Cursor? = leftCursor.map { next($0) } ?? first(t)
        guard let firstScanned = cursor, lv(at: firstScanned) != right else { return leftCursor }

        let leftPos = leftCursor.map { position(of: $0).all } ?? -1
        let rightPos = right >= 0 ? position(of: locate(right, leafOf: leafOf)).all : count(t)
        var destination = leftCursor
        var previous = leftCursor
        var scanning = false
        var index = leftPos + 1
        while true {
            if !scanning { destination = previous }
            guard let c = cursor, index != rightPos else { break }
            let other = lv(at: c)
            let (otherLeft, otherRight) = slots.origins(of: other)
            let otherLeftPos = otherLeft >= 0 ? position(of: locate(otherLeft, leafOf: leafOf)).all : -1
            if otherLeftPos < leftPos { break }
            if otherLeftPos == leftPos {
                let otherRightPos = otherRight >= 0 ? position(of: locate(otherRight, leafOf: leafOf)).all : count(t)
                if otherRightPos < rightPos {
                    scanning = true
                } else if otherRightPos == rightPos {
                    if !tieBreak || id < slots.id(of: other) { break }
                    scanning = false
                } else {
                    scanning = false
                }
            }
            previous = c
            cursor = next(c)
            index += 1
        }
        return destination
    }
}
