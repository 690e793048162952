import Foundation

/// The queries of `NSDiffableDataSourceSnapshot`, on a snapshot.
///
/// The queries by position are O(1). The queries by identity scan the snapshot (O(s) for s
/// sections, O(n) for n items); for many look-ups, build a ``ListSnapshot/Lookup`` once with
/// ``ListSnapshot/makeLookup()`` and ask it instead (O(1) each).
extension ListSnapshot {
    /// The identities of the sections, in order (`sectionIdentifiers`).
    ///
    /// - Complexity: O(s) for s sections.
    public var sectionIdentifiers: [SectionID] { sections.map(\.id) }

    /// The identities of every item, section after section (`itemIdentifiers`).
    ///
    /// - Complexity: O(n) for n items.
    public var itemIdentifiers: [ItemID] { sections.flatMap { $0.items.map(\.id) } }

    /// The identities of the items of a section, in order, or an empty array when the snapshot
    /// has no such section (`itemIdentifiers(inSection:)`).
    ///
    /// - Complexity: O(s + k) for s sections and k items in the section.
    public func itemIdentifiers(inSection section: SectionID) -> [ItemID] {
        guard let s = indexOfSection(section) else { return [] }
        return sections[s].items.map(\.id)
    }

    /// The identities of the items of the section at `index`, in order; empty when out of range.
    ///
    /// - Complexity: O(k) for k items in the section.
    public func itemIdentifiers(inSectionAt index: Int) -> [ItemID] {
        sections.indices.contains(index) ? sections[index].items.map(\.id) : []
    }

    /// The number of items in a section, or nil when the snapshot has no such section
    /// (`numberOfItems(inSection:)`).
    ///
    /// - Complexity: O(s) for s sections.
    public func numberOfItems(inSection section: SectionID) -> Int? {
        indexOfSection(section).map { sections[$0].items.count }
    }

    /// The number of items in the section at `index`; 0 when out of range.
    public func numberOfItems(inSectionAt index: Int) -> Int {
        sections.indices.contains(index) ? sections[index].items.count : 0
    }

    /// The position of a section, or nil when it is not in the snapshot (`indexOfSection(_:)`).
    ///
    /// - Complexity: O(s) for s sections.
    public func indexOfSection(_ section: SectionID) -> Int? {
        sections.firstIndex { $0.id == section }
    }

    /// The position of an item among all items, section after section, or nil when it is not in
    /// the snapshot (`indexOfItem(_:)`, which counts the same way).
    ///
    /// - Complexity: O(n) for n items.
    public func indexOfItem(_ item: ItemID) -> Int? {
        var base = 0
        for section in sections {
            if let row = section.items.firstIndex(where: { $0.id == item }) { return base + row }
            base += section.items.count
        }
        return nil
    }

    /// Where an item is, or nil when it is not in the snapshot.
    ///
    /// - Complexity: O(n) for n items.
    public func indexPath(of item: ItemID) -> IndexPath? {
        for (s, section) in sections.enumerated() {
            if let row = section.items.firstIndex(where: { $0.id == item }) {
                return IndexPath(item: row, section: s)
            }
        }
        return nil
    }

    /// The section holding an item, or nil when the item is not in the snapshot
    /// (`sectionIdentifier(containingItem:)`).
    ///
    /// - Complexity: O(n) for n items.
    public func sectionIdentifier(containingItem item: ItemID) -> SectionID? {
        indexPath(of: item).map { sections[$0.section].id }
    }

    /// The item at `indexPath`, or nil when the index path names no row.
    public func item(at indexPath: IndexPath) -> Item? {
        guard indexPath.count == 2, sections.indices.contains(indexPath.section),
              sections[indexPath.section].items.indices.contains(indexPath.item) else { return nil }
        return sections[indexPath.section].items[indexPath.item]
    }

    /// The identity of the item at `indexPath` (`itemIdentifier(for:)` of a diffable data
    /// source), or nil when the index path names no row.
    public func itemIdentifier(at indexPath: IndexPath) -> ItemID? { item(at: indexPath)?.id }

