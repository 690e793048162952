import Foundation
import Testing
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSync
import ListSyncTestSupport
import ListSyncSimulation
import ListSyncRandom

/// Compaction while the list is busy (Docs/Semantics.md §7, "A stable prefix"), on the document
/// core with no socket and no disk: devices that keep editing, and acknowledge what they have
/// seen a round late, never leave the document quiescent; the core compacts at the stable prefix
/// their acknowledgements allow, again and again, while its version moves on.
@Suite struct BusyCompactionTests {
    static let devices = [SubscriberID(1), SubscriberID(2)]
    static let replicas = [ReplicaID(1), ReplicaID(2)]

    struct Outcome {
        var compactions = 0
        var atPrefix = 0
        var core: DocumentCore
        var docs: [ListDocument]
        var made: [ListOperation]
        /// The most operations the core held since its floor after a round.
        var mostHeld = 0
    }

    /// How the devices of ``run(seed:rounds:variant:mode:)`` edit.
    enum Mode {
        /// Device 0 edits every round; device 1 only reads (a list one person types into while
        /// another watches).
        case oneWriter
        /// Both edit every round, each after taking everything the core held at the round's start
        /// (their edits of one round are concurrent, those of the next are after them).
        case twoWritersInRounds
        /// Both edit every round, each having taken what the core held a round before: each
        /// edit is concurrent with the other device's edits of the round before, a chain that
        /// never breaks, so no prefix is stable (Docs/Semantics.md §7, "A stable prefix"); the core
        /// compacts keeping the concurrent edits ("Compacting under a chain of concurrent edits").
        case twoWritersLagging
    }

    /// Two devices; the writers (by `mode`) make a few random edits per round and send them at
    /// once (made durable); each device takes the core's operations (by `mode`), and reports as
    /// seen its version of a round before (never the core's version: the document is never
    /// quiescent). The core's housekeeping runs after every round, with an operations trigger
    /// of 8 and no interval; a point it finds is compacted at.
    static func run(seed: UInt64, rounds: Int = 60, variant: DocumentCore.Variant = .correct, mode: Mode = .twoWritersInRounds,
                    interval: UInt64 = 0, peered: Bool = false) throws -> Outcome {
        var rng = SplitMix64(seed: seed)
        // Made by the daemon's own replica (as at `create`): it holds everything it made.
        let base = Fixture.typed(3, replica: 99)
        var core = DocumentCore(id: Fixture.document, name: "busy", epoch: 7, document: base, maxFrame: 1 << 20)
        core.variant = variant
        var docs = [base.fork(as: 1), base.fork(as: 2)]
        var lastSeen = docs.map(\.version)
        var lagged = core.document
        var rule = CompactionRule(retireAfter: 1 << 40, minOperations: 8, interval: interval, gossipInterval: 10)
        rule.stablePrefixes = true
        rule.peered = peered
        for (k, sub) in devices.enumerated() {
            _ = core.subscribe(sub, epoch: 7, version: base.version)
            _ = core.seen(sub, replica: replicas[k], version: base.version, role: .compactingDevice, now: 1)
        }
        _ = core.refreshStability(now: 1, retireAfter: 1 << 40)
        var out = Outcome(core: core, docs: docs, made: [])
        var batch: UInt64 = 0
        var counter = 0
        for round in 0..<rounds {
            if mode == .twoWritersInRounds {
                for k in docs.indices { docs[k].receive(core.document.operations(since: docs[k].version)) }
            }
            for k in docs.indices where k == 0 || mode != .oneWriter {
                let before = docs[k].operationCount
                for _ in 0..<(1 + rng.below(3)) {
                    let edit = RandomEdit.random(for: docs[k], using: &rng) { counter += 1; return "v\(counter)" }
                    _ = try? edit.apply(to: &docs[k])
                }
                let ops = try docs[k].operations(from: before)
                guard !ops.isEmpty else { continue }
                out.made += ops
                batch += 1
                let actions = core.receive(ops, batch: batch, from: devices[k])
                for a in actions.appends { _ = core.durable(ticket: a.ticket) }
            }
            // Each device takes what the core held a round ago, and says it has seen what it
            // had a round ago (its own operations included: the core holds them).
            for k in docs.indices {
                if lagged.hasHistory(since: docs[k].version) { docs[k].receive(lagged.operations(since: docs[k].version)) }
                _ = core.seen(devices[k], replica: replicas[k], version: lastSeen[k], role: .compactingDevice, now: 2 + UInt64(round))
                lastSeen[k] = docs[k].version
            }
            lagged = core.document
            out.mostHeld = max(out.mostHeld, core.document.operationCount)
            let step = core.housekeeping(stabilityNow: 2 + UInt64(round), now: UInt64(round), rule: rule)
            if let point = step.point {
                let shown = core.document.snapshot()
                let version = core.document.version
                try core.compact(at: point)
                out.compactions += 1
                if point != version { out.atPrefix += 1 }
                #expect(core.document.snapshot() == shown && core.document.version == version && core.durableVersion == version)
                #expect(core.document.historyFloor == point)
            }
        }
        out.core = core
        out.docs = docs
        return out
    }

    /// Every operation made is in the core; the devices catch up from its history (their
    /// versions include its floor) and show what it shows.
    static func checkNothingLost(_ o: inout Outcome, seed: UInt64) throws {
        for op in o.made { #expect(o.core.document.version.contains(op.lastID), "seed \(seed): \(op.id) lost") }
        try o.core.document.checkInvariants()
        for k in o.docs.indices {
            let v = o.docs[k].version
            #expect(o.core.document.hasHistory(since: v), "seed \(seed): device \(k) is behind the floor")
            o.docs[k].receive(o.core.document.operations(since: v))
        }
        #expect(o.docs[0].snapshot() == o.core.document.snapshot() && o.docs[1].snapshot() == o.core.document.snapshot(),
                "seed \(seed): the copies differ")
    }

