import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncSimulation

extension ListDocument {
    /// The state snapshot as builds before version 9 wrote it (versions 2 to 8): for tests of
    /// those versions' layout, which the loader still reads.
    func encodedStateSnapshotBeforeVersion9() -> [UInt8] {
        var e = StateSnapshotEncoder(self, stateRecords: false)
        return e.encode()
    }

    /// Versions 9 and 10 (a typed text written whole), as builds before version 11 wrote them.
    func encodedStateSnapshotBeforeVersion11() -> [UInt8] {
        var e = StateSnapshotEncoder(self, derivedTexts: false)
        return e.encode()
    }
}

/// Version 9 of the state snapshot (Docs/WireFormat.md §5.9, `StateRecordsCoding.swift`): every
/// record written as state, nothing replayed at the load, the records without text read on first
/// use. A document loaded from it must be the document a replay of its history makes, in
/// everything observable, and stay so under every later edit and merge.
@Suite("state snapshot version 9: records as state, read on first use")
struct StateRecordsSnapshotTests {
    /// A board edited at random by three replicas (DeferredRecordsTests.board).
    static func board(seed: UInt64, rounds: Int = 3) throws -> [ListDocument] {
        try DeferredRecordsTests.board(seed: seed, rounds: rounds)
    }

    /// Everything observable of a document's fields and list, compared.
    static func expectSame(_ a: ListDocument, _ b: ListDocument, _ what: @autoclosure () -> String) {
        #expect(a.records.allRecords == b.records.allRecords, "records: \(what())")
        #expect(a.snapshot() == b.snapshot(), "shown: \(what())")
        #expect(a.fieldClock == b.fieldClock, "field clock: \(what())")
        #expect(a.encodedState() == b.encodedState(), "state: \(what())")
        #expect(a.reclaimableBytes == b.reclaimableBytes && a.documentBytes == b.documentBytes, "bytes: \(what())")
    }

