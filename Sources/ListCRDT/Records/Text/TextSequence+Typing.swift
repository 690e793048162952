import Foundation

/// Where this replica's last local insert into a text ended, so that the next character typed
/// right after it goes in without a search (``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:removedRun:made:removing:)``).
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

/// What a local splice made (``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:removedRun:made:removing:)``),
/// as plain values: the caller builds the operation's ``TextEdit`` from it once (an edit built
/// here and handed up by `inout` was copied and destroyed through its value witnesses on the
/// way, about a seventh of a keystroke), and a text run's log record takes it without an edit.
/// Plain data (no array: the ranges of a splice that removes more than one character go apart),
/// so it costs nothing to make and drop.
struct LocalSplice {
    /// The inserted run's origins (``OpID/none`` when nothing was inserted).
    var after = OpID.none
    var before = OpID.none
    /// The one character removed when the splice removed one (count 0: none removed this way).
    var removed = TextRange(first: .none, count: 0)
    /// The byte typed when the splice typed one ASCII character, else 0: the log appends it to
    /// its text run without reading the string again.
    var byte: UInt8 = 0

    /// The edit of the splice that inserted `insert` (`k` Unicode scalars) and removed
    /// ``removed`` or, when it removed more than one character, `more`: what
    /// ``TextSequence/edit(at:delete:insert:)`` gives.
    ///
    /// - Complexity: O(1), plus one array of one range for a removed character.
    @inline(__always)
    func edit(insert: String, scalars k: Int, more: consuming [TextRange]) -> TextEdit {
        TextEdit(after: after, before: before, insert: insert,
                 deletes: removed.count > 0 ? [removed] : more, insertedCount: k)
    }

    /// The text run step the splice is (``TextRunStep``), when it is one: one scalar typed and
    /// nothing removed, or one character removed and nothing typed (`delete`: the characters the
    /// splice removed).
    @inline(__always)
    func runStep(scalars k: Int, delete: Int) -> TextRunStep? {
        if k == 1, delete == 0 { return .typed(after: after, before: before) }
        if k == 0, delete == 1 { return .removed(removed.first) }
        return nil
    }
}

extension TextSequence {
    /// The first Unicode scalar of `text` (not empty): an ASCII keystroke's without decoding.
    @inline(__always)
    static func firstScalar(of text: String) -> Unicode.Scalar {
        var i = text.utf8.makeIterator()   // reads a small string's byte in place (`first` is a call)
        if let b = i.next(), b < 0x80 { return Unicode.Scalar(b) }
        return text.unicodeScalars.first!
    }

    /// Makes and applies a local splice as operation `id`: removes `delete` characters at
    /// `position`, inserts `insert` (`k` Unicode scalars) there. Sets `made` (and `more`, the
    /// removed ranges when it removed more than one character) to what it made (the edit
    /// ``edit(at:delete:insert:)`` gives, applied as ``apply(_:id:)`` applies it, is
    /// `made.edit(insert:scalars:more:)`) and `typing` to where the typing ends now (nil when
    /// nothing was inserted), and returns true (`removedRun`: where the last one-character removal
    /// found its character's run, ``TextSlots/id(of:hint:)``); returns false, with nothing changed, when the
    /// range is outside the text or the edit removes more than ``TextLimits/maxDeleteRanges``
    /// ranges (the general path then throws). `made` and `more` must be as `LocalSplice()` and
    /// `[]` make them.
    ///
    /// A one-character insert at `typing`'s caret (the next keystroke) takes the short way: its
    /// left origin is the last character typed and its right origin that character's (nothing
    /// came in between), so its slot extends the last character's tree entry and slot run.
    ///
    /// - Complexity: O(1) amortized for a keystroke at the caret; else O(log n + d log r + k)
    ///   for d removed and k inserted characters.
    mutating func spliceLocally(at position: Int, delete: Int, insert: String, scalars k: Int, id: OpID,
                                typing: inout TypingPoint?, removedRun: inout Int32, made: inout LocalSplice,
                                removing more: inout [TextRange]) -> Bool {
        guard position + delete <= count else { return false }
        if delete == 0, k == 1, let t = typing, t.caret == position,
           let cursor = forest.extend(t.cursor ?? forest.locate(t.last), with: LocalVersion(slots.count)) {
            let lv = slots.appendRun(id: id, count: 1, left: t.last, right: t.right)
            let scalar = Self.firstScalar(of: insert)
            scalars.append(scalar)
            if scalar.isASCII { made.byte = UInt8(truncatingIfNeeded: scalar.value) }
            made.after = t.lastID
            made.before = t.rightID
            typing = TypingPoint(caret: position + 1, last: lv, lastID: id, cursor: cursor, right: t.right, rightID: t.rightID)
            return true
        }
        // The removed characters first, as `edit(at:delete:insert:)` names them and `hide(_:)`
        // hides them; the origins found after are the ones found before (the character left of
        // the position stays shown, and hiding does not change the order).
        if delete == 1 {
            let c = forest.findVisibleNear(Self.tree, position)
            made.removed = TextRange(first: slots.id(of: forest.lv(at: c), hint: &removedRun), count: 1)
            forest.flip(at: c, count: 1)
        } else if delete > 0 {
            let ranges = ranges(from: position, count: delete)
            guard ranges.count <= TextLimits.maxDeleteRanges else { return false }
            for r in ranges { hide(r) }
            more = ranges
        }
        guard k > 0 else {
            typing = nil
            return true
        }
        // Nothing sits between a local insert's origins, so the run goes right after the left one
        // (what `placement` finds).
        let o = forest.localInsertion(Self.tree, at: position)
        made.after = o.left.exists ? slots.id(of: o.left) : .none
        made.before = o.right.exists ? slots.id(of: o.right) : .none
        if k == 1 {
            let scalar = Self.firstScalar(of: insert)
            scalars.append(scalar)
            if scalar.isASCII { made.byte = UInt8(truncatingIfNeeded: scalar.value) }
        } else {
            scalars.append(contentsOf: insert)
            forest.reserveSlots(more: k)   // one allocation for a paste (the tree takes it in pieces)
        }
        let lv = slots.appendRun(id: id, count: k, left: o.left, right: o.right)
        forest.insert(Self.tree, lv, count: k, visible: true, after: o.after)
        let last = lv.advanced(by: Int32(k - 1))
        typing = TypingPoint(caret: position + k, last: last, lastID: id.advanced(by: k - 1), cursor: nil,
                             right: o.right, rightID: made.before)
        return true
    }
}
