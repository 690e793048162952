import Foundation
import ListCRDT

/// A JSON value, as `Codable` sees it: the bridge between a typed item's properties and the
/// fields of its record.
enum JSONValue: Hashable, Sendable, Codable {
    case null, bool(Bool), int(Int64), double(Double), string(String)
    case array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}

/// How a `Codable` item's stored properties map to the fields of its record (Docs/Semantics.md
/// §8, Docs/SwiftUI.md "Fields"): each property of the item's JSON object is one field.
/// - a ``FieldCounter`` is a counter field, a ``FieldSet`` a set field, a ``FieldText`` a text
///   field (as is a `String` property whose field is text);
/// - null, a bool, an integer, a double and a string are value fields of that type; an array or
///   an object is a bytes value field holding its JSON; a field of type date reads as the
///   seconds since 2001 that `JSONEncoder` writes for a `Date`;
/// - the record overlays the item's whole value (the one value per item of before fields; what
///   an insert of a value that is no JSON object stores): a value or set field replaces the property there, a counter field
///   adds to it (the whole value holds the counter's start).
enum FieldRecordCoding {
    static let encoder: JSONEncoder = { let e = JSONEncoder(); e.outputFormatting = [.sortedKeys]; return e }()

    /// The properties of `value` as JSON, or nil when it does not encode to a JSON object (a
    /// plain `String` item, say): such items keep one whole value.
    static func properties<T: Encodable>(of value: T) throws(ValueCodingError) -> [String: JSONValue]? {
        do {
            guard case .object(let o) = try JSONDecoder().decode(JSONValue.self, from: encoder.encode(value)) else { return nil }
            return o
        } catch {
            throw ValueCodingError(.encoding, T.self, underlying: error)
        }
    }

