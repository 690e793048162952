import Foundation

/// The trees of a state snapshot (Docs/WireFormat.md §5.2): every sequence's order, checked slot
/// run by slot run, with visibility derived, built bottom up (``SlotForest/appendTree(_:)``).
extension StateSnapshotDecoder {
    // MARK: Trees

    /// The entries of tree `t` from its runs of slots, cut where the visibility changes and every
    /// ``SlotForest/maxEntryLength`` slots. Each run must lie in the tree of its sequence (checked
    /// per slot run of `slots`, which share one sequence); returns the first slot that does not as
    /// `bad` (else ``LocalVersion/none``).
    static func entries(of runs: ArraySlice<(start: LocalVersion, count: Int32)>, tree t: Int32, slots: SlotStore,
                                visible: [Bool]) -> ([SlotForest.Entry], bad: LocalVersion) {
        var entries: [SlotForest.Entry] = []
        entries.reserveCapacity(runs.count)   // at least one entry per run
        for run in runs {
            var lv = run.start
            let end = run.start.advanced(by: run.count)
            while lv < end {
                let slotRun = slots.run(of: lv)
                if slotRun.sequence.tree != t { return (entries, lv) }
                lv = min(end, slotRun.lv.advanced(by: slotRun.count))
            }
        }
        visible.withUnsafeBufferPointer { visible in
            for run in runs {
                var lv = run.start
                let end = run.start.advanced(by: run.count)
                while lv < end {
                    let shows = visible[lv.int]
                    var stop = lv.advanced(by: 1)
                    let limit = min(end, lv.advanced(by: SlotForest.maxEntryLength))
                    // Eight flags at a time while they all equal `shows`.
                    let same: UInt64 = shows ? 0x0101_0101_0101_0101 : 0
                    let raw = UnsafeRawPointer(visible.baseAddress!)
                    while stop.advanced(by: 8) <= limit && raw.loadUnaligned(fromByteOffset: stop.int, as: UInt64.self) == same {
                        stop = stop.advanced(by: 8)
                    }
                    while stop < limit && visible[stop.int] == shows { stop = stop.advanced(by: 1) }
                    entries.append(SlotForest.Entry(lv: lv, count: Int(stop.distance(from: lv)), visible: shows))
                    lv = stop
                }
            }
        }
        return (entries, .none)
    }

    /// Every tree's order; each slot must appear once, in the tree of its sequence. Visibility is
    /// derived: an item's winning slot shows while it is alive, a section's while the section is
    /// visible (§3.5), no other slot.
    mutating func readTrees() throws(WireError) {
        let slotCount = doc.slots.count
        // The items' visibility came with their rows (``writeItemRows(deletedAtInsert:)``).
        for s in doc.sections.indices {
            let shown = doc.sections.isAlive(s) || itemsShown[s.int] > 0
            doc.sectionShown[s.int] = shown
            if shown { visible[doc.sections.rows[s.int].winner.int] = true }
        }

        // Every tree's runs of slots, checked against the bounds; together they must hold as many
        // slots as there are, and (below) leave none out, so each slot is in exactly one.
        var runs: [(start: LocalVersion, count: Int32)] = []
        var treeEnds: [Int] = []
        treeEnds.reserveCapacity(doc.sections.count + 1)
        var previousEnd: Int64 = 0
        var placed = 0
        let last = Int64(slotCount) - 1
        for _ in 0 ... doc.sections.count {
            let n = try r.count(minBytes: 2)
            runs.reserveCapacity(runs.count + n)
            for _ in 0 ..< n {
                let at = r.offset
                let start = try offsetValue(from: previousEnd, lowest: 0, highest: max(0, last))
                let count = try bounded(Int(last - start + 1))
                guard count >= 1, last >= 0, placed + count <= slotCount else {
                    throw .invalidValue("empty run of slots, or more slots than there are", offset: at)
                }
                runs.append((LocalVersion(Int32(start)), Int32(count)))
                placed += count
                previousEnd = start + Int64(count)
            }
            treeEnds.append(runs.count)
        }
        guard placed == slotCount else {
            throw .invalidValue("the trees hold \(placed) of \(slotCount) slots", offset: r.offset)
        }

        var forest = SlotForest()
        forest.leafOf = LeafTable(repeating: .none, count: slotCount)
        var firstRun = 0
        for (t, end) in treeEnds.enumerated() {
            let (entries, bad) = Self.entries(of: runs[firstRun ..< end], tree: Int32(t), slots: doc.slots, visible: visible)
            if bad.exists { throw .invalidValue("slot \(bad) is in the tree of another sequence", offset: r.offset) }
            forest.appendTree(entries)
            firstRun = end
        }
        // As many slots placed as there are, and none left out: none placed twice.
        // By blocks of 64 slots (a block all in one leaf is one number).
        if let missing = forest.leafOf.firstMissing() {
            throw .invalidValue("slot \(missing) is in no tree (another is in two)", offset: r.offset)
        }
        doc.forest = forest
    }
}
