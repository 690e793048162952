import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncTestSupport
import ListSyncRandom

/// `Docs/Semantics.md` §8.8, "Undo is per field and per person": undo brings back the fields a
/// step changed and nothing else; text is taken back by identity (U11) and typing is grouped the
/// way text views group it (U12). `mine` is replica 1, whose user undoes; `theirs` is replica 2.
@Suite("§8.8 undo per field and per person; text by identity (U11); typing groups (U12)")
struct UndoFieldTests {
    /// `mine` holds one item with a title, a `done` flag and the notes "buy two litres" (text);
    /// `theirs` is a fork of it.
    private func board() throws -> (mine: ListDocument, theirs: ListDocument, item: ItemID) {
        var mine = try ListDocument.make(1, sections: [["milk"]])
        let item = try mine.itemID(at: IndexPath(item: 0, section: 0))
        try mine.writeFields(["title": .set(.string("milk")), "done": .set(.bool(false))], ofItem: item)
        try mine.splice("notes", ofItem: item, at: 0, insert: "buy two litres")
        return (mine, mine.fork(as: 2), item)
    }


    /// Types `text` at `position` one keystroke at a time, each recorded as the user's edit.
    private func type(_ text: String, at position: Int, into doc: inout ListDocument, item: ItemID,
                      undo: inout ListUndoManager) throws {
        for (k, ch) in text.unicodeScalars.enumerated() {
            try undo.edit(&doc) { try $0.splice("notes", ofItem: item, at: position + k, insert: String(ch)) }
        }
    }

    // MARK: Value fields, counters, sets

