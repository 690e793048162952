/// The leaf that holds each slot of a ``SlotForest``, by local version (``SlotForest/leafOf``),
/// kept by blocks of 64 slots: a block whose slots are all in one leaf (a pasted text, a typed
/// run, a long list loaded) is that leaf's number alone, 4 bytes for 64 slots; a block of slots in
/// several leaves is spelled out slot by slot in a page of 64 numbers. A table of one number per
/// slot took 4 bytes per character of every text (W17: 40 of a loaded board's 53 MB of records).
///
/// A uniform block says the leaf of the slots it has (the last block may be partly filled): an
/// append of a slot in another leaf spells it out first. A write that covers every slot a block has
/// makes it uniform again (its page is reused).
struct LeafTable: Sendable {
    static let shift = 6
    static let blockSize = 1 << shift

    /// Per block: `raw >= -1`, every slot of the block is in leaf `raw` (-1: in none yet);
    /// `raw <= -2`, its slots are spelled out in page `-2 - raw`.
    private var blocks: [Int32] = []
    /// The spelled-out blocks, ``blockSize`` leaves each.
    private var pages: [SlotForest.LeafIndex] = []
    /// Pages no block uses.
    private var freePages: [Int32] = []
    /// How many slots the table knows of.
    private(set) var count = 0

    init() {}

    /// `n` slots, each in `leaf`.
    init(repeating leaf: SlotForest.LeafIndex, count n: Int) {
        precondition(n >= 0, "a negative slot count")
        blocks = Array(repeating: leaf.raw, count: (n + Self.blockSize - 1) >> Self.shift)
        count = n
    }

    /// The leaf of slot `i`.
    @inline(__always)
    subscript(i: Int) -> SlotForest.LeafIndex {
        precondition(i >= 0 && i < count, "slot \(i) out of range")
        let b = blocks[i &>> Self.shift]
        if b >= -1 { return SlotForest.LeafIndex(b) }
        return pages[Int(-2 - b) &<< Self.shift | (i & (Self.blockSize - 1))]
    }

    /// Makes room for `n` more slots.
    mutating func reserveCapacity(more n: Int) {
        blocks.reserveCapacity(blocks.count + (n >> Self.shift) + 1)
    }

    /// Appends one slot in `leaf`.
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func append(_ leaf: SlotForest.LeafIndex) {
        let i = count
        if i & (Self.blockSize - 1) == 0 {
            blocks.append(leaf.raw)
            count = i + 1
            return
        }
        count = i + 1
        let b = blocks[i &>> Self.shift]
        if b == leaf.raw { return }
        if b <= -2 {
            pages[Int(-2 - b) &<< Self.shift | (i & (Self.blockSize - 1))] = leaf
            return
        }
        spell(leaf, from: i, count: 1)
    }

    /// Appends `n` slots in `leaf`.
    ///
    /// - Complexity: O(n / 64) amortized, plus O(64) when the last block is spelled out.
    mutating func append(_ leaf: SlotForest.LeafIndex, count n: Int) {
        precondition(n >= 0, "a negative slot count")
        guard n > 0 else { return }
        var i = count
        let end = i + n
        count = end
        while i < end {
            let block = i &>> Self.shift, blockEnd = Swift.min((block + 1) << Self.shift, end)
            if block == blocks.count {
                blocks.append(leaf.raw)
            } else if blocks[block] != leaf.raw {
                spell(leaf, from: i, count: blockEnd - i)
            }
            i = blockEnd
        }
    }

    /// Slot `i` is in `leaf`.
    ///
    /// - Complexity: O(1), or O(64) when its block is spelled out.
    @inline(__always)
    mutating func set(_ leaf: SlotForest.LeafIndex, at i: Int) {
        precondition(i >= 0 && i < count, "slot \(i) out of range")
        let block = i &>> Self.shift
        let b = blocks[block]
        if b == leaf.raw { return }
        if b <= -2 {
            pages[Int(-2 - b) &<< Self.shift | (i & (Self.blockSize - 1))] = leaf
            return
        }
        set(leaf, from: i, count: 1)
    }

