extension SlotForest {
    /// Adds a tree holding `entries`, in order, built bottom up (a state snapshot's load): full
    /// leaves of ``leafCapacity`` entries, then full levels of ``nodeCapacity`` children, with every
    /// count, parent link, sibling link and `leafOf` entry set. Returns the tree's number.
    ///
    /// The entries must be valid (non-empty, at most ``maxEntryLength`` slots, slots known to
    /// `leafOf` and in no other tree); the caller has checked them.
    ///
    /// - Complexity: O(e + n) for e entries of n slots.
    @discardableResult
    mutating func appendTree(_ source: [Entry]) -> Int32 {
        if source.isEmpty { return addTree() }
        let t = Int32(trees.count)
        let leafCount = (source.count + Self.leafCapacity - 1) / Self.leafCapacity
        var level: [Link] = []
        level.reserveCapacity(leafCount)
        let firstLeaf = LeafIndex(Int32(leaves.count))
        entries.reserveCapacity(entries.count + leafCount * Self.leafCapacity)
        leaves.reserveCapacity(leaves.count + leafCount)
        var all = 0, visible = 0
        for k in 0 ..< leafCount {
            let leaf = LeafIndex(firstLeaf.raw + Int32(k))
            let lo = k * Self.leafCapacity, hi = min(lo + Self.leafCapacity, source.count)
            var a: Int32 = 0, v: Int32 = 0
            entries.append(contentsOf: source[lo ..< hi])  // one copy, not one append (and check) per entry
            for e in source[lo ..< hi] {
                a += Int32(e.count)
                v += Int32(e.visibleCount)
                leafOf.set(leaf, from: e.lv.int, count: e.count)
            }
            if hi - lo < Self.leafCapacity {
                entries.append(contentsOf: Entry.emptyLeaf[(hi - lo)...])
            }
            leaves.append(Leaf(size: Int32(hi - lo), parent: .none, indexInParent: 0,
                               next: k + 1 < leafCount ? LeafIndex(leaf.raw + 1) : .none,
                               prev: k > 0 ? LeafIndex(leaf.raw - 1) : .none, tree: t))
            level.append(Link(child: leaf.raw, all: a, visible: v))
            all += Int(a)
            visible += Int(v)
        }
        var childIsLeaf = true
        while level.count > 1 {
            var next: [Link] = []
            next.reserveCapacity((level.count + Self.nodeCapacity - 1) / Self.nodeCapacity)
            var k = 0
            while k < level.count {
                let node = newNode(tree: t, childIsLeaf: childIsLeaf)
                let hi = min(k + Self.nodeCapacity, level.count)
                var a: Int32 = 0, v: Int32 = 0
                for (j, link) in level[k ..< hi].enumerated() {
                    links[node.linkBase + j] = link
                    setParent(link.child, isLeaf: childIsLeaf, node, at: Int32(j))
                    a += link.all
                    v += link.visible
                }
                nodes[node.int].size = Int32(hi - k)
                next.append(Link(child: node.raw, all: a, visible: v))
                k = hi
            }
            level = next
            childIsLeaf = false
        }
        trees.append(Tree(root: level[0].child, rootIsLeaf: childIsLeaf, firstLeaf: firstLeaf,
                          count: all, visibleCount: visible))
        fingers.append(Finger())
        return t
    }
}
