import Foundation

/// Text fields (Docs/Semantics.md §8.10): splices by position for local edits, edits by identity
/// as they travel, and anchors that survive others' edits.
extension ListDocument {
    // MARK: Reading

    /// The text of a text field of an item, or nil when the field is not text now.
    ///
    /// - Complexity: O(n) for n characters kept.
    public func text(_ name: String, ofItem item: ItemID) -> String? {
        if case .text(let t)? = field(name, of: item) { return t }
        return nil
    }

    /// The text of a text field of a section, or nil.
    public func text(_ name: String, ofSection section: SectionID) -> String? {
        if case .text(let t)? = field(name, of: section) { return t }
        return nil
    }

    /// The text of a text field of an item or a section, or nil.
    public func text(_ name: String, of target: RecordTarget) -> String? {
        if case .text(let t)? = field(name, of: target) { return t }
        return nil
    }

    // MARK: Writing

    /// ``splice(_:ofItem:at:delete:insert:)`` or ``splice(_:ofSection:at:delete:insert:)``, as
    /// `target` names.
    @discardableResult
    public mutating func splice(_ name: String, of target: RecordTarget, at position: Int, delete: Int = 0,
                                insert: String = "") throws(ListError) -> ListOperation {
        switch target {
        case .item(let id): try splice(name, ofItem: id, at: position, delete: delete, insert: insert)
        case .section(let id): try splice(name, ofSection: id, at: position, delete: delete, insert: insert)
        }
    }

    /// Removes `delete` characters at `position` of text field `name` of a live item and inserts
    /// `insert` there, in one operation (a ``FieldChange/splice(at:delete:insert:)``). Positions
    /// count Unicode scalars of the text shown; ``TextPositions`` converts from UTF-16 offsets,
    /// `NSRange` and `String.Index`.
    ///
    /// A field that shows no text yet becomes text: a string value is the text the splice
    /// edits; an absent or removed field is empty.
    ///
    /// - Throws: what ``writeFields(_:ofItem:)`` throws; ``ListError/invalidField(_:_:)`` when
    ///   the range is outside the text, nothing changes, or the field is a counter, a set or a
    ///   value that is not a string. Nothing changes then.
    /// - Complexity: O(log n + d + k) for d removed and k inserted characters.
    @discardableResult
    public mutating func splice(_ name: String, ofItem item: ItemID, at position: Int, delete: Int = 0,
                                insert: String = "") throws(ListError) -> ListOperation {
        let target = RecordTarget.item(item)
        if let op = continueSplice(name, of: target, at: position, delete: delete, insert: insert) { return op }  // FastPaths/
        let op = try writeFields([name: .splice(at: position, delete: delete, insert: insert)], ofItem: item)
        startSplice(op, name, of: target)
        return op
    }

    /// ``splice(_:ofItem:at:delete:insert:)`` for a text field of a visible section.
    @discardableResult
    public mutating func splice(_ name: String, ofSection section: SectionID, at position: Int, delete: Int = 0,
                                insert: String = "") throws(ListError) -> ListOperation {
        let target = RecordTarget.section(section)
        if let op = continueSplice(name, of: target, at: position, delete: delete, insert: insert) { return op }
        let op = try writeFields([name: .splice(at: position, delete: delete, insert: insert)], ofSection: section)
        startSplice(op, name, of: target)
        return op
    }

    /// ``splice(_:ofItem:at:delete:insert:)`` for an app that types: the same edit, the same
    /// operation applied and logged (read it with ``operations(from:)``, as
    /// `LiveDocument.edit(actionName:_:)` does, and send it), the same errors, but only the
    /// operation's id is returned (its first character's id when it inserts). A keystroke that
    /// continues this replica's last splice of the same field (typing on, a backspace, a forward
    /// delete) then makes no ``TextEdit`` and no ``ListOperation``: the log keeps it as one more
    /// step of its text run.
    ///
    /// - Throws: what ``splice(_:ofItem:at:delete:insert:)`` throws. Nothing changes then.
    /// - Complexity: O(k) for a keystroke right after the last one (k inserted characters);
    ///   else that of ``splice(_:ofItem:at:delete:insert:)``.
    @discardableResult
    public mutating func typeText(_ name: String, ofItem item: ItemID, at position: Int, delete: Int = 0,
                                  insert: String = "") throws(ListError) -> OpID {
        try typeText(name, of: .item(item), at: position, delete: delete, insert: insert)
    }

