import Foundation
import ListCRDT
import ListSync
import ListTable

/// The mix of edits a simulated user makes, in percent (the rest, if any, are item inserts).
public struct Workload: Hashable, Sendable {
    public var insertSection = 4
    public var insertItem = 26
    public var deleteItem = 10
    public var deleteSection = 3
    /// Moves of one item, within or across sections.
    public var moveItem = 27
    public var moveSection = 8
    /// Moves of a selection of 1–3 items.
    public var moveItems = 10
    public var setItemValue = 7
    public var setSectionValue = 5
    /// At most this many sections (section inserts are skipped beyond it).
    public var maxSections = 8
    /// Percent of edits that write fields (Docs/Semantics.md §8) of a random item or section,
    /// drawn before the list mix above: value sets and removals, counter increments, set adds
    /// and removes (``FieldEdit``). 0 makes exactly the runs of before fields (no draw is made).
    public var fieldWrites = 20
    /// Percent of a drag session's hover steps at which a client, the dragging one or another,
    /// writes fields of the dragged item while the drag is in progress (``FieldEdit``; Docs/
    /// Simulation.md, "Field writes during a drag"). Drawn only when ``fieldWrites`` is above 0.
    /// 0 by default, so that the random streams of seeds found before are unchanged.
    public var dragFieldWrites = 0
    /// Percent of edits that type into or remove from an item's text field `notes`
    /// (Docs/Semantics.md §8.5; `TextEdit.swift`). 0 by default, so that the random streams of
    /// seeds found before text fields are unchanged.
    public var textEdits = 0
    /// Percent of section inserts that carry their first fields, one operation (wire format 5;
    /// ``FieldEdit/randomInsert(using:)``). 0 by default, so that the random streams of seeds
    /// found before are unchanged.
    public var sectionInsertFields = 0

    /// The default mix: 45% moves, every kind of edit.
    public init() {}

    /// Percent of edits that are moves.
    public var movePercent: Int { moveItem + moveSection + moveItems }
}

/// One random user edit, by index, as a table view would make it.
public enum RandomEdit: Hashable, Sendable, CustomStringConvertible {
    case insertSection(Int, value: String)
    case insertItem(IndexPath, value: String)
    case deleteItem(IndexPath)
    case deleteSection(Int)
    case moveItem(IndexPath, IndexPath)
    case moveSection(Int, Int)
    case moveItems([IndexPath], IndexPath)
    case setItemValue(IndexPath, value: String)
    case setSectionValue(Int, value: String)
    /// Field writes on the item at the index path.
    case writeItemFields(IndexPath, [FieldEdit])
    /// Field writes on the section at the index.
    case writeSectionFields(Int, [FieldEdit])
    /// A new section at the index with its first fields, in one operation.
    case insertSectionWithFields(Int, value: String, [FieldEdit])
    /// A splice of the text field `notes` of an item: at a fraction (per mille) of its length,
    /// removing up to `delete` characters, inserting `insert` (clamped to the text when made).
    case spliceItemText(IndexPath, atPerMille: Int, delete: Int, insert: String)

    /// The field writes, if the edit writes fields.
    public var fieldEdits: [FieldEdit]? {
        switch self {
        case let .writeItemFields(_, list), let .writeSectionFields(_, list), let .insertSectionWithFields(_, _, list): return list
        default: return nil
        }
    }

    /// Whether the edit is a move.
    public var isMove: Bool {
        switch self {
        case .moveItem, .moveSection, .moveItems: return true
        default: return false
        }
    }

    public var description: String {
        func p(_ i: IndexPath) -> String { "[\(i.section),\(i.item)]" }
        switch self {
        case let .insertSection(i, v): return "insertSection(\(i), \(v))"
        case let .insertItem(i, v): return "insertItem(\(p(i)), \(v))"
        case let .deleteItem(i): return "deleteItem(\(p(i)))"
        case let .deleteSection(i): return "deleteSection(\(i))"
        case let .moveItem(a, b): return "moveItem(\(p(a)) -> \(p(b)))"
        case let .moveSection(a, b): return "moveSection(\(a) -> \(b))"
        case let .moveItems(list, to): return "moveItems(\(list.map(p)) -> \(p(to)))"
        case let .setItemValue(i, v): return "setItemValue(\(p(i)), \(v))"
        case let .setSectionValue(i, v): return "setSectionValue(\(i), \(v))"
        case let .writeItemFields(i, list): return "writeItemFields(\(p(i)), \(list))"
        case let .writeSectionFields(i, list): return "writeSectionFields(\(i), \(list))"
        case let .insertSectionWithFields(i, v, list): return "insertSectionWithFields(\(i), \(v), \(list))"
        case let .spliceItemText(i, at, d, t): return "spliceItemText(\(p(i)), at \(at)‰, delete \(d), \(t.debugDescription))"
        }
    }

