import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// One replica against a plain `[[Item]]` model: thousands of seeded random edit sequences,
/// compared after every edit.
@Suite(.cpuHeavy) struct ReferenceModelTests {
    static let seeds = UInt64(ProcessInfo.processInfo.environment["LISTSYNC_MODEL_SEEDS"] ?? "") ?? 2_000
    static let steps = 80

    @Test("single replica matches the [[Item]] reference model after every edit")
    func matchesModel() throws {
        var failures = 0
        for seed in 0..<Self.seeds where failures < 3 {
            if let problem = Self.run(seed: seed) {
                failures += 1
                Issue.record("model seed \(seed) failed: \(problem)\nreplay: ReferenceModelTests.run(seed: \(seed))")
            }
        }
    }

    /// Runs one seed; returns a description of the first divergence.
    static func run(seed: UInt64, steps: Int = steps, checkEvery: Int = 1) -> String? {
        var rng = SplitMix64(seed: seed)
        var doc = ListDocument(replica: ReplicaID(seed + 1))
        var model = ReferenceModel()
        var counter = 0
        var history: [String] = []
        for step in 0..<steps {
            let edit = RandomEdit.random(for: doc, rng: &rng) { counter += 1; return "v\(counter)" }
            history.append(edit.description)
            do {
                let before = doc.operationCount
                let op = try edit.apply(to: &doc)
                if op == nil && doc.operationCount != before { return "step \(step): no op returned but the log grew" }
            } catch {
                return "step \(step) \(edit) threw \(error); history \(history)"
            }
            edit.apply(to: &model)
            if step % checkEvery != 0 && step != steps - 1 { continue }
            if doc.rows != model.rows || doc.sectionValues != model.names {
                return "step \(step) \(edit): doc \(doc.rows) \(doc.sectionValues), model \(model.rows) \(model.names); history \(history)"
            }
            do { try doc.checkInvariants() } catch { return "step \(step) \(edit): \(error)" }
        }
        return nil
    }

    @Test("a long single-replica run with large sections keeps matching the model")
    func longRun() {
        #expect(Self.run(seed: 987_654, steps: 4_000, checkEvery: 97) == nil)
    }

    @Test("one big section: 30,000 random inserts, deletes and moves against an array (multi-level tree)")
    func bigSection() throws {
        var rng = SplitMix64(seed: 42)
        var doc = try ListDocument.make(7, sections: [[]])
        var model: [String] = []
        for step in 0..<30_000 {
            let roll = rng.below(10)
            if model.isEmpty || roll < 5 {
                let at = rng.below(model.count + 1)
                try doc.insertItem(at: IndexPath(item: at, section: 0), value: Data("\(step)"))
                model.insert("\(step)", at: at)
            } else if roll < 7 {
                let at = rng.below(model.count)
                try doc.deleteItem(at: IndexPath(item: at, section: 0))
                model.remove(at: at)
            } else {
                let from = rng.below(model.count), to = rng.below(model.count)
                try doc.moveItem(from: IndexPath(item: from, section: 0), to: IndexPath(item: to, section: 0))
                model.insert(model.remove(at: from), at: to)
            }
            if step % 5_000 == 4_999 {
                #expect(doc.rows == [model])
                try doc.checkInvariants()
            }
        }
        #expect(doc.rows == [model])
        // Every position answers index ↔ identity both ways.
        for row in stride(from: 0, to: model.count, by: 7) {
            let id = try doc.itemID(at: IndexPath(item: row, section: 0))
            #expect(doc.indexPath(of: id) == IndexPath(item: row, section: 0))
        }
    }
}
