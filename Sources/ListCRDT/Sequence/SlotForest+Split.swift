/// Splitting full leaves and nodes, and making new ones.
extension SlotForest {
    /// Makes room for `needed` more entries at index `i` of `leaf`, splitting the leaf when full.
    /// Returns the leaf and index where the entries now go.
    mutating func makeRoom(leaf: LeafIndex, at i: Int, needed: Int) -> (LeafIndex, Int) {
        let n = Int(leaves[leaf.int].size)
        if n + needed <= Self.leafCapacity { return (leaf, i) }
        let half = n / 2
        let right = splitLeaf(leaf, keeping: half)
        // An index exactly at the split point stays at the end of the left leaf (the entry before it
        // may be split by the caller and must stay reachable at i - 1).
        return i <= half ? (leaf, i) : (right, i - half)
    }

    mutating func newLeaf(tree: Int32, next: LeafIndex, prev: LeafIndex) -> LeafIndex {
        let leaf = LeafIndex(Int32(leaves.count))
        entries.append(contentsOf: Entry.emptyLeaf)
        leaves.append(Leaf(size: 0, parent: .none, indexInParent: 0, next: next, prev: prev, tree: tree))
        return leaf
    }

    /// Moves entries `keep...` of `leaf` into a new leaf to its right and returns the new leaf.
    mutating func splitLeaf(_ leaf: LeafIndex, keeping keep: Int) -> LeafIndex {
        let newLeaf = newLeaf(tree: leaves[leaf.int].tree, next: leaves[leaf.int].next, prev: leaf)
        if leaves[leaf.int].next.exists { leaves[leaves[leaf.int].next.int].prev = newLeaf }
        leaves[leaf.int].next = newLeaf

        let from = leaf.entryBase
        let to = newLeaf.entryBase
        let n = Int(leaves[leaf.int].size)
        var movedAll = 0, movedVisible = 0
        for j in keep..<n {
            let e = entries[from + j]
            entries[to + j - keep] = e
            movedAll += e.count
            movedVisible += e.visibleCount
            setLeaf(newLeaf, of: e.lv, count: e.count)
        }
        leaves[leaf.int].size = Int32(keep)
        leaves[newLeaf.int].size = Int32(n - keep)
        insertSibling(newLeaf.raw, isLeaf: true, after: leaf.raw, all: movedAll, visible: movedVisible)
        return newLeaf
    }

    /// Puts `newChild` into the parent of `left`, right after it, moving `all`/`visible` counts from
    /// `left` to it; makes a new root when `left` was the root. `newChild` and `left` are two leaves'
    /// numbers or two nodes' (`isLeaf`), as in a ``Link``.
    mutating func insertSibling(_ newChild: Int32, isLeaf: Bool, after left: Int32, all: Int, visible: Int) {
        let parent = isLeaf ? leaves[Int(left)].parent : nodes[Int(left)].parent
        if !parent.exists {
            let t = isLeaf ? leaves[Int(left)].tree : nodes[Int(left)].tree
            let node = newNode(tree: t, childIsLeaf: isLeaf)
            let base = node.linkBase
            let tree = trees[Int(t)]
            links[base] = Link(child: left, all: Int32(tree.count - all), visible: Int32(tree.visibleCount - visible))
            links[base + 1] = Link(child: newChild, all: Int32(all), visible: Int32(visible))
            nodes[node.int].size = 2
            setParent(left, isLeaf: isLeaf, node, at: 0)
            setParent(newChild, isLeaf: isLeaf, node, at: 1)
            trees[Int(t)].root = node.raw
            trees[Int(t)].rootIsLeaf = false
            return
        }
        // Split a full parent first, while its counts still agree with its own parent's; `left` and
        // `newChild` then go to whichever half holds `left`, so that half's total does not change.
        var p = parent
        if Int(nodes[p.int].size) == Self.nodeCapacity {
            _ = splitNode(p, keeping: Self.nodeCapacity / 2)
            p = isLeaf ? leaves[Int(left)].parent : nodes[Int(left)].parent
        }
        let base = p.linkBase
        let k = Int(isLeaf ? leaves[Int(left)].indexInParent : nodes[Int(left)].indexInParent)
        links[base + k].all -= Int32(all)
        links[base + k].visible -= Int32(visible)
        let n = Int(nodes[p.int].size)
        var j = n - 1
        while j > k {
            links[base + j + 1] = links[base + j]
            setIndexInParent(links[base + j + 1].child, isLeaf: isLeaf, Int32(j + 1))
            j -= 1
        }
        links[base + k + 1] = Link(child: newChild, all: Int32(all), visible: Int32(visible))
        nodes[p.int].size += 1
        setParent(newChild, isLeaf: isLeaf, p, at: Int32(k + 1))
    }

    /// Moves children `keep...` of `node` into a new node to its right and returns the new node.
    mutating func splitNode(_ node: NodeIndex, keeping keep: Int) -> NodeIndex {
        let isLeafLevel = nodes[node.int].childIsLeaf
        let newNode = self.newNode(tree: nodes[node.int].tree, childIsLeaf: isLeafLevel)
        let from = node.linkBase
        let to = newNode.linkBase
        let n = Int(nodes[node.int].size)
        var movedAll = 0, movedVisible = 0
        for j in keep..<n {
            links[to + j - keep] = links[from + j]
            movedAll += Int(links[from + j].all)
            movedVisible += Int(links[from + j].visible)
            setParent(links[from + j].child, isLeaf: isLeafLevel, newNode, at: Int32(j - keep))
        }
        nodes[node.int].size = Int32(keep)
        nodes[newNode.int].size = Int32(n - keep)
        insertSibling(newNode.raw, isLeaf: false, after: node.raw, all: movedAll, visible: movedVisible)
        return newNode
    }

    mutating func newNode(tree: Int32, childIsLeaf: Bool) -> NodeIndex {
        let node = NodeIndex(Int32(nodes.count))
        nodes.append(Node(size: 0, parent: .none, indexInParent: 0, tree: tree, childIsLeaf: childIsLeaf))
        links.append(contentsOf: repeatElement(Link(child: -1, all: 0, visible: 0), count: Self.nodeCapacity))
        return node
    }

    /// Sets the parent of `child`, a leaf's number or a node's (`isLeaf`), as in a ``Link``.
    mutating func setParent(_ child: Int32, isLeaf: Bool, _ parent: NodeIndex, at index: Int32) {
        if isLeaf {
            leaves[Int(child)].parent = parent
            leaves[Int(child)].indexInParent = index
        } else {
            nodes[Int(child)].parent = parent
            nodes[Int(child)].indexInParent = index
        }
    }

    /// Sets the index in its parent of `child`, a leaf's number or a node's (`isLeaf`), as in a ``Link``.
    mutating func setIndexInParent(_ child: Int32, isLeaf: Bool, _ index: Int32) {
        if isLeaf { leaves[Int(child)].indexInParent = index } else { nodes[Int(child)].indexInParent = index }
    }
}
