import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncSimulation

/// Version 10 of the state snapshot (Docs/WireFormat.md §5.10): version 9 with the records that
/// hold a pasted text left to the log, so that a pasted text is in the snapshot once. A document
/// loaded from it must be the document its history makes, as version 9's is.
@Suite("state snapshot version 10: records with pasted text left to the log")
struct PastedRecordsSnapshotTests {
    /// A board edited at random by three replicas (``DeferredRecordsTests/board(seed:rounds:)``),
    /// then notes pasted into some cards by two of them concurrently, one card's notes typed, and
    /// both merged.
    static func board(seed: UInt64) throws -> (doc: ListDocument, pasted: [String]) {
        var docs = try DeferredRecordsTests.board(seed: seed, rounds: 2)
        var rng = SplitMix64(seed: seed ^ 0xBA57E)
        var pasted: [String] = []
        var made: [[ListOperation]] = [[], []]
        for r in 0 ..< 2 {
            let items = docs[r].snapshot().sections.flatMap(\.items).map(\.id)
            guard !items.isEmpty else { continue }
            for k in 0 ..< 3 {
                let item = items[rng.below(items.count)]
                // A paste of its own words, so that each is found in the bytes by itself.
                let text = "pasted \(seed) \(r) \(k) " + String(repeating: "lorem ipsum \(k) ", count: 20 + rng.below(40))
                guard let op = try? docs[r].splice("paste\(r)", ofItem: item, at: 0, insert: text) else { continue }
                made[r].append(op)
                pasted.append(text)
            }
            if r == 1, let item = items.first {
                made[r] += (try? TextFieldTests.type("typed by hand", at: 0, into: &docs[r], item: item)) ?? []
            }
        }
        _ = docs[0].receive(made[1])
        _ = docs[1].receive(made[0])
        return (docs[0], pasted)
    }

    static func occurrences(of text: String, in bytes: [UInt8]) -> Int {
        let needle = Array(text.utf8)
        guard needle.count <= bytes.count else { return 0 }
        return (0 ... bytes.count - needle.count).reduce(0) { n, i in
            bytes[i] == needle[0] && bytes[i ..< i + needle.count].elementsEqual(needle) ? n + 1 : n
        }
    }

    @Test("a board with pasted notes writes version 10, each pasted text once; it loads to the document of its history, of version 9 and of its replay, and writes the same bytes again", arguments: 1 ... 10)
    func loadsTheSameDocument(seed: UInt64) throws {
        let (doc, pasted) = try Self.board(seed: seed)
        #expect(!pasted.isEmpty)
        // Version 10 as builds before version 11 wrote it (the board's typed card makes the build
        // write version 11: DerivedTextSnapshotTests).
        let bytes = doc.encodedStateSnapshotBeforeVersion11()
        #expect(bytes[4] == ListDocument.stateRecordsPastedSnapshotFormatVersion, "seed \(seed)")
        var v9Encoder = StateSnapshotEncoder(doc, pastedToLog: false, derivedTexts: false)
        let v9 = v9Encoder.encode()
        #expect(v9[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        for text in pasted {
            #expect(Self.occurrences(of: text, in: bytes) == 1, "seed \(seed): a pasted text once in version 10")
            #expect(Self.occurrences(of: text, in: v9) == 2, "seed \(seed): twice in version 9")
        }
        #expect(bytes.count < v9.count)

        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(7))
        try loaded.checkInvariants()
        let fromV9 = try ListDocument(snapshot: v9, replica: ReplicaID(7))
        let replayed = try DeferredRecordsTests.replayed(doc, replica: ReplicaID(7))
        #expect(loaded.snapshot() == replayed.snapshot(), "seed \(seed): shown before reading")
        StateRecordsSnapshotTests.expectSame(loaded, doc, "seed \(seed): against the original")
        StateRecordsSnapshotTests.expectSame(loaded, fromV9, "seed \(seed): against version 9")
        StateRecordsSnapshotTests.expectSame(loaded, replayed, "seed \(seed): against the replay")
        #expect(loaded.records.allRecords == doc.records.allRecords, "seed \(seed): every field's state")
        #expect(loaded.operations == doc.operations, "seed \(seed)")
        #expect(loaded.encodedStateSnapshotBeforeVersion11() == bytes, "seed \(seed): a loaded document writes the same bytes")
        #expect(loaded.encodedSnapshot() == doc.encodedSnapshot(), "seed \(seed): and the same version 11")
        ReclaimableBytesTests.check(loaded, "seed \(seed)")

        // The same edits on the loaded copy and on the original: the same operations and state.
        var a = try ListDocument(snapshot: bytes, replica: doc.replica), b = doc
        a.wallClock = .fixed(1 << 40)
        b.wallClock = .fixed(1 << 40)
        for (k, item) in doc.snapshot().sections.flatMap(\.items).prefix(4).map(\.id).enumerated() {
            let name = k.isMultiple(of: 2) ? "paste0" : "paste1"
            let x = try? a.splice(name, ofItem: item, at: 0, insert: "edit \(k) ")
            let y = try? b.splice(name, ofItem: item, at: 0, insert: "edit \(k) ")
            #expect(x == y, "seed \(seed): the same splice")
        }
        StateRecordsSnapshotTests.expectSame(a, b, "seed \(seed): after the same edits")
    }

    @Test("a board without pasted text still writes version 9, byte for byte as before")
    func withoutPastesVersionNine() throws {
        let docs = try DeferredRecordsTests.board(seed: 4)
        #expect(StateSnapshotEncoder.pastedTextRecords(of: docs[0]).isEmpty)
        var e = StateSnapshotEncoder(docs[0], pastedToLog: false)
        #expect(docs[0].encodedSnapshot() == e.encode())
        #expect(docs[0].encodedSnapshot()[4] == ListDocument.stateRecordsSnapshotFormatVersion)
    }

    @Test("every proper prefix of a version-10 snapshot is a typed error, and every damaged byte a typed error or a sound document whose records all read")
    func damagedBytes() throws {
        let (doc, _) = try Self.board(seed: 5)
        let bytes = doc.encodedStateSnapshotBeforeVersion11()
        #expect(bytes[4] == ListDocument.stateRecordsPastedSnapshotFormatVersion)
        try StateRecordsSnapshotTests.expectDamageRefusedOrSound(bytes, prefixStride: 11, damages: 400, seed: 0x5EC10)
    }

    @Test("a reader of version 9 refuses version 10: by its version byte, and labelled 9 by a field write whose record the records part does not hold")
    func olderReaderRefuses() throws {
        let (doc, _) = try Self.board(seed: 6)
        var bytes = doc.encodedStateSnapshotBeforeVersion11()
        #expect(bytes[4] == ListDocument.stateRecordsPastedSnapshotFormatVersion)
        bytes[4] = ListDocument.compactedConcurrentSnapshotFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListDocument.compactedConcurrentSnapshotFormatVersion + 1)) {
            try ListDocument(snapshot: bytes, replica: ReplicaID(9))
        }
        bytes[4] = ListDocument.stateRecordsSnapshotFormatVersion
        #expect(throws: WireError.self) { try ListDocument(snapshot: bytes, replica: ReplicaID(9)) }
    }
}
