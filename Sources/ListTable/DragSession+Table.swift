import Foundation
import ListCRDT

/// What a table's data source asks while a drag is live (UITableView+Reorder's helpers).
extension DragSession {
    /// The placeholder's visible index path, or nil when no drag is live.
    public var placeholderIndexPath: IndexPath? { isDragging ? placeholder.indexPath : nil }

    /// The number of sections the table shows (the document's, as of the last sync).
    /// Throws when no drag is live.
    public func numberOfSections() throws(DragError) -> Int {
        guard isDragging else { throw .notDragging }
        return base.sections.count
    }

    /// The number of rows of a section as the user sees it: the document's count, less the lifted
    /// items in it, plus one if the placeholder is in it (so with one lifted item, the source
    /// section has one row less and the destination one more while they differ).
    /// Throws when no drag is live or the section is out of range.
    public func numberOfRows(inSection section: Int) throws(DragError) -> Int {
        guard isDragging else { throw .notDragging }
        guard base.sections.indices.contains(section) else {
            throw .sectionOutOfRange(section, count: base.sections.count)
        }
        return rowsWithoutLifted(section) + (placeholder.sectionIndex == section ? 1 : 0)
    }

    /// Adjusts a data-source row count to what the user sees (UITableView+Reorder's
    /// `adjustedValueForReorderingOfRowCount:forSection:`): `count` itself when no drag is live
    /// or the section is unknown to the session.
    ///
    /// - Complexity: O(1).
    public func adjustedRowCount(_ count: Int, forSection section: Int) -> Int {
        guard isDragging, liftedRows.indices.contains(section) else { return count }
        return count - liftedRows[section].count + (placeholder.sectionIndex == section ? 1 : 0)
    }

    /// Whether the visible row at `indexPath` is the placeholder, the row to draw as the
    /// empty slot the lifted items will land in (UITableView+Reorder's
    /// `shouldSubstitutePlaceHolderForCellBeingMovedAtIndexPath:`). False when no drag is live.
    public func isPlaceholder(at indexPath: IndexPath) -> Bool {
        isDragging && indexPath == placeholder.indexPath
    }

    /// The data-source (document) index path of the row shown at a visible index path
    /// (UITableView+Reorder's `dataSourceIndexPathFromVisibleIndexPath:`); for the placeholder,
    /// the primary lifted item's. The index path itself when no drag is live.
    /// Throws when the visible index path names no row.
    ///
    /// - Complexity: O(k) for k lifted items.
    public func dataSourceIndexPath(forVisible indexPath: IndexPath) throws(DragError) -> IndexPath {
        guard isDragging else { return indexPath }
        let count = try numberOfRows(inSection: indexPath.count == 2 ? indexPath.section : -1)
        guard indexPath.item >= 0, indexPath.item < count else { throw .indexPathOutOfRange(indexPath, count: count) }
        if indexPath == placeholder.indexPath { return base.indexPath(of: liftedItems[0])! }
        let s = indexPath.section
        var row = indexPath.item
        if s == placeholder.sectionIndex && row > placeholder.row { row -= 1 }
        return IndexPath(item: dataSourceRow(ofUnlifted: row, inSection: s), section: s)
    }

    /// What the table shows at a visible index path: the placeholder, or an item.
    /// Throws when no drag is live or the index path names no row.
    ///
    /// - Complexity: O(k) for k lifted items.
    public func row(atVisible indexPath: IndexPath) throws(DragError) -> VisibleRow {
        guard isDragging else { throw .notDragging }
        let path = try dataSourceIndexPath(forVisible: indexPath)
        if indexPath == placeholder.indexPath { return .placeholder(liftedItems) }
        return .item(base.sections[path.section].items[path.item])
    }

