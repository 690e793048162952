import Foundation
import Testing
@testable import ListCRDT
import ListSyncTestTraits

/// Real editing traces, applied as lists of one-character items.
@Suite(.cpuHeavy) struct TraceTests {
    /// Applies a trace to a one-section document, one operation per element.
    static func replay(_ trace: EditingTrace, on doc: inout ListDocument) throws {
        for edit in trace.edits {
            for _ in 0..<edit.deleteCount {
                try doc.deleteItem(at: IndexPath(item: edit.position, section: 0))
            }
            for (k, c) in edit.text.enumerated() {
                try doc.insertItem(at: IndexPath(item: edit.position + k, section: 0), value: Data([c]))
            }
        }
    }

    static func text(_ doc: ListDocument) -> [UInt8] {
        doc.snapshot().sections[0].items.flatMap { Array($0.value) }
    }

    @Test("the automerge-paper trace gives exactly the final text, and a replica that receives its history agrees")
    func automergePaper() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        #expect(trace.edits.count == 259_778)
        let expected = try #require(trace.finalText)
        #expect(trace.replayOnArray() == expected)
        var doc = try ListDocument.make(1, sections: [[]])
        try Self.replay(trace, on: &doc)
        #expect(Self.text(doc) == expected)
        #expect(try doc.itemCount(inSection: 0) == 104_852)
        try doc.checkInvariants()

        var remote = ListDocument(replica: ReplicaID(2))
        #expect(remote.receive(doc.operations).refused.isEmpty)
        #expect(Self.text(remote) == expected)
        #expect(remote.encodedState() == doc.encodedState())
        try remote.checkInvariants()
        // Nothing moved and every delete saw its item's insert: every register stays in its row.
        #expect(doc.items.registers.isEmpty && remote.items.registers.isEmpty)
    }

    @Test("the friendsforever trace gives exactly the final text")
    func friendsForever() throws {
        let trace = try EditingTrace(named: "friendsforever", in: tracesDirectory)
        var doc = try ListDocument.make(1, sections: [[]])
        try Self.replay(trace, on: &doc)
        #expect(Self.text(doc) == trace.finalText)
        try doc.checkInvariants()
    }
}
