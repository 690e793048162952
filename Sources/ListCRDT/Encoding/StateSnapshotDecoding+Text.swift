import Foundation

/// Version 7 of the state snapshot (Docs/WireFormat.md §5.7): the records that hold text are
/// written as state ahead of the log, so a load takes each text as it is instead of replaying
/// every keystroke of its history (a typed text's history is one operation per keystroke; the
/// replay was most of a typed document's load).
///
/// The log keeps every text edit (a peer that lacks them is sent them), so the loader ties the
/// two together instead of trusting either: each logged edit of a field is checked against the
/// field's text as a received edit is (its origins and removed characters are characters of the
/// field typed by an earlier edit of the log, its origins in order), its inserted characters are
/// the text's characters of its ids, with its origins and its scalars, and at the end the text
/// holds exactly the characters its log inserted, hidden exactly when an edit removed them. What
/// is taken from the snapshot as written, as from a compacted snapshot, is the order of concurrent
/// inserts at one place (Fugue's, decided once when they met) and the records' other fields.
struct TextStateCheck {
    /// One text field of a record loaded as state.
    struct Key: Hashable {
        var record: OpID
        var name: String
    }

    /// What the log said of one text field so far.
    struct Field {
        var text: TextSequence
        /// Characters inserted by its logged edits, and how many edits named it.
        var inserted = 0
        var edits = 0
        /// Per slot (local version of the text): whether a logged edit removed it.
        var removed: [Bool]
        /// Version 11: the text is made from the log's edits (`DerivedTextCoding.swift`); its
        /// order runs (start, count pairs), until ``finishDerived()``.
        var derivedOrder: [Int]?
        /// Version 11: per replica, one past the greatest counter of a character made so far.
        var derivedEnds: [ReplicaID: UInt64] = [:]
        /// Version 11: the digest of the text the log must make (``DerivedTextDigest``).
        var derivedDigest: UInt32 = 0
        /// Version 11: why the text made so far is wrong, found after it changed.
        var failure: String?

        init(_ text: TextSequence) {
            self.text = text
            removed = Array(repeating: false, count: text.slotCount)
        }

        /// Why `edit` of operation `id` does not fit the text, or nil. `earlier(x)`: whether
        /// character `x` was typed by an operation before this one in the log.
        mutating func problem(with edit: TextEdit, id: OpID, earlier: (OpID) -> Bool) -> String? {
            if derivedOrder != nil { return appendDerived(edit, id: id, earlier: earlier) }
            edits += 1
            var left = LocalVersion.none, right = LocalVersion.none
            if let why = noteOrigins(of: edit, earlier: earlier, left: &left, right: &right) { return why }
            if left.exists, right.exists, !text.forest.isBefore(left, right) {
                return "its origins \(edit.after) and \(edit.before) are out of order"
            }
            let k = edit.insertedCount
            guard k > 0 else { return nil }
            guard let lv = text.lv(of: id), text.lv(of: id.advanced(by: k - 1)) == lv.advanced(by: k - 1) else {
                return "its characters are not the text's"
            }
            let origins = text.slots.origins(of: lv)
            guard origins.left == left, origins.right == right else { return "its characters are not where it put them" }
            guard text.scalars.matches(lv.int ..< lv.int + k, edit.insert) else {
                return "its characters are not the text's"
            }
            inserted += k
            return nil
        }

        /// The local versions of `edit`'s origins (in `left` and `right`), each a character of the
        /// field typed before it (`earlier`), and its removed characters noted; or why not.
        ///
        /// - Complexity: O((d + 2) log r) for d removed characters.
        mutating func noteOrigins(of edit: TextEdit, earlier: (OpID) -> Bool, left: inout LocalVersion,
                                  right: inout LocalVersion) -> String? {
            if edit.after != .none {
                guard let l = text.lv(of: edit.after), earlier(edit.after) else {
                    return "it inserts after \(edit.after), not a character of the field typed before it"
                }
                left = l
            }
            if edit.before != .none {
                guard let r = text.lv(of: edit.before), earlier(edit.before) else {
                    return "it inserts before \(edit.before), not a character of the field typed before it"
                }
                right = r
            }
            for r in edit.deletes {
                guard earlier(r.first.advanced(by: r.count - 1)) else { return "it removes \(r), typed after it" }
                for k in 0 ..< r.count {
                    guard let lv = text.lv(of: r.first.advanced(by: k)) else {
                        return "it removes \(r.first.advanced(by: k)), not a character of the field"
                    }
                    removed[lv.int] = true
                }
            }
            return nil
        }

