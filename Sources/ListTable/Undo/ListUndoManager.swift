import Foundation
import ListCRDT

/// The undo and redo stacks of one replica's user: records the user's own edits in groups, and
/// takes a group back with **new operations** that undo that user's change and only it.
///
/// A value type with no I/O, `Sendable`; keep one per replica (``LiveDocument`` keeps one for
/// you). Record edits with ``edit(_:actionName:_:)`` (or ``record(_:before:after:actionName:)``
/// when you made them yourself); group several with ``beginGroup(_:)`` and ``endGroup()`` or
/// ``group(_:_:)``. ``undo(_:)`` and ``redo(_:)`` edit the document and return the operations
/// they made, to send to the other replicas like any edit. Operations received from other
/// replicas are never recorded: they are what undo leaves alone.
///
/// ```swift
/// var undo = ListUndoManager()
/// try undo.edit(&document, actionName: "Move") { doc in try doc.moveItem(from: a, to: b) }
/// let ops = try undo.undo(&document)      // the item goes back between its old neighbours
/// send(ops)
/// ```
///
/// The rules (U1–U12) are in `Docs/Semantics.md`, "Undo and redo": an insert is undone by a
/// delete; a delete by a copy of the item (a new identity, which later undo and redo steps follow)
/// among its old neighbours; a move by a move back beside its old neighbours; a value by the value
/// before. What someone else changed since (a later move, a delete, a value) is theirs and stays.
public struct ListUndoManager: Sendable {
    /// One undoable group: what the user sees as one action.
    struct Group: Sendable {
        var actionName: String
        /// In the order they were made; taken back last first.
        var steps: [UndoStep]
    }

    /// A group being recorded.
    struct OpenGroup: Sendable {
        var actionName: String?
        var depth: Int
        var steps: [UndoStep] = []
        var derivedNames: [String] = []
    }

    /// The default ``limit``: 100 groups.
    public static let defaultLimit = 100

    /// How many groups each stack keeps; the oldest go first. 0 turns recording off (and empties
    /// both stacks). Must not be negative.
    public var limit: Int {
        didSet {
            precondition(limit >= 0, "an undo limit is not negative")
            trim()
        }
    }

    var undoStack: [Group] = []
    var redoStack: [Group] = []
    var open: OpenGroup?
    var tracks = UndoTracks()
    /// The typing the top group of the undo stack is still growing by (U12), or nil.
    var typing: TypingSession?

    /// Empty stacks keeping at most `limit` groups each (0: record nothing).
    public init(limit: Int = ListUndoManager.defaultLimit) {
        precondition(limit >= 0, "an undo limit is not negative")
        self.limit = limit
    }

    // MARK: State

    /// Whether edits are recorded (``limit`` is above 0).
    public var isRecording: Bool { limit > 0 }
    /// Whether there is a group to undo.
    public var canUndo: Bool { !undoStack.isEmpty }
    /// Whether there is a group to redo.
    public var canRedo: Bool { !redoStack.isEmpty }
    /// The number of groups that can be undone.
    public var undoCount: Int { undoStack.count }
    /// The number of groups that can be redone.
    public var redoCount: Int { redoStack.count }
    /// The action name of the group ``undo(_:)`` would take back ("Move", "Delete", …), or nil.
    public var undoActionName: String? { undoStack.last?.actionName }
    /// The action name of the group ``redo(_:)`` would make again, or nil.
    public var redoActionName: String? { redoStack.last?.actionName }
    /// Whether a group is open (``beginGroup(_:)`` without its ``endGroup()`` yet).
    public var isGroupOpen: Bool { open != nil }
    /// The value fields the last ``undo(_:)`` or ``redo(_:)`` left alone because someone else
    /// wrote them since the step (Docs/Semantics.md §8.8), for the app to tell its user.
    public var keptFields: [KeptField] { tracks.kept }
    /// How many groups recording has pushed since this manager was made (not counting groups
    /// moved between the stacks by undo and redo): a bridge to another undo manager registers
    /// one action each time it grows (``UndoBridge``).
    public private(set) var groupsRecorded = 0

    /// Ends the typing that the last recorded keystrokes were part of (U12): the next keystroke
    /// starts a new undo group. Call it when the caret moves or the text view loses focus; a
    /// keystroke somewhere else, any other edit, undo and redo end it anyway.
    public mutating func endTyping() { typing = nil }

