import Foundation
import Testing
import ListCRDT
import ListTable
import ListSyncSimulation
import ListSyncTestSupport
import ListSyncTestTraits

/// Undo on a single replica against the plainest model there is: the document's own history.
/// Random groups of random edits (item inserts, deletes, moves within and across sections,
/// multi-item moves, value changes; section inserts, deletes, moves, renames), some undone and
/// redone on the way; then undo back to the start must show the start (the same section and item
/// values in the same order; restored copies have new identities), and redo forward the end; and
/// once more both ways, through the replaced identities.
///
/// Replay one seed: `LISTSYNC_UNDO_SEED=123 swift test --filter UndoModelTests`.
/// More seeds: `LISTSYNC_UNDO_SEEDS=20000`.
@Suite(.cpuHeavy) struct UndoModelTests {
    @Test("2,000 seeds: undo back to the start shows the start, redo forward shows the end")
    func undoToStartRedoToEnd() {
        let seeds = ListSyncTestSupport.seeds(one: "LISTSYNC_UNDO_SEED", count: "LISTSYNC_UNDO_SEEDS", standard: 2_000)
        var failures = 0
        var totals = UndoModel.Counts()
        for seed in seeds where failures < 3 {
            let (counts, problem) = UndoModel.run(seed: seed)
            totals.add(counts)
            if let problem {
                failures += 1
                Issue.record("undo model seed \(seed) failed: \(problem)\nreplay: LISTSYNC_UNDO_SEED=\(seed) swift test --filter UndoModelTests")
            }
        }
        print("undo model: \(seeds.count) seeds, \(totals.edits) edits in \(totals.groups) groups, \(totals.undoOps) undo/redo operations")
        #expect(totals.groups >= seeds.count, "every seed records groups")
    }
}

/// The single-replica undo model.
enum UndoModel {
    struct Counts {
        var edits = 0, groups = 0, undoOps = 0
        mutating func add(_ other: Counts) {
            edits += other.edits
            groups += other.groups
            undoOps += other.undoOps
        }
    }

    /// What a document shows, by value: each section's value and its items' values, in order.
    static func values(_ doc: ListDocument) -> [[String]] {
        doc.snapshot().sections.map { [$0.value.string + ":"] + $0.items.map(\.value.string) }
    }

    static func run(seed: UInt64) -> (Counts, String?) {
        let verbose = ProcessInfo.processInfo.environment["LISTSYNC_UNDO_TRACE"] != nil
        func trace(_ s: @autoclosure () -> String) { if verbose { print(s()) } }
        var rng = SplitMix64(seed: seed &* 0x2545_F491_4F6C_DD1D &+ 11)
        var counts = Counts()
        var counter = 0
        func fresh() -> String { counter += 1; return "v\(counter)" }
        var shape: [[String]] = []
        for _ in 0..<(1 + rng.below(3)) { shape.append((0..<rng.below(5)).map { _ in fresh() }) }
        var doc: ListDocument
        do { doc = try ListDocument.make(1, sections: shape) } catch { return (counts, "make: \(error)") }
        var undo = ListUndoManager(limit: 1_000)
        let start = values(doc)
        trace("seed \(seed) start \(start)")
        // The invariants after every group and every sweep; after every single undo and redo in
        // one seed of 8 (they cost more than the undo itself in a debug build).
        let thorough = seed % 8 == 0
        func check(_ what: String, always: Bool = true) -> String? {
            guard always || thorough else { return nil }
            do { try doc.checkInvariants() } catch { return "\(what): \(error)" }
            return nil
        }

        for _ in 0..<(4 + rng.below(16)) {
            let steps = 1 + rng.below(3)
            let grouped = steps > 1 || rng.chance(20)
            if grouped { undo.beginGroup(rng.chance(50) ? "Group" : nil) }
            for _ in 0..<steps {
                let edits = 1 + rng.below(3)
                do {
                    try undo.edit(&doc) { (d: inout ListDocument) throws(ListError) in
                        for _ in 0..<edits {
                            let e = RandomEdit.random(for: d, using: &rng, fresh: fresh)
                            trace("  edit \(e)")
                            try e.apply(to: &d)
                        }
                    }
                } catch { return (counts, "edit threw \(error)") }
                counts.edits += edits
            }
            if grouped {
                do { try undo.endGroup() } catch { return (counts, "endGroup: \(error)") }
            }
            counts.groups += 1
            trace("group -> \(values(doc))")
            if let p = check("after a group") { return (counts, p) }
            // Now and then undo a few groups, redo some of them (a later edit clears the rest).
            if rng.chance(30) {
                for _ in 0..<rng.below(4) where undo.canUndo {
                    do { counts.undoOps += try undo.undo(&doc).count } catch { return (counts, "mid undo: \(error)") }
                    trace("mid undo -> \(values(doc))")
                }
                for _ in 0..<rng.below(3) where undo.canRedo {
                    do { counts.undoOps += try undo.redo(&doc).count } catch { return (counts, "mid redo: \(error)") }
                    trace("mid redo -> \(values(doc))")
                }
                if let p = check("after undo/redo on the way") { return (counts, p) }
            }
        }

        // What was undone on the way and not cleared by a later edit is redone first: the end is
        // the state with every recorded group made.
        while undo.canRedo {
            do { counts.undoOps += try undo.redo(&doc).count } catch { return (counts, "redo threw \(error)") }
            trace("redo -> \(values(doc))")
        }
        let end = values(doc)
        for round in 0..<2 {
            while undo.canUndo {
                do { counts.undoOps += try undo.undo(&doc).count } catch { return (counts, "undo threw \(error)") }
                trace("undo -> \(values(doc))")
                if let p = check("round \(round) undoing", always: false) { return (counts, p) }
            }
            if let p = check("round \(round) undone") { return (counts, p) }
            if values(doc) != start { return (counts, "round \(round): undone to \(values(doc)), started at \(start)") }
            while undo.canRedo {
                do { counts.undoOps += try undo.redo(&doc).count } catch { return (counts, "redo threw \(error)") }
                trace("redo -> \(values(doc))")
                if let p = check("round \(round) redoing", always: false) { return (counts, p) }
            }
            if let p = check("round \(round) redone") { return (counts, p) }
            if values(doc) != end { return (counts, "round \(round): redone to \(values(doc)), ended at \(end)") }
        }
        return (counts, nil)
    }
}
