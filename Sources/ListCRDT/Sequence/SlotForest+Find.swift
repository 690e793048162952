/// Finding slots: index → cursor (descending by counts, or the finger), lv → cursor, cursor → index,
/// and walking a tree.
extension SlotForest {
    /// The cursor of the visible slot at `index` (`0 ..< visibleCount(t)`) of tree `t`.
    ///
    /// - Complexity: O(log n).
    @inline(__always)
    func findVisible(_ t: Int32, _ index: Int) -> Cursor { descend(t, index).cursor }

    /// ``findVisible(_:_:)`` through the finger: when `index` falls in the leaf found last time,
    /// only that leaf is scanned; otherwise the tree is descended and the finger moves there.
    ///
    /// - Complexity: O(leafCapacity) on a finger hit, else O(log n).
    mutating func findVisibleNear(_ t: Int32, _ index: Int) -> Cursor {
        let finger = fingers[Int(t)]
        if finger.leaf.exists && index >= finger.start {
            if let c = scanLeaf(finger.leaf, index - finger.start) { return c }
        }
        let (c, start) = descend(t, index)
        fingers[Int(t)] = Finger(leaf: c.leaf, start: start)
        return c
    }

    /// The visible slot `rest` of `leaf`, or nil if the leaf has fewer visible slots.
    @inline(__always)
    func scanLeaf(_ leaf: LeafIndex, _ rest: Int) -> Cursor? {
        let n = Int(leaves[leaf.int].size)
        return entries.withUnsafeBufferPointer { buf -> Cursor? in
            var rest = rest
            let base = leaf.entryBase
            for i in 0..<n {
                let v = buf[base + i].visibleCount
                if rest < v { return Cursor(leaf: leaf, entry: Int32(i), offset: Int32(rest)) }
                rest -= v
            }
            return nil
        }
    }

    /// Descends tree `t` to the visible slot at `index`; also returns the visible index of the
    /// first slot of the leaf it is in.
    @inline(__always)
    func descend(_ t: Int32, _ index: Int) -> (cursor: Cursor, leafStart: Int) {
        let tree = trees[Int(t)]
        precondition(index >= 0 && index < tree.visibleCount, "visible index out of range")
        var rest = index
        // A leaf's number or a node's (`rootIsLeaf`, then `childIsLeaf`), as in a link.
        var child = tree.root
        if !tree.rootIsLeaf {
            links.withUnsafeBufferPointer { links in
                nodes.withUnsafeBufferPointer { nodes in
                    var isLeaf = false
                    while !isLeaf {
                        let node = NodeIndex(child)
                        let base = node.linkBase
                        let n = Int(nodes[node.int].size)
                        var k = 0
                        while k < n - 1 {
                            let v = Int(links[base + k].visible)
                            if rest < v { break }
                            rest -= v
                            k += 1
                        }
                        isLeaf = nodes[node.int].childIsLeaf
                        child = links[base + k].child
                    }
                }
            }
        }
        guard let c = scanLeaf(LeafIndex(child), rest) else { preconditionFailure("tree counts are inconsistent") }
        return (c, index - rest)
    }

    /// The tree holding the slot at `c`.
    @inline(__always) func tree(of c: Cursor) -> Int32 { leaves[c.leaf.int].tree }

    /// The cursor of slot `lv`, which must be in a tree.
    ///
    /// - Complexity: O(leafCapacity).
    func locate(_ lv: LocalVersion) -> Cursor {
        let leaf = leafOf[lv.int]
        let n = Int(leaves[leaf.int].size)
        let found = entries.withUnsafeBufferPointer { buf -> Cursor? in
            let base = leaf.entryBase
            for i in 0..<n {
                let e = buf[base + i]
                // One unsigned comparison: lv - e.lv in 0 ..< count.
                let offset = UInt32(bitPattern: lv.distance(from: e.lv))
                if offset < UInt32(e.count) { return Cursor(leaf: leaf, entry: Int32(i), offset: Int32(offset)) }
            }
            return nil
        }
        guard let found else { preconditionFailure("slot \(lv) is not in its leaf") }
        return found
    }

