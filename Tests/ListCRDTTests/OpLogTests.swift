import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The compact operation log (`OpLog`, `ListDocument+History.swift`): the operations it gives back
/// must be equal (`==`) to the ones applied, in application order, however they were stored
/// (typed runs, delete runs, moves, whole rare operations, implicit or explicit dependencies) and
/// whatever the state did since (values overwritten, items moved and deleted).
///
/// The fuzz keeps a shadow copy of every operation each replica applied, made locally or received,
/// and compares the document's history with it. Replay one seed:
/// `LISTSYNC_OPLOG_SEED=7 swift test --filter OpLogTests`.
@Suite(.cpuHeavy) struct OpLogTests {
    @Test("random multi-replica editing: operations, operations(from:), operations(since:), hasSeen match a shadow log")
    func shadowFuzz() throws {
        let env = ProcessInfo.processInfo.environment
        let seeds: [UInt64] = env["LISTSYNC_OPLOG_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(0..<120)
        var stats = HistoryFuzz.Stats()
        for seed in seeds {
            var fuzz = HistoryFuzz(seed: seed)
            try fuzz.run()
            stats.add(fuzz.stats)
            if fuzz.failed {
                Issue.record("seed \(seed) failed; replay: LISTSYNC_OPLOG_SEED=\(seed) swift test --filter OpLogTests")
                return
            }
        }
        // The fuzz must reach the shapes it is meant to test.
        if stats.checks == 0 { return }
        #expect(stats.runRecords > 0 && stats.deleteRuns > 0 && stats.explicitDeps > 0 && stats.woken > 0)
        #expect(stats.multiMoves > 0 && stats.sectionDeletes > 0 && stats.overwrittenInserts > 0)
        print("oplog fuzz: \(seeds.count) seeds, \(stats)")
    }

    @Test("a typed run is one record, forwards or backwards; deletes in a row (backspace, forward delete) are one record")
    func runsShareRecords() throws {
        var doc = try ListDocument.make(1, sections: [[]])
        let before = doc.log.records.count
        for k in 0..<500 { try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data("c\(k)")) }
        #expect(doc.log.records.count == before + 1)
        for k in stride(from: 499, through: 400, by: -1) { try doc.deleteItem(at: IndexPath(item: k, section: 0)) }
        #expect(doc.log.records.count == before + 2)
        // Deletes in a row are one record whatever they delete: the forward deletes extend it.
        for _ in 0..<100 { try doc.deleteItem(at: IndexPath(item: 100, section: 0)) }
        #expect(doc.log.records.count == before + 2)
        #expect(doc.log.seenSlots.count == 200)
        // Typing backwards (each insert before the previous one) is one record too.
        for _ in 0..<50 { try doc.insertItem(at: IndexPath(item: 7, section: 0), value: Data("b")) }
        #expect(doc.log.records.count == before + 3)
        for _ in 0..<10 { try doc.deleteItem(at: IndexPath(item: 7, section: 0)) }
        #expect(doc.log.records.count == before + 4)
        #expect(doc.operationCount == 1 + 500 + 200 + 50 + 10)

        let remote = doc.fork(as: 2)
        #expect(remote.operations == doc.operations)
        #expect(remote.log.records.count == doc.log.records.count)
        #expect(remote.rows == doc.rows)
    }

