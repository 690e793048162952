import Foundation
import ListCRDT
import Observation

/// An observable model of a ``LiveDocument`` for SwiftUI: its sections and items as `Identifiable`
/// values with their decoded values, kept up to date on the main actor, and the edits of SwiftUI's
/// conventions (`onMove`, `onDelete`) resolved by identity.
///
/// ```swift
/// @State var model = ListModel<Column, Card>(live)            // live: the replica's LiveDocument
///
/// List {
///     ForEach(model.sections) { column in
///         Section(column.value.title) {
///             ForEach(column.items) { card in Text(card.value.text) }
///                 .onMove { try? send(model.moveItems(fromOffsets: $0, toOffset: $1, inSection: column.id)) }
///                 .onDelete { try? send(model.deleteItems(atOffsets: $0, inSection: column.id)) }
///         }
///     }
/// }
/// .task { await model.followChanges() }                       // remote changes, as they come
/// ```
///
/// **What it shows.** ``snapshot`` (and ``sections``, its sections) is a ``TypedSnapshot``: each
/// section and item has its identity (``SectionID``, ``ItemID``: stable for its whole life, across
/// moves and on every replica) as its `Identifiable` id, and its value decoded through ``coder``.
/// `List` and `ForEach` therefore animate inserts, deletes and moves by identity; nothing is
/// reloaded. A value that does not decode is left out (a section with its items) and reported in
/// ``decodingFailures``.
///
/// **How it stays up to date.** The model reads the ``LiveDocument``'s snapshot and never keeps a
/// document of its own, so it shows whatever was done to that document, by anyone, as soon as it
/// refreshes:
/// - its own edits (the methods below) refresh it before they return;
/// - ``receive(_:)-(S)`` applies remote operations and refreshes it, for a sync layer that hands
///   operations to the main actor;
/// - ``followChanges()`` refreshes it after every change set of ``LiveDocument/changes()``, for a
///   sync layer that applies operations to the `LiveDocument` from its own thread or task (run it in
///   SwiftUI's `.task { await model.followChanges() }`, which cancels it with the view);
/// - ``refresh()`` does it once, for any other caller.
///
/// A refresh that finds nothing new (the document's operation count did not move, or the new
/// operations changed nothing shown) changes no property, so observers see one change per change
/// of what is shown, whichever of these paths reported it first.
///
/// **Cost of a refresh.** O(n) for n visible sections and items: the new snapshot is compared with
/// the last, by identity and bytes. Values are not decoded again unless their bytes changed, and a
/// section whose bytes did not change keeps its entry (its items array is shared, not rebuilt).
/// The ``LiveDocument`` underneath already costs O(n log n) per change (its snapshot and diff), so
/// the model does not change the order of a change's cost.
///
/// **Edits resolve by identity.** SwiftUI passes offsets in the rows it showed. The model maps
/// them to identities in what *it* shows (what the user saw), then applies the edit to the document
/// as it is at that moment, which may hold remote changes the model has not shown yet: moved rows
/// land between the same neighbours the user saw (the rules of ``DragSession``'s placeholder, see
/// `Docs/SwiftUI.md`), rows deleted remotely meanwhile are left out of a move or a delete. Every
/// edit returns the operations to send to the other replicas and throws a ``ListModelError``,
/// changing nothing, on bad input.
///
/// **Undo.** Every edit of the model goes through one funnel, `perform(_:)`, into
/// ``LiveDocument/edit(actionName:_:)``: each is one undo group of ``live`` (``LiveDocument/undo()``,
/// ``UndoBridge`` for an `UndoManager`). The model does not register with SwiftUI's
/// `@Environment(\.undoManager)` by itself yet. ``syncState`` is the hook for a sync client's
/// state; nothing sets it yet.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
@MainActor
@Observable
public final class ListModel<Section: Codable & Sendable, Item: Codable & Sendable> {
    /// What the model shows: sections and items with their decoded values.
    public typealias Snapshot = TypedSnapshot<Section, Item>
    /// One shown section (`Identifiable` by its ``SectionID``), with its items.
    public typealias SectionEntry = TypedSnapshot<Section, Item>.SectionEntry
    /// One shown item (`Identifiable` by its ``ItemID``).
    public typealias ItemEntry = TypedSnapshot<Section, Item>.ItemEntry

    /// What the list shows: the visible sections and items whose values decode, in order, with
    /// queries by position and by identity (O(1)).
    public private(set) var snapshot = Snapshot()

    /// The values of the document that do not decode with ``coder`` (another replica wrote
    /// another type or format): they are not shown. Empty in a healthy document.
    public private(set) var decodingFailures: [TypedDocumentError] = []

