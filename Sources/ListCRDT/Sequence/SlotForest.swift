/// The order of every sequence's slots: counted B-trees of runs of local slot numbers, one tree per
/// sequence, all kept in one set of flat arrays.
///
/// Every slot a replica knows gets a *local version* (`lv`), a dense `Int32` given in the order the
/// slots arrived. A sequence is a list of slots; its tree stores it as runs of consecutive local
/// versions ("entries") that share one visibility, so text typed left to right, or a run of
/// deletes, is one entry. Leaves hold up to ``leafCapacity`` entries; internal nodes hold up to
/// ``nodeCapacity`` children and, for each child, the number of slots and of visible slots below it.
///
/// - Index → slot: descend by visible counts, O(log n); or, when the index falls in the leaf
///   found last time (local editing), scan that leaf only (the *finger*).
/// - Slot → index: the caller keeps `leafOf[lv]` (the leaf holding each slot; the forest updates it
///   when entries move), then the leaf is scanned and the path to the root summed, O(log n).
///
/// The trees share storage (one document is one forest), so a tree is a small header and reaching
/// one never copies anything. Leaves and nodes know their tree and their place in their parent, so
/// walking up needs no search. Storage is flat arrays of plain integers: no class per node, no
/// reference counting per node.
struct SlotForest: Sendable {
    static let leafCapacity = 16
    static let nodeCapacity = 16
    /// The most slots one entry holds. A leaf split moves half a leaf's entries to a new leaf and
    /// rewrites `leafOf` for each of their slots, so this bounds that work to
    /// `leafCapacity / 2 × maxEntryLength` slots, whatever the size of the document (without it,
    /// the first split of a long typed run rewrote `leafOf` for up to all of its slots: O(n)).
    /// A longer run takes several entries.
    static let maxEntryLength = 128

    /// A run of `abs(len)` slots with consecutive local versions starting at `lv`;
    /// `len > 0` means visible, `len < 0` hidden.
    struct Entry: Equatable, Sendable {
        var lv: Int32
        var len: Int32
        @inline(__always) var count: Int { Int(len < 0 ? -len : len) }
        @inline(__always) var visibleCount: Int { len > 0 ? Int(len) : 0 }
        @inline(__always) var isVisible: Bool { len > 0 }
        static let empty = Entry(lv: 0, count: 0, visible: false)
        @inline(__always) init(lv: Int32, count: Int, visible: Bool) {
            self.lv = lv
            self.len = visible ? Int32(count) : -Int32(count)
        }
    }

    /// A leaf's bookkeeping: entry count, parent node (-1 for a root), index among the parent's
    /// children, neighbours in its tree (-1 for none), and its tree.
    struct Leaf: Sendable {
        var size: Int32
        var parent: Int32
        var slot: Int32
        var next: Int32
        var prev: Int32
        var tree: Int32
    }

    /// An internal node's bookkeeping.
    struct Node: Sendable {
        var size: Int32
        var parent: Int32
        var slot: Int32
        var tree: Int32
        var childIsLeaf: Bool
    }

    /// One child of an internal node with the number of slots, and of visible slots, below it.
    struct Link: Sendable {
        var child: Int32
        var all: Int32
        var visible: Int32
    }

    /// One tree: its root, its first leaf (leaf splits only ever add leaves to the right, so the
    /// first leaf never changes) and its counts.
    struct Tree: Sendable {
        var root: Int32
        var rootIsLeaf = true
        var firstLeaf: Int32
        var count = 0
        var visibleCount = 0
    }

    /// A tree's finger: a leaf (-1: none) and the visible index of its first slot, valid while no
    /// visible count changes in another leaf of the tree. Kept apart from ``Tree`` so that moving
    /// it writes nothing else.
    struct Finger: Sendable {
        var leaf: Int32 = -1
        var start = 0
    }

    /// A position in a tree: slot `offset` of entry `entry` of leaf `leaf`.
    struct Cursor: Equatable, Sendable {
        var leaf: Int32
        var entry: Int32
        var offset: Int32
    }

    var entries: [Entry] = []
    private(set) var leaves: [Leaf] = []
    private(set) var nodes: [Node] = []
    /// ``nodeCapacity`` links per internal node.
    private(set) var links: [Link] = []
    private(set) var trees: [Tree] = []
    private(set) var fingers: [Finger] = []

    init() {}

