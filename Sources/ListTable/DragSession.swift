import Foundation
import ListCRDT

/// A drag to reorder rows, in the deferred model of UITableView+Reorder (SEMANTICS §4): while the
/// finger moves, only a placeholder row moves and the document does not change; when the finger
/// lifts, exactly one move operation is committed.
///
/// A struct state machine with no UIKit and no I/O: each call is an event in; what the table
/// must do comes out as ``DragEvent``s, collected until ``takeEvents()``.
///
/// ```swift
/// var drag = DragSession()
/// try drag.begin(at: IndexPath(item: 2, section: 0), in: document)   // lifts; nothing written
/// try drag.update(to: IndexPath(item: 0, section: 1))                 // hovers; nothing written
/// let op = try drag.drop(into: &document)                             // one move op
/// ```
///
/// **Coordinates.** The session talks in *visible* index paths: the rows as the user sees them,
/// where the lifted items are gone from their places and one placeholder row stands where they
/// will land. The document's own positions are *data-source* index paths; see
/// ``dataSourceIndexPath(forVisible:)``. A visible row of section `s` that can hold the
/// placeholder is `0...n` where `n` is the number of rows of `s` without the lifted items, so the
/// placeholder's index path is exactly UITableView's `moveRowAt` destination: where the row is
/// after the move.
///
/// **Remote changes.** The session follows identities: the lifted items, the placeholder's
/// section and the rows right above and below it. After the document changes, call
/// ``documentDidChange(_:)``. The placeholder stays at the top of its section if it was at the
/// top; otherwise right below the row that was above it; if that row left the section, at the
/// bottom if it was at the bottom, else right above the row that was below it; if both left, at
/// the same row number, clamped. If the placeholder's section is gone, the placeholder falls back
/// to the lifted item's own position. Lifted items deleted remotely leave the selection; if every
/// lifted item was deleted, the drag ends cancelled with ``DragCancelReason/liftedItemsDeleted(_:)``.
public struct DragSession: Sendable {
    /// Where a session is.
    public enum Phase: Hashable, Sendable {
        /// Nothing lifted yet.
        case idle
        /// Items are lifted; the placeholder follows the finger.
        case dragging
        /// The drag ended (a new ``begin(at:in:)`` starts another).
        case ended(DragOutcome)
    }

    /// The current phase.
    public private(set) var phase: Phase = .idle

    // Live state (meaningful while dragging).
    /// The document as of the last sync (data-source coordinates).
    var base = ListSnapshot()
    /// The lifted items, in selection order; the first is the primary one.
    public private(set) var liftedItems: [ItemID] = []
    /// Per section of `base`, the sorted data-source rows of lifted items.
    var liftedRows: [[Int]] = []
    /// Where the placeholder is.
    var placeholder = Placeholder(section: SectionID(.none), sectionIndex: 0, row: 0, after: nil, before: nil)
    /// The document version `base` was taken at.
    var syncedVersion = VersionVector()
    var outbox: [DragEvent] = []

    /// The placeholder row: a visible position plus the identities it is anchored to.
    struct Placeholder: Hashable, Sendable {
        var section: SectionID
        var sectionIndex: Int
        var row: Int
        /// The visible (not lifted) item right above, and right below, the placeholder.
        var after: ItemID?
        var before: ItemID?
        var indexPath: IndexPath { IndexPath(item: row, section: sectionIndex) }
    }

    /// A session with nothing lifted.
    public init() {}

    /// Whether items are lifted.
    public var isDragging: Bool { phase == .dragging }

    /// The events since the last call, oldest first; empties the queue.
    public mutating func takeEvents() -> [DragEvent] {
        defer { outbox = [] }
        return outbox
    }

    // MARK: Events in

    /// Lifts the item at a (data-source) index path. Nothing is written to the document.
    ///
    /// Emits ``DragEvent/willMove(items:at:)``. Throws, and changes nothing, when a drag is live or
    /// the index path names no row.
    ///
    /// - Complexity: O(n) for n visible items (the session keeps the arrangement it shows).
    public mutating func begin(at indexPath: IndexPath, in document: ListDocument) throws(DragError) {
        guard !isDragging else { throw .alreadyDragging }
        try begin(items: [try Self.item(at: indexPath, in: document)], in: document)
    }

