import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncTestSupport

/// Carets in presence (Docs/Text.md, "Carets"; issue "Text in a field", item 3): a person's caret
/// or selection in a text field, sent by identity, found by every receiver in its own copy of the
/// text, where it stays as text is typed and removed around it.
@Suite("Carets: a caret or selection in a text field, by identity, moved with the text")
struct CaretPresenceTests {
    private func board() throws -> (mine: ListDocument, theirs: ListDocument, item: ItemID) {
        var mine = try ListDocument.make(1, sections: [["milk"]])
        let item = try mine.itemID(at: IndexPath(item: 0, section: 0))
        try mine.splice("notes", ofItem: item, at: 0, insert: "buy two litres")
        return (mine, mine.fork(as: 2), item)
    }

    private func seen(_ caret: TextCaret, in doc: ListDocument) -> RemoteCaret? {
        var b = PresenceBoard()
        _ = b.receive(Presence(replica: ReplicaID(1), name: "phone", activity: .editing(caret)), now: 0)
        let a = b.activities(in: doc)
        #expect(a.count == 1 && a[0].kind == .editing && a[0].items.count == (caret.target.opID == .none ? 0 : 1))
        return a.first?.caret
    }

    @Test("a caret stays between the same characters while the other person types and removes around it")
    func caretFollowsTheText() throws {
        var (mine, theirs, milk) = try board()
        let caret = try #require(mine.caret("notes", ofItem: milk, selection: 4 ..< 4))   // "buy |two litres"
        #expect(seen(caret, in: theirs)?.head == 4)
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "please ")             // before it
        #expect(seen(caret, in: theirs).map { ($0.anchor, $0.head) } ?? (-1, -1) == (11, 11))
        try theirs.splice("notes", ofItem: milk, at: 21, insert: "!")                  // after it
        #expect(seen(caret, in: theirs)?.head == 11)
        try theirs.splice("notes", ofItem: milk, at: 11, insert: "only ")              // at it: theirs goes after
        #expect(seen(caret, in: theirs)?.head == 11)
        try theirs.splice("notes", ofItem: milk, at: 7, delete: 4)                      // "buy " removed: where it was
        #expect(seen(caret, in: theirs)?.head == 7)
        #expect(theirs.text("notes", ofItem: milk) == "please only two litres!")
        // Mine sees the same once the edits arrive.
        mine.merge(theirs)
        #expect(seen(caret, in: mine)?.head == 7)
    }

    @Test("a selection keeps its two ends; typing inside it widens it; headFirst puts the caret at the start")
    func selectionKeepsBothEnds() throws {
        var (mine, theirs, milk) = try board()
        let selection = try #require(mine.caret("notes", ofItem: milk, selection: 4 ..< 7))  // "two"
        try theirs.splice("notes", ofItem: milk, at: 5, insert: "w")                         // "twwo"
        let seenThere = try #require(seen(selection, in: theirs))
        #expect(seenThere.range == 4 ..< 8 && seenThere.anchor == 4 && seenThere.head == 8)
        let backwards = try #require(mine.caret("notes", ofItem: milk, selection: 4 ..< 7, headFirst: true))
        #expect(seen(backwards, in: theirs).map { ($0.anchor, $0.head) } ?? (-1, -1) == (8, 4))
    }

    @Test("no caret where the field is not text, the range is outside it, or an end has not arrived")
    func caretsNotShown() throws {
        var (mine, theirs, milk) = try board()
        #expect(mine.caret("title", ofItem: milk, selection: 0 ..< 0) == nil, "no such text field")
        #expect(mine.caret("notes", ofItem: milk, selection: 0 ..< 15) == nil, "past the end")
        try mine.splice("notes", ofItem: milk, at: 14, insert: " now")
        let caret = try #require(mine.caret("notes", ofItem: milk, selection: 18 ..< 18))
        #expect(seen(caret, in: theirs) == nil, "its character has not arrived there yet")
        theirs.merge(mine)
        #expect(seen(caret, in: theirs)?.head == 18)
    }
}

/// `ChangeSet.textChanges` (Docs/Text.md, "From a text view"): a change set says how each text
/// field changed, as splices a text view applies without resetting its caret.
@Suite("Change sets carry text fields' splices")
struct ChangeSetTextTests {
    /// `text` with `splices` applied in order (scalar positions).
    private func applied(_ splices: [TextSplice], to text: String) -> String {
        var scalars = Array(text.unicodeScalars)
        for s in splices { scalars.replaceSubrange(s.at ..< s.at + s.delete, with: s.insert.unicodeScalars) }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }

    @Test("another person's typing, in a row that stays and in one that moves, comes as splices; the caret moves through them")
    func remoteTypingAsSplices() throws {
        var mine = try ListDocument.make(1, sections: [["milk", "eggs"], ["tea"]])
        let milk = try mine.itemID(at: IndexPath(item: 0, section: 0)), tea = try mine.itemID(at: IndexPath(item: 0, section: 1))
        try mine.splice("notes", ofItem: milk, at: 0, insert: "buy two litres")
        try mine.splice("notes", ofItem: tea, at: 0, insert: "green")
        var theirs = mine.fork(as: 2)
        let before = mine.snapshot()
        try theirs.splice("notes", ofItem: milk, at: 0, insert: "please ")
        try theirs.splice("notes", ofItem: milk, at: 11, delete: 3, insert: "three")
        try theirs.splice("notes", ofItem: tea, at: 5, insert: " tea")
        try theirs.moveItem(from: IndexPath(item: 0, section: 1), to: IndexPath(item: 0, section: 0))
        try theirs.setField("title", to: .string("Tea"), ofItem: tea)
        mine.merge(theirs)
        let changes = ChangeSet(from: before, to: mine.snapshot())
        let byTarget = Dictionary(uniqueKeysWithValues: changes.textChanges.map { ($0.target, $0) })
        #expect(changes.textChanges.count == 2, "\(changes.textChanges)")
        let m = try #require(byTarget[.item(milk)]), t = try #require(byTarget[.item(tea)])
        #expect(m.field == "notes" && applied(m.splices, to: "buy two litres") == "please buy three litres")
        #expect(t.field == "notes" && applied(t.splices, to: "green") == "green tea")
        // A caret after "litres" in the old text is after "litres" in the new.
        #expect(TextChanges.position(14, through: m.splices) == "please buy three litres".unicodeScalars.count)
        // Nothing for a field that did not change, nor for an untouched item.
        #expect(ChangeSet(from: mine.snapshot(), to: mine.snapshot()).textChanges.isEmpty)
    }
}
