import Foundation
import Testing
@testable import ListCRDT
import ListSyncRandom

/// State snapshot version 7 (Docs/WireFormat.md §5.7): the records that hold text are written as
/// state ahead of the log and checked against the log's text edits instead of replayed.
@Suite("§8.10 text fields: state snapshot version 7")
struct TextStateSnapshotTests {
    /// A board of two items whose notes three replicas typed into concurrently (inserts and
    /// backspaces, some non-ASCII), with a title and a counter beside them, merged everywhere.
    static func typedBoard(seed: UInt64) throws -> ListDocument {
        var (docs, first) = try TextFieldTests.replicas(3, start: "start")
        let second = ItemID(try docs[0].insertItem(at: IndexPath(item: 1, section: 0), value: Data()).id)
        try docs[0].setField("title", to: .string("second"), ofItem: second)
        for k in 1 ..< 3 { #expect(docs[k].receive(docs[0].operations).isSuccess) }
        var rng = SplitMix64(seed: seed)
        let letters = Array("abcdé👍 xyz".unicodeScalars)
        for _ in 0 ..< 6 {
            for k in docs.indices {
                let item = rng.next() % 2 == 0 ? first : second
                for _ in 0 ..< Int(rng.next() % 20) {
                    let n = docs[k].text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                    if n > 0, rng.next() % 4 == 0 {
                        _ = try docs[k].splice("notes", ofItem: item, at: Int(rng.next() % UInt64(n)), delete: 1, insert: "")
                    } else {
                        let c = String(letters[Int(rng.next() % UInt64(letters.count))])
                        _ = try docs[k].splice("notes", ofItem: item, at: Int(rng.next() % UInt64(n + 1)), insert: c)
                    }
                }
                if rng.next() % 3 == 0 { _ = try docs[k].increment("votes", by: 1, ofItem: item) }
            }
            // A partial exchange, then all of it.
            let j = Int(rng.next() % 3)
            #expect(docs[j].receive(docs[(j + 1) % 3].operations).isSuccess)
        }
        for k in docs.indices { for other in docs.indices where other != k { docs[k].receive(docs[other].operations) } }
        return docs[0]
    }

    /// The bytes of `doc`'s records that hold text, as version 7 writes them.
    static func textRecordBytes(_ doc: ListDocument) -> [UInt8] {
        StateSnapshotEncoder.textStateRecords(of: doc).encoded()
    }

    /// `snapshot` (version 7 of `doc`) with its records of text replaced by those of `other`.
    static func withTextRecords(of other: ListDocument, in snapshot: [UInt8], of doc: ListDocument) throws -> [UInt8] {
        let own = textRecordBytes(doc), theirs = textRecordBytes(other)
        let at = try #require(snapshot.indices.first { snapshot[$0...].starts(with: own) }, "the records are in the snapshot")
        func varint(_ n: Int) -> [UInt8] {
            var w = WireWriter()
            w.varint(UInt64(n))
            return w.bytes
        }
        let length = varint(own.count)
        try #require(Array(snapshot[at - length.count ..< at]) == length)
        var out = snapshot
        out.replaceSubrange(at - length.count ..< at + own.count, with: varint(theirs.count) + theirs)
        return out
    }

    @Test("a typed board's state snapshot is version 7 and loads as the same document as its version 5 and its replay, and edits on the same", arguments: 0 ..< 4 as Range<UInt64>)
    func sameAsVersion5(seed: UInt64) throws {
        let doc = try Self.typedBoard(seed: seed)
        let v8 = doc.encodedStateSnapshotBeforeVersion9()
        #expect(v8[4] == ListDocument.stateTextRunsSnapshotFormatVersion, "typed text: text runs, version 8")
        var seven = StateSnapshotEncoder(doc, textRuns: false)
        let v7 = seven.encode()
        #expect(v7[4] == ListDocument.stateTextSnapshotFormatVersion)
        #expect(try ListDocument(snapshot: v8, replica: ReplicaID(9)).records == ListDocument(snapshot: v7, replica: ReplicaID(9)).records)
        var old = StateSnapshotEncoder(doc, textRecords: false, textRuns: false)
        let v5 = old.encode()
        #expect(v5[4] == ListDocument.stateFieldsSnapshotFormatVersion)
        var a = try ListDocument(snapshot: v8, replica: ReplicaID(9))
        var b = try ListDocument(snapshot: v5, replica: ReplicaID(9))
        var c = try ListDocument(snapshot: doc.encodedSnapshot(format: .history), replica: ReplicaID(9))
        for d in [a, b, c] {
            try d.checkInvariants()
            #expect(d.records == doc.records)
            #expect(d.encodedState() == doc.encodedState())
            #expect(d.operations == doc.operations)
            #expect(d.encodedStateSnapshotBeforeVersion9() == v8)   // a version-5 load writes version 8 too (before version 9)
        }
        // Typing on goes the same way on each (the loaded texts are whole sequences, not views).
        let item = try #require(doc.snapshot().sections.first?.items.first).id
        for k in 0 ..< 20 {
            for i in 0 ..< 3 {
                var d = [a, b, c][i]
                _ = try d.splice("notes", ofItem: item, at: k % 3, insert: "q")
                if i == 0 { a = d } else if i == 1 { b = d } else { c = d }
            }
        }
        #expect(a.records == b.records && b.records == c.records)
        #expect(a.text("notes", ofItem: item) == b.text("notes", ofItem: item))
    }

    @Test("version 7 whose texts are not what the log made is a typed error: a character more, one hidden that the log kept, other letters under the same ids")
    func textsCheckedAgainstTheLog() throws {
        let (docs, item) = try TextFieldTests.replicas(1, start: "")
        var doc = docs[0]
        _ = try TextFieldTests.type("hello", at: 0, into: &doc, item: item)
        let bytes = doc.encodedStateSnapshotBeforeVersion9()
        #expect(try ListDocument(snapshot: bytes, replica: ReplicaID(5)).text("notes", ofItem: item) == "hello")

        func refused(_ other: ListDocument, _ words: String) throws {
            let damaged = try Self.withTextRecords(of: other, in: bytes, of: doc)
            #expect(throws: WireError.self) { try ListDocument(snapshot: damaged, replica: ReplicaID(5)) }
            do { _ = try ListDocument(snapshot: damaged, replica: ReplicaID(5)) } catch {
                #expect("\(error)".contains(words), "\(error)")
            }
        }
        var more = doc
        _ = try TextFieldTests.type("!", at: 5, into: &more, item: item)
        try refused(more, "where the log inserted")
        var hidden = doc
        _ = try hidden.splice("notes", ofItem: item, at: 4, delete: 1, insert: "")
        try refused(hidden, "a character shown that the log removed, or hidden that it kept")
        var (others, same) = try TextFieldTests.replicas(1, start: "")
        #expect(same == item)   // the same ids: one replica, the same operations
        _ = try TextFieldTests.type("jello", at: 0, into: &others[0], item: same)
        try refused(others[0], "its characters are not the text's")
        // Each truncation is a typed error too, never a crash.
        for n in stride(from: 5, to: bytes.count, by: 1) {
            #expect(throws: WireError.self) { try ListDocument(snapshot: bytes.prefix(n), replica: ReplicaID(5)) }
        }
    }

    @Test("a pasted text stays in the log only (version 5, byte for byte); beside a typed one, only the typed record is written as state")
    func pastedTextStaysInTheLog() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let pasted = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
        _ = try doc.splice("notes", ofItem: pasted, at: 0, insert: String(repeating: "lorem ipsum ", count: 200))
        _ = try doc.splice("notes", ofItem: pasted, at: 0, delete: 6, insert: "")
        var v5 = StateSnapshotEncoder(doc, textRecords: false)
        #expect(doc.encodedStateSnapshotBeforeVersion9() == v5.encode(), "two edits for 2,400 characters: version 5")
        let typed = ItemID(try doc.insertItem(atRow: 1, inSection: 0, value: Data()).id)
        _ = try TextFieldTests.type("typed", at: 0, into: &doc, item: typed)
        let bytes = doc.encodedStateSnapshotBeforeVersion9()
        #expect(bytes[4] == ListDocument.stateTextRunsSnapshotFormatVersion)
        #expect(Set(StateSnapshotEncoder.textStateRecords(of: doc).materialized.keys) == [typed.opID])
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        #expect(loaded.records == doc.records)
        #expect(loaded.text("notes", ofItem: pasted) == doc.text("notes", ofItem: pasted))
        #expect(loaded.text("notes", ofItem: typed) == "typed")
    }

    @Test("every damaged byte of a version-7 snapshot is a typed error or a sound document")
    func damagedBytes() throws {
        let doc = try Self.typedBoard(seed: 7)
        let bytes = doc.encodedSnapshot()
        var rng = SplitMix64(seed: 11)
        for _ in 0 ..< 400 {
            var damaged = bytes
            let at = 5 + Int(rng.next() % UInt64(bytes.count - 5))
            damaged[at] ^= UInt8(1 + rng.next() % 255)
            if let loaded = try? ListDocument(snapshot: damaged, replica: ReplicaID(5)) {
                try loaded.checkInvariants()
                _ = loaded.snapshot()
                for s in loaded.snapshot().sections { for i in s.items { _ = loaded.text("notes", ofItem: i.id) } }
            }
        }
    }
}
