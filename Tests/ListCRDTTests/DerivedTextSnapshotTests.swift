import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncRandom
import ListSyncSimulation

/// State snapshot version 11 (Docs/WireFormat.md §5.11): a typed text's characters and slot runs
/// made from the log's typing at the load, its order written as runs of local versions without
/// visibility, consecutive text run records of one replica written as one.
@Suite("state snapshot version 11: typed text made from the log")
struct DerivedTextSnapshotTests {
    /// `doc` written as version 10 or 9 (as builds before version 11 wrote it).
    static func beforeVersion11(_ doc: ListDocument) -> [UInt8] {
        var e = StateSnapshotEncoder(doc, derivedTexts: false)
        return e.encode()
    }

    /// `a` (loaded) and `b` hold the same document: records, state, operations, the log's
    /// records one for one, and the same snapshot bytes written again.
    static func expectSameDocument(_ a: ListDocument, _ b: ListDocument, _ what: String) throws {
        try a.checkInvariants()
        StateRecordsSnapshotTests.expectSame(a, b, what)
        #expect(a.operations == b.operations, "\(what): operations")
        #expect(a.log.records.count == b.log.records.count, "\(what): the log cut into the same records")
        #expect(a.log.records.map(\.kind) == b.log.records.map(\.kind), "\(what): the log's records")
        #expect(a.encodedSnapshot() == b.encodedSnapshot(), "\(what): the same snapshot written again")
        #expect(a.encodedSnapshot(format: .history) == b.encodedSnapshot(format: .history), "\(what): history")
    }

