import Foundation
@testable import ListCRDT

/// One local edit, by index, as a user of a table view would make it.
enum Edit: CustomStringConvertible {
    case insertSection(Int, String)
    case insertItem(IndexPath, String)
    case deleteItem(IndexPath)
    case deleteSection(Int)
    case moveItem(IndexPath, IndexPath)
    case moveSection(Int, Int)
    case moveItems([IndexPath], IndexPath)
    case setItemValue(IndexPath, String)
    case setSectionValue(Int, String)

    var isMove: Bool {
        switch self {
        case .moveItem, .moveSection, .moveItems: return true
        default: return false
        }
    }

    var description: String {
        switch self {
        case let .insertSection(i, v): return "insertSection(\(i), \(v))"
        case let .insertItem(p, v): return "insertItem([\(p.section),\(p.item)], \(v))"
        case let .deleteItem(p): return "deleteItem([\(p.section),\(p.item)])"
        case let .deleteSection(i): return "deleteSection(\(i))"
        case let .moveItem(a, b): return "moveItem([\(a.section),\(a.item)] -> [\(b.section),\(b.item)])"
        case let .moveSection(a, b): return "moveSection(\(a) -> \(b))"
        case let .moveItems(list, to): return "moveItems(\(list.map { [$0.section, $0.item] }) -> [\(to.section),\(to.item)])"
        case let .setItemValue(p, v): return "setItemValue([\(p.section),\(p.item)], \(v))"
        case let .setSectionValue(i, v): return "setSectionValue(\(i), \(v))"
        }
    }

    /// A random valid edit for a document of this shape (row counts per section).
    /// `fresh` makes a new unique value.
    static func random(shape: [Int], rng: inout SplitMix64, fresh: () -> String) -> Edit {
        let sections = shape.count
        let items = shape.reduce(0, +)
        func anyItem() -> IndexPath {
            var k = rng.below(items)
            for (s, n) in shape.enumerated() {
                if k < n { return IndexPath(item: k, section: s) }
                k -= n
            }
            fatalError("unreachable")
        }
        while true {
            let roll = rng.below(100)
            switch roll {
            case 0..<6 where sections < 8 || sections == 0:
                return .insertSection(rng.below(sections + 1), fresh())
            case 0..<30 where sections > 0:
                let s = rng.below(sections)
                return .insertItem(IndexPath(item: rng.below(shape[s] + 1), section: s), fresh())
            case 30..<40 where items > 0:
                return .deleteItem(anyItem())
            case 40..<43 where sections > 1:
                return .deleteSection(rng.below(sections))
            case 43..<70 where items > 0:
                let from = anyItem()
                let s = rng.below(sections)
                let limit = shape[s] - (s == from.section ? 1 : 0)
                return .moveItem(from, IndexPath(item: rng.below(limit + 1), section: s))
            case 70..<78 where sections > 1:
                return .moveSection(rng.below(sections), rng.below(sections))
            case 78..<88 where items > 1:
                var picked: [IndexPath] = []
                for _ in 0..<(1 + rng.below(3)) {
                    let p = anyItem()
                    if !picked.contains(p) { picked.append(p) }
                }
                let s = rng.below(sections)
                let inside = picked.filter { $0.section == s }.count
                return .moveItems(picked, IndexPath(item: rng.below(shape[s] - inside + 1), section: s))
            case 88..<95 where items > 0:
                return .setItemValue(anyItem(), fresh())
            case 95..<100 where sections > 0:
                return .setSectionValue(rng.below(sections), fresh())
            default:
                if sections == 0 { return .insertSection(0, fresh()) }
                continue
            }
        }
    }

    /// Applies the edit to a document; returns the operation made, if any.
    @discardableResult
    func apply(to doc: inout ListDocument) throws -> ListOperation? {
        switch self {
        case let .insertSection(i, v): return try doc.insertSection(at: i, value: Data(v))
        case let .insertItem(p, v): return try doc.insertItem(at: p, value: Data(v))
        case let .deleteItem(p): return try doc.deleteItem(at: p)
        case let .deleteSection(i): return try doc.deleteSection(at: i)
        case let .moveItem(a, b): return try doc.moveItem(from: a, to: b)
        case let .moveSection(a, b): return try doc.moveSection(from: a, to: b)
        case let .moveItems(list, to):
            let ids = try list.map { try doc.itemID(at: $0) }
            return try doc.moveItems(ids, to: to)
        case let .setItemValue(p, v): return try doc.setValue(Data(v), forItem: try doc.itemID(at: p))
        case let .setSectionValue(i, v): return try doc.setValue(Data(v), forSection: try doc.sectionID(at: i))
        }
    }

    /// Applies the edit to the reference model: plain arrays, UITableView semantics.
    func apply(to model: inout ReferenceModel) {
        switch self {
        case let .insertSection(i, v): model.sections.insert((v, []), at: i)
        case let .insertItem(p, v): model.sections[p.section].items.insert(v, at: p.item)
        case let .deleteItem(p): model.sections[p.section].items.remove(at: p.item)
        case let .deleteSection(i): model.sections.remove(at: i)
        case let .moveItem(a, b):
            let x = model.sections[a.section].items.remove(at: a.item)
            model.sections[b.section].items.insert(x, at: b.item)
        case let .moveSection(a, b):
            let x = model.sections.remove(at: a)
            model.sections.insert(x, at: b)
        case let .moveItems(list, to):
            let values = list.map { model.sections[$0.section].items[$0.item] }
            for s in model.sections.indices { model.sections[s].items.removeAll { values.contains($0) } }
            model.sections[to.section].items.insert(contentsOf: values, at: to.item)
        case let .setItemValue(p, v): model.sections[p.section].items[p.item] = v
        case let .setSectionValue(i, v): model.sections[i].name = v
        }
    }
}

/// The single-replica reference: a plain array of sections, each a plain array of item values.
struct ReferenceModel {
    var sections: [(name: String, items: [String])] = []
    var rows: [[String]] { sections.map(\.items) }
    var names: [String] { sections.map(\.name) }
    var shape: [Int] { sections.map(\.items.count) }
}
