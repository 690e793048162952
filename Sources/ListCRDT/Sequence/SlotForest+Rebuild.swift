/// Rebuilding the trees packed with many slots hidden at once (a history load's deletes).
extension SlotForest {
    /// Rebuilds every tree bottom up, packed (as ``appendTree(_:)`` builds a state snapshot's),
    /// with the same trees (same numbers), the same slots in the same order and the same
    /// visibility, except that the slots `first ..< first + count` of each range of `hidden` end
    /// hidden: what ``hideRange(_:count:)`` of each range does (the entries are cut differently,
    /// which nothing outside the forest sees), in one pass over the forest. Fingers are dropped.
    ///
    /// A tree that is pending in `pending` (empty in the forest) gets the slots of its list, in
    /// its order, visible but for the hidden ranges: what inserting them one run at a time, in
    /// the order the list says, would have made (a history load's, ``ListDocument/settle(_:)``).
    ///
    /// Cheaper than the ranges' ``hideRange(_:count:)`` calls when they are many for the forest's
    /// size: a history load hides the slots that died in its delete runs so, at its end
    /// (``ListDocument/settle(_:)``).
    ///
    /// - Complexity: O(N + e + h) for N slots (pending ones included) in e entries and h ranges.
    mutating func rebuild(hiding hidden: [(first: LocalVersion, count: Int32)], pending: PendingOrder = PendingOrder()) {
        // The slots to hide, one bit each.
        var bits = [UInt64](repeating: 0, count: (leafOf.count + 63) / 64)
        bits.withUnsafeMutableBufferPointer { bits in
            for range in hidden {
                precondition(range.first.exists && range.count > 0 && range.first.int + Int(range.count) <= leafOf.count,
                             "slots out of range")
                var i = range.first.int
                let end = i + Int(range.count)
                while i < end {
                    let k = Swift.min(64 - i & 63, end - i)
                    bits[i >> 6] |= (k == 64 ? ~0 : (1 << UInt64(k)) &- 1) << UInt64(i & 63)
                    i += k
                }
            }
        }
        // Every tree's entries in order, visible ones cut where the bits say, neighbours that
        // continue each other merged.
        var rebuiltEntries: [[Entry]] = []
        rebuiltEntries.reserveCapacity(trees.count)
        bits.withUnsafeBufferPointer { bits in
            for t in trees.indices {
                var out: [Entry] = []
                if pending.isPending(Int32(t)) {
                    // Its slots are in the pending lists only, all visible until the bits say.
                    precondition(trees[t].count == 0, "tree \(t) is pending and holds slots")
                    out.reserveCapacity(Swift.min(pending.count(Int32(t)), pending.count(Int32(t)) / 16 + 2 * hidden.count + 16))
                    pending.forEachRun(Int32(t)) { lv, n in Self.appendVisible(lv, count: n, hiding: bits, to: &out) }
                    rebuiltEntries.append(out)
                    continue
                }
                // Room for the entries: each range hidden cuts at most two more.
                var old = 0
                var leaf = trees[t].firstLeaf
                while leaf.exists { (old, leaf) = (old + Int(leaves[leaf.int].size), leaves[leaf.int].next) }
                out.reserveCapacity(Swift.min(trees[t].count, old + 2 * hidden.count))
                leaf = trees[t].firstLeaf
                while leaf.exists {
                    let base = leaf.entryBase
                    for i in 0 ..< Int(leaves[leaf.int].size) {
                        let e = entries[base + i]
                        if e.isVisible {
                            Self.appendVisible(e.lv, count: e.count, hiding: bits, to: &out)
                        } else {
                            Self.append(e.lv, count: e.count, visible: false, to: &out)
                        }
                    }
                    leaf = leaves[leaf.int].next
                }
                rebuiltEntries.append(out)
            }
        }
        // Every slot is in a tree, so the packed trees write every placed slot's leaf anew: the
        // table is reused as it is.
        var rebuilt = SlotForest()
        rebuilt.leafOf = leafOf
        leafOf = LeafTable()
        for source in rebuiltEntries { rebuilt.appendTree(source) }
        self = rebuilt
    }

    /// Appends the visible slots `lv ..< lv + n` to `out`, hidden where `bits` says.
    @inline(__always)
    private static func appendVisible(_ lv: LocalVersion, count n: Int, hiding bits: UnsafeBufferPointer<UInt64>,
                                      to out: inout [Entry]) {
        var at = lv.int
        let end = at + n
        while at < end {
            let hides = bits[at >> 6] >> UInt64(at & 63) & 1 == 1
            let stop = firstChange(bits, from: at, end: end, set: hides)
            append(LocalVersion(Int32(at)), count: stop - at, visible: !hides, to: &out)
            at = stop
        }
    }

    /// The first position from `at` on (before `end`) whose bit is not `set`, else `end`.
    @inline(__always)
    private static func firstChange(_ bits: UnsafeBufferPointer<UInt64>, from at: Int, end: Int, set: Bool) -> Int {
        var i = at
        while i < end {
            let word = set ? ~bits[i >> 6] : bits[i >> 6]
            let rest = word >> UInt64(i & 63)
            if rest != 0 { return Swift.min(end, i + rest.trailingZeroBitCount) }
            i = (i | 63) + 1
        }
        return end
    }

    /// Appends slots `lv ..< lv + n` to `out` with the given visibility: extending its last
    /// entry when they continue it, in entries of at most ``maxEntryLength`` slots.
    @inline(__always)
    private static func append(_ lv: LocalVersion, count n: Int, visible: Bool, to out: inout [Entry]) {
        var lv = lv, n = n
        if let last = out.last, last.isVisible == visible, last.lv.advanced(by: last.count) == lv,
           last.count < maxEntryLength {
            let k = Swift.min(n, maxEntryLength - last.count)
            out[out.count - 1] = Entry(lv: last.lv, count: last.count + k, visible: visible)
            lv = lv.advanced(by: k)
            n -= k
        }
        while n > 0 {
            let k = Swift.min(n, maxEntryLength)
            out.append(Entry(lv: lv, count: k, visible: visible))
            lv = lv.advanced(by: k)
            n -= k
        }
    }
}
