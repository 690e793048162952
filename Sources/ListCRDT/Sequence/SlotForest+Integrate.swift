extension SlotForest {
    /// Whether slot `a` comes before slot `b` (both in the same tree).
    ///
    /// - Complexity: O(1) when `b` directly follows `a` (the usual case for origins), else O(log n).
    func isBefore(_ a: LocalVersion, _ b: LocalVersion) -> Bool {
        let ca = locate(a)
        if let n = next(ca), lv(at: n) == b { return true }
        return position(of: ca).all < position(of: locate(b)).all
    }

    /// Fugue's origins for a new slot at visible position `index` of tree `t`, as the tree would be
    /// without the visible positions in `skipping` (the items a move takes away): the left origin
    /// is the visible slot just before the insertion point (``LocalVersion/none`` at the start), the
    /// right origin the slot right after the left origin in the tree, hidden or not (``LocalVersion/none``
    /// at the end). The two are
    /// adjacent, so a local insert goes right between them. `legacy` gives the origins of builds
    /// before Fugue's (left: the slot right before the insertion point, hidden or not; right: the
    /// visible slot at it), kept for tests that mix both kinds.
    ///
    /// - Complexity: O(log n + k log k) for k skipped positions.
    func insertionOrigins(_ t: Int32, at index: Int, skipping: [Int], legacy: Bool = false) -> (LocalVersion, LocalVersion) {
        // The visible position, among all, of the slot the new one follows (Fugue) or precedes (legacy).
        var target = legacy ? index : index - 1
        if target < 0 {
            let o = fugueOrigins(t, after: nil)
            return (o.left, o.right)
        }
        if skipping.count == 1 {
            if skipping[0] <= target { target += 1 }
        } else if !skipping.isEmpty {
            for p in skipping.sorted() where p <= target { target += 1 }
        }
        if legacy {
            let o = legacyOrigins(t, at: target < visibleCount(t) ? findVisible(t, target) : nil)
            return (o.left, o.right)
        }
        let o = fugueOrigins(t, after: findVisible(t, target))
        return (o.left, o.right)
    }

    /// The origins of a new slot at visible position `index` of tree `t` (as
    /// ``insertionOrigins(_:at:skipping:legacy:)`` with nothing skipped), through the finger, and
    /// the cursor of the left origin: a local insert goes right after it (nil: at the start), with
    /// no search, since nothing can sit between two adjacent slots.
    ///
    /// - Complexity: O(leafCapacity) when the finger hits, else O(log n).
    mutating func localInsertion(_ t: Int32, at index: Int, legacy: Bool = false) -> (left: LocalVersion, right: LocalVersion, after: Cursor?) {
        // The finger moves first: a mutating call inside the arguments of a call on `self` would
        // make the compiler copy `self` (and then every array written) around it.
        if legacy {
            let c = index < visibleCount(t) ? findVisibleNear(t, index) : nil
            return legacyOrigins(t, at: c)
        }
        let c = index > 0 ? findVisibleNear(t, index - 1) : nil
        return fugueOrigins(t, after: c)
    }

    /// Fugue's origins of a new slot of tree `t` right after the visible slot at `c` (at the start
    /// when nil): `c` itself and the slot after it, hidden or not; and the cursor of the left origin.
    @inline(__always)
    func fugueOrigins(_ t: Int32, after c: Cursor?) -> (left: LocalVersion, right: LocalVersion, after: Cursor?) {
        let n = c.map { next($0) } ?? first(t)
        return (c.map { lv(at: $0) } ?? .none, n.map { lv(at: $0) } ?? .none, c)
    }

    /// The origins builds before Fugue's chose for a new slot of tree `t` put right before the
    /// visible slot at `c` (at the end when nil): the slot before it, hidden or not, and `c`.
    func legacyOrigins(_ t: Int32, at c: Cursor?) -> (left: LocalVersion, right: LocalVersion, after: Cursor?) {
        let p = c.map { previous($0) } ?? last(t)
        return (p.map { lv(at: $0) } ?? .none, c.map { lv(at: $0) } ?? .none, p)
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
    func placement<Slots: SlotOrigins>(_ t: Int32, id: OpID, left: LocalVersion, right: LocalVersion, slots: Slots,
                   tieBreak: Bool = true) -> Cursor? {
        let leftCursor: Cursor? = left.exists ? locate(left) : nil
        var cursor: Cursor? = leftCursor.map { next($0) } ?? first(t)
        guard let firstScanned = cursor, lv(at: firstScanned) != right else { return leftCursor }

        let leftPos = leftCursor.map { position(of: $0).all } ?? -1
        let rightPos = right.exists ? position(of: locate(right)).all : count(t)
        var destination = leftCursor
        var previous = leftCursor
        var scanning = false
        var index = leftPos + 1
        while true {
            if !scanning { destination = previous }
            guard let c = cursor, index != rightPos else { break }
            let other = lv(at: c)
            let (otherLeft, otherRight) = slots.origins(of: other)
            let otherLeftPos = otherLeft.exists ? position(of: locate(otherLeft)).all : -1
            if otherLeftPos < leftPos { break }
            if otherLeftPos == leftPos {
                let otherRightPos = otherRight.exists ? position(of: locate(otherRight)).all : count(t)
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
