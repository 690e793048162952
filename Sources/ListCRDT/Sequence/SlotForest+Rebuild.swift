/// Rebuilding the trees packed with many slots hidden at once (a history load's deletes).
extension SlotForest {
    /// Rebuilds every tree bottom up, packed (as ``appendTree(_:)`` builds a state snapshot's),
    /// with the same trees (same numbers), the same slots in the same order and the same
    /// visibility, except that the slots `first ..< first + count` of each range of `hidden` end
    /// hidden: what ``hideRange(_:count:)`` of each range does (the entries are cut differently,
    /// which nothing outside the forest sees), in one pass over the forest. Fingers are dropped.
    ///
    /// Cheaper than the ranges' ``hideRange(_:count:)`` calls when they are many for the forest's
    /// size: a history load hides the slots that died in its delete runs so, at its end
    /// (``ListDocument/hideGathered(_:)``).
    ///
    /// - Complexity: O(N + e + h) for N slots in e entries and h ranges.
    mutating func rebuild(hiding hidden: [(first: LocalVersion, count: Int32)]) {
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
                // Room for the entries: each range hidden cuts at most two more.
                var old = 0
                var leaf = trees[t].firstLeaf
                while leaf.exists { (old, leaf) = (old + Int(leaves[leaf.int].size), leaves[leaf.int].next) }
                var out: [Entry] = []
                out.reserveCapacity(Swift.min(trees[t].count, old + 2 * hidden.count))
                leaf = trees[t].firstLeaf
                while leaf.exists {
                    let base = leaf.entryBase
                    for i in 0 ..< Int(leaves[leaf.int].size) {
                        let e = entries[base + i]
                        guard e.isVisible else {
                            Self.append(e.lv, count: e.count, visible: false, to: &out)
                            continue
                        }
                        var at = e.lv.int
                        let end = at + e.count
                        while at < end {
                            let hides = bits[at >> 6] >> UInt64(at & 63) & 1 == 1
                            let stop = Self.firstChange(bits, from: at, end: end, set: hides)
                            Self.append(LocalVersion(Int32(at)), count: stop - at, visible: !hides, to: &out)
                            at = stop
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
        leafOf = []
        for source in rebuiltEntries { rebuilt.appendTree(source) }
        self = rebuilt
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
