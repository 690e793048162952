import Foundation
import Testing
@testable import ListCRDT

/// The receive fast path for inserts typed right after the last applied insert
/// (the run route, `ListDocument.applyInsertRun`): it must give exactly what the general path gives, and
/// must never accept what the general path refuses.
@Suite struct ContinuationTests: ScenarioSupport {
    /// `ops` received one by one by a fresh replica, with and without the fast path.
    func bothWays(_ ops: [ListOperation]) throws -> (fast: ListDocument, general: ListDocument) {
        var fast = ListDocument(replica: ReplicaID(90))
        var general = ListDocument(replica: ReplicaID(91))
        general.fastPaths = false
        for op in ops {
            let a = Result { () throws(ApplyError) in try fast.receive(op) }
            let b = Result { () throws(ApplyError) in try general.receive(op) }
            #expect("\(a)" == "\(b)", "outcomes differ for \(op.id)")
        }
        try valid(fast, general)
        return (fast, general)
    }

    @Test("a typed history loads to the same state with and without the fast path")
    func typedHistory() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        for (k, c) in "hello world, typed left to right".enumerated() {
            try doc.insertItem(at: ip(0, k), value: Data(String(c).utf8))
        }
        try doc.deleteItem(at: ip(0, 5))
        for (k, c) in "-there".enumerated() { try doc.insertItem(at: ip(0, 5 + k), value: Data(String(c).utf8)) }
        let (fast, general) = try bothWays(doc.operations)
        #expect(fast.encodedState() == doc.encodedState())
        #expect(general.encodedState() == doc.encodedState())
    }

    @Test("interleaved typing of two replicas converges through the fast path in every order of runs")
    func interleavedRuns() throws {
        let base = try ListDocument.make(1, sections: [["a", "z"]])
        var p = base.fork(as: 2), q = base.fork(as: 3)
        var runP: [ListOperation] = [], runQ: [ListOperation] = []
        for (k, c) in "ppp".enumerated() { runP.append(try p.insertItem(at: ip(0, 1 + k), value: Data(String(c).utf8))) }
        for (k, c) in "qqq".enumerated() { runQ.append(try q.insertItem(at: ip(0, 1 + k), value: Data(String(c).utf8))) }
        let docs = try everyOrder(base, [runP[0], runQ[0]], expected: [["a", "p", "q", "z"]])
        // Whole runs one after the other, in both orders: runs never interleave (§3.1).
        for order in [runP + runQ, runQ + runP] {
            var d = base.fork(as: 50)
            for op in order { try d.receive(op) }
            try valid(d)
            #expect(d.rows == [["a", "p", "p", "p", "q", "q", "q", "z"]])
        }
        _ = docs
    }

    @Test("a continuation whose origins have a concurrent slot between them is placed by the integration rule")
    func concurrentSlotBetween() throws {
        let base = try ListDocument.make(1, sections: [["a", "z"]])
        var p = base.fork(as: 2), q = base.fork(as: 3)
        let p1 = try p.insertItem(at: ip(0, 1), value: Data("p1".utf8))
        let p2 = try p.insertItem(at: ip(0, 2), value: Data("p2".utf8))
        let q1 = try q.insertItem(at: ip(0, 1), value: Data("q1".utf8))
        // q1's slot sits between p1 and z when p2 arrives right after p1.
        var d = base.fork(as: 60)
        try d.receive(q1)
        try d.receive(p1)
        try d.receive(p2)
        try valid(d)
        var e = base.fork(as: 61)
        for op in [p1, p2, q1] { try e.receive(op) }
        #expect(d.rows == e.rows)
        #expect(d.encodedState() == e.encodedState())
    }

    @Test("a continuation-shaped operation the general checks refuse is refused, and changes nothing")
    func refusedLookalikes() throws {
        var author = ListDocument(replica: ReplicaID(5))
        try author.insertSection(at: 0)
        let first = try author.insertItem(at: ip(0, 0), value: Data("x".utf8))
        let next = try author.insertItem(at: ip(0, 1), value: Data("y".utf8))
        guard case let .insertItem(section, origins, _) = next.kind else { Issue.record("not an insert"); return }

        var receiver = ListDocument(replica: ReplicaID(6), maxValueSize: 4)
        for op in author.operations.dropLast() { try receiver.receive(op) }
        let before = DocumentFingerprint(receiver)
        let lookalikes: [(String, ListOperation)] = [
            ("a value over the limit", ListOperation(id: next.id, deps: next.deps,
                                                     kind: .insertItem(section: section, origins, value: Data(count: 5)))),
            ("an unknown section", ListOperation(id: next.id, deps: next.deps,
                                                 kind: .insertItem(section: SectionID(OpID(counter: 1, replica: ReplicaID(77))),
                                                                   origins, value: Data("y".utf8)))),
            ("a wrong right origin", ListOperation(id: next.id, deps: next.deps,
                                                   kind: .insertItem(section: section,
                                                                     .init(after: origins.after, before: SlotID(first.id)),
                                                                     value: Data("y".utf8)))),
        ]
        for (why, op) in lookalikes {
            var copy = receiver
            #expect(throws: ApplyError.self, "\(why)") { try copy.receive(op) }
            #expect(DocumentFingerprint(copy) == before, "\(why) changed the document")
        }
        try receiver.receive(next)
        #expect(receiver.rows == [["x", "y"]])
    }
}
