import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// The insert run route of Document/FastPaths/README.md (`applyInsertRun`), over arrays of operations
/// (one at a time and as batches), each compared with the general path.
@Suite("The insert run route against the general path") struct InsertRunRouteTests {
    /// The receive fast path for inserts typed right after the last applied insert
    /// (the run route, `ListDocument.applyInsertRun`): it must give exactly what the general path gives, and
    /// must never accept what the general path refuses.
    @Suite struct OneAtATime: ScenarioSupport {
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

    /// Typed runs in a received batch are applied in one step (the run route, `ListDocument.applyInsertRun`). The
    /// result must be exactly what receiving the operations one at a time through the general path
    /// gives: the same state bytes, log, version, frontier, buffer and errors.
    @Suite struct Batches: ScenarioSupport {
        @Test("a typed history in one batch gives what one operation at a time gives")
        func typedHistory() throws {
            var doc = try ListDocument.make(1, sections: [["a", "z"]])
            let base = ListDocument(replica: ReplicaID(99))
            _ = try type(&doc, "hello world", at: 1)
            try doc.deleteItem(at: ip(0, 3))
            _ = try type(&doc, "-there-", at: 3)
            _ = try type(&doc, "end", at: try doc.itemCount(inSection: 0))
            let loaded = try bothWays(base, doc.operations)
            #expect(loaded.rows == doc.rows)
        }

        @Test("concurrent runs of several replicas, in batches of random causal orders, give what one at a time gives")
        func concurrentRunsFuzz() throws {
            for seed in UInt64(1)...40 {
                var rng = SplitMix64(seed: seed)
                let base = try ListDocument.make(1, sections: [["a", "m", "z"]])
                var replicas = (2...4).map { base.fork(as: UInt64($0)) }
                var all: [ListOperation] = []
                for _ in 0..<12 {
                    let r = Int(rng.next() % 3)
                    let n = try replicas[r].itemCount(inSection: 0)
                    let run = try type(&replicas[r], String(repeating: "x", count: 1 + Int(rng.next() % 6)),
                                       at: Int(rng.next() % UInt64(n + 1)))
                    all += run
                    if rng.next() % 3 == 0 {
                        // Sometimes a peer sees another's run before typing on.
                        let other = (r + 1) % 3
                        replicas[other].receive(run)
                    }
                }
                // A random order that keeps each replica's operations in order (the others may be
                // buffered), with some duplicates.
                var queues = (2...4).map { r in all.filter { $0.id.replica == ReplicaID(UInt64(r)) } }
                var order: [ListOperation] = []
                while queues.contains(where: { !$0.isEmpty }) {
                    let q = Int(rng.next() % 3)
                    guard !queues[q].isEmpty else { continue }
                    let take = min(queues[q].count, 1 + Int(rng.next() % 5))
                    order += queues[q].prefix(take)
                    if rng.next() % 4 == 0, let dup = queues[q].first { order.append(dup) }
                    queues[q].removeFirst(take)
                }
                let loaded = try bothWays(base.fork(as: 1), order)
                #expect(loaded.pendingCount == 0, "seed \(seed)")
            }
        }

        @Test("a batch run stops at an operation the general checks refuse, which changes nothing")
        func refusedInsideRun() throws {
            var author = try ListDocument.make(1, sections: [["a", "z"]])
            let run = try type(&author, "abcdef", at: 1)
            let base = try ListDocument.make(1, sections: [["a", "z"]])
            guard case let .insertItem(section, origins, _) = run[3].kind else { Issue.record("not an insert"); return }
            let tooBig = ListOperation(id: run[3].id, deps: run[3].deps,
                                       kind: .insertItem(section: section, origins, value: Data(count: 70_000)))
            // The operation after the refused one waits for it; the original then fills the gap.
            let loaded = try bothWays(base, Array(run[0..<3]) + [tooBig] + Array(run[4...]) + [run[3]])
            #expect(loaded.rows == [["a", "a", "b", "c", "d", "e", "f", "z"]])
        }

        @Test("a run whose first operation waits for a dependency is buffered, then applied when it arrives")
        func bufferedRun() throws {
            var author = try ListDocument.make(1, sections: [["a", "z"]])
            let first = try type(&author, "12", at: 1)
            let run = try type(&author, "3456", at: 3)
            let base = try ListDocument.make(1, sections: [["a", "z"]])
            try bothWays(base, run + first)
            try bothWays(base, [run[0]] + first + Array(run[1...]))
        }

        @Test("a run that follows an operation which woke buffered ones is applied one at a time")
        func runAfterWake() throws {
            let base = try ListDocument.make(1, sections: [["a", "z"]])
            var p = base.fork(as: 2), q = base.fork(as: 3)
            let p1 = try type(&p, "pp", at: 1)
            q.receive(p1)
            // q types right after p's run, so q's run depends on p1's last operation.
            let q1 = try type(&q, "qqq", at: 3)
            let p2 = try type(&p, "PP", at: 3)
            try bothWays(base, q1 + p1 + p2)
        }
    }
}
