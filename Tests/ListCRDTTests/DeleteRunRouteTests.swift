import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Delete runs (backspaces, forward deletes) in a received batch are applied in one step
/// (the run route, `ListDocument.applyDeleteRun`). The result must be exactly what receiving the operations one
/// at a time through the general path gives: the same state bytes, log, version, frontier, buffer
/// and errors.
@Suite(.cpuHeavy) struct DeleteRunRouteTests: ScenarioSupport {
    /// How many operations of `ops` continue a delete run (so the fast path has work to do).
    func continuations(_ ops: [ListOperation]) -> Int {
        zip(ops, ops.dropFirst()).filter {
            ListOperation.continuesDeleteRun($0, $1, step: 1) || ListOperation.continuesDeleteRun($0, $1, step: -1)
        }.count
    }


    /// `n` backspaces with the cursor after row `row - 1` of `section`.
    func backspace(_ doc: inout ListDocument, _ n: Int, at row: Int, section: Int = 0) throws -> [ListOperation] {
        try (0..<n).map { k in try doc.deleteItem(at: ip(section, row - 1 - k)) }
    }

    /// `n` forward deletes with the cursor before row `row` of `section`.
    func forwardDelete(_ doc: inout ListDocument, _ n: Int, at row: Int, section: Int = 0) throws -> [ListOperation] {
        try (0..<n).map { _ in try doc.deleteItem(at: ip(section, row)) }
    }

    func lookalike(_ op: ListOperation, item: OpID) -> ListOperation {
        ListOperation(id: op.id, deps: op.deps, kind: .deleteItem(ItemID(item), seen: SlotID(item)))
    }

    @Test("backspace and forward-delete runs from local edits, in one batch, give what one operation at a time gives")
    func localRuns() throws {
        var doc = try ListDocument.make(1, sections: [["a", "z"]])
        let base = ListDocument(replica: ReplicaID(99))
        _ = try type(&doc, "hello brave new world", at: 1)
        var deletes = try backspace(&doc, 5, at: 22)          // "world"
        deletes += try forwardDelete(&doc, 6, at: 1)          // "hello "
        _ = try type(&doc, "HELLO", at: 1)
        deletes += try backspace(&doc, 3, at: 6)              // "LLO"
        deletes += try forwardDelete(&doc, 4, at: 3)          // "brav"
        #expect(continuations(deletes) >= 14)
        let loaded = try bothWays(base, doc.operations)
        #expect(loaded.rows == doc.rows)
        #expect(loaded.rows == [["a", "H", "E", "e", " ", "n", "e", "w", " ", "z"]])
        // The runs alone, on a replica that has the text.
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        _ = try type(&author, String(repeating: "0123456789", count: 8), at: 1)
        let textBase = author.fork(as: 2)
        let runs = try backspace(&author, 30, at: 61) + forwardDelete(&author, 20, at: 5)
        #expect(continuations(runs) == 48)
        let received = try bothWays(textBase, runs)
        #expect(received.rows == author.rows)
    }

