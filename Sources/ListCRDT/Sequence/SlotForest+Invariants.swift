extension SlotForest {
    /// Checks the bookkeeping of tree `t`: counts at every node, parent, slot and sibling links,
    /// `leafOf`, and the finger. Returns the problems found (empty when sound).
    ///
    /// - Complexity: O(n).
    func problems(_ t: Int32) -> [String] {
        var out: [String] = []
        var seenAll = 0, seenVisible = 0
        let tree = trees[Int(t)]
        let (count, visibleCount, rootNode, rootIsLeaf) = (tree.count, tree.visibleCount, tree.rootNode, tree.rootIsLeaf)
        var leaf = tree.firstLeaf
        var previous = LeafIndex.none
        var reached = 0
        while leaf.exists {
            reached += 1
            if leaves[leaf.int].tree != t { out.append("leaf \(leaf) is in tree \(leaves[leaf.int].tree), reached from \(t)") }
            if leaf == fingers[Int(t)].leaf && seenVisible != fingers[Int(t)].start {
                out.append("the finger says leaf \(leaf) starts at \(fingers[Int(t)].start), it starts at \(seenVisible)")
            }
            if leaves[leaf.int].prev != previous { out.append("leaf \(leaf) has a wrong back link") }
            let n = Int(leaves[leaf.int].size)
            if n == 0 && count > 0 { out.append("leaf \(leaf) is empty") }
            for i in 0..<n {
                let e = entries[leaf.entryBase + i]
                if e.len == 0 { out.append("leaf \(leaf) has an empty entry") }
                if e.count > Self.maxEntryLength {
                    out.append("leaf \(leaf) has an entry of \(e.count) slots (at most \(Self.maxEntryLength))")
                }
                seenAll += e.count
                seenVisible += e.visibleCount
                for lv in e.lv.int..<(e.lv.int + e.count) where leafOf[lv] != leaf {
                    out.append("slot \(lv) is in leaf \(leaf) but leafOf says \(leafOf[lv])")
                }
            }
            previous = leaf
            leaf = leaves[leaf.int].next
        }
        let owned = leaves.reduce(0) { $0 + ($1.tree == t ? 1 : 0) }
        if reached != owned { out.append("\(owned - reached) leaves are unreachable") }
        if seenAll != count || seenVisible != visibleCount {
            out.append("leaves hold \(seenAll)/\(seenVisible) slots but the tree counts \(count)/\(visibleCount)")
        }
        if !rootIsLeaf { _ = checkNode(rootNode, parent: .none, into: &out) }
        return out
    }

    /// Sums a subtree, comparing with the counts its parent keeps.
    func checkNode(_ node: NodeIndex, parent: NodeIndex, into out: inout [String]) -> (Int, Int) {
        if nodes[node.int].parent != parent { out.append("node \(node) has a wrong parent") }
        if !parent.exists && trees[Int(nodes[node.int].tree)].root != node.raw { out.append("node \(node) is a root of no tree") }
        let base = node.linkBase
        var all = 0, vis = 0
        for k in 0..<Int(nodes[node.int].size) {
            let sums: (Int, Int)
            if nodes[node.int].childIsLeaf {
                let leaf = links[base + k].leaf
                if leaves[leaf.int].parent != node { out.append("leaf \(leaf) has a wrong parent") }
                if leaves[leaf.int].indexInParent != Int32(k) { out.append("leaf \(leaf) has a wrong index in its parent") }
                var a = 0, v = 0
                for i in 0..<Int(leaves[leaf.int].size) {
                    let e = entries[leaf.entryBase + i]
                    a += e.count
                    v += e.visibleCount
                }
                sums = (a, v)
            } else {
                let child = links[base + k].node
                if nodes[child.int].indexInParent != Int32(k) { out.append("node \(child) has a wrong index in its parent") }
                sums = checkNode(child, parent: node, into: &out)
            }
            if sums.0 != Int(links[base + k].all) || sums.1 != Int(links[base + k].visible) {
                out.append("node \(node) child \(k) counts \(links[base + k].all)/\(links[base + k].visible), holds \(sums.0)/\(sums.1)")
            }
            all += sums.0
            vis += sums.1
        }
        return (all, vis)
    }
}
