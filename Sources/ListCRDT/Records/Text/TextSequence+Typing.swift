import Foundation

/// Where this replica's last local insert into a text ended, so that the next character typed
/// right after it goes in without a search (``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:)``).
/// Valid only while nothing else changed the text (the caller's ``LocalTextRun`` checks the log).
struct TypingPoint: Sendable {
    /// The position right after the last inserted character.
    var caret: Int
    /// The last inserted character: its local version, its id and its cursor (the end of its
    /// tree entry, as a new slot always is).
    var last: LocalVersion
    var lastID: OpID
    var cursor: SlotForest.Cursor
    /// The right origin of its run (``LocalVersion/none``, ``OpID/none``: the end).
    var right: LocalVersion
    var rightID: OpID
}

extension TextSequence {
    /// Makes and applies a local splice as operation `id`: removes `delete` characters at
    /// `position`, inserts `insert` (`k` Unicode scalars) there. Returns the edit (what
    /// ``edit(at:delete:insert:)`` gives, applied as ``apply(_:id:)`` applies it) and where the
    /// typing ends now (nil when nothing was inserted); nil, with nothing changed, when the
    /// range is outside the text or the edit removes more than ``TextLimits/maxDeleteRanges``
    /// ranges (the general path then throws).
    ///
    /// A one-character insert at `typing`'s caret (the next keystroke) takes the short way: its
    /// left origin is the last character typed and its right origin that character's (nothing
    /// came in between), so its slot extends the last character's tree entry and slot run.
    ///
    /// - Complexity: O(1) amortized for a keystroke at the caret; else O(log n + d log r + k)
    ///   for d removed and k inserted characters.
    mutating func spliceLocally(at position: Int, delete: Int, insert: String, scalars k: Int, id: OpID,
                                typing: TypingPoint?) -> (edit: TextEdit, typing: TypingPoint?)? {
        guard position + delete <= count else { return nil }
        if delete == 0, k == 1, let t = typing, t.caret == position,
           let cursor = forest.extend(t.cursor, with: LocalVersion(slots.count)) {
            let lv = slots.appendRun(id: id, count: 1, left: t.last, right: t.right, sequence: .sections,
                                     entity: EntityIndex(scalars.count))
            scalars.append(insert.unicodeScalars.first!)
            let edit = TextEdit(after: t.lastID, before: t.rightID, insert: insert)
            return (edit, TypingPoint(caret: position + 1, last: lv, lastID: id, cursor: cursor, right: t.right, rightID: t.rightID))
        }
        let edit = edit(at: position, delete: delete, insert: insert)
        guard edit.deletes.count <= TextLimits.maxDeleteRanges else { return nil }
        apply(edit, id: id)
        guard k > 0 else { return (edit, nil) }
        let last = LocalVersion(slots.count - 1)
        return (edit, TypingPoint(caret: position + k, last: last, lastID: id.advanced(by: k - 1), cursor: forest.locate(last),
                                  right: lv(of: edit.before) ?? .none, rightID: edit.before))
    }
}
