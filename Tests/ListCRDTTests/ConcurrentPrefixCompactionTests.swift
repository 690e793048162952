import Foundation
import ListSyncTestSupport
import Testing
@_spi(Testing) @testable import ListCRDT

/// Compaction at a version with concurrent operations outside it (Docs/Semantics.md §7,
/// "Compacting under a chain of concurrent edits"): the hub compacts at what every replica has
/// seen, though some operations it holds outside were made before their authors saw all of it,
/// and keeps what those name (``ListDocument/compact(stable:keepingConcurrent:)``).
@Suite struct ConcurrentPrefixCompactionTests {
    @Test("a hub compacted at the replicas' minimum while they keep editing values, fields and text (60 seeds, random delivery), keeping what the concurrent operations name: it shows what it showed, its snapshot loads, and at the end it shows what a never-compacted replica shows")
    func keepingConcurrentEqualsNeverCompacted() {
        var total = PrefixCompactionTests.Outcome()
        for seed in UInt64(1)...60 {
            let o = PrefixCompactionTests.run(seed: seed, keepingConcurrent: true)
            if let p = o.problem { Issue.record("seed \(seed): \(p)"); continue }
            total.compactions += o.compactions
            total.prefixCompactions += o.prefixCompactions
            total.concurrent += o.concurrent
            total.dropped += o.dropped
        }
        print("compaction keeping concurrent operations: \(total.compactions) compactions, \(total.prefixCompactions) at a prefix, \(total.concurrent) with concurrent operations outside, \(total.dropped) operations dropped")
        #expect(total.concurrent >= 40, "compacted with concurrent operations outside")
    }

    @Test("test power: a compaction that admits the concurrent operations but keeps nothing they name (keepsNothingForConcurrent) fails seeds of the same run")
    func keepingNothingFails() {
        var failed = 0
        for seed in UInt64(1)...60 where PrefixCompactionTests.run(seed: seed, keepingConcurrent: true, variant: .keepsNothingForConcurrent).problem != nil {
            failed += 1
        }
        print("compaction keeping nothing for concurrent operations: \(failed) of 60 seeds failed")
        #expect(failed >= 5)
    }

    @Test("a chain of concurrent edits (two replicas, each editing before it takes the other's edit of two rounds before): no stable prefix past the start, but the hub compacts at everything but the last edit, round after round, and shows what both replicas show at the end")
    func chainOfConcurrentEdits() throws {
        let base = try ListDocument.make(9, sections: [["x"]])
        var a = base.fork(as: 1), b = base.fork(as: 2), hub = base.fork(as: 50)
        var made: [[ListOperation]] = []
        var compactions = 0
        for round in 0..<120 {
            let x = round % 3 == 2 ? try a.deleteItem(at: IndexPath(item: 0, section: 0))
                : try a.insertItem(atRow: 0, inSection: 0, value: Data("a\(round)".utf8))
            let y = try b.insertItem(atRow: 1, inSection: 0, value: Data("b\(round)".utf8))
            #expect(hub.receive([x, y]).refused.isEmpty)
            made.append([x, y])
            if round >= 2 {
                #expect(a.receive([made[round - 2][1]]).refused.isEmpty)
                #expect(b.receive([made[round - 2][0]]).refused.isEmpty)
            }
            // What both have seen: each one's version met.
            let stable = a.version.meet(b.version)
            #expect(hub.compactablePrefix(within: stable).map { base.version.includes($0) } ?? true, "round \(round): the chain leaves no stable prefix past the start")
            if round % 10 == 9, let c = hub.concurrentPrefix(within: stable) {
                let shown = hub.snapshot()
                try hub.compact(stable: c, keepingConcurrent: true)
                try hub.checkInvariants()
                #expect(hub.snapshot() == shown)
                #expect(hub.historyFloor == c)
                compactions += 1
            }
        }
        for round in made.indices.suffix(2) {
            a.receive([made[round][1]])
            b.receive([made[round][0]])
        }
        #expect(compactions == 12)
        #expect(a.snapshot() == b.snapshot() && hub.snapshot() == a.snapshot())
        #expect(hub.operationCount < 60, "history before the last floor dropped: \(hub.operationCount) operations")
        let joined = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(70))
        #expect(joined.snapshot() == a.snapshot())
    }

    @Test("an insert next to what another replica deleted, made before it saw the delete: the hub compacts at the deletes keeping the slots the insert names, and shows what both replicas show")
    func insertBesideConcurrentDelete() throws {
        var a = ListDocument(replica: ReplicaID(1)), b = ListDocument(replica: ReplicaID(2))
        var hub = ListDocument(replica: ReplicaID(50))
        var ops: [ListOperation] = [try a.insertSection(at: 0, string: "s")]
        for k in 0..<6 { ops.append(try a.insertItem(at: IndexPath(item: k, section: 0), string: "i\(k)")) }
        b.receive(ops); hub.receive(ops)
        let del = try a.deleteItem(at: IndexPath(item: 2, section: 0))
        let del2 = try a.deleteItem(at: IndexPath(item: 2, section: 0))
        let ins = try b.insertItem(at: IndexPath(item: 3, section: 0), string: "b")   // between the two a deletes
        let set = try b.setValue(Data("again".utf8), forItem: try b.itemIDs(inSection: 0)[2])   // of one a deletes
        hub.receive([del, del2, ins, set])
        var short = hub.version
        short[ReplicaID(2)] = 0
        #expect(hub.compactablePrefix(within: short) != short)
        let c = try #require(hub.concurrentPrefix(within: short))
        #expect(c == short)
        #expect(Set(hub.concurrentOperations(outside: c).map(\.id)) == [ins.id, set.id])
        try hub.compact(stable: c, keepingConcurrent: true)
        try hub.checkInvariants()
        b.receive([del, del2]); a.receive([ins, set])
        #expect(hub.snapshot() == a.snapshot() && a.snapshot() == b.snapshot())
        // An edit after the floor applies; one made before it, by a replica that did not see it, is refused.
        let after = try a.insertItem(at: IndexPath(item: 0, section: 0), string: "late")
        try hub.receive(after)
        var d = ListDocument(replica: ReplicaID(4))
        d.receive(Array(ops.prefix(3)))
        let stale = try d.insertItem(at: IndexPath(item: 0, section: 0), string: "d")
        let before = hub.encodedSnapshot()
        #expect(throws: (any Error).self) { try hub.receive(stale) }
        #expect(hub.encodedSnapshot() == before)
        #expect(before[4] == ListDocument.compactedConcurrentSnapshotFormatVersion)
        let loaded = try ListDocument(snapshot: before, replica: ReplicaID(60))
        #expect(loaded.snapshot() == hub.snapshot())
        // Cut at any byte: a typed error, nothing loaded.
        for cut in 0 ..< before.count {
            #expect(throws: WireError.self, "cut at \(cut)") { try ListDocument(snapshot: Array(before.prefix(cut)), replica: ReplicaID(61)) }
        }
    }
}
