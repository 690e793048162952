import Foundation
import ListCRDT

// Taking a step back: new operations that bring each entity of the step to its `target` state,
// where the entity still is as the step left it (Docs/Semantics.md, "Undo and redo", rules U2-U8).

extension UndoTracks {
    /// Brings the entities of `step` back to their target states with new local operations on
    /// `document`; returns the operations, in order, and the step that takes *them* back (the
    /// redo of an undo, the undo of a redo).
    ///
    /// The order: items to hide are deleted first; then sections to show, move or rename, left to
    /// right in the target arrangement; then items, left to right, so that each lands after a
    /// neighbour that is already in place; last, sections to hide, if nothing else holds them.
    ///
    /// Throws what the document throws; operations made before that are then already applied (the
    /// caller rolls the document back).
    ///
    /// - Complexity: O(k log n) for k entities in the step and n items, plus the operations.
    mutating func perform(_ step: UndoStep, on document: inout ListDocument) throws(ListError)
        -> (operations: [ListOperation], inverse: UndoStep) {
        var sectionIDs = step.sections.map { sections.resolve($0.id) }
        var itemIDs = step.items.map { items.resolve($0.id) }
        let sectionsBefore = sectionIDs.map { document.undoState(of: $0, track: sections) }
        let itemsBefore = itemIDs.map { document.undoState(of: $0, track: items) }
        var ops: [ListOperation] = []
        // What the text edits made here did, for the inverse step (U11).
        var texts: [RecordTarget: [String: TextTakeBack]] = [:]

        // U2: what the step made shown (an insert, a restore) is deleted wherever it is now.
        for (k, c) in step.items.enumerated() where c.target.place == nil && c.expected.isShown {
            if document.contains(itemIDs[k]) { ops.append(try document.deleteItem(itemIDs[k])) }
        }
        let sectionOrder = step.sections.indices.filter { step.sections[$0].target.isShown }
            .sorted { step.sections[$0].target.place!.index < step.sections[$1].target.place!.index }
        for k in sectionOrder {
            try bringBack(step.sections[k], as: &sectionIDs[k], on: &document, into: &ops, texts: &texts)
        }
        let itemOrder = step.items.indices.filter { step.items[$0].target.isShown }.sorted {
            let a = step.items[$0].target.place!, b = step.items[$1].target.place!
            return (a.sectionIndex, a.row) < (b.sectionIndex, b.row)
        }
        for k in itemOrder {
            try bringBack(step.items[k], as: &itemIDs[k], on: &document, into: &ops, texts: &texts)
        }
        // U2 for sections: a section the step inserted goes, unless it holds items the step did
        // not put there (someone else's: they keep it, as a concurrent insert keeps a deleted
        // section shown, SEMANTICS §3.5).
        for (k, c) in step.sections.enumerated() where c.target.place == nil && c.expected.isShown {
            guard let index = document.index(of: sectionIDs[k]),
                  undoMust({ () throws(ListError) in try document.itemCount(inSection: index) }) == 0 else { continue }
            ops.append(try document.deleteSection(sectionIDs[k]))
        }

        var inverse = UndoStep()
        for k in step.sections.indices {
            let now = document.undoState(of: sectionIDs[k], track: sections)
            if now.differs(from: sectionsBefore[k]) {
                inverse.sections.append(SectionChange(id: sectionIDs[k], target: sectionsBefore[k], expected: now,
                                                      texts: texts[.section(sectionIDs[k])] ?? [:]))
            }
        }
        for k in step.items.indices {
            let now = document.undoState(of: itemIDs[k], track: items)
            if now.differs(from: itemsBefore[k]) {
                inverse.items.append(ItemChange(id: itemIDs[k], target: itemsBefore[k], expected: now,
                                                texts: texts[.item(itemIDs[k])] ?? [:]))
            }
        }
        return (ops, inverse)
    }

    // MARK: Sections

