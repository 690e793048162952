import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// Docs/WireFormat.md §2.8 and §5.6: text edits on the wire (format 4), in history, state and
/// compacted snapshots (version 6), and what an older reader does with them.
@Suite("§8.10 text fields: wire and snapshot formats")
struct TextFieldFormatTests {
    /// A document whose notes were typed, pasted into, edited and partly removed, with a set
    /// field next to it.
    static func edited() throws -> (ListDocument, ItemID) {
        var (docs, item) = try TextFieldTests.replicas(2, start: "shopping")
        try TextFieldTests.type(" list", at: 8, into: &docs[0], item: item)
        try docs[0].splice("notes", ofItem: item, at: 0, delete: 4, insert: "Weekly 👍🏽 ")
        try docs[0].setField("title", to: .string("milk"), ofItem: item)
        let remote = try TextFieldTests.type("ZZ", at: 2, into: &docs[1], item: item)
        #expect(docs[0].receive(remote).isSuccess)
        return (docs[0], item)
    }

    @Test("a text's characters are one byte each while all are ASCII and four from the first that is not: appends of ASCII, accented, CJK, emoji and mixed texts and of single scalars read back as the scalar view's, in any order; a text's scalars counted eight bytes at a time")
    func textScalars() {
        var rng = SplitMix64(seed: 0xA5C11)
        let pieces = ["a", "lorem ipsum ", "é", "e\u{301}", "日本語", "👩‍👩‍👧", "\u{7F}", "\u{80}", "\u{10FFFF}", "\n", "",
                      String(repeating: "abcdefgh", count: 3)]
        for _ in 0 ..< 300 {
            var scalars = TextScalars()
            var expected: [Unicode.Scalar] = []
            for _ in 0 ..< rng.below(8) {
                if rng.below(3) == 0 {
                    let s = Array(pieces[rng.below(pieces.count)].unicodeScalars).first ?? "z"
                    scalars.append(s)
                    expected.append(s)
                } else {
                    let text = (0 ..< rng.below(6)).map { _ in pieces[rng.below(pieces.count)] }.joined()
                    #expect(scalars.append(contentsOf: text) == text.unicodeScalars.count, "\(text.debugDescription)")
                    #expect(TextEdit.scalarCount(of: text) == text.unicodeScalars.count, "counted eight bytes at a time")
                    expected += text.unicodeScalars
                }
            }
            #expect(scalars.count == expected.count)
            #expect((0 ..< expected.count).allSatisfy { scalars[$0] == expected[$0] })
            #expect(scalars.isWide == expected.contains { !$0.isASCII }, "wide only once a character is not ASCII")
            let all = String(String.UnicodeScalarView(expected))
            #expect(scalars.string(0 ..< expected.count) == all)
            let a = rng.below(expected.count + 1), b = a + rng.below(expected.count - a + 1)
            let part = String(String.UnicodeScalarView(expected[a ..< b]))
            #expect(scalars.string(a ..< b) == part)
            #expect(scalars.matches(a ..< b, part))
            if b > a { #expect(!scalars.matches(a ..< b, part + "x") && !scalars.matches(a ..< b, String(part.unicodeScalars.dropLast()) + "\u{1}")) }
        }
    }

    @Test("a batch with a text edit is wire format 4, as every batch with field writes; 7 with a text block (two keystrokes in a row; 6 before)")
    func wireVersions() throws {
        let (doc, item) = try Self.edited()
        let text = doc.operations.filter { if case .writeFields(_, let w) = $0.kind { w.hasTextEdit } else { false } }
        #expect(!text.isEmpty)
        #expect(ListOperation.needsWireFormat7(text) && ListOperation.encode(text).first == 7, "typed: a text block")
        #expect(ListOperation.needsWireFormat6(text) && ListOperation.encodeWithTextRuns(text).first == 6, "typed, as builds before: text runs")
        #expect(text.allSatisfy { ListOperation.encode([$0]).first == 4 }, "one text edit: version 4")
        let title = doc.operations.filter { if case .writeFields(_, let w) = $0.kind { !w.hasTextEdit } else { false } }
        #expect(ListOperation.encode(title).first == 4)
        #expect(try ListOperation.decode(ListOperation.encode(doc.operations)) == doc.operations)
        _ = item
    }

    @Test("a state snapshot whose last operation typed several characters keeps the version (one operation, one id per character)")
    func stateSnapshotEndsWithTyping() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data())
        let i = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data())
        _ = try doc.splice("notes", ofItem: ItemID(i.id), at: 0, insert: "hello")
        let bytes = doc.encodedStateSnapshotBeforeVersion9()
        #expect(bytes[ListDocument.snapshotMagic.count] == ListDocument.stateTextSnapshotFormatVersion, "a paste: no text run")
        var loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(1))
        #expect(loaded.version == doc.version)
        #expect(loaded.operations == doc.operations)
        // The replica goes on after its own typing without reusing an id.
        let more = try loaded.splice("notes", ofItem: ItemID(i.id), at: 5, insert: "!")
        #expect(!doc.version.contains(more.id))
    }

    @Test("a state snapshot whose text edit names a character its field does not have yet is a typed error (it loaded, the edit placed at the start)")
    func stateSnapshotChecksTextReferences() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data())
        let i = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data())
        _ = try doc.splice("notes", ofItem: ItemID(i.id), at: 0, insert: "hello")
        let last = try doc.splice("notes", ofItem: ItemID(i.id), at: 5, insert: "!")
        let bytes = doc.encodedStateSnapshotBeforeVersion9()
        #expect(bytes[ListDocument.snapshotMagic.count] == ListDocument.stateTextRunsSnapshotFormatVersion)
        // The batch of other operations, as the encoder writes it (Docs/WireFormat.md §5.5; the "!"
        // is a text run of one, §5.8).
        var others = doc.operations.filter(\.carriesFields)
        for k in others.indices { others[k].deps = Frontier() }
        let batch = ListOperation.encode(others)
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: batch) }, "the batch is in the snapshot")
        // The "!" now inserts after its own id: no character of the field when it is made.
        let k = try #require(others.lastIndex { $0.id == last.id })
        guard case .writeFields(let target, var writes) = others[k].kind, case .text(var edit) = writes.writes[0].change else {
            Issue.record("not a text write: \(others[k])")
            return
        }
        edit.after = last.id
        writes.writes[0].change = .text(edit)
        others[k].kind = .writeFields(target, writes)
        let bad = ListOperation.encode(others)
        try #require(bad != batch)
        // The batch's length ahead of it, a varint, written again for the new batch.
        func varint(_ n: Int) -> [UInt8] {
            var v = UInt64(n), out: [UInt8] = []
            repeat { out.append(UInt8(v & 0x7f) | (v >= 0x80 ? 0x80 : 0)); v >>= 7 } while v > 0
            return out
        }
        let length = varint(batch.count)
        try #require(Array(bytes[at - length.count ..< at]) == length)
        var damaged = bytes
        damaged.replaceSubrange(at - length.count ..< at + batch.count, with: varint(bad.count) + bad)
        #expect(throws: WireError.self) { try ListDocument(snapshot: damaged, replica: ReplicaID(1)) }
        do { _ = try ListDocument(snapshot: damaged, replica: ReplicaID(1)) } catch {
            #expect("\(error)".contains("not a character of the field"), "\(error)")
        }
        // The undamaged snapshot still loads, with its text.
        #expect(try ListDocument(snapshot: bytes, replica: ReplicaID(1)).text("notes", ofItem: ItemID(i.id)) == "hello!")
    }

    @Test("an older reader refuses a text batch clearly, never misreads it")
    func olderReaderRefuses() throws {
        let (doc, _) = try Self.edited()
        var bytes = ListOperation.encode(doc.operations)
        // A reader of format 3 checks the version byte first.
        #expect(bytes[0] == ListOperation.textBlockWireFormatVersion && bytes[0] > 3)
        // The same bytes labelled 3 (as a confused writer might): the text tag is refused.
        bytes[0] = 3
        #expect(throws: WireError.self) { try ListOperation.decode(bytes) }
    }

    @Test("history, state and compacted snapshots keep the text, its tombstones' order and its anchors")
    func snapshotsRoundTrip() throws {
        var (doc, item) = try Self.edited()
        let anchor = try #require(doc.anchor("notes", ofItem: item, at: 3))
        for format in [ListDocument.SnapshotFormat.history, .state] {
            let loaded = try ListDocument(snapshot: doc.encodedSnapshot(format: format), replica: ReplicaID(5))
            #expect(loaded.text("notes", ofItem: item) == doc.text("notes", ofItem: item), "\(format)")
            #expect(loaded.snapshot() == doc.snapshot(), "\(format)")
            #expect(loaded.version == doc.version, "\(format)")
            #expect(TextFieldTests.sequence(loaded, item) == TextFieldTests.sequence(doc, item), "\(format)")
            #expect(loaded.position(of: anchor, "notes", ofItem: item) == 3)
        }
        try doc.compact(stable: doc.version)
        let bytes = doc.encodedSnapshot()
        #expect(bytes[ListDocument.snapshotMagic.count] == ListDocument.compactedTextSnapshotFormatVersion)
        var loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(5))
        #expect(loaded.text("notes", ofItem: item) == doc.text("notes", ofItem: item))
        #expect(TextFieldTests.sequence(loaded, item) == TextFieldTests.sequence(doc, item))
        // Both still merge an edit typed on the loaded copy.
        let more = try loaded.splice("notes", ofItem: item, at: 1, insert: "+")
        #expect(doc.receive([more]).isSuccess)
        #expect(doc.text("notes", ofItem: item) == loaded.text("notes", ofItem: item))
    }

    @Test("a compacted document without text still writes snapshot version 4, byte for byte as before")
    func noTextKeepsVersion4() throws {
        var (docs, item) = try TextFieldTests.replicas(2)
        try docs[0].setField("title", to: .string("milk"), ofItem: item)
        try docs[0].compact(stable: docs[0].version)
        #expect(docs[0].encodedSnapshot()[ListDocument.snapshotMagic.count] == ListDocument.compactedRecordsSnapshotFormatVersion)
    }

    @Test("a compacted snapshot's text that is malformed is refused with a typed error, nothing loaded")
    func malformedTextRefused() throws {
        var (doc, _) = try Self.edited()
        try doc.compact(stable: doc.version)
        let bytes = doc.encodedSnapshot()
        var refused = 0
        // Every truncation and many single-byte changes of the records: an error or a document
        // equal in shape (a change that still reads), never a crash.
        for cut in stride(from: 8, to: bytes.count, by: 3) {
            if (try? ListDocument(snapshot: bytes.prefix(cut), replica: ReplicaID(5))) == nil { refused += 1 }
        }
        for k in stride(from: 8, to: bytes.count, by: 2) {
            var b = bytes
            b[k] ^= 0x5a
            _ = try? ListDocument(snapshot: b, replica: ReplicaID(5))
        }
        #expect(refused > 0)
    }
}