    @Test("an insert's value comes back after later writes replaced it, for items and sections")
    func originalValues() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        let s = try doc.insertSection(at: 0, value: Data("S"))
        let a = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("a"))
        let b = try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("b"))
        var made = [s, a, b]
        made.append(try doc.setValue(Data("a2"), forItem: ItemID(a.id)))
        made.append(try doc.setValue(Data("a3"), forItem: ItemID(a.id)))
        made.append(try doc.setValue(Data("S2"), forSection: SectionID(s.id)))
        #expect(doc.operations == made)
        #expect(doc.value(of: ItemID(a.id)) == Data("a3"))

        // Concurrent writes: replica 2's has the greater id. Replica 1 overwrites the insert's value
        // twice; replica 2 once, then ignores the smaller write. History gives back all of them.
        var other = doc.fork(as: 2)
        let won = try other.setValue(Data("b-won"), forItem: ItemID(b.id))
        let lost = try doc.setValue(Data("b-lost"), forItem: ItemID(b.id))
        #expect(won.id > lost.id)
        made.append(lost)
        try doc.receive(won)
        made.append(won)
        #expect(doc.operations == made)
        #expect(doc.value(of: ItemID(b.id)) == Data("b-won"))
        try other.receive(lost)
        #expect(other.value(of: ItemID(b.id)) == Data("b-won"))
        #expect(Set(other.operations.map(\.id)) == Set(made.map(\.id)))
        #expect(other.operations(since: VersionVector()) == other.operations)
        #expect(Dictionary(uniqueKeysWithValues: other.operations.map { ($0.id, $0) })
                == Dictionary(uniqueKeysWithValues: made.map { ($0.id, $0) }))
    }

    @Test("duplicates of logged operations are ignored; other content under a logged id is equivocation")
    func equivocationAgainstRecords() throws {
        var a = try ListDocument.make(1, sections: [["x", "y", "z"]])
        let moved = try a.moveItems([try #require(a.item("x")), try #require(a.item("y"))], to: IndexPath(item: 1, section: 0))
        let del = try a.deleteItem(at: IndexPath(item: 0, section: 0))
        var b = a.fork(as: 2)
        for op in a.operations {
            #expect(try b.receive(op) == .duplicate)
        }
        // Same id, other content: a middle op of the typed run, the move, the delete.
        let typed = a.operations[2]
        var changed = typed
        changed.kind = .insertItem(section: SectionID(a.operations[0].id), .init(after: nil, before: nil), value: Data("evil"))
        #expect(throws: ApplyError.equivocation(typed.id)) { try b.receive(changed) }
        var deps = moved
        deps.deps = Frontier()
        #expect(throws: ApplyError.equivocation(moved.id)) { try b.receive(deps) }
        var seen = del
        seen.kind = .deleteItem(ItemID(typed.id), seen: SlotID(typed.id))
        #expect(throws: ApplyError.equivocation(del.id)) { try b.receive(seen) }
        // An id inside the move's range, not its first.
        var inside = moved
        inside.id = moved.id.advanced(by: 1)
        #expect(throws: ApplyError.equivocation(inside.id)) { try b.receive(inside) }
        #expect(b.rejectedOperations == [changed, deps, seen, inside])
        #expect(b.operations == a.operations)
    }

    @Test("the first 20,000 lines of the automerge-paper trace come back exactly, in few records")
    func tracePrefix() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var doc = try ListDocument.make(1, sections: [[]])
        var made = doc.operations
        for edit in trace.edits.prefix(20_000) {
            for _ in 0..<edit.deleteCount {
                made.append(try doc.deleteItem(at: IndexPath(item: edit.position, section: 0)))
            }
            for (k, c) in edit.text.enumerated() {
                made.append(try doc.insertItem(at: IndexPath(item: edit.position + k, section: 0), value: Data([c])))
            }
        }
        #expect(doc.operations == made)
        #expect(try doc.operations(from: 12_345) == Array(made[12_345...]))
        #expect(doc.log.records.count * 4 < made.count, "\(doc.log.records.count) records for \(made.count) operations")
        var remote = ListDocument(replica: ReplicaID(2))
        #expect(remote.receive(made).refused.isEmpty)
        #expect(remote.operations == made)
    }
}