    /// Adds an empty tree and returns its number.
    ///
    /// - Complexity: O(1) amortized.
    mutating func addTree() -> Int32 {
        let t = Int32(trees.count)
        let leaf = newLeaf(tree: t, next: -1, prev: -1)
        trees.append(Tree(root: leaf, firstLeaf: leaf))
        fingers.append(Finger())
        return t
    }

    /// Number of slots of tree `t`, visible or not.
    @inline(__always) func count(_ t: Int32) -> Int { trees[Int(t)].count }
    /// Number of visible slots of tree `t`.
    @inline(__always) func visibleCount(_ t: Int32) -> Int { trees[Int(t)].visibleCount }

    @inline(__always) func entry(_ c: Cursor) -> Entry { entries[Int(c.leaf) * Self.leafCapacity + Int(c.entry)] }
    @inline(__always) func lv(at c: Cursor) -> Int32 { entry(c).lv + c.offset }

    // MARK: Finding

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
        if finger.leaf >= 0 && index >= finger.start {
            if let c = scanLeaf(finger.leaf, index - finger.start) { return c }
        }
        let (c, start) = descend(t, index)
        fingers[Int(t)] = Finger(leaf: c.leaf, start: start)
        return c
    }

    /// The visible slot `rest` of `leaf`, or nil if the leaf has fewer visible slots.
    @inline(__always)
    private func scanLeaf(_ leaf: Int32, _ rest: Int) -> Cursor? {
        let n = Int(leaves[Int(leaf)].size)
        return entries.withUnsafeBufferPointer { buf -> Cursor? in
            var rest = rest
            let base = Int(leaf) * Self.leafCapacity
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
    private func descend(_ t: Int32, _ index: Int) -> (cursor: Cursor, leafStart: Int) {
        let tree = trees[Int(t)]
        precondition(index >= 0 && index < tree.visibleCount, "visible index out of range")
        var rest = index
        var node = tree.root
        if !tree.rootIsLeaf {
            links.withUnsafeBufferPointer { links in
                nodes.withUnsafeBufferPointer { nodes in
                    var isLeaf = false
                    while !isLeaf {
                        let base = Int(node) * Self.nodeCapacity
                        let n = Int(nodes[Int(node)].size)
                        var k = 0
                        while k < n - 1 {
                            let v = Int(links[base + k].visible)
                            if rest < v { break }
                            rest -= v
                            k += 1
                        }
                        isLeaf = nodes[Int(node)].childIsLeaf
                        node = links[base + k].child
                    }
                }
            }
        }
        guard let c = scanLeaf(node, rest) else { preconditionFailure("tree counts are inconsistent") }
        return (c, index - rest)
    }

    /// The cursor of slot `lv`, which must be in a tree.
    ///
    /// - Complexity: O(leafCapacity).
    func locate(_ lv: Int32, leafOf: [Int32]) -> Cursor {
        let leaf = leafOf[Int(lv)]
        let n = Int(leaves[Int(leaf)].size)
        let found = entries.withUnsafeBufferPointer { buf -> Cursor? in
            let base = Int(leaf) * Self.leafCapacity
            for i in 0..<n {
                let e = buf[base + i]
                // One unsigned comparison: lv - e.lv in 0 ..< count.
                let offset = UInt32(bitPattern: lv &- e.lv)
                if offset < UInt32(e.count) { return Cursor(leaf: leaf, entry: Int32(i), offset: Int32(offset)) }
            }
            return nil
        }
        guard let found else { preconditionFailure("slot \(lv) is not in its leaf") }
        return found
    }

    /// The position of the slot at `c` in its tree, among all slots and among visible slots (for
    /// a hidden slot, the number of visible slots before it).
    ///
    /// - Complexity: O(log n).
    func position(of c: Cursor) -> (all: Int, visible: Int) {
        let base = Int(c.leaf) * Self.leafCapacity
        var all = Int(c.offset)
        let e = entries[base + Int(c.entry)]
        var vis = e.isVisible ? Int(c.offset) : 0
        for i in 0..<Int(c.entry) {
            let x = entries[base + i]
            all += x.count
            vis += x.visibleCount
        }
        var slot = Int(leaves[Int(c.leaf)].slot)
        var parent = leaves[Int(c.leaf)].parent
        while parent >= 0 {
            let pb = Int(parent) * Self.nodeCapacity
            for k in 0..<slot {
                all += Int(links[pb + k].all)
                vis += Int(links[pb + k].visible)
            }
            slot = Int(nodes[Int(parent)].slot)
            parent = nodes[Int(parent)].parent
        }
        return (all, vis)
    }

    /// The slot after `c` in its tree, or nil at the end.
    ///
    /// - Complexity: O(1).
    func next(_ c: Cursor) -> Cursor? {
        if Int(c.offset) + 1 < entry(c).count { return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset + 1) }
        if c.entry + 1 < leaves[Int(c.leaf)].size { return Cursor(leaf: c.leaf, entry: c.entry + 1, offset: 0) }
        let nextLeaf = leaves[Int(c.leaf)].next
        return nextLeaf < 0 ? nil : Cursor(leaf: nextLeaf, entry: 0, offset: 0)
    }

    /// The slot before `c` in its tree, or nil at the start.
    ///
    /// - Complexity: O(1).
    func previous(_ c: Cursor) -> Cursor? {
        if c.offset > 0 { return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset - 1) }
        if c.entry > 0 {
            let e = entries[Int(c.leaf) * Self.leafCapacity + Int(c.entry) - 1]
            return Cursor(leaf: c.leaf, entry: c.entry - 1, offset: Int32(e.count - 1))
        }
        let prevLeaf = leaves[Int(c.leaf)].prev
        if prevLeaf < 0 { return nil }
        let n = leaves[Int(prevLeaf)].size
        let e = entries[Int(prevLeaf) * Self.leafCapacity + Int(n) - 1]
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
        var leaf = tree.root
        if !tree.rootIsLeaf {
            var node = tree.root
            while true {
                let k = Int(nodes[Int(node)].size) - 1
                let child = links[Int(node) * Self.nodeCapacity + k].child
                if nodes[Int(node)].childIsLeaf { leaf = child; break }
                node = child
            }
        }
        let n = leaves[Int(leaf)].size
        let e = entries[Int(leaf) * Self.leafCapacity + Int(n) - 1]
        return Cursor(leaf: leaf, entry: n - 1, offset: Int32(e.count - 1))
    }

    /// Calls `body` with each run of slots of tree `t` in order: first local version, count,
    /// visibility.
    ///
    /// - Complexity: O(n) in the number of entries.
    func forEachRun(_ t: Int32, _ body: (Int32, Int, Bool) throws -> Void) rethrows {
        if trees[Int(t)].count == 0 { return }
        var leaf = trees[Int(t)].firstLeaf
        while leaf >= 0 {
            let base = Int(leaf) * Self.leafCapacity
            for i in 0..<Int(leaves[Int(leaf)].size) {
                let e = entries[base + i]
                try body(e.lv, e.count, e.isVisible)
            }
            leaf = leaves[Int(leaf)].next
        }
    }

    // MARK: Inserting

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
    mutating func insert(_ t: Int32, _ lv: Int32, count n: Int = 1, visible: Bool, after: Cursor?,
                         leafOf: inout [Int32]) {
        if n > Self.maxEntryLength {
            insertLong(t, lv, count: n, visible: visible, after: after, leafOf: &leafOf)
            return
        }
        let delta = visible ? n : 0
        let new = Entry(lv: lv, count: n, visible: visible)
        guard let at = after else {
            let (leaf, i) = makeRoom(leaf: trees[Int(t)].firstLeaf, at: 0, needed: 1, leafOf: &leafOf)
            insertEntries(leaf: leaf, at: i, new)
            setLeaf(leaf, of: lv, count: n, leafOf: &leafOf)
            addCounts(leaf: leaf, all: n, visible: delta)
            return
        }
        let idx = Int(at.leaf) * Self.leafCapacity + Int(at.entry)
        let e = entries[idx]
        if Int(at.offset) == e.count - 1 {
            // After the last slot of an entry: extend it if possible, else a new entry follows it.
            if Self.continues(e, new) {
                entries[idx].len += new.len
                setLeaf(at.leaf, of: lv, count: n, leafOf: &leafOf)
                addCounts(leaf: at.leaf, all: n, visible: delta)
                return
            }
            let (leaf, i) = makeRoom(leaf: at.leaf, at: Int(at.entry) + 1, needed: 1, leafOf: &leafOf)
            insertEntries(leaf: leaf, at: i, new)
            setLeaf(leaf, of: lv, count: n, leafOf: &leafOf)
            addCounts(leaf: leaf, all: n, visible: delta)
            return
        }
        // In the middle of an entry: split it around the new slots.
        let head = Int(at.offset) + 1
        let (leaf, i) = makeRoom(leaf: at.leaf, at: Int(at.entry) + 1, needed: 2, leafOf: &leafOf)
        let split = Int(leaf) * Self.leafCapacity + i - 1
        let old = entries[split]
        entries[split] = Entry(lv: old.lv, count: head, visible: old.isVisible)
        let tail = Entry(lv: old.lv + Int32(head), count: old.count - head, visible: old.isVisible)
        insertEntries(leaf: leaf, at: i, new, tail)
        setLeaf(leaf, of: lv, count: n, leafOf: &leafOf)
        addCounts(leaf: leaf, all: n, visible: delta)
    }

    /// Appends the new visible slot `lv` right after the visible slot at `c`, which ends its entry
    /// and is `lv - 1` (the next character of a typed run): the entry grows by one. Returns the
    /// new slot's cursor, or nil, changing nothing, when the entry is full
    /// (``maxEntryLength``).
    ///
    /// - Complexity: O(log n) (the counts on the path to the root).
    mutating func extend(_ c: Cursor, with lv: Int32, leafOf: inout [Int32]) -> Cursor? {
        let idx = Int(c.leaf) * Self.leafCapacity + Int(c.entry)
        let e = entries[idx]
        precondition(e.isVisible && Int(c.offset) == e.count - 1 && e.lv + c.offset + 1 == lv,
                     "slot \(lv) does not continue the entry at the cursor")
        if e.count == Self.maxEntryLength { return nil }
        entries[idx].len += 1
        leafOf.append(c.leaf)
        addCounts(leaf: c.leaf, all: 1, visible: 1)
        return Cursor(leaf: c.leaf, entry: c.entry, offset: c.offset + 1)
    }

    @inline(__always)
    private func setLeaf(_ leaf: Int32, of lv: Int32, count n: Int, leafOf: inout [Int32]) {
        if n == 1 { leafOf[Int(lv)] = leaf; return }
        precondition(lv >= 0 && Int(lv) + n <= leafOf.count, "slots out of range")
        leafOf.withUnsafeMutableBufferPointer { buf in
            (buf.baseAddress! + Int(lv)).update(repeating: leaf, count: n)
        }
    }

    /// ``insert(_:_:count:visible:after:leafOf:)`` for a run longer than ``maxEntryLength``: one
    /// entry per piece of at most that many slots, each right after the one before.
    ///
    /// - Complexity: O((n / maxEntryLength) × log N + n).
    private mutating func insertLong(_ t: Int32, _ lv: Int32, count n: Int, visible: Bool, after: Cursor?,
                                     leafOf: inout [Int32]) {
        var done = 0
        var at = after
        while done < n {
            let k = min(Self.maxEntryLength, n - done)
            let first = lv + Int32(done)
            insert(t, first, count: k, visible: visible, after: at, leafOf: &leafOf)
            done += k
            at = locate(first + Int32(k) - 1, leafOf: leafOf)
        }
    }

    /// Shows or hides slot `lv`. Returns whether anything changed.
    ///
    /// - Complexity: O(log n) amortized.
    @discardableResult
    mutating func setVisible(_ lv: Int32, _ visible: Bool, leafOf: inout [Int32]) -> Bool {
        let c = locate(lv, leafOf: leafOf)
        if entry(c).isVisible == visible { return false }
        flip(at: c, count: 1, leafOf: &leafOf)
        return true
    }

    /// Flips the visibility of the `n` slots from `c` on, which lie in `c`'s entry: splits the
    /// entry into [head][the n slots][tail] (head or tail may be empty), updates the counts on the
    /// path to the root once, and merges the flipped piece with its neighbours.
    ///
    /// - Complexity: O(log N + leafCapacity × maxEntryLength): a leaf split rewrites `leafOf` for
    ///   the slots of the entries it moves, at most `leafCapacity / 2 × maxEntryLength`.
    mutating func flip(at c: Cursor, count n: Int, leafOf: inout [Int32]) {
        let e = entry(c)
        let visible = !e.isVisible
        let count = e.count, off = Int(c.offset)
        precondition(off + n <= count, "the range leaves its entry")
        let lv = e.lv + c.offset
        if n < count, shiftToNeighbour(c, e, count: n, visible: visible) {
            addCounts(leaf: c.leaf, all: 0, visible: visible ? n : -n)
            return
        }
        var at = c
        if n == count {
            entries[Int(c.leaf) * Self.leafCapacity + Int(c.entry)].len = -e.len
        } else {
            let tailCount = count - off - n
            let pieces = (off > 0 ? 1 : 0) + 1 + (tailCount > 0 ? 1 : 0)
            let (leaf, i) = makeRoom(leaf: c.leaf, at: Int(c.entry) + 1, needed: pieces - 1, leafOf: &leafOf)
            let first = i - 1
            let middle = Entry(lv: lv, count: n, visible: visible)
            let tail = tailCount > 0 ? Entry(lv: lv + Int32(n), count: tailCount, visible: e.isVisible) : nil
            if off > 0 {
                entries[Int(leaf) * Self.leafCapacity + first] = Entry(lv: e.lv, count: off, visible: e.isVisible)
                insertEntries(leaf: leaf, at: first + 1, middle, tail)
            } else {
                entries[Int(leaf) * Self.leafCapacity + first] = middle
                if let tail { insertEntries(leaf: leaf, at: first + 1, tail) }
            }
            at = Cursor(leaf: leaf, entry: Int32(first + (off > 0 ? 1 : 0)), offset: 0)
        }
        addCounts(leaf: at.leaf, all: 0, visible: visible ? n : -n)
        mergeAround(leaf: at.leaf, entry: Int(at.entry))
    }

    /// The flip of ``flip(at:count:leafOf:)`` without a split when the `n` slots end (or start)
    /// `c`'s entry `e` and the next (or previous) entry of the leaf already has the new visibility
    /// and continues them: the slots move over to that entry, so nothing shifts in the leaf (the
    /// usual backspace or forward delete next to text deleted just before). Counts are the
    /// caller's. Returns false, changing nothing, otherwise.
    @inline(__always)
    private mutating func shiftToNeighbour(_ c: Cursor, _ e: Entry, count n: Int, visible: Bool) -> Bool {
        let base = Int(c.leaf) * Self.leafCapacity
        let i = Int(c.entry)
        if Int(c.offset) + n == e.count, i + 1 < Int(leaves[Int(c.leaf)].size) {
            let next = entries[base + i + 1]
            guard next.isVisible == visible, next.lv == e.lv + Int32(e.count),
                  next.count + n <= Self.maxEntryLength else { return false }
            entries[base + i] = Entry(lv: e.lv, count: e.count - n, visible: e.isVisible)
            entries[base + i + 1] = Entry(lv: next.lv - Int32(n), count: next.count + n, visible: visible)
            return true
        }
        if c.offset == 0, i > 0 {
            let previous = entries[base + i - 1]
            guard previous.isVisible == visible, previous.lv + Int32(previous.count) == e.lv,
                  previous.count + n <= Self.maxEntryLength else { return false }
            entries[base + i - 1] = Entry(lv: previous.lv, count: previous.count + n, visible: visible)
            entries[base + i] = Entry(lv: e.lv + Int32(n), count: e.count - n, visible: e.isVisible)
            return true
        }
        return false
    }

    /// Merges entry `i` with its neighbours in the same leaf when they continue each other and
    /// the merged entry is not too long (``maxEntryLength``).
    mutating func mergeAround(leaf: Int32, entry i: Int) {
        let base = Int(leaf) * Self.leafCapacity
        var i = i
        if i > 0 {
            let a = entries[base + i - 1], b = entries[base + i]
            if Self.continues(a, b) {
                entries[base + i - 1].len += b.len
                removeEntry(leaf: leaf, at: i)
                i -= 1
            }
        }
        if i + 1 < Int(leaves[Int(leaf)].size) {
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
        a.isVisible == b.isVisible && a.lv + Int32(a.count) == b.lv && a.count + b.count <= maxEntryLength
    }

    private mutating func removeEntry(leaf: Int32, at i: Int) {
        let base = Int(leaf) * Self.leafCapacity
        let n = Int(leaves[Int(leaf)].size)
        if i + 1 < n {
            entries.withUnsafeMutableBufferPointer { buf in
                let p = buf.baseAddress! + base
                (p + i).update(from: p + i + 1, count: n - i - 1)
            }
        }
        leaves[Int(leaf)].size -= 1
    }

    /// Inserts one or two entries at index `i` of `leaf`, which has room for them.
    mutating func insertEntries(leaf: Int32, at i: Int, _ first: Entry, _ second: Entry? = nil) {
        let base = Int(leaf) * Self.leafCapacity
        let n = Int(leaves[Int(leaf)].size)
        let k = second == nil ? 1 : 2
        entries.withUnsafeMutableBufferPointer { buf in
            let p = buf.baseAddress! + base
            if i < n { (p + i + k).update(from: p + i, count: n - i) }
            p[i] = first
            if let second { p[i + 1] = second }
        }
        leaves[Int(leaf)].size += Int32(k)
    }

    /// Adds slot counts to the tree of `leaf` and to every node on the path from `leaf` to the
    /// root. A change of visible count outside the finger's leaf drops the finger.
    @inline(__always)
    mutating func addCounts(leaf: Int32, all: Int, visible: Int) {
        let info = leaves[Int(leaf)]
        let t = Int(info.tree)
        // One access to the tree header (one uniqueness check of `trees`).
        trees.withUnsafeMutableBufferPointer { trees in
            trees[t].count += all
            trees[t].visibleCount += visible
        }
        if visible != 0 && fingers[t].leaf != leaf { fingers[t].leaf = -1 }
        var slot = Int(info.slot)
        var parent = info.parent
        if parent < 0 { return }
        nodes.withUnsafeBufferPointer { nodes in
            links.withUnsafeMutableBufferPointer { links in
                while parent >= 0 {
                    let k = Int(parent) * Self.nodeCapacity + slot
                    links[k].all &+= Int32(truncatingIfNeeded: all)
                    links[k].visible &+= Int32(truncatingIfNeeded: visible)
                    slot = Int(nodes[Int(parent)].slot)
                    parent = nodes[Int(parent)].parent
                }
            }
        }
    }

    // MARK: Splitting

    /// Makes room for `needed` more entries at index `i` of `leaf`, splitting the leaf when full.
    /// Returns the leaf and index where the entries now go.
    mutating func makeRoom(leaf: Int32, at i: Int, needed: Int, leafOf: inout [Int32]) -> (Int32, Int) {
        let n = Int(leaves[Int(leaf)].size)
        if n + needed <= Self.leafCapacity { return (leaf, i) }
        let half = n / 2
        let right = splitLeaf(leaf, keeping: half, leafOf: &leafOf)
        // An index exactly at the split point stays at the end of the left leaf (the entry before it
        // may be split by the caller and must stay reachable at i - 1).
        return i <= half ? (leaf, i) : (right, i - half)
    }

    private mutating func newLeaf(tree: Int32, next: Int32, prev: Int32) -> Int32 {
        let leaf = Int32(leaves.count)
        entries.append(contentsOf: repeatElement(Entry.empty, count: Self.leafCapacity))
        leaves.append(Leaf(size: 0, parent: -1, slot: 0, next: next, prev: prev, tree: tree))
        return leaf
    }

    /// Moves entries `keep...` of `leaf` into a new leaf to its right and returns the new leaf.
    private mutating func splitLeaf(_ leaf: Int32, keeping keep: Int, leafOf: inout [Int32]) -> Int32 {
        let newLeaf = newLeaf(tree: leaves[Int(leaf)].tree, next: leaves[Int(leaf)].next, prev: leaf)
        if leaves[Int(leaf)].next >= 0 { leaves[Int(leaves[Int(leaf)].next)].prev = newLeaf }
        leaves[Int(leaf)].next = newLeaf

        let from = Int(leaf) * Self.leafCapacity
        let to = Int(newLeaf) * Self.leafCapacity
        let n = Int(leaves[Int(leaf)].size)
        var movedAll = 0, movedVisible = 0
        for j in keep..<n {
            let e = entries[from + j]
            entries[to + j - keep] = e
            movedAll += e.count
            movedVisible += e.visibleCount
            setLeaf(newLeaf, of: e.lv, count: e.count, leafOf: &leafOf)
        }
        leaves[Int(leaf)].size = Int32(keep)
        leaves[Int(newLeaf)].size = Int32(n - keep)
        insertSibling(newLeaf, isLeaf: true, after: leaf, all: movedAll, visible: movedVisible)
        return newLeaf
    }

    /// Puts `newChild` into the parent of `left`, right after it, moving `all`/`visible` counts from
    /// `left` to it; makes a new root when `left` was the root.
    private mutating func insertSibling(_ newChild: Int32, isLeaf: Bool, after left: Int32, all: Int, visible: Int) {
        let parent = isLeaf ? leaves[Int(left)].parent : nodes[Int(left)].parent
        if parent < 0 {
            let t = isLeaf ? leaves[Int(left)].tree : nodes[Int(left)].tree
            let node = newNode(tree: t, childIsLeaf: isLeaf)
            let base = Int(node) * Self.nodeCapacity
            let tree = trees[Int(t)]
            links[base] = Link(child: left, all: Int32(tree.count - all), visible: Int32(tree.visibleCount - visible))
            links[base + 1] = Link(child: newChild, all: Int32(all), visible: Int32(visible))
            nodes[Int(node)].size = 2
            setParent(left, isLeaf: isLeaf, node, slot: 0)
            setParent(newChild, isLeaf: isLeaf, node, slot: 1)
            trees[Int(t)].root = node
            trees[Int(t)].rootIsLeaf = false
            return
        }
        // Split a full parent first, while its counts still agree with its own parent's; `left` and
        // `newChild` then go to whichever half holds `left`, so that half's total does not change.
        var p = parent
        if Int(nodes[Int(p)].size) == Self.nodeCapacity {
            _ = splitNode(p, keeping: Self.nodeCapacity / 2)
            p = isLeaf ? leaves[Int(left)].parent : nodes[Int(left)].parent
        }
        let base = Int(p) * Self.nodeCapacity
        let k = Int(isLeaf ? leaves[Int(left)].slot : nodes[Int(left)].slot)
        links[base + k].all -= Int32(all)
        links[base + k].visible -= Int32(visible)
        let n = Int(nodes[Int(p)].size)
        var j = n - 1
        while j > k {
            links[base + j + 1] = links[base + j]
            setSlot(links[base + j + 1].child, isLeaf: isLeaf, Int32(j + 1))
            j -= 1
        }
        links[base + k + 1] = Link(child: newChild, all: Int32(all), visible: Int32(visible))
        nodes[Int(p)].size += 1
        setParent(newChild, isLeaf: isLeaf, p, slot: Int32(k + 1))
    }

    /// Moves children `keep...` of `node` into a new node to its right and returns the new node.
    private mutating func splitNode(_ node: Int32, keeping keep: Int) -> Int32 {
        let isLeafLevel = nodes[Int(node)].childIsLeaf
        let newNode = self.newNode(tree: nodes[Int(node)].tree, childIsLeaf: isLeafLevel)
        let from = Int(node) * Self.nodeCapacity
        let to = Int(newNode) * Self.nodeCapacity
        let n = Int(nodes[Int(node)].size)
        var movedAll = 0, movedVisible = 0
        for j in keep..<n {
            links[to + j - keep] = links[from + j]
            movedAll += Int(links[from + j].all)
            movedVisible += Int(links[from + j].visible)
            setParent(links[from + j].child, isLeaf: isLeafLevel, newNode, slot: Int32(j - keep))
        }
        nodes[Int(node)].size = Int32(keep)
        nodes[Int(newNode)].size = Int32(n - keep)
        insertSibling(newNode, isLeaf: false, after: node, all: movedAll, visible: movedVisible)
        return newNode
    }

    private mutating func newNode(tree: Int32, childIsLeaf: Bool) -> Int32 {
        let node = Int32(nodes.count)
        nodes.append(Node(size: 0, parent: -1, slot: 0, tree: tree, childIsLeaf: childIsLeaf))
        links.append(contentsOf: repeatElement(Link(child: -1, all: 0, visible: 0), count: Self.nodeCapacity))
        return node
    }

    private mutating func setParent(_ child: Int32, isLeaf: Bool, _ parent: Int32, slot: Int32) {
        if isLeaf {
            leaves[Int(child)].parent = parent
            leaves[Int(child)].slot = slot
        } else {
            nodes[Int(child)].parent = parent
            nodes[Int(child)].slot = slot
        }
    }

    private mutating func setSlot(_ child: Int32, isLeaf: Bool, _ slot: Int32) {
        if isLeaf { leaves[Int(child)].slot = slot } else { nodes[Int(child)].slot = slot }
    }
}