    /// Brings one section to its (shown) target state; `id` becomes the copy's if it restores one.
    private mutating func bringBack(_ c: SectionChange, as id: inout SectionID, on document: inout ListDocument,
                                    into ops: inout [ListOperation],
                                    texts: inout [RecordTarget: [String: TextTakeBack]]) throws(ListError) {
        guard let target = c.target.place, let targetWrite = c.target.write else { preconditionFailure("a shown state has a write") }
        let now = document.undoState(of: id, track: sections)
        if !now.isShown {
            // U3: restore what the step deleted (a copy); U6: not what someone else deleted since.
            guard !c.expected.isShown else { return }
            let value = Self.value(now: now.value, expected: c.expected.value, target: c.target.value)
            // With the fields it showed, in the insert (its texts typed after it).
            let (fields, texts) = ListDocument.insertChanges(showing: c.target.fields)
            let op = try document.insertSection(at: sectionIndex(for: target, moving: nil, in: document), value: value,
                                                fields: fields)
            let copy = SectionID(op.id)
            sections.replace(id, with: copy)
            sections.label(copy, write: op.id, standsFor: targetWrite)
            id = copy
            ops.append(op)
            for (name, t) in texts.sorted(by: { $0.key < $1.key }) { ops.append(try document.splice(name, ofSection: copy, at: 0, insert: t)) }
            return
        }
        // U4: move back, unless someone else moved it since (U7).
        if targetWrite != c.expected.write && now.write == c.expected.write, let from = document.index(of: id) {
            let to = sectionIndex(for: target, moving: from, in: document)
            if let op = try document.moveSection(from: from, to: to) {
                sections.label(id, write: op.id, standsFor: targetWrite)
                ops.append(op)
            } else if let raw = document.winningPositionWrite(of: id) {
                sections.label(id, write: raw, standsFor: targetWrite)
            }
        }
        // U5: the value before, unless someone else wrote one since.
        if let value = c.target.value, value != c.expected.value, now.value == c.expected.value {
            ops.append(try document.setValue(value, forSection: id))
        }
        let changes = fieldChanges(target: c.target.fields, expected: c.expected.fields, now: now.fields, of: .section(id),
                                   byIdentity: c.texts.keys)
        if !changes.isEmpty { ops.append(try document.writeFields(changes, ofSection: id)) }
        texts[.section(id)] = try takeBackTexts(c.texts, of: .section(id), on: &document, into: &ops)
    }

    /// Where a section lands (U4, the rule of a drag's placeholder, `Docs/DragSessions.md`):
    /// first if it was first; else right after its old left neighbour; if that is gone, last if
    /// it was last, else right before its old right neighbour; if both are gone, at its old index
    /// (clamped). Counted without the section itself when it moves (`moving` is its index).
    private mutating func sectionIndex(for place: SectionPlace, moving: Int?, in document: ListDocument) -> Int {
        func without(_ i: Int) -> Int { moving.map { $0 < i } == true ? i - 1 : i }
        let count = document.sectionCount - (moving == nil ? 0 : 1)
        guard let after = place.after else { return 0 }
        if let i = document.index(of: sections.resolve(after)), i != moving { return without(i) + 1 }
        guard let before = place.before else { return count }
        if let i = document.index(of: sections.resolve(before)), i != moving { return without(i) }
        return min(max(place.index, 0), count)
    }

    // MARK: Items

