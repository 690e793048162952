import Foundation
import ListCRDT

// The `text` command: one splice of a text field (Docs/Semantics.md §8.5).

/// `listsync text DOC PATH FIELD --at N [--insert TEXT] [--delete COUNT]`: removes COUNT
/// characters at N of text field FIELD and inserts TEXT there, in one operation.
let textCommand = ClientCommand(
    usage: usageText("text DOC PATH FIELD --at N [--insert TEXT] [--delete COUNT] [options]", """
        Edits the text field FIELD of the item at PATH (0.3: row 3 of section 0), or of section PATH when \
        PATH is one number: removes COUNT characters at position N, then inserts TEXT there, in one \
        operation. Characters are merged one by one with everyone else's typing (Docs/Semantics.md §8.5): \
        two people typing into one field both keep their text. Positions count Unicode scalars (an accented \
        letter typed as one character is one; an emoji with a skin tone is two). A field that holds a string \
        value becomes text (the string is its text); an absent field starts empty.
        """, extra: """
          --at N               where the edit starts (0 to the text's length)
          --insert TEXT        the text to insert at N
          --delete COUNT       how many characters to remove from N on

        """),
    values: ["--at", "--insert", "--delete"], arguments: 3...3,
    check: { o in _ = try textEdit(o) }
) { o, client, json in
    let (path, field, splice) = try textEdit(o)
    return try await editCommand(o, client, json: json, verb: "edited",
                                 check: { try checkExists(path, in: $0); return nil }) { doc throws(ListError) in
        try writeFields([field: splice.change], at: path, in: &doc)
        var what: [String] = []
        if splice.delete > 0 { what.append("removed \(splice.delete)") }
        if !splice.insert.isEmpty { what.append("inserted \(splice.insert.unicodeScalars.count)") }
        return "text \(shown(field)) of \(path.text) at \(splice.at) (\(what.joined(separator: ", ")))"
    }
}

/// The command's path, field and splice, checked.
///
/// - Throws: ``UsageError`` for a missing or bad `--at` or `--delete`, a bad field name, or an
///   edit that changes nothing.
func textEdit(_ o: Options) throws -> (PathArgument, String, TextSplice) {
    let path = try PathArgument(o.positional[1])
    let field = o.positional[2]
    if let problem = FieldLimits.problem(withName: field) { throw UsageError(message: "\(problem): nothing was changed") }
    guard let atText = o.value("--at") else { throw UsageError(message: "text needs --at N: nothing was changed") }
    guard let at = Int(atText), at >= 0 else {
        throw UsageError(message: "--at \(atText) is not a position (0 or more): nothing was changed")
    }
    var delete = 0
    if let d = o.value("--delete") {
        guard let n = Int(d), n >= 0 else { throw UsageError(message: "--delete \(d) is not a count (0 or more): nothing was changed") }
        delete = n
    }
    let insert = o.value("--insert") ?? ""
    guard delete > 0 || !insert.isEmpty else {
        throw UsageError(message: "text needs --insert TEXT or --delete COUNT: nothing was changed")
    }
    return (path, field, TextSplice(at: at, delete: delete, insert: insert))
}
