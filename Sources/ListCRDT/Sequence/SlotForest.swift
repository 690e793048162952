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
/// - Slot → index: the forest keeps `leafOf[lv]` (the leaf holding each slot, updated when entries
///   move), then the leaf is scanned and the path to the root summed, O(log n).
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
        var lv: LocalVersion
        var len: Int32
        @inline(__always) var count: Int { Int(len < 0 ? -len : len) }
        @inline(__always) var visibleCount: Int { len > 0 ? Int(len) : 0 }
        @inline(__always) var isVisible: Bool { len > 0 }
        static let empty = Entry(lv: LocalVersion(Int32(0)), count: 0, visible: false)
        /// A leaf's worth of ``empty`` entries: appending (part of) it copies them in one go
        /// (appending `repeatElement(empty, …)` goes element by element through the generic path).
        static let emptyLeaf = [Entry](repeating: .empty, count: SlotForest.leafCapacity)
        @inline(__always) init(lv: LocalVersion, count: Int, visible: Bool) {
            self.lv = lv
            self.len = visible ? Int32(count) : -Int32(count)
        }
    }

    /// A leaf's number: its entries are `entries[raw × leafCapacity ..< (raw + 1) × leafCapacity]`,
    /// its bookkeeping `leaves[raw]`. ``none`` (-1): no leaf. A type of its own so that a node's
    /// number cannot be passed for a leaf's; free at -O (one `Int32`).
    struct LeafIndex: Hashable, Sendable, CustomStringConvertible {
        var raw: Int32
        @inline(__always) init(_ raw: Int32) { self.raw = raw }
        /// No leaf (-1).
        static let none = LeafIndex(-1)
        /// Whether this is a leaf (not ``none``).
        @inline(__always) var exists: Bool { raw >= 0 }
        /// `raw` as an array index.
        @inline(__always) var int: Int { Int(raw) }
        /// The index of the leaf's first entry in `entries`.
        @inline(__always) var entryBase: Int { Int(raw) * SlotForest.leafCapacity }
        @inline(__always) static func == (a: LeafIndex, b: LeafIndex) -> Bool { a.raw == b.raw }
        @inline(__always) func hash(into hasher: inout Hasher) { hasher.combine(raw) }
        var description: String { raw.description }
    }

    /// An internal node's number: its children are `links[raw × nodeCapacity ..< (raw + 1) ×
    /// nodeCapacity]` (the first `size`), its bookkeeping `nodes[raw]`. ``none`` (-1): no node (the parent of a root). A type of its
    /// own so that a leaf's number cannot be passed for a node's; free at -O (one `Int32`).
    struct NodeIndex: Hashable, Sendable, CustomStringConvertible {
        var raw: Int32
        @inline(__always) init(_ raw: Int32) { self.raw = raw }
        /// No node (-1).
        static let none = NodeIndex(-1)
        /// Whether this is a node (not ``none``).
        @inline(__always) var exists: Bool { raw >= 0 }
        /// `raw` as an array index.
        @inline(__always) var int: Int { Int(raw) }
        /// The index of the node's first link in `links`.
        @inline(__always) var linkBase: Int { Int(raw) * SlotForest.nodeCapacity }
        @inline(__always) static func == (a: NodeIndex, b: NodeIndex) -> Bool { a.raw == b.raw }
        @inline(__always) func hash(into hasher: inout Hasher) { hasher.combine(raw) }
        var description: String { raw.description }
    }

    /// A leaf's bookkeeping: entry count, parent node (``NodeIndex/none`` for a root), index among
    /// the parent's children, neighbours in its tree (``LeafIndex/none`` for none), and its tree.
    struct Leaf: Sendable {
        var size: Int32
        var parent: NodeIndex
        var indexInParent: Int32
        var next: LeafIndex
        var prev: LeafIndex
        var tree: Int32
    }

    /// An internal node's bookkeeping: child count, parent node (``NodeIndex/none`` for a root),
    /// index among the parent's children, its tree, and whether its children are leaves.
    struct Node: Sendable {
        var size: Int32
        var parent: NodeIndex
        var indexInParent: Int32
        var tree: Int32
        var childIsLeaf: Bool
    }

    /// One child of an internal node with the number of slots, and of visible slots, below it.
    /// `child` is a leaf's number or a node's, as the node's `childIsLeaf` says: read it through
    /// ``leaf`` or ``node`` accordingly.
    struct Link: Sendable {
        var child: Int32
        var all: Int32
        var visible: Int32
        /// `child` as a leaf (the node's `childIsLeaf`).
        @inline(__always) var leaf: LeafIndex { LeafIndex(child) }
        /// `child` as a node (not the node's `childIsLeaf`).
        @inline(__always) var node: NodeIndex { NodeIndex(child) }
    }

    /// One tree: its root, its first leaf (leaf splits only ever add leaves to the right, so the
    /// first leaf never changes) and its counts. `root` is a leaf's number or a node's, as
    /// `rootIsLeaf` says: read it through ``rootLeaf`` or ``rootNode`` accordingly.
    struct Tree: Sendable {
        var root: Int32
        var rootIsLeaf = true
        var firstLeaf: LeafIndex
        var count = 0
        var visibleCount = 0
        /// `root` as a leaf (`rootIsLeaf`).
        @inline(__always) var rootLeaf: LeafIndex { LeafIndex(root) }
        /// `root` as a node (not `rootIsLeaf`).
        @inline(__always) var rootNode: NodeIndex { NodeIndex(root) }
    }

    /// A tree's finger: a leaf (``LeafIndex/none``: none) and the visible index of its first slot,
    /// valid while no visible count changes in another leaf of the tree. Kept apart from ``Tree``
    /// so that moving it writes nothing else.
    struct Finger: Sendable {
        var leaf: LeafIndex = .none
        var start = 0
    }

    /// A position in a tree: slot `offset` of entry `entry` of leaf `leaf`.
    struct Cursor: Equatable, Sendable {
        var leaf: LeafIndex
        var entry: Int32
        var offset: Int32
    }

    // The storage. Only the forest's own files (SlotForest+*.swift) write it; the document reads
    // the forest through its functions (README.md in this folder).
    var entries: [Entry] = []
    var leaves: [Leaf] = []
    var nodes: [Node] = []
    /// ``nodeCapacity`` links per internal node.
    var links: [Link] = []
    var trees: [Tree] = []
    var fingers: [Finger] = []
    /// For every slot the forest knows of, by local version: the leaf that holds it (``LeafIndex/none``
    /// until it is placed), by blocks of 64 slots (``LeafTable``). ``locate(_:)`` starts there.
    var leafOf = LeafTable()

    init() {}

    /// Learns of `n` new slots (the next local versions), placed by a later ``insert(_:_:count:visible:after:)``.
    /// (New slots that go into a tree at once need not be announced: the insert appends their
    /// leaf, ``setLeaf(_:of:count:)``.)
    ///
    /// - Complexity: O(n) amortized.
    @inline(__always)
    mutating func addSlots(_ n: Int) {
        if n == 1 { leafOf.append(.none) } else { leafOf.append(.none, count: n) }
    }

    /// Makes room for `n` more slots (at least doubling the room when it grows).
    mutating func reserveSlots(more n: Int) { leafOf.reserveCapacity(more: n) }

    /// Adds an empty tree and returns its number.
    ///
    /// - Complexity: O(1) amortized.
    mutating func addTree() -> Int32 {
        let t = Int32(trees.count)
        let leaf = newLeaf(tree: t, next: .none, prev: .none)
        trees.append(Tree(root: leaf.raw, firstLeaf: leaf))
        fingers.append(Finger())
        return t
    }

    /// Number of slots of tree `t`, visible or not.
    @inline(__always) func count(_ t: Int32) -> Int { trees[Int(t)].count }
    /// Number of visible slots of tree `t`.
    @inline(__always) func visibleCount(_ t: Int32) -> Int { trees[Int(t)].visibleCount }

    @inline(__always) func entry(_ c: Cursor) -> Entry { entries[c.leaf.entryBase + Int(c.entry)] }
    @inline(__always) func lv(at c: Cursor) -> LocalVersion { entry(c).lv.advanced(by: c.offset) }
}
