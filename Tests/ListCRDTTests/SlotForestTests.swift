import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The counted B-trees on their own, against plain arrays of (slot, visible).
@Suite(.cpuHeavy) struct SlotForestTests {
    /// Inserts at random places and random visibility flips in `trees` trees of one forest, each
    /// checked against an array. Lookups go through the finger (`findVisibleNear`) half the time,
    /// often near the previous one, as editing does; the answers must match a full descent.
    static func run(seed: UInt64, steps: Int, checkEvery: Int, trees: Int = 1) -> [String] {
        var rng = SplitMix64(seed: seed)
        var forest = SlotForest()
        for _ in 0..<trees { _ = forest.addTree() }
        var models: [[(lv: LocalVersion, visible: Bool)]] = Array(repeating: [], count: trees)
        var lastInsert: [LocalVersion] = Array(repeating: .none, count: trees)
        var probe = 0
        for step in 0..<steps {
            let t = rng.below(trees)
            let tree = Int32(t)
            if models[t].isEmpty || rng.chance(70) {
                let lv = LocalVersion(forest.leafOf.count)
                forest.addSlots(1)
                let visible = rng.chance(80)
                // Half the time continue right after the previous slot of this tree, as typing does.
                let at = rng.chance(50) && lastInsert[t].exists
                    ? (models[t].firstIndex { $0.lv == lastInsert[t] }! + 1) : rng.below(models[t].count + 1)
                let after = at == 0 ? nil : forest.locate(models[t][at - 1].lv)
                forest.insert(tree, lv, visible: visible, after: after)
                models[t].insert((lv, visible), at: at)
                lastInsert[t] = lv
            } else {
                let k = rng.below(models[t].count)
                models[t][k].visible.toggle()
                forest.setVisible(models[t][k].lv, models[t][k].visible)
            }
            let visibleCount = forest.visibleCount(tree)
            if visibleCount > 0 && rng.chance(50) {
                probe = rng.chance(70) ? min(max(probe + rng.below(5) - 2, 0), visibleCount - 1) : rng.below(visibleCount)
                let near = forest.findVisibleNear(tree, probe)
                if near != forest.findVisible(tree, probe) { return ["seed \(seed) step \(step): the finger found another slot"] }
            }
            if step % checkEvery == 0 || step == steps - 1 {
                var problems: [String] = []
                for t in 0..<trees {
                    let tree = Int32(t)
                    problems += forest.problems(tree).map { "tree \(t): \($0)" }
                    var order: [(LocalVersion, Bool)] = []
                    forest.forEachRun(tree) { lv, n, v in for k in 0..<Int32(n) { order.append((lv.advanced(by: k), v)) } }
                    if order.map(\.0) != models[t].map(\.lv) || order.map(\.1) != models[t].map(\.visible) {
                        problems.append("tree \(t): order differs from the model at step \(step)")
                    }
                    let visible = models[t].enumerated().filter(\.element.visible)
                    for probe in stride(from: 0, to: visible.count, by: max(1, visible.count / 50)) {
                        let c = forest.findVisible(tree, probe)
                        if forest.lv(at: c) != visible[probe].element.lv { problems.append("tree \(t): findVisible(\(probe)) is wrong") }
                        if forest.position(of: c).all != visible[probe].offset { problems.append("tree \(t): position of visible \(probe) is wrong") }
                    }
                }
                if !problems.isEmpty { return ["seed \(seed) step \(step):"] + problems }
            }
        }
        return []
    }

    @Test("random inserts and visibility flips keep every count, link and position right")
    func randomAgainstArray() {
        for seed in 0..<20 as Range<UInt64> {
            let problems = Self.run(seed: seed, steps: 3_000, checkEvery: 97)
            #expect(problems.isEmpty, "\(problems)")
        }
    }

    /// Regression: entries had no length limit, so the first leaf splits inside a long typed run
    /// moved entries of up to all its slots and rewrote `leafOf` for each (the first edits inside
    /// a document of 1M typed items took up to a millisecond each). Now an entry holds at most
    /// `maxEntryLength` slots and one insert or flip rewrites `leafOf` for at most
    /// `leafCapacity / 2 × maxEntryLength` slots other than its own, whatever the tree's size.
    @Test("regression: one insert or flip inside long runs rewrites leafOf for a bounded number of slots")
    func leafSplitWorkIsBounded() {
        var forest = SlotForest()
        let t = forest.addTree()
        forest.addSlots(1)
        forest.insert(t, LocalVersion(0), visible: true, after: nil)
        // 20,000 slots typed one by one: extend until the entry is full, then a new entry.
        var c = forest.locate(LocalVersion(0))
        for k in 1..<20_000 {
            let lv = LocalVersion(k)
            if let next = forest.extend(c, with: lv) {
                c = next
            } else {
                forest.addSlots(1)
                forest.insert(t, lv, visible: true, after: c)
                c = forest.locate(lv)
            }
        }
        // Then 20,000 more in one insert (a loaded run).
        forest.addSlots(20_000)
        forest.insert(t, LocalVersion(20_000), count: 20_000, visible: true, after: c)
        let built = forest.problems(t)
        #expect(built.isEmpty, "\(built.prefix(3))")
        var entries = 0
        forest.forEachRun(t) { _, n, _ in
            entries += 1
            #expect(n <= SlotForest.maxEntryLength)
        }
        #expect(entries >= 40_000 / SlotForest.maxEntryLength)

        let bound = SlotForest.leafCapacity / 2 * SlotForest.maxEntryLength
        var rng = SplitMix64(seed: 11)
        var worst = 0
        for step in 0..<400 {
            let before = forest.leafOf
            if step % 2 == 0 {
                let lv = LocalVersion(forest.leafOf.count)
                forest.addSlots(1)
                let at = rng.below(forest.visibleCount(t) + 1)
                let after = at == 0 ? nil : forest.findVisible(t, at - 1)
                forest.insert(t, lv, visible: true, after: after)
            } else {
                let lv = forest.lv(at: forest.findVisible(t, rng.below(forest.visibleCount(t))))
                forest.setVisible(lv, false)
            }
            let rewritten = (0 ..< before.count).reduce(0) { $0 + (before[$1] != forest.leafOf[$1] ? 1 : 0) }
            worst = max(worst, rewritten)
        }
        #expect(worst > 0, "no leaf split happened: the test checks nothing")
        #expect(worst <= bound, "one edit rewrote leafOf for \(worst) slots (bound \(bound))")
        let edited = forest.problems(t)
        #expect(edited.isEmpty, "\(edited.prefix(3))")
    }

    /// Regression: splitting a full internal node while a leaf split was pending left the new
    /// leaf's slots counted under the wrong half (found by the automerge-paper trace at edit 10,873).
    @Test("regression: a node split during a leaf split counts the new leaf in the half that holds it")
    func nodeSplitDuringLeafSplit() {
        let problems = Self.run(seed: 7, steps: 60_000, checkEvery: 2_000)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test("several trees in one forest stay apart: counts, links, roots and fingers per tree")
    func severalTrees() {
        for seed in 0..<10 as Range<UInt64> {
            let problems = Self.run(seed: seed, steps: 6_000, checkEvery: 211, trees: 4)
            #expect(problems.isEmpty, "\(problems)")
        }
    }
}