    /// Slots `start ..< start + n` are in `leaf`.
    ///
    /// - Complexity: O(n / 64 + 64).
    mutating func set(_ leaf: SlotForest.LeafIndex, from start: Int, count n: Int) {
        precondition(start >= 0 && n >= 0 && start + n <= count, "slots \(start) ..< \(start + n) out of range")
        var i = start
        let end = start + n
        while i < end {
            let block = i &>> Self.shift, blockStart = block << Self.shift
            let blockEnd = Swift.min(blockStart + Self.blockSize, count)
            let stop = Swift.min(end, blockEnd)
            let b = blocks[block]
            if i == blockStart && stop == blockEnd {
                // Every slot the block has: uniform (its page, if any, is free again).
                if b <= -2 { freePages.append(-2 - b) }
                blocks[block] = leaf.raw
            } else if b != leaf.raw {
                spell(leaf, from: i, count: stop - i)
            }
            i = stop
        }
    }

    /// Writes `leaf` for slots `start ..< start + n`, all in one block, spelling the block out.
    private mutating func spell(_ leaf: SlotForest.LeafIndex, from start: Int, count n: Int) {
        let block = start &>> Self.shift
        var b = blocks[block]
        if b >= -1 {
            let page: Int32
            if let free = freePages.popLast() {
                page = free
                write(SlotForest.LeafIndex(b), at: Int(page) << Self.shift, count: Self.blockSize)
            } else {
                page = Int32(pages.count >> Self.shift)
                pages.append(contentsOf: RepeatedLeaf(leaf: SlotForest.LeafIndex(b), left: Self.blockSize))
            }
            b = -2 - page
            blocks[block] = b
        }
        write(leaf, at: Int(-2 - b) << Self.shift | (start & (Self.blockSize - 1)), count: n)
    }

    /// `pages[at ..< at + n] = leaf`, in one pass without a check per element.
    @inline(__always)
    private mutating func write(_ leaf: SlotForest.LeafIndex, at: Int, count n: Int) {
        precondition(at >= 0 && at + n <= pages.count, "a page out of range")
        pages.withUnsafeMutableBufferPointer { (p: inout UnsafeMutableBufferPointer<SlotForest.LeafIndex>) in
            (p.baseAddress! + at).update(repeating: leaf, count: n)
        }
    }

    /// The first slot in no leaf, nil when every slot is in one.
    ///
    /// - Complexity: O(n / 64 + 64 p) for n slots and p spelled-out blocks.
    func firstMissing() -> Int? {
        for (block, b) in blocks.enumerated() {
            let blockStart = block << Self.shift
            if b == -1 { return blockStart }
            if b <= -2 {
                let base = Int(-2 - b) << Self.shift
                for k in 0 ..< Swift.min(Self.blockSize, count - blockStart) where !pages[base + k].exists {
                    return blockStart + k
                }
            }
        }
        return nil
    }

    /// The bytes the table holds (its arrays' capacities).
    var heapBytes: Int {
        blocks.capacity * MemoryLayout<Int32>.stride + pages.capacity * MemoryLayout<SlotForest.LeafIndex>.stride
            + freePages.capacity * MemoryLayout<Int32>.stride
    }
}

/// `left` times `leaf`, as a sequence that an array appends in one loop (`_copyContents`;
/// `repeatElement`'s is the default, one ``next()`` call per element).
private struct RepeatedLeaf: Sequence, IteratorProtocol {
    let leaf: SlotForest.LeafIndex
    var left: Int

    var underestimatedCount: Int { left }

    mutating func next() -> SlotForest.LeafIndex? {
        guard left > 0 else { return nil }
        left -= 1
        return leaf
    }

    /// Writes the elements left (as many as fit) straight into `buffer`; returns the elements not
    /// written and the number written.
    func _copyContents(initializing buffer: UnsafeMutableBufferPointer<SlotForest.LeafIndex>) -> (RepeatedLeaf, Int) {
        let n = Swift.min(left, buffer.count)
        guard n > 0, let base = buffer.baseAddress else { return (self, 0) }
        base.initialize(repeating: leaf, count: n)
        return (RepeatedLeaf(leaf: leaf, left: left - n), n)
    }
}
