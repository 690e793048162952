/// Inserting slots into a tree, and the `leafOf` bookkeeping of where slots land.
extension SlotForest {
    /// Inserts the new slots `lv ..< lv + n` into tree `t`, in that order, right after the slot at
    /// `after` (at the start when nil).
    ///
    /// `lv` must be greater than every slot already in any tree (local versions are given in order),
    /// so the slots extend the entry they follow when that entry ends at `lv - 1` with the same
    /// visibility.
    ///
    /// - Complexity: O(log N + n + leafCapacity × maxEntryLength) for n ≤ ``maxEntryLength``
    ///   (a leaf split rewrites `leafOf` for the slots of the entries it moves, at most
    ///   `leafCapacity / 2 × maxEntryLength`); a longer run takes one insert per
    ///   `maxEntryLength` slots.
    mutating func insert(_ t: Int32, _ lv: LocalVersion, count n: Int = 1, visible: Bool, after: Cursor?) {
        if n > Self.maxEntryLength {
            insertLong(t, lv, count: n, visible: visible, after: after)
            return
        }
        let delta = visible ? n : 0
        let new = Entry(lv: lv, count: n, visible: visible)
        guard let at = after else {
            let (leaf, i) = makeRoom(leaf: trees[Int(t)].firstLeaf, at: 0, needed: 1)
            insertEntries(leaf: leaf, at: i, new)
            setLeaf(leaf, of: lv, count: n)
            addCounts(leaf: leaf, all: n, visible: delta)
            return
        }
        let idx = at.leaf.entryBase + Int(at.entry)
        let e = entries[idx]
        if Int(at.offset) == e.count - 1 {
            // After the last slot of an entry: extend it if possible, else a new entry follows it.
            if Self.continues(e, new) {
                entries[idx].len += new.len
                setLeaf(at.leaf, of: lv, count: n)
                addCounts(leaf: at.leaf, all: n, visible: delta)
                return
            }
            let (leaf, i) = makeRoom(leaf: at.leaf, at: Int(at.entry) + 1, needed: 1)
            insertEntries(leaf: leaf, at: i, new)
            setLeaf(leaf, of: lv, count: n)
            addCounts(leaf: leaf, all: n, visible: delta)
            return
        }
        // In the middle of an entry: split it around the new slots.
        let head = Int(at.offset) + 1
        let (leaf, i) = makeRoom(leaf: at.leaf, at: Int(at.entry) + 1, needed: 2)
        let split = leaf.entryBase + i - 1
        let old = entries[split]
        entries[split] = Entry(lv: old.lv, count: head, visible: old.isVisible)
        let tail = Entry(lv: old.lv.advanced(by: head), count: old.count - head, visible: old.isVisible)
        insertEntries(leaf: leaf, at: i, new, tail)
        setLeaf(leaf, of: lv, count: n)
        addCounts(leaf: leaf, all: n, visible: delta)
    }

    /// Appends the new visible slot `lv` right after the visible slot at `c`, which ends its entry
    /// and is `lv - 1` (the next character of a typed run): the entry grows by one. Returns the
    /// new slot's cursor, or nil, changing nothing, when the entry is full
    /// (``maxEntryLength``).
    ///
    /// - Complexity: O(log n) (the counts on the path to the root).
    mutating func extend(_ c: Cursor, with lv: LocalVersion) -> Cursor? {
        let idx = c.leaf.entryBase + Int(c.entry)
        let e = entries[idx]
        precondition(e.isVisible && Int(c.offset) == e.count - 1 && e.lv.advanced(by: c.offset + 1) == lv,
                     "slot \(lv) does not continue the entry at the cursor")
        if e.count == Self.maxEntryLength { return nil }
        entries[idx].len += 1
        leafOf.append(c.leaf)
        addCounts(leaf: c.leaf, all: 1, visible: 1)
        return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset + 1)
    }

    /// Records that slots `lv ..< lv + n` are in `leaf`: new slots not announced with
    /// ``addSlots(_:)`` (`lv` is the next local version) are appended.
    @inline(__always)
    mutating func setLeaf(_ leaf: LeafIndex, of lv: LocalVersion, count n: Int) {
        if lv.int == leafOf.count {
            if n == 1 { leafOf.append(leaf) } else { leafOf.append(leaf, count: n) }
            return
        }
        if n == 1 { leafOf.set(leaf, at: lv.int); return }
        precondition(lv.exists, "slots out of range")
        leafOf.set(leaf, from: lv.int, count: n)
    }

    /// ``insert(_:_:count:visible:after:)`` for a run longer than ``maxEntryLength``: one
    /// entry per piece of at most that many slots, each right after the one before.
    ///
    /// - Complexity: O((n / maxEntryLength) × log N + n).
    mutating func insertLong(_ t: Int32, _ lv: LocalVersion, count n: Int, visible: Bool, after: Cursor?) {
        var done = 0
        var at = after
        while done < n {
            let k = min(Self.maxEntryLength, n - done)
            let first = lv.advanced(by: done)
            insert(t, first, count: k, visible: visible, after: at)
            done += k
            at = locate(first.advanced(by: k - 1))
        }
    }
}
