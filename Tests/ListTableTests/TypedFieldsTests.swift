import Foundation
import Testing
@testable import ListCRDT
import ListTable

/// The typed layer over fields (Docs/SwiftUI.md "Fields"): each stored property of a `Codable`
/// item is one field; counters and sets through `FieldCounter` and `FieldSet`; only changed
/// properties are written; unknown fields are kept; items of one whole value still read.
@Suite("Typed values over fields: one field per property")
struct TypedFieldsTests {
    struct Column: Codable, Sendable, Hashable { var title: String }
    /// Today's card: a counter and a set beside plain properties, and an optional.
    struct Card: Codable, Sendable, Hashable {
        var title: String
        var done = false
        var votes = FieldCounter()
        var tags = FieldSet()
        var due: String?
    }
    /// The card of an older app version: it knows only `title` and `done`.
    struct OldCard: Codable, Sendable, Hashable { var title: String; var done = false }

    typealias Board = TypedDocument<Column, Card>

    /// A board of one column holding "milk", and a second replica that received it.
    private func pair() throws -> (Board, Board, ItemID) {
        var phone = Board(replica: ReplicaID(1))
        try phone.insertSection(Column(title: "To do"), at: 0)
        let op = try phone.insertItem(Card(title: "milk"), at: IndexPath(item: 0, section: 0))
        var laptop = Board(replica: ReplicaID(2))
        #expect(laptop.document.receive(phone.document.operations).refused.isEmpty)
        return (phone, laptop, ItemID(op.id))
    }

    /// Inserts `card` as one whole JSON value, as apps did before fields (the compatibility
    /// path: an insert through the typed layer carries fields now).
    @discardableResult
    private func insertWhole(_ card: Card, into board: inout Board) throws -> ItemID {
        let e = JSONEncoder(); e.outputFormatting = [.sortedKeys]
        return ItemID(try board.document.insertItem(at: IndexPath(item: 0, section: 0), value: e.encode(card)).id)
    }

    /// Exchanges every operation both ways.
    private func sync(_ a: inout Board, _ b: inout Board) {
        let fromA = a.document.operations, fromB = b.document.operations
        #expect(b.document.receive(fromA).refused.isEmpty)
        #expect(a.document.receive(fromB).refused.isEmpty)
    }

    /// The field names an operation writes.
    private func names(_ ops: [ListOperation]) -> [[String]] {
        ops.map { op in
            guard case let .writeFields(_, writes) = op.kind else { return ["(not a field write)"] }
            return writes.writes.map(\.name).sorted()
        }
    }

    @Test("two replicas edit different properties of one item offline: both edits are kept on both")
    func differentPropertiesBothKept() throws {
        var (phone, laptop, milk) = try pair()
        let renamed = try phone.updateItem(milk) { $0.title = "oat milk" }
        var ticked = try #require(try laptop.value(of: milk))
        ticked.done = true
        let tick = try laptop.setValue(ticked, forItem: milk)
        // Only the changed property is written.
        #expect(names(renamed) == [["title"]])
        #expect(names(tick) == [["done"]])
        sync(&phone, &laptop)
        let want = Card(title: "oat milk", done: true)
        #expect(try phone.value(of: milk) == want)
        #expect(try laptop.value(of: milk) == want)
        #expect(try phone.snapshot() == laptop.snapshot())
    }

    @Test("a write that changes nothing makes no operation")
    func unchangedWritesNothing() throws {
        var (phone, _, milk) = try pair()
        let before = phone.document.operationCount
        #expect(try phone.setValue(Card(title: "milk"), forItem: milk).isEmpty)
        #expect(phone.document.operationCount == before)
    }

