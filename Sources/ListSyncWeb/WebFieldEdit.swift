import Foundation
import ListCRDT

/// What a bad field edit from the page was (answered 400 with its words; nothing is written).
public struct WebFieldEditError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// One field edit the page asks for with `POST /api/docs/ID/field` (Docs/Web.md, "Fields"), read
/// from the query and made against the document as the daemon has it then. Each edit writes only
/// the person's change, so what others wrote meanwhile is kept. No I/O.
public enum WebFieldEdit: Equatable, Sendable {
    /// A value field set to the value (a new field, or the kind changed).
    case value(FieldValue)
    /// A counter incremented by an amount (a new counter starts at it; 0 only for a new one).
    case increment(Int64)
    /// Members added to and removed from a set (one operation each that is not empty).
    case members(add: [String], remove: [String])
    /// A text field spliced from `was` (what the page showed) to `to`: refused as stale when the
    /// text no longer reads `was`.
    case text(to: String, was: String)
    /// The field removed.
    case remove

    /// Reads the edit from the query's parameters (`parameter(name)` gives one, decoded):
    /// - `kind` `string`, `number`, `bool`, `null`, `date` (ISO 8601) or `bytes` (base64) with
    ///   `value`: a value write (``WebModel/fieldValue(kind:text:)``);
    /// - `kind=counter` with `by` (a non-zero integer: the + and − buttons; 0 too with `new=1`, a
    ///   new counter that starts at 0), or with `value` and `was` (the sum typed and the sum
    ///   shown): an increment by the difference;
    /// - `kind=set` with `add` or `remove` (one member, commas and all), or with `value` and `was`
    ///   (comma-separated): the members typed and not shown added, those shown and not typed removed;
    /// - `kind=text` with `value` and `was`: a splice;
    /// - `kind=unset`: the field removed.
    ///
    /// - Throws: ``WebFieldEditError`` saying what was wrong.
    /// - Complexity: O(n) in the parameters' length.
    public static func parse(kind: String, _ parameter: (String) -> String?) throws(WebFieldEditError) -> WebFieldEdit {
        let value = parameter("value") ?? "", was = parameter("was") ?? ""
        switch kind {
        case "unset":
            return .remove
        case "counter":
            if let by = parameter("by") {
                let isNew = parameter("new") == "1"
                guard let n = Int64(by.trimmingCharacters(in: .whitespaces)), n != 0 || isNew else {
                    throw WebFieldEditError("\(by.prefix(40)) is not an increment of a counter (a non-zero integer)")
                }
                return .increment(n)
            }
            guard let new = Int64(value.trimmingCharacters(in: .whitespaces)), let old = Int64(was.trimmingCharacters(in: .whitespaces)) else {
                throw WebFieldEditError("\(value.prefix(40)) is not a value of kind counter (an integer)")
            }
            let (d, overflow) = new.subtractingReportingOverflow(old)
            guard !overflow else { throw WebFieldEditError("a change of the counter out of range") }
            return .increment(d)
        case "set":
            if let member = parameter("add") ?? parameter("remove") {
                guard !member.isEmpty else { throw WebFieldEditError("a set member is not empty") }
                return parameter("add") != nil ? .members(add: [member], remove: []) : .members(add: [], remove: [member])
            }
            let new = WebModel.setMembers(value), old = WebModel.setMembers(was)
            return .members(add: new.filter { !old.contains($0) }, remove: old.filter { !new.contains($0) })
        case "text":
            return .text(to: value, was: was)
        default:
            guard let v = WebModel.fieldValue(kind: kind, text: value) else {
                throw WebFieldEditError("\(value.prefix(40)) is not a value of kind \(kind.prefix(20)) (string, number, bool, null, date in ISO 8601, bytes in base64, counter, set, text or unset)")
            }
            return .value(v)
        }
    }

    /// The edit made on field `name` of `item` (as on the record target `.item(item)`).
    public func apply(to doc: inout ListDocument, field name: String, of item: ItemID,
                      isNew: Bool = false) throws(ListError) -> (operations: Int, stale: Bool) {
        try apply(to: &doc, field: name, of: .item(item), isNew: isNew)
    }

    /// Makes the edit on field `name` of `target`, an item or a section: the operations it wrote
    /// (none when it changes nothing, such as an increment by 0 of a field that exists or a set
    /// typed as shown), and whether it was refused as stale (a text that no longer reads what the
    /// page showed). With `isNew`, a field of that name that the record shows already is refused
    /// (``ListError/invalidField(_:_:)``): adding a field does not overwrite one someone else
    /// added meanwhile; a new counter incremented by 0 is written, and shows 0.
    ///
    /// - Throws: what the engine throws (the item or section gone, a value too large); nothing is
    ///   written then.
    /// - Complexity: that of the writes (``ListDocument/writeFields(_:of:)``), O(t) for a text.
    public func apply(to doc: inout ListDocument, field name: String, of target: RecordTarget,
                      isNew: Bool = false) throws(ListError) -> (operations: Int, stale: Bool) {
        if isNew, doc.field(name, of: target) != nil {
            throw .invalidField(name, "exists already: edit it instead")
        }
        switch self {
        case .value(let v):
            _ = try doc.writeFields([name: .set(v)], of: target)
            return (1, false)
        case .increment(let n):
            guard n != 0 || isNew else { return (0, false) }
            _ = try doc.writeFields([name: .increment(n)], of: target)
            return (1, false)
        case let .members(adds, removes):
            if !adds.isEmpty { _ = try doc.writeFields([name: .insert(adds)], of: target) }
            if !removes.isEmpty { _ = try doc.writeFields([name: .delete(removes)], of: target) }
            return ((adds.isEmpty ? 0 : 1) + (removes.isEmpty ? 0 : 1), false)
        case let .text(value, was):
            let current = doc.text(name, of: target) ?? ""
            guard current == was else { return (0, true) }
            guard let splice = TextSplice.between(old: current, new: value) else { return (0, false) }
            try doc.typeText(name, of: target, at: splice.at, delete: splice.delete, insert: splice.insert)
            return (1, false)
        case .remove:
            guard doc.field(name, of: target) != nil else { return (0, false) }
            _ = try doc.writeFields([name: .remove], of: target)
            return (1, false)
        }
    }
}