        /// Why the text is not what its logged edits made, or nil.
        func problemAtEnd() -> String? {
            guard edits > 0 else { return "a text no edit of the log made" }
            guard inserted == text.slotCount else {
                return "\(text.slotCount) characters where the log inserted \(inserted)"
            }
            var hiddenWrong = false
            text.forest.forEachRun(TextSequence.tree) { lv, n, visible in
                for j in lv.int ..< lv.int + n where removed[j] == visible { hiddenWrong = true }
            }
            return hiddenWrong ? "a character shown that the log removed, or hidden that it kept" : nil
        }
    }

    var fields: [Field] = []
    var index: [Key: Int] = [:]
    /// The records, by entity, to become the document's once the log is read.
    var records: [OpID: [String: FieldState]] = [:]
    var clock: UInt64 = 0
    /// The last field looked up (typing names one field edit after edit).
    var last: (key: Key, field: Int)?
}

extension StateSnapshotDecoder {
    /// Version 7: reads the records that hold text (written by
    /// ``StateSnapshotEncoder``'s `putTextRecords`), each to be checked against the log.
    ///
    /// - Complexity: O(b + n) for b bytes and n characters.
    mutating func readTextRecords() throws(WireError) {
        let at = r.offset
        let n = try r.count(minBytes: 1)
        let store = try RecordStore(decoding: try r.raw(n), maxValueSize: maxValueSize, text: true)
        var check = TextStateCheck()
        check.clock = store.clock
        for (record, fields) in store.materialized {
            var any = false
            for (name, f) in fields {
                guard let text = f.text else { continue }
                any = true
                check.index[TextStateCheck.Key(record: record, name: name)] = check.fields.count
                check.fields.append(TextStateCheck.Field(text))
            }
            guard any else { throw .invalidValue("a record \(record) written as state that holds no text", offset: at) }
        }
        check.records = store.materialized
        textState = check
    }

    /// Version 7: the log's field writes `writes` of operation `id` to a record loaded as state:
    /// each text edit checked against its text (``TextStateCheck/Field/problem(with:id:earlier:)``);
    /// nothing is applied, the record already holds every write.
    mutating func checkLogged(_ writes: FieldWrites, of id: OpID, record: OpID, at offset: Int) throws(WireError) {
        for w in writes.writes {
            guard case .text(let edit) = w.change else { continue }
            let key = TextStateCheck.Key(record: record, name: w.name)
            let i: Int
            if let last = textState!.last, last.key == key {
                i = last.field
            } else {
                guard let found = textState!.index[key] else {
                    throw .invalidValue("field \"\(w.name)\": a text edit of a field the snapshot holds no text of", offset: offset)
                }
                i = found
                textState!.last = (key, found)
            }
            let ends = lastEnd, indexOf = replicaIndexOf
            let why = textState!.fields[i].problem(with: edit, id: id) { x in
                // Ids of one replica come in increasing order in the log.
                if x.replica == id.replica { return x.counter < id.counter }
                guard let k = indexOf[x.replica] else { return false }
                return x.counter < ends[k]
            }
            if let why { throw .invalidValue("field \"\(w.name)\": \(why)", offset: offset) }
        }
    }

    /// Version 7, once the log is read: every text is what its logged edits made; the records
    /// become the document's (the check's copies of the texts released first, so the first edit of
    /// a loaded text does not copy it).
    mutating func finishTextRecords(at offset: Int) throws(WireError) {
        guard var check = textState else { return }
        textState = nil
        for record in check.records.keys where doc.itemEntity(ItemID(record)) == nil && doc.sectionEntity(SectionID(record)) == nil {
            throw .invalidValue("a record of text for \(record), not a section or an item", offset: offset)
        }
        for (key, i) in check.index {
            let derived = check.fields[i].derivedOrder != nil
            if let why = check.fields[i].finishDerived() ?? check.fields[i].problemAtEnd() {
                throw .invalidValue("field \"\(key.name)\" of \(key.record): \(why)", offset: offset)
            }
            // Version 11: the text made from the log becomes the record's.
            if derived { check.records[key.record]![key.name]!.text = check.fields[i].text }
        }
        check.fields = []
        doc.records.clock = max(doc.records.clock, check.clock)
        for (record, fields) in check.records { doc.records.materialized[record] = fields }
    }
}
