import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §3.1: concurrent inserts at one place are all kept, in a deterministic order, and runs
/// typed (or moved) concurrently at one spot never interleave (FugueMax's non-interleaving).
/// The scenarios are the ones of the Fugue paper (Weidner & Kleppmann, "The Art of the Fugue").
@Suite("§3.1 concurrent inserts: deterministic order, no interleaving")
struct InsertOrderTests: ScenarioSupport {
    // MARK: Helpers


    /// Types `text` (one item per character) in section `section` starting at `row`.
    /// Forward: each character after the previous one (left-to-right typing).
    /// Backward: each character at `row`, before the previous one (right-to-left typing); the
    /// characters are typed last-first so that the run reads `text`.
    private func type(_ text: String, at row: Int, section: Int = 0, backward: Bool = false,
                      into doc: inout ListDocument) throws -> [ListOperation] {
        let chars = text.map(String.init)
        var ops: [ListOperation] = []
        if backward {
            for c in chars.reversed() { ops.append(try doc.insertItem(at: ip(section, row), value: Data(c))) }
        } else {
            for (k, c) in chars.enumerated() { ops.append(try doc.insertItem(at: ip(section, row + k), value: Data(c))) }
        }
        try doc.checkInvariants()
        return ops
    }

    private func deliver(_ ops: [ListOperation], to doc: inout ListDocument,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        for op in ops {
            try doc.receive(op)
            try valid(doc, sourceLocation: sourceLocation)
        }
        #expect(doc.pendingCount == 0, sourceLocation: sourceLocation)
    }

    private func text(_ doc: ListDocument, section: Int = 0) -> String { doc.rows[section].joined() }

    /// Whether `run` appears as one contiguous block of `whole`.
    private func contiguous(_ run: String, in whole: String) -> Bool { whole.contains(run) }

    // MARK: Two concurrent inserts