    @Test("§8.8 undoing my title edit writes my old title and leaves their tick")
    func undoIsPerField() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.setField("title", to: .string("oat milk"), ofItem: milk) }
        try theirs.setField("done", to: .bool(true), ofItem: milk)
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.field("title", of: milk) == .value(.string("milk")))
        #expect(mine.field("done", of: milk) == .value(.bool(true)), "their tick stays")
        #expect(undo.keptFields.isEmpty)
    }

    @Test("§8.8 a value field someone else wrote since is kept, and undo says so")
    func undoKeepsTheirLaterWrite() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.setField("title", to: .string("oat milk"), ofItem: milk) }
        try exchange(&mine, &theirs)
        try theirs.setField("title", to: .string("soy milk"), ofItem: milk)
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        #expect(mine.field("title", of: milk) == .value(.string("soy milk")))
        #expect(undo.keptFields.map(\.name) == ["title"])
    }

    @Test("§8.8 a counter's undo takes back my increments only; a set's undo my adds only")
    func undoCountersAndSets() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.writeFields(["votes": .increment(2), "tags": .insert(["dairy"])], ofItem: milk) }
        try theirs.writeFields(["votes": .increment(5), "tags": .insert(["fridge"])], ofItem: milk)
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.field("votes", of: milk) == .counter(5))
        #expect(mine.field("tags", of: milk) == .set(["fridge"]))
    }

    @Test("§8.8 a section inserted with its fields (one operation) is undone as one step, and redone with its fields")
    func undoSectionInsertedWithFields() throws {
        var (mine, theirs, _) = try board()
        var undo = ListUndoManager()
        let (op, made) = try undo.edit(&mine) {
            try $0.insertSection(at: 1, value: Data("Done".utf8), fields: ["color": .set(.string("green")), "limit": .increment(3)])
        }
        #expect(made.count == 1 && op.needsWireFormat5)
        #expect(ListUndoManager.actionName(for: made) == "Insert")
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.sectionCount == 1 && theirs.sectionCount == 1, "the insert is taken back on both")
        let redone = try undo.redo(&mine)
        #expect(redone.count == 1 && redone[0].needsWireFormat5, "brought back with its fields, in one operation")
        try exchange(&mine, &theirs)
        let back = try #require(theirs.snapshot().sections.last)
        #expect(back.value == Data("Done".utf8))
        #expect(back.fields == ["color": .value(.string("green")), "limit": .counter(3)])
    }

    @Test("§8.8 an item deleted and brought back by undo comes back with its fields")
    func undoDeleteKeepsFields() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.deleteItem(at: IndexPath(item: 0, section: 0)) }
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        let back = try #require(theirs.snapshot().sections[0].items.first)
        #expect(back.id != milk)
        #expect(back.fields == ["title": .value(.string("milk")), "done": .value(.bool(false)), "notes": .text("buy two litres")])
    }

    // MARK: U11 text by identity

    @Test("U11: undoing my typing removes my characters only; theirs, typed since, stay")
    func undoTypingKeepsTheirs() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: 14, insert: " today") }
        try exchange(&mine, &theirs)
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "please ")
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "please buy two litres today")
        let ops = try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "please buy two litres", "their word stays, mine goes")
        #expect(undo.keptFields.isEmpty)
        #expect(ops.count == 1, "one operation: the removal of my characters by identity")
        try undo.redo(&mine)
        try exchange(&mine, &theirs)
        #expect(theirs.text("notes", ofItem: milk) == "please buy two litres today")
    }

    @Test("U11: undoing my removal types the removed text again where it was, around their typing")
    func undoRemovalRestoresInPlace() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: 4, delete: 4) }   // "buy litres"
        // Concurrently they type at both ends.
        try theirs.splice("notes", ofItem: milk, at: 14, insert: "!")
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "> ")
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "> buy litres!")
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(theirs.text("notes", ofItem: milk) == "> buy two litres!")
        try undo.redo(&mine)
        try exchange(&mine, &theirs)
        #expect(theirs.text("notes", ofItem: milk) == "> buy litres!")
    }

    @Test("U11: a replacement (select a word, type over it) is undone to the word, their edits kept")
    func undoReplacement() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: 4, delete: 3, insert: "three") }
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "TODO ")
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "TODO buy three litres")
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "TODO buy two litres")
    }

    @Test("U11: text they removed since my typing stays removed; my remaining characters go")
    func undoAfterTheirRemoval() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: 14, insert: " today") }
        try exchange(&mine, &theirs)
        try theirs.splice("notes", ofItem: milk, at: 15, delete: 2)   // " today" → " day"
        try theirs.splice("notes", ofItem: milk, at: 0, delete: 4)    // their removal of "buy "
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "two litres", "their removal of \"buy \" is theirs; my typing is gone")
    }

    @Test("U11: a field I made text, or turned from text into a value, is taken back whole")
    func wholeFieldWhenKindChanged() throws {
        var (mine, _, milk) = try board()
        var undo = ListUndoManager()
        try undo.edit(&mine) { try $0.setField("notes", to: .string("gone"), ofItem: milk) }
        try undo.undo(&mine)
        #expect(mine.text("notes", ofItem: milk) == "buy two litres")
        try undo.edit(&mine) { try $0.splice("memo", ofItem: milk, at: 0, insert: "new") }
        try undo.undo(&mine)
        #expect(mine.field("memo", of: milk) == nil)
    }

    // MARK: U12 typing groups

    @Test("U12: keystrokes typed one after the other are one undo group, named Typing")
    func typingIsOneGroup() throws {
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        try type(" today", at: 14, into: &mine, item: milk, undo: &undo)
        // Backspaces over the last characters typed continue the same typing ("day" → "night").
        for at in [19, 18, 17] { try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: at, delete: 1) } }
        try type("night", at: 17, into: &mine, item: milk, undo: &undo)
        #expect(mine.text("notes", ofItem: milk) == "buy two litres tonight")
        #expect(undo.undoCount == 1)
        #expect(undo.undoActionName == "Typing")
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "> ")
        try exchange(&mine, &theirs)
        try undo.undo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "> buy two litres")
        try undo.redo(&mine)
        try exchange(&mine, &theirs)
        #expect(mine.text("notes", ofItem: milk) == "> buy two litres tonight")
    }

    @Test("U12: the caret moving (a keystroke elsewhere, endTyping, another edit) starts a new group")
    func typingGroupsEnd() throws {
        var (mine, _, milk) = try board()
        var undo = ListUndoManager()
        try type("ab", at: 14, into: &mine, item: milk, undo: &undo)
        try type("X", at: 0, into: &mine, item: milk, undo: &undo)          // elsewhere
        #expect(undo.undoCount == 2)
        try type("Y", at: 1, into: &mine, item: milk, undo: &undo)          // continues "X"
        #expect(undo.undoCount == 2)
        undo.endTyping()
        try type("Z", at: 2, into: &mine, item: milk, undo: &undo)
        #expect(undo.undoCount == 3)
        try undo.edit(&mine) { try $0.setField("done", to: .bool(true), ofItem: milk) }
        try type("W", at: 3, into: &mine, item: milk, undo: &undo)
        #expect(undo.undoCount == 5)
        #expect(mine.text("notes", ofItem: milk) == "XYZWbuy two litresab")
        for _ in 0 ..< 5 { try undo.undo(&mine) }
        #expect(mine.text("notes", ofItem: milk) == "buy two litres")
        #expect(mine.field("done", of: milk) == .value(.bool(false)))
    }

    @Test("U11/U12 seeded: two people type and remove; after my undo of all my groups, exactly their edits remain",
          arguments: 0 ..< 20 as Range<UInt64>)
    func undoAllMineLeavesTheirs(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var (mine, theirs, milk) = try board()
        var undo = ListUndoManager()
        var theirOps: [ListOperation] = []
        for _ in 0 ..< 12 {
            // I type or remove (recorded); they type (not recorded), both on their own copies.
            let n = mine.text("notes", ofItem: milk)!.unicodeScalars.count
            if n > 2 && rng.next() % 3 == 0 {
                let at = Int(rng.next() % UInt64(n - 1))
                try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: at, delete: 1) }
            } else {
                let at = Int(rng.next() % UInt64(n + 1))
                try undo.edit(&mine) { try $0.splice("notes", ofItem: milk, at: at, insert: "m") }
            }
            let m = theirs.text("notes", ofItem: milk)!.unicodeScalars.count
            let op = try theirs.splice("notes", ofItem: milk, at: Int(rng.next() % UInt64(m + 1)), insert: "t")
            theirOps.append(op)
            if rng.next() % 2 == 0 { try exchange(&mine, &theirs) }
        }
        try exchange(&mine, &theirs)
        while undo.canUndo { try undo.undo(&mine) }
        try exchange(&mine, &theirs)
        // Their characters all stay; none of mine is left; the original text is back.
        let text = mine.text("notes", ofItem: milk)!
        #expect(!text.contains("m"), "seed \(seed): my typing is all taken back: \(text)")
        #expect(text.filter { $0 == "t" }.count == "buy two litres".filter { $0 == "t" }.count + theirOps.count,
                "seed \(seed): every character they typed stays: \(text)")
        #expect(text.replacingOccurrences(of: "t", with: "") == "buy two litres".replacingOccurrences(of: "t", with: ""),
                "seed \(seed): the text I removed is back: \(text)")
    }
}
