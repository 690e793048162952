import Foundation
import ListSyncTestSupport
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Seeded multi-replica fuzzing with compaction: rounds of random edits on 3–4 replicas,
/// delivered in random order with duplicates and losses, one at a time or several as one encoded
/// batch; between rounds a stable point (every
/// replica has every operation: the losses repaired by anti-entropy) where a random subset of
/// the replicas compacts, one may be replaced by a replica joining late from a snapshot, and
/// stale duplicates of operations before the floor arrive again. Replicas that did not compact
/// go on naming dead slots in their edits. A shadow replica receives everything and never
/// compacts. At every stable point and at the end: every replica shows exactly the shadow's
/// snapshot (the same identities, once each, the same values, in the same order), passes its
/// invariants, and the oracle finds nothing lost or duplicated.
///
/// Replay one seed: `LISTSYNC_FUZZ_SEED=123 swift test --filter CompactionFuzzTests`.
@Suite(.cpuHeavy) struct CompactionFuzzTests {
    @Test("300 seeds × 3–4 replicas × 4 rounds of 50 edits, compacting at stable points, show what a never-compacted replica shows")
    func fuzz() {
        let seeds = ListSyncTestSupport.seeds(one: "LISTSYNC_FUZZ_SEED", count: "LISTSYNC_FUZZ_SEEDS", standard: 300)
        var failures = 0
        var compactions = 0, dropped = 0, collectedSlots = 0
        for seed in seeds where failures < 3 {
            let result = CompactionFuzz.run(seed: seed)
            compactions += result.compactions
            dropped += result.droppedOperations
            collectedSlots += result.collectedSlots
            if let problem = result.problem {
                failures += 1
                Issue.record("compaction fuzz seed \(seed) failed: \(problem)\nreplay: LISTSYNC_FUZZ_SEED=\(seed) swift test --filter CompactionFuzzTests")
            }
        }
        print("compaction fuzz: \(seeds.count) seeds, \(compactions) compactions, \(collectedSlots) slots and \(dropped) logged operations collected")
        #expect(compactions >= seeds.count, "compaction ran")
        #expect(collectedSlots > 0, "some dead slots were collected")
    }
}

enum CompactionFuzz {
    struct Result {
        var compactions = 0, droppedOperations = 0, collectedSlots = 0
        var problem: String?
    }

    static func run(seed: UInt64, rounds: Int = 4, editsPerRound: Int = 50) -> Result {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 29)
        let n = 3 + Int(seed % 2)
        var docs = (0..<n).map { ListDocument(replica: ReplicaID(UInt64($0) + 1)) }
        var shadow = ListDocument(replica: ReplicaID(99))
        var all: [ListOperation] = []
        var result = Result()
        var counter = 0
        func fail(_ why: String) -> Result { var r = result; r.problem = why; return r }
        /// Delivers one operation; a refusal is a failure.
        func deliver(_ op: ListOperation, to k: Int) -> String? {
            do {
                if k == n { try shadow.receive(op) } else { try docs[k].receive(op) }
            } catch { return "replica \(k) refused \(op): \(error)" }
            return nil
        }
        /// Every replica gets every operation (the stable point), then checks.
        func stablePoint() -> String? {
            for a in 0..<n {
                for b in 0...n where a != b {
                    let target = b == n ? shadow.version : docs[b].version
                    guard docs[a].hasHistory(since: target) else { return "replica \(a) has no history since replica \(b)'s version" }
                    var missing = docs[a].operations(since: target)
                    missing.shuffle(using: &rng)
                    for op in missing { if let why = deliver(op, to: b) { return "anti-entropy: \(why)" } }
                }
            }
            let reference = shadow.snapshot()
            for (k, doc) in docs.enumerated() {
                if doc.version != shadow.version { return "replica \(k) is at \(doc.version), the shadow at \(shadow.version)" }
                if doc.pendingCount != 0 { return "replica \(k) has \(doc.pendingCount) pending" }
                do { try doc.checkInvariants() } catch { return "replica \(k): \(error)" }
                if doc.snapshot() != reference { return "replica \(k) shows \(doc.rows), the shadow \(shadow.rows)" }
            }
            return nil
        }

