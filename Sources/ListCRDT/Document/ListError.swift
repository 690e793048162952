import Foundation

/// Why a local edit or a query was refused. The document is unchanged after any of these.
public enum ListError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The index path names no row: `count` rows are in that section (or the section does not exist).
    case indexPathOutOfRange(IndexPath, count: Int)
    /// The section index is out of range: there are `count` sections.
    case sectionIndexOutOfRange(Int, count: Int)
    /// No item with this id is known.
    case unknownItem(ItemID)
    /// No section with this id is known.
    case unknownSection(SectionID)
    /// The item is known but deleted, so it cannot be moved, changed or deleted again.
    case itemDeleted(ItemID)
    /// The section is known but not visible, so it cannot be changed or receive items.
    case sectionDeleted(SectionID)
    /// The value has `size` bytes; the limit is `limit`.
    case valueTooLarge(size: Int, limit: Int)
    /// A selection named the same item twice, or was empty.
    case invalidSelection(String)
    /// The Lamport counter would pass ``OpID/maxCounter``.
    case counterOverflow
    /// A position in the operation log is out of range: `count` operations are applied.
    case logPositionOutOfRange(Int, count: Int)
    /// A field write that breaks a rule of fields: the field's name (empty for the whole
    /// operation) and why (Docs/Semantics.md §8, ``FieldLimits``).
    case invalidField(String, String)

    public var description: String {
        switch self {
        case let .indexPathOutOfRange(p, count):
            let shown = "[" + p.map(String.init).joined(separator: ", ") + "]"
            if p.count != 2 { return "index path \(shown) is not a [section, row] path" }
            return "index path \(shown) is out of range: that section has \(count) rows"
        case let .sectionIndexOutOfRange(i, count):
            return "section index \(i) is out of range: the document has \(count) sections"
        case let .unknownItem(id): return "no item \(id) is known to this replica"
        case let .unknownSection(id): return "no section \(id) is known to this replica"
        case let .itemDeleted(id): return "\(id) is deleted"
        case let .sectionDeleted(id): return "\(id) is deleted"
        case let .valueTooLarge(size, limit): return "value of \(size) bytes is over the limit of \(limit) bytes"
        case let .invalidSelection(why): return "invalid selection: \(why)"
        case .counterOverflow: return "the operation counter would overflow"
        case let .invalidField(name, why): return name.isEmpty ? "invalid field write: \(why)" : "field \"\(name)\": \(why)"
        case let .logPositionOutOfRange(i, count):
            return "log position \(i) is out of range: \(count) operations are applied (0...\(count) allowed)"
        }
    }
}

/// Why a remote operation was refused. The document is unchanged after any of these.
public enum ApplyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// An operation with this id is already known with different content (equivocation).
    /// The first one stays; this one is recorded in ``ListDocument/rejectedOperations``.
    case equivocation(OpID)
    /// The operation is malformed: it names a slot, item or section not in its causal past, puts a
    /// slot between origins that are not in order, or breaks the Lamport or counter rules.
    case malformed(OpID, String)
    /// The value is over the document's size limit.
    case valueTooLarge(OpID, size: Int, limit: Int)
    /// The operation's dependencies have not arrived, and the causal buffer is at a limit of
    /// ``ListDocument/pendingLimits``: it was not kept. Receive the missing operations (a sync
    /// session asks the peer for them), then this one again.
    case bufferFull(OpID, PendingLimit)

    public var description: String {
        switch self {
        case let .equivocation(id): return "operation \(id) is already known with different content"
        case let .malformed(id, why): return "operation \(id) is malformed: \(why)"
        case let .valueTooLarge(id, size, limit): return "operation \(id) has a value of \(size) bytes, over the limit of \(limit)"
        case let .bufferFull(id, limit):
            return "operation \(id) waits for operations not received yet, and the causal buffer is at \(limit)"
        }
    }
}

#if !canImport(UIKit) && !canImport(AppKit)
extension IndexPath {
    /// An index path for a row of a table: `[section, item]` (UIKit's initializer, for Linux).
    /// Built from `init(index:)` and `append(_:)`, which keep two indices inline: an array literal
    /// would allocate on every call.
    public init(item: Int, section: Int) {
        self.init(index: section)
        append(item)
    }
    /// The section of a table index path.
    public var section: Int { self[0] }
    /// The row of a table index path.
    public var item: Int { self[1] }
    /// An index path for a row of a table (UIKit's spelling, for Linux).
    public init(row: Int, section: Int) { self.init(item: row, section: section) }
    /// The row of a table index path (UIKit's spelling, for Linux).
    public var row: Int { self[1] }
}
#endif
