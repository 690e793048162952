/// Showing and hiding slots, and the entry editing it needs: splitting an entry where visibility
/// changes, merging neighbours that continue each other, and keeping the counts on the path.
extension SlotForest {
    /// Shows or hides slot `lv`. Returns whether anything changed.
    ///
    /// - Complexity: O(log n) amortized.
    @discardableResult
    mutating func setVisible(_ lv: LocalVersion, _ visible: Bool) -> Bool {
        let c = locate(lv)
        if entry(c).isVisible == visible { return false }
        flip(at: c, count: 1)
        return true
    }

    /// Flips the visibility of the `n` slots from `c` on, which lie in `c`'s entry: splits the
    /// entry into [head][the n slots][tail] (head or tail may be empty), updates the counts on the
    /// path to the root once, and merges the flipped piece with its neighbours.
    ///
    /// - Complexity: O(log N + leafCapacity × maxEntryLength): a leaf split rewrites `leafOf` for
    ///   the slots of the entries it moves, at most `leafCapacity / 2 × maxEntryLength`.
    mutating func flip(at c: Cursor, count n: Int) {
        let e = entry(c)
        let visible = !e.isVisible
        let count = e.count, off = Int(c.offset)
        precondition(off + n <= count, "the range leaves its entry")
        let lv = e.lv.advanced(by: c.offset)
        if n < count, shiftToNeighbour(c, e, count: n, visible: visible) {
            addCounts(leaf: c.leaf, all: 0, visible: visible ? n : -n)
            return
        }
        var at = c
        if n == count {
            entries[c.leaf.entryBase + Int(c.entry)].len = -e.len
        } else {
            let tailCount = count - off - n
            let pieces = (off > 0 ? 1 : 0) + 1 + (tailCount > 0 ? 1 : 0)
            let (leaf, i) = makeRoom(leaf: c.leaf, at: Int(c.entry) + 1, needed: pieces - 1)
            let first = i - 1
            let middle = Entry(lv: lv, count: n, visible: visible)
            let tail = tailCount > 0 ? Entry(lv: lv.advanced(by: n), count: tailCount, visible: e.isVisible) : nil
            if off > 0 {
                entries[leaf.entryBase + first] = Entry(lv: e.lv, count: off, visible: e.isVisible)
                insertEntries(leaf: leaf, at: first + 1, middle, tail)
            } else {
                entries[leaf.entryBase + first] = middle
                if let tail { insertEntries(leaf: leaf, at: first + 1, tail) }
            }
            at = Cursor(leaf: leaf, entry: Int32(first + (off > 0 ? 1 : 0)), offset: 0)
        }
        addCounts(leaf: at.leaf, all: 0, visible: visible ? n : -n)
        mergeAround(leaf: at.leaf, entry: Int(at.entry))
    }

    /// The flip of ``flip(at:count:)`` without a split when the `n` slots end (or start)
    /// `c`'s entry `e` and the next (or previous) entry of the leaf already has the new visibility
    /// and continues them: the slots move over to that entry, so nothing shifts in the leaf (the
    /// usual backspace or forward delete next to text deleted just before). Counts are the
    /// caller's. Returns false, changing nothing, otherwise.
    @inline(__always)
    mutating func shiftToNeighbour(_ c: Cursor, _ e: Entry, count n: Int, visible: Bool) -> Bool {
        let base = c.leaf.entryBase
        let i = Int(c.entry)
        if Int(c.offset) + n == e.count, i + 1 < Int(leaves[c.leaf.int].size) {
            let next = entries[base + i + 1]
            guard next.isVisible == visible, next.lv == e.lv.advanced(by: e.count),
                  next.count + n <= Self.maxEntryLength else { return false }
            entries[base + i] = Entry(lv: e.lv, count: e.count - n, visible: e.isVisible)
            entries[base + i + 1] = Entry(lv: next.lv.advanced(by: -n), count: next.count + n, visible: visible)
            return true
        }
        if c.offset == 0, i > 0 {
            let previous = entries[base + i - 1]
            guard previous.isVisible == visible, previous.lv.advanced(by: previous.count) == e.lv,
                  previous.count + n <= Self.maxEntryLength else { return false }
            entries[base + i - 1] = Entry(lv: previous.lv, count: previous.count + n, visible: visible)
            entries[base + i] = Entry(lv: e.lv.advanced(by: n), count: e.count - n, visible: e.isVisible)
            return true
        }
        return false
    }