    /// A random valid edit for `document` drawn from `workload`; `fresh()` makes a new unique value.
    ///
    /// - Complexity: O(s) for s sections.
    public static func random(for document: ListDocument, workload: Workload = Workload(),
                              using rng: inout SplitMix64, fresh: () -> String) -> RandomEdit {
        let shape = (0..<document.sectionCount).map { (try? document.itemCount(inSection: $0)) ?? 0 }
        let sections = shape.count
        let items = shape.reduce(0, +)
        func anyItem() -> IndexPath {
            var k = rng.below(items)
            for (s, n) in shape.enumerated() {
                if k < n { return IndexPath(item: k, section: s) }
                k -= n
            }
            return IndexPath(item: 0, section: 0)
        }
        if workload.textEdits > 0 && items > 0 && rng.below(100) < workload.textEdits {
            return TextTyping.random(anyItem(), using: &rng, fresh: fresh)
        }
        if workload.fieldWrites > 0 && rng.below(100) < workload.fieldWrites && sections > 0 {
            let edits = FieldEdit.random(using: &rng)
            if items > 0 && rng.below(5) != 0 { return .writeItemFields(anyItem(), edits) }
            return .writeSectionFields(rng.below(sections), edits)
        }
        var cut = 0
        func band(_ width: Int) -> Range<Int> { defer { cut += width }; return cut..<(cut + width) }
        let bands = (insertSection: band(workload.insertSection), insertItem: band(workload.insertItem),
                     deleteItem: band(workload.deleteItem), deleteSection: band(workload.deleteSection),
                     moveItem: band(workload.moveItem), moveSection: band(workload.moveSection),
                     moveItems: band(workload.moveItems), setItemValue: band(workload.setItemValue),
                     setSectionValue: band(workload.setSectionValue))
        for _ in 0..<64 {
            let roll = rng.below(max(cut, 1))
            if sections == 0 || (bands.insertSection.contains(roll) && sections < workload.maxSections) {
                if workload.sectionInsertFields > 0 && rng.below(100) < workload.sectionInsertFields {
                    return .insertSectionWithFields(rng.below(sections + 1), value: fresh(), FieldEdit.randomInsert(using: &rng))
                }
                return .insertSection(rng.below(sections + 1), value: fresh())
            }
            if bands.deleteItem.contains(roll) && items > 0 { return .deleteItem(anyItem()) }
            if bands.deleteSection.contains(roll) && sections > 1 { return .deleteSection(rng.below(sections)) }
            if bands.moveItem.contains(roll) && items > 0 {
                let from = anyItem()
                let s = rng.below(sections)
                let limit = shape[s] - (s == from.section ? 1 : 0)
                return .moveItem(from, IndexPath(item: rng.below(limit + 1), section: s))
            }
            if bands.moveSection.contains(roll) && sections > 1 {
                return .moveSection(rng.below(sections), rng.below(sections))
            }
            if bands.moveItems.contains(roll) && items > 1 {
                var picked: [IndexPath] = []
                for _ in 0..<(1 + rng.below(3)) {
                    let p = anyItem()
                    if !picked.contains(p) { picked.append(p) }
                }
                let s = rng.below(sections)
                let inside = picked.filter { $0.section == s }.count
                return .moveItems(picked, IndexPath(item: rng.below(shape[s] - inside + 1), section: s))
            }
            if bands.setItemValue.contains(roll) && items > 0 { return .setItemValue(anyItem(), value: fresh()) }
            if bands.setSectionValue.contains(roll) { return .setSectionValue(rng.below(sections), value: fresh()) }
            if bands.insertItem.contains(roll) || roll >= cut - 1 {
                let s = rng.below(sections)
                return .insertItem(IndexPath(item: rng.below(shape[s] + 1), section: s), value: fresh())
            }
        }
        let s = rng.below(sections)
        return .insertItem(IndexPath(item: rng.below(shape[s] + 1), section: s), value: fresh())
    }

    /// Makes the edit on `document`; returns the operation, if one was made.
    @discardableResult
    public func apply(to document: inout ListDocument) throws(ListError) -> ListOperation? {
        switch self {
        case let .insertSection(i, v): return try document.insertSection(at: i, value: Data(v.utf8))
        case let .insertItem(p, v): return try document.insertItem(at: p, value: Data(v.utf8))
        case let .deleteItem(p): return try document.deleteItem(at: p)
        case let .deleteSection(i): return try document.deleteSection(at: i)
        case let .moveItem(a, b): return try document.moveItem(from: a, to: b)
        case let .moveSection(a, b): return try document.moveSection(from: a, to: b)
        case let .moveItems(list, to):
            var ids: [ItemID] = []
            for p in list { ids.append(try document.itemID(at: p)) }
            return try document.moveItems(ids, to: to)
        case let .setItemValue(p, v): return try document.setValue(Data(v.utf8), forItem: try document.itemID(at: p))
        case let .setSectionValue(i, v): return try document.setValue(Data(v.utf8), forSection: try document.sectionID(at: i))
        case let .writeItemFields(p, list):
            return try document.writeFields(FieldEdit.changes(list), ofItem: try document.itemID(at: p))
        case let .writeSectionFields(i, list):
            return try document.writeFields(FieldEdit.changes(list), ofSection: try document.sectionID(at: i))
        case let .insertSectionWithFields(i, v, list):
            return try document.insertSection(at: i, value: Data(v.utf8), fields: FieldEdit.changes(list))
        case let .spliceItemText(p, at, delete, insert):
            return try TextTyping.apply(p, atPerMille: at, delete: delete, insert: insert, to: &document)
        }
    }
}
