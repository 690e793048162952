import Foundation
import ListSyncTestSupport
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Seeded multi-replica fuzzing: random edits on 3–5 replicas, delivered in random order with
/// duplicates and losses (repaired by a final anti-entropy exchange). After full delivery every
/// replica must show the same snapshot and the same encoded state, nothing may be pending, and the
/// visible items and sections must be exactly those an independent oracle computes from the set of
/// operations (SEMANTICS §3.2, §3.4, §3.5: nothing lost, nothing duplicated).
///
/// Replay one seed: `LISTSYNC_FUZZ_SEED=123 swift test --filter ConvergenceFuzzTests`.
/// More seeds: `LISTSYNC_FUZZ_SEEDS=100000`.
@Suite(.cpuHeavy) struct ConvergenceFuzzTests {
    @Test("1,000 seeds × 3–5 replicas × 120 edits converge, with random order, duplicates and loss")
    func fuzz() {
        let seeds = ListSyncTestSupport.seeds(one: "LISTSYNC_FUZZ_SEED", count: "LISTSYNC_FUZZ_SEEDS", standard: 1_000)
        let total = Self.run(seeds)
        print("fuzz: \(seeds.count) seeds, \(total.edits) edits (\(total.moves) moves, \(total.edits == 0 ? 0 : total.moves * 100 / total.edits)%), \(total.deliveries) deliveries")
        #expect(total.moves * 100 >= total.edits * 30, "at least 30% of the edits are moves")
    }

    /// Sections inserted with their first fields (one operation, wire format 5) among field
    /// writes to the same sections, made concurrently on other replicas once they hold the
    /// section: every replica converges, and the oracle's per-field rule and intents (no write to
    /// another field lost, every increment counted) hold for the inserts' fields as for writes.
    @Test("300 seeds × 3–5 replicas: sections inserted with fields meet concurrent field writes and converge per field")
    func sectionsInsertedWithFields() {
        let seeds = ListSyncTestSupport.seeds(one: "LISTSYNC_FUZZ_SEED", count: "LISTSYNC_FUZZ_SECTION_FIELD_SEEDS", standard: 300)
        var workload = Workload()
        workload.insertSection = 20
        workload.deleteSection = 6
        workload.fieldWrites = 40
        workload.sectionInsertFields = 100
        let total = Self.run(seeds, workload: workload)
        print("fuzz, sections with fields: \(seeds.count) seeds, \(total.sectionFieldInserts) sections inserted with fields, \(total.writesOnInsertedSections) field writes on them")
        #expect(total.sectionFieldInserts >= seeds.count && total.writesOnInsertedSections >= seeds.count,
                "the inserts and writes on them were made")
    }

    /// Runs the fuzzer on each seed with `workload`, recording each failure (the first three) with
    /// its replay line; the counts added up.
    static func run(_ seeds: some Sequence<UInt64>, workload: Workload = Workload()) -> Fuzz.Result {
        var total = Fuzz.Result()
        var failures = 0
        for seed in seeds where failures < 3 {
            let result = Fuzz.run(seed: seed, workload: workload)
            total.edits += result.edits
            total.moves += result.moves
            total.deliveries += result.deliveries
            total.sectionFieldInserts += result.sectionFieldInserts
            total.writesOnInsertedSections += result.writesOnInsertedSections
            if let problem = result.problem {
                failures += 1
                Issue.record("fuzz seed \(seed) failed: \(problem)\nreplay: LISTSYNC_FUZZ_SEED=\(seed) swift test --filter ConvergenceFuzzTests")
            }
        }
        return total
    }
}

/// The multi-replica fuzzer.
enum Fuzz {
    struct Result {
        var edits = 0, moves = 0, deliveries = 0
        /// Sections inserted with their fields, and field writes made on such sections.
        var sectionFieldInserts = 0, writesOnInsertedSections = 0
        var problem: String?
    }

    static func run(seed: UInt64, replicas: Int? = nil, edits editCount: Int = 120, workload: Workload = Workload()) -> Result {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
        let n = replicas ?? 3 + Int(seed % 3)
        var docs = (0..<n).map { ListDocument(replica: ReplicaID(UInt64($0) + 1)) }
        var inFlight: [(op: ListOperation, to: Int)] = []
        var all: [ListOperation] = []
        var result = Result()
        var counter = 0
        func fail(_ why: String) -> Result { var r = result; r.problem = why; return r }

        while result.edits < editCount || (!inFlight.isEmpty && rng.chance(50)) {
            if result.edits < editCount && (inFlight.isEmpty || rng.chance(45)) {
                let r = rng.below(n)
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { counter += 1; return "v\(counter)" }
                let op: ListOperation?
                do { op = try edit.apply(to: &docs[r]) } catch { return fail("replica \(r) edit \(edit) threw \(error)") }
                result.edits += 1
                if edit.isMove { result.moves += 1 }
                guard let op else { continue }
                if op.needsWireFormat5 { result.sectionFieldInserts += 1 }
                if case .writeFields(.section(let s), _) = op.kind,
                   all.contains(where: { $0.id == s.opID && $0.needsWireFormat5 }) { result.writesOnInsertedSections += 1 }
                all.append(op)
                for to in 0..<n where to != r {
                    if rng.chance(5) { continue }                            // lost
                    inFlight.append((op, to))
                    if rng.chance(10) { inFlight.append((op, to)) }          // duplicated
                }
            } else if !inFlight.isEmpty {
                let m = inFlight.remove(at: rng.below(inFlight.count))   // any order
                do { try docs[m.to].receive(m.op) } catch { return fail("replica \(m.to) refused \(m.op): \(error)") }
                result.deliveries += 1
                if rng.chance(10) {
                    do { try docs[m.to].checkInvariants() } catch { return fail("replica \(m.to) mid-run: \(error)") }
                }
            }
        }
        // Deliver what is left, in random order, then repair losses by anti-entropy.
        while !inFlight.isEmpty {
            let m = inFlight.remove(at: rng.below(inFlight.count))
            do { try docs[m.to].receive(m.op) } catch { return fail("replica \(m.to) refused \(m.op): \(error)") }
            result.deliveries += 1
        }
        for a in 0..<n {
            for b in 0..<n where a != b {
                var missing = docs[a].operations(since: docs[b].version)
                missing.shuffle(using: &rng)   // any order: the causal buffer must cope
                for op in missing {
                    do { try docs[b].receive(op) } catch { return fail("anti-entropy \(a)→\(b) refused \(op): \(error)") }
                }
            }
        }
        // Convergence and invariants.
        let reference = docs[0].snapshot()
        let state = docs[0].encodedState()
        for (r, doc) in docs.enumerated() {
            if doc.pendingCount != 0 { return fail("replica \(r) still has \(doc.pendingCount) pending") }
            if doc.operationCount != all.count { return fail("replica \(r) applied \(doc.operationCount) of \(all.count)") }
            do { try doc.checkInvariants() } catch { return fail("replica \(r): \(error)") }
            if doc.snapshot() != reference { return fail("replica \(r) shows \(doc.rows), replica 0 \(docs[0].rows)") }
            if doc.encodedState() != state { return fail("replica \(r) encodes a different state") }
        }
        let oracle = SemanticsOracle(all)
        if let why = oracle.check(reference) { return fail(why) }
        if let why = oracle.checkFieldIntent(reference).first { return fail(why) }
        return result
    }
}
