import Foundation
import Testing
import ListCRDT
import ListTable
@testable import ListSyncWeb

@Suite("The page's field edits: every kind read from the query and made on a document (no I/O)")
struct WebFieldEditTests {
    static func parse(_ kind: String, _ params: [String: String]) throws(WebFieldEditError) -> WebFieldEdit {
        try WebFieldEdit.parse(kind: kind) { params[$0] }
    }

    /// A document with one item "milk", its id.
    static func document() throws -> (ListDocument, ItemID) {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data("Food".utf8))
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8))
        return (doc, try #require(doc.snapshot().itemIdentifier(at: IndexPath(item: 0, section: 0))))
    }

    @Test("the query reads as one edit of each kind: steps of a counter, one set member (commas and all), dates and bytes, removal; bad input is an error that says what was wrong")
    func parsing() throws {
        #expect(try Self.parse("counter", ["by": "1"]) == .increment(1))
        #expect(try Self.parse("counter", ["by": "-1"]) == .increment(-1))
        #expect(try Self.parse("counter", ["value": "5", "was": "2"]) == .increment(3))
        #expect(try Self.parse("set", ["add": "a, b"]) == .members(add: ["a, b"], remove: []))
        #expect(try Self.parse("set", ["remove": "dairy"]) == .members(add: [], remove: ["dairy"]))
        #expect(try Self.parse("set", ["value": "cold, dairy", "was": "dairy, organic"]) == .members(add: ["cold"], remove: ["organic"]))
        #expect(try Self.parse("date", ["value": "2026-11-29T10:00:00Z"]) == .value(.date(Date(timeIntervalSince1970: 1_795_946_400))))
        #expect(try Self.parse("date", ["value": "2026-11-29T10:00:00.250+01:00"]) == .value(.date(Date(timeIntervalSince1970: 1_795_942_800.25))))
        #expect(try Self.parse("bytes", ["value": "aGVsbG8="]) == .value(.bytes(Data("hello".utf8))))
        #expect(try Self.parse("unset", [:]) == .remove)
        #expect(try Self.parse("text", ["value": "ab", "was": "a"]) == .text(to: "ab", was: "a"))
        for (kind, params, words) in [("counter", ["by": "0"], "non-zero"), ("counter", ["by": "x"], "non-zero"),
                                      ("counter", ["value": "1"], "kind counter"), ("set", ["add": ""], "not empty"),
                                      ("date", ["value": "yesterday"], "ISO 8601"), ("bytes", ["value": "!!"], "base64"),
                                      ("colour", ["value": "red"], "kind colour")] {
            #expect(throws: WebFieldEditError.self, "\(kind) \(params)") { try Self.parse(kind, params) }
            do { _ = try Self.parse(kind, params) } catch { #expect(error.description.contains(words), "\(error)") }
        }
    }

    @Test("made on a document: a step adds to what others counted; one member added or removed leaves the others; a new field is refused if one of its name is there; removing a field leaves the rest; nothing written for no change")
    func applying() throws {
        var (doc, item) = try Self.document()
        _ = try doc.writeFields(["votes": .increment(10), "tags": .insert(["dairy", "organic"]), "title": .set(.string("milk"))], ofItem: item)
        let before = doc.operationCount
        #expect(try WebFieldEdit.increment(1).apply(to: &doc, field: "votes", of: item) == (1, false))
        #expect(try WebFieldEdit.increment(-1).apply(to: &doc, field: "votes", of: item) == (1, false))
        #expect(try WebFieldEdit.increment(1).apply(to: &doc, field: "votes", of: item) == (1, false))
        #expect(doc.field("votes", of: item) == .counter(11))
        #expect(try WebFieldEdit.members(add: ["a, b"], remove: []).apply(to: &doc, field: "tags", of: item) == (1, false))
        #expect(try WebFieldEdit.members(add: [], remove: ["dairy"]).apply(to: &doc, field: "tags", of: item) == (1, false))
        #expect(doc.field("tags", of: item) == .set(["a, b", "organic"]))
        let when = Date(timeIntervalSince1970: 1_795_946_400)
        #expect(try WebFieldEdit.value(.date(when)).apply(to: &doc, field: "when", of: item, isNew: true) == (1, false))
        #expect(doc.field("when", of: item) == .value(.date(when)))
        // Adding a field someone else added meanwhile: refused, nothing written.
        let count = doc.operationCount
        #expect(throws: ListError.self) { try WebFieldEdit.increment(5).apply(to: &doc, field: "votes", of: item, isNew: true) }
        #expect(doc.operationCount == count && doc.field("votes", of: item) == .counter(11))
        // New fields of every kind but value: a counter, a set, a text.
        #expect(try WebFieldEdit.increment(3).apply(to: &doc, field: "stars", of: item, isNew: true) == (1, false))
        #expect(try WebFieldEdit.members(add: ["x"], remove: []).apply(to: &doc, field: "labels", of: item, isNew: true) == (1, false))
        #expect(try WebFieldEdit.text(to: "note", was: "").apply(to: &doc, field: "notes", of: item, isNew: true) == (1, false))
        #expect(doc.field("stars", of: item) == .counter(3) && doc.field("labels", of: item) == .set(["x"]) && doc.text("notes", ofItem: item) == "note")
        // Removing one field leaves the others; removing one not there writes nothing.
        #expect(try WebFieldEdit.remove.apply(to: &doc, field: "title", of: item) == (1, false))
        #expect(doc.field("title", of: item) == nil && doc.field("votes", of: item) == .counter(11))
        #expect(try WebFieldEdit.remove.apply(to: &doc, field: "title", of: item) == (0, false))
        #expect(try WebFieldEdit.increment(0).apply(to: &doc, field: "votes", of: item) == (0, false))
        #expect(try WebFieldEdit.text(to: "x", was: "stale").apply(to: &doc, field: "notes", of: item) == (0, true))
        #expect(doc.operationCount == before + 3 + 2 + 1 + 3 + 1, "3 steps, 2 members, a date, 3 new fields, 1 removal")
    }

    @Test("a section's fields are edited as an item's; a new counter may start at 0 (by=0 with new=1), a step of 0 of one that exists is refused")
    func sectionsAndNewCounterAtZero() throws {
        var (doc, _) = try Self.document()
        let section = try #require(doc.snapshot().sections.first?.id)
        let target = RecordTarget.section(section)
        #expect(try Self.parse("counter", ["by": "0", "new": "1"]) == .increment(0))
        #expect(throws: WebFieldEditError.self) { try Self.parse("counter", ["by": "0"]) }
        #expect(try WebFieldEdit.increment(0).apply(to: &doc, field: "wip", of: target, isNew: true) == (1, false))
        #expect(doc.field("wip", of: section) == .counter(0))
        #expect(try WebFieldEdit.increment(2).apply(to: &doc, field: "wip", of: target) == (1, false))
        #expect(try WebFieldEdit.value(.string("green")).apply(to: &doc, field: "color", of: target, isNew: true) == (1, false))
        #expect(try WebFieldEdit.members(add: ["x"], remove: []).apply(to: &doc, field: "tags", of: target) == (1, false))
        #expect(try WebFieldEdit.text(to: "wip", was: "").apply(to: &doc, field: "notes", of: target) == (1, false))
        #expect(doc.fields(of: section) == ["wip": .counter(2), "color": .value(.string("green")), "tags": .set(["x"]), "notes": .text("wip")])
        #expect(try WebFieldEdit.remove.apply(to: &doc, field: "color", of: target) == (1, false))
        #expect(doc.field("color", of: section) == nil)
        #expect(throws: ListError.self) { try WebFieldEdit.value(.null).apply(to: &doc, field: "wip", of: target, isNew: true) }
    }
}