    /// Merges entry `i` with its neighbours in the same leaf when they continue each other and
    /// the merged entry is not too long (``maxEntryLength``).
    mutating func mergeAround(leaf: LeafIndex, entry i: Int) {
        let base = leaf.entryBase
        var i = i
        if i > 0 {
            let a = entries[base + i - 1], b = entries[base + i]
            if Self.continues(a, b) {
                entries[base + i - 1].len += b.len
                removeEntry(leaf: leaf, at: i)
                i -= 1
            }
        }
        if i + 1 < Int(leaves[leaf.int].size) {
            let a = entries[base + i], b = entries[base + i + 1]
            if Self.continues(a, b) {
                entries[base + i].len += b.len
                removeEntry(leaf: leaf, at: i + 1)
            }
        }
    }

    /// Whether entry `b` continues entry `a` (same visibility, next local versions) and both fit
    /// in one entry.
    @inline(__always)
    static func continues(_ a: Entry, _ b: Entry) -> Bool {
        a.isVisible == b.isVisible && a.lv.advanced(by: a.count) == b.lv && a.count + b.count <= maxEntryLength
    }

    mutating func removeEntry(leaf: LeafIndex, at i: Int) {
        let base = leaf.entryBase
        let n = Int(leaves[leaf.int].size)
        if i + 1 < n {
            entries.withUnsafeMutableBufferPointer { buf in
                let p = buf.baseAddress! + base
                (p + i).update(from: p + i + 1, count: n - i - 1)
            }
        }
        leaves[leaf.int].size -= 1
    }

    /// Inserts one or two entries at index `i` of `leaf`, which has room for them.
    mutating func insertEntries(leaf: LeafIndex, at i: Int, _ first: Entry, _ second: Entry? = nil) {
        let base = leaf.entryBase
        let n = Int(leaves[leaf.int].size)
        let k = second == nil ? 1 : 2
        entries.withUnsafeMutableBufferPointer { buf in
            let p = buf.baseAddress! + base
            if i < n { (p + i + k).update(from: p + i, count: n - i) }
            p[i] = first
            if let second { p[i + 1] = second }
        }
        leaves[leaf.int].size += Int32(k)
    }

    /// Adds slot counts to the tree of `leaf` and to every node on the path from `leaf` to the
    /// root. A change of visible count outside the finger's leaf drops the finger.
    @inline(__always)
    mutating func addCounts(leaf: LeafIndex, all: Int, visible: Int) {
        let info = leaves[leaf.int]
        let t = Int(info.tree)
        // One access to the tree header (one uniqueness check of `trees`).
        trees.withUnsafeMutableBufferPointer { trees in
            trees[t].count += all
            trees[t].visibleCount += visible
        }
        if visible != 0 && fingers[t].leaf != leaf { fingers[t].leaf = .none }
        var index = Int(info.indexInParent)
        var parent = info.parent
        if !parent.exists { return }
        nodes.withUnsafeBufferPointer { nodes in
            links.withUnsafeMutableBufferPointer { links in
                while parent.exists {
                    let k = parent.linkBase + index
                    links[k].all &+= Int32(truncatingIfNeeded: all)
                    links[k].visible &+= Int32(truncatingIfNeeded: visible)
                    index = Int(nodes[parent.int].indexInParent)
                    parent = nodes[parent.int].parent
                }
            }
        }
    }
}
