import Foundation
import Testing
import ListCRDT
import ListSyncTestSupport

/// A replica left behind a compaction makes its unsent edits again on the compacted replica's
/// snapshot (`ListDocument.remake`, Docs/Semantics.md §7, "A replica that comes back"): what it
/// did is kept, what the others did is kept, and the result converges once sent.
@Suite struct RemakeTests {
    /// `hub` compacted after deleting "b" and "c", and `offline`, which had seen only the start
    /// and made `edits` meanwhile.
    static func scenario(_ edits: (inout ListDocument) throws -> Void) throws
        -> (hub: ListDocument, offline: ListDocument, unsent: [ListOperation]) {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var offline = hub.fork(as: 3)
        let start = offline.operationCount
        try edits(&offline)
        let unsent = try offline.operations(from: start)
        for _ in 0..<2 { _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0)) }
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z"))
        try hub.compact(stable: hub.version)
        var probe = hub
        let state = hub.encodedState()
        #expect(probe.receive([unsent[0]]).refused.count == 1, "the first unsent edit is refused as it is")
        #expect(probe.encodedState() == state)
        return (hub, offline, unsent)
    }

    @Test("inserts, a value, a delete and a move made offline are made again on the snapshot, after the same neighbours")
    func itemEdits() throws {
        let (hub0, offline, unsent) = try Self.scenario { doc in
            _ = try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("after a"))
            _ = try doc.insertItem(at: IndexPath(item: 5, section: 0), value: Data("after d"))
            _ = try doc.setValue(Data("E"), forItem: doc.snapshot().itemIdentifier(at: IndexPath(item: 6, section: 0))!)
            _ = try doc.deleteItem(at: IndexPath(item: 0, section: 0))   // "a"
            _ = try doc.moveItem(from: IndexPath(item: 3, section: 0), to: IndexPath(item: 0, section: 0))   // "d" first
        }
        #expect(offline.flat == ["d", "after a", "b", "c", "after d", "E"])
        var hub = hub0
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake(unsent, from: offline)
        #expect(!made.isEmpty && made.allSatisfy { $0.id.replica == ReplicaID(3) })
        // "b" and "c" stay deleted (the hub's), "z" stays (the hub's), every offline edit is made.
        #expect(copy.flat == ["d", "z", "after a", "after d", "E"])
        try copy.checkInvariants()
        // The hub takes the remade edits: both show the same.
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.rows == copy.rows)
    }

    @Test("an item the returning replica deleted, that another replica's move it had not seen brought back, and that it then moved and tagged, is made again shown, with its field; made again as the old remake did, the delete would take it")
    func deletedThenBroughtBack() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b"]])
        var offline = hub.fork(as: 3)
        let start = offline.operationCount
        let insert = try offline.insertItem(at: IndexPath(item: 2, section: 0), value: Data("mine"))
        let x = ItemID(insert.id)
        // Another replica moves it while the returning one deletes it: the move wins there.
        var other = hub.fork(as: 5)
        #expect(other.receive([insert]).refused.isEmpty)
        let move = try #require(try other.moveItem(from: IndexPath(item: 2, section: 0), to: IndexPath(item: 0, section: 0)))
        _ = try offline.deleteItem(x)
        #expect(offline.receive([move]).refused.isEmpty)
        #expect(offline.flat == ["mine", "a", "b"], "brought back by the move the delete had not seen")
        _ = try offline.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0))
        _ = try offline.setField("tag", to: .string("blue"), ofItem: x)
        let unsent = try offline.operations(from: start).filter { $0.id.replica == ReplicaID(3) }
        // The hub never got the other replica's move (lost with its daemon) and compacted.
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z"))
        try hub.compact(stable: hub.version)
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake(unsent, from: offline)
        #expect(copy.flat == ["z", "a", "b", "mine"], "\(copy.flat)")
        let remade = try #require(copy.snapshot().itemIdentifier(at: IndexPath(item: 3, section: 0)))
        #expect(copy.fields(of: remade)["tag"] == .value(.string("blue")))
        try copy.checkInvariants()
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.rows == copy.rows)
    }

    @Test("edits made again never take the id of an edit the returning replica made before (each identity once)")
    func remadeIdsAreNew() throws {
        // The hub's clock (3 edits after the fork) is behind the offline replica's (5 edits): made
        // again from the snapshot's clock, the 4th and 5th would reuse ids of refused edits.
        let (hub0, offline, unsent) = try Self.scenario { doc in
            for k in 0..<5 { _ = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("new \(k)")) }
        }
        var hub = hub0
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake(unsent, from: offline)
        #expect(made.count == 5)
        let used = unsent.map { $0.id.counter...$0.lastID.counter }
        for op in made {
            #expect(!used.contains { $0.overlaps(op.id.counter...op.lastID.counter) }, "\(op.id) was an unsent edit's id")
        }
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.rows == copy.rows)
    }

    @Test("with nothing to make again (the edits were acknowledged elsewhere), the copy's later edits still take ids after every one the returning replica used")
    func laterEditsTakeNewIdsWhenNothingIsRemade() throws {
        // The offline edits are held by another daemon (acknowledged there): none is made again,
        // and each may still arrive under its id. An edit made on the snapshot from its own clock
        // would reuse one of those ids.
        let (hub0, offline, unsent) = try Self.scenario { doc in
            for k in 0..<5 { _ = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("new \(k)")) }
        }
        var copy = try ListDocument(snapshot: hub0.encodedSnapshot(), replica: ReplicaID(3))
        #expect(copy.remake([], from: offline).isEmpty)
        let next = try copy.insertItem(at: IndexPath(item: 0, section: 0), value: Data("next"))
        let used = unsent.map { $0.id.counter...$0.lastID.counter }
        #expect(!used.contains { $0.contains(next.id.counter) }, "\(next.id) was an unsent edit's id")
        #expect(unsent.allSatisfy { $0.lastID.counter < next.id.counter })
    }

    @Test("an item inserted offline, then moved into a section inserted offline after it, is made again in that section")
    func itemMovedIntoALaterSection() throws {
        // Found by the simulator with compaction (seed 38): the insert is made again first, at the
        // item's place now, in a section not made again yet; it was dropped, and so was the move.
        let (hub0, offline, unsent) = try Self.scenario { doc in
            _ = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
            _ = try doc.insertSection(at: 1, value: Data("later"))
            _ = try doc.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 0, section: 1))
        }
        #expect(offline.rows == [["a", "b", "c", "d", "e"], ["x"]])
        var hub = hub0
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake(unsent, from: offline)
        #expect(copy.rows == [["z", "a", "d", "e"], ["x"]])
        try copy.checkInvariants()
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.rows == copy.rows)
    }

    /// The daemon (`hub`), compacted; a device's insert of "x" into ["a", "b"] made after its
    /// floor; and a fresh copy of the daemon's snapshot at that floor (the base a re-sync makes
    /// it again on).
    static func editAfterFloor() throws -> (hub: ListDocument, device: ListDocument, op: ListOperation, copy: ListDocument) {
        var hub = try ListDocument.make(1, sections: [["a", "b"]])
        try hub.compact(stable: hub.version)
        var device = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let op = try device.insertItem(at: IndexPath(item: 1, section: 0), value: Data("x"))
        return (hub, device, op, try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3)))
    }

    @Test("edits made after the floor are received as they are, keeping their ids")
    func afterFloorKept() throws {
        let edit = try Self.editAfterFloor()
        var copy = edit.copy
        #expect(copy.remake([edit.op], from: edit.device) == [edit.op])
        #expect(copy.flat == ["a", "x", "b"])
    }

    @Test("refused, edits made after the floor are made again under new ids: sent again as they were, the daemon would refuse them again")
    func afterFloorRefused() throws {
        let edit = try Self.editAfterFloor()
        var (hub, copy) = (edit.hub, edit.copy)
        let op = edit.op
        let made = copy.remake([op], from: edit.device, refused: true)
        #expect(made.count == 1 && made[0].id != op.id && made[0].id.replica == ReplicaID(3))
        #expect(made[0].id.counter > op.lastID.counter, "never an id the device used")
        #expect(copy.flat == ["a", "x", "b"])
        #expect(hub.receive(made).refused.isEmpty && hub.flat == ["a", "x", "b"])
    }

    @Test("a section inserted offline is made again with its items; an edit of an item the hub deleted is dropped")
    func sectionsAndDropped() throws {
        let (hub, offline, unsent) = try Self.scenario { doc in
            _ = try doc.insertSection(at: 1, value: Data("new"))
            _ = try doc.insertItem(at: IndexPath(item: 0, section: 1), value: Data("n1"))
            _ = try doc.setValue(Data("B"), forItem: doc.snapshot().itemIdentifier(at: IndexPath(item: 1, section: 0))!)
        }
        #expect(offline.rows == [["a", "B", "c", "d", "e"], ["n1"]])
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        _ = copy.remake(unsent, from: offline)
        #expect(copy.rows == [["z", "a", "d", "e"], ["n1"]])
        #expect(copy.snapshot().sections.map(\.value) == [Data("S0"), Data("new")])
    }

    /// A copy that roamed between peer daemons holds operations of other replicas that the
    /// daemon it re-syncs from has not received yet (relayed later): made again they would exist
    /// twice (Docs/Semantics.md §7, "Roaming").
    @Test("only the copy's own operations are made again; another replica's that the daemon lacks are left to arrive")
    func othersLeftToArrive() throws {
        let (hub, offline0, unsent) = try Self.scenario { doc in
            _ = try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("mine"))
        }
        // The copy also took an insert by replica 5 (from another daemon, after the same start).
        var offline = offline0
        var other = hub.fork(as: 5)
        let foreign = try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("theirs"))
        #expect(offline.receive([foreign]).refused.isEmpty)
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake([foreign] + unsent, from: offline)
        #expect(made.allSatisfy { $0.id.replica == ReplicaID(3) } && made.count == 1, "\(made)")
        #expect(!copy.flat.contains("theirs") && copy.flat.contains("mine"), "\(copy.flat)")
        // When it arrives, it shows once.
        #expect(copy.receive([foreign]).refused.isEmpty)
        #expect(copy.flat.filter { $0 == "theirs" }.count == 1, "\(copy.flat)")
    }
}
