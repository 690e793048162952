import Foundation

/// What a document shows at one moment: sections in order, each with its items in order.
///
/// A value type, `Sendable` and cheap to copy (its arrays are shared until changed). Identities are
/// unique by construction: the engine shows every section and item at most once.
public struct ListSnapshot: Hashable, Sendable {
    /// One visible section.
    public struct Section: Hashable, Sendable {
        /// The section's identity.
        public var id: SectionID
        /// The section's value.
        public var value: Data
        /// The section's visible items, in order.
        public var items: [Item]
        /// The section's fields (Docs/Semantics.md §8), by name; empty when it has none.
        public var fields: [String: Field]
        /// Makes a section.
        public init(id: SectionID, value: Data, items: [Item], fields: [String: Field] = [:]) {
            self.id = id
            self.value = value
            self.items = items
            self.fields = fields
        }
    }

    /// One visible item.
    public struct Item: Hashable, Sendable {
        /// The item's identity.
        public var id: ItemID
        /// The item's value.
        public var value: Data
        /// The item's fields (Docs/Semantics.md §8), by name; empty when it has none.
        public var fields: [String: Field]
        /// Makes an item.
        public init(id: ItemID, value: Data, fields: [String: Field] = [:]) {
            self.id = id
            self.value = value
            self.fields = fields
        }
    }

    /// The visible sections, in order.
    public var sections: [Section]

    /// Makes a snapshot.
    public init(sections: [Section] = []) { self.sections = sections }

    /// Number of sections.
    public var numberOfSections: Int { sections.count }
    /// Number of items in all sections.
    public var numberOfItems: Int { sections.reduce(0) { $0 + $1.items.count } }
}

extension ListDocument {
    /// The document as it is now.
    ///
    /// - Complexity: O(n + h) for n visible sections and items and h runs of hidden slots.
    public func snapshot() -> ListSnapshot {
        var out: [ListSnapshot.Section] = []
        out.reserveCapacity(sectionCount)
        let hasRecords = !records.isEmpty
        forEachVisible(in: Self.sectionTree) { lv in
            let s = slots.entity(of: lv)
            var list: [ListSnapshot.Item] = []
            list.reserveCapacity(visibleItemCount(s))
            forEachVisible(in: tree(ofSequence: .items(s))) { ilv in
                let i = slots.entity(of: ilv)
                let id = items.rows[i.int].id
                list.append(.init(id: ItemID(id), value: items.value(i),
                                  fields: hasRecords ? records.record(of: id) : [:]))
            }
            let id = sections.rows[s.int].id
            out.append(.init(id: SectionID(id), value: sections.value(s), items: list,
                             fields: hasRecords ? records.record(of: id) : [:]))
        }
        return ListSnapshot(sections: out)
    }
}
