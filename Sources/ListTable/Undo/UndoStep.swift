import Foundation
import ListCRDT

// What an undo remembers of one recorded step: for every section and item the step touched, the
// state to bring back (`target`) and the state the step left (`expected`). Undo compares the
// entity as it is now with `expected`: what someone else changed since is theirs and is kept
// (Docs/Semantics.md, "Undo and redo").

/// Where a visible item stands: its section, its row, and its neighbours by identity.
struct ItemPlace: Hashable, Sendable {
    /// The section holding it.
    var section: SectionID
    /// That section's index (orders the items of a step, left to right).
    var sectionIndex: Int
    /// Its row (the fallback when both neighbours are gone).
    var row: Int
    /// The visible item right above it (nil at the top).
    var after: ItemID?
    /// The visible item right below it (nil at the bottom).
    var before: ItemID?
}

/// Where a visible section stands: its index and its neighbours by identity.
struct SectionPlace: Hashable, Sendable {
    /// Its index (the fallback when both neighbours are gone).
    var index: Int
    /// The visible section right before it (nil first).
    var after: SectionID?
    /// The visible section right after it (nil last).
    var before: SectionID?
}

/// What undo needs to know of one section or item at one moment.
struct EntityState<Place: Hashable & Sendable>: Hashable, Sendable {
    /// Where it is shown; nil when it is not (deleted, or not inserted yet).
    var place: Place?
    /// Its value register (a deleted entity keeps it); nil when the entity is unknown.
    var value: Data?
    /// The logical id of its winning position write (``UndoTrack/logical(_:of:)``); nil when
    /// the entity is unknown.
    var write: OpID?
    /// Its fields as shown (a deleted entity keeps them).
    var fields: [String: Field] = [:]

    /// Whether the entity is shown.
    var isShown: Bool { place != nil }

    /// Whether bringing an entity from `self` back to `target` would do anything: show or hide
    /// it, or, while shown in both, move it or change its value.
    func differs(from target: EntityState) -> Bool {
        if isShown != target.isShown { return true }
        return isShown && (write != target.write || value != target.value || fields != target.fields)
    }
}

/// One entity's part of a step: the state to bring back and the state the step left.
struct Change<ID: Hashable & Sendable, Place: Hashable & Sendable>: Hashable, Sendable {
    /// The entity, as named when the change was recorded (``UndoTrack/resolve(_:)`` finds it now).
    var id: ID
    /// The state to bring back.
    var target: EntityState<Place>
    /// The state the step left.
    var expected: EntityState<Place>
    /// The text fields the step typed into or removed text from, taken back by identity (U11).
    var texts: [String: TextTakeBack] = [:]
}

/// What one step did to one text field, by identity (U11, Docs/Semantics.md §8.8): the
/// characters it typed and those it removed, so that undo removes the first and types the second
/// again, leaving everyone else's typing in the field where it is.
struct TextTakeBack: Hashable, Sendable {
    /// The characters the step typed (its operations' ids).
    var typed: [TextRange] = []
    /// The characters the step removed that it had not typed itself, in text order, with what
    /// they were (typed again by undo, as new characters).
    var removed: [TextCharacter] = []

    var isEmpty: Bool { typed.isEmpty && removed.isEmpty }
}

typealias ItemChange = Change<ItemID, ItemPlace>
typealias SectionChange = Change<SectionID, SectionPlace>

/// One recorded step (the operations of one `edit` closure, one drop, one undo of a step) as the
/// changes that take it back.
struct UndoStep: Hashable, Sendable {
    var sections: [SectionChange] = []
    var items: [ItemChange] = []

    /// Whether taking the step back would do nothing.
    var isEmpty: Bool { sections.isEmpty && items.isEmpty }
}

/// Replacement identities and position labels of one kind of entity (sections or items).
///
/// **Replacements.** A deleted entity cannot be shown again through the document's public API,
/// so undoing a delete inserts a copy with a new identity; `resolve` maps the old identity (and
/// every older one) to the copy, so older steps still find it.
///
/// **Labels.** Undo compares position writes to tell whether someone else moved an entity since
/// the step. A move made by undo or redo is a new write that *stands for* the write of the state
/// it brought back; a label says so, and ``logical(_:of:)`` reads writes through it. Only the
/// entity's latest label is kept: a write that stops winning never wins again.
struct UndoTrack<ID: Hashable & Sendable>: Sendable {
    struct Label: Hashable, Sendable {
        var write: OpID
        var standsFor: OpID
    }

