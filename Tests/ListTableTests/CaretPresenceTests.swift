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
