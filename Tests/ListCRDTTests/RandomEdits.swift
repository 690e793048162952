import Foundation
@testable import ListCRDT
import ListSyncSimulation
import ListSync

/// The random user edits of the simulator (`ListSync.RandomEdit`), applied to the reference model.
extension RandomEdit {
    /// A random valid edit for a document (the shape the model must also have).
    static func random(for doc: ListDocument, rng: inout SplitMix64, fresh: () -> String) -> RandomEdit {
        RandomEdit.random(for: doc, workload: Workload(), using: &rng, fresh: fresh)
    }

    /// Applies the edit to the reference model: plain arrays, UITableView semantics.
    func apply(to model: inout ReferenceModel) {
        switch self {
        case let .insertSection(i, v), let .insertSectionWithFields(i, v, _): model.sections.insert((v, []), at: i)
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
        case .writeItemFields, .writeSectionFields, .spliceItemText: break   // fields are not in the model's shape
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
