import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// Typed runs in a received batch are applied in one step (the run route, `ListDocument.applyInsertRun`). The
/// result must be exactly what receiving the operations one at a time through the general path
/// gives: the same state bytes, log, version, frontier, buffer and errors.
@Suite struct InsertRunBatchTests: ScenarioSupport {
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
