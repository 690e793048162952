import Foundation
import ListCRDT

/// Why a ``ListModel`` edit was refused. After any of these neither the document nor the model
/// changed.
///
/// Offsets and index paths are checked against what the model shows (the rows the user saw);
/// ``document(_:)`` is the document refusing the edit once resolved by identity (a section that
/// another replica deleted meanwhile, a value over the size limit, …).
public enum ListModelError: Error, Hashable, CustomStringConvertible {
    /// A source offset is not in `0..<count` of the rows (or sections) the model shows.
    case offsetOutOfRange(Int, count: Int)
    /// A destination offset is not in `0...count` of the rows (or sections) the model shows.
    case destinationOutOfRange(Int, count: Int)
    /// An index path is not `[section, row]`, or names no row (or, as a destination, no place)
    /// that the model shows: `count` rows are shown in that section (0 if there is no such section).
    case indexPathOutOfRange(IndexPath, count: Int)
    /// The model shows no section with this identity.
    case sectionNotShown(SectionID)
    /// The model shows no item with this identity.
    case itemNotShown(ItemID)
    /// A selection of items by identity was empty or named an item twice.
    case invalidSelection(String)
    /// The document refused the edit (resolved by identity, against the document as it is now).
    case document(ListError)
    /// The value to write could not be encoded; nothing was written.
    case encodingFailed(ValueCodingError)

    /// What was refused, and why.
    public var description: String {
        switch self {
        case let .offsetOutOfRange(o, count):
            return "offset \(o) is out of range: \(count) are shown (0..<\(count) allowed)"
        case let .destinationOutOfRange(o, count):
            return "destination offset \(o) is out of range: \(count) are shown (0...\(count) allowed)"
        case let .indexPathOutOfRange(p, count):
            let shown = "[" + p.map(String.init).joined(separator: ", ") + "]"
            if p.count != 2 { return "index path \(shown) is not a [section, row] path" }
            return "index path \(shown) is out of range: that section shows \(count) rows"
        case let .sectionNotShown(id): return "the model shows no section \(id)"
        case let .itemNotShown(id): return "the model shows no item \(id)"
        case let .invalidSelection(why): return "invalid selection: \(why)"
        case let .document(e): return e.description
        case let .encodingFailed(e): return "nothing was written: \(e)"
        }
    }

    /// Two errors are equal when they are the same case with equal payloads; two encoding
    /// failures compare by their ``ValueCodingError/description``.
    public static func == (a: ListModelError, b: ListModelError) -> Bool {
        switch (a, b) {
        case let (.offsetOutOfRange(x, c), .offsetOutOfRange(y, d)): return x == y && c == d
        case let (.destinationOutOfRange(x, c), .destinationOutOfRange(y, d)): return x == y && c == d
        case let (.indexPathOutOfRange(x, c), .indexPathOutOfRange(y, d)): return x == y && c == d
        case let (.sectionNotShown(x), .sectionNotShown(y)): return x == y
        case let (.itemNotShown(x), .itemNotShown(y)): return x == y
        case let (.invalidSelection(x), .invalidSelection(y)): return x == y
        case let (.document(x), .document(y)): return x == y
        case let (.encodingFailed(x), .encodingFailed(y)): return x.description == y.description
        default: return false
        }
    }

    /// Hashes the case and its payload (an encoding failure by its description).
    public func hash(into hasher: inout Hasher) {
        switch self {
        case let .offsetOutOfRange(o, c): hasher.combine(0); hasher.combine(o); hasher.combine(c)
        case let .destinationOutOfRange(o, c): hasher.combine(1); hasher.combine(o); hasher.combine(c)
        case let .indexPathOutOfRange(p, c): hasher.combine(2); hasher.combine(p); hasher.combine(c)
        case let .sectionNotShown(id): hasher.combine(3); hasher.combine(id)
        case let .itemNotShown(id): hasher.combine(4); hasher.combine(id)
        case let .invalidSelection(why): hasher.combine(5); hasher.combine(why)
        case let .document(e): hasher.combine(6); hasher.combine(e)
        case let .encodingFailed(e): hasher.combine(7); hasher.combine(e.description)
        }
    }
}
