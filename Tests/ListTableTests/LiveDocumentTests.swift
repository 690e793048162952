import Foundation
import Testing
import ListSyncTestSupport
@testable import ListCRDT
import ListTable

/// SEMANTICS §5: change sets for every local and remote change, lost-move reports, the stream of
/// change sets; and the causality queries the lost-move detection rests on.
@Suite("LiveDocument: change sets, lost moves, the stream")
struct LiveDocumentTests {
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    // MARK: Edits and receives

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("an edit returns its operations and the change set between the snapshots")
    func editReturnsChanges() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c"]]))
        let before = live.snapshot
        let edit = try live.edit { doc in try doc.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0)) }
        #expect(edit.operations.count == 1 && edit.result == edit.operations.first)
        #expect(edit.changes == ChangeSet(from: before, to: live.snapshot))
        #expect(edit.changes.movedItems == [.init(from: ip(0, 0), to: ip(0, 2))])
        #expect(live.document.rows == [["b", "c", "a"]])
        let two = try live.edit { doc in
            try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
            try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("y"))
        }
        #expect(two.operations.count == 2 && two.changes.insertedItems == [ip(0, 0), ip(0, 1)])
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("an edit that throws changes nothing and sends nothing, even after a first op")
    func editIsAllOrNothing() async throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b"]]))
        let state = live.document.encodedState()
        let stream = live.changes()
        #expect(throws: ListError.self) {
            try live.edit { doc in
                try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
                try doc.deleteItem(at: IndexPath(item: 9, section: 0))
            }
        }
        #expect(live.document.encodedState() == state)
        live.close()
        var received = 0
        for await _ in stream { received += 1 }
        #expect(received == 0)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("receive returns the change set; refused operations are reported with the change of the others")
    func receiveReturnsChanges() throws {
        var remote = try ListDocument.make(1, sections: [["a", "b"]])
        let live = LiveDocument(remote.fork(as: 2))
        let op = try remote.insertItem(at: IndexPath(item: 1, section: 0), value: Data("n"))
        #expect(live.receive([op]).changes.insertedItems == [ip(0, 1)])
        #expect(live.receive(op).changes.isEmpty, "a duplicate changes nothing")
        let next = try remote.deleteItem(at: IndexPath(item: 0, section: 0))
        var forged = next
        forged.kind = .setItemValue(ItemID(op.id), Data("forged"))
        let (changes, report) = live.receive([forged, next])
        #expect(report.refused == [.equivocation(next.id)] && report.applied == 1, "\(report)")
        #expect(changes.hasNoTableChanges == (live.document.rows == [["a", "n", "b"]]))
    }

    // MARK: Lost moves

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("a local move that loses to a concurrent greater move is reported, naming the winner")
    func lostMoveReported() throws {
        let base = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        let live = LiveDocument(base)
        var remote = base.fork(as: 9)                        // a greater replica id wins a counter tie
        let a = try #require(base.item("a"))
        let mine = try live.edit { doc in try doc.moveItem(from: ip(0, 0), to: ip(0, 4)) }.result!
        let theirs = try #require(try remote.moveItem(from: ip(0, 0), to: ip(0, 2)))
        #expect(theirs.id > mine.id)
        let changes = live.receive(theirs).changes
        #expect(changes.lostMoves == [LostMove(subject: .item(a), localOperation: mine, winner: theirs.id)])
        #expect(changes.lostMoves.first?.item == a)
        #expect(changes.movedItems == [.init(from: ip(0, 4), to: ip(0, 2))])
        #expect(live.document.rows == [["b", "c", "a", "d", "e"]])
        // Reported once.
        let later = try remote.insertItem(at: ip(0, 0), value: Data("z"))
        #expect(live.receive(later).changes.lostMoves.isEmpty)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("no lost move when the winner had seen the local move, or when the local move wins")
    func notLost() throws {
        let base = try ListDocument.make(5, sections: [["a", "b", "c"]])
        let live = LiveDocument(base)
        // The remote saw the local move, then moved the item again: an ordinary later edit.
        var seer = base.fork(as: 9)
        let mine = try live.edit { doc in try doc.moveItem(from: ip(0, 0), to: ip(0, 2)) }.result!
        try seer.receive(mine)
        let after = try #require(try seer.moveItem(from: ip(0, 2), to: ip(0, 1)))
        #expect(live.receive(after).changes.lostMoves.isEmpty)
        // A concurrent move with a smaller id loses to the local one: nothing lost.
        var small = base.fork(as: 2)
        _ = try live.edit { doc in try doc.moveItem(from: ip(0, 0), to: ip(0, 2)) }
        let weaker = try #require(try small.moveItem(from: ip(0, 1), to: ip(0, 0)))
        let changes = live.receive(weaker).changes
        #expect(changes.lostMoves.isEmpty)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("lost moves of a selection, of a section, and through the causal buffer")
    func lostMovesOtherShapes() throws {
        let base = try ListDocument.make(1, sections: [["a", "b", "c"], ["d"]])
        let live = LiveDocument(base)
        var remote = base.fork(as: 9)
        let (a, b) = (base.item("a")!, base.item("b")!)
        let selection = try live.edit { doc in try doc.moveItems([a, b], to: ip(1, 1)) }.result
        let section = try live.edit { doc in try doc.moveSection(from: 0, to: 1) }.result!
        // Remote: an unrelated op first, then concurrent moves of b and of section 0 that depend on it.
        let first = try remote.insertItem(at: ip(1, 0), value: Data("r"))
        let moveB = try #require(try remote.moveItem(from: ip(0, 1), to: ip(0, 0)))
        let moveS = try #require(try remote.moveSection(from: 0, to: 1))
        #expect(moveB.id > selection.id && moveS.id > section.id)
        // Delivered out of order: buffered until `first` arrives.
        #expect(live.receive([moveB, moveS]).changes.lostMoves.isEmpty)
        let changes = live.receive(first).changes
        let s0 = base.snapshot().sections[0].id
        #expect(Set(changes.lostMoves) == [LostMove(subject: .item(b), localOperation: selection, winner: moveB.id),
                                          LostMove(subject: .section(s0), localOperation: section, winner: moveS.id)])
        #expect(changes.lostMoves.allSatisfy { $0.item != a })
    }

    // MARK: Causality

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("hasSeen walks the causal past: chains, concurrency, a third replica, unknown ids")
    func causality() throws {
        var r1 = try ListDocument.make(1, sections: [["a"]])
        var r2 = r1.fork(as: 2), r3 = r1.fork(as: 3)
        let x = try r1.insertItem(at: ip(0, 0), value: Data("x"))
        let y = try r2.insertItem(at: ip(0, 0), value: Data("y"))     // concurrent with x
        try r3.receive(x)
        let z = try r3.insertItem(at: ip(0, 0), value: Data("z"))     // has seen x
        r2.merge(r3)
        let w = try r2.insertItem(at: ip(0, 0), value: Data("w"))     // has seen x (through z) and y
        let first = r2.operations[0].id
        #expect(r2.hasSeen(x.id, at: w.id) && r2.hasSeen(y.id, at: w.id) && r2.hasSeen(z.id, at: w.id))
        #expect(r2.hasSeen(first, at: w.id) && r2.hasSeen(w.id, at: w.id))
        #expect(!r2.hasSeen(x.id, at: y.id) && !r2.hasSeen(y.id, at: x.id) && !r2.hasSeen(y.id, at: z.id))
        #expect(!r2.hasSeen(w.id, at: x.id))
        #expect(!r2.hasSeen(OpID(counter: 999, replica: ReplicaID(7)), at: w.id))
        #expect(r2.winningPositionWrite(of: ItemID(x.id)) == x.id)
        #expect(r2.winningPositionWrite(of: ItemID(OpID(counter: 999, replica: ReplicaID(7)))) == nil)
    }

    // MARK: The stream

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("every subscriber receives every later change set, in order; close finishes the streams")
    func stream() async throws {
        var remote = try ListDocument.make(1, sections: [["a"]])
        let live = LiveDocument(remote.fork(as: 2))
        let s1 = live.changes(), s2 = live.changes()
        let e1 = try live.edit { doc in try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("b")) }
        let r = live.receive(try remote.insertSection(at: 1, value: Data("S1"))).changes
        let b = live.snapshot.sections[0].items[1].id          // read outside: the closure must not call `live`
        _ = try live.edit { doc in try doc.setValue(Data("b2"), forItem: b) }
        live.close()
        var got1: [ChangeSet] = [], got2: [ChangeSet] = []
        for await c in s1 { got1.append(c) }
        for await c in s2 { got2.append(c) }
        #expect(got1.count == 3 && got1 == got2)
        #expect(got1[0] == e1.changes && got1[1] == r)
        #expect(got1[2].reloadedItems == [ip(0, 1)])
        var late = 0
        for await _ in live.changes() { late += 1 }
        #expect(late == 0, "a subscription after close is finished")
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("concurrent edits from many tasks: every change set arrives, in the order made")
    func concurrentEdits() async throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [[]]))
        let stream = live.changes()
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for k in 0..<25 {
                        _ = try? live.edit { doc in try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("\(t)-\(k)")) }
                    }
                }
            }
        }
        live.close()
        var count = 0
        for await c in stream {
            #expect(c.insertedItems == [IndexPath(item: 0, section: 0)])
            count += 1
        }
        #expect(count == 200)
        #expect(live.snapshot == live.document.snapshot() && live.snapshot.numberOfItems == 200)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("the streams finish when the LiveDocument goes away")
    func finishOnDeinit() async throws {
        var live: LiveDocument? = LiveDocument(try ListDocument.make(1, sections: [["a"]]))
        let stream = live!.changes()
        _ = try live!.edit { doc in try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x")) }
        live = nil
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 1)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("a drag session committed through edit: one op, one change set")
    func dragThroughLiveDocument() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c"], ["d"]]))
        var session = DragSession()
        try session.begin(at: ip(0, 0), in: live.document)
        try session.update(to: ip(1, 1))
        let edit = try live.edit { doc in try session.drop(into: &doc) }
        #expect(edit.operations.count == 1 && edit.result == edit.operations.first)
        #expect(edit.changes.movedItems == [.init(from: ip(0, 0), to: ip(1, 1))])
    }
}

