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
/// ## Fields
///
/// Each stored property of a `Codable` item or section is one field of its record
/// (Docs/Semantics.md §8), so two devices that change different properties of one item both
/// keep their change: a plain property is a value field (its JSON value, last edit wins), a
/// ``FieldCounter`` a counter (increments add up), a ``FieldSet`` an add-wins set, a ``FieldText``
/// a text merged character by character. An insert carries the new record's fields (one
/// operation; texts are typed after it); ``setValue(_:forItem:)`` and ``updateItem(_:_:)`` write
/// only the properties whose values changed. Reading overlays the fields on the whole value
/// (fields win; a counter field adds to the whole value's count), so items stored before fields,
/// as one whole value, still read, and a property's first write makes its field. Fields
/// the type does not know are kept; a missing one decodes as `Codable` says (an optional is
/// nil; a ``FieldCounter`` is 0 and a ``FieldSet`` empty; another non-optional property needs
/// `decodeIfPresent` in a hand-written `init(from:)`). Items that are no JSON object (a plain
/// `String`) keep one whole value, as before.
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

    /// The value of a section (visible or not), or nil if the section is unknown: its whole
    /// value with its record's fields over it (see "Fields" above).
    ///
    /// - Throws: ``TypedDocumentError/undecodableSection(_:_:)`` if the stored bytes do not decode.
    /// - Complexity: one decode.
    public func value(of section: SectionID) throws(TypedDocumentError) -> Section? {
        guard let data = document.value(of: section) else { return nil }
        do { return try FieldRecordCoding.decode(Section.self, value: data, fields: document.fields(of: section), coder: coder) }
        catch { throw .undecodableSection(section, error) }
    }

    /// The value of an item (visible or not), or nil if the item is unknown: its whole value
    /// with its record's fields over it (see "Fields" above).
    ///
    /// - Throws: ``TypedDocumentError/undecodableItem(_:_:)`` if the stored bytes do not decode.
    /// - Complexity: one decode.
    public func value(of item: ItemID) throws(TypedDocumentError) -> Item? {
        guard let data = document.value(of: item) else { return nil }
        do { return try FieldRecordCoding.decode(Item.self, value: data, fields: document.fields(of: item), coder: coder) }
        catch { throw .undecodableItem(item, error) }
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

    /// Inserts a new section holding `value` at `index` (`0...sectionCount`), with one field per
    /// property in the insert itself (see "Fields" above); each non-empty ``FieldText`` property
    /// is then typed into its text field, one operation each.
    /// The new section's identity is `SectionID(operation.id)`.
    ///
    /// - Returns: the insert.
    /// - Complexity: O(log s + f log f) for s sections and f fields, plus one encode and O(k)
    ///   for k characters of text.
    @discardableResult
    public mutating func insertSection(_ value: Section, at index: Int) throws(TypedDocumentError) -> ListOperation {
        let insert = try plan(value)
        return try edit { (doc) throws(ListError) in try insert.insertSection(at: index, in: &doc) }
    }

    /// Writes a visible section's properties that differ from what it shows now, as fields
    /// (see "Fields" above); a `Section` that is no JSON object is written as a whole value.
    ///
    /// - Returns: the operations made: one, two when a ``FieldSet`` gains and loses members at
    ///   once, none when nothing differs.
    /// - Complexity: one encode and one decode, plus O(f) for f fields written.
    @discardableResult
    public mutating func setValue(_ value: Section, forSection id: SectionID) throws(TypedDocumentError) -> [ListOperation] {
        try write(value, to: .section(id))
    }

    /// Changes a visible section's properties in place: reads it, runs `change`, and writes the
    /// properties that differ (as ``setValue(_:forSection:)``).
    ///
    /// - Complexity: as ``value(of:)-(SectionID)`` and ``setValue(_:forSection:)``.
    @discardableResult
    public mutating func updateSection(_ id: SectionID, _ change: (inout Section) -> Void) throws(TypedDocumentError) -> [ListOperation] {
        guard var value = try value(of: id) else { return try edit { (doc) throws(ListError) in [try doc.setValue(Data(), forSection: id)] } }
        change(&value)
        return try setValue(value, forSection: id)
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

    /// Inserts a new item holding `value` at `indexPath` (row `0...itemCount(inSection:)`), with
    /// one field per property in the insert itself (see "Fields" above), so the new item is one
    /// operation. Each non-empty ``FieldText`` property is then typed into its text field, one
    /// operation each after the insert (a new item's text is typed by a splice), so that its
    /// characters merge from the start. The new item's identity is `ItemID(operation.id)`.
    ///
    /// - Returns: the insert.
    /// - Complexity: O(log n + f log f) for n items and f fields, plus one encode and O(k) for k
    ///   characters of text.
    @discardableResult
    public mutating func insertItem(_ value: Item, at indexPath: IndexPath) throws(TypedDocumentError) -> ListOperation {
        let insert = try plan(value)
        return try edit { (doc) throws(ListError) in try insert.insertItem(at: indexPath, in: &doc) }
    }

    /// Writes a visible item's properties that differ from what it shows now, as fields (see
    /// "Fields" above): a property another device changed meanwhile is left as it is unless
    /// `value` changes it too. An `Item` that is no JSON object is written as a whole value.
    ///
    /// - Returns: the operations made: one, two when a ``FieldSet`` gains and loses members at
    ///   once, none when nothing differs.
    /// - Complexity: one encode and one decode, plus O(f) for f fields written.
    @discardableResult
    public mutating func setValue(_ value: Item, forItem id: ItemID) throws(TypedDocumentError) -> [ListOperation] {
        try write(value, to: .item(id))
    }

    /// Changes a visible item's properties in place: reads it as it is now, runs `change`, and
    /// writes the properties that differ (as ``setValue(_:forItem:)``).
    ///
    /// ```swift
    /// try board.updateItem(milk) { $0.done = true; $0.votes.increment(by: 1) }
    /// ```
    ///
    /// - Complexity: as ``value(of:)-(ItemID)`` and ``setValue(_:forItem:)``.
    @discardableResult
    public mutating func updateItem(_ id: ItemID, _ change: (inout Item) -> Void) throws(TypedDocumentError) -> [ListOperation] {
        guard var value = try value(of: id) else { return try edit { (doc) throws(ListError) in [try doc.setValue(Data(), forItem: id)] } }
        change(&value)
        return try setValue(value, forItem: id)
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

    /// What inserting `value` writes (``TypedInsert``), or ``TypedDocumentError/encodingFailed(_:)``.
    private func plan<T: Encodable>(_ value: T) throws(TypedDocumentError) -> TypedInsert {
        do { return try TypedInsert(value, coder: coder) } catch { throw .encodingFailed(error) }
    }

    /// Writes `value`'s changed properties to `target` (``FieldRecordCoding/write(_:to:in:coder:)``).
    private mutating func write<T: Codable>(_ value: T, to target: RecordTarget) throws(TypedDocumentError) -> [ListOperation] {
        do throws(FieldRecordCoding.WriteError) { return try FieldRecordCoding.write(value, to: target, in: &document, coder: coder) } catch {
            switch error {
            case .encoding(let e): throw .encodingFailed(e)
            case .list(let e): throw .list(e)
            }
        }
    }

    /// Runs one document edit, wrapping its error (the document is unchanged after one).
    private mutating func edit<R>(_ body: (inout ListDocument) throws(ListError) -> R) throws(TypedDocumentError) -> R {
        do { return try body(&document) } catch { throw .list(error) }
    }
}