    @Test("a board typed into by three replicas writes version 11, smaller than its version 9, and loads the document of the original, of its version 9 and of its history", arguments: 0 ..< 6 as Range<UInt64>)
    func typedBoardLoadsTheSame(seed: UInt64) throws {
        let doc = try TextStateSnapshotTests.typedBoard(seed: seed)
        let bytes = doc.encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateDerivedTextSnapshotFormatVersion, "seed \(seed)")
        let old = Self.beforeVersion11(doc)
        #expect(old[4] == ListDocument.stateRecordsSnapshotFormatVersion, "seed \(seed)")
        #expect(bytes.count < old.count, "seed \(seed): \(bytes.count) bytes, version 9 \(old.count)")
        #expect(!StateSnapshotEncoder.derivableTexts(of: doc).isEmpty, "seed \(seed): texts made from the log")
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(9))
        try Self.expectSameDocument(loaded, doc, "seed \(seed): against the original")
        try Self.expectSameDocument(loaded, try ListDocument(snapshot: old, replica: ReplicaID(9)), "seed \(seed): against version 9")
        let replayed = try ListDocument(snapshot: doc.encodedSnapshot(format: .history), replica: ReplicaID(9))
        StateRecordsSnapshotTests.expectSame(loaded, replayed, "seed \(seed): against the history")
        #expect(loaded.encodedSnapshot() == bytes, "seed \(seed): written again, the same bytes")
    }

    @Test("random typing, backspaces, pastes and selections of one replica: version 11 writes each consecutive text run as one log record and the loaded log cuts them again as the original's", arguments: 1 ... 8 as ClosedRange<UInt64>)
    func oneReplicasTypingLoadsTheSame(seed: UInt64) throws {
        var (doc, item) = try TextRunLogTests.doc(ticking: seed.isMultiple(of: 2))
        _ = try TextRunLogTests.randomEdits(&doc, item, seed: seed, steps: 300)
        let bytes = doc.encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        let runs = doc.log.records.filter { $0.kind == .textRun }.count
        var e = StateSnapshotEncoder(doc)
        _ = e.encode()
        #expect(e.joinedTextRuns().filter { $0 }.count > runs / 2, "seed \(seed): most runs joined to the one before")
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(3))
        try Self.expectSameDocument(loaded, doc, "seed \(seed)")
        #expect(bytes.count < Self.beforeVersion11(doc).count)
    }

    @Test("a text written whole in version 11 (kind 0) loads as in version 9")
    func wholeTextKindLoads() throws {
        let doc = try TextStateSnapshotTests.typedBoard(seed: 3)
        var e = StateSnapshotEncoder(doc, derivedTextsGiven: [])
        let bytes = e.encode()
        #expect(bytes[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        #expect(bytes.count > doc.encodedSnapshot().count)
        try Self.expectSameDocument(try ListDocument(snapshot: bytes, replica: ReplicaID(9)), doc, "whole texts")
    }

    @Test("a loaded version 11 and the original take the same edits, merges, undo and compaction the same way", arguments: 0 ..< 4 as Range<UInt64>)
    func sideBySide(seed: UInt64) throws {
        let doc = try TextStateSnapshotTests.typedBoard(seed: seed)
        var loaded = try ListDocument(snapshot: doc.encodedSnapshot(), replica: doc.replica)
        var original = doc
        loaded.wallClock = .fixed(1 << 40)
        original.wallClock = .fixed(1 << 40)
        var other = try ListDocument(snapshot: doc.encodedSnapshot(format: .history), replica: ReplicaID(77))
        let items = doc.snapshot().sections.flatMap(\.items).map(\.id)
        var rng = SplitMix64(seed: seed &+ 101)
        for step in 0 ..< 60 {
            let item = items[rng.below(items.count)]
            switch rng.below(4) {
            case 0:
                let n = other.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                let op = try other.splice("notes", ofItem: item, at: rng.below(n + 1), insert: "o\(step)")
                #expect(loaded.receive([op]).applied == original.receive([op]).applied, "seed \(seed) step \(step)")
            case 1:
                let n = loaded.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                guard n > 0 else { continue }
                let at = rng.below(n)
                let a = try loaded.splice("notes", ofItem: item, at: at, delete: 1, insert: "")
                let b = try original.splice("notes", ofItem: item, at: at, delete: 1, insert: "")
                #expect(a == b, "seed \(seed) step \(step): the same delete")
            default:
                let n = loaded.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                let at = rng.below(n + 1)
                let a = try TextFieldTests.type("ab", at: at, into: &loaded, item: item)
                let b = try TextFieldTests.type("ab", at: at, into: &original, item: item)
                #expect(a == b, "seed \(seed) step \(step): the same typing")
            }
        }
        StateRecordsSnapshotTests.expectSame(loaded, original, "seed \(seed): edited")
        // Undo of typing: the same edit taken back, by identity, on both.
        let typedA = try TextFieldTests.type("cd", at: 0, into: &loaded, item: items[0])
        let typedB = try TextFieldTests.type("cd", at: 0, into: &original, item: items[0])
        #expect(typedA == typedB)
        let ranges = typedA.map { TextRange(first: $0.id, count: 1) }
        let takeBackA = loaded.takeBackEdit("notes", of: .item(items[0]), typed: ranges, removed: [])
        let takeBackB = original.takeBackEdit("notes", of: .item(items[0]), typed: ranges, removed: [])
        #expect(takeBackA.edit == takeBackB.edit && takeBackA.edit != nil, "seed \(seed): undo")
        #expect(loaded.textCharacters("notes", of: .item(items[0]), in: ranges) == original.textCharacters("notes", of: .item(items[0]), in: ranges))
        #expect(loaded.operations(since: VersionVector()) == original.operations(since: VersionVector()), "seed \(seed)")
        try Self.expectSameDocument(try ListDocument(snapshot: loaded.encodedSnapshot(), replica: doc.replica),
                                    original, "seed \(seed): snapshotted again")
        try loaded.compact(stable: loaded.version)
        try original.compact(stable: original.version)
        StateRecordsSnapshotTests.expectSame(loaded, original, "seed \(seed): compacted")
        #expect(loaded.encodedSnapshot() == original.encodedSnapshot(), "seed \(seed): compacted snapshot")
    }

    @Test("every cut of a version-11 snapshot is a typed error; every flipped byte a typed error or a sound document that reads")
    func cutsAndFlips() throws {
        var (doc, item) = try TextRunLogTests.doc()
        _ = try TextRunLogTests.randomEdits(&doc, item, seed: 5, steps: 120)
        var other = try ListDocument(snapshot: doc.encodedSnapshot(format: .history), replica: ReplicaID(2))
        let theirs = try TextFieldTests.type("zz", at: 3, into: &other, item: item)
        _ = try TextFieldTests.type("yy", at: 3, into: &doc, item: item)
        _ = doc.receive(theirs)
        let bytes = doc.encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        for n in 0 ..< bytes.count {
            #expect(throws: WireError.self, "cut at \(n)") { try ListDocument(snapshot: bytes.prefix(n), replica: ReplicaID(5)) }
        }
        var same = 0, refused = 0, other_ = 0
        var otherAt: [Int] = []
        for at in 5 ..< bytes.count {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = bytes
                damaged[at] ^= flip
                guard let loaded = try? ListDocument(snapshot: damaged, replica: ReplicaID(5)) else { refused += 1; continue }
                try loaded.checkInvariants()
                for s in loaded.snapshot().sections { for i in s.items { _ = loaded.text("notes", ofItem: i.id) } }
                _ = loaded.encodedSnapshot()
                if loaded.encodedState() == doc.encodedState() && loaded.records == doc.records { same += 1 } else { other_ += 1; otherAt.append(at) }
            }
        }
        print("version 11 flips that load another document, at bytes:", otherAt)
        #expect(refused > 0)
        print("version 11 flips: \(refused) refused, \(same) the same document, \(other_) another sound document")
        // The same flips of version 10's bytes, for comparison.
        let old = Self.beforeVersion11(doc)
        var (oldRefused, oldSame, oldOther) = (0, 0, 0)
        for at in 5 ..< old.count {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = old
                damaged[at] ^= flip
                guard let loaded = try? ListDocument(snapshot: damaged, replica: ReplicaID(5)) else { oldRefused += 1; continue }
                if loaded.encodedState() == doc.encodedState() && loaded.records == doc.records { oldSame += 1 } else { oldOther += 1 }
            }
        }
        print("version 9 flips: \(oldRefused) refused, \(oldSame) the same document, \(oldOther) another sound document")
    }

    @Test("a text made from the log that the order does not place exactly is refused: a character placed twice, one not placed, a run past the text")
    func badOrdersAreRefused() throws {
        var (doc, item) = try TextRunLogTests.doc()
        _ = try TextFieldTests.type("hello", at: 0, into: &doc, item: item)
        _ = try TextFieldTests.type("XY", at: 2, into: &doc, item: item)
        let bytes = doc.encodedSnapshot()
        #expect(try ListDocument(snapshot: bytes, replica: ReplicaID(5)).text("notes", ofItem: item) == "heXYllo")
        // The order: kind 1, then its runs (start difference, count): [0, 2), [5, 7), [2, 5).
        let order: [UInt8] = [1, 3, 0, 2, 6, 2, 9, 3]
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: order) }, "the order is in the snapshot")
        for (bad, words) in [([UInt8]([1, 3, 0, 2, 6, 3, 11, 3]), "past its"), ([1, 3, 0, 2, 6, 2, 7, 3], "placed twice"),
                             ([1, 3, 0, 2, 6, 2, 9, 2], "not placed")] {
            var damaged = bytes
            damaged.replaceSubrange(at ..< at + order.count, with: bad)
            #expect(throws: WireError.self) { try ListDocument(snapshot: damaged, replica: ReplicaID(5)) }
            do { _ = try ListDocument(snapshot: damaged, replica: ReplicaID(5)) } catch { #expect("\(error)".contains(words), "\(error)") }
        }
    }

    /// Version 9 of a card whose notes replica 1 typed ("héllo", then "ab" at 2, then removed the
    /// first character) while replica 2 typed "XY" at 2, merged, with a title: the bytes the build
    /// before version 11 wrote (`encodedSnapshot()` at 2ce04792; `beforeVersion11` writes the same).
    static let versionNineFixture = "4c534e5009020102020201000200000000010000000001004d070201020b4f000400020000056e6f74657302032406000068c3a96c6c6f080b05616201170f0105000000010301080203020258590c0002000208040100057469746c650000000504636172640902056e6f746573057469746c650100026b08011002004c030103050000010802020302080202030a68c3a96c6c6f61625859040001010205080206017109020b0504636172640700000001010000010600050600020600010e01020100070d00020109000a01010001010001010153000101000001000b010001010001"

    @Test("fixture: a version-9 snapshot with typed text written before version 11 still loads, and writes version 11, which loads the same")
    func versionNineFixtureLoads() throws {
        let hex = Array(Self.versionNineFixture.utf8)
        let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0 ..< $0 + 2], as: UTF8.self), radix: 16)! }
        #expect(bytes[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(1))
        try loaded.checkInvariants()
        let item = try #require(loaded.snapshot().sections.first?.items.first).id
        #expect(loaded.text("notes", ofItem: item) == "éabXYllo")
        #expect(loaded.fields(of: item)["title"] == .value(.string("card")))
        #expect(Self.beforeVersion11(loaded) == bytes, "written again as version 9, the same bytes")
        let v11 = loaded.encodedSnapshot()
        #expect(v11[4] == ListDocument.stateDerivedTextSnapshotFormatVersion && v11.count < bytes.count)
        try Self.expectSameDocument(try ListDocument(snapshot: v11, replica: ReplicaID(1)), loaded, "the fixture as version 11")
    }

    @Test("a version-10 reader refuses version 11 by its version byte; labelled 10, its bytes fail")
    func olderReaderRefuses() throws {
        let doc = try TextStateSnapshotTests.typedBoard(seed: 1)
        var bytes = doc.encodedSnapshot()
        bytes[4] = ListDocument.stateRecordsPastedSnapshotFormatVersion
        #expect(throws: WireError.self) { try ListDocument(snapshot: bytes, replica: ReplicaID(5)) }
        // The version after the last this build writes (13, the compacted snapshot whose floor admits concurrent operations).
        bytes[4] = ListDocument.compactedConcurrentSnapshotFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListDocument.compactedConcurrentSnapshotFormatVersion + 1)) {
            try ListDocument(snapshot: bytes, replica: ReplicaID(5))
        }
    }

    @Test("W14-like boards without typed text and W17-like pasted notes keep versions 9 and 10, byte for byte")
    func documentsWithoutTypingKeepTheirVersions() throws {
        let pasted = try PastedRecordsSnapshotTests.board(seed: 4).doc
        // The board's one typed card makes text runs: version 11; without it, version 10 as before.
        #expect(pasted.encodedSnapshot()[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let a = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
        _ = try doc.splice("notes", ofItem: a, at: 0, insert: String(repeating: "pasted notes ", count: 100))
        try doc.setField("title", to: .string("a card"), ofItem: a)
        #expect(doc.encodedSnapshot()[4] == ListDocument.stateRecordsPastedSnapshotFormatVersion)
        #expect(doc.encodedSnapshot() == Self.beforeVersion11(doc))
    }
}
