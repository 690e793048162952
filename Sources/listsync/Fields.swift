import Foundation
import ListCRDT
import ListSyncWeb
import ListTable

// The command line's form of fields (Docs/Daemon.md, "Fields"): `NAME=VALUE` arguments and the
// `--increment`, `--add`, `--remove-member` and `--unset` options of `set` and `insert`, and the
// `fields` of `show` (JSON and text).

/// The options that change fields, in a command's help.
let fieldOptionsHelp = """
      --increment NAME=N   add N (an integer, negative to subtract) to the counter NAME
      --add NAME=MEMBER    add MEMBER to the set NAME (repeatable; members of one set add up)
      --remove-member NAME=MEMBER  remove MEMBER from the set NAME
      --unset NAME         remove the field NAME

    """

/// The repeatable options that change fields.
let fieldOptionNames: Set<String> = ["--increment", "--add", "--remove-member", "--unset"]

/// Reads a field VALUE: JSON where it is JSON (`null`, `true`, `false`, a number, a string in
/// double quotes, `{"date": "ISO-8601"}` or `{"bytes": "BASE64"}`), the text itself otherwise.
/// A number with no `.` and no exponent is an integer (`int`); any other a `double`.
///
/// - Throws: ``UsageError`` for text that starts as JSON (`"`, `[` or `{`) but is not one of
///   these, a number out of range, or a date or base64 that does not read.
/// - Complexity: O(n) in the text's length.
func parseFieldValue(_ raw: String, name: String) throws -> FieldValue {
    let t = raw.trimmingCharacters(in: .whitespaces)
    func bad(_ why: String) -> UsageError {
        UsageError(message: "the value of field \(name) (\(raw)) \(why): nothing was changed")
    }
    switch t {
    case "null": return .null
    case "true": return .bool(true)
    case "false": return .bool(false)
    default: break
    }
    if t.range(of: #"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"#, options: .regularExpression) != nil {
        if !t.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
            guard let n = Int64(t) else { throw bad("is an integer out of range (64 bits)") }
            return .int(n)
        }
        guard let d = Double(t), d.isFinite else { throw bad("is a number out of range") }
        return .double(d)
    }
    guard let first = t.first, first == "\"" || first == "[" || first == "{" else { return .string(raw) }
    guard let object = try? JSONSerialization.jsonObject(with: Data(t.utf8), options: [.fragmentsAllowed]) else {
        throw bad("starts like JSON but is not JSON; write a string as \"TEXT\" in quotes, or without a leading \", [ or {")
    }
    if let s = object as? String { return .string(s) }
    guard let o = object as? [String: Any], o.count == 1 else {
        throw bad("is not a field value: a value is null, true, false, a number, a string, {\"date\": \"ISO-8601\"} or {\"bytes\": \"BASE64\"} (sets: --add)")
    }
    if let d = o["date"] as? String {
        guard let date = WebModel.date(d) else { throw bad("holds a date that is not ISO 8601 (like 2026-11-29T10:00:00Z)") }
        return .date(date)
    }
    if let b = o["bytes"] as? String {
        guard let data = Data(base64Encoded: b) else { throw bad("holds bytes that are not base64") }
        return .bytes(data)
    }
    throw bad("is an object other than {\"date\": …} or {\"bytes\": …}")
}

/// A date as `show` writes it: ISO 8601 in UTC, to the millisecond.
func isoText(_ date: Date) -> String {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.string(from: date)
}

/// `NAME=VALUE` split at its first `=`, the name checked.
func splitAssignment(_ text: String, what: String) throws -> (name: String, value: String) {
    guard let eq = text.firstIndex(of: "=") else {
        throw UsageError(message: "\(what) '\(text)' is not NAME=VALUE: nothing was changed")
    }
    let name = String(text[..<eq])
    if let problem = FieldLimits.problem(withName: name) { throw UsageError(message: "\(problem): nothing was changed") }
    return (name, String(text[text.index(after: eq)...]))
}