        for _ in 0..<rounds {
            var inFlight: [(op: ListOperation, to: Int)] = []
            var edits = 0
            while edits < editsPerRound || !inFlight.isEmpty {
                if edits < editsPerRound && (inFlight.isEmpty || rng.chance(45)) {
                    let r = rng.below(n)
                    let edit = RandomEdit.random(for: docs[r], rng: &rng) { counter += 1; return "v\(counter)" }
                    let op: ListOperation?
                    do { op = try edit.apply(to: &docs[r]) } catch { return fail("replica \(r) edit \(edit) threw \(error)") }
                    edits += 1
                    guard let op else { continue }
                    all.append(op)
                    for to in 0...n where to != r {
                        if to != n && rng.chance(5) { continue }                   // lost
                        inFlight.append((op, to))
                        if rng.chance(10) { inFlight.append((op, to)) }          // duplicated
                    }
                } else if rng.chance(20) {
                    // Several at once to one replica, as one encoded batch (the run routes).
                    let to = inFlight[rng.below(inFlight.count)].to
                    var batch: [ListOperation] = []
                    inFlight.removeAll { m in
                        guard m.to == to, batch.count < 8 else { return false }
                        batch.append(m.op)
                        return true
                    }
                    let bytes = ListOperation.encode(batch)
                    do {
                        let report = to == n ? try shadow.receive(encoded: bytes, maxOperations: 100)
                                             : try docs[to].receive(encoded: bytes, maxOperations: 100)
                        if !report.isSuccess { return fail("replica \(to) refused part of a batch: \(report)") }
                    } catch { return fail("replica \(to) could not decode a batch: \(error)") }
                } else {
                    let m = inFlight.remove(at: rng.below(inFlight.count))      // any order
                    if let why = deliver(m.op, to: m.to) { return fail(why) }
                }
            }
            if let why = stablePoint() { return fail("before compacting: \(why)") }
            // Compact a random subset (the others have not learned the stable version yet).
            let stable = shadow.version
            for k in 0..<n where rng.chance(60) {
                let state = docs[k].snapshot()
                do {
                    let report = try docs[k].compact(stable: stable)
                    result.compactions += 1
                    result.droppedOperations += report.operationsDropped
                    result.collectedSlots += report.slotsBefore - report.slotsAfter
                } catch { return fail("replica \(k) could not compact: \(error)") }
                do { try docs[k].checkInvariants() } catch { return fail("replica \(k) after compacting: \(error)") }
                if docs[k].snapshot() != state { return fail("compaction changed what replica \(k) shows") }
                // Stale duplicates of operations before the floor change nothing.
                for _ in 0..<3 where !all.isEmpty {
                    let old = all[rng.below(all.count)]
                    if let why = deliver(old, to: k) { return fail("stale duplicate: \(why)") }
                }
                if docs[k].snapshot() != state { return fail("a stale duplicate changed replica \(k)") }
            }
            // A replica rejoins from another's snapshot (compacted or not).
            if rng.chance(30) {
                let k = rng.below(n), from = rng.below(n)
                do {
                    docs[k] = try ListDocument(snapshot: docs[from].encodedSnapshot(), replica: docs[k].replica)
                } catch { return fail("replica \(k) could not load replica \(from)'s snapshot: \(error)") }
                do { try docs[k].checkInvariants() } catch { return fail("replica \(k) loaded: \(error)") }
            }
            if let why = stablePoint() { return fail("after compacting: \(why)") }
        }
        if let why = SemanticsOracle(all).check(shadow.snapshot()) { return fail(why) }
        return result
    }
}
