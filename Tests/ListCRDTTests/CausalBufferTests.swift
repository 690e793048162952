import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §3.8: operations that arrive before their causes wait in the causal buffer. The
/// buffer looks at each waiting operation once per dependency it lacked (so any delivery order
/// costs O(n log n)), and it is bounded: past its limits an operation is refused with an error that
/// names the limit, and nothing changes.
@Suite("§3.8 the causal buffer: linear in any delivery order, bounded")
struct CausalBufferTests: ScenarioSupport {
    /// One replica's `n` inserts at seeded random rows of one section (the section insert first).
    private func randomInserts(_ n: Int, seed: UInt64, replica: UInt64 = 1) throws -> (ListDocument, [ListOperation]) {
        var rng = SplitMix64(seed: seed)
        var doc = ListDocument(replica: ReplicaID(replica))
        var ops = [try doc.insertSection(at: 0, value: Data("S"))]
        for k in 0..<n {
            let row = Int(rng.next() % UInt64(k + 1))
            ops.append(try doc.insertItem(atRow: row, inSection: 0, value: Data([UInt8(truncatingIfNeeded: k)])))
        }
        return (doc, ops)
    }

    /// Several replicas editing concurrently (inserts, deletes, moves), syncing now and then.
    private func concurrentHistory(seed: UInt64) -> [ListOperation] {
        var rng = SplitMix64(seed: seed)
        var base = ListDocument(replica: ReplicaID(100))
        _ = try? base.insertSection(at: 0, value: Data("S"))
        _ = try? base.insertSection(at: 1, value: Data("T"))
        var docs = (1...3).map { base.fork(as: UInt64($0)) }
        var all = base.operations
        for _ in 0..<300 {
            let r = Int(rng.next() % 3)
            if rng.next() % 5 == 0 {
                let from = Int(rng.next() % 3)
                docs[r].merge(docs[from])
                continue
            }
            let s = Int(rng.next() % 2)
            let n = (try? docs[r].itemCount(inSection: s)) ?? 0
            let op: ListOperation?
            switch rng.next() % 4 {
            case 0 where n > 0: op = try? docs[r].deleteItem(atRow: Int(rng.next() % UInt64(n)), inSection: s)
            case 1 where n > 1:
                op = try? docs[r].moveItem(from: ip(s, Int(rng.next() % UInt64(n))), to: ip(1 - s, 0))
            default: op = try? docs[r].insertItem(atRow: Int(rng.next() % UInt64(n + 1)), inSection: s, value: Data("x"))
            }
            if let op { all.append(op) }
        }
        return all
    }

