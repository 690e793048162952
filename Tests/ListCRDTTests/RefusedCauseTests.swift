import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT

/// A compacted copy and the operations that depend on one it refused for its floor
/// (`Compaction/ListDocument+RefusedCauses.swift`, Docs/Semantics.md §7): they never apply here,
/// so they are refused or dropped, never kept waiting for ever.
@Suite struct RefusedCauseTests {
    /// Replica 1 compacted past three edits replica 3 made offline, one on another.
    func compactedWithLateEdits() throws -> (compacted: ListDocument, late: [ListOperation]) {
        let a = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var docs = [a, a.fork(as: 2), a.fork(as: 3)]
        var late: [ListOperation] = []
        late.append(try docs[2].insertItem(at: IndexPath(item: 2, section: 0), value: Data("late 1".utf8)))
        late.append(try docs[2].insertItem(at: IndexPath(item: 3, section: 0), value: Data("late 2".utf8)))
        late.append(try docs[2].deleteItem(at: IndexPath(item: 0, section: 0)))
        for _ in 0..<2 {
            let op = try docs[0].deleteItem(at: IndexPath(item: 1, section: 0))
            try docs[1].receive(op)
        }
        try docs[0].compact(stable: docs[0].version)
        return (docs[0], late)
    }

    @Test("operations on one refused for the floor are refused with it, in order")
    func dependentsRefusedInOrder() throws {
        var (doc, late) = try compactedWithLateEdits()
        let state = doc.encodedState()
        let report = doc.receive(late)
        #expect(report.refused.count == 3, "\(report)")
        #expect(doc.pendingCount == 0)
        #expect(doc.encodedState() == state)
        // One of replica 3's that comes later, made on the last of them, is refused too.
        let later = ListOperation(id: OpID(counter: late[2].lastID.counter + 1, replica: ReplicaID(3)),
                                  deps: Frontier([late[2].lastID]), kind: late[2].kind)
        #expect(throws: ApplyError.self) { try doc.receive(later) }
        #expect(doc.pendingCount == 0)
    }

    @Test("operations already waiting for one refused for the floor are dropped when it is refused")
    func waitingDependentsDropped() throws {
        var (doc, late) = try compactedWithLateEdits()
        let state = doc.encodedState()
        #expect(try doc.receive(late[2]) == .buffered)
        #expect(try doc.receive(late[1]) == .buffered)
        #expect(doc.pendingCount == 2)
        #expect(throws: ApplyError.self) { try doc.receive(late[0]) }
        #expect(doc.pendingCount == 0)
        #expect(Set(doc.droppedOperations.map(\.operation.id)) == [late[1].id, late[2].id])
        #expect(doc.encodedState() == state)
        try doc.checkInvariants()
    }

    @Test("an operation waiting for a cause not refused keeps waiting, and applies when it comes")
    func otherWaitingKept() throws {
        var (doc, late) = try compactedWithLateEdits()
        var other = try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(2))
        let first = try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("after 1".utf8))
        let second = try other.insertItem(at: IndexPath(item: 1, section: 0), value: Data("after 2".utf8))
        #expect(try doc.receive(second) == .buffered)
        #expect(doc.receive(late).refused.count == 3)
        #expect(doc.pendingCount == 1)
        #expect(try doc.receive(first) == .applied(woken: 2))
        #expect(doc.pendingCount == 0)
        #expect(doc.snapshot() == other.snapshot())
    }
}
