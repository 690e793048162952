import Foundation
import ListCRDT

/// Undo and redo of the local user's edits (``ListUndoManager``, kept under the lock).
///
/// Every ``edit(actionName:_:)`` is recorded (one group per call, or part of an open group); a
/// drop through ``drop(_:)`` is one group "Move"; operations from ``receive(_:)-(S)`` never are.
/// ``undo()`` and ``redo()`` are edits like the others: they return the operations to send and
/// the change set, and subscribers receive it.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension LiveDocument {
    /// Takes back the local user's last group of edits with new operations (rules U1–U12 of
    /// `Docs/Semantics.md`); `result` is the group's action name. Throws, and changes nothing,
    /// when there is nothing to undo (``UndoError/nothingToUndo``) or a group is open.
    ///
    /// - Complexity: O(k log n) for k entities in the group, the operations, and the diff.
    @discardableResult
    public func undo() throws(UndoError) -> Edit<String> {
        try state.withLock { (state: inout State) throws(UndoError) -> Edit<String> in
            let name = state.undo.undoActionName ?? ""
            let ops = try state.undo.undo(&state.document)
            return Self.finishUndo(name, ops, in: &state)
        }
    }

    /// Makes the last undone group again with new operations; `result` is its action name.
    /// Throws, and changes nothing, when there is nothing to redo (``UndoError/nothingToRedo``)
    /// or a group is open.
    ///
    /// - Complexity: O(k log n) for k entities in the group, the operations, and the diff.
    @discardableResult
    public func redo() throws(UndoError) -> Edit<String> {
        try state.withLock { (state: inout State) throws(UndoError) -> Edit<String> in
            let name = state.undo.redoActionName ?? ""
            let ops = try state.undo.redo(&state.document)
            return Self.finishUndo(name, ops, in: &state)
        }
    }

    /// Commits a drag session's drop (``DragSession/drop(into:)``) as one undo group "Move".
    ///
    /// - Complexity: the drop and the diff, as ``edit(actionName:_:)``.
    @discardableResult
    public func drop(_ session: inout DragSession) throws(DragError) -> Edit<ListOperation?> {
        try edit(actionName: "Move") { (doc: inout ListDocument) throws(DragError) -> ListOperation? in
            try session.drop(into: &doc)
        }
    }

    /// Whether there is a group to undo.
    public var canUndo: Bool { state.withLock { $0.undo.canUndo } }
    /// Whether there is a group to redo.
    public var canRedo: Bool { state.withLock { $0.undo.canRedo } }
    /// The action name of the group ``undo()`` would take back ("Move", "Delete", …), or nil.
    public var undoActionName: String? { state.withLock { $0.undo.undoActionName } }
    /// The action name of the group ``redo()`` would make again, or nil.
    public var redoActionName: String? { state.withLock { $0.undo.redoActionName } }
    /// The number of groups that can be undone.
    public var undoCount: Int { state.withLock { $0.undo.undoCount } }
    /// The number of groups that can be redone.
    public var redoCount: Int { state.withLock { $0.undo.redoCount } }
    /// How many groups recording has pushed (``ListUndoManager/groupsRecorded``).
    public var undoGroupsRecorded: Int { state.withLock { $0.undo.groupsRecorded } }

    /// How many groups each stack keeps (0: edits are not recorded, and both stacks are emptied).
    public var undoLimit: Int {
        get { state.withLock { $0.undo.limit } }
        set { state.withLock { $0.undo.limit = newValue } }
    }

    /// Opens an undo group: the edits until the matching ``endUndoGroup()`` are undone as one
    /// action. Groups nest.
    public func beginUndoGroup(_ actionName: String? = nil) {
        state.withLock { $0.undo.beginGroup(actionName) }
    }

    /// Whether an undo group is open.
    public var isUndoGroupOpen: Bool { state.withLock { $0.undo.isGroupOpen } }

    /// Closes the group of the matching ``beginUndoGroup(_:)``; throws
    /// ``UndoError/noGroupOpen`` when none is open.
    public func endUndoGroup() throws(UndoError) {
        try state.withLock { (state: inout State) throws(UndoError) in try state.undo.endGroup() }
    }

    /// Runs `body` (which may call this `LiveDocument`: it does not run under the lock) inside
    /// ``beginUndoGroup(_:)`` and ``endUndoGroup()``. The group is closed even if `body` throws.
    @discardableResult
    public func undoGroup<R, E: Error>(_ actionName: String? = nil, _ body: () throws(E) -> R) throws(E) -> R {
        beginUndoGroup(actionName)
        defer { do { try endUndoGroup() } catch { preconditionFailure("the group opened here is open") } }
        return try body()
    }

    /// Forgets both stacks.
    public func removeAllUndoActions() {
        state.withLock { $0.undo.removeAll() }
    }

    /// Remembers the moves the undo made, publishes the change set. Called under the lock.
    private static func finishUndo(_ name: String, _ ops: [ListOperation], in state: inout State) -> Edit<String> {
        for op in ops { remember(op, in: &state) }
        return Edit(result: name, operations: ops, changes: publish(&state, lostMoves: []))
    }
}