    /// Lifts the items at these (data-source) index paths, a selection that will land together in
    /// this order; the first is the primary item, whose place the placeholder takes.
    ///
    /// - Complexity: O(n + k log n) for n visible items and k selected.
    public mutating func begin(at indexPaths: [IndexPath], in document: ListDocument) throws(DragError) {
        guard !isDragging else { throw .alreadyDragging }
        var items: [ItemID] = []
        for p in indexPaths { items.append(try Self.item(at: p, in: document)) }
        try begin(items: items, in: document)
    }

    /// Lifts visible items by identity (a selection, in the order it will land in; the first is
    /// the primary item). Nothing is written to the document.
    ///
    /// - Complexity: O(n + k log n) for n visible items and k selected.
    public mutating func begin(items: [ItemID], in document: ListDocument) throws(DragError) {
        guard !isDragging else { throw .alreadyDragging }
        guard !items.isEmpty else { throw .invalidSelection("the selection is empty") }
        guard Set(items).count == items.count else { throw .invalidSelection("an item is selected twice") }
        for id in items where !document.contains(id) { throw .itemNotVisible(id) }
        liftedItems = items
        sync(document.snapshot(), version: document.version)
        placeholder = anchoredPlaceholder(at: primaryHome())
        phase = .dragging
        outbox = [.willMove(items: items, at: placeholder.indexPath)]
    }

    /// Moves the placeholder to a visible index path (where the finger hovers). Nothing is
    /// written to the document.
    ///
    /// `to.item` is in `0...n`, n being the rows of that section without the lifted items (so
    /// `n` in another section is the end of it). Emits ``DragEvent/didMove(from:to:)`` when the
    /// placeholder moves. Throws, and changes nothing, for a position out of range.
    ///
    /// - Complexity: O(k) for k lifted items.
    public mutating func update(to indexPath: IndexPath) throws(DragError) {
        guard isDragging else { throw .notDragging }
        guard indexPath.count == 2, base.sections.indices.contains(indexPath.section) else {
            throw .sectionOutOfRange(indexPath.count == 2 ? indexPath.section : -1, count: base.sections.count)
        }
        let n = rowsWithoutLifted(indexPath.section)
        guard indexPath.item >= 0, indexPath.item <= n else { throw .indexPathOutOfRange(indexPath, count: n + 1) }
        let from = placeholder.indexPath
        guard indexPath != from else { return }
        placeholder = anchoredPlaceholder(at: indexPath)
        outbox.append(.didMove(from: from, to: indexPath))
    }

    /// Ends the drag by committing the move into `document`: exactly one operation (a
    /// ``ListDocument/moveItems(_:to:)`` for a selection), or none when the items land where they
    /// already are. Returns the operation to send to the other replicas.
    ///
    /// If `document` changed since the session last saw it, the session first catches up (as
    /// ``documentDidChange(_:)``), which may end it cancelled: then nothing is committed and the
    /// result is nil. Emits ``DragEvent/didEnd(_:)``. Throws, changing nothing, when no drag is
    /// live or the document refuses the move (the drag then stays live).
    ///
    /// - Complexity: O(log n) for one item, O(k log n + r) for a selection of k landing in a
    ///   section of r rows.
    @discardableResult
    public mutating func drop(into document: inout ListDocument) throws(DragError) -> ListOperation? {
        guard isDragging else { throw .notDragging }
        if document.version != syncedVersion {
            documentDidChange(document)
            guard isDragging else { return nil }
        }
        let target = placeholder.indexPath
        var op: ListOperation?
        if liftedItems.count == 1 {
            guard let from = document.indexPath(of: liftedItems[0]) else { throw .itemNotVisible(liftedItems[0]) }
            do { op = try document.moveItem(from: from, to: target) } catch { throw .document(error) }
        } else if !selectionIsInPlace() {
            do { op = try document.moveItems(liftedItems, to: target) } catch { throw .document(error) }
        }
        let outcome: DragOutcome = op.map { .moved($0) } ?? .droppedInPlace
        end(outcome)
        return op
    }

    /// Ends the drag without writing anything. Emits ``DragEvent/didEnd(_:)`` with
    /// ``DragCancelReason/userCancelled``. Throws when no drag is live.
    public mutating func cancel() throws(DragError) {
        guard isDragging else { throw .notDragging }
        end(.cancelled(.userCancelled))
    }