    @Test("a field an older type does not know survives that type's write")
    func unknownFieldSurvivesOlderWrite() throws {
        var (phone, laptop, milk) = try pair()
        try phone.updateItem(milk) { $0.due = "friday"; $0.tags.insert("dairy") }
        sync(&phone, &laptop)
        // The laptop runs the older app version: same document, older type.
        var old = TypedDocument<Column, OldCard>(laptop.document)
        #expect(try old.value(of: milk) == OldCard(title: "milk"))
        let ops = try old.updateItem(milk) { $0.title = "whole milk" }
        #expect(names(ops) == [["title"]])
        laptop.document = old.document
        sync(&phone, &laptop)
        var want = Card(title: "whole milk", due: "friday")
        want.tags.insert("dairy")
        #expect(try phone.value(of: milk) == want)
        #expect(try laptop.value(of: milk) == want)
    }

    /// A card with notes typed by character.
    struct NoteCard: Codable, Sendable, Hashable { var title: String; var notes = FieldText() }
    /// The same record read by a type whose notes are a plain string.
    struct PlainNoteCard: Codable, Sendable, Hashable { var title: String; var notes: String }

    @Test("a FieldText property typed on two replicas keeps both people's characters; each write is a splice")
    func textPropertyMergesByCharacter() throws {
        var phone = TypedDocument<Column, NoteCard>(replica: ReplicaID(1))
        try phone.insertSection(Column(title: "To do"), at: 0)
        let op = try phone.insertItem(NoteCard(title: "milk", notes: "buy two"), at: IndexPath(item: 0, section: 0))
        let milk = ItemID(op.id)
        #expect(phone.document.field("notes", of: milk) == .text("buy two"), "the insert types the text into its field")
        var laptop = TypedDocument<Column, NoteCard>(replica: ReplicaID(2))
        #expect(laptop.document.receive(phone.document.operations).refused.isEmpty)
        let mine = try phone.updateItem(milk) { $0.notes.text += " today" }
        try laptop.updateItem(milk) { $0.notes = "Please buy two" }
        guard case let .writeFields(_, writes) = try #require(mine.first).kind, case .text(let edit) = writes.writes[0].change else {
            Issue.record("not a splice: \(mine)")
            return
        }
        #expect(edit.insert == " today" && edit.deletes.isEmpty)
        var a = phone.document, b = laptop.document
        #expect(b.receive(a.operations).refused.isEmpty && a.receive(b.operations).refused.isEmpty)
        #expect(a.text("notes", ofItem: milk) == "Please buy two today")
        #expect(b.text("notes", ofItem: milk) == "Please buy two today")
    }

    @Test("a String property whose field is text writes a splice: the field stays text; a missing text decodes empty, a string value as its text")
    func stringPropertyOfTextField() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data())
        let i = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data(#"{"title":"milk","notes":""}"#.utf8))
        let milk = ItemID(i.id)
        // A missing FieldText (no field, none in the whole value either) decodes as empty.
        var bare = ListDocument(replica: ReplicaID(3))
        try bare.insertSection(at: 0, value: Data())
        let b = try bare.insertItem(at: IndexPath(item: 0, section: 0), value: Data(#"{"title":"eggs"}"#.utf8))
        #expect(try TypedDocument<Column, NoteCard>(bare).value(of: ItemID(b.id)) == NoteCard(title: "eggs", notes: ""))
        // A string value field reads as FieldText's text.
        try doc.setField("notes", to: .string("buy two"), ofItem: milk)
        #expect(try TypedDocument<Column, NoteCard>(doc).value(of: milk)?.notes == "buy two")
        try doc.splice("notes", ofItem: milk, at: 7, insert: "!")
        var plain = TypedDocument<Column, PlainNoteCard>(doc)
        #expect(try plain.value(of: milk) == PlainNoteCard(title: "milk", notes: "buy two!"))
        let ops = try plain.updateItem(milk) { $0.notes = "buy three!" }
        guard case let .writeFields(_, writes) = try #require(ops.first).kind, case .text = writes.writes[0].change else {
            Issue.record("a string property of a text field was not written as a splice: \(ops)")
            return
        }
        #expect(plain.document.field("notes", of: milk) == .text("buy three!"))
    }

    @Test("a counter property incremented on two replicas counts both increments")
    func counterCountsBoth() throws {
        var phone = Board(replica: ReplicaID(1))
        try phone.insertSection(Column(title: "To do"), at: 0)
        // The insert carries the counter's start (1) as an increment.
        let op = try phone.insertItem(Card(title: "milk", votes: 1), at: IndexPath(item: 0, section: 0))
        let milk = ItemID(op.id)
        #expect(phone.document.field("votes", of: milk) == .counter(1))
        var laptop = Board(replica: ReplicaID(2))
        #expect(laptop.document.receive(phone.document.operations).refused.isEmpty)
        let up = try phone.updateItem(milk) { $0.votes.increment(by: 2) }
        try laptop.updateItem(milk) { $0.votes.increment(by: 3) }
        try laptop.updateItem(milk) { $0.votes.increment(by: -1) }
        guard case let .writeFields(_, writes) = try #require(up.first).kind else { Issue.record("not a field write"); return }
        #expect(writes.writes.map(\.change) == [.increment(2)])
        sync(&phone, &laptop)
        #expect(try phone.value(of: milk)?.votes.value == 5)
        #expect(try laptop.value(of: milk)?.votes.value == 5)
    }

    @Test("set properties: adds on two replicas are all kept; an add and a remove in one edit take two writes")
    func setAddsKept() throws {
        var (phone, laptop, milk) = try pair()
        try phone.updateItem(milk) { $0.tags.insert("dairy") }
        try laptop.updateItem(milk) { $0.tags.insert("cold") }
        sync(&phone, &laptop)
        #expect(try phone.value(of: milk)?.tags == ["dairy", "cold"])
        let both = try phone.updateItem(milk) { $0.tags.remove("cold"); $0.tags.insert("oat") }
        #expect(both.count == 2)
        sync(&phone, &laptop)
        #expect(try laptop.value(of: milk)?.tags == ["dairy", "oat"])
    }

    @Test("a set the insert's whole value holds keeps its members when a first add makes its field")
    func setFromWholeValueKept() throws {
        var board = Board(replica: ReplicaID(1))
        try board.insertSection(Column(title: "To do"), at: 0)
        let milk = try insertWhole(Card(title: "milk", tags: ["dairy"]), into: &board)
        try board.updateItem(milk) { $0.tags.insert("cold") }
        #expect(try board.value(of: milk)?.tags == ["dairy", "cold"])
        try board.updateItem(milk) { $0.tags.remove("dairy") }
        #expect(try board.value(of: milk)?.tags == ["cold"])
    }

    @Test("a set the insert's whole value holds, emptied by its first write: it reads empty, here, on another replica and after a reload; a later add starts from empty")
    func setEmptiedInItsFirstWrite() throws {
        var board = Board(replica: ReplicaID(1))
        try board.insertSection(Column(title: "To do"), at: 0)
        let milk = try insertWhole(Card(title: "milk", tags: ["dairy", "cold"]), into: &board)
        var other = Board(replica: ReplicaID(2))
        #expect(other.document.receive(board.document.operations).refused.isEmpty)
        let ops = try board.updateItem(milk) { $0.tags = [] }
        #expect(ops.count == 1, "one write empties the set")
        #expect(try board.value(of: milk)?.tags == [])
        #expect(try board.snapshot().item(milk)?.value.tags == [])
        // Written again as it is now: nothing to write.
        #expect(try board.updateItem(milk) { _ in }.isEmpty)
        #expect(other.document.receive(board.document.operations).refused.isEmpty)
        #expect(try other.value(of: milk)?.tags == [])
        let reloaded = Board(try ListDocument(snapshot: board.document.encodedSnapshot(), replica: ReplicaID(3)))
        #expect(try reloaded.value(of: milk)?.tags == [])
        try board.updateItem(milk) { $0.tags.insert("oat") }
        #expect(try board.value(of: milk)?.tags == ["oat"])
    }

    @Test("an item stored before fields (one JSON value) still decodes; missing fields take their defaults; a first write makes one field")
    func oldWholeValueDecodes() throws {
        var raw = ListDocument(replica: ReplicaID(1))
        try raw.insertSection(at: 0, value: Data(#"{"title":"To do"}"#.utf8))
        let op = try raw.insertItem(at: IndexPath(item: 0, section: 0), value: Data(#"{"title":"milk","done":true}"#.utf8))
        let milk = ItemID(op.id)
        var board = Board(raw)
        // The counter is 0, the set empty, the optional nil: none was ever written.
        #expect(try board.value(of: milk) == Card(title: "milk", done: true))
        let ops = try board.updateItem(milk) { $0.title = "oat milk" }
        #expect(names(ops) == [["title"]])
        // The old whole value is untouched; the field wins over it.
        #expect(board.document.value(of: milk) == Data(#"{"title":"milk","done":true}"#.utf8))
        #expect(board.document.fields(of: milk) == ["title": .value(.string("oat milk"))])
        #expect(try board.snapshot().item(milk)?.value == Card(title: "oat milk", done: true))
        // An old whole-value write of a section keeps working too.
        #expect(try board.value(of: try board.document.sectionID(at: 0)) == Column(title: "To do"))
    }

    @Test("a field written by another type decodes or fails as a typed error, and a write of an unknown item is refused")
    func mismatchesAreErrors() throws {
        var (phone, _, milk) = try pair()
        try phone.document.setField("done", to: .string("not a bool"), ofItem: milk)
        #expect(throws: TypedDocumentError.self) { try phone.value(of: milk) }
        let unknown = ItemID(OpID(counter: 99, replica: ReplicaID(9)))
        let before = phone.document.operationCount
        #expect(throws: TypedDocumentError.self) { try phone.setValue(Card(title: "x"), forItem: unknown) }
        #expect(throws: TypedDocumentError.self) { try phone.updateItem(unknown) { $0.title = "x" } }
        #expect(phone.document.operationCount == before)
    }

    @Test("ListModel: two models edit different properties of one item; both keep both edits")
    @MainActor
    func listModelsKeepBoth() throws {
        let (phoneBoard, laptopBoard, milk) = try pair()
        let phone = ListModel<Column, Card>(LiveDocument(phoneBoard.document))
        let laptop = ListModel<Column, Card>(LiveDocument(laptopBoard.document))
        var renamed = try #require(phone.snapshot.item(milk)).value
        renamed.title = "oat milk"
        let a = try phone.setValue(renamed, forItem: milk)
        var ticked = try #require(laptop.snapshot.item(milk)).value
        ticked.done = true
        ticked.votes.increment(by: 1)
        let b = try laptop.setValue(ticked, forItem: milk)
        #expect(names(a) == [["title"]] && names(b) == [["done", "votes"]])
        _ = phone.receive(b)
        _ = laptop.receive(a)
        let want = Card(title: "oat milk", done: true, votes: 1)
        #expect(phone.snapshot.item(milk)?.value == want)
        #expect(laptop.snapshot.item(milk)?.value == want)
    }

    // MARK: Inserts carry fields

    @Test("a typed insert is one operation carrying one field per property: values, a counter's start, a set's members; nothing as a whole value")
    func insertCarriesFields() throws {
        var board = Board(replica: ReplicaID(1))
        let column = try board.insertSection(Column(title: "To do"), at: 0)
        let before = board.document.operationCount
        let op = try board.insertItem(Card(title: "milk", votes: 2, tags: ["dairy"], due: "friday"), at: IndexPath(item: 0, section: 0))
        #expect(board.document.operationCount == before + 1, "one operation")
        guard case let .insertItemWithFields(_, _, value, writes) = op.kind else { Issue.record("not an insert with fields: \(op.kind)"); return }
        #expect(value.isEmpty)
        #expect(Set(writes.writes.map(\.name)) == ["title", "done", "votes", "tags", "due"])
        let milk = ItemID(op.id)
        #expect(board.document.value(of: milk) == Data())
        #expect(board.document.fields(of: milk) == [
            "title": .value(.string("milk")), "done": .value(.bool(false)), "votes": .counter(2),
            "tags": .set(["dairy"]), "due": .value(.string("friday")),
        ])
        #expect(try board.value(of: milk) == Card(title: "milk", votes: 2, tags: ["dairy"], due: "friday"))
        guard case .insertSectionWithFields = column.kind else { Issue.record("section not inserted with fields: \(column.kind)"); return }
        #expect(board.document.fields(of: SectionID(column.id)) == ["title": .value(.string("To do"))])
        // Another replica, and a reload from a snapshot, read the same card.
        var other = Board(replica: ReplicaID(2))
        #expect(other.document.receive(board.document.operations).refused.isEmpty)
        #expect(try other.value(of: milk) == board.value(of: milk))
        let reloaded = Board(try ListDocument(snapshot: board.document.encodedSnapshot(), replica: ReplicaID(3)))
        #expect(try reloaded.value(of: milk) == board.value(of: milk))
    }

    @Test("a field written concurrently with a typed insert's other fields merges: a rename on one replica and a tick on another, right after the insert, are both kept")
    func insertThenConcurrentFieldWrites() throws {
        var (phone, laptop, milk) = try pair()
        try phone.updateItem(milk) { $0.title = "oat milk" }
        try laptop.updateItem(milk) { $0.done = true; $0.votes.increment(by: 1); $0.tags.insert("cold") }
        sync(&phone, &laptop)
        let want = Card(title: "oat milk", done: true, votes: 1, tags: ["cold"])
        #expect(try phone.value(of: milk) == want)
        #expect(try laptop.value(of: milk) == want)
        // The empty set and the absent optional were not written by the insert; the counter at 0 was.
        #expect(phone.document.fields(of: milk)["votes"] == .counter(1))
    }

    @Test("an item that is no JSON object, or an object with no property, keeps one whole value at insert")
    func nonObjectsStayWhole() throws {
        struct Empty: Codable, Sendable, Hashable { var note: String? }
        var words = TypedDocument<String, String>(replica: ReplicaID(1))
        try words.insertSection("Inbox", at: 0)
        let w = try words.insertItem("milk", at: IndexPath(item: 0, section: 0))
        #expect(words.document.value(of: ItemID(w.id)) == Data(#""milk""#.utf8))
        #expect(words.document.fields(of: ItemID(w.id)).isEmpty)
        var empties = TypedDocument<String, Empty>(replica: ReplicaID(1))
        try empties.insertSection("Inbox", at: 0)
        let e = try empties.insertItem(Empty(), at: IndexPath(item: 0, section: 0))
        #expect(empties.document.value(of: ItemID(e.id)) == Data("{}".utf8))
        #expect(try empties.value(of: ItemID(e.id)) == Empty())
    }

    @Test("a typed insert the document refuses (a field over the limits) changes nothing")
    func refusedInsertChangesNothing() throws {
        var board = TypedDocument<Column, Card>(replica: ReplicaID(1), maxValueSize: 64)
        try board.insertSection(Column(title: "To do"), at: 0)
        let before = board.document.operationCount
        #expect(throws: TypedDocumentError.self) {
            try board.insertItem(Card(title: String(repeating: "x", count: 100)), at: IndexPath(item: 0, section: 0))
        }
        #expect(board.document.operationCount == before)
        #expect(try board.document.itemCount(inSection: 0) == 0)
    }

    @Test("ListModel: an inserted item carries its fields, so another model's concurrent field write merges with them")
    @MainActor
    func listModelInsertCarriesFields() throws {
        var base = Board(replica: ReplicaID(1))
        let column = SectionID(try base.insertSection(Column(title: "To do"), at: 0).id)
        let phone = ListModel<Column, Card>(LiveDocument(base.document))
        let op = try phone.insertItem(Card(title: "milk", votes: 3), at: 0, inSection: column)
        guard case .insertItemWithFields = op.kind else { Issue.record("not an insert with fields: \(op.kind)"); return }
        let milk = ItemID(op.id)
        #expect(phone.live.document.fields(of: milk)["votes"] == .counter(3))
        #expect(phone.snapshot.item(milk)?.value == Card(title: "milk", votes: 3))
    }
}