    @Test("§3.1 two concurrent inserts at one place are both kept, in the same order on every replica")
    func twoInserts() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let p = try r1.insertItem(at: ip(0, 1), value: Data("p"))
        let q = try r2.insertItem(at: ip(0, 1), value: Data("q"))
        try deliver([q], to: &r1)
        try deliver([p], to: &r2)
        try deliver([q, p], to: &r3)
        #expect(["apqb", "aqpb"].contains(text(r1)))
        for r in [r2, r3] { #expect(text(r) == text(r1)) }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.1 three concurrent inserts at one place are all kept in one deterministic order, whatever the delivery order")
    func threeInserts() throws {
        let base = try ListDocument.make(1, sections: [["a", "b"]])
        var ops: [ListOperation] = []
        for (k, v) in ["p", "q", "r"].enumerated() {
            var r = base.fork(as: UInt64(k + 1))
            ops.append(try r.insertItem(at: ip(0, 1), value: Data(v)))
        }
        var results: [ListDocument] = []
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            var d = base.fork(as: 9)
            try deliver(order.map { ops[$0] }, to: &d)
            results.append(d)
        }
        let t = text(results[0])
        #expect(t.count == 5 && t.first == "a" && t.last == "b")
        #expect(Set(t) == Set("abpqr"))
        for d in results { #expect(text(d) == t) }
        expectConverged(results)
    }

    // MARK: Forward runs (left-to-right typing)

    @Test("§3.1 two replicas typing \"abc\" and \"xyz\" at the same place never interleave (empty list)")
    func forwardRunsEmpty() throws {
        var r1 = try ListDocument.make(1, sections: [[]])
        var r2 = r1.fork(as: 2)
        let o1 = try type("abc", at: 0, into: &r1)
        let o2 = try type("xyz", at: 0, into: &r2)
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        #expect(["abcxyz", "xyzabc"].contains(text(r1)), "got \(text(r1))")
        #expect(text(r2) == text(r1))
        expectConverged([r1, r2])
    }

    @Test("§3.1 two replicas typing \"abc\" and \"xyz\" between the same two items never interleave")
    func forwardRunsMiddle() throws {
        var r1 = try ListDocument.make(1, sections: [["L", "R"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let o1 = try type("abc", at: 1, into: &r1)
        let o2 = try type("xyz", at: 1, into: &r2)
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        // r3 gets them interleaved op by op
        try deliver([o1[0], o2[0], o1[1], o2[1], o1[2], o2[2]], to: &r3)
        #expect(["LabcxyzR", "LxyzabcR"].contains(text(r1)), "got \(text(r1))")
        for r in [r2, r3] { #expect(text(r) == text(r1)) }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.1 three replicas typing \"abc\", \"xyz\" and \"123\" at one place never interleave")
    func forwardRunsThree() throws {
        var r1 = try ListDocument.make(1, sections: [["L", "R"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let o1 = try type("abc", at: 1, into: &r1)
        let o2 = try type("xyz", at: 1, into: &r2)
        let o3 = try type("123", at: 1, into: &r3)
        try deliver(o2 + o3, to: &r1)
        try deliver(o3 + o1, to: &r2)
        try deliver(o1 + o2, to: &r3)
        let t = text(r1)
        for run in ["abc", "xyz", "123"] { #expect(contiguous(run, in: t), "\(run) interleaved in \(t)") }
        #expect(t.hasPrefix("L") && t.hasSuffix("R") && t.count == 11)
        for r in [r2, r3] { #expect(text(r) == t) }
        expectConverged([r1, r2, r3])
    }

    // MARK: Backward runs (right-to-left typing)

    @Test("§3.1 runs typed right to left at one place never interleave (the backward-interleaving anomaly of RGA)")
    func backwardRuns() throws {
        var r1 = try ListDocument.make(1, sections: [[]])
        var r2 = r1.fork(as: 2)
        let o1 = try type("abc", at: 0, backward: true, into: &r1)
        let o2 = try type("xyz", at: 0, backward: true, into: &r2)
        #expect(text(r1) == "abc")
        #expect(text(r2) == "xyz")
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        #expect(["abcxyz", "xyzabc"].contains(text(r1)), "got \(text(r1))")
        #expect(text(r2) == text(r1))
        expectConverged([r1, r2])
    }

    @Test("§3.1 runs typed right to left between the same two items never interleave, in any delivery interleaving")
    func backwardRunsMiddle() throws {
        var r1 = try ListDocument.make(1, sections: [["L", "R"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let o1 = try type("abcd", at: 1, backward: true, into: &r1)
        let o2 = try type("wxyz", at: 1, backward: true, into: &r2)
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        try deliver([o2[0], o1[0], o2[1], o1[1], o2[2], o1[2], o2[3], o1[3]], to: &r3)
        #expect(["LabcdwxyzR", "LwxyzabcdR"].contains(text(r1)), "got \(text(r1))")
        for r in [r2, r3] { #expect(text(r) == text(r1)) }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.1 a run typed left to right and one typed right to left at one place never interleave")
    func forwardVsBackward() throws {
        var r1 = try ListDocument.make(1, sections: [["L", "R"]])
        var r2 = r1.fork(as: 2)
        let o1 = try type("abc", at: 1, into: &r1)
        let o2 = try type("xyz", at: 1, backward: true, into: &r2)
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        #expect(["LabcxyzR", "LxyzabcR"].contains(text(r1)), "got \(text(r1))")
        #expect(text(r2) == text(r1))
        expectConverged([r1, r2])
    }

    @Test("§3.1 a run continued after syncing stays contiguous with its start; the other replica's run stays whole")
    func runContinuedAfterSync() throws {
        var r1 = try ListDocument.make(1, sections: [["L", "R"]])
        var r2 = r1.fork(as: 2)
        let o1 = try type("ab", at: 1, into: &r1)
        let o2 = try type("xy", at: 1, into: &r2)
        try deliver(o2, to: &r1)
        try deliver(o1, to: &r2)
        // each continues its own run right after its last character
        let afterB = r1.indexPath(of: try #require(r1.item("b")))!.item + 1
        let afterY = r2.indexPath(of: try #require(r2.item("y")))!.item + 1
        let o3 = try type("c", at: afterB, into: &r1)
        let o4 = try type("z", at: afterY, into: &r2)
        try deliver(o4, to: &r1)
        try deliver(o3, to: &r2)
        #expect(["LabcxyzR", "LxyzabcR"].contains(text(r1)), "got \(text(r1))")
        expectConverged([r1, r2])
    }

    @Test("§3.1 seeded: concurrent forward and backward runs at one place never interleave and converge in any delivery order")
    func runsFuzz() throws {
        let alphabets = ["abcdef", "ghijkl", "mnopqr"]
        for seed in UInt64(1)...60 {
            var rng = SplitMix64(seed: seed)
            let baseRows = ["A", "B", "C", "D"]
            let base = try ListDocument.make(1, sections: [baseRows])
            let row = rng.below(baseRows.count + 1)
            var replicas = (0..<3).map { base.fork(as: UInt64($0 + 1)) }
            var runs: [[ListOperation]] = []
            var texts: [String] = []
            for k in 0..<3 {
                let t = String(alphabets[k].prefix(1 + rng.below(6)))
                texts.append(t)
                runs.append(try type(t, at: row, backward: rng.chance(50), into: &replicas[k]))
            }
            // each replica receives the others' runs, op by op, in a random interleaving
            var results: [ListDocument] = []
            for k in 0..<3 {
                var queues = (0..<3).filter { $0 != k }.map { runs[$0] }
                var doc = replicas[k]
                while queues.contains(where: { !$0.isEmpty }) {
                    let nonEmpty = queues.indices.filter { !queues[$0].isEmpty }
                    let q = nonEmpty[rng.below(nonEmpty.count)]
                    try doc.receive(queues[q].removeFirst())
                    try valid(doc)
                }
                results.append(doc)
            }
            // and an observer gets everything shuffled (out of causal order: it buffers)
            var all = runs.flatMap { $0 }
            all.shuffle(using: &rng)
            var observer = base.fork(as: 9)
            for op in all { try observer.receive(op); try valid(observer) }
            #expect(observer.pendingCount == 0)
            results.append(observer)

            let whole = text(results[0])
            for t in texts { #expect(contiguous(t, in: whole), "seed \(seed): \(t) interleaved in \(whole)") }
            #expect(whole.filter { "ABCD".contains($0) } == "ABCD", "seed \(seed): \(whole)")
            for d in results { #expect(text(d) == whole, "seed \(seed)") }
            expectConverged(results)
        }
    }

    // MARK: Multi-item moves stay contiguous

    @Test("§3.1 a multi-item move lands contiguous even with a concurrent insert at the same place")
    func selectionVsInsert() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "x", "y"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let m1 = try r1.moveItems([r1.item("a")!, r1.item("b")!, r1.item("c")!], to: ip(0, 1))   // [x a b c y]
        let i2 = try r2.insertItem(at: ip(0, 4), value: Data("q"))                               // [a b c x q y]
        try deliver([i2], to: &r1)
        try deliver([m1], to: &r2)
        try deliver([i2, m1], to: &r3)
        #expect(["xabcqy", "xqabcy"].contains(text(r1)), "got \(text(r1))")
        for r in [r2, r3] { #expect(text(r) == text(r1)) }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.1 two multi-item moves to the same place both land contiguous, in selection order")
    func twoSelectionsSamePlace() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "x", "y"]])
        var r2 = r1.fork(as: 2)
        let m1 = try r1.moveItems([r1.item("b")!, r1.item("a")!], to: ip(0, 3))   // [c d x b a y]
        let m2 = try r2.moveItems([r2.item("c")!, r2.item("d")!], to: ip(0, 3))   // [a b x c d y]
        #expect(text(r1) == "cdxbay")
        #expect(text(r2) == "abxcdy")
        try deliver([m2], to: &r1)
        try deliver([m1], to: &r2)
        #expect(["xbacdy", "xcdbay"].contains(text(r1)), "got \(text(r1))")
        #expect(text(r2) == text(r1))
        expectConverged([r1, r2])
    }

    @Test("§3.1 a multi-item move and a run typed concurrently at the same place never interleave")
    func selectionVsTypedRun() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"], ["L", "R"]])
        var r2 = r1.fork(as: 2)
        let m1 = try r1.moveItems([r1.item("a")!, r1.item("b")!, r1.item("c")!], to: ip(1, 1))   // [] [L a b c R]
        let o2 = try type("xyz", at: 1, section: 1, into: &r2)
        try deliver(o2, to: &r1)
        try deliver([m1], to: &r2)
        let t = text(r1, section: 1)
        #expect(["LabcxyzR", "LxyzabcR"].contains(t), "got \(t)")
        #expect(r1.rows[0].isEmpty)
        expectConverged([r1, r2])
    }

    @Test("§3.1 a multi-item move and a backward-typed run at the same place never interleave")
    func selectionVsBackwardRun() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "L", "R"]])
        var r2 = r1.fork(as: 2)
        let m1 = try r1.moveItems([r1.item("a")!, r1.item("b")!, r1.item("c")!], to: ip(0, 1))   // [L a b c R]
        let o2 = try type("xyz", at: 4, backward: true, into: &r2)                                 // [a b c L x y z R]
        try deliver(o2, to: &r1)
        try deliver([m1], to: &r2)
        #expect(["LabcxyzR", "LxyzabcR"].contains(text(r1)), "got \(text(r1))")
        expectConverged([r1, r2])
    }
}