    /// The rows as the user sees them: the document as of the last sync without the lifted items,
    /// with the primary lifted item standing in for the placeholder. The empty snapshot when no
    /// drag is live. Diffing two of these gives the table's change while a drag is live.
    ///
    /// - Complexity: O(n) for n visible items.
    public var visibleSnapshot: ListSnapshot {
        guard isDragging else { return ListSnapshot() }
        let lifted = Set(liftedItems)
        let primary = base.item(at: base.indexPath(of: liftedItems[0])!)!
        var out = base
        for s in out.sections.indices where !liftedRows[s].isEmpty {
            out.sections[s].items.removeAll { lifted.contains($0.id) }
        }
        out.sections[placeholder.sectionIndex].items.insert(primary, at: placeholder.row)
        return out
    }
}

/// A row as the user sees it during a drag.
public enum VisibleRow: Hashable, Sendable {
    /// The placeholder, standing for these lifted items (the first is the primary one).
    case placeholder([ItemID])
    /// An item of the document, as of the session's last sync.
    case item(ListSnapshot.Item)
}

/// What the table must do, produced by a ``DragSession``.
public enum DragEvent: Hashable, Sendable {
    /// Items were lifted; the placeholder is at this visible index path.
    case willMove(items: [ItemID], at: IndexPath)
    /// The placeholder moved between these visible index paths (the finger hovered):
    /// move the placeholder row (`tableView.moveRow(at: from, to: to)`).
    case didMove(from: IndexPath, to: IndexPath)
    /// The document changed during the drag; this is the change of the visible rows (the
    /// placeholder is the primary lifted item in it). Apply it instead of the document's change set.
    case arrangementDidChange(ChangeSet)
    /// The drag ended.
    case didEnd(DragOutcome)
}

/// How a drag ended.
public enum DragOutcome: Hashable, Sendable {
    /// The drop committed this move operation (send it to the other replicas).
    case moved(ListOperation)
    /// The drop put the items where they already were: no operation.
    case droppedInPlace
    /// Nothing was committed.
    case cancelled(DragCancelReason)

    /// The committed operation, if any.
    public var operation: ListOperation? {
        if case .moved(let op) = self { return op }
        return nil
    }
}

/// Why a drag ended without committing.
public enum DragCancelReason: Hashable, Sendable, CustomStringConvertible {
    /// The app called ``DragSession/cancel()`` (the finger left the table, the user pressed Esc…).
    case userCancelled
    /// Every lifted item was deleted by another replica during the drag.
    case liftedItemsDeleted([ItemID])

    public var description: String {
        switch self {
        case .userCancelled: return "the drag was cancelled"
        case .liftedItemsDeleted(let ids):
            return ids.count == 1 ? "the item was deleted by someone else while you were moving it"
                : "the items were deleted by someone else while you were moving them"
        }
    }
}

/// Why a drag session refused an event. The session is unchanged after any of these.
public enum DragError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The event needs a live drag and there is none.
    case notDragging
    /// ``DragSession/begin(at:in:)`` while a drag is live: drop or cancel it first.
    case alreadyDragging
    /// The visible index path names no position: that section has `count` of them.
    case indexPathOutOfRange(IndexPath, count: Int)
    /// The section index is out of range: the table shows `count` sections.
    case sectionOutOfRange(Int, count: Int)
    /// The selection is empty or names an item twice.
    case invalidSelection(String)
    /// The item is not visible in the document.
    case itemNotVisible(ItemID)
    /// The document refused the index path or the move.
    case document(ListError)

    public var description: String {
        switch self {
        case .notDragging: return "no drag is in progress"
        case .alreadyDragging: return "a drag is already in progress: drop or cancel it first"
        case let .indexPathOutOfRange(p, count):
            return "visible index path \(Array(p)) is out of range: that section has \(count) positions"
        case let .sectionOutOfRange(s, count): return "section \(s) is out of range: the table shows \(count) sections"
        case let .invalidSelection(why): return "invalid selection: \(why)"
        case let .itemNotVisible(id): return "\(id) is not visible"
        case let .document(error): return error.description
        }
    }
}
