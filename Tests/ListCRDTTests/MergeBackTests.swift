import Foundation
import Testing
import ListCRDT
import ListSyncTestSupport

/// A daemon's copy left out of a peer's floor is merged back onto the peer's compacted copy
/// (`ListDocument.mergeBack`, Docs/Semantics.md §7, "A copy left out of a peer's floor"): what
/// its clients did before the floor is made again as the daemon's, what came after it is kept as
/// it is, what came relayed is left to the daemon that took it, and the peer takes the result.
@Suite struct MergeBackTests {
    /// The peer `hub` (replica 1) deleted "b" and "c", inserted "z" and compacted; the parted
    /// daemon (replica 9) had seen only the start, and took meanwhile the edits of its client 3
    /// (`own`) and, relayed, of replica 4 (`relayed`).
    static func scenario(own: (inout ListDocument) throws -> Void, relayed: (inout ListDocument) throws -> Void = { _ in })
        throws -> (hub: ListDocument, parted: ListDocument) {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var parted = hub.fork(as: 9)
        var client = hub.fork(as: 3), other = hub.fork(as: 4)
        try own(&client)
        try relayed(&other)
        #expect(parted.receive(client.operations(since: parted.version)).refused.isEmpty)
        #expect(parted.receive(other.operations(since: parted.version)).refused.isEmpty)
        for _ in 0..<2 { _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0)) }
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z"))
        try hub.compact(stable: hub.version)
        var probe = hub
        #expect(!probe.receive(parted.operations(since: hub.version)).refused.isEmpty, "the hub refuses the parted copy's operations")
        return (hub, parted)
    }

    @Test("a client's edits made before the peer's floor are made again as the daemon's; the peer takes them and both show the same")
    func ownEditsMadeAgain() throws {
        let (hub0, parted) = try Self.scenario(own: { doc in
            _ = try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("after a"))
            _ = try doc.setValue(Data("E"), forItem: doc.snapshot().itemIdentifier(at: IndexPath(item: 5, section: 0))!)
            _ = try doc.moveItem(from: IndexPath(item: 4, section: 0), to: IndexPath(item: 0, section: 0))   // "d" first
        })
        var hub = hub0
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.kept.isEmpty && merge.dropped.isEmpty)
        #expect(merge.parted.count == 3 && merge.parted.allSatisfy { $0.id.replica == ReplicaID(3) })
        #expect(!merge.made.isEmpty && merge.made.allSatisfy { $0.id.replica == ReplicaID(9) })
        #expect(merge.made.allSatisfy { !parted.version.contains($0.id) }, "new ids, never one the parted copy used")
        // The hub's deletes and insert stay; every edit of the client is there.
        #expect(merged.flat == ["d", "z", "a", "after a", "E"])
        try merged.checkInvariants()
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows)
    }

    @Test("operations that came relayed are left to the daemon that took them; with the same edits made again there, nothing shows twice")
    func relayedLeftToTheirDaemon() throws {
        let (hub0, parted) = try Self.scenario(own: { doc in
            _ = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("own"))
        }, relayed: { doc in
            _ = try doc.insertItem(at: IndexPath(item: 5, section: 0), value: Data("relayed"))
        })
        var merged = try ListDocument(snapshot: hub0.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { $0 != ReplicaID(4) })
        let merge = try #require(mergeResult)
        #expect(merge.dropped.map(\.id.replica) == [ReplicaID(4)])
        #expect(merged.flat == ["own", "z", "a", "d", "e"])
        // Replica 4's daemon (8), which holds the same copy, merges back too: it makes "relayed"
        // again, and leaves replica 3's edit to daemon 9.
        var other8 = try ListDocument(snapshot: hub0.encodedSnapshot(), replica: ReplicaID(8))
        let merge8Result = other8.mergeBack(from: parted, remakes: { $0 == ReplicaID(4) })
        let merge8 = try #require(merge8Result)
        #expect(merge8.made.count >= 1 && merge8.dropped.map(\.id.replica) == [ReplicaID(3)])
        #expect(merged.receive(merge8.made).refused.isEmpty && other8.receive(merge.made).refused.isEmpty)
        #expect(merged.rows == other8.rows)
        #expect(merged.flat.filter { $0 == "relayed" }.count == 1 && merged.flat.filter { $0 == "own" }.count == 1)
    }

    @Test("operations made after the peer's floor are kept as they are, ids kept")
    func afterTheFloorKept() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c"]])
        _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.compact(stable: hub.version)
        // The parted copy took the floor, an edit made after it and one made before.
        let parted = try ListDocument.make(1, sections: [["a", "b", "c"]]).fork(as: 9)
        var early = parted.fork(as: 3)
        _ = try early.insertItem(at: IndexPath(item: 0, section: 0), value: Data("early"))
        var late = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(5))
        _ = try late.insertItem(at: IndexPath(item: 2, section: 0), value: Data("late"))
        var hubUncompacted = try ListDocument.make(1, sections: [["a", "b", "c"]])
        _ = try hubUncompacted.deleteItem(at: IndexPath(item: 1, section: 0))
        var full = parted
        #expect(full.receive(hubUncompacted.operations(since: full.version)).refused.isEmpty)
        #expect(full.receive(early.operations(since: full.version)).refused.isEmpty)
        #expect(full.receive(late.operations(since: hub.version)).refused.isEmpty)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: full, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.kept.map(\.id.replica) == [ReplicaID(5)], "the edit made after the floor is taken with its id")
        #expect(merge.parted.map(\.id.replica) == [ReplicaID(3)])
        #expect(merged.flat == ["early", "a", "c", "late"])
        #expect(hub.receive(merge.kept + merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows)
    }

    @Test("a copy whose history does not go back to what the snapshot holds is not merged: nil, nothing changes")
    func historyTooShort() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b"]])
        var parted = hub.fork(as: 9)
        _ = try parted.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
        try parted.compact(stable: parted.version)
        _ = try hub.deleteItem(at: IndexPath(item: 0, section: 0))
        try hub.compact(stable: hub.version)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let state = merged.encodedState()
        #expect(merged.mergeBack(from: parted, remakes: { _ in true }) == nil)
        #expect(merged.encodedState() == state)
    }
}