/// Whether an argument of `insert` after PATH is a field (`NAME=VALUE` with NAME made of
/// letters, digits and `_`, not starting with a digit) rather than the item's TEXT.
func isFieldAssignment(_ text: String) -> Bool {
    text.range(of: #"^[A-Za-z_][A-Za-z0-9_]*="#, options: .regularExpression) != nil
}

/// The field changes of a command: `NAME=VALUE` arguments and the field options, one change
/// per field name.
///
/// - Throws: ``UsageError`` for a bad name or value, or a field named twice.
/// - Complexity: O(n) in the arguments' length.
func fieldChanges(_ assignments: [String], _ o: Options) throws -> [String: FieldChange] {
    var changes: [String: FieldChange] = [:]
    func add(_ name: String, _ change: FieldChange) throws {
        if let old = changes[name] {
            // Members of one set add up; anything else named twice is a mistake.
            switch (old, change) {
            case let (.insert(a), .insert(b)): changes[name] = .insert(a + b); return
            case let (.delete(a), .delete(b)): changes[name] = .delete(a + b); return
            default: throw UsageError(message: "field \(name) is changed twice in one command: nothing was changed")
            }
        }
        changes[name] = change
    }
    for a in assignments {
        let (name, value) = try splitAssignment(a, what: "field")
        try add(name, .set(try parseFieldValue(value, name: name)))
    }
    for a in o.all("--increment") {
        let (name, value) = try splitAssignment(a, what: "--increment")
        guard let n = Int64(value.trimmingCharacters(in: .whitespaces)) else {
            throw UsageError(message: "--increment \(a): N must be an integer, not '\(value)': nothing was changed")
        }
        try add(name, .increment(n))
    }
    for a in o.all("--add") {
        let (name, member) = try splitAssignment(a, what: "--add")
        try add(name, .insert([member]))
    }
    for a in o.all("--remove-member") {
        let (name, member) = try splitAssignment(a, what: "--remove-member")
        try add(name, .delete([member]))
    }
    for name in o.all("--unset") {
        if let problem = FieldLimits.problem(withName: name) { throw UsageError(message: "\(problem): nothing was changed") }
        try add(name, .remove)
    }
    guard changes.count <= FieldLimits.maxWrites else {
        throw UsageError(message: "\(changes.count) fields in one command, over \(FieldLimits.maxWrites): nothing was changed")
    }
    return changes
}

/// Writes `changes` to the item or section at `path` as one operation.
func writeFields(_ changes: [String: FieldChange], at path: PathArgument, in doc: inout ListDocument) throws(ListError) {
    let snap = doc.snapshot()
    switch path {
    case let .section(s):
        guard let id = snap.sectionIdentifier(at: s) else { throw ListError.sectionIndexOutOfRange(s, count: snap.numberOfSections) }
        _ = try doc.writeFields(changes, ofSection: id)
    case let .item(p):
        guard let id = snap.itemIdentifier(at: p) else {
            throw ListError.indexPathOutOfRange(p, count: p.section < snap.numberOfSections ? snap.numberOfItems(inSectionAt: p.section) : 0)
        }
        _ = try doc.writeFields(changes, ofItem: id)
    }
}

// MARK: Showing fields

/// A field as `show --json` writes it: a value field as plain JSON (string, number, bool,
/// null; an `int` without a point, a `double` always with one), a date as `{"date": ISO}`,
/// bytes as `{"bytes": BASE64}`, a counter as `{"counter": N}`, a set as `{"set": [...]}`.
func fieldJSON(_ field: Field) -> String {
    var out = JSONText()
    out.field(field)
    return out.text
}

/// A small JSON writer for field values (strings escaped as ``StreamedOutput`` does).
struct JSONText {
    var text = ""

    mutating func string(_ s: String) {
        var bytes: [UInt8] = []
        StreamedOutput.appendJSONString(s, to: &bytes)
        text += String(decoding: bytes, as: UTF8.self)
    }

    mutating func value(_ v: FieldValue) {
        switch v {
        case .null: text += "null"
        case .bool(let b): text += b ? "true" : "false"
        case .int(let n): text += String(n)
        case .double(let d): text += doubleText(d)
        case .string(let s): string(s)
        case .date(let d): text += "{\"date\":"; string(isoText(d)); text += "}"
        case .bytes(let b): text += "{\"bytes\":"; string(b.base64EncodedString()); text += "}"
        }
    }

    mutating func field(_ f: Field) {
        switch f {
        case .value(let v): value(v)
        case .counter(let n): text += "{\"counter\":\(n)}"
        case .set(let members):
            text += "{\"set\":["
            for (i, m) in members.enumerated() {
                if i > 0 { text += "," }
                string(m)
            }
            text += "]}"
        case .text(let t): string(t)   // a text field reads as its string
        }
    }

    /// `{"name": field, ...}`, names sorted.
    mutating func fields(_ fields: [String: Field]) {
        text += "{"
        for (i, name) in fields.keys.sorted().enumerated() {
            if i > 0 { text += ", " }
            string(name)
            text += " : "
            field(fields[name]!)
        }
        text += "}"
    }
}

/// The fields as JSON-ready values (the web view's form, the same as ``fieldJSON(_:)``'s), for
/// ``printJSON(_:line:)``.
func fieldsObject(_ fields: [String: Field]) -> [String: Any] { WebModel.fieldsObject(fields) }

/// A double as `show` writes it: always with a point or an exponent (`2.0`), so it never reads
/// back as an integer.
func doubleText(_ d: Double) -> String {
    let s = String(d)
    return s.contains(where: { $0 == "." || $0 == "e" }) ? s : s + ".0"
}

/// A field as the text `show` prints: `"oat milk"`, `true`, `3`, `2.5`, `null`, a date in
/// ISO 8601, `<12 bytes>`, `counter(3)`, `set("a", "b")`; escaped for the terminal.
func fieldText(_ field: Field) -> String {
    switch field {
    case .value(.date(let d)): return isoText(d)
    case .value(.bytes(let b)): return "<\(b.count) bytes>"
    case .value(.double(let d)): return doubleText(d)
    case .value(let v): return shown(v.description)
    case .counter(let n): return "counter(\(n))"
    case .set(let members): return "set(" + members.map { "\"\(shown($0))\"" }.joined(separator: ", ") + ")"
    case .text(let t): return "text(\"\(shown(t))\")"
    }
}

/// The fields on one line: `done=true  title="oat milk"`, names sorted.
func fieldsLine(_ fields: [String: Field]) -> String {
    fields.keys.sorted().map { "\(shown($0))=\(fieldText(fields[$0]!))" }.joined(separator: "  ")
}

// MARK: Lost field edits

/// A lost field edit in words, with the index path of its item (or section) in `snapshot`:
/// `your edit of field title of 0.0 ("milk") lost to "oat milk" by replica 1a2b…`.
func describeLostField(_ c: FieldConflict, _ snapshot: ListSnapshot) -> String {
    let place: String
    switch c.target {
    case .item(let id):
        place = snapshot.indexPath(of: id).map { "\($0.section).\($0.item)" } ?? "a deleted item"
    case .section(let id):
        place = snapshot.sections.firstIndex(where: { $0.id == id }).map { "section \($0)" } ?? "a deleted section"
    }
    let lost = c.lost.map { shown($0.description) } ?? "removal"
    let won = c.won.map { shown($0.description) } ?? "a removal"
    return "your edit of field \(shown(c.name)) of \(place) (\(lost)) lost to \(won) by replica \(c.winner.replica.rawValue)"
}

/// A lost field edit as JSON.
func lostFieldObject(_ c: FieldConflict, _ snapshot: ListSnapshot) -> [String: Any] {
    var o: [String: Any] = ["field": c.name, "target": c.target.description, "winner": "\(c.winner.replica.rawValue)"]
    if case .item(let id) = c.target, let p = snapshot.indexPath(of: id) { o["path"] = "\(p.section).\(p.item)" }
    if case .section(let id) = c.target, let s = snapshot.sections.firstIndex(where: { $0.id == id }) { o["path"] = "\(s)" }
    o["lost"] = c.lost.map { WebModel.fieldObject(.value($0)) } ?? NSNull()
    o["won"] = c.won.map { WebModel.fieldObject(.value($0)) } ?? NSNull()
    o["lostRemoval"] = c.lost == nil
    o["wonRemoval"] = c.won == nil
    return o
}

// MARK: The `set` command

/// `listsync set DOC PATH NAME=VALUE ... [--increment NAME=N] [--add NAME=MEMBER]
/// [--remove-member NAME=MEMBER] [--unset NAME]`: one field write of an item or a section.
let setCommand = ClientCommand(
    usage: usageText("set DOC PATH NAME=VALUE [NAME=VALUE ...] [field options] [options]", """
        Writes fields of the item at PATH (0.3: row 3 of section 0), or of section PATH when PATH is one \
        number, in one operation: fields merge one by one, so someone else's edit of another field is kept \
        (Docs/Semantics.md §8). VALUE is read as JSON where it is JSON: null, true, false, a number (an \
        integer without a point or exponent, else a double), "a string in quotes", {"date": "2026-11-29T10:00:00Z"} \
        or {"bytes": "BASE64"}; any other text is a string as it is (title=oat milk, quoted for the shell). \
        Counters and sets change with the options below. To change an item's text (its whole value), see \
        `listsync rename`.
        """, extra: fieldOptionsHelp),
    values: fieldOptionNames, arguments: 2...(2 + FieldLimits.maxWrites),
    check: { o in
        _ = try PathArgument(o.positional[1])
        let changes = try fieldChanges(Array(o.positional.dropFirst(2)), o)
        guard !changes.isEmpty else {
            throw UsageError(message: "set needs at least one NAME=VALUE, --increment, --add, --remove-member or --unset: nothing was changed")
        }
    }
) { o, client, json in
    let path = try PathArgument(o.positional[1])
    let changes = try fieldChanges(Array(o.positional.dropFirst(2)), o)
    return try await editCommand(o, client, json: json, verb: "set",
                                 check: { try checkExists(path, in: $0); return nil }) { doc throws(ListError) in
        try writeFields(changes, at: path, in: &doc)
        return "\(changes.keys.sorted().map { shown($0) }.joined(separator: ", ")) of \(path.text)"
    }
}

/// `insert`'s arguments after PATH: whether the first is the item's TEXT (it is not when it
/// looks like `NAME=VALUE`), and the `NAME=VALUE` fields.
func insertArguments(_ o: Options) -> (hasText: Bool, assignments: [String]) {
    let after = Array(o.positional.dropFirst(2))
    guard let first = after.first else { return (false, []) }
    return isFieldAssignment(first) ? (false, after) : (true, Array(after.dropFirst()))
}
