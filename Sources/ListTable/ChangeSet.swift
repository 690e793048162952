import Foundation
import ListCRDT

/// The difference between two snapshots, in the form `UITableView.performBatchUpdates(_:)`
/// accepts: what to delete, insert, move and reload so that a table showing the old snapshot
/// shows the new one, with the animations a user expects.
///
/// Apply it with UIKit's batch-update rules (see `Docs/ChangeSets.md`):
///
/// ```swift
/// tableView.performBatchUpdates {
///     tableView.deleteSections(changes.deletedSections, with: .automatic)
///     tableView.insertSections(changes.insertedSections, with: .automatic)
///     for m in changes.movedSections { tableView.moveSection(m.from, toSection: m.to) }
///     tableView.reloadSections(changes.reloadedSections, with: .automatic)
///     tableView.deleteRows(at: changes.deletedItems, with: .automatic)
///     tableView.insertRows(at: changes.insertedItems, with: .automatic)
///     for m in changes.movedItems { tableView.moveRow(at: m.from, to: m.to) }
///     tableView.reloadRows(at: changes.reloadedItems, with: .automatic)
/// } completion: { _ in
///     // moved rows and sections whose value changed: refresh them in place (new positions)
///     tableView.reconfigureRows(at: changes.reconfiguredItems)
///     for s in changes.reconfiguredSections { /* update the header of section s */ }
/// }
/// ```
///
/// The rules it keeps:
/// - deletes and reloads name **old** positions; inserts and move destinations name **new**
///   positions; a move's source is old;
/// - the items of a deleted or inserted section are not listed one by one;
/// - an item that stays in its section while the section moves needs no move;
/// - moves are minimal: surviving sections, and the items that stay in their section, keep their
///   relative order except for a smallest set that must move (the complement of a longest
///   increasing subsequence), so an item that only shifted because others moved gets no move;
/// - an item that changes section between two surviving sections is a real move; an item leaving a
///   deleted section or entering an inserted one is a delete plus an insert (UIKit does not move
///   rows out of a deleted section or into an inserted one);
/// - no position is reloaded and moved at once (UIKit rejects that): a moved item whose value
///   changed is listed in ``reconfiguredItems`` by its new index path, for after the batch;
/// - a section is reloaded (``reloadedSections``, old index) only if it does not move and none of
///   its rows is deleted, inserted, moved or reloaded (a section reload redraws all its rows and
///   must not be mixed with row updates in it); any other section whose value changed is listed in
///   ``reconfiguredSections`` by its new index, for after the batch.
public struct ChangeSet: Hashable, Sendable {
    /// A move from an old position to a new one.
    public struct Move<Position: Hashable & Sendable>: Hashable, Sendable {
        /// The position before the update (old coordinates).
        public var from: Position
        /// The position after the update (new coordinates).
        public var to: Position
        /// Makes a move.
        public init(from: Position, to: Position) {
            self.from = from
            self.to = to
        }
    }

    /// Sections to delete, by old index.
    public var deletedSections = IndexSet()
    /// Sections to insert, by new index (their rows come from the data source).
    public var insertedSections = IndexSet()
    /// Sections that move, old index to new index.
    public var movedSections: [Move<Int>] = []
    /// Sections to reload because their value changed, by old index.
    public var reloadedSections = IndexSet()
    /// Rows to delete, by old index path, sorted.
    public var deletedItems: [IndexPath] = []
    /// Rows to insert, by new index path, sorted.
    public var insertedItems: [IndexPath] = []
    /// Rows that move, old index path to new index path (across sections too), sorted by source.
    public var movedItems: [Move<IndexPath>] = []
    /// Rows to reload because their value changed, by old index path, sorted.
    public var reloadedItems: [IndexPath] = []
    /// Moved rows whose value changed, by new index path: refresh them after the batch update.
    public var reconfiguredItems: [IndexPath] = []
    /// Sections whose value changed but that cannot be reloaded in the batch, by new index:
    /// refresh their header and footer after the batch update.
    public var reconfiguredSections = IndexSet()
    /// Local moves that lost to a concurrent move by another replica in this change (filled by
    /// ``LiveDocument``; a change set made from two snapshots alone has none).
    public var lostMoves: [LostMove] = []
    /// Field writes of this replica that lost to a concurrent write of another in this change
    /// (Docs/Semantics.md §8.3: which field, the value that won, the one that lost, whose);
    /// filled by ``LiveDocument``.
    public var lostFields: [FieldConflict] = []
    /// How the text fields of reloaded or reconfigured items and sections changed, as the fewest
    /// splices from the old text to the new (scalar positions; `TextPositions` converts them):
    /// a text view showing one applies them in order and moves its caret through them
    /// (`TextChanges.position(_:through:)`) instead of resetting its text. Only fields that show
    /// text before and after; a field that became text or stopped being text is in the item's
    /// reload alone.
    public var textChanges: [TextFieldChange] = []
    /// Whether the table should reload everything (`tableView.reloadData()`) instead of applying
    /// row changes: set, with every other table field empty, for a catch-up that touched more
    /// rows than ``reloadThreshold(rows:)`` allows (``LiveDocument/publishHeldChanges()``).
    public var reloadsData = false

    /// An empty change set.
    public init() {}

    /// Whether the table has nothing to do (``lostMoves`` are not counted).
    public var hasNoTableChanges: Bool {
        !reloadsData && deletedSections.isEmpty && insertedSections.isEmpty && movedSections.isEmpty
            && reloadedSections.isEmpty && deletedItems.isEmpty && insertedItems.isEmpty
            && movedItems.isEmpty && reloadedItems.isEmpty && reconfiguredItems.isEmpty
            && reconfiguredSections.isEmpty
    }

    /// Whether there is nothing at all: no table change and no lost move.
    public var isEmpty: Bool { hasNoTableChanges && lostMoves.isEmpty && lostFields.isEmpty }
}

/// A local move that lost to a concurrent move of the same item (or section) by another replica
/// (SEMANTICS §3.2): the item is at the winner's destination, not where the local user put it.
///
/// "Concurrent" means the winner's author had not seen the local move; a later move by someone
/// who had seen it is an ordinary edit, not a lost move.
public struct LostMove: Hashable, Sendable {
    /// What was moved.
    public enum Subject: Hashable, Sendable {
        /// An item.
        case item(ItemID)
        /// A section.
        case section(SectionID)
    }

    /// The item or section whose local move lost.
    public var subject: Subject
    /// The local move operation that lost.
    public var localOperation: ListOperation
    /// The id of the concurrent operation whose position write won.
    public var winner: OpID

    /// Makes a record.
    public init(subject: Subject, localOperation: ListOperation, winner: OpID) {
        self.subject = subject
        self.localOperation = localOperation
        self.winner = winner
    }

    /// The item whose move lost, or nil for a section.
    public var item: ItemID? {
        if case .item(let id) = subject { return id }
        return nil
    }

    /// The section whose move lost, or nil for an item.
    public var section: SectionID? {
        if case .section(let id) = subject { return id }
        return nil
    }
}

/// How one text field changed in a ``ChangeSet``: the fewest splices from its old text to its new.
public struct TextFieldChange: Hashable, Sendable {
    /// The item or section.
    public var target: RecordTarget
    /// The text field.
    public var field: String
    /// The splices, in order, in Unicode scalars (each at a position of the text as the ones
    /// before it left it).
    public var splices: [TextSplice]

    /// Makes a change.
    public init(target: RecordTarget, field: String, splices: [TextSplice]) {
        (self.target, self.field, self.splices) = (target, field, splices)
    }
}
