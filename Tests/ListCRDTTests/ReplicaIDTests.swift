import Foundation
import Testing
import ListCRDT
import ListSyncSimulation

/// `ReplicaID.random(using:)` and `ReplicaID.random()`: deterministic from a seed, distinct, never
/// the reserved 0 (the replica of `OpID.none`).
@Suite struct ReplicaIDTests {
    /// A generator that replays fixed values (then counts up from 1), to force the reserved value.
    struct Scripted: RandomNumberGenerator {
        var values: [UInt64]
        var fallback: UInt64 = 0
        mutating func next() -> UInt64 {
            if !values.isEmpty { return values.removeFirst() }
            fallback += 1
            return fallback
        }
    }

    @Test("a seeded generator gives the same ids on every run, one next() per id")
    func seededIsDeterministic() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), raw = SplitMix64(seed: 42)
        let first = (0..<100).map { _ in ReplicaID.random(using: &a) }
        let second = (0..<100).map { _ in ReplicaID.random(using: &b) }
        #expect(first == second)
        #expect(first.map(\.rawValue) == (0..<100).map { _ in raw.next() })
        var other = SplitMix64(seed: 43)
        #expect(ReplicaID.random(using: &other) != first[0])
    }

    @Test("ids from one seeded generator are distinct")
    func seededIdsAreDistinct() {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<10_000).map { _ in ReplicaID.random(using: &rng) }
        #expect(Set(ids).count == ids.count)
    }

    @Test("the reserved 0 is never returned: it is redrawn")
    func neverReserved() {
        #expect(OpID.none.replica.rawValue == 0)
        var zeros = Scripted(values: [0, 0, 0, 5])
        #expect(ReplicaID.random(using: &zeros) == ReplicaID(5))
        var rng = SplitMix64(seed: 1)
        for _ in 0..<10_000 { #expect(ReplicaID.random(using: &rng) != OpID.none.replica) }
        var system = SystemRandomNumberGenerator()
        for _ in 0..<1_000 { #expect(ReplicaID.random(using: &system).rawValue != 0) }
    }

    @Test("random() draws from the system generator: never reserved, distinct")
    func systemRandom() {
        let ids = (0..<1_000).map { _ in ReplicaID.random() }
        #expect(!ids.contains(OpID.none.replica))
        #expect(Set(ids).count == ids.count)
    }

    @Test("a random replica edits and syncs like any other")
    func randomReplicaWorks() throws {
        var rng = SplitMix64(seed: 3)
        var a = ListDocument(replica: .random(using: &rng)), b = ListDocument(replica: .random(using: &rng))
        #expect(a.replica != b.replica)
        try a.insertSection(at: 0, value: Data("S"))
        try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
        b.merge(a)
        try b.insertItem(at: IndexPath(item: 0, section: 0), value: Data("y"))
        a.merge(b)
        #expect(a.rows == b.rows && a.rows == [["y", "x"]])
    }
}