    /// Brings one item to its (shown) target state; `id` becomes the copy's if it restores one.
    private mutating func bringBack(_ c: ItemChange, as id: inout ItemID, on document: inout ListDocument,
                                    into ops: inout [ListOperation],
                                    texts: inout [RecordTarget: [String: TextTakeBack]]) throws(ListError) {
        guard let target = c.target.place, let targetWrite = c.target.write else { preconditionFailure("a shown state has a write") }
        let now = document.undoState(of: id, track: items)
        let section = sections.resolve(target.section)
        if !now.isShown {
            // U3: restore what the step deleted (a copy), in its section if that is still shown
            // (U8); U6: not what someone else deleted since.
            guard !c.expected.isShown, let s = document.index(of: section) else { return }
            let value = Self.value(now: now.value, expected: c.expected.value, target: c.target.value)
            let row = itemRow(for: target, inSection: s, moving: nil, in: document)
            let (fields, texts) = ListDocument.insertChanges(showing: c.target.fields)
            let op = try document.insertItem(at: IndexPath(item: row, section: s), value: value, fields: fields)
            let copy = ItemID(op.id)
            items.replace(id, with: copy)
            items.label(copy, write: op.id, standsFor: targetWrite)
            id = copy
            ops.append(op)
            for (name, t) in texts.sorted(by: { $0.key < $1.key }) { ops.append(try document.splice(name, ofItem: copy, at: 0, insert: t)) }
            return
        }
        // U4: move back, unless someone else moved it since (U7) or its old section is gone (U8).
        if targetWrite != c.expected.write && now.write == c.expected.write,
           let s = document.index(of: section), let from = document.indexPath(of: id) {
            let to = IndexPath(item: itemRow(for: target, inSection: s, moving: from, in: document), section: s)
            if let op = try document.moveItem(from: from, to: to) {
                items.label(id, write: op.id, standsFor: targetWrite)
                ops.append(op)
            } else if let raw = document.winningPositionWrite(of: id) {
                items.label(id, write: raw, standsFor: targetWrite)
            }
        }
        // U5: the value before, unless someone else wrote one since.
        if let value = c.target.value, value != c.expected.value, now.value == c.expected.value {
            ops.append(try document.setValue(value, forItem: id))
        }
        let changes = fieldChanges(target: c.target.fields, expected: c.expected.fields, now: now.fields, of: .item(id),
                                   byIdentity: c.texts.keys)
        if !changes.isEmpty { ops.append(try document.writeFields(changes, ofItem: id)) }
        texts[.item(id)] = try takeBackTexts(c.texts, of: .item(id), on: &document, into: &ops)
    }

    // MARK: Fields

    /// The field changes that take a record from `expected` (what the step left) back to `target`
    /// (U9, Docs/Semantics.md §8.8): a counter takes back the step's increments and a set its adds
    /// and removes, whatever others did since (they commute); a value field is written back only
    /// if it still shows what the step left, else it is kept and listed in ``UndoTracks/kept``.
    mutating func fieldChanges(target: [String: Field], expected: [String: Field], now: [String: Field],
                               of owner: RecordTarget, byIdentity: Dictionary<String, TextTakeBack>.Keys) -> [String: FieldChange] {
        var changes: [String: FieldChange] = [:]
        for name in Set(target.keys).union(expected.keys) where target[name] != expected[name] && !byIdentity.contains(name) {
            switch (target[name], expected[name]) {
            case let (.counter(t)?, .counter(e)?):
                changes[name] = .increment(t &- e)
            case let (nil, .counter(e)?):
                // The step made the counter: its increments go, others' stay.
                changes[name] = .increment(0 &- e)
            case let (.set(t)?, .set(e)?):
                let add = Set(t).subtracting(e), remove = Set(e).subtracting(t)
                // One write per field: the removes first where both (rare: a step that swapped members).
                if !remove.isEmpty {
                    changes[name] = .delete(remove.sorted())
                } else if !add.isEmpty {
                    changes[name] = .insert(add.sorted())
                }
            case let (nil, .set(e)?):
                // The step made the set: its members go, others' adds stay.
                if !e.isEmpty { changes[name] = .delete(e) }
            case (let t, let e):
                guard now[name] == e else {
                    kept.append(KeptField(target: owner, name: name, now: now[name], wanted: t))
                    continue
                }
                switch t {
                case .value(let v)?: changes[name] = .set(v)
                case nil: changes[name] = .remove
                case .counter(let n)?: changes[name] = .increment(n &- (now[name].flatMap { if case .counter(let x) = $0 { x } else { nil } } ?? 0))
                case .set(let members)?: changes[name] = members.isEmpty ? .remove : .insert(members)
                case .text(let text)?:
                    // Nobody wrote it since the step: the smallest splice back to the text before
                    // it, from the text or string value it shows (a splice edits a string value).
                    switch now[name] {
                    case .text(let x)?, .value(.string(let x))?:
                        if let s = TextSplice.between(old: x, new: text) { changes[name] = s.change }
                    case nil:
                        if !text.isEmpty { changes[name] = .splice(at: 0, delete: 0, insert: text) }
                    default:
                        // Another kind of value: no splice onto it; its text comes back as a string.
                        changes[name] = .set(.string(text))
                    }
                }
            }
        }
        return changes
    }

