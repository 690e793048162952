import Testing
@testable import ListCRDT

/// The counted B-tree on its own, against a plain array of (slot, visible).
@Suite struct SlotTreeTests {
    /// Inserts at random places and random visibility flips, checked against an array.
    static func run(seed: UInt64, steps: Int, checkEvery: Int) -> [String] {
        var rng = SplitMix64(seed: seed)
        var tree = SlotTree()
        var leafOf: [Int32] = []
        var model: [(lv: Int32, visible: Bool)] = []
        for step in 0..<steps {
            if model.isEmpty || rng.chance(70) {
                let lv = Int32(leafOf.count)
                leafOf.append(-1)
                let visible = rng.chance(80)
                // Half the time continue right after the previous slot, as typing does.
                let at = rng.chance(50) && lv > 0 ? (model.firstIndex { $0.lv == lv - 1 }! + 1) : rng.below(model.count + 1)
                let after = at == 0 ? nil : tree.locate(model[at - 1].lv, leafOf: leafOf)
                tree.insert(lv, visible: visible, after: after, leafOf: &leafOf)
                model.insert((lv, visible), at: at)
            } else {
                let k = rng.below(model.count)
                model[k].visible.toggle()
                tree.setVisible(model[k].lv, model[k].visible, leafOf: &leafOf)
            }
            if step % checkEvery == 0 || step == steps - 1 {
                var problems = tree.problems(leafOf: leafOf)
                var order: [(Int32, Bool)] = []
                tree.forEachRun { lv, n, v in for k in 0..<Int32(n) { order.append((lv + k, v)) } }
                if order.map(\.0) != model.map(\.lv) || order.map(\.1) != model.map(\.visible) {
                    problems.append("order differs from the model at step \(step)")
                }
                let visible = model.enumerated().filter(\.element.visible)
                for probe in stride(from: 0, to: visible.count, by: max(1, visible.count / 50)) {
                    let c = tree.findVisible(probe)
                    if tree.lv(at: c) != visible[probe].element.lv { problems.append("findVisible(\(probe)) is wrong") }
                    if tree.position(of: c).all != visible[probe].offset { problems.append("position of visible \(probe) is wrong") }
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

    /// Regression: splitting a full internal node while a leaf split was pending left the new
    /// leaf's slots counted under the wrong half (found by the automerge-paper trace at edit 10,873).
    @Test("regression: a node split during a leaf split counts the new leaf in the half that holds it")
    func nodeSplitDuringLeafSplit() {
        let problems = Self.run(seed: 7, steps: 60_000, checkEvery: 2_000)
        #expect(problems.isEmpty, "\(problems)")
    }
}
