import Testing
@testable import ListCRDT
import ListSyncSimulation

/// `SlotStore.firstRun(after:in:)`, the search behind `lv(of:)`: the same answer as a scan, for
/// every counter around every run of lists of many shapes (short, evenly spread, clustered, with
/// huge gaps), and `lv(of:)` through it agrees with a plain map of ids.
@Suite struct SlotStoreLookupTests {
    /// Id runs starting at `counters` (sorted, distinct), each of `count` ids.
    func runs(_ counters: [UInt64]) -> [SlotStore.IDRun] {
        counters.enumerated().map { SlotStore.IDRun(counter: $0.element, lv: LocalVersion(Int32($0.offset)), count: 1) }
    }

    func check(_ list: [SlotStore.IDRun], sourceLocation: SourceLocation = #_sourceLocation) {
        list.withUnsafeBufferPointer { buffer in
            var probes: [UInt64] = [0, 1, UInt64.max / 2, OpID.maxCounter]
            for r in list { probes += [r.counter &- 1, r.counter, r.counter &+ 1] }
            for c in probes {
                let expected = buffer.firstIndex { $0.counter > c } ?? buffer.count  // a plain scan
                let found = SlotStore.firstRun(after: c, in: buffer)
                #expect(found == expected, "counter \(c): \(found) against \(expected)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("the guessed search finds what a scan finds, for lists of every shape")
    func sameAsScan() {
        var rng = SplitMix64(seed: 29)
        check(runs([]))
        for n in [1, 2, 8, 9, 10, 17, 100, 1_000] {
            check(runs((0 ..< n).map { UInt64($0 * 3 + 1) }))                    // evenly spread
        }
        for _ in 0 ..< 40 {
            let n = Int.random(in: 9 ... 400, using: &rng)
            var c: UInt64 = UInt64.random(in: 1 ... 5, using: &rng)
            var counters: [UInt64] = []
            for _ in 0 ..< n {
                counters.append(c)
                // Mostly small steps, now and then a huge gap (a replica silent for long).
                c += Bool.random(using: &rng) && Int.random(in: 0 ..< 20, using: &rng) == 0
                    ? UInt64.random(in: 1_000 ... 1_000_000_000, using: &rng) : UInt64.random(in: 1 ... 4, using: &rng)
            }
            check(runs(counters))
        }
    }

    @Test("lv(of:) finds every slot of a store built from scattered runs, and nothing else")
    func lookups() {
        var rng = SplitMix64(seed: 7)
        var store = SlotStore()
        var expected: [OpID: LocalVersion] = [:]
        let r = ReplicaID(5)
        var counter: UInt64 = 1
        for _ in 0 ..< 300 {
            counter += UInt64.random(in: 1 ... 30, using: &rng)   // ids other operations used
            let n = Int.random(in: 1 ... 6, using: &rng)
            let id = OpID(counter: counter, replica: r)
            let lv = store.appendRun(id: id, count: n, left: .none, right: .none, sequence: .sections, entity: EntityIndex(0))
            for k in 0 ..< n { expected[id.advanced(by: k)] = lv.advanced(by: k) }
            counter += UInt64(n - 1)
        }
        for c in 0 ... counter + 2 {
            let id = OpID(counter: c, replica: r)
            #expect(store.lv(of: id) == expected[id], "id \(id)")
        }
    }
}
