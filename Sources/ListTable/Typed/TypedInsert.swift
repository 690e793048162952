import Foundation
import ListCRDT

/// What a typed insert writes (``TypedDocument/insertItem(_:at:)``, ``ListModel``'s inserts): a
/// `Codable` value that encodes to a JSON object becomes a new record with one field per
/// property, carried by the insert itself (Docs/Semantics.md §8.1), so the new item is one
/// operation, its fields merge from the start, and every reader (`listsync show --json`, the web
/// view, another app version) sees fields, not one opaque value:
/// - a plain property is a value field of its JSON type (an array or object as bytes of JSON,
///   a `Date` as the seconds `JSONEncoder` writes);
/// - a ``FieldCounter`` is a counter field incremented by its value (0 included, so the field
///   says it is a counter);
/// - a non-empty ``FieldSet`` is a set field holding its members (an empty one is left out: a
///   missing set decodes empty);
/// - a non-empty ``FieldText`` is typed by a splice after the insert (an insert cannot carry
///   text; Docs/Semantics.md §8.10), one operation per text field.
/// A value that is no JSON object, or an object with no property to write, keeps one whole
/// value, as before fields (its texts are still typed after it).
struct TypedInsert {
    /// The whole value: empty when the fields carry the value.
    let value: Data
    /// The fields the insert carries.
    let fields: [String: FieldChange]
    /// The texts typed after the insert, by field name.
    let texts: [(name: String, text: String)]

    /// The insert of `value`, encoded by `coder` where it keeps a whole value.
    ///
    /// - Throws: ``ValueCodingError`` when `value` does not encode. Nothing is written.
    /// - Complexity: one encode and one JSON round trip, O(m) for m bytes.
    init<T: Encodable>(_ value: T, coder: any ValueCoder) throws(ValueCodingError) {
        let props = try FieldRecordCoding.properties(of: value)
        var fields: [String: FieldChange] = [:], texts: [(name: String, text: String)] = []
        for (name, v) in props ?? [:] {
            if let t = FieldRecordCoding.text(v, isTextField: false) {
                if !t.isEmpty { texts.append((name, t)) }
            } else if let n = FieldRecordCoding.counter(v) {
                fields[name] = .increment(n)
            } else if let members = FieldRecordCoding.members(v) {
                if !members.isEmpty { fields[name] = .insert(members.sorted()) }
            } else {
                fields[name] = .set(FieldRecordCoding.fieldValue(v))
            }
        }
        texts.sort { $0.name < $1.name }
        if fields.isEmpty {
            // No field the insert can carry: the whole value, as before fields.
            self.value = try coder.encode(value)
        } else {
            self.value = Data()
        }
        self.fields = fields
        self.texts = texts
    }

    /// The texts' bytes, checked against `limit` before anything is written, so that a text the
    /// splice would refuse changes nothing.
    func checkTexts(limit: Int) throws(ListError) {
        for (name, t) in texts where t.utf8.count > limit {
            throw .invalidField(name, "a text of \(t.utf8.count) bytes is over the limit of \(limit) bytes")
        }
    }

    /// Inserts the item at `indexPath` in `document`, then types its texts.
    ///
    /// - Returns: the insert (its id is the new item's).
    /// - Complexity: O(log n + f log f) for f fields, plus O(k) for k characters of text.
    func insertItem(at indexPath: IndexPath, in document: inout ListDocument) throws(ListError) -> ListOperation {
        try checkTexts(limit: document.maxValueSize)
        let op = try document.insertItem(at: indexPath, value: value, fields: fields)
        for (name, t) in texts { try document.typeText(name, ofItem: ItemID(op.id), at: 0, insert: t) }
        return op
    }

    /// Inserts the section at `index` in `document`, then types its texts.
    ///
    /// - Returns: the insert (its id is the new section's).
    /// - Complexity: O(log s + f log f) for f fields, plus O(k) for k characters of text.
    func insertSection(at index: Int, in document: inout ListDocument) throws(ListError) -> ListOperation {
        try checkTexts(limit: document.maxValueSize)
        let op = try document.insertSection(at: index, value: value, fields: fields)
        for (name, t) in texts { try document.typeText(name, ofSection: SectionID(op.id), at: 0, insert: t) }
        return op
    }
}