    private(set) var replacements: [ID: ID] = [:]
    private(set) var labels: [ID: Label] = [:]

    /// The identity that stands for `id` now (itself unless it was replaced), compressing the
    /// chain of replacements on the way.
    ///
    /// - Complexity: O(k) for a chain of k replacements, amortized O(1).
    mutating func resolve(_ id: ID) -> ID {
        var last = id
        while let next = replacements[last] { last = next }
        var x = id
        while let next = replacements[x], next != last {
            replacements[x] = last
            x = next
        }
        return last
    }

    /// Records that `new` replaces `old` (a copy made by undo or redo).
    mutating func replace(_ old: ID, with new: ID) {
        precondition(old != new && replacements[new] == nil, "a replacement is a new identity")
        replacements[old] = new
    }

    /// The write `write` of `id` as undo compares it: what it stands for if undo or redo made it.
    func logical(_ write: OpID, of id: ID) -> OpID {
        if let label = labels[id], label.write == write { return label.standsFor }
        return write
    }

    /// Records that `id`'s winning write `write` stands for the state whose write was `standsFor`.
    mutating func label(_ id: ID, write: OpID, standsFor: OpID) {
        labels[id] = write == standsFor ? nil : Label(write: write, standsFor: standsFor)
    }
}

/// The tracks of both kinds of entity.
struct UndoTracks: Sendable {
    var sections = UndoTrack<SectionID>()
    var items = UndoTrack<ItemID>()
    /// Text characters typed again by undo or redo (U11): each stands for the removed character
    /// it brings back, so older steps that typed that character find it.
    var characters = UndoTrack<OpID>()
    /// The value fields the last undo or redo left as they were, because someone else wrote them
    /// since the step (U9).
    var kept: [KeptField] = []
}

/// A value field that an undo or redo did not write back, because another write replaced the
/// one the step made (Docs/Semantics.md §8.8): undo says so rather than erasing it.
public struct KeptField: Hashable, Sendable, CustomStringConvertible {
    /// The section or item.
    public var target: RecordTarget
    /// The field.
    public var name: String
    /// What it shows now (someone else's), kept.
    public var now: Field?
    /// What undo would have brought back.
    public var wanted: Field?

    public var description: String {
        "\(target) field \"\(name)\" was changed by someone else since (\(now.map(\.description) ?? "removed")); undo kept it"
    }
}

// MARK: Recording

extension UndoStep {
    /// The step that takes back `operations`, made on `before` and giving `after`. Entities the
    /// operations touched but left as they were are left out.
    ///
    /// - Complexity: O(k log n) for k entities touched, n items.
    init(recording operations: [ListOperation], before: ListDocument, after: ListDocument, tracks: UndoTracks) {
        var sectionIDs: [SectionID] = [], itemIDs: [ItemID] = []
        var seenSections = Set<SectionID>(), seenItems = Set<ItemID>()
        func touch(_ s: SectionID) { if seenSections.insert(s).inserted { sectionIDs.append(s) } }
        func touch(_ i: ItemID) { if seenItems.insert(i).inserted { itemIDs.append(i) } }
        var texts: [RecordTarget: [String: TextEdits]] = [:]
        for op in operations {
            if case let .writeFields(target, writes) = op.kind { Self.collectText(writes, of: op.id, target: target, into: &texts) }
            switch op.kind {
            case .insertSection, .insertSectionWithFields: touch(SectionID(op.id))
            case .moveSection(let s, _), .setSectionValue(let s, _): touch(s)
            case .deleteSection(let s, _, let seen):
                touch(s)
                for record in seen { touch(record.item) }
            case .insertItem, .insertItemWithFields: touch(ItemID(op.id))
            case .moveItems(let ids, _, _): for i in ids { touch(i) }
            case .deleteItem(let i, _), .setItemValue(let i, _): touch(i)
            case .writeFields(.item(let i), _): touch(i)
            case .writeFields(.section(let s), _): touch(s)
            }
        }
        for s in sectionIDs {
            var change = SectionChange(id: s, target: before.undoState(of: s, track: tracks.sections),
                                       expected: after.undoState(of: s, track: tracks.sections))
            change.texts = Self.takeBacks(texts[.section(s)], of: .section(s), change.target.fields, change.expected.fields, before: before)
            if change.expected.differs(from: change.target) { sections.append(change) }
        }
        for i in itemIDs {
            var change = ItemChange(id: i, target: before.undoState(of: i, track: tracks.items),
                                    expected: after.undoState(of: i, track: tracks.items))
            change.texts = Self.takeBacks(texts[.item(i)], of: .item(i), change.target.fields, change.expected.fields, before: before)
            if change.expected.differs(from: change.target) { items.append(change) }
        }
    }

