import Foundation

/// Where this replica's last local insert into a text ended, so that the next character typed
/// right after it goes in without a search (``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:edit:)``).
/// Valid only while nothing else changed the text (the caller's ``LocalTextRun`` checks the log).
struct TypingPoint: Sendable {
    /// The position right after the last inserted character.
    var caret: Int
    /// The last inserted character: its local version, its id and its cursor (the end of its
    /// tree entry, as a new slot always is; nil: not looked up yet).
    var last: LocalVersion
    var lastID: OpID
    var cursor: SlotForest.Cursor?
    /// The right origin of its run (``LocalVersion/none``, ``OpID/none``: the end).
    var right: LocalVersion
    var rightID: OpID
}

extension TextSequence {
    /// Makes and applies a local splice as operation `id`: removes `delete` characters at
    /// `position`, inserts `insert` (`k` Unicode scalars) there. Sets `edit` to the edit (what
    /// ``edit(at:delete:insert:)`` gives, applied as ``apply(_:id:)`` applies it) and `typing` to
    /// where the typing ends now (nil when nothing was inserted), and returns true; returns false,
    /// with nothing changed, when the range is outside the text or the edit removes more than
    /// ``TextLimits/maxDeleteRanges`` ranges (the general path then throws).
    ///
    /// A one-character insert at `typing`'s caret (the next keystroke) takes the short way: its
    /// left origin is the last character typed and its right origin that character's (nothing
    /// came in between), so its slot extends the last character's tree entry and slot run.
    ///
    /// - Complexity: O(1) amortized for a keystroke at the caret; else O(log n + d log r + k)
    ///   for d removed and k inserted characters.
    mutating func spliceLocally(at position: Int, delete: Int, insert: String, scalars k: Int, id: OpID,
                                typing: inout TypingPoint?, edit: inout TextEdit) -> Bool {
        // (The results go out through `inout`: returned as an optional tuple, each of the three
        // callers up to the document copied it through generic value witnesses, an eighth of a
        // keystroke's instructions.)
        guard position + delete <= count else { return false }
        if delete == 0, k == 1, let t = typing, t.caret == position,
           let cursor = forest.extend(t.cursor ?? forest.locate(t.last), with: LocalVersion(slots.count)) {
            let lv = slots.appendRun(id: id, count: 1, left: t.last, right: t.right, sequence: .sections,
                                     entity: EntityIndex(scalars.count))
            scalars.append(insert.unicodeScalars.first!)
            edit = TextEdit(after: t.lastID, before: t.rightID, insert: insert, insertedCount: 1)
            typing = TypingPoint(caret: position + 1, last: lv, lastID: id, cursor: cursor, right: t.right, rightID: t.rightID)
            return true
        }
        var made = TextEdit(insert: insert)
        // The removed characters first, as `edit(at:delete:insert:)` names them and `hide(_:)`
        // hides them; the origins found after are the ones found before (the character left of
        // the position stays shown, and hiding does not change the order).
        if delete == 1 {
            let c = forest.findVisibleNear(Self.tree, position)
            made.deletes = [TextRange(first: slots.id(of: forest.lv(at: c)), count: 1)]
            forest.flip(at: c, count: 1)
        } else if delete > 0 {
            made.deletes = ranges(from: position, count: delete)
            guard made.deletes.count <= TextLimits.maxDeleteRanges else { return false }
            for r in made.deletes { hide(r) }
        }
        guard k > 0 else {
            edit = made
            typing = nil
            return true
        }
        // Nothing sits between a local insert's origins, so the run goes right after the left one
        // (what `placement` finds).
        let o = forest.localInsertion(Self.tree, at: position)
        made.after = o.left.exists ? slots.id(of: o.left) : .none
        made.before = o.right.exists ? slots.id(of: o.right) : .none
        let first = scalars.count
        scalars.append(contentsOf: insert.unicodeScalars)
        let lv = slots.appendRun(id: id, count: k, left: o.left, right: o.right, sequence: .sections, entity: EntityIndex(first))
        forest.insert(Self.tree, lv, count: k, visible: true, after: o.after)
        let last = lv.advanced(by: Int32(k - 1))
        typing = TypingPoint(caret: position + k, last: last, lastID: id.advanced(by: k - 1), cursor: nil,
                             right: o.right, rightID: made.before)
        edit = made
        return true
    }
}
