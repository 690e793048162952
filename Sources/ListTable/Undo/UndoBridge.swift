import Foundation
import ListCRDT

/// What ``UndoBridge`` needs of a platform undo manager: Foundation's `UndoManager` on Apple
/// platforms (`UndoManager+ListSync.swift`), a test double elsewhere.
///
/// The contract is `UndoManager`'s: an action registered while an undo runs goes to the redo
/// stack, one registered while a redo runs to the undo stack, and any other registration clears
/// the redo stack; ``setActionName(_:)`` names the action registered last.
@MainActor
public protocol UndoRegistering: AnyObject {
    /// Registers `handler` as the action that takes back the last change (on the redo stack while
    /// an undo runs).
    func registerUndoHandler(_ handler: @escaping @MainActor () -> Void)
    /// Names the action registered last ("Move", shown as "Undo Move").
    func setActionName(_ actionName: String)
    /// How many actions the stack keeps (0: no limit).
    var levelsOfUndo: Int { get set }
    /// Forgets every action.
    func removeAllActions()
}

/// Mirrors a ``LiveDocument``'s undo stacks onto a platform undo manager (shake to undo, ⌘Z,
/// the Edit menu's "Undo Move"): one registered action per recorded group, and the platform's
/// undo and redo run ``LiveDocument/undo()`` and ``LiveDocument/redo()``.
///
/// Make the edits through the bridge (``edit(actionName:_:)``, ``drop(_:)``, ``undoGroup(_:_:)``),
/// so it sees each recorded group; received operations need nothing (they are never recorded).
/// Every undo and redo the platform runs is handed to `didChange`: send its operations to the
/// other replicas and apply its change set to the table.
///
/// ```swift
/// let bridge = UndoBridge(live: live, undoManager: view.undoManager!) { edit in
///     send(edit.operations)
///     apply(edit.changes)
/// }
/// try bridge.drop(&drag)     // registers "Undo Move"
/// ```
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
@MainActor
public final class UndoBridge<Manager: UndoRegistering> {
    /// The document whose stacks are mirrored.
    public let live: LiveDocument
    /// The platform undo manager.
    public let undoManager: Manager
    /// Receives every undo and redo the platform undo manager runs.
    public var didChange: @MainActor (LiveDocument.Edit<String>) -> Void
    /// Receives a refused undo or redo; both stacks were then emptied, the one state in which
    /// they surely agree.
    public var didFail: @MainActor (UndoError) -> Void = { _ in }

    private var recorded: Int

    /// A bridge between `live`'s stacks and `undoManager` (whose `levelsOfUndo` is set to
    /// ``LiveDocument/undoLimit``).
    public init(live: LiveDocument, undoManager: Manager,
                didChange: @escaping @MainActor (LiveDocument.Edit<String>) -> Void) {
        self.live = live
        self.undoManager = undoManager
        self.didChange = didChange
        recorded = live.undoGroupsRecorded
        undoManager.levelsOfUndo = live.undoLimit
    }

    /// ``LiveDocument/edit(actionName:_:)``, registering an undo action if it recorded a group.
    @discardableResult
    public func edit<R: Sendable, E: Error>(actionName: String? = nil,
                                            _ body: (inout ListDocument) throws(E) -> R) throws(E) -> LiveDocument.Edit<R> {
        defer { registerRecorded() }
        return try live.edit(actionName: actionName, body)
    }

    /// ``LiveDocument/drop(_:)``, registering "Move" if the drop moved anything.
    @discardableResult
    public func drop(_ session: inout DragSession) throws(DragError) -> LiveDocument.Edit<ListOperation?> {
        defer { registerRecorded() }
        return try live.drop(&session)
    }

    /// ``LiveDocument/undoGroup(_:_:)`` with the bridge's edits inside: one action for all.
    @discardableResult
    public func undoGroup<R, E: Error>(_ actionName: String? = nil, _ body: () throws(E) -> R) throws(E) -> R {
        defer { registerRecorded() }
        return try live.undoGroup(actionName, body)
    }

    /// Registers one action for each group recorded since the last call (edits made on `live`
    /// directly are caught up here).
    public func registerRecorded() {
        guard !live.isUndoGroupOpen else { return }
        let now = live.undoGroupsRecorded
        while recorded < now {
            recorded += 1
            register(redo: false, named: live.undoActionName ?? "")
        }
    }

    /// Registers the action the platform runs next: an undo, or a redo while an undo runs.
    private func register(redo: Bool, named name: String) {
        undoManager.registerUndoHandler { [weak self] in self?.run(redo: redo) }
        undoManager.setActionName(name)
    }

    /// Runs our undo (or redo) for the platform, and registers the way back.
    private func run(redo: Bool) {
        do {
            let edit = redo ? try live.redo() : try live.undo()
            register(redo: !redo, named: edit.result)
            didChange(edit)
        } catch {
            undoManager.removeAllActions()
            live.removeAllUndoActions()
            recorded = live.undoGroupsRecorded
            didFail(error)
        }
    }
}
