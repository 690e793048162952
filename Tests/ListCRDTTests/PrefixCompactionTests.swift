import Foundation
import ListSyncTestSupport
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation

/// Compaction at a stable prefix (Docs/Semantics.md §7, "A stable prefix"): a hub replica (a
/// daemon's copy) that keeps receiving operations is compacted at a version it has passed, the
/// greatest within what its senders acknowledged at which every operation it holds outside is
/// causally after (``ListDocument/compactablePrefix(within:)``).
@Suite struct PrefixCompactionTests {
    /// What one seeded run found.
    struct Outcome {
        var compactions = 0
        var prefixCompactions = 0
        var shrunk = 0
        var dropped = 0
        /// Compactions whose floor admitted concurrent operations (`keepingConcurrent`).
        var concurrent = 0
        var problem: String?
    }

    /// Three replicas edit values, fields and text, each sending every edit to a hub (most at
    /// once) and to the others, delivered in random order, and now and then syncing from the
    /// hub; now and then the hub is compacted at the prefix the
    /// replicas' versions allow (each replica's acknowledgement is its version, taken only when
    /// the hub holds every operation that replica made). A shadow receives everything and is
    /// never compacted. After each compaction: the hub shows what it showed, passes its
    /// invariants, equals (snapshot bytes) a replica that was quiescent at the prefix, compacted
    /// there and received the rest, and its snapshot loads. At the end everyone has everything
    /// and shows what the shadow shows; a replica that joins from the hub's snapshot, or catches
    /// up from its `operations(since:)`, too.
    ///
    /// With `keepingConcurrent`, the hub compacts at the replicas' minimum itself
    /// (``ListDocument/concurrentPrefix(within:)``), keeping what the operations outside it that
    /// are not after it name (``ListDocument/compact(stable:keepingConcurrent:)``): it shows what
    /// it showed, fields included, and every later check is the same; `variant` breaks the engine.
    static func run(seed: UInt64, rounds: Int = 300, keepingConcurrent: Bool = false,
                    variant: EngineVariant = .correct) -> Outcome {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 48)
        var out = Outcome()
        let n = 3
        var workload = Workload()
        workload.textEdits = 12
        workload.fieldWrites = 15
        var docs = (0..<n).map { ListDocument(replica: ReplicaID(UInt64($0) + 1)) }
        var hub = ListDocument(replica: ReplicaID(50))
        hub.variant = variant
        var shadow = ListDocument(replica: ReplicaID(99))
        var inFlight: [(op: ListOperation, to: Int)] = []   // to: 0..<n a replica, n the hub
        var counter = 0
        func fail(_ why: String) -> Outcome { var o = out; o.problem = why; return o }
        func deliver(_ op: ListOperation, to k: Int) -> String? {
            do {
                if k == n { try hub.receive(op) } else { try docs[k].receive(op) }
            } catch { return "\(k == n ? "the hub" : "replica \(k)") refused \(op.id): \(error)" }
            return nil
        }
        for _ in 0..<rounds {
            let roll = rng.below(100)
            if roll < 40 || inFlight.isEmpty {
                let r = rng.below(n)
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { counter += 1; return "v\(counter)" }
                let before = docs[r].operationCount
                do { _ = try edit.apply(to: &docs[r]) } catch { return fail("replica \(r) edit \(edit) threw \(error)") }
                guard let made = try? docs[r].operations(from: before) else { return fail("no log") }
                for op in made {
                    _ = shadow.receive([op])
                    // The hub (a daemon) takes each edit when it is made, most of the time.
                    if rng.chance(95) { if let why = deliver(op, to: n) { return fail(why) } } else { inFlight.append((op, n)) }
                    for to in 0..<n where to != r { inFlight.append((op, to)) }
                }
            } else if roll < 65 {
                // A replica syncs from the hub: it takes everything the hub holds.
                let k = rng.below(n)
                if hub.hasHistory(since: docs[k].version) { docs[k].receive(hub.operations(since: docs[k].version)) }
            } else if roll < 90 {
                let m = inFlight.remove(at: rng.below(inFlight.count))
                if let why = deliver(m.op, to: m.to) { return fail(why) }
            } else {
                // The hub's stable version: each replica's version met, taken only when the hub
                // holds every operation that replica made.
                guard hub.pendingCount == 0, docs.allSatisfy({ hub.version[$0.replica] >= $0.version[$0.replica] }) else { continue }
                var stable = hub.version
                for d in docs { stable = stable.meet(d.version) }
                if keepingConcurrent {
                    if let why = Self.compactKeepingConcurrent(&hub, within: stable, outcome: &out) { return fail(why) }
                    continue
                }
                let found = hub.compactablePrefix(within: stable)
                if found != Self.prefixByPasses(hub, within: stable) {
                    return fail("the worklist found \(String(describing: found)), the passes \(String(describing: Self.prefixByPasses(hub, within: stable)))")
                }
                guard let prefix = found else { continue }
                if prefix != stable { out.shrunk += 1 }
                if !stable.includes(prefix) { return fail("the prefix \(prefix) is not within \(stable)") }
                let shown = hub.snapshot()
                // The reference: quiescent at the prefix, compacted there, then the rest.
                var reference = hub.floorDocument()
                reference.receive(hub.operations.filter { prefix.contains($0.id) })
                if reference.version != prefix { return fail("the hub's operations in \(prefix) make \(reference.version)") }
                do { try reference.compact(stable: prefix) } catch { return fail("the reference did not compact: \(error)") }
                reference.receive(hub.operations.filter { !prefix.contains($0.id) })
                let version = hub.version
                do {
                    let report = try hub.compact(stable: prefix)
                    out.compactions += 1
                    if prefix != version { out.prefixCompactions += 1 }
                    out.dropped += report.operationsDropped
                } catch { return fail("the hub did not compact at \(prefix): \(error)") }
                if hub.version != version { return fail("compaction moved the hub from \(version) to \(hub.version)") }
                if hub.snapshot() != shown { return fail("compaction changed what the hub shows") }
                do { try hub.checkInvariants() } catch { return fail("the hub after compacting: \(error)") }
                if hub.historyFloor != prefix { return fail("the hub's floor is \(String(describing: hub.historyFloor)), not \(prefix)") }
                if hub.encodedSnapshot() != reference.encodedSnapshot() {
                    return fail("the hub compacted at \(prefix) differs from a replica quiescent there that received the rest")
                }
                do {
                    let loaded = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(60))
                    if loaded.snapshot() != shown || loaded.version != version { return fail("the hub's snapshot loads as something else") }
                } catch { return fail("the hub's snapshot does not load: \(error)") }
            }
        }
        // Everything delivered, then everyone compares with the shadow.
        for m in inFlight.shuffled(using: &rng) { if let why = deliver(m.op, to: m.to) { return fail("at the end: \(why)") } }
        let reference = shadow.snapshot()
        for (k, d) in docs.enumerated() where d.snapshot() != reference || d.version != shadow.version {
            return fail("replica \(k) differs from the shadow")
        }
        if hub.snapshot() != reference || hub.version != shadow.version || hub.pendingCount != 0 {
            return fail("the hub differs from the shadow")
        }
        if hub.fieldsSnapshotMismatch(shadow) { return fail("the hub's fields differ from the shadow's") }
        // A replica that caught up to the floor syncs from the hub's history.
        if let floor = hub.historyFloor {
            var late = hub.floorDocument()
            if !hub.hasHistory(since: floor) { return fail("no history since the floor") }
            late.receive(hub.operations(since: floor))
            if late.snapshot() != reference { return fail("a replica at the floor, caught up from the hub, differs") }
        }
        do {
            let joined = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(70))
            if joined.snapshot() != reference { return fail("a replica joining from the hub's snapshot differs") }
        } catch { return fail("the hub's snapshot does not load: \(error)") }
        return out
    }

    /// One compaction of `hub` at the greatest causally closed version within `stable`, keeping
    /// the concurrent operations outside it; what went wrong, or nil.
    static func compactKeepingConcurrent(_ hub: inout ListDocument, within stable: VersionVector, outcome out: inout Outcome) -> String? {
        guard let prefix = hub.concurrentPrefix(within: stable) else { return nil }
        if !stable.includes(prefix) { return "the prefix \(prefix) is not within \(stable)" }
        let old = hub, version = hub.version, shown = hub.snapshot()
        let concurrent = hub.concurrentOperations(outside: prefix)
        do {
            let report = try hub.compact(stable: prefix, keepingConcurrent: true)
            out.compactions += 1
            if prefix != version { out.prefixCompactions += 1 }
            if !concurrent.isEmpty { out.concurrent += 1 }
            out.dropped += report.operationsDropped
        } catch { return "the hub did not compact at \(prefix) with \(concurrent.count) concurrent operations: \(error)" }
        if hub.version != version { return "compaction moved the hub from \(version) to \(hub.version)" }
        if hub.snapshot() != shown || hub.fieldsSnapshotMismatch(old) { return "compaction changed what the hub shows" }
        do { try hub.checkInvariants() } catch { return "the hub after compacting: \(error)" }
        if hub.historyFloor != prefix { return "the hub's floor is \(String(describing: hub.historyFloor)), not \(prefix)" }
        let admitted = hub.compaction?.admitted ?? AdmittedOperations()
        if !concurrent.allSatisfy({ admitted.contains($0.id) }) { return "the floor does not admit every concurrent operation" }
        do {
            let loaded = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(60))
            if loaded.snapshot() != shown || loaded.version != version || loaded.fieldsSnapshotMismatch(old) {
                return "the hub's snapshot loads as something else"
            }
        } catch { return "the hub's snapshot does not load: \(error)" }
        return nil
    }

    /// ``ListDocument/compactablePrefix(within:)`` as it was before its worklist: passes over
    /// the log, each operation outside `C` not after it shrinking `C`, until a pass shrinks
    /// nothing (O(m × r) a pass, as many passes as a chain of concurrent edits has links).
    static func prefixByPasses(_ doc: ListDocument, within stable: VersionVector) -> VersionVector? {
        let floor = doc.historyFloor ?? VersionVector()
        guard stable.includes(floor) else { return nil }
        var c = VersionVector()
        for e in stable.entries { c[e.replica] = min(e.counter, doc.version[e.replica]) }
        let history = PrefixHistory(doc)
        while true {
            var shrunk = false
            for (k, op) in history.ops.enumerated() where !c.contains(op.id) && !history.pasts[k].includes(c) {
                c = c.meet(history.pasts[k])
                shrunk = true
            }
            if !shrunk { break }
        }
        return c.includes(floor) && !floor.includes(c) ? c : nil
    }

    @Test("a chain of concurrent edits (two replicas, each editing before it takes the other's edit of the round before): the worklist finds what the passes found, round after round, once per edit")
    func chainOfConcurrentEdits() throws {
        let base = try ListDocument.make(9, sections: [["x"]])
        var a = base.fork(as: 1), b = base.fork(as: 2), hub = base.fork(as: 50)
        var made: [[ListOperation]] = []   // per round: a's edit, b's edit
        for round in 0..<200 {
            let x = try a.insertItem(atRow: 0, inSection: 0, value: Data("a\(round)".utf8))
            let y = try b.insertItem(atRow: 0, inSection: 0, value: Data("b\(round)".utf8))
            #expect(hub.receive([x, y]).refused.isEmpty)
            made.append([x, y])
            // Each takes the other's edit of two rounds ago: every edit is concurrent with the
            // other's last two, a chain back to the start.
            if round >= 2 {
                #expect(a.receive([made[round - 2][1]]).refused.isEmpty)
                #expect(b.receive([made[round - 2][0]]).refused.isEmpty)
            }
            // Within everything but a's last edit, and within everything.
            var short = hub.version
            short[ReplicaID(1)] = hub.version[ReplicaID(1)] - 1
            for stable in [short, hub.version] {
                #expect(hub.compactablePrefix(within: stable) == Self.prefixByPasses(hub, within: stable), "round \(round)")
            }
        }
        // Everything held: the whole version. Short of a's last edit: the chain reaches back to the start.
        #expect(hub.compactablePrefix(within: hub.version) == hub.version)
        var short = hub.version
        short[ReplicaID(1)] = hub.version[ReplicaID(1)] - 1
        #expect(hub.compactablePrefix(within: short) == base.version, "back to the start: what both forked from")
    }

    @Test("a hub compacted at stable prefixes while replicas keep editing values, fields and text (60 seeds, random delivery) equals one quiescent at each prefix that received the rest, and at the end shows what a never-compacted replica shows")
    func prefixCompactionEqualsQuiescentThenRest() {
        var total = Outcome()
        for seed in UInt64(1)...60 {
            let o = Self.run(seed: seed)
            if let p = o.problem { Issue.record("seed \(seed): \(p)"); continue }
            total.compactions += o.compactions
            total.prefixCompactions += o.prefixCompactions
            total.shrunk += o.shrunk
            total.dropped += o.dropped
        }
        print("prefix compaction: \(total.compactions) compactions, \(total.prefixCompactions) at a prefix, \(total.shrunk) shrunk below the replicas' minimum, \(total.dropped) operations dropped")
        #expect(total.prefixCompactions >= 40, "compacted at a prefix")
        #expect(total.shrunk > 0, "some stable versions held an operation made before its author saw them")
    }

    /// Replicas 1 and 2 start from one section; 1 deletes an item 2 never sees, 2 inserts next
    /// to it. The hub holds both; the minimum of their versions includes the delete (1 saw its
    /// own, 2 acknowledged it later), but 2's insert was made before 2 saw it.
    @Test("an operation held but made before its author saw the stable version shrinks the prefix below it; compacting at the unshrunk version is refused and changes nothing")
    func operationNotAfterStableShrinksThePrefix() throws {
        var a = ListDocument(replica: ReplicaID(1)), b = ListDocument(replica: ReplicaID(2))
        var hub = ListDocument(replica: ReplicaID(50))
        var ops: [ListOperation] = []
        ops.append(try a.insertSection(at: 0, string: "s"))
        for k in 0..<6 { ops.append(try a.insertItem(at: IndexPath(item: k, section: 0), string: "i\(k)")) }
        b.receive(ops); hub.receive(ops)
        let del = try a.deleteItem(at: IndexPath(item: 2, section: 0))
        let del2 = try a.deleteItem(at: IndexPath(item: 2, section: 0))
        let ins = try b.insertItem(at: IndexPath(item: 3, section: 0), string: "b")   // next to what a deleted
        hub.receive([del, del2, ins])
        b.receive([del, del2])
        a.receive([ins])
        // Both acknowledged everything they have now; b's insert is not after the deletes.
        let stable = a.version
        #expect(stable == b.version && stable == hub.version)
        // Quiescent: fine. Take a version short of b's insert but with the deletes instead.
        var short = hub.version
        short[ReplicaID(2)] = 0
        #expect(hub.compactablePrefix(within: short) != short, "the insert is not after the deletes")
        let before = hub.encodedSnapshot()
        do {
            try hub.compact(stable: short)
            Issue.record("compacted at a version an operation outside it was made before")
        } catch {}
        #expect(hub.encodedSnapshot() == before, "a refused compaction changes nothing")
        let prefix = try #require(hub.compactablePrefix(within: short))
        #expect(!prefix.contains(del.id), "the prefix stops before the deletes the insert did not see")
        try hub.compact(stable: prefix)
        try hub.checkInvariants()
        #expect(hub.snapshot() == a.snapshot())
    }

    @Test("after a compaction at a prefix, an operation not causally after it is refused and changes nothing; one after it applies")
    func operationBeforePrefixIsRefused() throws {
        var a = ListDocument(replica: ReplicaID(1)), c = ListDocument(replica: ReplicaID(3))
        var hub = ListDocument(replica: ReplicaID(50))
        var ops: [ListOperation] = [try a.insertSection(at: 0, string: "s")]
        for k in 0..<5 { ops.append(try a.insertItem(at: IndexPath(item: k, section: 0), string: "i\(k)")) }
        hub.receive(ops); c.receive(ops)
        let floorVersion = hub.version
        let later = try a.deleteItem(at: IndexPath(item: 1, section: 0))
        hub.receive([later])
        // c never saw the delete; the hub compacts at the version before it (c's and a's meet).
        let prefix = try #require(hub.compactablePrefix(within: floorVersion))
        #expect(prefix == floorVersion)
        try hub.compact(stable: prefix)
        #expect(hub.historyFloor == floorVersion && hub.version.contains(later.id))
        // An edit made on c after the floor (c saw all of it) applies.
        let after = try c.insertItem(at: IndexPath(item: 0, section: 0), string: "c")
        try hub.receive(after)
        #expect(hub.version.contains(after.id))
        // A replica that saw only part of the floor: refused, nothing changes.
        var d = ListDocument(replica: ReplicaID(4))
        d.receive(Array(ops.prefix(3)))
        let stale = try d.insertItem(at: IndexPath(item: 0, section: 0), string: "d")
        let before = hub.encodedSnapshot()
        do {
            try hub.receive(stale)
            Issue.record("took an operation made before the floor")
        } catch {}
        #expect(hub.encodedSnapshot() == before)
    }
}

extension ListDocument {
    /// Whether the fields of this document's visible items differ from `other`'s.
    fileprivate func fieldsSnapshotMismatch(_ other: ListDocument) -> Bool {
        for (s, id) in sectionIDs.enumerated() {
            if fields(of: id) != other.fields(of: id) { return true }
            for item in (try? itemIDs(inSection: s)) ?? [] where fields(of: item) != other.fields(of: item) { return true }
        }
        return false
    }
}
