import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncTestSupport

/// The undo rules U2–U8 of `Docs/Semantics.md` ("Undo and redo"), one scenario each, named after
/// the rule; the pictures in the doc are these tests. `mine` is replica 1, whose user undoes;
/// `theirs` is replica 2, a forked copy that edits concurrently or afterwards.
@Suite("Undo rules: what undo takes back, and what it leaves to others")
struct UndoRuleTests {
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }


    // MARK: U2 insert

    @Test("U2: undoing an insert deletes the item")
    func u2InsertUndoneByDelete() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b"]])
        var undo = ListUndoManager()
        let op = try undo.edit(&mine) { try $0.insertItem(at: ip(0, 1), value: Data("x")) }.result
        #expect(undo.undoActionName == "Insert")
        let ops = try undo.undo(&mine)
        #expect(mine.rows == [["a", "b"]])
        #expect(ops.map(\.kind) == [.deleteItem(ItemID(op.id), seen: SlotID(op.id))])
    }

    @Test("U2: undoing an insert deletes the item even after someone else moved and renamed it")
    func u2InsertMovedByOthersStillDeleted() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let x = ItemID(try undo.edit(&mine) { try $0.insertItem(at: ip(0, 1), value: Data("x")) }.result.id)
        theirs.merge(mine)
        try theirs.moveItem(x, to: ip(0, 3))
        try theirs.setValue(Data("X!"), forItem: x)
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a", "b", "c"]])
    }

    @Test("U2: undoing a section insert keeps the section while it holds someone else's items")
    func u2SectionInsertKeptForOthersItems() throws {
        var mine = try ListDocument.make(1, sections: [["a"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        try undo.edit(&mine) { doc in
            try doc.insertSection(at: 1, value: Data("N"))
            try doc.insertItem(at: ip(1, 0), value: Data("m"))
        }
        theirs.merge(mine)
        try theirs.insertItem(at: ip(1, 1), value: Data("n"))
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a"], ["n"]] && mine.sectionValues == ["S0", "N"], "my m goes, their n keeps N")
        // Without their item, the section goes too.
        var alone = try ListDocument.make(1, sections: [["a"]])
        var undo2 = ListUndoManager()
        try undo2.edit(&alone) { doc in
            try doc.insertSection(at: 0, value: Data("N"))
            try doc.insertItem(at: ip(0, 0), value: Data("m"))
        }
        try undo2.undo(&alone)
        #expect(alone.rows == [["a"]] && alone.sectionCount == 1)
    }

    // MARK: U3 delete

    @Test("U3: undoing a delete restores a copy with its value below its old upper neighbour; an insert made since stays")
    func u3DeleteRestoredAmongNeighbours() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let b = try #require(mine.item("b"))
        try undo.edit(&mine) { try $0.deleteItem(b) }
        theirs.merge(mine)
        try theirs.insertItem(at: ip(0, 1), value: Data("y"))     // [a y c]
        mine.merge(theirs)
        let ops = try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a", "b", "y", "c"]])
        let copy = try #require(mine.item("b"))
        #expect(copy != b && ops.count == 1, "a copy, with a new identity")
        #expect(!mine.contains(b))
    }

    @Test("U3: later undo and redo steps follow the copy through a chain of copies")
    func u3ChainsFollowCopies() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var undo = ListUndoManager()
        let b = try #require(mine.item("b"))
        try undo.edit(&mine, actionName: "Move") { try $0.moveItem(b, to: ip(0, 3)) }   // [a c d b]
        try undo.edit(&mine, actionName: "Rename") { try $0.setValue(Data("B"), forItem: b) }
        try undo.edit(&mine, actionName: "Delete") { try $0.deleteItem(b) }             // [a c d]
        for _ in 0..<3 {
            try undo.undo(&mine)                                                       // copy of B
            #expect(mine.rows == [["a", "c", "d", "B"]])
            try undo.redo(&mine)                                                       // deletes the copy
            #expect(mine.rows == [["a", "c", "d"]])
        }
        try undo.undo(&mine)
        try undo.undo(&mine)
        #expect(mine.rows == [["a", "c", "d", "b"]], "the rename of b is undone on its copy")
        try undo.undo(&mine)
        #expect(mine.rows == [["a", "b", "c", "d"]], "and the move")
        try mine.checkInvariants()
    }

    @Test("U3: undoing a section delete restores the section and its items, in place")
    func u3SectionDeleteRestored() throws {
        var mine = try ListDocument.make(1, sections: [["a"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.deleteSection(at: 1) }
        #expect(undo.undoActionName == "Delete")
        try undo.undo(&mine)
        #expect(mine.rows == [["a"], ["x", "y"], ["p"]] && mine.sectionValues == ["A", "B", "C"])
        try undo.redo(&mine)
        #expect(mine.rows == [["a"], ["p"]])
    }

    @Test("U3: a section deleted by me but kept shown by someone else's insert gets my items back, no copy of it")
    func u3SectionKeptByOthersGetsItemsBack() throws {
        var mine = try ListDocument.make(1, sections: [["a"], ["x", "y"]], names: ["A", "B"])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let sectionB = try mine.sectionID(at: 1)
        try undo.edit(&mine) { try $0.deleteSection(sectionB) }
        try theirs.insertItem(at: ip(1, 1), value: Data("n"))       // concurrent: [x n y]
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a"], ["n"]], "SEMANTICS §3.5")
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a"], ["x", "y", "n"]])
        #expect(mine.sectionIDs.last == sectionB, "the same section, not a copy")
    }

    @Test("U3: an item I deleted that a winning concurrent move kept alive is not copied")
    func u3RevivedItemNotDuplicated() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let a = try #require(mine.item("a"))
        try undo.edit(&mine) { try $0.deleteItem(a) }
        try theirs.moveItem(a, to: ip(0, 2))                        // concurrent: wins (SEMANTICS §3.4)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["b", "c", "a"]])
        let ops = try undo.undo(&mine)
        #expect(ops.isEmpty && mine.rows == [["b", "c", "a"]])
    }

    // MARK: U4 move

    @Test("U4: undoing a move puts the item back below its old upper neighbour; an insert next to it stays")
    func u4MoveBackKeepsTheirInsert() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.moveItem(from: ip(0, 1), to: ip(0, 3)) }   // [a c d b]
        theirs.merge(mine)
        try theirs.insertItem(at: ip(0, 1), value: Data("x"))                    // [a x c d b]
        mine.merge(theirs)
        #expect(undo.undoActionName == "Move")
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a", "b", "x", "c", "d"]])
    }

    @Test("U4: neighbours by identity: the item goes back below the row it stood under, not to its old row number")
    func u4NeighboursByIdentity() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.moveItem(from: ip(0, 3), to: ip(0, 0)) }   // [d a b c e]
        theirs.merge(mine)
        try theirs.moveItem(from: ip(0, 3), to: ip(0, 1))                        // c: [d c a b e]
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["c", "d", "a", "b", "e"]], "below c, wherever c is now (row 3 would give c a b d e)")
    }

    @Test("U4: undoing a multi-item move across sections puts every item back; a selection that stood together stands together")
    func u4SelectionMovedBack() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x", "y"]])
        var undo = ListUndoManager()
        let ids = [try #require(mine.item("c")), try #require(mine.item("a")), try #require(mine.item("b"))]
        try undo.edit(&mine) { try $0.moveItems(ids, to: ip(1, 1)) }             // [d] [x c a b y]
        #expect(mine.rows == [["d"], ["x", "c", "a", "b", "y"]])
        try undo.undo(&mine)
        #expect(mine.rows == [["a", "b", "c", "d"], ["x", "y"]])
        try undo.redo(&mine)
        #expect(mine.rows == [["d"], ["x", "c", "a", "b", "y"]])
    }

    @Test("U4: undoing a section move puts it back beside its old neighbours")
    func u4SectionMovedBack() throws {
        var mine = try ListDocument.make(1, sections: [["a"], ["b"], ["c"]], names: ["A", "B", "C"])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.moveSection(from: 0, to: 2) }              // B C A
        theirs.merge(mine)
        try theirs.insertSection(at: 0, value: Data("N"))                        // N B C A
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.sectionValues == ["A", "N", "B", "C"], "A was first: it goes first again")
    }

    // MARK: U5 value

    @Test("U5: undoing a rename writes the value before; for sections too")
    func u5ValueRestored() throws {
        var mine = try ListDocument.make(1, sections: [["a"]], names: ["A"])
        var undo = ListUndoManager()
        let a = try #require(mine.item("a"))
        try undo.edit(&mine) { doc in
            try doc.setValue(Data("a2"), forItem: a)
            try doc.setValue(Data("A2"), forSection: try doc.sectionID(at: 0))
        }
        #expect(undo.undoActionName == "Rename")
        try undo.undo(&mine)
        #expect(mine.rows == [["a"]] && mine.sectionValues == ["A"])
        try undo.redo(&mine)
        #expect(mine.rows == [["a2"]] && mine.sectionValues == ["A2"])
    }

    @Test("U5: a value someone else wrote after mine stays")
    func u5OthersLaterValueKept() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let (a, b) = (try #require(mine.item("a")), try #require(mine.item("b")))
        try undo.edit(&mine) { doc in
            try doc.setValue(Data("a2"), forItem: a)
            try doc.setValue(Data("b2"), forItem: b)
        }
        theirs.merge(mine)
        try theirs.setValue(Data("a3"), forItem: a)
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["a3", "b"]], "their a3 stays; my b2 is taken back")
    }

    // MARK: U6 deleted by others

    @Test("U6: an item someone else deleted is not brought back by undoing my move; the group's other items still go back")
    func u6DeletedByOthersNotBroughtBack() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let (a, b) = (try #require(mine.item("a")), try #require(mine.item("b")))
        try undo.edit(&mine) { try $0.moveItems([a, b], to: ip(0, 2)) }          // [c d a b]
        theirs.merge(mine)
        try theirs.deleteItem(a)                                                 // [c d b]
        mine.merge(theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.rows == [["b", "c", "d"]])
        try undo.redo(&mine)
        #expect(mine.rows == [["c", "d", "b"]])
    }

    // MARK: U7 moved by others

    @Test("U7: an item someone else moved after my move stays where they put it")
    func u7LaterMoveByOthersKept() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let a = try #require(mine.item("a"))
        try undo.edit(&mine) { try $0.moveItem(a, to: ip(0, 3)) }                 // [b c d a]
        theirs.merge(mine)
        try theirs.moveItem(a, to: ip(0, 1))                                      // [b a c d]
        mine.merge(theirs)
        let ops = try undo.undo(&mine)
        #expect(ops.isEmpty && mine.rows == [["b", "a", "c", "d"]])
        #expect(undo.canRedo && !undo.canUndo, "the group moved to the redo stack all the same")
    }

    @Test("U7: a concurrent move that lost to mine does not stop the undo; one that won does")
    func u7ConcurrentMoves() throws {
        let base = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        for (theirReplica, wins) in [(UInt64(2), false), (9, true)] {   // counters tie: the greater replica wins
            var mine = base.fork(as: 5)
            var theirs = base.fork(as: theirReplica)
            var undo = ListUndoManager()
            let a = try #require(mine.item("a"))
            let myMove = try #require(try undo.edit(&mine) { try $0.moveItem(a, to: ip(0, 3)) }.result)
            let theirMove = try #require(try theirs.moveItem(a, to: ip(0, 1)))
            #expect((theirMove.id > myMove.id) == wins)
            try exchange(&mine, &theirs)
            try undo.undo(&mine)
            try exchange(&mine, &theirs)
            #expect(mine.rows == (wins ? [["b", "a", "c", "d"]] : [["a", "b", "c", "d"]]))
        }
    }

    @Test("U7: undoing my earlier move after my later one does not override a move someone made in between")
    func u7MoveInBetweenKept() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        let a = try #require(mine.item("a"))
        try undo.edit(&mine) { try $0.moveItem(a, to: ip(0, 3)) }                 // [b c d a]
        theirs.merge(mine)
        try theirs.moveItem(a, to: ip(0, 1))                                      // [b a c d]
        mine.merge(theirs)
        try undo.edit(&mine) { try $0.moveItem(a, to: ip(0, 2)) }                 // [b c a d]
        try undo.undo(&mine)
        #expect(mine.rows == [["b", "a", "c", "d"]], "back where they put it")
        try undo.undo(&mine)
        #expect(mine.rows == [["b", "a", "c", "d"]], "their move stays")
        try exchange(&mine, &theirs)
    }

    // MARK: U8 section gone

    @Test("U8: an item whose old section someone else deleted stays where my move put it")
    func u8OldSectionGone() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b"], ["x"]], names: ["A", "B"])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.moveItem(from: ip(0, 0), to: ip(1, 1)) }    // A:[b] B:[x a]
        theirs.merge(mine)
        try theirs.deleteSection(at: 0)                                           // B:[x a]
        mine.merge(theirs)
        let ops = try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(ops.isEmpty && mine.rows == [["x", "a"]])
    }
}