    /// How the document stands with its sync peers, set by the sync client on the main actor (the
    /// model never sets it: ``SyncState/unknown`` until a client does).
    public var syncState = SyncState.unknown

    /// The document this model shows: sync it (send what the edits return, apply what arrives
    /// with ``receive(_:)-(S)`` or ``LiveDocument/receive(_:)-(S)``).
    public let live: LiveDocument

    /// The coder between the document's bytes and `Section` and `Item` values.
    public let coder: any ValueCoder

    /// The decoded rows and the bytes they were decoded from.
    @ObservationIgnored private var rows = DecodedRows<Section, Item>()
    /// The document's operation count when the model last refreshed (-1: never).
    @ObservationIgnored private var shownOperationCount = -1

    /// A model of `live`, whose values `coder` decodes (every replica must use the same coder).
    ///
    /// - Complexity: O(n) decodes for n visible sections and items.
    public init(_ live: LiveDocument, coder: any ValueCoder = JSONValueCoder()) {
        self.live = live
        self.coder = coder
        refresh()
    }

    /// A model of a new ``LiveDocument`` wrapping `document`, with its coder.
    ///
    /// - Complexity: O(n) decodes for n visible sections and items.
    public convenience init(_ document: TypedDocument<Section, Item>) {
        self.init(LiveDocument(document.document), coder: document.coder)
    }

    /// The shown sections, in order, each with its shown items (`ForEach(model.sections)`).
    public var sections: [SectionEntry] { snapshot.sections }

    // MARK: Staying up to date

    /// Shows the document as it is now. Changes no property when nothing shown changed.
    ///
    /// - Complexity: O(1) when the document applied no operation since the last refresh;
    ///   otherwise O(n) for n visible sections and items, plus one decode per new or changed value
    ///   (see the type's discussion).
    public func refresh() {
        let (raw, count) = live.countedSnapshot
        guard count != shownOperationCount else { return }
        shownOperationCount = count
        if rows.update(to: raw, coder: coder) { snapshot = rows.typed }
        let failures = rows.failures
        if !(failures.isEmpty && decodingFailures.isEmpty)
            && failures.map(\.description) != decodingFailures.map(\.description) {
            decodingFailures = failures
        }
    }

    /// Applies operations from other replicas to the document (see
    /// ``LiveDocument/receive(_:)-(S)``) and shows the result.
    ///
    /// The change set is the `LiveDocument`'s (for its ``ChangeSet/lostMoves``); the model needs
    /// none. The report says what happened to each operation.
    ///
    /// - Complexity: the `LiveDocument`'s receive, plus a refresh.
    @discardableResult
    public func receive<S: Sequence>(_ operations: S) -> (changes: ChangeSet, report: ReceiveReport)
    where S.Element == ListOperation {
        let result = live.receive(operations)
        refresh()
        return result
    }

    /// Refreshes the model after every change of the document, until the task is cancelled or
    /// the `LiveDocument` is closed (``LiveDocument/close()``); refreshes once first, for what
    /// changed before the call.
    ///
    /// For SwiftUI: `.task { await model.followChanges() }`. Change sets that arrive while the
    /// main actor is busy are caught up by one refresh; the others find nothing new. A
    /// `LiveDocument` made with ``LiveDocument/init(withoutChangeSets:)`` sends no change sets:
    /// this then refreshes once and waits for the end.
    ///
    /// - Complexity: one refresh per change set of ``LiveDocument/changes()``.
    public func followChanges() async {
        let changes = live.changes()
        refresh()
        for await _ in changes {
            refresh()
        }
    }

    // MARK: The funnel

    /// Runs one edit on the document, all or nothing, then shows the result. Every edit of the
    /// model goes through here (undo registration, issue 28, belongs here).
    func perform<R: Sendable>(_ body: (inout ListDocument) throws(ListModelError) -> R)
    throws(ListModelError) -> (result: R, operations: [ListOperation]) {
        let edit = try live.edit(body)
        refresh()
        return (edit.result, edit.operations)
    }

    /// Runs a document call, wrapping its error.
    static func attempt<R>(_ body: () throws(ListError) -> R) throws(ListModelError) -> R {
        do { return try body() } catch { throw .document(error) }
    }

    /// What inserting `value` writes (``TypedInsert``), or ``ListModelError/encodingFailed(_:)``.
    func plan<T: Encodable>(_ value: T) throws(ListModelError) -> TypedInsert {
        do { return try TypedInsert(value, coder: coder) } catch { throw .encodingFailed(error) }
    }
}