@Suite("LiveDocument without change sets")
struct LiveDocumentWithoutChangeSetsTests {
    @Test("edits and receives cost what the document's do; the snapshot is right when read; lost moves still reported")
    func plain() throws {
        let plain = LiveDocument(withoutChangeSets: ListDocument(replica: ReplicaID(1)))
        let full = LiveDocument(ListDocument(replica: ReplicaID(2)))
        let e = try plain.edit { d throws(ListError) in
            try d.insertSection(at: 0)
            for k in 0..<5 { try d.insertItem(at: IndexPath(item: k, section: 0), value: Data("\(k)".utf8)) }
        }
        #expect(e.changes.isEmpty)
        #expect(e.operations.count == 6)
        let r = full.receive(e.operations)
        #expect(!r.changes.isEmpty)
        #expect(plain.snapshot == full.snapshot)
        // Concurrent moves of the same item: the loser is told either way.
        let mine = try plain.edit { d throws(ListError) in try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 4, section: 0)) }
        let theirs = try full.edit { d throws(ListError) in try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0)) }
        let a = plain.receive(theirs.operations), b = full.receive(mine.operations)
        #expect(a.changes.lostMoves.count + b.changes.lostMoves.count == 1)
        #expect(a.changes.insertedItems.isEmpty && a.changes.movedItems.isEmpty)
        #expect(plain.snapshot == full.snapshot)
    }

    @Test("compacting a live document (a device's copy, where its daemon compacted) changes nothing it shows and keeps its undo history: a delete undone after the compaction brings the item back with its value, and redo deletes it again")
    func compactionKeepsUndo() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c", "d"]]))
        _ = try live.edit { (d: inout ListDocument) throws(ListError) in try d.deleteItem(atRow: 1, inSection: 0) }
        _ = try live.edit { (d: inout ListDocument) throws(ListError) in
            try d.setValue(Data("C".utf8), forItem: try d.itemID(at: IndexPath(item: 1, section: 0)))
        }
        let shown = live.snapshot
        let report = try live.compact(at: live.document.version)
        #expect(report.itemsAfter < report.itemsBefore || report.operationsDropped > 0)
        #expect(live.document.historyFloor == live.document.version && live.snapshot == shown)
        #expect(live.document.value(of: try live.document.itemID(at: IndexPath(item: 0, section: 0))) == Data("a".utf8))
        // Undo the rename, then the delete of "b", whose item compaction collected.
        _ = try live.undo()
        #expect(live.snapshot.sections[0].items.map { String(decoding: $0.value, as: UTF8.self) } == ["a", "c", "d"])
        _ = try live.undo()
        #expect(live.snapshot.sections[0].items.map { String(decoding: $0.value, as: UTF8.self) } == ["a", "b", "c", "d"])
        _ = try live.redo()
        #expect(live.snapshot.sections[0].items.map { String(decoding: $0.value, as: UTF8.self) } == ["a", "c", "d"])
        try live.document.checkInvariants()
        // At its floor again, which it has passed: nothing to collect, refused, nothing changes.
        var other = live.document.fork(as: 2)
        _ = try other.insertItem(atRow: 0, inSection: 0, value: Data("z".utf8))
        _ = live.receive(other.operations(since: live.document.version))
        let before = live.snapshot
        #expect(throws: CompactionError.self) { try live.compact(at: live.document.historyFloor!) }
        #expect(live.snapshot == before)
    }
}
