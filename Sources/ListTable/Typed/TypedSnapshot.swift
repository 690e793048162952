import Foundation
import ListCRDT

/// What a document shows at one moment, with every section's and item's value decoded: the
/// typed counterpart of ``ListSnapshot``, in the spirit of
/// `NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>`.
///
/// Sections and items are alike: each entry has its identity (``SectionID`` or ``ItemID``) and
/// its decoded value; a section entry also has its items, in order. Queries by position and by
/// identity are O(1) (an index by identity is built with the snapshot).
///
/// Make one with ``TypedDocument/snapshot()``, or from any ``ListSnapshot`` (say
/// ``LiveDocument/snapshot``) with ``init(_:coder:)``. It is `Equatable` and `Hashable` when
/// `Section` and `Item` are.
public struct TypedSnapshot<Section: Codable & Sendable, Item: Codable & Sendable>: Sendable {
    /// One visible section: its identity, its value and its items.
    public struct SectionEntry: Sendable {
        /// The section's identity.
        public var id: SectionID
        /// The section's decoded value.
        public var value: Section
        /// The section's visible items, in order.
        public var items: [ItemEntry]

        /// Makes a section entry.
        public init(id: SectionID, value: Section, items: [ItemEntry]) {
            self.id = id
            self.value = value
            self.items = items
        }
    }

    /// One visible item: its identity and its value.
    public struct ItemEntry: Sendable {
        /// The item's identity.
        public var id: ItemID
        /// The item's decoded value.
        public var value: Item

        /// Makes an item entry.
        public init(id: ItemID, value: Item) {
            self.id = id
            self.value = value
        }
    }

    /// The visible sections, in order, each with its items.
    public let sections: [SectionEntry]
    /// Where each item is.
    private let itemPaths: [ItemID: IndexPath]
    /// The position of each section.
    private let sectionIndex: [SectionID: Int]
    /// The number of items in all sections.
    private let itemTotal: Int

    /// A snapshot of these sections (for previews and tests; a document makes its own with
    /// ``TypedDocument/snapshot()``). If an identity appears twice, the queries by identity
    /// find its first place.
    ///
    /// - Complexity: O(n) for n sections and items.
    public init(sections: [SectionEntry] = []) {
        self.sections = sections
        var itemPaths: [ItemID: IndexPath] = [:]
        var sectionIndex: [SectionID: Int] = [:]
        var itemTotal = 0
        sectionIndex.reserveCapacity(sections.count)
        for (s, section) in sections.enumerated() {
            itemTotal += section.items.count
            if sectionIndex[section.id] == nil { sectionIndex[section.id] = s }
            for (row, item) in section.items.enumerated() where itemPaths[item.id] == nil {
                itemPaths[item.id] = IndexPath(item: row, section: s)
            }
        }
        self.itemPaths = itemPaths
        self.sectionIndex = sectionIndex
        self.itemTotal = itemTotal
    }

    /// Decodes every value of `snapshot` with `coder`.
    ///
    /// - Throws: ``TypedDocumentError/undecodableSection(_:_:)`` or
    ///   ``TypedDocumentError/undecodableItem(_:_:)`` naming the first value, in document order,
    ///   that does not decode.
    /// - Complexity: O(n) decodes for n sections and items, plus O(n) to index them.
    public init(_ snapshot: ListSnapshot, coder: any ValueCoder = JSONValueCoder()) throws(TypedDocumentError) {
        var out: [SectionEntry] = []
        out.reserveCapacity(snapshot.sections.count)
        for section in snapshot.sections {
            let value: Section
            do { value = try FieldRecordCoding.decode(Section.self, value: section.value, fields: section.fields, coder: coder) } catch {
                throw .undecodableSection(section.id, error)
            }
            var items: [ItemEntry] = []
            items.reserveCapacity(section.items.count)
            for item in section.items {
                do { items.append(ItemEntry(id: item.id, value: try FieldRecordCoding.decode(Item.self, value: item.value, fields: item.fields, coder: coder))) } catch {
                    throw .undecodableItem(item.id, error)
                }
            }
            out.append(SectionEntry(id: section.id, value: value, items: items))
        }
        self.init(sections: out)
    }

    // MARK: Counts

    /// The number of sections.
    public var numberOfSections: Int { sections.count }

    /// The number of items in all sections.
    public var numberOfItems: Int { itemTotal }

    /// The number of items in the section at `section`.
    ///
    /// - Throws: ``ListError/sectionIndexOutOfRange(_:count:)`` when there is no such section.
    public func numberOfItems(inSection section: Int) throws(ListError) -> Int {
        try self.section(at: section).items.count
    }

    // MARK: By position

    /// The section at `index`.
    ///
    /// - Throws: ``ListError/sectionIndexOutOfRange(_:count:)`` when `index` is not in
    ///   `0..<numberOfSections`.
    public func section(at index: Int) throws(ListError) -> SectionEntry {
        guard sections.indices.contains(index) else { throw .sectionIndexOutOfRange(index, count: sections.count) }
        return sections[index]
    }

    /// The item at `indexPath` (`[section, row]`).
    ///
    /// - Throws: ``ListError/indexPathOutOfRange(_:count:)`` when the index path names no row
    ///   (its `count` is the number of rows of that section, 0 if there is no such section), as
    ///   ``ListDocument/itemID(at:)`` does.
    public func item(at indexPath: IndexPath) throws(ListError) -> ItemEntry {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        let s = indexPath[0], row = indexPath[1]
        guard sections.indices.contains(s) else { throw .indexPathOutOfRange(indexPath, count: 0) }
        let items = sections[s].items
        guard items.indices.contains(row) else { throw .indexPathOutOfRange(indexPath, count: items.count) }
        return items[row]
    }

    // MARK: By identity

    /// Where an item is, or nil when the snapshot does not show it.
    public func indexPath(of item: ItemID) -> IndexPath? { itemPaths[item] }

    /// The position of a section, or nil when the snapshot does not show it.
    public func index(of section: SectionID) -> Int? { sectionIndex[section] }

    /// The item with this identity, or nil when the snapshot does not show it.
    public func item(_ id: ItemID) -> ItemEntry? {
        itemPaths[id].map { sections[$0[0]].items[$0[1]] }
    }

    /// The section with this identity, or nil when the snapshot does not show it.
    public func section(_ id: SectionID) -> SectionEntry? {
        sectionIndex[id].map { sections[$0] }
    }
}

extension TypedSnapshot.SectionEntry: Equatable where Section: Equatable, Item: Equatable {}
extension TypedSnapshot.SectionEntry: Hashable where Section: Hashable, Item: Hashable {}
extension TypedSnapshot.ItemEntry: Equatable where Item: Equatable {}
extension TypedSnapshot.ItemEntry: Hashable where Item: Hashable {}

extension TypedSnapshot: Equatable where Section: Equatable, Item: Equatable {
    /// Whether the two snapshots show the same sections and items, with equal values, in the
    /// same order.
    ///
    /// - Complexity: O(n) for n sections and items.
    public static func == (a: TypedSnapshot, b: TypedSnapshot) -> Bool { a.sections == b.sections }
}

extension TypedSnapshot: Hashable where Section: Hashable, Item: Hashable {
    /// Hashes the sections and items, in order.
    ///
    /// - Complexity: O(n) for n sections and items.
    public func hash(into hasher: inout Hasher) { hasher.combine(sections) }
}
