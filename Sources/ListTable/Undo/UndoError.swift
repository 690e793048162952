import ListCRDT

/// Why ``ListUndoManager`` refused a call. Every refusal changes nothing: not the document, not
/// the stacks.
public enum UndoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// ``ListUndoManager/undo(_:)`` with an empty undo stack: check ``ListUndoManager/canUndo``.
    case nothingToUndo
    /// ``ListUndoManager/redo(_:)`` with an empty redo stack: check ``ListUndoManager/canRedo``.
    case nothingToRedo
    /// Undo or redo while a group is open (``ListUndoManager/beginGroup(_:)``): end it first.
    case groupOpen(actionName: String?)
    /// ``ListUndoManager/endGroup()`` without a matching ``ListUndoManager/beginGroup(_:)``.
    case noGroupOpen
    /// An edit that the undo or redo needed was refused by the document (for example
    /// ``ListError/counterOverflow``); the document was put back as it was.
    case document(ListError)

    public var description: String {
        switch self {
        case .nothingToUndo: return "nothing to undo"
        case .nothingToRedo: return "nothing to redo"
        case .groupOpen(let name):
            return "an undo group (\(name ?? "unnamed")) is open: end it before undoing or redoing"
        case .noGroupOpen: return "endGroup() without a matching beginGroup()"
        case .document(let error): return "the document refused an edit the undo needed: \(error)"
        }
    }
}
