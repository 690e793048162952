import Foundation
import ListCRDT

/// A ``ListDocument`` whose sections hold `Section` values and whose items hold `Item` values,
/// stored as bytes through a ``ValueCoder`` (JSON by default).
///
/// ```swift
/// struct Column: Codable, Sendable { var title: String }
/// struct Card: Codable, Sendable { var text: String; var done = false }
///
/// var board = TypedDocument<Column, Card>(replica: ReplicaID(1))
/// try board.insertSection(Column(title: "To do"), at: 0)
/// try board.insertItem(Card(text: "milk"), at: IndexPath(item: 0, section: 0))
/// let first = try board.snapshot().item(at: IndexPath(item: 0, section: 0))   // id and Card
/// ```
///
/// A value type like the document it wraps. Sync goes through ``document``: send
/// `document.operations` (or the operations each edit returns) and apply other replicas'
/// operations with `document.receive(_:)`; every replica should use the same coder.
///
/// Every edit encodes its value before it touches the document and returns the operation it
/// made, as the ``ListDocument`` edit does. A thrown ``TypedDocumentError`` means nothing changed:
/// ``TypedDocumentError/encodingFailed(_:)`` for a value that does not encode,
/// ``TypedDocumentError/list(_:)`` for an edit the document refused.
public struct TypedDocument<Section: Codable & Sendable, Item: Codable & Sendable>: Sendable {
    /// The document, with its values as bytes: sync it, or use the edits this type does not
    /// wrap (`moveItems(_:to:)`, the edits by identity, …), writing values with ``coder``.
    public var document: ListDocument
    /// The coder between values and the document's bytes.
    public let coder: any ValueCoder

    /// Wraps a document whose values `coder` encoded.
    public init(_ document: ListDocument, coder: any ValueCoder = JSONValueCoder()) {
        self.document = document
        self.coder = coder
    }

    /// An empty document that edits as `replica`.
    public init(replica: ReplicaID, maxValueSize: Int = ListDocument.defaultMaxValueSize,
                coder: any ValueCoder = JSONValueCoder()) {
        self.init(ListDocument(replica: replica, maxValueSize: maxValueSize), coder: coder)
    }

    // MARK: Reading

    /// The value of a section (visible or not), or nil if the section is unknown.
    ///
    /// - Throws: ``TypedDocumentError/undecodableSection(_:_:)`` if the stored bytes do not decode.
    /// - Complexity: one decode.
    public func value(of section: SectionID) throws(TypedDocumentError) -> Section? {
        guard let data = document.value(of: section) else { return nil }
        do { return try coder.decode(Section.self, from: data) } catch { throw .undecodableSection(section, error) }
    }

    /// The value of an item (visible or not), or nil if the item is unknown.
    ///
    /// - Throws: ``TypedDocumentError/undecodableItem(_:_:)`` if the stored bytes do not decode.
    /// - Complexity: one decode.
    public func value(of item: ItemID) throws(TypedDocumentError) -> Item? {
        guard let data = document.value(of: item) else { return nil }
        do { return try coder.decode(Item.self, from: data) } catch { throw .undecodableItem(item, error) }
    }

    /// The document as it is now, every value decoded.
    ///
    /// - Throws: ``TypedDocumentError/undecodableSection(_:_:)`` or
    ///   ``TypedDocumentError/undecodableItem(_:_:)`` naming the first value, in document order,
    ///   that does not decode.
    /// - Complexity: O(n + h) for n visible sections and items and h runs of hidden slots, plus
    ///   n decodes.
    public func snapshot() throws(TypedDocumentError) -> TypedSnapshot<Section, Item> {
        try TypedSnapshot(document.snapshot(), coder: coder)
    }

    // MARK: Sections

    /// Inserts a new section holding `value` at `index` (`0...sectionCount`).
    /// The new section's identity is `SectionID(operation.id)`.
    ///
    /// - Complexity: O(log s) for s sections, plus one encode.
    @discardableResult
    public mutating func insertSection(_ value: Section, at index: Int) throws(TypedDocumentError) -> ListOperation {
        let data = try encode(value)
        return try edit { (doc) throws(ListError) in try doc.insertSection(at: index, value: data) }
    }

    /// Writes the value of a visible section.
    ///
    /// - Complexity: O(1) apart from one encode.
    @discardableResult
    public mutating func setValue(_ value: Section, forSection id: SectionID) throws(TypedDocumentError) -> ListOperation {
        let data = try encode(value)
        return try edit { (doc) throws(ListError) in try doc.setValue(data, forSection: id) }
    }

    /// Moves the section at `from` so that it ends up at `to` (both `0..<sectionCount`).
    /// Returns nil, and changes nothing, when `from == to`.
    ///
    /// - Complexity: O(log s) for s sections.
    @discardableResult
    public mutating func moveSection(from: Int, to: Int) throws(TypedDocumentError) -> ListOperation? {
        try edit { (doc) throws(ListError) in try doc.moveSection(from: from, to: to) }
    }

    /// Deletes the section at `index` and every item in it (SEMANTICS §3.5).
    ///
    /// - Complexity: O(k log n) for k items in the section.
    @discardableResult
    public mutating func deleteSection(at index: Int) throws(TypedDocumentError) -> ListOperation {
        try edit { (doc) throws(ListError) in try doc.deleteSection(at: index) }
    }

    // MARK: Items

    /// Inserts a new item holding `value` at `indexPath` (row `0...itemCount(inSection:)`).
    /// The new item's identity is `ItemID(operation.id)`.
    ///
    /// - Complexity: O(log n) for n items, plus one encode.
    @discardableResult
    public mutating func insertItem(_ value: Item, at indexPath: IndexPath) throws(TypedDocumentError) -> ListOperation {
        let data = try encode(value)
        return try edit { (doc) throws(ListError) in try doc.insertItem(at: indexPath, value: data) }
    }

    /// Writes the value of a visible item.
    ///
    /// - Complexity: O(1) apart from one encode.
    @discardableResult
    public mutating func setValue(_ value: Item, forItem id: ItemID) throws(TypedDocumentError) -> ListOperation {
        let data = try encode(value)
        return try edit { (doc) throws(ListError) in try doc.setValue(data, forItem: id) }
    }

    /// Moves the item at `from` to `to`, with the meaning of UITableView's
    /// `tableView(_:moveRowAt:to:)` (see ``ListDocument/moveItem(from:to:)``).
    /// Returns nil, and changes nothing, when `from == to`.
    ///
    /// - Complexity: O(log n) for n items.
    @discardableResult
    public mutating func moveItem(from: IndexPath, to: IndexPath) throws(TypedDocumentError) -> ListOperation? {
        try edit { (doc) throws(ListError) in try doc.moveItem(from: from, to: to) }
    }

    /// Deletes the item at `indexPath`.
    ///
    /// - Complexity: O(log n) for n items.
    @discardableResult
    public mutating func deleteItem(at indexPath: IndexPath) throws(TypedDocumentError) -> ListOperation {
        try edit { (doc) throws(ListError) in try doc.deleteItem(at: indexPath) }
    }

    // MARK: Helpers

    /// The bytes of `value`, or ``TypedDocumentError/encodingFailed(_:)``.
    private func encode<T: Encodable>(_ value: T) throws(TypedDocumentError) -> Data {
        do { return try coder.encode(value) } catch { throw .encodingFailed(error) }
    }

    /// Runs one document edit, wrapping its error (the document is unchanged after one).
    private mutating func edit<R>(_ body: (inout ListDocument) throws(ListError) -> R) throws(TypedDocumentError) -> R {
        do { return try body(&document) } catch { throw .list(error) }
    }
}