    @Test("a board with fields writes version 9 and loads the records of its replay and of its version 8, without replaying a write; re-encoded, the same bytes", arguments: 1 ... 12)
    func loadsTheReplayedRecords(seed: UInt64) throws {
        let docs = try Self.board(seed: seed)
        let bytes = docs[0].encodedSnapshot()
        // Version 11 when the board's log holds text runs (typed text, §5.11).
        #expect(bytes[4] == (docs[0].log.others.hasRuns ? ListDocument.stateDerivedTextSnapshotFormatVersion
                                                         : ListDocument.stateRecordsSnapshotFormatVersion), "seed \(seed)")
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(7))
        try loaded.checkInvariants()
        let v8 = try ListDocument(snapshot: docs[0].encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(7))
        let eager = try DeferredRecordsTests.replayed(docs[0], replica: ReplicaID(7))
        #expect(loaded.records.deferred?.writes.isEmpty ?? true, "seed \(seed): no write filed")
        #expect(loaded.records.deferred?.state != nil || loaded.records.materialized.count == loaded.records.count,
                "seed \(seed): the records without text are read from the state")
        #expect(loaded.records.materialized.values.allSatisfy { $0.values.contains { $0.text != nil } },
                "seed \(seed): only records with text are made at the load")
        // Shown straight from the bytes, before any record is read whole.
        #expect(loaded.snapshot() == eager.snapshot(), "seed \(seed): shown before reading")
        Self.expectSame(loaded, eager, "seed \(seed): loaded against replayed")
        Self.expectSame(loaded, v8, "seed \(seed): loaded against version 8")
        Self.expectSame(loaded, docs[0], "seed \(seed): loaded against the original")
        #expect(loaded.operations == docs[0].operations, "seed \(seed)")
        #expect(loaded.encodedSnapshot() == bytes, "seed \(seed): a loaded document writes the same bytes")
        ReclaimableBytesTests.check(loaded, "seed \(seed)")
    }

    @Test("side by side, a version-9 load and a replay of the same history take the same edits and merges: the same operations made (replaces, seen), the same lost field writes, the same records, bytes and compaction", arguments: 1 ... 16)
    func sideBySide(seed: UInt64) throws {
        var docs = try Self.board(seed: seed, rounds: 2)
        let mine = docs[1]
        var loaded = try ListDocument(snapshot: mine.encodedSnapshot(), replica: mine.replica)
        var eager = try DeferredRecordsTests.replayed(mine, replica: mine.replica)
        _ = loaded.takeFieldConflicts()
        _ = eager.takeFieldConflicts()
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 43)
        var workload = Workload()
        workload.fieldWrites = 50
        workload.textEdits = 10
        var n = 0
        for step in 0 ..< 80 {
            switch rng.below(3) {
            case 0:
                // The same local edit on both: each makes its operation from its own records.
                let edit = RandomEdit.random(for: loaded, workload: workload, using: &rng) { n += 1; return "w\(n)" }
                let a = try? edit.apply(to: &loaded)
                let b = try? edit.apply(to: &eager)
                #expect(a == b, "seed \(seed) step \(step): \(edit) makes the same operation")
                // The other replicas hear of it later (concurrently with their own writes).
                if let a { for r in [0, 2] { _ = docs[r].receive([a]) } }
            default:
                // A concurrent edit of another replica, received by both.
                let r = rng.below(2) == 0 ? 0 : 2
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { n += 1; return "x\(n)" }
                guard let op = try? edit.apply(to: &docs[r]) else { continue }
                let ra = loaded.receive([op]), rb = eager.receive([op])
                #expect(ra.applied == rb.applied, "seed \(seed) step \(step)")
            }
            #expect(loaded.takeFieldConflicts() == eager.takeFieldConflicts(), "seed \(seed) step \(step): lost field writes")
            if step % 20 == 19 {
                Self.expectSame(loaded, eager, "seed \(seed) step \(step)")
                // Snapshotted again (the log in each one's order): loads that are the same again.
                let again = try ListDocument(snapshot: loaded.encodedSnapshot(), replica: mine.replica)
                let eagerAgain = try ListDocument(snapshot: eager.encodedSnapshot(), replica: mine.replica)
                Self.expectSame(again, eagerAgain, "seed \(seed) step \(step): snapshotted again")
                Self.expectSame(again, loaded, "seed \(seed) step \(step): snapshotted again")
                ReclaimableBytesTests.check(loaded, "seed \(seed) step \(step)")
            }
        }
        // Everyone's operations, then a compaction at the common version.
        for r in [0, 2] {
            _ = loaded.receive(docs[r].operations)
            _ = eager.receive(docs[r].operations)
        }
        #expect(loaded.takeFieldConflicts() == eager.takeFieldConflicts(), "seed \(seed): lost field writes of the merge")
        Self.expectSame(loaded, eager, "seed \(seed): merged")
        try loaded.compact(stable: loaded.version)
        try eager.compact(stable: eager.version)
        Self.expectSame(loaded, eager, "seed \(seed): compacted")
        Self.expectSame(try ListDocument(snapshot: loaded.encodedSnapshot(), replica: mine.replica),
                        try ListDocument(snapshot: eager.encodedSnapshot(), replica: mine.replica), "seed \(seed): compacted, loaded again")
    }

    @Test("a loaded copy's records are read on first use and shared by copies; a copy that changes one keeps it to itself")
    func copiesKeepTheirOwnChanges() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        var ids: [ItemID] = []
        for k in 0 ..< 20 {
            let id = ItemID(try doc.insertItem(atRow: k, inSection: 0, value: Data("card \(k)".utf8)).id)
            _ = try doc.writeFields(["title": .set(.string("t\(k)")), "votes": .increment(1), "tags": .insert(["b", "a"])], ofItem: id)
            ids.append(id)
        }
        let bytes = doc.encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        #expect(loaded.records.materialized.isEmpty && loaded.records.deferred?.state != nil, "nothing built at the load")
        var a = loaded, b = loaded
        #expect(a.field("tags", of: ids[3]) == .set(["a", "b"]))
        _ = try a.writeFields(["title": .set(.string("changed")), "votes": .increment(5)], ofItem: ids[3])
        #expect(a.field("votes", of: ids[3]) == .counter(6))
        #expect(b.field("title", of: ids[3]) == .value(.string("t3")), "the other copy keeps the loaded record")
        #expect(a.records.taken == [ids[3].opID] && b.records.taken.isEmpty)
        #expect(a.fields(of: ids[4]) == doc.fields(of: ids[4]))
        ReclaimableBytesTests.check(a, "copy a")
        ReclaimableBytesTests.check(b, "copy b")
    }

    @Test("a typed text and a pasted one load from version 10 (the pasted one's record left to the log) with the typed text checked against the log; a text edit of a record without text in the state is refused")
    func textsInVersionNine() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let pasted = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
        let typed = ItemID(try doc.insertItem(atRow: 1, inSection: 0, value: Data()).id)
        _ = try doc.writeFields(["title": .set(.string("p"))], ofItem: pasted)
        _ = try doc.splice("notes", ofItem: pasted, at: 0, insert: String(repeating: "lorem ", count: 50))
        _ = try TextFieldTests.type("typed", at: 0, into: &doc, item: typed)
        let bytes = doc.encodedStateSnapshotBeforeVersion11()
        #expect(bytes[4] == ListDocument.stateRecordsPastedSnapshotFormatVersion)
        // This build writes version 11 (typed text), with the same rule for the pasted record.
        let v11 = doc.encodedSnapshot()
        #expect(v11[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        #expect(try ListDocument(snapshot: v11, replica: ReplicaID(2)).records == doc.records)
        #expect(StateSnapshotEncoder.pastedTextRecords(of: doc) == [pasted.opID])
        var loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        #expect(loaded.text("notes", ofItem: pasted) == doc.text("notes", ofItem: pasted))
        #expect(loaded.text("notes", ofItem: typed) == "typed")
        #expect(loaded.records == doc.records)
        _ = try loaded.splice("notes", ofItem: typed, at: 5, insert: "!")
        #expect(loaded.text("notes", ofItem: typed) == "typed!")
        // A record written without the text its log's edits made, or not written at all: refused.
        var noText = doc
        noText.records.materialized[typed.opID]?["notes"] = nil
        #expect(throws: WireError.self) { try ListDocument(snapshot: noText.encodedSnapshot(), replica: ReplicaID(3)) }
        #expect(throws: WireError.self) { try ListDocument(snapshot: noText.encodedStateSnapshotBeforeVersion11(), replica: ReplicaID(3)) }
        var noRecord = doc
        noRecord.records.materialized[pasted.opID] = nil
        #expect(throws: WireError.self) { try ListDocument(snapshot: noRecord.encodedSnapshot(), replica: ReplicaID(3)) }
        #expect(throws: WireError.self) { try ListDocument(snapshot: noRecord.encodedStateSnapshotBeforeVersion11(), replica: ReplicaID(3)) }
    }

    @Test("every proper prefix of a version-9 snapshot is a typed error, and every damaged byte a typed error or a sound document whose records all read")
    func damagedBytes() throws {
        let docs = try Self.board(seed: 21)
        let bytes = docs[0].encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        try Self.expectDamageRefusedOrSound(bytes, prefixStride: 7, damages: 600, seed: 0x5EC9)
    }

    /// Every `prefixStride`-th proper prefix of `bytes` is a typed error; each of `damages` bytes
    /// changed at random is a typed error or loads a sound document whose records all read (what
    /// the load checked is all a read needs); and some damage is refused.
    static func expectDamageRefusedOrSound(_ bytes: [UInt8], prefixStride: Int, damages: Int, seed: UInt64) throws {
        for n in stride(from: 0, to: bytes.count, by: prefixStride) {
            #expect(throws: WireError.self) { try ListDocument(snapshot: bytes.prefix(n), replica: ReplicaID(9)) }
        }
        var rng = SplitMix64(seed: seed)
        var loadedCount = 0
        for _ in 0 ..< damages {
            var damaged = bytes
            let at = 5 + rng.below(bytes.count - 5)
            damaged[at] ^= UInt8(1 + rng.below(255))
            guard let loaded = try? ListDocument(snapshot: damaged, replica: ReplicaID(9)) else { continue }
            loadedCount += 1
            try loaded.checkInvariants()
            _ = loaded.snapshot()
            _ = loaded.records.allRecords
            _ = loaded.reclaimableBytes
        }
        #expect(loadedCount < damages)
    }

    @Test("a reader of version 8 refuses version 9 by its version byte; this build refuses the version after 13 the same way")
    func olderReaderRefuses() throws {
        let docs = try Self.board(seed: 3)
        var bytes = docs[0].encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        // Version 10 is version 9 where records may be left to the log: labelled 10, the same document.
        bytes[4] = ListDocument.stateRecordsPastedSnapshotFormatVersion
        Self.expectSame(try ListDocument(snapshot: bytes, replica: ReplicaID(9)), docs[0], "labelled 10")
        // The version after the last this build writes (13, the compacted snapshot whose floor admits concurrent operations).
        bytes[4] = ListDocument.compactedConcurrentSnapshotFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListDocument.compactedConcurrentSnapshotFormatVersion + 1)) {
            try ListDocument(snapshot: bytes, replica: ReplicaID(9))
        }
        // Labelled 8, version 9's records part is not version 8's text records: a typed error.
        bytes[4] = ListDocument.stateTextRunsSnapshotFormatVersion
        #expect(throws: WireError.self) { try ListDocument(snapshot: bytes, replica: ReplicaID(9)) }
    }
}