    /// A typed run longer than `SlotForest.maxEntryLength` is several tree entries, so a delete
    /// run over it hides one piece per entry (`SlotForest.hideRange`).
    @Test("delete runs across the tree entries of one long typed run match the general path")
    func runsAcrossEntryLimit() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let n = 3 * SlotForest.maxEntryLength + 7
        _ = try type(&author, String(repeating: "abcdefghij", count: n / 10 + 1), at: 1)
        let textBase = author.fork(as: 2)
        let runs = try backspace(&author, 2 * SlotForest.maxEntryLength + 3, at: n - 4)
            + forwardDelete(&author, SlotForest.maxEntryLength / 2 + 9, at: 3)
        #expect(continuations(runs) == runs.count - 2)
        let received = try bothWays(textBase, runs)
        #expect(received.rows == author.rows)
    }

    @Test("long runs over text typed in many pieces (entries in several leaves) match the general path")
    func runsOverFragmentedText() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        var rng = SplitMix64(seed: 7)
        // Pieces typed at random places, so the sequence is many entries in several leaves.
        for _ in 0..<120 {
            let n = try author.itemCount(inSection: 0)
            _ = try type(&author, String(repeating: "x", count: 1 + Int(rng.next() % 5)), at: 1 + Int(rng.next() % UInt64(n - 1)))
        }
        // A long typed run in the middle, deleted in runs both ways, with some hidden slots around.
        let mid = try author.itemCount(inSection: 0) / 2
        _ = try type(&author, String(repeating: "abcdefghij", count: 10), at: mid)
        let textBase = author.fork(as: 2)
        var ops = try forwardDelete(&author, 3, at: mid + 50)
        ops += try backspace(&author, 40, at: mid + 50)
        ops += try forwardDelete(&author, 20, at: mid)
        ops += try backspace(&author, 3, at: mid + 2)
        #expect(continuations(ops) >= 60)
        let received = try bothWays(textBase, ops)
        #expect(received.rows == author.rows)
    }

    @Test("a run over an item moved earlier, or deleted by someone else, matches the general path")
    func runOverMovedAndDeleted() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        _ = try type(&author, "abcdefghij", at: 1)
        let textBase = author.fork(as: 2)
        var mover = author.fork(as: 2), deleter = author.fork(as: 3)
        // "d" moves to the start; "g" is deleted by replica 3 (seeing its insert slot).
        let move = try #require(try mover.moveItem(from: ip(0, 4), to: ip(0, 0)))
        let delete = try deleter.deleteItem(at: ip(0, 7))
        // Concurrently, the author backspaces over all of it and forward deletes again.
        let runs = try backspace(&author, 8, at: 11) + forwardDelete(&author, 2, at: 1)
        #expect(continuations(runs) == 8)
        let received = try bothWays(textBase, [move, delete] + runs)
        // The moved "d" survives (the author's delete saw only its insert slot).
        #expect(received.rows == [["d", "a", "z"]])
        // The other way round: the run first, then the move and the delete.
        try bothWays(textBase, runs + [move, delete])
        // A run over an item the receiver moved itself, and over items it already deleted.
        var receiver = textBase.fork(as: 4)
        _ = try receiver.moveItem(from: ip(0, 3), to: ip(0, 11))
        _ = try receiver.deleteItem(at: ip(0, 6))
        _ = try receiver.deleteItem(at: ip(0, 5))
        let loaded = try bothWays(receiver, runs)
        #expect(loaded.rows == [["a", "z", "c"]])
    }

    /// A delete by `replica` with this counter, depending on `deps`, of item `item` as seen at its
    /// id (what a delete run's operation looks like).
    func delete(_ replica: UInt64, _ counter: UInt64, after deps: [OpID], item: OpID) -> ListOperation {
        ListOperation(id: OpID(counter: counter, replica: ReplicaID(replica)), deps: Frontier(deps),
                      kind: .deleteItem(ItemID(item), seen: SlotID(item)))
    }

    @Test("a lookalike run whose item in the middle is unknown, not an item's insert slot, or out of range is refused there as before")
    func refusedInsideRun() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let typed = try type(&author, "abcdefgh", at: 1)
        let textBase = author.fork(as: 2)
        let r1 = { (counter: UInt64) in OpID(counter: counter, replica: ReplicaID(1)) }
        // Section 1, items "a" 2 and "z" 3, typed items 4 ... 11.
        #expect(typed[0].id == r1(4) && typed[7].id == r1(11))
        var copy = author
        let run = try backspace(&copy, 8, at: 9)  // ops 12 ... 19 delete items 11 ... 4
        #expect(continuations(run) == 7)

        // An unknown item in the middle: the same error; the rest waits for the refused one.
        var ops = run
        ops[3] = lookalike(run[3], item: r1(7_000))
        #expect(continuations(Array(ops[0...3])) == 2)
        try bothWays(textBase, ops)
        // The original arrives after all: it fills the gap and the rest applies.
        let filled = try bothWays(textBase, ops + [run[3]])
        #expect(filled.rows == [["a", "z"]])

        // A run that steps from the typed items onto "z", "a" and then the section (not an item).
        let down = run + [delete(1, 20, after: [r1(19)], item: r1(3)), delete(1, 21, after: [r1(20)], item: r1(2)),
                          delete(1, 22, after: [r1(21)], item: r1(1)), delete(1, 23, after: [r1(22)], item: r1(0))]
        #expect(continuations(down) == 11)
        try bothWays(textBase, down)
        // A forward-delete lookalike stepping past the last typed item onto the run's own first
        // operation (an id, but no slot) and beyond.
        let up = [delete(3, 20, after: [], item: r1(9)), delete(3, 21, after: [OpID(counter: 20, replica: ReplicaID(3))], item: r1(10)),
                  delete(3, 22, after: [OpID(counter: 21, replica: ReplicaID(3))], item: r1(11)),
                  delete(3, 23, after: [OpID(counter: 22, replica: ReplicaID(3))], item: r1(12))]
        #expect(continuations(up) == 3)
        try bothWays(textBase, up)

        // A move slot's id in the middle (a slot of an item, but not its insert slot).
        var mover = author
        _ = try #require(try mover.moveItem(from: ip(0, 2), to: ip(0, 6)))   // op 12
        let moveBase = mover.fork(as: 2)
        let overMove = [delete(1, 13, after: [r1(12)], item: r1(10)), delete(1, 14, after: [r1(13)], item: r1(11)),
                        delete(1, 15, after: [r1(14)], item: r1(12)), delete(1, 16, after: [r1(15)], item: r1(13))]
        #expect(continuations(overMove) == 3)
        try bothWays(moveBase, overMove)

        // A counter over the limit in the middle of a run.
        let top = OpID.maxCounter
        let r3 = { (counter: UInt64) in OpID(counter: counter, replica: ReplicaID(3)) }
        let over = [delete(3, top - 2, after: [], item: r1(4)), delete(3, top - 1, after: [r3(top - 2)], item: r1(5)),
                    delete(3, top, after: [r3(top - 1)], item: r1(6)), delete(3, top + 1, after: [r3(top)], item: r1(7)),
                    delete(3, top + 2, after: [r3(top + 1)], item: r1(8))]
        #expect(continuations(over) == 4)
        let overLoaded = try bothWays(textBase, over)
        #expect(overLoaded.rows == [["a", "d", "e", "f", "g", "h", "z"]])

        // A forward reference: the first delete refers to an item after it (refused), and the
        // rest, which depend on it, wait.
        var forward = run
        forward[0] = lookalike(run[0], item: r1(12))
        try bothWays(textBase, forward)

        // Right after the typing, in the same batch: a run that starts at the first delete after
        // the typed run, whose first or second delete is a lookalike.
        let fresh = try ListDocument.make(1, sections: [["a", "z"]])
        let whole = try bothWays(fresh, typed + run)
        #expect(whole.rows == [["a", "z"]])
        for (k, item) in [(0, r1(7_000)), (0, r1(1)), (0, r1(12)), (1, r1(7_000)), (1, r1(1))] {
            var ops = run
            ops[k] = lookalike(run[k], item: item)
            try bothWays(fresh, typed + ops)
        }
        // A first delete that saw another slot than the item's insert slot (the general path).
        var seenOther = run
        seenOther[0] = ListOperation(id: run[0].id, deps: run[0].deps,
                                     kind: .deleteItem(ItemID(r1(11)), seen: SlotID(r1(10))))
        try bothWays(fresh, typed + seenOther)
        try bothWays(fresh, typed + [run[0]])
    }

    @Test("runs across sections, one of them hidden when its last live item goes, match the general path")
    func runsAcrossSections() throws {
        let start = try ListDocument.make(1, sections: [["x"], ["y"], []])
        var author = start
        var sectionDeleter = start.fork(as: 2)
        // Replica 2 deletes section 1 (and "y", which it saw).
        let deleteSection = try sectionDeleter.deleteSection(at: 1)
        // Concurrently the author types in sections 0, 1 and 2, one right after the other, then
        // deletes the typed items newest first: one run of item counters across the sections.
        let a = try type(&author, "abc", at: 1, section: 0)
        let b = try type(&author, "def", at: 1, section: 1)
        let c = try type(&author, "ghi", at: 0, section: 2)
        var back: [ListOperation] = []
        for op in (a + b + c).reversed() { back.append(try author.deleteItem(ItemID(op.id))) }
        // And forward again over a new run typed across sections 0 and 2.
        let d = try type(&author, "jk", at: 1, section: 0)
        let e = try type(&author, "lm", at: 0, section: 2)
        var forward: [ListOperation] = []
        for op in d + e { forward.append(try author.deleteItem(ItemID(op.id))) }
        #expect(continuations(back) == 8 && continuations(forward) == 3)
        let typed = a + b + c
        let loaded = try bothWays(start, [deleteSection] + typed + back + d + e + forward)
        // Section 1 was deleted and its last live items are gone: it is hidden.
        #expect(loaded.rows == [["x"], []])
        try bothWays(start, typed + back + d + e + forward + [deleteSection])
        try bothWays(start, typed + [deleteSection] + back + d + e + forward)
        // Out of causal order: the later operations wait for the runs.
        try bothWays(start, [deleteSection] + typed + d + e + back + forward)
    }

    @Test("delete runs of several replicas, in batches of random causal orders with duplicates, match the general path")
    func concurrentRunsFuzz() throws {
        for seed in UInt64(1)...40 {
            var rng = SplitMix64(seed: seed)
            let base = try ListDocument.make(1, sections: [["a", "m", "z"], ["b", "y"]])
            var replicas = (2...4).map { base.fork(as: UInt64($0)) }
            var all: [ListOperation] = []
            for _ in 0..<16 {
                let r = Int(rng.next() % 3)
                let s = Int(rng.next() % 2)
                let n = try replicas[r].itemCount(inSection: s)
                var ops: [ListOperation] = []
                switch rng.next() % 5 {
                case 0, 1:
                    ops = try type(&replicas[r], String(repeating: "x", count: 1 + Int(rng.next() % 8)),
                                   at: Int(rng.next() % UInt64(n + 1)), section: s)
                case 2:
                    if n > 0 {
                        let row = 1 + Int(rng.next() % UInt64(n))
                        ops = try backspace(&replicas[r], 1 + Int(rng.next() % UInt64(row)), at: row, section: s)
                    }
                case 3:
                    if n > 0 {
                        let row = Int(rng.next() % UInt64(n))
                        ops = try forwardDelete(&replicas[r], 1 + Int(rng.next() % UInt64(n - row)), at: row, section: s)
                    }
                default:
                    if n > 1, let op = try replicas[r].moveItem(from: ip(s, Int(rng.next() % UInt64(n))),
                                                               to: ip(s, Int(rng.next() % UInt64(n)))) {
                        ops = [op]
                    }
                }
                all += ops
                if rng.next() % 3 == 0 {
                    // Sometimes a peer sees another's edits before going on.
                    let other = (r + 1 + Int(rng.next() % 2)) % 3
                    replicas[other].receive(ops)
                }
            }
            // A random order that keeps each replica's operations in order (the others may be
            // buffered), with some duplicates.
            var queues = (2...4).map { r in all.filter { $0.id.replica == ReplicaID(UInt64(r)) } }
            var order: [ListOperation] = []
            while queues.contains(where: { !$0.isEmpty }) {
                let q = Int(rng.next() % 3)
                guard !queues[q].isEmpty else { continue }
                let take = min(queues[q].count, 1 + Int(rng.next() % 12))
                order += queues[q].prefix(take)
                if rng.next() % 4 == 0, let dup = queues[q].prefix(take).randomElement(using: &rng) { order.append(dup) }
                queues[q].removeFirst(take)
            }
            let loaded = try bothWays(base.fork(as: 1), order)
            #expect(loaded.pendingCount == 0, "seed \(seed)")
            // Everything in one replica's causal order (each replica's own log) as well.
            for r in replicas { try bothWays(base.fork(as: 1), r.operations) }
        }
    }

    @Test("the automerge-paper history loads the same with delete runs as one operation at a time")
    func automergePaperHistory() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var doc = try ListDocument.make(1, sections: [[]])
        try TraceTests.replay(trace, on: &doc)
        let ops = doc.operations
        #expect(continuations(ops) > 50_000)
        let loaded = try bothWays(ListDocument(replica: ReplicaID(99)), ops)
        #expect(loaded.encodedState() == doc.encodedState())
        #expect(try loaded.itemCount(inSection: 0) == 104_852)
        // And through the wire format, as a snapshot.
        let snap = try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(98))
        #expect(snap.encodedState() == doc.encodedState())
        #expect(snap.operations == ops)
        try snap.checkInvariants()
    }
}
