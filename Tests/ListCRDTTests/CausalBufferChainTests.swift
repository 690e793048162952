import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation

/// Issue 47: the causal buffer keeps a run of one replica's operations (each depending only on the
/// one before) as one chain, encoded, so that many replicas holding long runs that wait at once
/// stay in bounded memory; what it applies, refuses and reports is as before.
@Suite("§3.8 the causal buffer keeps waiting runs as encoded chains")
struct CausalBufferChainTests {
    /// Replica 1 makes the section; replica 2, having received it, types `n` items left to right
    /// and deletes `deletes` of them (a typed run and a delete run). Returns both replicas'
    /// operations and replica 2's document.
    private func typedRun(_ n: Int, deletes: Int = 0) throws -> (section: ListOperation, run: [ListOperation], source: ListDocument) {
        var one = ListDocument(replica: ReplicaID(1))
        let section = try one.insertSection(at: 0, value: Data("S"))
        var two = ListDocument(replica: ReplicaID(2))
        try two.receive(section)
        var run: [ListOperation] = []
        for k in 0..<n { run.append(try two.insertItem(atRow: k, inSection: 0, value: Data([UInt8(97 + k % 26)]))) }
        for _ in 0..<deletes { run.append(try two.deleteItem(atRow: 0, inSection: 0)) }
        return (section, run, two)
    }

    private func chainBytes(_ doc: ListDocument) -> Int {
        doc.memoryBreakdown.filter { $0.name.hasPrefix("buffer.") }.reduce(0) { $0 + $1.bytes }
    }

    @Test("§3.8 10,000 typed inserts and 2,000 deletes waiting for the section: one chain of a few bytes per operation, one look when it wakes")
    func typedRunWaitsEncoded() throws {
        let (section, run, source) = try typedRun(10_000, deletes: 2_000)
        var doc = ListDocument(replica: ReplicaID(3))
        // One receive per operation, as the general path takes them.
        for op in run { #expect(try doc.receive(op) == .buffered) }
        #expect(doc.pendingCount == run.count)
        #expect(doc.pendingBytes == run.reduce(0) { $0 + $1.bufferFootprint })
        // One chain, waiting in one queue entry.
        let queued = doc.memoryBreakdown.first { $0.name == "buffer.queues" }
        #expect(queued?.count == 1)
        // A decoded ListOperation each would be its stride or more per operation.
        let perOperation = Double(chainBytes(doc)) / Double(run.count)
        #expect(perOperation < 8, "\(perOperation) bytes per waiting operation")
        #expect(perOperation * 8 < Double(MemoryLayout<ListOperation>.stride))
        try doc.checkInvariants()
        #expect(doc.pendingOperations == run)
        #expect(try doc.receive(section) == .applied(woken: run.count + 1))
        #expect(doc.pendingCount == 0 && doc.pendingBytes == 0)
        #expect(doc.pendingLooks == 1)
        #expect(doc.snapshot() == source.snapshot())
        try doc.checkInvariants()
    }

    @Test("§3.8 a waiting chain received again is all duplicates; an operation of it with other content is an equivocation and changes nothing")
    func duplicatesAndEquivocation() throws {
        let (section, run, source) = try typedRun(300)
        var doc = ListDocument(replica: ReplicaID(3))
        #expect(doc.receive(run).buffered == run.count)
        let again = doc.receive(run)
        #expect(again.duplicates == run.count && again.buffered == 0 && again.refused.isEmpty)
        for k in [0, 1, 150, 299] {
            #expect(doc.isWaiting(run[k]))
            var forged = run[k]
            forged.kind = .insertItem(section: SectionID(section.id), .init(after: nil, before: nil), value: Data("!"))
            let before = DocumentFingerprint(doc)
            #expect(throws: ApplyError.equivocation(run[k].id)) { try doc.receive(forged) }
            #expect(doc.pendingCount == run.count)
            #expect(DocumentFingerprint(doc) == before)
        }
        #expect(try doc.receive(section) == .applied(woken: run.count + 1))
        #expect(doc.snapshot() == source.snapshot())
        try doc.checkInvariants()
    }

    @Test("§3.8 seeded random orders of several replicas' typing runs: chains form, break and wake; the state equals causal delivery",
          arguments: 0..<12 as Range<UInt64>)
    func shuffledRuns(seed: UInt64) throws {
        // Three replicas type runs of 1-40 items at random rows and delete some, syncing now and then.
        var rng = SplitMix64(seed: seed)
        var base = ListDocument(replica: ReplicaID(100))
        _ = try base.insertSection(at: 0, value: Data("S"))
        var docs = (1...3).map { base.fork(as: UInt64($0)) }
        var all = base.operations
        for _ in 0..<60 {
            let r = rng.below(3)
            if rng.below(3) == 0 { docs[r].merge(docs[rng.below(3)]) }
            let n = try docs[r].itemCount(inSection: 0)
            var row = rng.below(n + 1)
            for _ in 0..<(1 + rng.below(40)) {
                all.append(try docs[r].insertItem(atRow: row, inSection: 0, value: Data("x")))
                row += 1
            }
            for _ in 0..<rng.below(8) {
                let left = try docs[r].itemCount(inSection: 0)
                if left > 0 { all.append(try docs[r].deleteItem(atRow: rng.below(left), inSection: 0)) }
            }
        }
        var inOrder = ListDocument(replica: ReplicaID(9))
        #expect(inOrder.receive(all).refused.isEmpty)
        // Author by author, in a random order of authors, each author's operations in its order,
        // some runs twice: the authors that merged others wait in long chains.
        var order = [100, 1, 2, 3].map { ReplicaID(UInt64($0)) }
        order.shuffle(using: &rng)
        var doc = ListDocument(replica: ReplicaID(9))
        for author in order {
            let ops = all.filter { $0.id.replica == author }
            #expect(doc.receive(ops).refused.isEmpty)
            if rng.below(2) == 0 { #expect(doc.receive(ops).refused.isEmpty) }
            try doc.checkInvariants()
        }
        #expect(doc.pendingCount == 0)
        #expect(doc.pendingLooks <= all.reduce(0) { $0 + $1.deps.count }, "seed \(seed)")
        #expect(doc.encodedState() == inOrder.encodedState(), "seed \(seed)")
    }
}
