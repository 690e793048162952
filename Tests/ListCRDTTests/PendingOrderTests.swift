import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The order of trees kept aside during a history load (`PendingOrder`), against plain arrays, and
/// the packed trees built from it (`SlotForest.rebuild(hiding:pending:)`).
@Suite(.cpuHeavy) struct PendingOrderTests {
    /// Runs of new slots placed at random places (often right after the previous run, as typing
    /// does) in several pending trees, each checked against an array; then the trees are built from
    /// the order with random ranges hidden, and checked against the arrays.
    @Test("random runs in several pending trees keep the order of plain arrays, and build the same trees", arguments: 0 ..< 40 as Range<UInt64>)
    func randomRuns(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let trees = 1 + rng.below(3)
        // The room is too small half the time, so that it grows.
        var order = PendingOrder(room: rng.chance(50) ? rng.below(8) : 400)
        var forest = SlotForest()
        for _ in 0 ... trees { _ = forest.addTree() }  // tree 0 stays in the forest, empty
        var models: [[LocalVersion]] = Array(repeating: [], count: trees + 1)
        var last: [LocalVersion] = Array(repeating: .none, count: trees + 1)
        var slots = 0
        for _ in 0 ..< 60 {
            let t = 1 + rng.below(trees)
            if !order.isPending(Int32(t)) { order.begin(Int32(t)) }
            let n = 1 + rng.below(rng.chance(30) ? 200 : 5)
            // Sometimes a slot made for another tree (not kept here) comes in between.
            if rng.chance(20) {
                forest.addSlots(1)
                forest.insert(0, LocalVersion(slots), visible: true, after: nil)
                models[0].insert(LocalVersion(slots), at: 0)
                slots += 1
            }
            let at = rng.chance(50) && last[t].exists ? models[t].firstIndex(of: last[t])! + 1
                                                      : rng.below(models[t].count + 1)
            let after = at == 0 ? LocalVersion.none : models[t][at - 1]
            let following = after.exists ? order.next(after) : order.head(Int32(t))
            #expect(following == (at < models[t].count ? models[t][at] : .none), "seed \(seed)")
            let lv = LocalVersion(slots)
            forest.addSlots(n)
            order.insert(Int32(t), lv, count: n, after: after, following: following)
            models[t].insert(contentsOf: (0 ..< n).map { lv.advanced(by: $0) }, at: at)
            last[t] = lv.advanced(by: n - 1)
            slots += n
        }
        for t in 1 ... trees {
            var listed: [LocalVersion] = []
            order.forEachRun(Int32(t)) { lv, n in
                #expect(n > 0)
                listed += (0 ..< n).map { lv.advanced(by: $0) }
            }
            #expect(listed == models[t], "seed \(seed), tree \(t)")
            #expect(order.count(Int32(t)) == models[t].count)
        }
        // Built with random ranges hidden.
        var hidden: [(first: LocalVersion, count: Int32)] = []
        var isHidden = [Bool](repeating: false, count: slots)
        for _ in 0 ..< rng.below(20) {
            let first = rng.below(slots), count = 1 + rng.below(min(30, slots - first))
            hidden.append((LocalVersion(first), Int32(count)))
            for k in first ..< first + count { isHidden[k] = true }
        }
        forest.rebuild(hiding: hidden, pending: order)
        for t in 0 ... trees {
            #expect(forest.problems(Int32(t)).isEmpty, "seed \(seed), tree \(t): \(forest.problems(Int32(t)))")
            var built: [(LocalVersion, Bool)] = []
            forest.forEachRun(Int32(t)) { lv, n, visible in built += (0 ..< n).map { (lv.advanced(by: $0), visible) } }
            #expect(built.map(\.0) == models[t], "seed \(seed), tree \(t)")
            #expect(built.map(\.1) == models[t].map { !isHidden[$0.int] }, "seed \(seed), tree \(t)")
        }
    }

    @Test("a tree not kept aside is empty in the order: no head, no count")
    func notPending() {
        var order = PendingOrder()
        #expect(!order.isPending(3) && order.head(3) == .none && order.count(3) == 0 && order.isEmpty)
        order.begin(2)
        #expect(order.isPending(2) && !order.isPending(1) && !order.isPending(3) && !order.isEmpty)
        #expect(order.head(2) == .none && order.count(2) == 0)
    }
}