    /// Forgets both stacks (an open group stays open, empty).
    public mutating func removeAll() {
        typing = nil
        undoStack = []
        redoStack = []
        open?.steps = []
        open?.derivedNames = []
        tracks = UndoTracks()
    }

    // MARK: Recording

    /// Makes edits on `document` and records them as one group named `actionName` (or named
    /// after what they do: ``actionName(for:)``), or as part of the open group. Returns what
    /// `body` returned and the operations it made.
    ///
    /// If `body` throws, its edits are rolled back (``ListDocument/rolledBack(toOperationCount:)``)
    /// and nothing is recorded.
    ///
    /// - Complexity: the edits, plus O(n) for the copy of the document's storage the recording
    ///   keeps while `body` runs, plus O(k log n) for the k entities the edits touch.
    @discardableResult
    public mutating func edit<R, E: Error>(_ document: inout ListDocument, actionName: String? = nil,
                                          _ body: (inout ListDocument) throws(E) -> R) throws(E)
        -> (result: R, operations: [ListOperation]) {
        let before = document
        let count = document.operationCount
        let result: R
        do throws(E) {
            result = try body(&document)
        } catch {
            document = document.rolledBack(toOperationCount: count)
            throw error
        }
        let ops = undoMust { () throws(ListError) in try document.operations(from: count) }
        record(ops, before: before, after: document, actionName: actionName)
        return (result, ops)
    }

    /// Records operations the user made on `before`, giving `after`, as one group named
    /// `actionName` (or named after what they do), or as part of the open group. Does nothing for
    /// no operations, or operations that left everything as it was; anything else clears the
    /// redo stack. `before` must be the document just before the first operation and `after`
    /// the same document just after the last, with nothing else applied in between.
    ///
    /// - Complexity: O(k log n) for k sections and items touched, n items.
    public mutating func record(_ operations: [ListOperation], before: ListDocument, after: ListDocument,
                                actionName: String? = nil) {
        guard isRecording, !operations.isEmpty else { return }
        precondition(after.operationCount >= before.operationCount + operations.count,
                     "`after` is `before` with the operations applied")
        let step = UndoStep(recording: operations, before: before, after: after, tracks: tracks)
        guard !step.isEmpty else { return }
        redoStack = []
        let keystroke = open == nil ? TypingSession.keystroke(operations, step: step) : nil
        if let keystroke, let session = typing, session.continues(with: keystroke), !undoStack.isEmpty,
           var last = undoStack[undoStack.count - 1].steps.popLast(), last.absorb(step, typing: keystroke) {
            // U12: the keystroke continues the typing of the top group: one undo takes it all back.
            undoStack[undoStack.count - 1].steps.append(last)
            typing = session.extended(by: keystroke)
            return
        }
        typing = keystroke.flatMap { TypingSession($0) }
        let derived = Self.actionName(for: operations)
        if open != nil {
            open!.steps.append(step)
            open!.derivedNames.append(actionName ?? derived)
        } else {
            push(Group(actionName: actionName ?? derived, steps: [step]), onUndo: true)
            groupsRecorded += 1
        }
    }

    /// Opens a group: what is recorded until the matching ``endGroup()`` is undone as one action,
    /// named `actionName` (or after what it does). Groups nest; the outermost one counts, with the
    /// first name given.
    public mutating func beginGroup(_ actionName: String? = nil) {
        typing = nil
        if open != nil {
            open!.depth += 1
            if open!.actionName == nil { open!.actionName = actionName }
        } else {
            open = OpenGroup(actionName: actionName, depth: 1)
        }
    }

    /// Closes the group opened by the matching ``beginGroup(_:)``; when it is the outermost one,
    /// pushes it (unless it recorded nothing). Throws ``UndoError/noGroupOpen`` when none is open.
    public mutating func endGroup() throws(UndoError) {
        guard var g = open else { throw .noGroupOpen }
        g.depth -= 1
        guard g.depth == 0 else {
            open = g
            return
        }
        open = nil
        guard !g.steps.isEmpty else { return }
        let names = Set(g.derivedNames)
        let name = g.actionName ?? (names.count == 1 ? names.first! : "Edit")
        push(Group(actionName: name, steps: g.steps), onUndo: true)
        groupsRecorded += 1
    }