    @Test("with an interval of 80 rounds, a document that holds four times the trigger's operations since its floor compacts an eighth of the interval after the last time: the history held stays near four times the trigger, and nothing is lost")
    func overdueDocumentCompactsSooner() throws {
        for seed in UInt64(1)...4 {
            var o = try Self.run(seed: seed, rounds: 240, mode: .oneWriter, interval: 80)
            // One writer makes 1–3 operations a round: overdue (32 held) within 32 rounds of a
            // compaction, then compacted at most 10 rounds later. With the whole interval
            // between compactions it would hold up to 240 (80 rounds of 3).
            #expect(o.compactions >= 8, "seed \(seed): \(o.compactions) compactions")
            #expect(o.mostHeld <= 4 * 8 + 10 * 3 + 8, "seed \(seed): \(o.mostHeld) operations held at most")
            try Self.checkNothingLost(&o, seed: seed)
        }
    }

    @Test("one device types without pause while another watches and acknowledges a round late: the core compacts at the stable prefix again and again while its version moves on, and loses nothing")
    func oneWriterCompactsAtStablePrefixes() throws {
        for seed in UInt64(1)...8 {
            var o = try Self.run(seed: seed, mode: .oneWriter)
            #expect(o.compactions >= 5, "seed \(seed): \(o.compactions) compactions")
            #expect(o.atPrefix >= 5, "seed \(seed): \(o.atPrefix) at a prefix")
            try Self.checkNothingLost(&o, seed: seed)
        }
    }

    @Test("two devices that both edit every round (each after taking what the core held at the round's start) and acknowledge a round late: the core compacts at stable prefixes again and again, and loses nothing")
    func twoWritersInRoundsCompactAtStablePrefixes() throws {
        for seed in UInt64(1)...8 {
            var o = try Self.run(seed: seed, mode: .twoWritersInRounds)
            #expect(o.compactions >= 5, "seed \(seed): \(o.compactions) compactions")
            #expect(o.atPrefix >= 5, "seed \(seed): \(o.atPrefix) at a prefix")
            try Self.checkNothingLost(&o, seed: seed)
        }
    }

    @Test("two devices that each edit before taking the other's last edits leave no stable prefix (a chain of concurrent edits that never breaks): the core compacts at what both acknowledged, keeping what the concurrent edits name, again and again, its history stays short, and it loses nothing; compacting only at stable prefixes (compactsOnlyAtStablePrefixes), or with peers, it compacts hardly at all")
    func twoWritersLaggingCompactKeepingConcurrent() throws {
        for seed in UInt64(1)...4 {
            var o = try Self.run(seed: seed, mode: .twoWritersLagging)
            #expect(o.compactions >= 15, "seed \(seed): \(o.compactions) compactions")
            #expect(o.mostHeld <= 60, "seed \(seed): at most \(o.mostHeld) operations held since the floor")
            try Self.checkNothingLost(&o, seed: seed)
            var old = try Self.run(seed: seed, variant: .compactsOnlyAtStablePrefixes, mode: .twoWritersLagging)
            #expect(old.compactions <= 3, "seed \(seed): \(old.compactions) compactions at stable prefixes only")
            #expect(old.mostHeld > 3 * o.mostHeld, "seed \(seed): \(old.mostHeld) held at stable prefixes only, \(o.mostHeld) keeping concurrent edits")
            try Self.checkNothingLost(&old, seed: seed)
            // A daemon the rule says has peers (none linked yet) keeps to stable prefixes too:
            // a peer's link could still bring an operation not after its floor.
            var peered = try Self.run(seed: seed, mode: .twoWritersLagging, peered: true)
            #expect(peered.compactions <= 3, "seed \(seed): \(peered.compactions) compactions with peers")
            try Self.checkNothingLost(&peered, seed: seed)
        }
    }

    @Test("with compaction at a quiescent point only (DocumentCore.Variant.compactsOnlyWhenQuiescent), the same busy documents never compact")
    func quiescentOnlyNeverCompactsWhileBusy() throws {
        for seed in UInt64(1)...8 {
            for mode in [Mode.oneWriter, .twoWritersInRounds] {
                let o = try Self.run(seed: seed, variant: .compactsOnlyWhenQuiescent, mode: mode)
                #expect(o.compactions == 0, "seed \(seed), \(mode)")
            }
        }
    }

    @Test("a subscriber that joins behind the floor of a busy document gets a snapshot, then the operations after it")
    func lateSubscriberGetsSnapshot() throws {
        var o = try Self.run(seed: 3)
        let floor = try #require(o.core.document.historyFloor)
        #expect(floor != VersionVector())
        let sent = o.core.subscribe(SubscriberID(9), epoch: 7, version: VersionVector()).sent(to: SubscriberID(9))
        let parts = sent.compactMap { m -> [UInt8]? in if case let .snapshot(_, part, _) = m { return part }; return nil }
        #expect(!parts.isEmpty, "a snapshot")
        let loaded = try ListDocument(snapshot: parts.flatMap { $0 }, replica: ReplicaID(77))
        #expect(loaded.snapshot() == o.core.document.snapshot() && loaded.version == o.core.document.version)
    }
}
