import Foundation
import Testing
import ListCRDT
@testable import ListSync
import ListSyncTestSupport

/// The stable version from acknowledgements (Docs/Semantics.md §7), and a compaction driven by it.
@Suite struct StabilityTrackerTests {
    let r1 = ReplicaID(1), r2 = ReplicaID(2), r3 = ReplicaID(3)
    func v(_ c: [UInt64: UInt64]) -> VersionVector { VersionVector(Dictionary(uniqueKeysWithValues: c.map { (ReplicaID($0.key), $0.value) })) }

    @Test("the stable version is the pointwise minimum of the senders' acknowledgements")
    func minimum() {
        var t = StabilityTracker()
        #expect(t.stableVersion(holding: v([1: 9])) == nil)   // no sender
        t.acknowledge(r1, version: v([1: 5, 2: 3]))
        t.acknowledge(r2, version: v([1: 4, 2: 7]))
        #expect(t.stableVersion(holding: v([1: 5, 2: 7])) == v([1: 4, 2: 3]))
        t.acknowledge(r2, version: v([1: 2, 2: 7]))            // lower of the others': it holds less now (a re-sync)
        #expect(t.stableVersion(holding: v([1: 5, 2: 7])) == v([1: 2, 2: 3]))
        #expect(t.acknowledged[r2] == v([1: 2, 2: 7]))
        t.acknowledge(r2, version: v([1: 4, 2: 7]))
        // Of its own operations, what it holds now: after a re-sync its refused 6 and 7 are gone.
        t.acknowledge(r2, version: v([1: 4, 2: 5]))
        #expect(t.acknowledged[r2] == v([1: 4, 2: 5]))
        #expect(t.stableVersion(holding: v([1: 5, 2: 5])) == v([1: 4, 2: 3]))
        t.addSender(r3)                                        // acknowledged nothing yet
        #expect(t.stableVersion(holding: v([1: 5, 2: 7])) == v([:]))
    }

    @Test("nothing is stable while this replica lacks an operation a sender had made when it acknowledged")
    func holdsSendersOperations() {
        var t = StabilityTracker()
        t.acknowledge(r1, version: v([1: 5, 2: 3]))
        t.acknowledge(r2, version: v([1: 5, 2: 3]))
        #expect(t.stableVersion(holding: v([1: 4, 2: 3])) == nil)
        #expect(t.stableVersion(holding: v([1: 5, 2: 3])) == v([1: 5, 2: 3]))
        #expect(t.quiescentVersion(holding: v([1: 5, 2: 3])) == v([1: 5, 2: 3]))
        #expect(t.quiescentVersion(holding: v([1: 5, 2: 4])) == nil)   // holds more than is stable
    }

    @Test("a retired sender no longer holds the stable version back, and its acknowledgements are ignored")
    func retire() {
        var t = StabilityTracker()
        t.acknowledge(r1, version: v([1: 5]))
        t.addSender(r2)
        #expect(t.stableVersion(holding: v([1: 5])) == v([:]))
        t.retire(r2)
        #expect(t.stableVersion(holding: v([1: 5])) == v([1: 5]))
        t.acknowledge(r2, version: v([1: 1]))
        #expect(t.stableVersion(holding: v([1: 5])) == v([1: 5]))
    }

    @Test("a hub compacts when every replica acknowledged its version; the replicas converge afterwards")
    func hubCompacts() throws {
        var hub = try ListDocument.make(9, sections: [["a", "b", "c", "d"]])
        var clients = [hub.fork(as: 1), hub.fork(as: 2)]
        var t = StabilityTracker()
        for c in clients { t.acknowledge(c.replica, version: c.version) }
        let op = try clients[0].deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.receive(op)
        #expect(t.quiescentVersion(holding: hub.version) == nil)           // replica 2 has not seen it
        try clients[1].receive(op)
        for c in clients { t.acknowledge(c.replica, version: c.version) }
        let stable = try #require(t.quiescentVersion(holding: hub.version))
        try hub.compact(stable: stable)
        let x = try clients[1].insertItem(at: IndexPath(item: 1, section: 0), value: Data("x".utf8))
        try hub.receive(x)
        try clients[0].receive(x)
        #expect(hub.rows == clients[0].rows && hub.rows == clients[1].rows)
        #expect(hub.flat == ["a", "x", "c", "d"])
    }
}
