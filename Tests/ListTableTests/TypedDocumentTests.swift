import Foundation
import Testing
@testable import ListCRDT
import ListTable

/// The typed facade (`Sources/ListTable/Typed`): `Codable` sections and items over the byte
/// values, through a pluggable `ValueCoder`.
@Suite("Typed values: TypedDocument, TypedSnapshot, ValueCoder")
struct TypedDocumentTests {
    struct Column: Codable, Sendable, Hashable { var title: String; var color = 0 }
    struct Card: Codable, Sendable, Hashable { var text: String; var done = false }

    /// A value whose encoding fails on demand.
    struct Fragile: Codable, Sendable, Hashable {
        struct Boom: Error {}
        var text: String
        var fails = false
        func encode(to encoder: any Encoder) throws {
            if fails { throw Boom() }
            var c = encoder.singleValueContainer()
            try c.encode(text)
        }
        init(_ text: String, fails: Bool = false) { self.text = text; self.fails = fails }
        init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
    }

    /// A binary coder, to show a coder other than JSON plugs in.
    struct BinaryPlistCoder: ValueCoder {
        func encode<T: Encodable>(_ value: T) throws(ValueCodingError) -> Data {
            let e = PropertyListEncoder()
            e.outputFormat = .binary
            do { return try e.encode(value) } catch { throw ValueCodingError(.encoding, T.self, underlying: error) }
        }
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ValueCodingError) -> T {
            do { return try PropertyListDecoder().decode(type, from: data) } catch {
                throw ValueCodingError(.decoding, T.self, underlying: error)
            }
        }
    }

    typealias Board = TypedDocument<Column, Card>

    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    /// The error `body` throws, or nil.
    private func failure<R>(_ body: () throws(TypedDocumentError) -> R) -> TypedDocumentError? {
        do { _ = try body(); return nil } catch { return error }
    }

    /// A board with two columns: "To do" [milk, eggs, bread] and "Done" [tea].
    private func board(_ replica: UInt64 = 1, coder: any ValueCoder = JSONValueCoder()) throws -> Board {
        var b = Board(replica: ReplicaID(replica), coder: coder)
        try b.insertSection(Column(title: "To do"), at: 0)
        try b.insertSection(Column(title: "Done", color: 2), at: 1)
        for (r, text) in ["milk", "eggs", "bread"].enumerated() { try b.insertItem(Card(text: text), at: ip(0, r)) }
        try b.insertItem(Card(text: "tea", done: true), at: ip(1, 0))
        return b
    }

    /// Each section's value and its items' values, in order.
    private func shape(_ s: TypedSnapshot<Column, Card>) -> [String] {
        s.sections.map { "\($0.value.title):" + $0.items.map { $0.value.text + ($0.value.done ? "✓" : "") }.joined(separator: ",") }
    }

    // MARK: Round trips

    @Test("values round-trip: inserts, writes, moves and deletes show decoded in the snapshot")
    func roundTrip() throws {
        var b = try board()
        var snap = try b.snapshot()
        #expect(shape(snap) == ["To do:milk,eggs,bread", "Done:tea✓"])
        #expect(snap.numberOfSections == 2 && snap.numberOfItems == 4)
        #expect(try snap.numberOfItems(inSection: 0) == 3 && snap.numberOfItems(inSection: 1) == 1)
        #expect(try snap.section(at: 1).value == Column(title: "Done", color: 2))
        let eggs = try snap.item(at: ip(0, 1))
        #expect(eggs.value == Card(text: "eggs"))
        #expect(try eggs.id == b.document.itemID(at: ip(0, 1)))
        #expect(snap.indexPath(of: eggs.id) == ip(0, 1))
        #expect(snap.item(eggs.id) == eggs)
        let done = try snap.section(at: 1).id
        let bread = try snap.item(at: ip(0, 2)).id
        #expect(snap.index(of: done) == 1 && snap.section(done)?.value.title == "Done")

        // The returned operations are the document's own, and name the new identities.
        let op = try b.insertItem(Card(text: "jam"), at: ip(1, 1))
        #expect(b.document.operations.last == op)
        #expect(try b.value(of: ItemID(op.id)) == Card(text: "jam"))
        try b.setValue(Card(text: "eggs", done: true), forItem: eggs.id)
        try b.setValue(Column(title: "Finished", color: 3), forSection: done)
        #expect(try b.value(of: done) == Column(title: "Finished", color: 3))
        #expect(try b.moveItem(from: ip(0, 1), to: ip(1, 0)) != nil)
        #expect(try b.moveItem(from: ip(0, 0), to: ip(0, 0)) == nil)
        try b.deleteItem(at: ip(0, 1))   // bread
        try b.moveSection(from: 1, to: 0)
        snap = try b.snapshot()
        #expect(shape(snap) == ["Finished:eggs✓,tea✓,jam", "To do:milk"])
        #expect(snap.indexPath(of: eggs.id) == ip(0, 0))
        #expect(snap.index(of: done) == 0)
        // A deleted item keeps its last value (as `ListDocument.value(of:)`), and is not shown.
        #expect(try b.value(of: bread) == Card(text: "bread"))
        #expect(snap.indexPath(of: bread) == nil && snap.item(bread) == nil)
        try b.deleteSection(at: 1)
        #expect(shape(try b.snapshot()) == ["Finished:eggs✓,tea✓,jam"])
        // Unknown identities are nil, not errors.
        let stranger = OpID(counter: 999, replica: ReplicaID(9))
        #expect(try b.value(of: ItemID(stranger)) == nil)
        #expect(try b.value(of: SectionID(stranger)) == nil)
    }

    @Test("JSONValueCoder is deterministic (sorted keys) and stores what the document holds")
    func jsonBytes() throws {
        let b = try board()
        let milk = try b.document.itemID(at: ip(0, 0))
        // A JSON object is inserted as one field per property, in the insert itself.
        #expect(b.document.value(of: milk) == Data())
        #expect(b.document.fields(of: milk) == ["done": .value(.bool(false)), "text": .value(.string("milk"))])
        #expect(b.document.fields(of: try b.document.sectionID(at: 1)) == ["color": .value(.int(2)), "title": .value(.string("Done"))])
        let coder = JSONValueCoder()
        for _ in 0..<20 { #expect(try coder.encode(["b": 1, "a": 2, "c": 3]) == Data(#"{"a":2,"b":1,"c":3}"#.utf8)) }
        // Top-level fragments work, so plain String values need no wrapper.
        var words = TypedDocument<String, String>(replica: ReplicaID(1))
        try words.insertSection("Inbox", at: 0)
        try words.insertItem("milk", at: ip(0, 0))
        #expect(try words.snapshot().item(at: ip(0, 0)).value == "milk")
        #expect(words.document.value(of: try words.document.itemID(at: ip(0, 0))) == Data(#""milk""#.utf8))
    }

    @Test("a binary coder plugs in for whole values; a document of whole values read with the wrong coder is an error naming the id")
    func pluggableCoder() throws {
        // Objects are inserted as fields whatever the coder: the same board reads the same.
        let fields = try board(coder: BinaryPlistCoder())
        #expect(shape(try fields.snapshot()) == ["To do:milk,eggs,bread", "Done:tea✓"])
        #expect(shape(try Board(fields.document).snapshot()) == ["To do:milk,eggs,bread", "Done:tea✓"])
        // Whole values (as stored before fields) go through the coder.
        let coder = BinaryPlistCoder()
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: coder.encode(Column(title: "To do")))
        try doc.insertSection(at: 1, value: coder.encode(Column(title: "Done", color: 2)))
        for (r, text) in ["milk", "eggs", "bread"].enumerated() { try doc.insertItem(at: ip(0, r), value: coder.encode(Card(text: text))) }
        try doc.insertItem(at: ip(1, 0), value: coder.encode(Card(text: "tea", done: true)))
        let b = Board(doc, coder: coder)
        let milk = try b.document.itemID(at: ip(0, 0))
        #expect(b.document.value(of: milk)?.starts(with: Data("bplist".utf8)) == true)
        #expect(shape(try b.snapshot()) == ["To do:milk,eggs,bread", "Done:tea✓"])
        // The same bytes read as JSON do not decode: the first section is named.
        let asJSON = Board(b.document)
        guard case let .undecodableSection(id, error)? = failure({ () throws(TypedDocumentError) in try asJSON.snapshot() }) else {
            Issue.record("no undecodableSection error"); return
        }
        #expect(id == (try b.document.sectionID(at: 0)))
        #expect(error.direction == .decoding && error.typeName.hasSuffix("Column"))
    }

    // MARK: Replicas

    @Test("two typed replicas converge to the same typed snapshot after exchanging operations")
    func convergence() throws {
        var phone = try board(1)
        var laptop = Board(replica: ReplicaID(2))
        #expect(laptop.document.receive(phone.document.operations).refused.isEmpty)
        #expect(try laptop.snapshot() == phone.snapshot())
        let milk = try phone.document.itemID(at: ip(0, 0))
        let done = try phone.document.sectionID(at: 1)

        // Concurrent edits on both sides, including a conflicting write of the same item.
        try phone.setValue(Card(text: "oat milk"), forItem: milk)
        try phone.moveItem(from: ip(0, 0), to: ip(0, 2))
        try phone.insertItem(Card(text: "coffee"), at: ip(1, 1))
        try laptop.setValue(Card(text: "milk", done: true), forItem: milk)
        try laptop.moveItem(from: ip(0, 0), to: ip(1, 0))
        try laptop.setValue(Column(title: "Done!", color: 1), forSection: done)
        try laptop.deleteItem(at: ip(0, 0))   // eggs
        #expect(try phone.snapshot() != laptop.snapshot())

        let fromPhone = phone.document.operations, fromLaptop = laptop.document.operations
        #expect(laptop.document.receive(fromPhone).refused.isEmpty)
        #expect(phone.document.receive(fromLaptop).refused.isEmpty)
        let a = try phone.snapshot(), b = try laptop.snapshot()
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(phone.document.encodedState() == laptop.document.encodedState())
        // Whichever write of milk won, both show the same one; eggs is gone on both.
        #expect(try a.item(milk)?.value == laptop.value(of: milk))
        #expect(a.section(done)?.value == Column(title: "Done!", color: 1))
        #expect(!shape(a).joined().contains("eggs"))
        #expect(a.numberOfItems == 4)   // milk, bread, tea, coffee
    }

    // MARK: Failures

    @Test("a stored value that does not decode is a typed error naming the item or section")
    func undecodable() throws {
        var b = try board()
        // Raw bytes written through the untyped document.
        let junk = try b.document.insertItem(at: ip(1, 1), value: Data("not json".utf8))
        let junkID = ItemID(junk.id)
        guard case let .undecodableItem(id, error)? = failure({ () throws(TypedDocumentError) in try b.snapshot() }) else {
            Issue.record("no undecodableItem error"); return
        }
        #expect(id == junkID)
        #expect(error.direction == .decoding && error.underlying is DecodingError)
        #expect(error.typeName.hasSuffix("Card"))
        let description = TypedDocumentError.undecodableItem(id, error).description
        #expect(description.contains("\(junkID)") && description.contains("Card"))
        guard case .undecodableItem(junkID, _)? = failure({ () throws(TypedDocumentError) in try b.value(of: junkID) }) else {
            Issue.record("value(of:) did not name the item"); return
        }
        // A value of another type (a Column where a Card is expected) does not decode either.
        try b.document.setValue(Data(#"{"title":"x","color":1}"#.utf8), forItem: junkID)
        guard case .undecodableItem(junkID, _)? = failure({ () throws(TypedDocumentError) in try b.snapshot() }) else {
            Issue.record("a Column read as a Card decoded"); return
        }
        try b.document.deleteItem(junkID)
        #expect(try b.snapshot().numberOfItems == 4)

        // A section inserted with ListDocument's default empty value.
        try b.document.insertSection(at: 2)
        let bare = try b.document.sectionID(at: 2)
        guard case .undecodableSection(bare, let e)? = failure({ () throws(TypedDocumentError) in try b.snapshot() }) else {
            Issue.record("no undecodableSection error for \(bare)"); return
        }
        #expect(e.underlying is DecodingError)
        guard case .undecodableSection(bare, _)? = failure({ () throws(TypedDocumentError) in try b.value(of: bare) }) else {
            Issue.record("value(of:) did not name the section"); return
        }
        // TypedSnapshot(_:coder:) reports the same for any ListSnapshot (say a LiveDocument's).
        guard case .undecodableSection(bare, _)? = failure({ () throws(TypedDocumentError) in
            try TypedSnapshot<Column, Card>(b.document.snapshot())
        }) else { Issue.record("TypedSnapshot.init decoded an empty section value"); return }
    }

    @Test("a value that does not encode is a typed error and leaves the document unchanged")
    func failingEncode() throws {
        var d = TypedDocument<Fragile, Fragile>(replica: ReplicaID(1))
        try d.insertSection(Fragile("S"), at: 0)
        try d.insertItem(Fragile("a"), at: ip(0, 0))
        let item = try d.document.itemID(at: ip(0, 0)), section = try d.document.sectionID(at: 0)
        let state = d.document.encodedState(), count = d.document.operationCount, snap = try d.snapshot()
        let version = d.document.version

        let bad = Fragile("x", fails: true)
        let attempts: [(String, TypedDocumentError?)] = [
            ("insertSection", failure { () throws(TypedDocumentError) in try d.insertSection(bad, at: 1) }),
            ("insertItem", failure { () throws(TypedDocumentError) in try d.insertItem(bad, at: ip(0, 1)) }),
            ("setValue(forItem:)", failure { () throws(TypedDocumentError) in try d.setValue(bad, forItem: item) }),
            ("setValue(forSection:)", failure { () throws(TypedDocumentError) in try d.setValue(bad, forSection: section) }),
        ]
        for (name, error) in attempts {
            guard case let .encodingFailed(e)? = error else { Issue.record("\(name): \(String(describing: error))"); continue }
            #expect(e.direction == .encoding && e.underlying is Fragile.Boom, "\(name)")
            #expect(e.typeName.hasSuffix("Fragile"), "\(name)")
        }
        #expect(d.document.encodedState() == state)
        #expect(d.document.operationCount == count && d.document.version == version)
        #expect(try d.snapshot() == snap)
        // The same edits with a value that encodes go through.
        try d.setValue(Fragile("b"), forItem: item)
        #expect(d.document.encodedState() != state && d.document.operationCount == count + 1)
        #expect(try d.value(of: item) == Fragile("b"))
    }

    @Test("out-of-range positions and bad ids are typed errors, not traps, and change nothing")
    func outOfRange() throws {
        var b = try board()
        let state = b.document.encodedState()
        let milk = try b.document.itemID(at: ip(0, 0))
        let card = Card(text: "x"), column = Column(title: "x")
        let cases: [(String, TypedDocumentError?, ListError)] = [
            ("insertItem section", failure { () throws(TypedDocumentError) in try b.insertItem(card, at: ip(5, 0)) },
             .indexPathOutOfRange(ip(5, 0), count: 0)),
            ("insertItem row", failure { () throws(TypedDocumentError) in try b.insertItem(card, at: ip(0, 4)) },
             .indexPathOutOfRange(ip(0, 4), count: 3)),
            ("insertItem short path", failure { () throws(TypedDocumentError) in try b.insertItem(card, at: IndexPath(index: 0)) },
             .indexPathOutOfRange(IndexPath(index: 0), count: 0)),
            ("insertSection", failure { () throws(TypedDocumentError) in try b.insertSection(column, at: 3) },
             .sectionIndexOutOfRange(3, count: 2)),
            ("insertSection negative", failure { () throws(TypedDocumentError) in try b.insertSection(column, at: -1) },
             .sectionIndexOutOfRange(-1, count: 2)),
            ("moveItem from", failure { () throws(TypedDocumentError) in try b.moveItem(from: ip(1, 1), to: ip(0, 0)) },
             .indexPathOutOfRange(ip(1, 1), count: 1)),
            ("moveItem to", failure { () throws(TypedDocumentError) in try b.moveItem(from: ip(0, 0), to: ip(0, 3)) },
             .indexPathOutOfRange(ip(0, 3), count: 3)),
            ("deleteItem", failure { () throws(TypedDocumentError) in try b.deleteItem(at: ip(1, -1)) },
             .indexPathOutOfRange(ip(1, -1), count: 1)),
            ("moveSection", failure { () throws(TypedDocumentError) in try b.moveSection(from: 0, to: 2) },
             .sectionIndexOutOfRange(2, count: 2)),
            ("deleteSection", failure { () throws(TypedDocumentError) in try b.deleteSection(at: 2) },
             .sectionIndexOutOfRange(2, count: 2)),
            ("setValue unknown item", failure { () throws(TypedDocumentError) in
                try b.setValue(card, forItem: ItemID(OpID(counter: 99, replica: ReplicaID(9)))) },
             .unknownItem(ItemID(OpID(counter: 99, replica: ReplicaID(9))))),
            ("setValue unknown section", failure { () throws(TypedDocumentError) in
                try b.setValue(column, forSection: SectionID(OpID(counter: 99, replica: ReplicaID(9)))) },
             .unknownSection(SectionID(OpID(counter: 99, replica: ReplicaID(9))))),
        ]
        for (name, error, expected) in cases {
            #expect(error?.listError == expected, "\(name): \(String(describing: error))")
        }
        #expect(b.document.encodedState() == state)

        // A deleted item, and a value over the size limit.
        try b.deleteItem(at: ip(0, 0))
        #expect(failure { () throws(TypedDocumentError) in try b.setValue(card, forItem: milk) }?.listError == .itemDeleted(milk))
        var small = Board(replica: ReplicaID(3), maxValueSize: 16)
        let long = Column(title: String(repeating: "x", count: 40))
        // An object is inserted as fields: the field over the limit is named.
        guard case .invalidField("title", _)? = failure({ () throws(TypedDocumentError) in try small.insertSection(long, at: 0) })?.listError else {
            Issue.record("a title over the limit is not refused as an invalid field"); return
        }
        // A whole value (no JSON object) over the limit is refused as before.
        var words = TypedDocument<String, String>(replica: ReplicaID(3), maxValueSize: 16)
        let size = try JSONValueCoder().encode(long.title).count
        #expect(failure { () throws(TypedDocumentError) in try words.insertSection(long.title, at: 0) }?.listError
                == .valueTooLarge(size: size, limit: 16))
        #expect(words.document.operationCount == 0)
        #expect(small.document.operationCount == 0)

        // The snapshot's queries by position throw the document's errors.
        let snap = try b.snapshot()
        #expect(throws: ListError.sectionIndexOutOfRange(2, count: 2)) { try snap.numberOfItems(inSection: 2) }
        #expect(throws: ListError.sectionIndexOutOfRange(-1, count: 2)) { try snap.section(at: -1) }
        #expect(throws: ListError.indexPathOutOfRange(ip(0, 2), count: 2)) { try snap.item(at: ip(0, 2)) }
        #expect(throws: ListError.indexPathOutOfRange(ip(7, 0), count: 0)) { try snap.item(at: ip(7, 0)) }
        #expect(throws: ListError.indexPathOutOfRange(IndexPath(indexes: [0, 0, 0]), count: 0)) {
            try snap.item(at: IndexPath(indexes: [0, 0, 0]))
        }
        #expect(throws: ListError.indexPathOutOfRange(IndexPath(), count: 0)) { try snap.item(at: IndexPath()) }
        #expect(try snap.item(at: ip(0, 1)).value == Card(text: "bread"))
    }

    // MARK: README

    @Test("the README's typed example runs")
    func readme() throws {
        var phone = TypedDocument<Column, Card>(replica: ReplicaID(1))
        try phone.insertSection(Column(title: "To do"), at: 0)
        let op = try phone.insertItem(Card(text: "milk"), at: IndexPath(item: 0, section: 0))
        var laptop = TypedDocument<Column, Card>(replica: ReplicaID(2))
        laptop.document.receive(phone.document.operations)
        try laptop.setValue(Card(text: "milk", done: true), forItem: ItemID(op.id))
        phone.document.receive(laptop.document.operations)
        let card = try phone.snapshot().item(at: IndexPath(item: 0, section: 0))
        #expect(card.value == Card(text: "milk", done: true))
        #expect(try phone.snapshot() == laptop.snapshot())
    }
}