    /// Runs `body` inside ``beginGroup(_:)`` and ``endGroup()``: what it records is one action.
    /// The group is closed even when `body` throws (what it recorded before stays recorded).
    @discardableResult
    public mutating func group<R, E: Error>(_ actionName: String? = nil, _ body: (inout ListUndoManager) throws(E) -> R) throws(E) -> R {
        beginGroup(actionName)
        defer { do { try endGroup() } catch { preconditionFailure("the group opened here is open") } }
        return try body(&self)
    }

    /// A name for an action made of `operations`: "Insert", "Delete", "Move", "Rename" or "Typing"
    /// (text edits) when all are of one kind, else "Edit".
    ///
    /// - Complexity: O(m) for m operations.
    public static func actionName(for operations: [ListOperation]) -> String {
        var names = Set<String>()
        for op in operations {
            switch op.kind {
            case .insertItem, .insertSection, .insertItemWithFields, .insertSectionWithFields: names.insert("Insert")
            case .deleteItem, .deleteSection: names.insert("Delete")
            case .moveItems, .moveSection: names.insert("Move")
            case .setItemValue, .setSectionValue: names.insert("Rename")
            case .writeFields(_, let writes):
                let typing = writes.writes.allSatisfy { if case .text = $0.change { true } else { false } }
                names.insert(typing ? "Typing" : "Edit")
            }
        }
        return names.count == 1 ? names.first! : "Edit"
    }

    // MARK: Undo and redo

    /// Takes back the last group with new operations on `document`, moves it to the redo stack,
    /// and returns the operations (possibly none, when others changed everything it did since:
    /// rules U6–U8), to send to the other replicas.
    ///
    /// Throws ``UndoError/nothingToUndo``, ``UndoError/groupOpen(actionName:)``, or
    /// ``UndoError/document(_:)``; then neither the document nor the stacks changed.
    ///
    /// - Complexity: O(k log n) for k entities in the group, plus the operations.
    @discardableResult
    public mutating func undo(_ document: inout ListDocument) throws(UndoError) -> [ListOperation] {
        tracks.kept = []
        typing = nil
        if let open { throw .groupOpen(actionName: open.actionName) }
        guard let group = undoStack.last else { throw .nothingToUndo }
        let (ops, inverse) = try perform(group, on: &document)
        undoStack.removeLast()
        push(inverse, onUndo: false)
        return ops
    }

    /// Makes the last undone group again with new operations on `document`, moves it back to the
    /// undo stack, and returns the operations. The same rules as ``undo(_:)``: redo takes back
    /// the undo.
    ///
    /// Throws ``UndoError/nothingToRedo``, ``UndoError/groupOpen(actionName:)``, or
    /// ``UndoError/document(_:)``; then neither the document nor the stacks changed.
    ///
    /// - Complexity: O(k log n) for k entities in the group, plus the operations.
    @discardableResult
    public mutating func redo(_ document: inout ListDocument) throws(UndoError) -> [ListOperation] {
        tracks.kept = []
        typing = nil
        if let open { throw .groupOpen(actionName: open.actionName) }
        guard let group = redoStack.last else { throw .nothingToRedo }
        let (ops, inverse) = try perform(group, on: &document)
        redoStack.removeLast()
        push(inverse, onUndo: true)
        return ops
    }

    /// Takes back every step of `group`, last first; all or nothing.
    private mutating func perform(_ group: Group, on document: inout ListDocument) throws(UndoError)
        -> (operations: [ListOperation], inverse: Group) {
        var tracks = self.tracks
        let count = document.operationCount
        var ops: [ListOperation] = []
        var inverse: [UndoStep] = []
        do {
            for step in group.steps.reversed() {
                let (made, back) = try tracks.perform(step, on: &document)
                ops += made
                if !back.isEmpty { inverse.append(back) }
            }
        } catch {
            document = document.rolledBack(toOperationCount: count)
            throw .document(error)
        }
        assert(document.operationCount == count + ops.count, "every operation made is returned")
        self.tracks = tracks
        return (ops, Group(actionName: group.actionName, steps: inverse))
    }

    private mutating func push(_ group: Group, onUndo: Bool) {
        if onUndo { undoStack.append(group) } else { redoStack.append(group) }
        trim()
    }

    private mutating func trim() {
        if undoStack.count > limit { undoStack.removeFirst(undoStack.count - limit) }
        if redoStack.count > limit { redoStack.removeFirst(redoStack.count - limit) }
        if limit == 0 { tracks = UndoTracks() }
    }
}
