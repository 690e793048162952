import Foundation
import Testing
import ListCRDT

/// The README's example, verbatim, so the front page cannot rot.
@Suite struct ReadmeExampleTests {
    @Test("the README usage example runs and converges")
    func readme() throws {
        var phone = ListDocument(replica: ReplicaID.random())
        try phone.insertSection(at: 0, value: Data("To do".utf8))
        try phone.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8))
        try phone.insertItem(at: IndexPath(item: 1, section: 0), value: Data("eggs".utf8))

        var laptop = ListDocument(replica: ReplicaID.random())
        laptop.receive(phone.operations)

        let a = try phone.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 1, section: 0))!
        let b = try laptop.deleteItem(at: IndexPath(item: 1, section: 0))
        try laptop.receive(a)
        try phone.receive(b)
        #expect(phone.snapshot() == laptop.snapshot())
        #expect(phone.snapshot().sections[0].items.map { String(decoding: $0.value, as: UTF8.self) } == ["milk"])
    }
}

@Suite struct ValueConvenienceTests {
    struct Task: Codable, Equatable { var title: String; var done: Bool }

    @Test("String and Codable values round-trip through the byte registers")
    func conveniences() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, string: "Inbox")
        try doc.insertItem(at: IndexPath(item: 0, section: 0), string: "plain")
        try doc.insertItem(at: IndexPath(item: 1, section: 0), encoding: Task(title: "ship", done: false))
        let plain = try doc.itemID(at: IndexPath(item: 0, section: 0))
        let task = try doc.itemID(at: IndexPath(item: 1, section: 0))
        #expect(doc.string(of: plain) == "plain")
        #expect(doc.string(of: try doc.sectionID(at: 0)) == "Inbox")
        #expect(try doc.decodeValue(Task.self, of: task) == Task(title: "ship", done: false))
        try doc.setValue(encoding: Task(title: "ship", done: true), forItem: task)
        #expect(try doc.decodeValue(Task.self, of: task)?.done == true)
        #expect(throws: DecodingError.self) { _ = try doc.decodeValue(Task.self, of: plain) }
    }
}

@Suite struct ErrorDescriptionTests {
    /// Regression: describing the error for a one-element index path trapped (found by the
    /// drag-session work).
    @Test("regression: an index path that is not [section, row] is a described error, not a trap")
    func shortIndexPath() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        for path in [IndexPath(index: 0), IndexPath(indexes: [0, 0, 0]), IndexPath()] {
            do {
                _ = try doc.itemID(at: path)
                Issue.record("no error for \(path)")
            } catch {
                #expect(error.description.contains("not a [section, row] path"))
            }
            #expect(throws: ListError.self) { try doc.insertItem(at: path, value: Data()) }
        }
    }

    @Test("a log position out of range is a described error, and 0...operationCount are accepted")
    func logPositionOutOfRange() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("a".utf8))
        #expect(try doc.operations(from: 0) == doc.operations)
        #expect(try doc.operations(from: 2).isEmpty)
        for bad in [-1, 3, Int.max] {
            #expect(throws: ListError.logPositionOutOfRange(bad, count: 2)) { try doc.operations(from: bad) }
        }
        #expect(ListError.logPositionOutOfRange(3, count: 2).description.contains("out of range"))
    }
}