/// One seeded run of the shadow-log fuzz.
struct HistoryFuzz {
    struct Stats: CustomStringConvertible {
        var ops = 0, runRecords = 0, deleteRuns = 0, explicitDeps = 0, woken = 0, multiMoves = 0
        var sectionDeletes = 0, overwrittenInserts = 0, checks = 0
        mutating func add(_ o: Stats) {
            ops += o.ops; runRecords += o.runRecords; deleteRuns += o.deleteRuns; explicitDeps += o.explicitDeps
            woken += o.woken; multiMoves += o.multiMoves; sectionDeletes += o.sectionDeletes
            overwrittenInserts += o.overwrittenInserts; checks += o.checks
        }
        var description: String {
            "\(ops) ops, \(runRecords) insert runs, \(deleteRuns) delete runs, \(explicitDeps) explicit deps, "
                + "\(woken) woken, \(multiMoves) multi-moves, \(sectionDeletes) section deletes, "
                + "\(overwrittenInserts) overwritten inserts, \(checks) history checks"
        }
    }

    var rng: SplitMix64
    var docs: [ListDocument]
    /// Every operation each replica applied, in the order it applied them.
    var shadow: [[ListOperation]]
    /// Every operation made, by id.
    var made: [OpID: ListOperation] = [:]
    var inFlight: [(op: ListOperation, to: Int)] = []
    var counter = 0
    var stats = Stats()
    /// Whether a check failed (a reference, so that checks need not be mutating).
    final class Failure { var failed = false }
    let failure = Failure()
    var failed: Bool { failure.failed }

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed &* 0x2545_F491 &+ 3)
        let n = 2 + Int(seed % 3)
        docs = (0..<n).map { ListDocument(replica: ReplicaID(UInt64($0) + 1)) }
        shadow = Array(repeating: [], count: n)
    }

    mutating func fresh() -> String { counter += 1; return "v\(counter)" }

    mutating func run() throws {
        for step in 0..<90 {
            if inFlight.isEmpty || rng.chance(45) {
                try localEdit(rng.below(docs.count))
            } else {
                for _ in 0..<(1 + rng.below(4)) where !inFlight.isEmpty {
                    let m = inFlight.remove(at: rng.below(inFlight.count))
                    try receive(m.op, at: m.to)
                }
            }
            if step % 15 == 14 { check(rng.below(docs.count)) }
            if failed { return }
        }
        while !inFlight.isEmpty {
            let m = inFlight.remove(at: rng.below(inFlight.count))
            try receive(m.op, at: m.to)
        }
        // Anti-entropy repairs the lost ones; `operations(since:)` must give what the shadow says.
        for a in docs.indices {
            for b in docs.indices where a != b {
                let version = docs[b].version
                let missing = docs[a].operations(since: version)
                expect(missing == shadow[a].filter { !version.contains($0.id) }, "operations(since:) of \(a) for \(b)")
                for op in missing { try receive(op, at: b) }
            }
        }
        for r in docs.indices {
            expect(docs[r].pendingCount == 0, "replica \(r) has pending operations")
            expect(docs[r].operationCount == made.count, "replica \(r) applied \(docs[r].operationCount) of \(made.count)")
            check(r)
            checkCausality(r)
            checkEquivocation(r)
        }
        let all = docs[0].log
        stats.ops += made.count
        for rec in all.records {
            if (rec.kind == .insertItem || rec.kind == .insertSection) && rec.count > 1 { stats.runRecords += 1 }
            if rec.kind == .deleteItem && rec.count > 1 { stats.deleteRuns += 1 }
            if rec.kind == .moveItems && rec.count > 1 { stats.multiMoves += 1 }
            if rec.deps >= 0 { stats.explicitDeps += 1 }
        }
        stats.sectionDeletes += made.values.filter { if case .deleteSection = $0.kind { true } else { false } }.count
        stats.overwrittenInserts += docs[0].items.replaced.count + docs[0].sections.replaced.count
    }

    func expect(_ condition: Bool, _ what: @autoclosure () -> String,
                sourceLocation: SourceLocation = #_sourceLocation) {
        if !condition {
            failure.failed = true
            Issue.record("\(what())", sourceLocation: sourceLocation)
        }
    }

    // MARK: Edits

    /// Records an operation made by replica `r` and sends it (sometimes twice, rarely never).
    mutating func emit(_ op: ListOperation?, by r: Int) {
        guard let op else { return }
        shadow[r].append(op)
        made[op.id] = op
        for to in docs.indices where to != r {
            if rng.chance(4) { continue }
            inFlight.append((op, to))
            if rng.chance(8) { inFlight.append((op, to)) }
        }
    }

    mutating func receive(_ op: ListOperation, at r: Int) throws {
        let before = docs[r].operationCount
        let outcome: ReceiveReport
        do throws(ApplyError) { outcome = try docs[r].receive(op) } catch {
            expect(false, "replica \(r) refused \(op): \(error)")
            return
        }
        let woken = outcome.applied
        guard woken > 0 else { return }
        let applied = try docs[r].operations(from: before)
        expect(applied.count == woken && applied.first == op, "replica \(r) applied \(applied.map(\.id)) for \(op.id)")
        // Woken operations: the document says in which order; their content must be what was made.
        for got in applied {
            expect(made[got.id] == got, "replica \(r) gives back \(got), made \(String(describing: made[got.id]))")
            shadow[r].append(made[got.id] ?? got)
        }
        if woken > 1 { stats.woken += woken - 1 }
    }

    mutating func localEdit(_ r: Int) throws {
        var doc = docs[r]
        defer { docs[r] = doc }
        let sections = doc.sectionCount
        func count(_ s: Int) -> Int { (try? doc.itemCount(inSection: s)) ?? 0 }
        let roll = rng.below(100)
        if sections == 0 || (roll < 4 && sections < 6) {
            // A run of sections, sometimes renamed at once.
            let at = rng.below(sections + 1)
            for k in 0..<(1 + rng.below(3)) {
                let op = try doc.insertSection(at: at + k, value: Data(fresh()))
                emit(op, by: r)
                if rng.chance(20) { emit(try doc.setValue(Data(fresh()), forSection: SectionID(op.id)), by: r) }
            }
            return
        }
        let s = rng.below(sections)
        let n = count(s)
        switch roll {
        case 4..<16:   // typing forwards
            let at = rng.below(n + 1)
            for k in 0..<(1 + rng.below(8)) {
                emit(try doc.insertItem(at: IndexPath(item: at + k, section: s), value: Data(fresh())), by: r)
            }
        case 16..<20:  // typing backwards
            let at = rng.below(n + 1)
            for _ in 0..<(1 + rng.below(5)) {
                emit(try doc.insertItem(at: IndexPath(item: at, section: s), value: Data(fresh())), by: r)
            }
        case 20..<27 where n > 0:  // backspaces
            let at = rng.below(n)
            for k in 0..<min(at + 1, 1 + rng.below(6)) {
                emit(try doc.deleteItem(at: IndexPath(item: at - k, section: s)), by: r)
            }
        case 27..<32 where n > 0:  // forward deletes
            let at = rng.below(n)
            for _ in 0..<min(n - at, 1 + rng.below(6)) {
                emit(try doc.deleteItem(at: IndexPath(item: at, section: s)), by: r)
            }
        case 32..<40:  // insert, then overwrite its value (once or twice)
            let op = try doc.insertItem(at: IndexPath(item: rng.below(n + 1), section: s), value: Data(fresh()))
            emit(op, by: r)
            for _ in 0..<(1 + rng.below(2)) {
                emit(try doc.setValue(Data(fresh()), forItem: ItemID(op.id)), by: r)
            }
        case 40..<46 where n > 0:  // move an item, then delete it
            let from = IndexPath(item: rng.below(n), section: s)
            let id = try doc.itemID(at: from)
            let to = rng.below(sections)
            let limit = count(to) - (to == s ? 1 : 0)
            emit(try doc.moveItem(from: from, to: IndexPath(item: rng.below(limit + 1), section: to)), by: r)
            if rng.chance(70) { emit(try doc.deleteItem(id), by: r) }
        case 46..<54 where n > 1:  // a selection moved together
            var ids: [ItemID] = []
            for _ in 0..<(2 + rng.below(3)) {
                let id = try doc.itemID(at: IndexPath(item: rng.below(n), section: s))
                if !ids.contains(id) { ids.append(id) }
            }
            let to = rng.below(sections)
            let inside = ids.filter { doc.indexPath(of: $0)?.section == to }.count
            emit(try doc.moveItems(ids, to: IndexPath(item: rng.below(count(to) - inside + 1), section: to)), by: r)
        case 54..<57 where sections > 1:
            emit(try doc.deleteSection(at: s), by: r)
        default:
            var (g, c) = (rng, counter)
            let edit = RandomEdit.random(for: doc, rng: &g) { c += 1; return "v\(c)" }
            (rng, counter) = (g, c)
            emit(try edit.apply(to: &doc), by: r)
        }
    }

    // MARK: Checks

    /// The history of replica `r` against its shadow.
    mutating func check(_ r: Int) {
        stats.checks += 1
        let doc = docs[r], log = shadow[r]
        expect(doc.operationCount == log.count, "replica \(r): \(doc.operationCount) operations, shadow \(log.count)")
        let all = doc.operations
        expect(all == log, "replica \(r): operations differ from the shadow at \(String(describing: all.indices.first { $0 >= log.count || all[$0] != log[$0] }))")
        for k in [0, log.count, rng.below(log.count + 1), rng.below(log.count + 1)] {
            expect((try? doc.operations(from: k)) == Array(log[k...]), "replica \(r): operations(from: \(k))")
        }
        var versions = docs.map(\.version) + [VersionVector()]
        var partial: [ReplicaID: UInt64] = [:]
        for (replica, c) in doc.version.entries where c > 1 { partial[replica] = UInt64(rng.below(Int(c))) }
        versions.append(VersionVector(partial))
        for v in versions {
            expect(doc.operations(since: v) == log.filter { !v.contains($0.id) }, "replica \(r): operations(since: \(v))")
        }
    }

    /// `hasSeen` against the transitive closure of the shadow's dependencies.
    mutating func checkCausality(_ r: Int) {
        let log = shadow[r]
        var index: [OpID: Int] = [:]
        for (k, op) in log.enumerated() { for j in 0..<op.span { index[op.id.advanced(by: j)] = k } }
        var past: [Set<Int>] = []
        for op in log {
            var p = Set<Int>()
            for d in op.deps { if let j = index[d] { p.insert(j); p.formUnion(past[j]) } }
            past.append(p)
        }
        for _ in 0..<300 {
            let a = rng.below(log.count), b = rng.below(log.count)
            let earlier = log[a].id.advanced(by: rng.below(log[a].span))
            let later = log[b].id.advanced(by: rng.below(log[b].span))
            let truth = a == b || past[b].contains(a)
            expect(docs[r].hasSeen(earlier, at: later) == truth, "replica \(r): hasSeen(\(earlier), at: \(later)) should be \(truth)")
        }
    }

    /// Duplicates of logged operations are duplicates; changed copies are equivocations.
    mutating func checkEquivocation(_ r: Int) {
        var doc = docs[r]
        for _ in 0..<5 {
            let op = shadow[r][rng.below(shadow[r].count)]
            expect((try? doc.receive(op)) == .duplicate, "replica \(r): \(op) is not a duplicate")
            var bad = op
            if rng.chance(50) {
                bad.deps = op.deps.isEmpty ? Frontier([OpID(counter: 1, replica: ReplicaID(77))]) : Frontier()
            } else {
                bad.kind = .setItemValue(ItemID(op.id), Data("evil"))
            }
            do throws(ApplyError) {
                try doc.receive(bad)
                expect(false, "replica \(r): \(bad) accepted")
            } catch {
                expect(error == .equivocation(op.id) && doc.rejectedOperations.last == bad, "replica \(r): \(bad) gave \(error)")
            }
        }
        expect(doc.operations == shadow[r], "replica \(r): equivocations changed the history")
    }
}