    /// Catches up with a document that changed during the drag (remote operations, usually):
    /// recomputes the visible arrangement from identities (see the type's discussion).
    ///
    /// Emits ``DragEvent/arrangementDidChange(_:)`` with the change of the *visible* rows (apply
    /// it to the table instead of the document's own change set while the drag is live), and
    /// ``DragEvent/didEnd(_:)`` if every lifted item was deleted. Does nothing when no drag is
    /// live.
    ///
    /// - Complexity: O(n log n) for n visible items (a new snapshot and a diff of the visible
    ///   arrangement).
    public mutating func documentDidChange(_ document: ListDocument) {
        guard isDragging else { return }
        let before = visibleSnapshot
        let oldPlaceholder = placeholder
        let alive = liftedItems.filter { document.contains($0) }
        guard !alive.isEmpty else {
            end(.cancelled(.liftedItemsDeleted(liftedItems)))
            return
        }
        liftedItems = alive
        sync(document.snapshot(), version: document.version)
        if let s = base.indexOfSection(oldPlaceholder.section) {
            let rows = rowsWithoutLifted(in: s)
            let row: Int
            if oldPlaceholder.after == nil {
                row = 0                                           // it was at the top: it stays there
            } else if let a = oldPlaceholder.after, let k = rows.firstIndex(of: a) {
                row = k + 1
            } else if oldPlaceholder.before == nil {
                row = rows.count                                  // it was at the bottom: it stays there
            } else if let b = oldPlaceholder.before, let k = rows.firstIndex(of: b) {
                row = k
            } else {
                row = min(oldPlaceholder.row, rows.count)
            }
            placeholder = anchoredPlaceholder(at: IndexPath(item: row, section: s))
        } else {
            placeholder = anchoredPlaceholder(at: primaryHome())
        }
        let changes = ChangeSet(from: before, to: visibleSnapshot)
        if !changes.isEmpty { outbox.append(.arrangementDidChange(changes)) }
    }

    // MARK: Internals

    /// The item at a data-source index path. (A path that is not `[section, row]` is refused here:
    /// `ListError`'s description cannot print one.)
    static func item(at indexPath: IndexPath, in document: ListDocument) throws(DragError) -> ItemID {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        do { return try document.itemID(at: indexPath) } catch { throw .document(error) }
    }

    private mutating func end(_ outcome: DragOutcome) {
        phase = .ended(outcome)
        outbox.append(.didEnd(outcome))
        base = ListSnapshot()
        liftedRows = []
    }

    /// Takes a new data-source arrangement.
    mutating func sync(_ snapshot: ListSnapshot, version: VersionVector) {
        base = snapshot
        syncedVersion = version
        let lifted = Set(liftedItems)
        liftedRows = base.sections.map { section in
            section.items.indices.filter { lifted.contains(section.items[$0].id) }
        }
    }

    /// The number of rows of section `s` without the lifted items.
    func rowsWithoutLifted(_ s: Int) -> Int { base.sections[s].items.count - liftedRows[s].count }

    /// The identities of the rows of section `s` without the lifted items.
    func rowsWithoutLifted(in s: Int) -> [ItemID] {
        let lifted = Set(liftedItems)
        return base.sections[s].items.lazy.map(\.id).filter { !lifted.contains($0) }
    }

    /// The data-source row of the `row`-th row of section `s` that is not lifted.
    func dataSourceRow(ofUnlifted row: Int, inSection s: Int) -> Int {
        var target = row
        for p in liftedRows[s] where p <= target { target += 1 }
        return target
    }

    /// The primary item's own place, in visible coordinates.
    func primaryHome() -> IndexPath {
        let path = base.indexPath(of: liftedItems[0])!
        let above = liftedRows[path.section].filter { $0 < path.item }.count
        return IndexPath(item: path.item - above, section: path.section)
    }

    /// A placeholder at a visible position, anchored to its neighbours there.
    func anchoredPlaceholder(at path: IndexPath) -> Placeholder {
        let s = path.section, r = path.item
        let n = rowsWithoutLifted(s)
        let items = base.sections[s].items
        let after = r > 0 ? items[dataSourceRow(ofUnlifted: r - 1, inSection: s)].id : nil
        let before = r < n ? items[dataSourceRow(ofUnlifted: r, inSection: s)].id : nil
        return Placeholder(section: base.sections[s].id, sectionIndex: s, row: r, after: after, before: before)
    }

    /// Whether dropping the selection at the placeholder would leave the document as it is.
    func selectionIsInPlace() -> Bool {
        let s = placeholder.sectionIndex
        guard liftedRows[s].count == liftedItems.count else { return false }
        var rows = rowsWithoutLifted(in: s)
        rows.insert(contentsOf: liftedItems, at: placeholder.row)
        return rows == base.sections[s].items.map(\.id)
    }
}