    @Test("§3.8 one replica's 4,000 inserts received newest first: each waiting operation is looked at once")
    func reverse() throws {
        let (source, ops) = try randomInserts(4_000, seed: 7)
        var doc = ListDocument(replica: ReplicaID(2))
        for op in ops.reversed().dropLast() { #expect(try doc.receive(op) == .buffered) }
        #expect(doc.pendingCount == ops.count - 1)
        #expect(try doc.receive(ops[0]) == .applied(woken: ops.count))
        #expect(doc.pendingCount == 0 && doc.pendingBytes == 0)
        #expect(doc.pendingLooks == ops.count - 1)
        #expect(doc.snapshot() == source.snapshot())
        try doc.checkInvariants()
    }

    @Test("§3.8 seeded random orders of concurrent histories: looks are at most the dependencies, state equal to causal delivery",
          arguments: 0..<20 as Range<UInt64>)
    func shuffled(seed: UInt64) throws {
        let ops = concurrentHistory(seed: seed)
        var inOrder = ListDocument(replica: ReplicaID(9))
        #expect(inOrder.receive(ops).refused.isEmpty)
        var rng = SplitMix64(seed: seed ^ 0xABCD)
        var shuffled = ops
        shuffled.shuffle(using: &rng)
        // Duplicates too: some operations arrive twice.
        for _ in 0..<20 { shuffled.insert(ops[Int(rng.next() % UInt64(ops.count))], at: Int(rng.next() % UInt64(shuffled.count))) }
        var doc = ListDocument(replica: ReplicaID(9))
        for op in shuffled { _ = try doc.receive(op) }
        #expect(doc.pendingCount == 0)
        #expect(doc.pendingLooks <= ops.reduce(0) { $0 + $1.deps.count }, "seed \(seed)")
        #expect(doc.encodedState() == inOrder.encodedState(), "seed \(seed)")
        try doc.checkInvariants()
    }

    @Test("§3.8 past maxOperations an operation is refused with bufferFull(.operations), nothing changes; sent again later it applies")
    func operationLimit() throws {
        let (source, ops) = try randomInserts(30, seed: 3)
        var doc = ListDocument(replica: ReplicaID(2))
        doc.pendingLimits = PendingLimits(maxOperations: 10)
        let late = Array(ops.reversed())   // newest first
        for op in late.prefix(10) { #expect(try doc.receive(op) == .buffered) }
        let before = DocumentFingerprint(doc)
        let looksBefore = doc.pendingLooks
        #expect(throws: ApplyError.bufferFull(late[10].id, .operations(10))) { try doc.receive(late[10]) }
        #expect(DocumentFingerprint(doc) == before)
        #expect(doc.pendingLooks == looksBefore)
        // The error says which limit.
        let message = ApplyError.bufferFull(late[10].id, .operations(10)).description
        #expect(message.contains("10 operations"))
        // The gap arrives in order; the refused operations are sent again (as a sync session does).
        #expect(doc.receive(Array(ops.prefix(ops.count - 10))).refused.isEmpty)
        #expect(doc.pendingCount == 0)
        #expect(doc.snapshot() == source.snapshot())
        try doc.checkInvariants()
    }

    @Test("§3.8 past maxBytes an operation is refused with bufferFull(.bytes), nothing changes")
    func byteLimit() throws {
        var source = ListDocument(replica: ReplicaID(1))
        var ops = [try source.insertSection(at: 0)]
        for k in 0..<5 { ops.append(try source.insertItem(atRow: k, inSection: 0, value: Data(repeating: 7, count: 1_000))) }
        var doc = ListDocument(replica: ReplicaID(2))
        let limit = ops[5].bufferFootprint + ops[4].bufferFootprint
        doc.pendingLimits = PendingLimits(maxBytes: limit)
        #expect(try doc.receive(ops[5]) == .buffered)
        #expect(try doc.receive(ops[4]) == .buffered)
        #expect(doc.pendingBytes == limit)
        let before = DocumentFingerprint(doc)
        #expect(throws: ApplyError.bufferFull(ops[3].id, .bytes(limit))) { try doc.receive(ops[3]) }
        #expect(DocumentFingerprint(doc) == before)
        #expect(doc.receive(Array(ops.prefix(4))).refused.isEmpty)
        #expect(doc.pendingCount == 0 && doc.pendingBytes == 0)
        #expect(doc.snapshot() == source.snapshot())
    }

    @Test("§3.8 an operation waiting on two replicas is filed under one, then the other, and applies once both arrived")
    func twoDependencies() throws {
        var base = ListDocument(replica: ReplicaID(1))
        try base.insertSection(at: 0)
        var a = base.fork(as: 2), b = base.fork(as: 3), c = base.fork(as: 4)
        let x = try a.insertItem(atRow: 0, inSection: 0, value: Data("x"))
        let y = try b.insertItem(atRow: 0, inSection: 0, value: Data("y"))
        try c.receive(x)
        try c.receive(y)
        let z = try c.insertItem(atRow: 1, inSection: 0, value: Data("z"))
        #expect(z.deps.count == 2)
        // z waits under its first missing dependency; the other one arriving first wakes nothing.
        for (first, second) in [(x, y), (y, x)] {
            var doc = base.fork(as: 5)
            #expect(try doc.receive(z) == .buffered)
            #expect(try doc.receive(first) == .applied(woken: 1))
            #expect(doc.pendingCount == 1)
            #expect(try doc.receive(second) == .applied(woken: 2))
            #expect(doc.pendingCount == 0)
            // Filed under x (the smaller id): looked at when x arrives, and again for y if it is missing then.
            #expect(doc.pendingLooks == (first == x ? 2 : 1))
            #expect(doc.snapshot() == c.snapshot())
        }
    }

    /// A replica that re-synced (or was restored) goes on from an older operation of its own,
    /// under new counters; what it made on the history it left must never apply, though its
    /// counters may lie above the new ones. Replica 3 makes x, then (after 4's ops up to 22@4)
    /// 23@3, then (after 4's ops up to 30@4) 31@3 on 23@3. Its other copy, holding x and 4's ops
    /// up to 25@4, makes 26@3.
    private func leftHistory() throws -> (base: ListDocument, x: ListOperation, fours: [ListOperation], left: [ListOperation], went: ListOperation) {
        var base = ListDocument(replica: ReplicaID(100))
        try base.insertSection(at: 0)
        var a = base.fork(as: 3)
        let x = try a.insertItem(atRow: 0, inSection: 0, value: Data("x"))
        var d = base.fork(as: 4)
        try d.receive(x)
        var fours: [ListOperation] = []
        for k in 0..<28 { fours.append(try d.insertItem(atRow: 0, inSection: 0, value: Data("d\(k)"))) }
        #expect(fours.first?.id == OpID(counter: 3, replica: ReplicaID(4)) && fours.last?.id == OpID(counter: 30, replica: ReplicaID(4)))
        var other = a
        other.receive(Array(fours.prefix(23)))
        let went = try other.insertItem(atRow: 0, inSection: 0, value: Data("went on"))
        a.receive(Array(fours.prefix(20)))
        let y = try a.insertItem(atRow: 0, inSection: 0, value: Data("left 1"))
        a.receive(Array(fours.dropFirst(20)))
        // At the end, after x: nothing it names is of the history left but its dependency.
        let z = try a.insertItem(atRow: a.itemCount(inSection: 0), inSection: 0, value: Data("left 2"))
        #expect(y.id == OpID(counter: 23, replica: ReplicaID(3)) && went.id == OpID(counter: 26, replica: ReplicaID(3)))
        #expect(z.id == OpID(counter: 31, replica: ReplicaID(3)) && z.deps.ids.contains(y.id))
        return (base, x, fours, [y, z], went)
    }

    @Test("§3.8 an operation of a history its author left is refused, woken from the buffer or arriving after, and changes nothing")
    func historyLeftBehind() throws {
        let (base, x, fours, left, went) = try leftHistory()
        let z = left[1]
        var expected = base.fork(as: 9)
        expected.receive([x] + fours + [went])
        // Woken: z waits for 23@3; 26@3 raises replica 3's counter past it, yet 23@3 never came.
        var woken = base.fork(as: 9)
        woken.receive([x] + fours)
        #expect(try woken.receive(z) == .buffered)
        #expect(try woken.receive(went) == .applied(woken: 1))
        #expect(woken.pendingCount == 0)
        #expect(woken.droppedOperations.map(\.operation) == [z])
        #expect(woken.snapshot() == expected.snapshot())
        #expect(woken.operations.count == expected.operations.count)
        // Arriving after: refused at once, nothing changes.
        var late = expected
        let before = late.encodedState()
        #expect(throws: ApplyError.self) { try late.receive(z) }
        #expect(late.encodedState() == before)
        // The whole history left, in one batch (the run routes): 23@3 is not after replica 3's
        // latest, and 31@3 depends on it.
        var batch = expected
        let report = batch.receive(left)
        #expect(report.applied == 0 && report.refused.count == 2)
        #expect(batch.encodedState() == before && batch.pendingCount == 0)
    }
}
