import Testing
@testable import ListCRDT
import ListSyncSimulation

@Suite("Frontier: a sorted set of ids")
struct FrontierTests {
    @Test("random inserts and removes match a sorted-set model: ids, count, contains, equality", arguments: 0..<20)
    func againstModel(seed: UInt64) {
        var rng = SplitMix64(seed: 900 + seed)
        var frontier = Frontier()
        var model = Set<OpID>()
        for step in 0..<400 {
            let id = OpID(counter: UInt64(rng.below(12)), replica: ReplicaID(UInt64(rng.below(6))))
            if rng.below(3) == 0 {
                frontier.remove(id)
                model.remove(id)
            } else {
                frontier.insert(id)
                if id != .none { model.insert(id) }
            }
            #expect(frontier.ids == model.sorted(), "seed \(seed) step \(step)")
            #expect(frontier.count == model.count && frontier.isEmpty == model.isEmpty)
            #expect(frontier.contains(id) == model.contains(id))
            // The storage is canonical: the same set built in another order is equal and hashes alike.
            let rebuilt = Frontier(model.shuffled(using: &rng))
            #expect(rebuilt == frontier && rebuilt.hashValue == frontier.hashValue)
        }
    }
}