    /// ``typeText(_:ofItem:at:delete:insert:)`` for a text field of a visible section.
    @discardableResult
    public mutating func typeText(_ name: String, ofSection section: SectionID, at position: Int, delete: Int = 0,
                                  insert: String = "") throws(ListError) -> OpID {
        try typeText(name, of: .section(section), at: position, delete: delete, insert: insert)
    }

    /// ``typeText(_:ofItem:at:delete:insert:)`` or ``typeText(_:ofSection:at:delete:insert:)``,
    /// as `target` names. (Inlined into those two: a call more per keystroke cost about 1%.)
    @discardableResult @inline(__always)
    public mutating func typeText(_ name: String, of target: RecordTarget, at position: Int, delete: Int = 0,
                                  insert: String = "") throws(ListError) -> OpID {
        if let made = continueSplice(name, of: target, at: position, delete: delete, insert: insert, operation: false) {
            return made.id   // FastPaths/
        }
        // The general path (which starts the splice run); the short path declined and changed
        // nothing, so `splice` declines it again.
        return try splice(name, of: target, at: position, delete: delete, insert: insert).id
    }

    /// The write a text change makes, resolved against this replica's text (nil for a change
    /// that is not text). A splice becomes a ``TextEdit`` by identity; a ``TextEdit`` handed in
    /// (an edit made again, as compaction's remake does) is checked against the text, and its
    /// insert is made here as a keystroke right after its `after` would be: after the shown
    /// character at or before `after`, before the character that follows that one in this text
    /// now (``TextSequence/origins(typedAfter:)``), whatever it followed where it was first made;
    /// it removes the characters it names that this text still shows (``textCharacters(_:of:in:)``).
    ///
    /// An edit made again keeps the origins it was first made with only at the price of
    /// convergence: it is made after everything this replica holds (its dependencies say so), so
    /// a replica that compacted there reads it as an insert between neighbours, while the
    /// characters its old origins straddle were typed concurrently on a replica that did not:
    /// the two placed it differently (seed 15 of `listsync simulate --compact-stable-prefix`,
    /// Docs/Semantics.md §7, "Edits made again are made here"). And a left origin or a character
    /// removed since may be one compaction drops (seeds 66, 193 and 238 of the same runs).
    mutating func textWrite(_ name: String, _ change: FieldChange, of target: RecordTarget) throws(ListError) -> FieldWrite? {
        // Only small parts of the field are read here, never a copy of its state held while its
        // text is edited: the text's storage must stay uniquely referenced (else every keystroke
        // would copy it whole).
        switch change {
        case .text(var edit):
            let text = records[target.opID]?[name]?.text ?? TextSequence.empty
            if let why = text.problem(with: edit) { throw .invalidField(name, why) }
            if variant != .keepsRemadeTextOrigins {
                if !edit.insert.isEmpty { (edit.after, edit.before) = text.origins(typedAfter: edit.after) }
                if !edit.deletes.isEmpty {
                    edit.deletes = TextRange.runs(of: textCharacters(name, of: target, in: edit.deletes).lazy.filter(\.isShown).map(\.id))
                }
                if edit.insert.isEmpty && edit.deletes.isEmpty { throw .invalidField(name, "what it removes is removed already") }
            }
            return FieldWrite(name: name, change: .text(edit))
        case let .splice(at, delete, insert):
            guard at >= 0, delete >= 0 else { throw .invalidField(name, "a splice at \(at) removing \(delete) characters") }
            if delete == 0 && insert.isEmpty { throw .invalidField(name, "a splice that changes nothing") }
            let kind = records[target.opID]?[name]?.kind ?? .removed
            let base: String
            switch kind {
            case .text:
                let n = records[target.opID]![name]!.text?.count ?? 0
                guard at + delete <= n else {
                    throw .invalidField(name, "splice \(at)..<\(at + delete) is outside the text of \(n) characters")
                }
                let edit = records[target.opID]![name]!.text!.edit(at: at, delete: delete, insert: insert)
                return FieldWrite(name: name, change: .text(edit))
            case .removed: base = ""
            case .value:
                let value = records[target.opID]![name]!.value
                guard case .string(let s)? = value else {
                    throw .invalidField(name, "is a \(value?.typeName ?? "removed") value, not text")
                }
                base = s
            case .counter: throw .invalidField(name, "is a counter, not text")
            case .set: throw .invalidField(name, "is a set, not text")
            }
            // The field becomes text: the one operation resets what its author saw (hidden
            // characters of concurrent typing included) and types the string with the change made.
            var scalars = Array(base.unicodeScalars)
            guard at + delete <= scalars.count else {
                throw .invalidField(name, "splice \(at)..<\(at + delete) is outside the text of \(scalars.count) characters")
            }
            scalars.replaceSubrange(at ..< at + delete, with: insert.unicodeScalars)
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars)
            var edit = TextEdit(insert: String(text))
            let state = records[target.opID]?[name]
            if let t = state?.text, t.slotCount > 0 {
                let o = t.forest.first(TextSequence.tree).map { t.forest.lv(at: $0) }
                edit.before = o.map { t.slots.id(of: $0) } ?? .none
            }
            return FieldWrite(name: name, change: .text(edit), replaces: state?.register.id ?? .none,
                              seen: state?.seenForReset ?? [])
        default:
            return nil
        }
    }

    /// Why a received operation's text edits cannot apply to the record of `target`, or nil.
    ///
    /// - Complexity: O(d log r + log n) per edit, for d removed characters.
    func textProblem(_ writes: FieldWrites, of target: RecordTarget) -> String? {
        for w in writes.writes {
            guard case .text(let edit) = w.change else { continue }
            let text = records[target.opID]?[w.name]?.text ?? TextSequence.empty
            if let why = text.problem(with: edit) { return "field \"\(w.name)\": \(why)" }
        }
        return nil
    }

    /// Why `writes` break a text rule that needs no state, or nil: a positional splice never
    /// travels; one operation inserts into one text field at most; an edit changes something
    /// and stays within ``maxValueSize`` and ``TextLimits``.
    ///
    /// - Complexity: O(w + k + r) for w writes, k inserted bytes and r ranges.
    static func textProblem(with writes: FieldWrites, maxValueSize: Int) -> (name: String, why: String)? {
        var inserting = 0
        for w in writes.writes {
            switch w.change {
            case .splice: return (w.name, "a splice by position is resolved before it travels")
            case .text(let e):
                if e.insert.isEmpty && e.deletes.isEmpty { return (w.name, "a text edit that changes nothing") }
                if e.insert.utf8.count > maxValueSize {
                    return (w.name, "inserts \(e.insert.utf8.count) bytes, over the limit of \(maxValueSize) bytes")
                }
                if e.deletes.count > TextLimits.maxDeleteRanges {
                    return (w.name, "removes \(e.deletes.count) ranges, over \(TextLimits.maxDeleteRanges)")
                }
                for r in e.deletes where r.count < 1 || r.count > Int(OpID.maxCounter) || r.first == .none
                    || r.first.counter > OpID.maxCounter - UInt64(r.count) {
                    return (w.name, "a removed range \(r) that is empty or out of range")
                }
                if !e.insert.isEmpty { inserting += 1 }
                if inserting > 1 { return (w.name, "a second text field typed into by one operation") }
            default: continue
            }
        }
        return nil
    }

    // MARK: Anchors

    /// An anchor for the place before character `position` (`0...count`) of text field `name` of
    /// an item: it stays with its neighbouring character whatever others type or remove
    /// (``TextAnchor/Side``). Nil when the field is not text or the position is out of range.
    ///
    /// - Complexity: O(log n).
    public func anchor(_ name: String, ofItem item: ItemID, at position: Int, side: TextAnchor.Side = .after) -> TextAnchor? {
        anchor(name, of: item.opID, at: position, side: side)
    }

    /// Where `anchor` is now in text field `name` of an item (`0...count`), or nil when the field
    /// is not text or the anchor's character is not in it (compaction dropped a removed one).
    ///
    /// - Complexity: O(log n).
    public func position(of anchor: TextAnchor, _ name: String, ofItem item: ItemID) -> Int? {
        position(of: anchor, name, of: item.opID)
    }

    /// ``anchor(_:ofItem:at:side:)`` for a section's text field.
    public func anchor(_ name: String, ofSection section: SectionID, at position: Int, side: TextAnchor.Side = .after) -> TextAnchor? {
        anchor(name, of: section.opID, at: position, side: side)
    }

    /// ``position(of:_:ofItem:)`` for a section's text field.
    public func position(of anchor: TextAnchor, _ name: String, ofSection section: SectionID) -> Int? {
        position(of: anchor, name, of: section.opID)
    }

    private func anchor(_ name: String, of entity: OpID, at position: Int, side: TextAnchor.Side) -> TextAnchor? {
        guard let state = records[entity]?[name], state.kind == .text else { return nil }
        let text = state.text ?? TextSequence.empty
        guard position >= 0, position <= text.count else { return nil }
        return text.anchor(at: position, side: side)
    }

    private func position(of anchor: TextAnchor, _ name: String, of entity: OpID) -> Int? {
        guard let state = records[entity]?[name], state.kind == .text else { return nil }
        return (state.text ?? TextSequence.empty).position(of: anchor)
    }
}
