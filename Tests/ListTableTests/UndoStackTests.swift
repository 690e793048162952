import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncTestSupport

/// The undo rules U1, U9 and U10 of `Docs/Semantics.md` ("Undo and redo"): groups, the stacks,
/// operations and refusals; and the integration with `LiveDocument` and `DragSession`.
@Suite("Undo stacks: groups, redo, limits, refusals, LiveDocument and drags")
struct UndoStackTests {
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    // MARK: U1 groups

    @Test("U1: an edit closure is one group; beginGroup/endGroup and group { } make several edits one, nested groups count once")
    func u1Groups() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var undo = ListUndoManager()
        try undo.edit(&doc) { doc in
            try doc.insertItem(at: ip(0, 0), value: Data("x"))
            try doc.insertItem(at: ip(0, 0), value: Data("y"))
        }
        #expect(undo.undoCount == 1 && undo.undoActionName == "Insert")
        undo.beginGroup("Tidy")
        try undo.edit(&doc) { try $0.moveItem(from: ip(0, 0), to: ip(0, 4)) }
        undo.beginGroup("Inner")
        try undo.edit(&doc) { try $0.deleteItem(at: ip(0, 0)) }
        try undo.endGroup()
        #expect(undo.isGroupOpen && undo.undoCount == 1)
        try undo.endGroup()
        #expect(!undo.isGroupOpen && undo.undoCount == 2 && undo.undoActionName == "Tidy")
        try undo.group { (u: inout ListUndoManager) in
            try u.edit(&doc) { try $0.moveItem(from: ip(0, 0), to: ip(0, 1)) }
            try u.edit(&doc) { try $0.moveItem(from: ip(0, 2), to: ip(0, 0)) }
        }
        #expect(undo.undoCount == 3 && undo.undoActionName == "Move", "named after what it does")
        let rows = doc.rows
        try undo.undo(&doc)
        try undo.undo(&doc)
        #expect(doc.rows == [["y", "x", "a", "b", "c"]])
        try undo.undo(&doc)
        #expect(doc.rows == [["a", "b", "c"]])
        for _ in 0..<3 { try undo.redo(&doc) }
        #expect(doc.rows == rows)
    }

    @Test("U1: a group's steps are taken back last first; a remote insert received in between stays")
    func u1GroupWithRemoteInBetween() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var theirs = mine.fork(as: 2)
        var undo = ListUndoManager()
        undo.beginGroup("Tidy")
        try undo.edit(&mine) { try $0.moveItem(from: ip(0, 2), to: ip(0, 0)) }          // [c a b]
        theirs.merge(mine)
        try theirs.insertItem(at: ip(0, 3), value: Data("n"))                             // [c a b n]
        mine.merge(theirs)
        try undo.edit(&mine) { try $0.deleteItem(at: ip(0, 2)) }                          // [c a n]
        try undo.endGroup()
        #expect(undo.undoCount == 1 && undo.undoActionName == "Tidy")
        try undo.undo(&mine)
        #expect(mine.rows == [["a", "b", "c", "n"]])
        theirs.merge(mine)
        #expect(convergenceFailures([mine, theirs]) == [])
    }

    @Test("U1: edits that change nothing record nothing and keep the redo stack; mixed edits are named Edit")
    func u1EmptyAndMixed() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"]])
        var undo = ListUndoManager()
        try undo.edit(&doc) { try $0.setValue(Data("a2"), forItem: try $0.itemID(at: ip(0, 0))) }
        try undo.undo(&doc)
        try undo.edit(&doc) { _ = try $0.moveItem(from: ip(0, 0), to: ip(0, 0)) }       // nil: no operation
        try undo.edit(&doc) { doc in                                                     // insert and delete: no change
            let op = try doc.insertItem(at: ip(0, 0), value: Data("t"))
            try doc.deleteItem(ItemID(op.id))
        }
        #expect(undo.undoCount == 0 && undo.redoCount == 1)
        try undo.edit(&doc) { doc in
            try doc.insertItem(at: ip(0, 0), value: Data("x"))
            try doc.moveItem(from: ip(0, 1), to: ip(0, 2))
        }
        #expect(undo.undoActionName == "Edit" && undo.redoCount == 0)
    }

    // MARK: U9 redo and the stacks

    @Test("U9: redo after undo restores; a new edit clears the redo stack")
    func u9RedoAndClear() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var undo = ListUndoManager()
        try undo.edit(&doc) { try $0.moveItem(from: ip(0, 0), to: ip(0, 2)) }
        try undo.edit(&doc) { try $0.deleteItem(at: ip(0, 0)) }
        try undo.undo(&doc)
        try undo.undo(&doc)
        #expect(doc.rows == [["a", "b", "c"]] && undo.redoActionName == "Move")
        try undo.redo(&doc)
        #expect(doc.rows == [["b", "c", "a"]] && undo.redoActionName == "Delete")
        try undo.edit(&doc) { try $0.insertItem(at: ip(0, 0), value: Data("x")) }
        #expect(!undo.canRedo)
        #expect(throws: UndoError.nothingToRedo) { try undo.redo(&doc) }
    }

    @Test("U9: each stack keeps `limit` groups, dropping the oldest; limit 0 records nothing")
    func u9Limit() throws {
        var doc = try ListDocument.make(1, sections: [[]])
        var undo = ListUndoManager(limit: 3)
        for k in 0..<5 { try undo.edit(&doc) { try $0.insertItem(at: ip(0, k), value: Data("\(k)")) } }
        #expect(undo.undoCount == 3)
        while undo.canUndo { try undo.undo(&doc) }
        #expect(doc.rows == [["0", "1"]] && undo.redoCount == 3)
        undo.limit = 1
        #expect(undo.redoCount == 1)
        try undo.redo(&doc)
        #expect(doc.rows == [["0", "1", "2"]])
        undo.limit = 0
        try undo.edit(&doc) { try $0.insertItem(at: ip(0, 0), value: Data("x")) }
        #expect(!undo.canUndo && !undo.canRedo && ListUndoManager().limit == ListUndoManager.defaultLimit)
    }

    // MARK: U10 operations and refusals

    @Test("U10: refusals are typed and change nothing")
    func u10Refusals() throws {
        var doc = try ListDocument.make(1, sections: [["a"]])
        var undo = ListUndoManager()
        let state = doc.encodedState()
        #expect(throws: UndoError.nothingToUndo) { try undo.undo(&doc) }
        #expect(throws: UndoError.nothingToRedo) { try undo.redo(&doc) }
        #expect(throws: UndoError.noGroupOpen) { try undo.endGroup() }
        try undo.edit(&doc) { try $0.deleteItem(at: ip(0, 0)) }
        let afterEdit = doc.encodedState()
        undo.beginGroup("Open")
        #expect(throws: UndoError.groupOpen(actionName: "Open")) { try undo.undo(&doc) }
        #expect(doc.encodedState() == afterEdit && undo.undoCount == 1)
        try undo.endGroup()
        #expect(throws: ListError.self) { try undo.edit(&doc) { try $0.deleteItem(at: ip(0, 0)) } }
        #expect(doc.encodedState() == afterEdit && undo.undoCount == 1, "a refused edit is rolled back and not recorded")
        try undo.undo(&doc)
        #expect(doc.rows == [["a"]] && doc.encodedState() != state, "undo is a new operation, not a rollback")
        #expect(UndoError.nothingToUndo.description == "nothing to undo")
    }

    @Test("U10: an edit the undo needs that the document refuses rolls back the undo's earlier operations")
    func u10DocumentRefusalRollsBack() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var undo = ListUndoManager()
        try undo.edit(&doc) { doc in
            try doc.moveItem(from: ip(0, 0), to: ip(0, 3))
            try doc.moveItem(from: ip(0, 0), to: ip(0, 3))
        }
        // A peer's operation one below the counter limit: the undo's first move gets the last
        // counter, its second overflows.
        let c = try #require(doc.item("c"))
        let remote = ListOperation(id: OpID(counter: OpID.maxCounter - 1, replica: ReplicaID(2)), deps: doc.frontier,
                                   kind: .setItemValue(c, Data("C")))
        #expect(try doc.receive(remote) == .applied(woken: 1))
        let state = doc.encodedState(), count = doc.operationCount
        #expect(throws: UndoError.document(.counterOverflow)) { try undo.undo(&doc) }
        #expect(doc.encodedState() == state && doc.operationCount == count && undo.undoCount == 1 && !undo.canRedo)
    }

    @Test("U10: undo makes ordinary operations; a peer that receives them shows the same")
    func u10PeersReceiveUndo() throws {
        var mine = try ListDocument.make(1, sections: [["a", "b"], ["x"]])
        var peer = mine.fork(as: 2)
        var undo = ListUndoManager()
        var sent: [ListOperation] = []
        sent += try undo.edit(&mine) { doc in
            try doc.moveItem(from: ip(0, 0), to: ip(1, 1))
            try doc.deleteSection(at: 0)
        }.operations
        sent += try undo.undo(&mine)
        sent += try undo.redo(&mine)
        sent += try undo.undo(&mine)
        #expect(peer.receive(sent).isSuccess)
        #expect(convergenceFailures([mine, peer]) == [] && peer.rows == [["a", "b"], ["x"]])
    }

    // MARK: LiveDocument and DragSession

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("LiveDocument: edits are recorded, undo and redo return operations and a change set; received operations are not recorded")
    func liveDocument() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c"]]))
        var peer = live.document
        try live.edit(actionName: "Move") { try $0.moveItem(from: ip(0, 0), to: ip(0, 2)) }
        #expect(live.canUndo && live.undoActionName == "Move")
        peer = live.document.fork(as: 2)
        try peer.insertItem(at: ip(0, 0), value: Data("p"))
        live.receive(peer.operations(since: live.document.version))
        #expect(live.undoCount == 1, "received operations are not recorded")
        let before = live.snapshot
        let undone = try live.undo()
        #expect(undone.result == "Move" && undone.operations.count == 1, "a was first: it goes first again (U4)")
        #expect(undone.changes == ChangeSet(from: before, to: live.snapshot))
        #expect(live.document.rows == [["a", "p", "b", "c"]] && live.canRedo && live.redoActionName == "Move")
        let redone = try live.redo()
        #expect(redone.result == "Move" && live.document.rows == [["p", "b", "c", "a"]])
        #expect(throws: UndoError.nothingToRedo) { try live.redo() }
        live.removeAllUndoActions()
        #expect(!live.canUndo)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("LiveDocument: undoGroup spans several edits; undoLimit 0 records nothing")
    func liveDocumentGroupsAndLimit() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c"]]))
        try live.undoGroup("Sort") {
            try live.edit { try $0.moveItem(from: ip(0, 2), to: ip(0, 0)) }
            try live.edit { try $0.moveItem(from: ip(0, 2), to: ip(0, 1)) }
        }
        #expect(live.document.rows == [["c", "b", "a"]] && live.undoCount == 1 && live.undoActionName == "Sort")
        try live.undo()
        #expect(live.document.rows == [["a", "b", "c"]])
        live.undoLimit = 0
        try live.edit { try $0.deleteItem(at: ip(0, 0)) }
        #expect(!live.canUndo && !live.canRedo)
        let server = LiveDocument(withoutChangeSets: live.document)
        try server.edit { try $0.deleteItem(at: ip(0, 0)) }
        #expect(!server.canUndo, "no recording without change sets unless asked for")
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("DragSession: a drop is one group named Move; undo puts the selection back")
    func dragDropIsOneGroup() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x"]]))
        var drag = DragSession()
        try drag.begin(at: [ip(0, 0), ip(0, 2)], in: live.document)
        try drag.update(to: ip(1, 1))
        try drag.update(to: ip(1, 0))
        let edit = try live.drop(&drag)
        #expect(edit.operations.count == 1 && edit.result != nil)
        #expect(live.document.rows == [["b", "d"], ["a", "c", "x"]])
        #expect(live.undoCount == 1 && live.undoActionName == "Move")
        try live.undo()
        #expect(live.document.rows == [["a", "b", "c", "d"], ["x"]])
        var inPlace = DragSession()
        try inPlace.begin(at: ip(0, 1), in: live.document)
        try live.drop(&inPlace)
        #expect(live.undoCount == 0 && live.canRedo, "a drop in place records nothing and keeps the redo stack")
    }
}