    /// U11: each text field of the step taken back by identity, one operation per field (an
    /// operation types into one text field at most): the characters the step typed that are still
    /// shown are removed, those it removed are typed again where they stood; everyone else's
    /// typing stays. Returns what the operations did, by identity, for the inverse step.
    private mutating func takeBackTexts(_ texts: [String: TextTakeBack], of owner: RecordTarget, on document: inout ListDocument,
                                        into ops: inout [ListOperation]) throws(ListError) -> [String: TextTakeBack]? {
        guard !texts.isEmpty else { return nil }
        var inverse: [String: TextTakeBack] = [:]
        for name in texts.keys.sorted() {
            let t = texts[name]!
            // The characters typed, or the copies undo or redo typed of them since.
            var resolved: [OpID] = []
            for r in t.typed {
                for k in 0 ..< r.count { resolved.append(characters.resolve(r.first.advanced(by: k))) }
            }
            let typed = TextRange.runs(of: resolved)
            let (edit, unplaced) = document.takeBackEdit(name, of: owner, typed: typed, removed: t.removed)
            if unplaced > 0 {
                // Compaction dropped every removed character: nowhere to type them again by identity.
                var lost = String.UnicodeScalarView()
                lost.append(contentsOf: t.removed.map(\.scalar))
                let now: Field? = switch owner {
                case .item(let i): document.field(name, of: i)
                case .section(let s): document.field(name, of: s)
                }
                kept.append(KeptField(target: owner, name: name, now: now, wanted: .text(String(lost))))
            }
            guard let edit else { continue }
            let removed = document.textCharacters(name, of: owner, in: edit.deletes)
            let op: ListOperation
            switch owner {
            case .item(let i): op = try document.writeFields([name: .text(edit)], ofItem: i)
            case .section(let s): op = try document.writeFields([name: .text(edit)], ofSection: s)
            }
            ops.append(op)
            let n = edit.insertedCount
            if n > 0 {
                // The removed characters come back as new ones, in order: op.id, op.id + 1, …
                for (k, c) in t.removed.enumerated() where characters.resolve(c.id) == c.id {
                    characters.replace(c.id, with: op.id.advanced(by: k))
                }
            }
            inverse[name] = TextTakeBack(typed: n > 0 ? [TextRange(first: op.id, count: n)] : [], removed: removed)
        }
        return inverse
    }

    /// Where an item lands in the section at `s` (U4, the rule of a drag's placeholder,
    /// `Docs/DragSessions.md`): at the top if it was at the top; else right below its old upper
    /// neighbour if that is in the section; if not, at the bottom if it was at the bottom, else
    /// right above its old lower neighbour if that is in the section; else at its old row
    /// (clamped). Counted without the item itself when it moves (`moving` is where it is).
    private mutating func itemRow(for place: ItemPlace, inSection s: Int, moving: IndexPath?, in document: ListDocument) -> Int {
        func without(_ p: IndexPath) -> Int { moving.map { $0.section == p.section && $0.item < p.item } == true ? p.item - 1 : p.item }
        let count = undoMust { () throws(ListError) in try document.itemCount(inSection: s) } - (moving?.section == s ? 1 : 0)
        guard let after = place.after else { return 0 }
        if let p = document.indexPath(of: items.resolve(after)), p.section == s, p != moving { return without(p) + 1 }
        guard let before = place.before else { return count }
        if let p = document.indexPath(of: items.resolve(before)), p.section == s, p != moving { return without(p) }
        return min(max(place.row, 0), count)
    }

    // MARK: Values

    /// The value a restored copy gets: the one before the step, unless someone else wrote the
    /// register since the step (then theirs, U5).
    private static func value(now: Data?, expected: Data?, target: Data?) -> Data {
        (now == expected ? target : now) ?? target ?? Data()
    }
}