    /// The identity of the section at `index`, or nil when out of range.
    public func sectionIdentifier(at index: Int) -> SectionID? {
        sections.indices.contains(index) ? sections[index].id : nil
    }

    /// An index of the snapshot by identity, for O(1) look-ups.
    ///
    /// - Complexity: O(n) for n items and sections.
    public func makeLookup() -> Lookup { Lookup(self) }
}

extension ListSnapshot {
    /// A snapshot with an index by identity: every query of ``ListSnapshot`` by identity in O(1).
    ///
    /// A value type, `Sendable`; copies share storage. Build it once per snapshot (O(n)) when you
    /// look up many identities, as a data source does on every `cellForRow`.
    public struct Lookup: Sendable {
        /// The snapshot indexed.
        public let snapshot: ListSnapshot
        private let sectionIndex: [SectionID: Int]
        private let itemPaths: [ItemID: IndexPath]
        /// The number of items before each section (the last entry is the total).
        private let starts: [Int]

        /// Indexes a snapshot.
        ///
        /// - Complexity: O(n) for n items and sections.
        public init(_ snapshot: ListSnapshot) {
            self.snapshot = snapshot
            var sectionIndex: [SectionID: Int] = [:]
            var itemPaths: [ItemID: IndexPath] = [:]
            var starts: [Int] = [0]
            sectionIndex.reserveCapacity(snapshot.sections.count)
            itemPaths.reserveCapacity(snapshot.numberOfItems)
            for (s, section) in snapshot.sections.enumerated() {
                sectionIndex[section.id] = s
                for (row, item) in section.items.enumerated() { itemPaths[item.id] = IndexPath(item: row, section: s) }
                starts.append(starts[s] + section.items.count)
            }
            self.sectionIndex = sectionIndex
            self.itemPaths = itemPaths
            self.starts = starts
        }

        /// The number of sections.
        public var numberOfSections: Int { snapshot.sections.count }
        /// The number of items in all sections.
        public var numberOfItems: Int { starts[starts.count - 1] }
        /// The position of a section, or nil when it is not in the snapshot.
        public func indexOfSection(_ section: SectionID) -> Int? { sectionIndex[section] }
        /// Where an item is, or nil when it is not in the snapshot.
        public func indexPath(of item: ItemID) -> IndexPath? { itemPaths[item] }
        /// The position of an item among all items, section after section, or nil.
        public func indexOfItem(_ item: ItemID) -> Int? { itemPaths[item].map { starts[$0.section] + $0.item } }
        /// The section holding an item, or nil when the item is not in the snapshot.
        public func sectionIdentifier(containingItem item: ItemID) -> SectionID? {
            itemPaths[item].map { snapshot.sections[$0.section].id }
        }
        /// The number of items in a section, or nil when the snapshot has no such section.
        public func numberOfItems(inSection section: SectionID) -> Int? {
            sectionIndex[section].map { snapshot.sections[$0].items.count }
        }
        /// The identities of the items of a section, in order; empty when there is no such section.
        ///
        /// - Complexity: O(k) for k items in the section.
        public func itemIdentifiers(inSection section: SectionID) -> [ItemID] {
            sectionIndex[section].map { snapshot.sections[$0].items.map(\.id) } ?? []
        }
        /// The item with this identity, or nil when it is not in the snapshot.
        public func item(_ item: ItemID) -> ListSnapshot.Item? {
            itemPaths[item].map { snapshot.sections[$0.section].items[$0.item] }
        }
        /// The section with this identity, or nil when it is not in the snapshot.
        public func section(_ section: SectionID) -> ListSnapshot.Section? {
            sectionIndex[section].map { snapshot.sections[$0] }
        }
        /// Whether the snapshot shows this item.
        public func contains(_ item: ItemID) -> Bool { itemPaths[item] != nil }
        /// Whether the snapshot shows this section.
        public func contains(_ section: SectionID) -> Bool { sectionIndex[section] != nil }
    }
}
