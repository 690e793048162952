import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncSimulation
import ListSyncTestSupport
import ListSyncTestTraits

/// Undo and redo among the edits of 3–4 replicas: each replica's user edits (sometimes in groups
/// left open while remote operations arrive), undoes and redoes; operations are delivered in
/// random order, some twice. After full delivery every replica must have nothing pending, show the
/// same snapshot with the same encoded state, show every identity at most once, pass
/// `checkInvariants()`, and show what `SemanticsOracle` computes from the operations alone. Then
/// every replica undoes all it can, everything is delivered again, and the same must hold.
///
/// Replay one seed: `LISTSYNC_UNDO_FUZZ_SEED=123 swift test --filter UndoConvergenceFuzzTests`.
/// More seeds: `LISTSYNC_UNDO_FUZZ_SEEDS=5000`.
@Suite(.cpuHeavy) struct UndoConvergenceFuzzTests {
    @Test("300 seeds × 3–4 replicas: edits, field writes and typing, undo and redo, random delivery with duplicates, converge")
    func fuzz() {
        let seeds = ListSyncTestSupport.seeds(one: "LISTSYNC_UNDO_FUZZ_SEED", count: "LISTSYNC_UNDO_FUZZ_SEEDS", standard: 300)
        var failures = 0
        var totals = UndoFuzz.Counts()
        for seed in seeds where failures < 3 {
            let (counts, problem) = UndoFuzz.run(seed: seed)
            totals.add(counts)
            if let problem {
                failures += 1
                Issue.record("undo fuzz seed \(seed) failed: \(problem)\nreplay: LISTSYNC_UNDO_FUZZ_SEED=\(seed) swift test --filter UndoConvergenceFuzzTests")
            }
        }
        print("undo fuzz: \(seeds.count) seeds, \(totals.edits) edit groups, \(totals.undos) undos, \(totals.redos) redos, \(totals.undoOps) undo/redo operations, \(totals.deliveries) deliveries")
        #expect(totals.undoOps > 0 && totals.redos > 0)
    }
}

/// The multi-replica undo fuzzer.
enum UndoFuzz {
    struct Counts {
        var edits = 0, undos = 0, redos = 0, undoOps = 0, deliveries = 0
        mutating func add(_ o: Counts) {
            edits += o.edits; undos += o.undos; redos += o.redos; undoOps += o.undoOps; deliveries += o.deliveries
        }
    }

    static func run(seed: UInt64, actions: Int = 160) -> (Counts, String?) {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 3)
        var counts = Counts()
        var counter = 0
        func fresh() -> String { counter += 1; return "v\(counter)" }
        let base: ListDocument
        do { base = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x", "y"], ["p"]]) } catch { return (counts, "\(error)") }
        let n = 3 + Int(seed % 2)
        var docs = (0..<n).map { base.fork(as: UInt64($0) + 1) }
        var undos = Array(repeating: ListUndoManager(), count: n)
        var inFlight: [(op: ListOperation, to: Int)] = []
        var all = base.operations
        // Field writes (the default 20%) and splices of items' notes (U11, U12): typing is undone by identity.
        var workload = Workload()
        workload.textEdits = 20

        func send(_ ops: [ListOperation], from r: Int) {
            all += ops
            for op in ops {
                for to in 0..<n where to != r {
                    inFlight.append((op, to))
                    if rng.chance(10) { inFlight.append((op, to)) }          // duplicated
                }
            }
        }
        func deliverOne() -> String? {
            let m = inFlight.remove(at: rng.below(inFlight.count))          // any order
            let report = docs[m.to].receive([m.op])
            counts.deliveries += 1
            return report.isSuccess ? nil : "replica \(m.to) refused \(m.op): \(report)"
        }
        func deliverAll() -> String? {
            while !inFlight.isEmpty { if let p = deliverOne() { return p } }
            return nil
        }
        func check(_ phase: String) -> String? {
            let reference = docs[0].snapshot()
            for (r, doc) in docs.enumerated() {
                if doc.pendingCount != 0 { return "\(phase): replica \(r) has \(doc.pendingCount) pending" }
                do { try doc.checkInvariants() } catch { return "\(phase): replica \(r): \(error)" }
                if doc.snapshot() != reference { return "\(phase): replica \(r) shows \(doc.rows), replica 0 \(docs[0].rows)" }
                if doc.encodedState() != docs[0].encodedState() { return "\(phase): replica \(r) encodes a different state" }
            }
            let ids = reference.itemIdentifiers
            if Set(ids).count != ids.count { return "\(phase): an item is shown twice" }
            if Set(reference.sectionIdentifiers).count != reference.numberOfSections { return "\(phase): a section is shown twice" }
            if let why = SemanticsOracle(all).check(reference) { return "\(phase): \(why)" }
            return nil
        }
        func undoOrRedo(_ r: Int, redo: Bool) -> String? {
            do {
                let ops = redo ? try undos[r].redo(&docs[r]) : try undos[r].undo(&docs[r])
                counts.undoOps += ops.count
                if redo { counts.redos += 1 } else { counts.undos += 1 }
                send(ops, from: r)
            } catch {
                return "replica \(r) \(redo ? "redo" : "undo") threw \(error)"
            }
            return nil
        }

        for _ in 0..<actions {
            let r = rng.below(n)
            let roll = rng.below(100)
            if roll < 35 {
                if !undos[r].isGroupOpen && rng.chance(8) { undos[r].beginGroup("Group") }
                do {
                    let ops = try undos[r].edit(&docs[r]) { (d: inout ListDocument) throws(ListError) in
                        for _ in 0..<(1 + rng.below(2)) { try RandomEdit.random(for: d, workload: workload, using: &rng, fresh: fresh).apply(to: &d) }
                    }.operations
                    send(ops, from: r)
                } catch { return (counts, "replica \(r) edit threw \(error)") }
                counts.edits += 1
            } else if roll < 50 {
                if undos[r].isGroupOpen {
                    do { try undos[r].endGroup() } catch { return (counts, "endGroup: \(error)") }
                } else if undos[r].canUndo {
                    if let p = undoOrRedo(r, redo: false) { return (counts, p) }
                    // Undo, then redo at once or after a delivery or two.
                    for _ in 0..<rng.below(3) where !inFlight.isEmpty { if let p = deliverOne() { return (counts, p) } }
                    if rng.chance(40), let p = undoOrRedo(r, redo: true) { return (counts, p) }
                }
            } else if roll < 58 {
                if !undos[r].isGroupOpen && undos[r].canRedo, let p = undoOrRedo(r, redo: true) { return (counts, p) }
            } else if !inFlight.isEmpty {
                if let p = deliverOne() { return (counts, p) }
                if rng.chance(3) {
                    do { try docs[rng.below(n)].checkInvariants() } catch { return (counts, "mid-run: \(error)") }
                }
            }
        }
        for r in 0..<n where undos[r].isGroupOpen {
            do { try undos[r].endGroup() } catch { return (counts, "endGroup: \(error)") }
        }
        if let p = deliverAll() ?? check("after the edits") { return (counts, p) }

        // Everyone undoes all they can, in turns, with deliveries in between.
        var busy = true
        while busy {
            busy = false
            for r in 0..<n where undos[r].canUndo {
                busy = true
                if let p = undoOrRedo(r, redo: false) { return (counts, p) }
                for _ in 0..<rng.below(4) where !inFlight.isEmpty { if let p = deliverOne() { return (counts, p) } }
            }
        }
        if let p = deliverAll() ?? check("after undoing everything") { return (counts, p) }
        return (counts, nil)
    }
}