    /// The properties `value` (the whole value's bytes) and `fields` show together.
    static func merged<T: Decodable>(_ type: T.Type, value: Data, fields: [String: Field],
                                     coder: any ValueCoder) throws(ValueCodingError) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        if !value.isEmpty {
            if case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: value) {
                out = o
            } else if let whole = try? coder.decode(T.self, from: value) as? any Encodable,
                      let o = try? properties(of: whole) {
                out = o
            }
        }
        for (name, field) in fields {
            switch field {
            case .value(let v): out[name] = json(v)
            case .counter(let n):
                var start: Int64 = 0
                if case .object(let o)? = out[name], case .int(let s)? = o[FieldCounter.CodingKeys.counter.rawValue] { start = s }
                out[name] = .object([FieldCounter.CodingKeys.counter.rawValue: .int(start &+ n)])
            case .set(let m): out[name] = .object([FieldSet.CodingKeys.set.rawValue: .array(m.map(JSONValue.string))])
            case .text(let t): out[name] = .string(t)
            }
        }
        return out
    }

    /// Decodes a `T` from its whole value and its record's fields (fields win). Without fields,
    /// exactly as before fields: the coder decodes the whole value.
    ///
    /// - Complexity: O(m) for m bytes of value and fields.
    static func decode<T: Decodable>(_ type: T.Type, value: Data, fields: [String: Field],
                                     coder: any ValueCoder) throws(ValueCodingError) -> T {
        if fields.isEmpty { return try coder.decode(T.self, from: value) }
        let props = try merged(T.self, value: value, fields: fields, coder: coder)
        do {
            return try JSONDecoder().decode(T.self, from: encoder.encode(JSONValue.object(props)))
        } catch {
            throw ValueCodingError(.decoding, T.self, underlying: error)
        }
    }

    /// The field changes that take a record from showing `old` to showing `new`, as one or two
    /// writes: only the properties whose values differ (a counter as the difference, a set as
    /// its adds and removes; a property `new` leaves out that `old` had is removed). Properties
    /// neither encodes (fields this type does not know) are left alone. A set that both gains
    /// and loses members takes a second write (one change per field and write).
    /// `setFields` names the properties that already have a set field: a set without one shows
    /// the whole value's members, so its first write adds every member (the field then replaces
    /// the whole value's set).
    /// `texts` holds, for each field that is text or a string value, its text: a ``FieldText``
    /// property, or a `String` property of a field that is text, is written as the smallest
    /// splice from it (an absent field starts empty), so the field stays text, merged by character.
    static func changes(from old: [String: JSONValue], to new: [String: JSONValue],
                        setFields: Set<String> = [], textFields: Set<String> = [],
                        texts: [String: String] = [:]) -> [[String: FieldChange]] {
        var first: [String: FieldChange] = [:], second: [String: FieldChange] = [:]
        for (name, value) in new where old[name] != value {
            if let now = text(value, isTextField: textFields.contains(name)) {
                if let splice = TextSplice.between(old: texts[name] ?? "", new: now) { first[name] = splice.change }
            } else if let n = counter(value) {
                first[name] = .increment(n &- (old[name].flatMap(counter) ?? 0))
            } else if let now = members(value) {
                let was = members(old[name]) ?? []
                let fresh = !setFields.contains(name)
                let added = fresh ? now : now.subtracting(was)
                // A fresh field holding `added` replaces the whole value's set: nothing to remove.
                let removed = fresh && !added.isEmpty ? [] : was.subtracting(now)
                if !added.isEmpty { first[name] = .insert(added.sorted()) }
                if !removed.isEmpty {
                    if first[name] == nil { first[name] = .delete(removed.sorted()) } else { second[name] = .delete(removed.sorted()) }
                }
            } else {
                first[name] = .set(fieldValue(value))
            }
        }
        for name in old.keys where new[name] == nil { first[name] = .remove }
        return [first, second].filter { !$0.isEmpty }
    }

    /// The count of a ``FieldCounter`` property; nil for any other property.
    static func counter(_ v: JSONValue) -> Int64? {
        guard case .object(let o) = v, o.count == 1, case .int(let n)? = o[FieldCounter.CodingKeys.counter.rawValue] else { return nil }
        return n
    }

    /// The members of a ``FieldSet`` property; nil for any other property.
    static func members(_ v: JSONValue?) -> Set<String>? {
        guard case .object(let o)? = v, o.count == 1, case .array(let a)? = o[FieldSet.CodingKeys.set.rawValue] else { return nil }
        return Set(a.compactMap { if case .string(let s) = $0 { s } else { nil } })
    }

    /// The text of a ``FieldText`` property, or of a string property of a field that is text;
    /// nil for any other property.
    static func text(_ v: JSONValue, isTextField: Bool) -> String? {
        if case .object(let o) = v, o.count == 1, case .string(let t)? = o[FieldText.CodingKeys.text.rawValue] { return t }
        if isTextField, case .string(let t) = v { return t }
        return nil
    }

    /// The fields that are text, and the text of each field that is text or a string value.
    static func textsOf(_ fields: [String: Field]) -> (names: Set<String>, texts: [String: String]) {
        var names = Set<String>(), texts: [String: String] = [:]
        for (name, field) in fields {
            switch field {
            case .text(let t): names.insert(name); texts[name] = t
            case .value(.string(let s)): texts[name] = s
            default: break
            }
        }
        return (names, texts)
    }

    /// Why a typed write failed: the value did not encode, or the document refused it.
    enum WriteError: Error { case encoding(ValueCodingError), list(ListError) }

    /// Writes `new` to the record of `target` in `document`: the fields whose values differ from
    /// what the document shows now for it (decoded as a `T`), in one operation (two when a set
    /// gains and loses members at once); none when nothing differs. A `T` that is no JSON
    /// object, or an unknown target, is written as a whole value, as before fields (the
    /// document then refuses an unknown or deleted target).
    ///
    /// - Complexity: one encode and one decode of the record, plus O(f log n) for f fields written.
    static func write<T: Codable>(_ new: T, to target: RecordTarget, in document: inout ListDocument,
                                  coder: any ValueCoder) throws(WriteError) -> [ListOperation] {
        let value: Data?, fields: [String: Field]
        switch target {
        case .item(let id): value = document.value(of: id); fields = document.fields(of: id)
        case .section(let id): value = document.value(of: id); fields = document.fields(of: id)
        }
        let newProps: [String: JSONValue]?
        do { newProps = try properties(of: new) } catch { throw .encoding(error) }
        func attempt(_ body: () throws(ListError) -> ListOperation) throws(WriteError) -> ListOperation {
            do { return try body() } catch { throw .list(error) }
        }
        guard let newProps, let value else {
            let data: Data
            do { data = try coder.encode(new) } catch { throw .encoding(error) }
            switch target {
            case .item(let id): return [try attempt { () throws(ListError) in try document.setValue(data, forItem: id) }]
            case .section(let id): return [try attempt { () throws(ListError) in try document.setValue(data, forSection: id) }]
            }
        }
        // What the type sees now; if the record does not decode as a T, what it shows of the
        // properties the new value has (nothing is removed then).
        let oldProps: [String: JSONValue]
        if let shown = try? decode(T.self, value: value, fields: fields, coder: coder), let p = try? properties(of: shown) {
            oldProps = p
        } else {
            oldProps = ((try? merged(T.self, value: value, fields: fields, coder: coder)) ?? [:]).filter { newProps[$0.key] != nil }
        }
        var ops: [ListOperation] = []
        let setFields = Set(fields.compactMap { if case .set = $0.value { $0.key } else { nil } })
        let (textFields, texts) = textsOf(fields)
        for changes in Self.changes(from: oldProps, to: newProps, setFields: setFields, textFields: textFields, texts: texts) {
            switch target {
            case .item(let id): ops.append(try attempt { () throws(ListError) in try document.writeFields(changes, ofItem: id) })
            case .section(let id): ops.append(try attempt { () throws(ListError) in try document.writeFields(changes, ofSection: id) })
            }
        }
        return ops
    }

    static func json(_ v: FieldValue) -> JSONValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return .double(d.timeIntervalSinceReferenceDate)
        case .bytes(let d):
            if let j = try? JSONDecoder().decode(JSONValue.self, from: d) { return j }
            return .string(d.base64EncodedString())
        }
    }

    static func fieldValue(_ j: JSONValue) -> FieldValue {
        switch j {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array, .object: return .bytes((try? encoder.encode(j)) ?? Data())
        }
    }
}