    /// What a step's operations did to one text field, by identity, as recorded.
    struct TextEdits {
        var typed: [TextRange] = []
        var removed: [TextRange] = []
    }

    /// Adds the text edits of operation `id`'s `writes` to `texts`: the characters it typed (ids
    /// `id`, `id + 1`, …) and those it removed.
    static func collectText(_ writes: FieldWrites, of id: OpID, target: RecordTarget,
                            into texts: inout [RecordTarget: [String: TextEdits]]) {
        for w in writes.writes {
            guard case .text(let edit) = w.change else { continue }
            let n = edit.insertedCount
            if n > 0 { texts[target, default: [:]][w.name, default: TextEdits()].typed.append(TextRange(first: id, count: n)) }
            texts[target, default: [:]][w.name, default: TextEdits()].removed += edit.deletes
        }
    }

    /// The text fields taken back by identity: those that were text before the step and after it
    /// (a step that made a field text, or replaced its text by a value, is taken back whole).
    /// A removed character the step had typed itself is not typed again; the others get their
    /// text, in text order, from `before`.
    ///
    /// - Complexity: O(k log n) for k characters typed and removed.
    static func takeBacks(_ edits: [String: TextEdits]?, of target: RecordTarget, _ before: [String: Field],
                          _ after: [String: Field], before document: ListDocument) -> [String: TextTakeBack] {
        guard let edits else { return [:] }
        var out: [String: TextTakeBack] = [:]
        for (name, e) in edits {
            guard case .text? = before[name], case .text? = after[name] else { continue }
            // Characters the step typed are not in `before`: textCharacters leaves them out.
            let t = TextTakeBack(typed: e.typed, removed: document.textCharacters(name, of: target, in: e.removed))
            if !t.isEmpty { out[name] = t }
        }
        return out
    }
}

// MARK: Reading states

extension ListDocument {
    /// How an item stands now, as undo sees it.
    ///
    /// - Complexity: O(log n).
    func undoState(of id: ItemID, track: UndoTrack<ItemID>) -> EntityState<ItemPlace> {
        let write = winningPositionWrite(of: id).map { track.logical($0, of: id) }
        guard let path = indexPath(of: id) else {
            return EntityState(place: nil, value: value(of: id), write: write, fields: fields(of: id))
        }
        let (s, row) = (path.section, path.item)
        let count = undoMust { () throws(ListError) in try itemCount(inSection: s) }
        let section = undoMust { () throws(ListError) in try sectionID(at: s) }
        let after = row > 0 ? undoMust { () throws(ListError) in try itemID(at: IndexPath(item: row - 1, section: s)) } : nil
        let before = row + 1 < count ? undoMust { () throws(ListError) in try itemID(at: IndexPath(item: row + 1, section: s)) } : nil
        let place = ItemPlace(section: section, sectionIndex: s, row: row, after: after, before: before)
        return EntityState(place: place, value: value(of: id), write: write, fields: fields(of: id))
    }

    /// How a section stands now, as undo sees it.
    ///
    /// - Complexity: O(log s) for s sections.
    func undoState(of id: SectionID, track: UndoTrack<SectionID>) -> EntityState<SectionPlace> {
        let write = winningPositionWrite(of: id).map { track.logical($0, of: id) }
        guard let index = index(of: id) else {
            return EntityState(place: nil, value: value(of: id), write: write, fields: fields(of: id))
        }
        let after = index > 0 ? undoMust { () throws(ListError) in try sectionID(at: index - 1) } : nil
        let before = index + 1 < sectionCount ? undoMust { () throws(ListError) in try sectionID(at: index + 1) } : nil
        return EntityState(place: SectionPlace(index: index, after: after, before: before), value: value(of: id), write: write,
                           fields: fields(of: id))
    }
}

/// Runs a document query whose arguments were just checked, so it cannot throw.
@inline(__always)
func undoMust<T>(_ body: () throws(ListError) -> T) -> T {
    do { return try body() } catch { preconditionFailure("a query on a checked position failed: \(error)") }
}
