import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncTestSupport

/// A test double with Foundation `UndoManager`'s stack rules: an action registered while an undo
/// runs goes to the redo stack, one registered while a redo runs to the undo stack, any other
/// clears the redo stack; `setActionName` names the last registered action; `levelsOfUndo`
/// drops the oldest.
@MainActor
final class StackUndoManager: UndoRegistering {
    struct Action {
        var name = ""
        var handler: @MainActor () -> Void
    }

    var undoStack: [Action] = []
    var redoStack: [Action] = []
    var levelsOfUndo = 0
    private var undoing = false, redoing = false
    private var lastOnRedo = false

    func registerUndoHandler(_ handler: @escaping @MainActor () -> Void) {
        if undoing {
            redoStack.append(Action(handler: handler))
            lastOnRedo = true
        } else {
            if !redoing { redoStack = [] }
            undoStack.append(Action(handler: handler))
            if levelsOfUndo > 0 && undoStack.count > levelsOfUndo { undoStack.removeFirst() }
            lastOnRedo = false
        }
    }

    func setActionName(_ actionName: String) {
        if lastOnRedo { redoStack[redoStack.count - 1].name = actionName } else { undoStack[undoStack.count - 1].name = actionName }
    }

    func removeAllActions() {
        undoStack = []
        redoStack = []
    }

    var undoActionName: String? { undoStack.last?.name }
    var redoActionName: String? { redoStack.last?.name }

    func undo() {
        let action = undoStack.removeLast()
        undoing = true
        action.handler()
        undoing = false
    }

    func redo() {
        let action = redoStack.removeLast()
        redoing = true
        action.handler()
        redoing = false
    }
}

/// `UndoBridge`, the code behind the Apple-platform `UndoManager` conformance, against the test
/// double: the platform's stacks mirror the document's, and its undo and redo run the document's.
@Suite("UndoBridge: a platform undo manager mirrors the document's stacks")
@MainActor
struct UndoBridgeTests {
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("edits register named actions; the platform's undo and redo run the document's and hand over the operations")
    func mirrorsStacks() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a", "b", "c"]]), undoLimit: 10)
        let platform = StackUndoManager()
        var handed: [LiveDocument.Edit<String>] = []
        let bridge = UndoBridge(live: live, undoManager: platform) { handed.append($0) }
        #expect(platform.levelsOfUndo == 10)

        try bridge.edit { try $0.moveItem(from: ip(0, 0), to: ip(0, 2)) }
        try bridge.edit(actionName: "Rename") { try $0.setValue(Data("B"), forItem: try $0.itemID(at: ip(0, 0))) }
        try bridge.edit { _ = try $0.moveItem(from: ip(0, 0), to: ip(0, 0)) }      // records nothing
        #expect(platform.undoStack.map(\.name) == ["Move", "Rename"])
        #expect(live.document.rows == [["B", "c", "a"]])

        platform.undo()
        #expect(live.document.rows == [["b", "c", "a"]] && platform.redoActionName == "Rename")
        platform.undo()
        #expect(live.document.rows == [["a", "b", "c"]] && platform.undoStack.isEmpty)
        #expect(handed.map(\.result) == ["Rename", "Move"] && handed.allSatisfy { !$0.operations.isEmpty })
        platform.redo()
        #expect(live.document.rows == [["b", "c", "a"]] && platform.undoActionName == "Move" && platform.redoActionName == "Rename")
        #expect(live.undoCount == platform.undoStack.count && live.redoCount == platform.redoStack.count)

        try bridge.undoGroup("Tidy") {
            try bridge.edit { try $0.deleteItem(at: ip(0, 0)) }
            try bridge.edit { try $0.insertItem(at: ip(0, 0), value: Data("n")) }
        }
        #expect(platform.undoStack.map(\.name) == ["Move", "Tidy"] && platform.redoStack.isEmpty, "a new edit clears redo on both")
        var drag = DragSession()
        try drag.begin(at: ip(0, 0), in: live.document)
        try drag.update(to: ip(0, 2))
        try bridge.drop(&drag)
        #expect(platform.undoActionName == "Move" && live.undoCount == platform.undoStack.count)
        while !platform.undoStack.isEmpty { platform.undo() }
        #expect(live.document.rows == [["a", "b", "c"]] && !live.canUndo)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("a refused undo empties both stacks and is reported")
    func refusalResyncs() throws {
        let live = LiveDocument(try ListDocument.make(1, sections: [["a"]]))
        let platform = StackUndoManager()
        var failures: [UndoError] = []
        let bridge = UndoBridge(live: live, undoManager: platform) { _ in }
        bridge.didFail = { failures.append($0) }
        try bridge.edit { try $0.deleteItem(at: ip(0, 0)) }
        live.beginUndoGroup("Open")
        platform.undo()
        #expect(failures == [.groupOpen(actionName: "Open")])
        #expect(platform.undoStack.isEmpty && platform.redoStack.isEmpty && !live.canUndo)
        try live.endUndoGroup()
    }
}
