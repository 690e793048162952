import Foundation
import Testing
import ListCRDT
import ListSyncTestSupport

/// A copy left out of a peer's floor merged back, with devices that roam between the daemons
/// (Docs/Semantics.md §7, "A copy left out of a peer's floor", "Roaming devices"): found by
/// `listsync simulate --daemons 3 --hide-daemon --roam 30` (seeds 3003, 3004, 3015).
@Suite struct MergeBackRoamingTests {
    @Test("operations the left-out copy kept waiting for their causes (a device roamed in from the peer, its edits made on the peer's) are made again, not dropped")
    func waitingOperationsMadeAgain() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var parted = hub.fork(as: 9)
        // The hub's own insert, which only the hub holds; a device takes it there, then roams
        // to the left-out daemon with edits made on it.
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("h"))
        var device = hub.fork(as: 3)
        _ = try device.insertItem(at: IndexPath(item: 1, section: 0), value: Data("after h"))
        let h = try #require(device.snapshot().itemIdentifier(at: IndexPath(item: 0, section: 0)))
        _ = try device.setValue(Data("H"), forItem: h)
        _ = try device.moveItem(from: IndexPath(item: 5, section: 0), to: IndexPath(item: 2, section: 0))   // "d" after "after h"
        let own = device.operations(since: hub.version)
        #expect(parted.receive(own).refused.isEmpty && parted.pendingCount == own.count, "they wait for the hub's insert")
        _ = try hub.deleteItem(at: IndexPath(item: 2, section: 0))   // "b"
        try hub.compact(stable: hub.version)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(Set(merge.parted.map(\.id)) == Set(own.map(\.id)))
        #expect(merge.dropped.isEmpty && merge.made.count == own.count && merge.made.allSatisfy { $0.id.replica == ReplicaID(9) })
        #expect(merged.flat == ["H", "after h", "d", "a", "c"])
        #expect(merged.pendingCount == 0)
        try merged.checkInvariants()
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows)
    }

    @Test("an operation a daemon's entry names (named) is parted though it comes after the floor: applied or kept waiting, made again when remakes names its author, else dropped; unnamed, it is kept as it is")
    func namedPartedAfterTheFloor() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c"]])
        let parted0 = hub.fork(as: 9)
        try hub.compact(stable: hub.version)
        let atFloor = hub.encodedSnapshot()
        // After the floor: the hub's insert "h", a device's edit "w" made on it (the left-out
        // copy lacks "h": "w" waits there), and a device's edit "x" on the floor (applied there).
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("h"))
        var device = hub.fork(as: 3)
        let w = try device.insertItem(at: IndexPath(item: 1, section: 0), value: Data("w"))
        var other = try ListDocument(snapshot: atFloor, replica: ReplicaID(4))
        let x = try other.insertItem(at: IndexPath(item: 3, section: 0), value: Data("x"))
        var parted = parted0
        #expect(parted.receive([w]).refused.isEmpty && parted.pendingCount == 1, "w waits for the hub's h")
        #expect(parted.receive([x]).refused.isEmpty && parted.pendingCount == 1)
        for (named, remakes) in [(false, false), (true, false), (true, true)] {
            var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
            let ids: Set<OpID> = [w.id, x.id]
            let mergeResult = merged.mergeBack(from: parted, remakes: { _ in remakes }, named: { named && ids.contains($0) })
            let merge = try #require(mergeResult)
            if !named {
                #expect(Set(merge.kept.map(\.id)) == ids && merge.parted.isEmpty)
                #expect(merged.flat == ["h", "w", "a", "b", "c", "x"])
            } else {
                #expect(Set(merge.parted.map(\.id)) == ids && merge.kept.isEmpty)
                #expect(remakes ? merge.dropped.isEmpty && merge.made.count == 2 : Set(merge.dropped.map(\.id)) == ids)
                #expect(merged.flat.filter { $0 == "w" || $0 == "x" }.count == (remakes ? 2 : 0))
                #expect(!merged.version.contains(w.id) && !merged.version.contains(x.id), "the originals are not held")
            }
            #expect(merged.pendingCount == 0)
            try merged.checkInvariants()
        }
    }

    @Test("a section inserted with its fields that the left-out copy kept waiting is made again with its value and fields, after its left origin's section")
    func waitingSectionInsertWithFieldsMadeAgain() throws {
        var hub = try ListDocument.make(1, sections: [["a"], ["b"]])
        var parted = hub.fork(as: 9)
        // A section only the hub holds; a device inserts a section with fields after it there,
        // then roams to the left-out daemon.
        _ = try hub.insertSection(at: 1, value: Data("h"))
        var device = hub.fork(as: 3)
        let inserted = try device.insertSection(at: 2, value: Data("new"),
                                                fields: ["title": .set(.string("Done")), "limit": .increment(3), "tags": .insert(["x"])])
        let own = device.operations(since: hub.version)
        #expect(own.map(\.id) == [inserted.id])
        #expect(parted.receive(own).refused.isEmpty && parted.pendingCount == 1, "it waits for the hub's section")
        // Compacted where the hub is now, the floor is before the device's insert: taken as it
        // is, its id and fields kept.
        var ahead = hub
        try ahead.compact(stable: ahead.version)
        var took = try ListDocument(snapshot: ahead.encodedSnapshot(), replica: ReplicaID(9))
        let tookResult = took.mergeBack(from: parted, remakes: { _ in true })
        let taken = try #require(tookResult)
        #expect(taken.kept.map(\.id) == [inserted.id] && taken.made.isEmpty && taken.parted.isEmpty)
        #expect(took.fields(of: SectionID(inserted.id))["limit"] == .counter(3))
        // A hub edit the device never saw (a delete), then the floor: the insert is concurrent
        // with the floor, so it is made again.
        _ = try hub.deleteItem(at: IndexPath(item: 0, section: 0))   // "a"
        try hub.compact(stable: hub.version)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.parted.map(\.id) == [inserted.id] && merge.dropped.isEmpty)
        let made = try #require(merge.made.first)
        #expect(merge.made.count == 1 && made.id.replica == ReplicaID(9))
        guard case .insertSectionWithFields = made.kind else { Issue.record("not made again with its fields: \(made.kind)"); return }
        let id = SectionID(made.id)
        let want: [String: Field] = ["title": .value(.string("Done")), "limit": .counter(3), "tags": .set(["x"])]
        #expect(merged.fields(of: id) == want)
        #expect(merged.value(of: id) == Data("new".utf8))
        #expect(merged.index(of: id) == 2, "after the hub's section, its left origin")
        #expect(merged.pendingCount == 0)
        try merged.checkInvariants()
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.fields(of: id) == want && hub.rows == merged.rows)
    }

    @Test("an edit only the left-out copy holds is made again though the peer's version counts it: its device re-synced at the peer and made later edits again under later counters")
    func versionCountsAnOriginalItLacks() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var parted = hub.fork(as: 9)
        var device = hub.fork(as: 3)
        let x = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
        #expect(parted.receive([x]).refused.isEmpty, "the left-out daemon acknowledged it")
        let y = try device.insertItem(at: IndexPath(item: 4, section: 0), value: Data("y"))
        _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.compact(stable: hub.version)
        // The device re-syncs at the hub: "x" acknowledged (its daemon makes it again), "y"
        // unsent: made again on the hub's copy, under a counter after both.
        var resynced = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = resynced.remake([y], from: device, refused: true)
        #expect(made.count == 1 && made[0].id.counter > y.lastID.counter)
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.version.contains(x.id), "the hub's version counts x, which it does not hold")
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.parted.map(\.id) == [x.id] && merge.made.count == 1)
        #expect(merged.flat.sorted() == ["a", "c", "x", "y"])
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows)
    }

    @Test("edits only the left-out copy holds are made again though the peer's floor counts them: a section insert the peer does not know, and an edit made on it")
    func floorCountsOriginalsItLacks() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var parted = hub.fork(as: 9)
        var device = hub.fork(as: 3)
        let s = try device.insertSection(at: 1, value: Data("s"))
        let x = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
        #expect(x.deps.contains(s.id), "x is made on s")
        #expect(parted.receive([s, x]).refused.isEmpty, "the left-out daemon acknowledged both")
        let y = try device.insertItem(at: IndexPath(item: 4, section: 0), value: Data("y"))
        _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.compact(stable: hub.version)
        // The device re-syncs at the hub (s and x acknowledged: their daemon makes them again),
        // makes y again under a counter after them, and the hub compacts again: its floor counts
        // s and x, which it never held.
        var resynced = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = resynced.remake([y], from: device, refused: true)
        #expect(hub.receive(made).refused.isEmpty)
        try hub.compact(stable: hub.version)
        #expect(hub.historyFloor?.contains(s.id) == true && hub.historyFloor?.contains(x.id) == true)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        #expect(!merged.holdsEverything(of: parted), "the snapshot lacks s and x: the copy is merged back, not replaced")
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(Set(merge.parted.map(\.id)) == [s.id, x.id] && merge.made.count == 2)
        #expect(merged.flat.sorted() == ["a", "c", "x", "y"])
        #expect(merged.sectionValues.contains("s"))
        try merged.checkInvariants()
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows && hub.sectionValues == merged.sectionValues)
    }
}
