import Foundation
import ListCRDT
import ListTable

/// What the web view's page and its server say to each other about a document (Docs/Web.md,
/// "The page's API"): ids as text, the list as JSON, and where a dropped row lands. No I/O.
public enum WebModel {
    /// An operation id as the page names it: `counter-replica`, both decimal (text, since a
    /// replica id does not fit a JavaScript number).
    public static func text(_ id: OpID) -> String { "\(id.counter)-\(id.replica.rawValue)" }

    /// Parses ``text(_:)``; nil for anything else.
    public static func opID(_ text: String) -> OpID? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let c = UInt64(parts[0]), let r = UInt64(parts[1]) else { return nil }
        return OpID(counter: c, replica: ReplicaID(r))
    }

    /// The document as the page draws it: `{"id", "name", "sections": [{"id", "text", "fields",
    /// "texts", "items": [{"id", "text", "fields", "texts"}]}]}`; values as UTF-8 text (invalid
    /// bytes replaced), fields as ``fieldObject(_:)`` writes them, `texts` the names of the text
    /// fields.
    ///
    /// - Complexity: O(n) in the size of the document.
    public static func stateJSON(id: DocumentID, name: String, snapshot: ListSnapshot, operations: Int? = nil) -> String {
        var object: [String: Any] = [
            "id": id.description, "name": name,
            "sections": snapshot.sections.map { s in
                ["id": text(s.id.opID), "text": String(decoding: s.value, as: UTF8.self), "fields": fieldsObject(s.fields),
                 "texts": textFieldNames(s.fields),
                 "items": s.items.map { ["id": text($0.id.opID), "text": String(decoding: $0.value, as: UTF8.self),
                                         "fields": fieldsObject($0.fields), "texts": textFieldNames($0.fields)] }] as [String: Any]
            },
        ]
        // How many operations the document had applied (a page orders states and its own edits by it).
        if let operations { object["operations"] = operations }
        return json(object)
    }

    /// The others' activities as the page shows them: `[{"name", "kind", "items": [ids],
    /// "to": {"section", "row"} or null}]`, and for a caret in a text field `"caret": {"item"
    /// (or "section"), "field", "anchor", "head"}` in UTF-16 offsets.
    ///
    /// - Complexity: O(k) in the items named, plus O(n) for n items once when a caret is shown.
    public static func presenceJSON(_ activities: [RemoteActivity], snapshot: ListSnapshot) -> String {
        let texts = textFields(of: Set(activities.compactMap { a -> ItemID? in
            guard let c = a.caret, case .item(let i) = c.target else { return nil }
            return i
        }), in: snapshot)
        func fields(of target: RecordTarget) -> [String: Field]? {
            switch target {
            case .item(let i): return texts[i]
            case .section(let id): return snapshot.indexOfSection(id).map { snapshot.sections[$0].fields }
            }
        }
        let list: [[String: Any]] = activities.map { a in
            var to: Any = NSNull()
            if let d = a.destination, d.section < snapshot.sections.count {
                to = ["section": text(snapshot.sections[d.section].id.opID), "row": d.item] as [String: Any]
            }
            var entry: [String: Any] = ["name": a.name, "kind": a.kind == .dragging ? "dragging" : a.kind == .editing ? "editing" : "selecting",
                                        "items": a.items.map { text($0.opID) }, "to": to]
            if let c = a.caret, case .text(let text)? = fields(of: c.target)?[c.field] {
                // UTF-16 offsets, as the page counts them.
                var caret: [String: Any] = ["field": c.field,
                                            "anchor": TextPositions.utf16Offset(ofScalar: c.anchor, in: text) ?? 0,
                                            "head": TextPositions.utf16Offset(ofScalar: c.head, in: text) ?? 0]
                switch c.target {
                case .item(let i): caret["item"] = Self.text(i.opID)
                case .section(let id): caret["section"] = Self.text(id.opID)
                }
                entry["caret"] = caret
            }
            return entry
        }
        return json(list)
    }

    /// The fields of each of `items` that `snapshot` shows, found in one pass (a caret per
    /// person looked its item up in the whole snapshot before).
    ///
    /// - Complexity: O(n) for n items, nothing when `items` is empty.
    static func textFields(of items: Set<ItemID>, in snapshot: ListSnapshot) -> [ItemID: [String: Field]] {
        guard !items.isEmpty else { return [:] }
        var out: [ItemID: [String: Field]] = [:]
        for s in snapshot.sections {
            for it in s.items where items.contains(it.id) {
                out[it.id] = it.fields
                if out.count == items.count { return out }
            }
        }
        return out
    }

    /// Where `item` lands when dropped at `place`, found by identity in `snapshot` as it is when
    /// the move is made (others may have moved rows since the page drew them): right below
    /// `place.after` if it is still in the section, else right above `place.before`, else at the
    /// top when the drop was at the top, else at the end (a neighbour that is `item` itself counts
    /// as none). The index path is `moveItem`'s
    /// destination (the row's place after the move, counted without it). Nil when the item or
    /// the section is gone.
    ///
    /// - Complexity: O(n) in the rows of the section.
    public static func destination(of item: ItemID, at place: PresencePlace, in snapshot: ListSnapshot) -> IndexPath? {
        guard snapshot.indexPath(of: item) != nil, let s = snapshot.indexOfSection(place.section) else { return nil }
        let rows = snapshot.sections[s].items.map(\.id).filter { $0 != item }
        // A neighbour that is the dragged row itself names no place: as if none were named.
        let after = place.after == item ? nil : place.after, before = place.before == item ? nil : place.before
        let row: Int
        if let after, let i = rows.firstIndex(of: after) {
            row = i + 1
        } else if let before, let i = rows.firstIndex(of: before) {
            row = i
        } else if after == nil {
            row = 0
        } else {
            row = rows.count
        }
        assert(row >= 0 && row <= rows.count)
        return IndexPath(item: row, section: s)
    }

    /// A field as JSON-ready values, in the form `listsync show --json` uses (Docs/Daemon.md,
    /// "Fields"): a value field as a string, number, bool or null; a date as `{"date": ISO-8601}`,
    /// bytes as `{"bytes": base64}`, a counter as `{"counter": n}`, a set as `{"set": [members]}`,
    /// a text field as its string.
    public static func fieldObject(_ field: Field) -> Any {
        switch field {
        case .value(let v):
            switch v {
            case .null: return NSNull()
            case .bool(let b): return b
            case .int(let n): return n
            case .double(let d): return d
            case .string(let s): return s
            case .date(let d):
                let f = ISO8601DateFormatter()
                f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                return ["date": f.string(from: d)]
            case .bytes(let b): return ["bytes": b.base64EncodedString()]
            }
        case .counter(let n): return ["counter": n]
        case .set(let members): return ["set": members]
        case .text(let t): return t   // a text field reads as its string
        }
    }

    /// Every field by name (``fieldObject(_:)``).
    ///
    /// - Complexity: O(f) in the fields' size.
    public static func fieldsObject(_ fields: [String: Field]) -> [String: Any] {
        fields.mapValues(fieldObject)
    }

    /// The names of the text fields among `fields`, sorted (a text field reads as a string in
    /// ``fieldObject(_:)``; the page edits it by character, not as a value).
    ///
    /// - Complexity: O(f log f) for f fields.
    public static func textFieldNames(_ fields: [String: Field]) -> [String] {
        fields.compactMap { if case .text = $0.value { return $0.key } else { return nil } }.sorted()
    }

    /// The members the page sends for a set field: comma-separated, each trimmed of spaces, empty
    /// ones left out, each once.
    ///
    /// - Complexity: O(n) in the text's length.
    public static func setMembers(_ text: String) -> [String] {
        var seen = Set<String>()
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// The value the page sends for a value field: `kind` `string`, `number` (an integer when
    /// `text` is one, else a finite double), `bool` (`true` or `false`), `null`, `date` (ISO 8601,
    /// ``date(_:)``) or `bytes` (base64, as ``fieldObject(_:)`` shows them); nil otherwise.
    public static func fieldValue(kind: String, text: String) -> FieldValue? {
        switch kind {
        case "string": return .string(text)
        case "null": return .null
        case "date": return date(text.trimmingCharacters(in: .whitespaces)).map(FieldValue.date)
        case "bytes": return Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)).map(FieldValue.bytes)
        case "bool": return text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        case "number":
            let t = text.trimmingCharacters(in: .whitespaces)
            if let n = Int64(t) { return .int(n) }
            guard let d = Double(t), d.isFinite else { return nil }
            return .double(d)
        default: return nil
        }
    }

    /// An ISO 8601 date and time (`2026-11-29T10:00:00Z`), with or without fractional seconds
    /// and with any offset; nil for anything else.
    public static func date(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: text) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)
    }

    static func json(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
