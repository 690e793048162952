import Foundation
import Testing
import ListSyncTestTraits
@testable import ListCRDT

/// W16.text's state snapshot by part (Docs/Benchmarks.md, "Text, the state snapshot made from the
/// log"): the automerge-paper trace typed into one card's notes, as `listsync-bench` types it,
/// written as version 9 (before version 11) and as version 11.
@Suite(.cpuHeavy) struct DerivedTextBytesTests {
    static func parts(_ e: StateSnapshotEncoder, total: Int) -> String {
        var previous = 0
        var out = ""
        for (part, end) in e.partEnds {
            out += "  \(part): \(end - previous)\n"
            previous = end
        }
        out += "  (of the records, the texts: \(e.textBytes)); header and replica table: \(total - previous)\n"
        return out
    }

    @Test("W16.text: the automerge-paper trace typed into a card's notes writes a version-11 state snapshot of at most Loro's 263,225 bytes, which loads the same document")
    func automergePaperBreakdown() throws {
        let (trace, doc, item) = try TextBlockCodingTests.automergePaper()
        var old = StateSnapshotEncoder(doc, derivedTexts: false)
        let v9 = old.encode()
        var new = StateSnapshotEncoder(doc)
        let v11 = new.encode()
        print("W16.text version \(v9[4]): \(v9.count) bytes\n" + Self.parts(old, total: v9.count))
        print("W16.text version \(v11[4]): \(v11.count) bytes\n" + Self.parts(new, total: v11.count))
        print("W16.text log records \(doc.log.records.count), text runs joined \(new.joinedTextRuns().filter { $0 }.count)")
        #expect(v11[4] == ListDocument.stateDerivedTextSnapshotFormatVersion)
        #expect(v11.count <= 263_225, "at most Loro 1.17.1's snapshot")
        let loaded = try ListDocument(snapshot: v11, replica: ReplicaID(9))
        #expect(loaded.text("notes", ofItem: item) == doc.text("notes", ofItem: item))
        #expect(loaded.log.records.count == doc.log.records.count)
        #expect(loaded.encodedSnapshot() == v11)
        if let expected = trace.finalText { #expect(Array((loaded.text("notes", ofItem: item) ?? "").utf8) == expected) }
    }
}
