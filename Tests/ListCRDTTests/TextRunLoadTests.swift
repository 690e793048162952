import Foundation
import Testing
@testable import ListCRDT
import ListSyncRandom

/// Loads that keep text runs whole (issue 45): a history's text run records received as one
/// descriptor each (`DecodedTextRuns.swift`), a state snapshot's log records of splices checked
/// and logged a piece of a run at a time (`StateSnapshotDecoding+TextRuns.swift`). Each must give
/// the document the typing made, down to the log's byte count and the records' clock.
@Suite("Text runs kept whole by history and state snapshot loads")
struct TextRunLoadTests {
    /// Three replicas typing runs into two fields (forward, backspaces, forward deletes, some
    /// characters not ASCII, some while another types at the same place), exchanging now and then.
    static func typedRuns(seed: UInt64) throws -> ListDocument {
        var (docs, first) = try TextFieldTests.replicas(3, start: "start")
        let second = ItemID(try docs[0].insertItem(at: IndexPath(item: 1, section: 0), value: Data()).id)
        for k in 1 ..< 3 { #expect(docs[k].receive(docs[0].operations).isSuccess) }
        var rng = SplitMix64(seed: seed)
        let letters = Array("abcdé👍 xyz".unicodeScalars)
        for _ in 0 ..< 8 {
            for k in docs.indices {
                let item = rng.next() % 2 == 0 ? first : second
                let n = docs[k].text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                var at = Int(rng.next() % UInt64(n + 1))
                let burst = 2 + Int(rng.next() % 12)
                switch rng.next() % 4 {
                case 0 where at > 0:   // backspaces
                    for _ in 0 ..< min(burst, at) {
                        _ = try docs[k].splice("notes", ofItem: item, at: at - 1, delete: 1, insert: "")
                        at -= 1
                    }
                case 1 where at < n:   // forward deletes
                    for _ in 0 ..< min(burst, n - at) { _ = try docs[k].splice("notes", ofItem: item, at: at, delete: 1, insert: "") }
                default:   // typing forward
                    for _ in 0 ..< burst {
                        let c = String(letters[Int(rng.next() % UInt64(letters.count))])
                        _ = try docs[k].splice("notes", ofItem: item, at: at, insert: c)
                        at += 1
                    }
                }
            }
            let j = Int(rng.next() % 3)
            #expect(docs[j].receive(docs[(j + 1) % 3].operations).isSuccess)
        }
        for k in docs.indices { for other in docs.indices where other != k { docs[k].receive(docs[other].operations) } }
        return docs[1]
    }

    /// What a load must give back as `original` had it.
    static func expectSame(_ loaded: ListDocument, _ original: ListDocument, _ what: String) {
        #expect(loaded.operations == original.operations, "\(what): operations")
        #expect(loaded.records == original.records, "\(what): records")
        #expect(loaded.records.clock == original.records.clock, "\(what): the records' clock")
        #expect(loaded.logBytes == original.logBytes, "\(what): the log's bytes")
        #expect(loaded.reclaimableBytes == original.reclaimableBytes, "\(what): reclaimable bytes")
        #expect(loaded.versionVector == original.versionVector, "\(what): version")
        #expect(loaded.encodedHistory() == original.encodedHistory(), "\(what): history bytes")
        #expect(loaded.encodedSnapshot(format: .state) == original.encodedSnapshot(format: .state), "\(what): state snapshot bytes")
        #expect(throws: Never.self, "\(what): invariants") { try loaded.checkInvariants() }
    }

    @Test("state snapshots of versions 8, 9 and 11 load a typed history's runs whole, and give back its log, records and bytes", arguments: 0 ..< 8 as Range<UInt64>)
    func stateSnapshots(seed: UInt64) throws {
        let doc = try Self.typedRuns(seed: seed)
        #expect(doc.log.others.runs.count >= 3, "runs of typing and deleting")
        let v11 = doc.encodedSnapshot(format: .state)
        #expect(v11[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        Self.expectSame(try ListDocument(snapshot: v11, replica: doc.replica), doc, "version 11")
        let v9 = doc.encodedStateSnapshotBeforeVersion11()
        #expect(v9[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        Self.expectSame(try ListDocument(snapshot: v9, replica: doc.replica), doc, "version 9")
        let v8 = doc.encodedStateSnapshotBeforeVersion9()
        Self.expectSame(try ListDocument(snapshot: v8, replica: doc.replica), doc, "version 8")
    }

    @Test("a history received as one encoded batch keeps its runs whole and gives what one operation at a time gives", arguments: 0 ..< 8 as Range<UInt64>)
    func history(seed: UInt64) throws {
        let doc = try Self.typedRuns(seed: seed)
        var whole = ListDocument(replica: doc.replica)
        try whole.receive(encoded: doc.encodedHistory())
        var single = ListDocument(replica: doc.replica)
        single.fastPaths = false
        for op in doc.operations { #expect(single.receive([op]).isSuccess) }
        single.fastPaths = true
        Self.expectSame(whole, single, "history")
        #expect(whole.log.others.runs.count == single.log.others.runs.count)
    }
}
