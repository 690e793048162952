import Foundation
import ListCRDT

/// Why a ``TypedDocument`` edit or query, or the decoding of a ``TypedSnapshot``, failed.
/// After any of these the document is unchanged.
public enum TypedDocumentError: Error, CustomStringConvertible {
    /// The document refused the edit (an index out of range, an unknown or deleted id, a value
    /// over the size limit, …).
    case list(ListError)
    /// The value to write could not be encoded; nothing was written.
    case encodingFailed(ValueCodingError)
    /// The stored value of this item is not an `Item` in the coder's format (another replica
    /// wrote another type, another format, or raw bytes).
    case undecodableItem(ItemID, ValueCodingError)
    /// The stored value of this section is not a `Section` in the coder's format (for example
    /// the empty value of a section inserted without one through ``ListDocument``).
    case undecodableSection(SectionID, ValueCodingError)

    /// The document's error, when the document refused the edit.
    public var listError: ListError? {
        if case .list(let e) = self { return e }
        return nil
    }

    /// The coder's error, for an encoding or decoding failure.
    public var codingError: ValueCodingError? {
        switch self {
        case .list: return nil
        case .encodingFailed(let e), .undecodableItem(_, let e), .undecodableSection(_, let e): return e
        }
    }

    /// What failed and why, naming the id whose value does not decode.
    public var description: String {
        switch self {
        case .list(let e): return e.description
        case .encodingFailed(let e): return "nothing was written: \(e)"
        case let .undecodableItem(id, e): return "the value of \(id) does not decode: \(e)"
        case let .undecodableSection(id, e): return "the value of \(id) does not decode: \(e)"
        }
    }
}
