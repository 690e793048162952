import Foundation
import Testing
@testable import ListCRDT
import ListSyncTestSupport

/// A section inserted with its first fields is one operation (Docs/Semantics.md §8.1), kind 13
/// with the `variant` bit in wire format 5 (Docs/WireFormat.md §2.7, §4).
@Suite("§8.1 a section inserted with its fields: one operation, wire format 5")
struct SectionFieldInsertTests {
    static func bytes(_ hex: String) -> [UInt8] { hex.split(separator: " ").map { UInt8($0, radix: 16)! } }

    /// The worked example of Docs/WireFormat.md §2.7: `9@2`, depending on `3@1`, inserts a section
    /// right after section `3@1` with an empty value and `title = "To do"` at clock 1.
    static let example = ListOperation(
        id: OpID(counter: 9, replica: ReplicaID(2)), deps: Frontier([OpID(counter: 3, replica: ReplicaID(1))]),
        kind: .insertSectionWithFields(.init(after: SlotID(OpID(counter: 3, replica: ReplicaID(1))), before: nil), value: Data(),
                                       fields: FieldWrites(clock: 1, writes: [FieldWrite(name: "title", change: .set(.string("To do")))])))
    static let exampleBytes = bytes("05 02 02 01 01 8d 00 10 01 04 05 04 05 00 00 02 01 00 05 74 69 74 6c 65 00 00 00 05 05 54 6f 20 64 6f")