    /// Whether each of slots `lv ..< lv + count` comes before slot `b` (all in one tree), one
    /// lookup per piece of them that lies in one entry (a typed run's slots are one until
    /// something is typed inside it): the last of a piece comes after the others.
    ///
    /// - Complexity: O(p log n) for p pieces.
    func allBefore(_ lv: LocalVersion, count: Int, _ b: LocalVersion) -> Bool {
        guard count > 0 else { return true }
        let limit = position(of: locate(b)).all
        var x = lv
        var left = count
        while left > 0 {
            let c = locate(x)
            let inEntry = Swift.min(entries[c.leaf.entryBase + Int(c.entry)].count - Int(c.offset), left)
            let last = Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset + Int32(inEntry - 1))
            guard position(of: last).all < limit else { return false }
            x = x.advanced(by: inEntry)
            left -= inEntry
        }
        return true
    }

    /// The position of the slot at `c` in its tree, among all slots and among visible slots (for
    /// a hidden slot, the number of visible slots before it).
    ///
    /// - Complexity: O(log n).
    func position(of c: Cursor) -> (all: Int, visible: Int) {
        let base = c.leaf.entryBase
        var all = Int(c.offset)
        let e = entries[base + Int(c.entry)]
        var vis = e.isVisible ? Int(c.offset) : 0
        for i in 0..<Int(c.entry) {
            let x = entries[base + i]
            all += x.count
            vis += x.visibleCount
        }
        var index = Int(leaves[c.leaf.int].indexInParent)
        var parent = leaves[c.leaf.int].parent
        while parent.exists {
            let pb = parent.linkBase
            for k in 0..<index {
                all += Int(links[pb + k].all)
                vis += Int(links[pb + k].visible)
            }
            index = Int(nodes[parent.int].indexInParent)
            parent = nodes[parent.int].parent
        }
        return (all, vis)
    }

    /// The slot after `c` in its tree, or nil at the end.
    ///
    /// - Complexity: O(1).
    func next(_ c: Cursor) -> Cursor? {
        if Int(c.offset) + 1 < entry(c).count { return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset + 1) }
        if c.entry + 1 < leaves[c.leaf.int].size { return Cursor(leaf: c.leaf, entry: c.entry + 1, offset: 0) }
        let nextLeaf = leaves[c.leaf.int].next
        return !nextLeaf.exists ? nil : Cursor(leaf: nextLeaf, entry: 0, offset: 0)
    }

    /// The slot before `c` in its tree, or nil at the start.
    ///
    /// - Complexity: O(1).
    func previous(_ c: Cursor) -> Cursor? {
        if c.offset > 0 { return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset - 1) }
        if c.entry > 0 {
            let e = entries[c.leaf.entryBase + Int(c.entry) - 1]
            return Cursor(leaf: c.leaf, entry: c.entry - 1, offset: Int32(e.count - 1))
        }
        let prevLeaf = leaves[c.leaf.int].prev
        if !prevLeaf.exists { return nil }
        let n = leaves[prevLeaf.int].size
        let e = entries[prevLeaf.entryBase + Int(n) - 1]
        return Cursor(leaf: prevLeaf, entry: n - 1, offset: Int32(e.count - 1))
    }

    /// The first slot of tree `t`, or nil when it is empty.
    func first(_ t: Int32) -> Cursor? {
        trees[Int(t)].count == 0 ? nil : Cursor(leaf: trees[Int(t)].firstLeaf, entry: 0, offset: 0)
    }

    /// The last slot of tree `t`, or nil when it is empty.
    ///
    /// - Complexity: O(log n).
    func last(_ t: Int32) -> Cursor? {
        let tree = trees[Int(t)]
        if tree.count == 0 { return nil }
        var leaf = tree.rootLeaf
        if !tree.rootIsLeaf {
            var node = tree.rootNode
            while true {
                let k = Int(nodes[node.int].size) - 1
                let link = links[node.linkBase + k]
                if nodes[node.int].childIsLeaf { leaf = link.leaf; break }
                node = link.node
            }
        }
        let n = leaves[leaf.int].size
        let e = entries[leaf.entryBase + Int(n) - 1]
        return Cursor(leaf: leaf, entry: n - 1, offset: Int32(e.count - 1))
    }

    /// Calls `body` with each run of slots of tree `t` in order: first local version, count,
    /// visibility.
    ///
    /// - Complexity: O(n) in the number of entries.
    func forEachRun(_ t: Int32, _ body: (LocalVersion, Int, Bool) throws -> Void) rethrows {
        if trees[Int(t)].count == 0 { return }
        var leaf = trees[Int(t)].firstLeaf
        while leaf.exists {
            let base = leaf.entryBase
            for i in 0..<Int(leaves[leaf.int].size) {
                let e = entries[base + i]
                try body(e.lv, e.count, e.isVisible)
            }
            leaf = leaves[leaf.int].next
        }
    }
}
