import Testing
@testable import ListCRDT
import ListSyncRandom

/// The leaf of every slot by blocks of 64 (`LeafTable`, `SlotForest.leafOf`), against an array
/// of one leaf per slot.
@Suite struct LeafTableTests {
    typealias Leaf = SlotForest.LeafIndex

    @Test("appends and writes of single slots and of ranges, across and inside blocks, read back as an array of one leaf per slot does")
    func matchesAnArray() {
        for seed in UInt64(1) ... 40 {
            var rng = SplitMix64(seed: seed)
            var table = LeafTable(), model: [Leaf] = []
            // Few leaves, so that blocks often turn uniform again and pages are reused.
            func leaf() -> Leaf { Leaf(Int32(rng.below(5)) - 1) }
            for _ in 0 ..< 600 {
                switch rng.below(5) {
                case 0:
                    let l = leaf()
                    table.append(l)
                    model.append(l)
                case 1:
                    let l = leaf(), n = rng.below(200)
                    table.append(l, count: n)
                    model += Array(repeating: l, count: n)
                case 2 where !model.isEmpty:
                    let l = leaf(), i = rng.below(model.count)
                    table.set(l, at: i)
                    model[i] = l
                case 3 where !model.isEmpty:
                    let l = leaf(), i = rng.below(model.count), n = rng.below(model.count - i + 1)
                    table.set(l, from: i, count: n)
                    for k in i ..< i + n { model[k] = l }
                default:
                    break
                }
                #expect(table.count == model.count)
            }
            for i in model.indices where table[i] != model[i] {
                Issue.record("seed \(seed): slot \(i) reads \(table[i]), the array \(model[i])")
                break
            }
            #expect(table.firstMissing() == model.firstIndex { !$0.exists }, "seed \(seed)")
        }
    }

    @Test("a block whose slots are all in one leaf costs one number: a long run takes about 4 bytes per 64 slots, not per slot")
    func uniformBlocksAreSmall() {
        var table = LeafTable()
        table.reserveCapacity(more: 64_000)
        for k in 0 ..< 1_000 { table.append(Leaf(Int32(k)), count: 64) }
        #expect(table.heapBytes < 64_000)   // an array of one leaf per slot: 256,000
        #expect(table.firstMissing() == nil)
        // One slot of another leaf spells its block out (64 numbers), and only that block.
        table.set(Leaf(7), at: 64 * 500 + 3)
        #expect(table[64 * 500 + 3] == Leaf(7) && table[64 * 500 + 2] == Leaf(500) && table[64 * 501] == Leaf(501))
        #expect(table.heapBytes < 64_000 + 64 * 4 * 2)
        // Written whole again, the block is uniform (its page free for the next).
        table.set(Leaf(9), from: 64 * 500, count: 64)
        #expect((0 ..< 64).allSatisfy { table[64 * 500 + $0] == Leaf(9) })
        table.append(.none)
        #expect(table.firstMissing() == 64_000)
    }
}