    @Test("the worked example of Docs/WireFormat.md §2.7, byte for byte: kind 13 with the variant bit, version 5")
    func wireExample() throws {
        #expect(ListOperation.encode([Self.example]) == Self.exampleBytes)
        #expect(try ListOperation.decode(Self.exampleBytes) == [Self.example])
        // After it, a section reference's default is the new section (as after a kind 1).
        var next = ListOperation(id: OpID(counter: 10, replica: ReplicaID(2)), deps: Frontier([Self.example.id]),
                                 kind: .writeFields(.section(SectionID(Self.example.id)),
                                                    FieldWrites(clock: 1, writes: [FieldWrite(name: "title", change: .remove)])))
        let two = ListOperation.encode([Self.example, next])
        #expect(Array(two.suffix(8)) == Self.bytes("fc 00 00 01 01 00 00 01"),
                "kind 12 variant, all three shortcuts; section: default; clock +0; name 1; remove")
        #expect(try ListOperation.decode(two) == [Self.example, next])
        next.kind = .insertSection(.init(after: nil, before: nil), value: Data())
        #expect(try ListOperation.decode(ListOperation.encode([Self.example, next])) == [Self.example, next])
    }

    @Test("only a batch holding one is version 5; older readers refuse it by its version byte; labelled 4 it is malformed")
    func olderReaderRefuses() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        let plain = try doc.insertSection(at: 0, value: Data("a".utf8))
        let item = try doc.insertItem(at: IndexPath(item: 0, section: 0), fields: ["title": .set(.string("milk"))])
        let write = try doc.writeFields(["votes": .increment(2)], ofSection: SectionID(plain.id))
        let section = try doc.insertSection(at: 1, value: Data("b".utf8), fields: ["title": .set(.string("Done"))])
        #expect(ListOperation.encode([plain]).first == 1, "a section inserted without fields: version 1 as before")
        #expect(ListOperation.encode([plain, item, write]).first == 4, "fields without a section insert: version 4 as before")
        let batch = ListOperation.encode([plain, item, write, section])
        #expect(batch.first == 5)
        #expect(try ListOperation.decode(batch) == [plain, item, write, section])
        // A reader of version 4 checks the version byte first (as this one refuses 6).
        var newer = batch
        newer[0] = ListOperation.wireFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListOperation.wireFormatVersion + 1)) { try ListOperation.decode(newer) }
        // Labelled 4 (a confused writer), kind 13's variant bit is refused, never read as an item insert.
        var labelled = Self.exampleBytes
        labelled[0] = 4
        #expect(throws: WireError.invalidTag(0x8d, offset: 5)) { try ListOperation.decode(labelled) }
    }

    @Test("a state snapshot holding a section inserted with fields carries it in a version-5 batch: a reader that does not know that version refuses the snapshot by it, never misreads it")
    func stateSnapshotRefusedByOlderReader() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data("a".utf8), fields: ["title": .set(.string("To do"))])
        try doc.insertItem(at: IndexPath(item: 0, section: 0), fields: ["title": .set(.string("milk"))])
        let snapshot = doc.encodedStateSnapshotBeforeVersion9()
        #expect(snapshot[4] == ListDocument.stateFieldsSnapshotFormatVersion)
        // The batch of other operations, as the encoder writes it (WireFormat §5.5).
        var others: [ListOperation] = []
        for rec in doc.log.records where rec.kind == .other {
            var op = doc.log.others[Int(rec.payload)]
            op.deps = Frontier()
            others.append(op)
        }
        let batch = ListOperation.encode(others)
        #expect(batch.first == 5)
        let at = try #require(snapshot.firstRange(of: batch)?.lowerBound)
        // This build reads it; with the batch's version byte one past what this build knows, it
        // is refused by that byte, as a version-4 build refuses version 5.
        let loaded = try ListDocument(snapshot: snapshot, replica: ReplicaID(2))
        #expect(loaded.fields(of: try doc.sectionID(at: 0)) == ["title": .value(.string("To do"))])
        var newer = snapshot
        newer[at] = ListOperation.wireFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListOperation.wireFormatVersion + 1)) {
            try ListDocument(snapshot: newer, replica: ReplicaID(2))
        }
    }

    @Test("inserting a section with fields is one operation; another replica shows the same section and fields")
    func oneOperation() throws {
        var a = ListDocument(replica: ReplicaID(1))
        try a.insertSection(at: 0, value: Data("To do".utf8))
        let op = try a.insertSection(at: 1, value: Data("Done".utf8),
                                     fields: ["color": .set(.string("green")), "limit": .increment(5), "tags": .insert(["x"])])
        #expect(op.needsWireFormat5 && a.operationCount == 2)
        let id = SectionID(op.id)
        let expected: [String: Field] = ["color": .value(.string("green")), "limit": .counter(5), "tags": .set(["x"])]
        #expect(a.fields(of: id) == expected)
        #expect(a.snapshot().sections[1].fields == expected)
        var b = ListDocument(replica: ReplicaID(2))
        #expect(b.receive(a.operations).isSuccess)
        #expect(b.fields(of: id) == expected && b.snapshot() == a.snapshot())
        try a.checkInvariants()
        try b.checkInvariants()
        // What an insert cannot carry is refused, and nothing changes.
        let state = a.encodedState()
        #expect(throws: ListError.self) { try a.insertSection(at: 0, fields: ["color": .remove]) }
        #expect(throws: ListError.self) { try a.insertSection(at: 9, fields: ["color": .set(.null)]) }
        #expect(a.encodedState() == state)
        // A received one whose field replaces a write is malformed, refused, and changes nothing.
        var bad = op
        bad.id = OpID(counter: 50, replica: ReplicaID(1))
        bad.kind = .insertSectionWithFields(.init(after: nil, before: nil), value: Data(),
                                            fields: FieldWrites(clock: 9, sortedWrites: [FieldWrite(name: "t", change: .set(.null), replaces: op.id, seen: [])]))
        #expect(!b.receive([bad]).refused.isEmpty)
        #expect(b.snapshot() == a.snapshot())
    }

    @Test("the insert's fields merge per field with concurrent writes made on two replicas that hold the section")
    func concurrentWritesConverge() throws {
        var a = ListDocument(replica: ReplicaID(1))
        a.wallClock = .fixed(1_000)
        let op = try a.insertSection(at: 0, value: Data("Doing".utf8),
                                     fields: ["title": .set(.string("Doing")), "votes": .increment(1), "tags": .insert(["a"])])
        let s = SectionID(op.id)
        var b = ListDocument(replica: ReplicaID(2))
        b.wallClock = .fixed(2_000)
        #expect(b.receive([op]).isSuccess)
        // Concurrently: a renames and votes; b ticks a new field, votes and tags.
        let fromA = try a.writeFields(["title": .set(.string("In progress")), "votes": .increment(2)], ofSection: s)
        let fromB = try b.writeFields(["done": .set(.bool(true)), "votes": .increment(3), "tags": .insert(["b"])], ofSection: s)
        #expect(a.receive([fromB]).isSuccess)
        #expect(b.receive([fromA]).isSuccess)
        let expected: [String: Field] = ["title": .value(.string("In progress")), "votes": .counter(6),
                                         "tags": .set(["a", "b"]), "done": .value(.bool(true))]
        #expect(a.fields(of: s) == expected)
        #expect(b.fields(of: s) == expected)
        #expect(a.encodedState() == b.encodedState())
    }

    @Test("history, state and compacted snapshots keep a section inserted with fields; its operation comes back whole")
    func snapshotsRoundTrip() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data("a".utf8))
        let op = try doc.insertSection(at: 1, value: Data("b".utf8), fields: ["title": .set(.string("B")), "n": .increment(4)])
        try doc.insertItem(at: IndexPath(item: 0, section: 1), value: Data("x".utf8))
        try doc.writeFields(["n": .increment(1)], ofSection: SectionID(op.id))
        for format in [ListDocument.SnapshotFormat.history, .state] {
            let bytes = doc.encodedSnapshot(format: format)
            let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(5))
            #expect(loaded.snapshot() == doc.snapshot(), "\(format)")
            #expect(loaded.operations == doc.operations, "\(format)")
            #expect(loaded.fields(of: SectionID(op.id)) == ["title": .value(.string("B")), "n": .counter(5)], "\(format)")
            try loaded.checkInvariants()
        }
        // The state snapshot's batch of other operations is version 5: an older build refuses it.
        let state = doc.encodedStateSnapshotBeforeVersion9()
        #expect(state[ListDocument.snapshotMagic.count] == ListDocument.stateFieldsSnapshotFormatVersion)
        var compacted = doc
        try compacted.compact(stable: compacted.version)
        let loaded = try ListDocument(snapshot: compacted.encodedSnapshot(), replica: ReplicaID(5))
        #expect(loaded.snapshot() == doc.snapshot())
    }

    @Test("made again after a refusal, a section inserted with fields is one operation with the fields it shows")
    func remade() throws {
        let hub = try ListDocument.make(1, sections: [["a"]])
        var offline = hub.fork(as: 3)
        let start = offline.operationCount
        let op = try offline.insertSection(at: 1, value: Data("S".utf8), fields: ["title": .set(.string("S")), "n": .increment(2)])
        try offline.writeFields(["n": .increment(1)], ofSection: SectionID(op.id))
        let unsent = try offline.operations(from: start)
        var copy = hub
        let made = copy.remake(unsent, from: offline, refused: true)
        #expect(made.count == 1 && made[0].needsWireFormat5, "one operation, with the fields the section shows")
        let s = try #require(copy.snapshot().sections.last)
        #expect(s.value == Data("S".utf8) && s.fields == ["title": .value(.string("S")), "n": .counter(3)])
        try copy.checkInvariants()
    }

    /// Regression: a record made again with the fields it shows had its own later field writes
    /// written again on top, so an increment made after the insert counted twice.
    @Test("made again with the fields it shows, an item's or section's later increment is not counted twice")
    func remadeWritesNotTwice() throws {
        let hub = try ListDocument.make(1, sections: [["a"]])
        var offline = hub.fork(as: 3)
        let start = offline.operationCount
        let item = try offline.insertItem(at: IndexPath(item: 1, section: 0), value: Data("b".utf8), fields: ["n": .increment(2)])
        try offline.writeFields(["n": .increment(1), "t": .set(.string("x"))], ofItem: ItemID(item.id))
        let section = try offline.insertSection(at: 1, value: Data("S".utf8), fields: ["n": .increment(2)])
        try offline.writeFields(["n": .increment(1)], ofSection: SectionID(section.id))
        var copy = hub
        _ = copy.remake(try offline.operations(from: start), from: offline, refused: true)
        let shown = copy.snapshot()
        #expect(shown.sections[0].items[1].fields == ["n": .counter(3), "t": .value(.string("x"))])
        #expect(shown.sections[1].fields == ["n": .counter(3)])
    }
}
