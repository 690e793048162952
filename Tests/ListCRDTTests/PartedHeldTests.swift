import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT

/// A copy that holds originals another daemon parted in a merge back (never compacted, or logged since its floor)
/// (`Compaction/ListDocument+PartedHeld.swift`, Docs/Semantics.md §7, "Parted originals a copy
/// holds"): it takes them out, and what was made on them, and makes the latter again as its own
/// where its own authors made them.
@Suite struct PartedHeldTests {
    /// W (replica 2, no floor) took replica 3's originals (an item "original" inserted, then
    /// "original 2" after it) relayed; its own device 4 then inserted "on it" after the
    /// original's item and wrote "a"'s value again; device 5's insert after "original 2" came
    /// relayed; device 6 inserted "six" at the start, on nothing parted. The parter (replica 9)
    /// made the originals again as its own.
    struct Case {
        var w: ListDocument
        var originals: [ListOperation]
        var own: [ListOperation]
        var relayed: ListOperation
        var unrelated: ListOperation
        var remade: [ListOperation]
        var runs: [ReplicaID: [ClosedRange<UInt64>]] {
            [ReplicaID(3): [originals.first!.id.counter...originals.last!.lastID.counter]]
        }
    }

    func heldCase() throws -> Case {
        let base = try ListDocument.make(1, sections: [["a", "b"]])
        var w = base.fork(as: 2)
        var left = base.fork(as: 3)
        var originals: [ListOperation] = []
        originals.append(try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8)))
        originals.append(try left.insertItem(at: IndexPath(item: 3, section: 0), value: Data("original 2".utf8)))
        // The parter made them again on its own copy, under its own ids.
        var parter = base.fork(as: 9)
        var remade: [ListOperation] = []
        remade.append(try parter.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8)))
        remade.append(try parter.insertItem(at: IndexPath(item: 3, section: 0), value: Data("original 2".utf8)))
        for op in originals { try w.receive(op) }
        var four = w.fork(as: 4)
        var own: [ListOperation] = []
        own.append(try four.insertItem(at: IndexPath(item: 3, section: 0), value: Data("on it".utf8)))
        own.append(try four.setValue(Data("a2".utf8), forItem: four.snapshot().sections[0].items[0].id))
        var five = w.fork(as: 5)
        let relayed = try five.insertItem(at: IndexPath(item: 4, section: 0), value: Data("relayed".utf8))
        var six = base.fork(as: 6)
        let unrelated = try six.insertItem(at: IndexPath(item: 0, section: 0), value: Data("six".utf8))
        for op in own + [relayed, unrelated] + remade { try w.receive(op) }
        return Case(w: w, originals: originals, own: own, relayed: relayed, unrelated: unrelated, remade: remade)
    }

    static func values(_ d: ListDocument) -> [String] {
        d.snapshot().sections[0].items.map { String(decoding: $0.value, as: UTF8.self) }
    }

    @Test("a copy without a floor takes out the originals a range names and what was made on them; its own authors' edits on them are made again as its own, a relayed one dropped; the rest stays with its ids")
    func takenOutAndMadeAgain() throws {
        var c = try heldCase()
        #expect(c.w.holdsParted(c.runs))
        #expect(!c.w.holdsParted([ReplicaID(3): [50...60]]), "a range past what it holds")
        #expect(!c.w.holdsParted([:]))
        let before = Self.values(c.w)
        #expect(before.filter { $0 == "original" }.count == 2, "the original beside the one made again: \(before)")
        let version = c.w.version
        let parted = c.w.partHeld(c.runs, remakes: { $0.id.replica == ReplicaID(4) })
        let merge = try #require(parted)
        #expect(Set(merge.parted.map(\.id)) == Set((c.originals + c.own + [c.relayed]).map(\.id)),
                "the originals, and everything made on them (the value write is after the insert on its author's chain)")
        #expect(Set(merge.dropped.map(\.id)) == Set((c.originals + [c.relayed]).map(\.id)))
        #expect(merge.made.count == 2)
        #expect(merge.made.allSatisfy { $0.id.replica == ReplicaID(2) && !version.contains($0.id) })
        let after = Self.values(c.w)
        #expect(after.filter { $0 == "original" }.count == 1 && after.filter { $0 == "original 2" }.count == 1, "\(after)")
        #expect(after.contains("on it") && after.contains("a2") && after.contains("six") && !after.contains("relayed"), "\(after)")
        #expect(after.firstIndex(of: "on it")! > after.firstIndex(of: "b")!, "made again after the nearest item it shows: \(after)")
        #expect(!c.w.holdsParted(c.runs))
        #expect(c.w.partHeld(c.runs, remakes: { _ in true }) == nil, "nothing more to take out")
        #expect(c.w.historyFloor == nil && c.w.pendingCount == 0)
        try c.w.checkInvariants()
        // Kept operations kept their ids; a copy that never held the originals takes the result.
        #expect(c.w.version.contains(c.unrelated.id) && c.w.version.contains(c.remade[1].id))
        var other = try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 7)
        for op in [c.unrelated] + c.remade + merge.made { try other.receive(op) }
        #expect(Self.values(other).sorted() == after.sorted())
    }

    @Test("a waiting operation on an original is taken out too; one waiting on something else stays waiting; a copy compacted past them is left as it is")
    func waitingAndCompacted() throws {
        var c = try heldCase()
        // Device 4, holding the originals, edits one after an operation of replica 8 that has
        // not come here (it waits); replica 10 inserts after 8's without the originals.
        var base = try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 8)
        let missing = try base.insertItem(at: IndexPath(item: 0, section: 0), value: Data("eight".utf8))
        var four = c.w.fork(as: 4)
        try four.receive(missing)
        let onBoth = try four.setValue(Data("original 3".utf8), forItem: ItemID(c.originals[1].id))
        var ten = base.fork(as: 10)
        let onEight = try ten.insertItem(at: IndexPath(item: 0, section: 0), value: Data("ten".utf8))
        #expect(try c.w.receive(onBoth) == .buffered)
        #expect(try c.w.receive(onEight) == .buffered)
        let parted = c.w.partHeld(c.runs, remakes: { $0.id.replica != ReplicaID(3) })
        let merge = try #require(parted)
        #expect(merge.parted.contains { $0.id == onBoth.id })
        #expect(c.w.pendingCount == 1, "ten's insert still waits for eight's")
        #expect(try c.w.receive(missing) == .applied(woken: 2))
        #expect(!Self.values(c.w).contains("original 3"), "an edit of an entity only an original made is dropped")
        #expect(Self.values(c.w).contains("ten"))
        try c.w.checkInvariants()

        var compacted = try heldCase().w
        try compacted.compact(stable: compacted.version)
        #expect(!compacted.holdsParted(c.runs))
        #expect(compacted.partHeld(c.runs, remakes: { _ in true }) == nil)
    }

    @Test("a copy compacted before the originals came takes them out of its log too: the floor stays, its own author's edit on them is made again, the rest keeps its ids; originals within the floor are left")
    func takenOutOfALogAfterTheFloor() throws {
        var c = try heldCase()
        // W compacted at the base (before the originals), as a copy that merged back onto a
        // peer's snapshot holds that snapshot's floor.
        let floor = try ListDocument.make(1, sections: [["a", "b"]]).version
        try c.w.compact(stable: floor)
        let floorBefore = try #require(c.w.historyFloor)
        #expect(c.w.holdsParted(c.runs))
        let parted = c.w.partHeld(c.runs, remakes: { $0.id.replica == ReplicaID(4) })
        let merge = try #require(parted)
        #expect(Set(merge.parted.map(\.id)) == Set((c.originals + c.own + [c.relayed]).map(\.id)))
        #expect(merge.made.count == 2 && merge.made.allSatisfy { $0.id.replica == ReplicaID(2) })
        let after = Self.values(c.w)
        #expect(after.filter { $0 == "original" }.count == 1 && after.filter { $0 == "original 2" }.count == 1, "\(after)")
        #expect(after.contains("on it") && after.contains("a2") && after.contains("six") && !after.contains("relayed"), "\(after)")
        #expect(c.w.historyFloor == floorBefore, "the floor is kept")
        #expect(!c.w.holdsParted(c.runs))
        try c.w.checkInvariants()
        // A copy that never held the originals, at the same floor, takes the result.
        var other = try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 7)
        for op in [c.unrelated] + c.remade + merge.made { try other.receive(op) }
        #expect(Self.values(other).sorted() == after.sorted())
    }

    @Test("an original this copy took from its author is made again here too (its parter got it relayed and dropped it): shown once, under this copy's replica")
    func originalTakenFromItsAuthor() throws {
        var c = try heldCase()
        // The parter dropped the originals (they came to it relayed): W's copy never gets
        // them made again by it. A copy of W's without the parter's operations:
        let base = try ListDocument.make(1, sections: [["a", "b"]])
        var w = base.fork(as: 2)
        for op in c.originals + c.own + [c.unrelated] { try w.receive(op) }
        c.w = w
        let parted = c.w.partHeld(c.runs, remakes: { _ in true })
        let merge = try #require(parted)
        #expect(Set(merge.originals.map(\.id)) == Set(c.originals.map(\.id)))
        #expect(merge.dropped.isEmpty)
        let values = Self.values(c.w)
        #expect(values.filter { $0 == "original" }.count == 1 && values.filter { $0 == "original 2" }.count == 1, "\(values)")
        #expect(values.contains("on it") && values.contains("a2") && values.contains("six"), "\(values)")
        #expect(merge.made.allSatisfy { $0.id.replica == ReplicaID(2) })
        #expect(!c.w.holdsParted(c.runs))
        try c.w.checkInvariants()
    }
}
