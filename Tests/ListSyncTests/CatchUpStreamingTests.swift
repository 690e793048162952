import Foundation
import Testing
import ListSyncTestTraits
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncSimulation
import ListSyncTestSupport

/// A subscriber's catch-up read from the log a step at a time (DocumentCore+CatchUp.swift): the
/// frames are those of the catch-up rebuilt whole (``DocumentCore/Variant/materialisedCatchUp``, as
/// the core did before), and what it holds is a frame's worth, not the history.
@Suite struct CatchUpStreamingTests {
    static let doc = Fixture.document
    static let (a, b, c) = (SubscriberID(1), SubscriberID(2), SubscriberID(3))

    /// A history of 3 replicas making random edits of every kind (and runs of inserts) and
    /// exchanging them; replica 1's copy, and its versions along the way.
    static func history(seed: UInt64, edits: Int) -> (doc: ListDocument, versions: [VersionVector]) {
        var rng = SplitMix64(seed: seed)
        var docs = (1...3).map { ListDocument(replica: ReplicaID(UInt64($0))) }
        var versions = [VersionVector()]
        var n = 0
        for k in 0..<edits {
            let r = rng.below(3)
            if rng.below(4) == 0, docs[r].sectionCount > 0 {
                for _ in 0..<rng.below(30) { _ = try? docs[r].insertItem(at: IndexPath(item: 0, section: 0), value: Data("t")) }
            } else {
                _ = try? RandomEdit.random(for: docs[r], using: &rng) { n += 1; return "v\(n)" }.apply(to: &docs[r])
            }
            if k % 10 == 9 {
                for o in 0..<3 where o != r { docs[o].receive(docs[r].operations(since: docs[o].version)) }
                docs[0].receive(docs[r].operations(since: docs[0].version))
                versions.append(docs[0].version)
            }
        }
        return (docs[0], versions)
    }

    /// Batches of new operations made on top of `base` by replicas 7 and 8, in order.
    static func batches(on base: ListDocument, count: Int, rng: inout SplitMix64) -> [[ListOperation]] {
        var live = base.fork(as: 7)
        var out: [[ListOperation]] = []
        for k in 0..<count {
            var ops: [ListOperation] = []
            for _ in 0..<(1 + rng.below(k % 3 == 0 ? 40 : 3)) {
                if let op = try? RandomEdit.random(for: live, using: &rng, fresh: { "b\(k)" }).apply(to: &live) { ops.append(op) }
            }
            out.append(ops)
        }
        return out
    }

    /// Runs a random script (subscribes from the versions given, hellos, batches released now or
    /// later, room given back, unsubscribes) on a core of `variant`; returns every action.
    static func script(_ variant: DocumentCore.Variant, base: ListDocument, versions: [VersionVector], seed: UInt64,
                       maxFrame: Int, stepBytes: Int, maxQueued: Int) -> [DocumentCore.Action] {
        var rng = SplitMix64(seed: seed)
        let batches = Self.batches(on: base, count: 12, rng: &rng)
        var core = DocumentCore(id: doc, name: "n", epoch: 1, document: base, maxFrame: maxFrame, stepBytes: stepBytes,
                                maxQueuedOperations: maxQueued)
        core.variant = variant
        var all: [DocumentCore.Action] = []
        var waiting: [SubscriberID] = [], tickets: [UInt64] = []
        var next = 0
        func take(_ actions: [DocumentCore.Action]) {
            all += actions
            for action in actions {
                switch action {
                case let .awaitRoom(s): waiting.append(s)
                case let .append(ticket, _, _): tickets.append(ticket)
                case let .close(s, _): waiting.removeAll { $0 == s }
                case .send: break
                }
            }
        }
        for step in 0..<400 {
            let subscribed = core.subscriberIDs
            switch rng.below(10) {
            case 0...3 where !waiting.isEmpty:
                take(core.roomAvailable(waiting.remove(at: rng.below(waiting.count))))
            case 4 where subscribed.count < 4:
                take(core.subscribe(SubscriberID(10 + step), epoch: 0, version: versions[rng.below(versions.count)]))
            case 5 where !subscribed.isEmpty:
                take(core.hello(subscribed[rng.below(subscribed.count)], version: versions[rng.below(versions.count)]))
            case 6 where next < batches.count:
                let sender = subscribed.isEmpty || rng.below(4) == 0 ? nil : subscribed[rng.below(subscribed.count)]
                take(core.receive(batches[next], batch: UInt64(next + 1), from: sender))
                next += 1
            case 7 where !tickets.isEmpty:
                take(core.durable(ticket: tickets.remove(at: rng.below(min(2, tickets.count)))))
            case 8 where !subscribed.isEmpty && rng.below(6) == 0:
                let s = subscribed[rng.below(subscribed.count)]
                waiting.removeAll { $0 == s }
                take(core.unsubscribe(s))
            default:
                break
            }
        }
        // To the end: everything durable, every subscriber given room until it is done.
        while !tickets.isEmpty { take(core.durable(ticket: tickets.removeFirst())) }
        while !waiting.isEmpty { take(core.roomAvailable(waiting.removeFirst())) }
        return all
    }

    @Test("random scripts: the streamed catch-up sends exactly the frames of the catch-up rebuilt whole, in the same order",
          .cpuHeavy, arguments: [(256, 1), (2048, 5000), (1 << 20, 1 << 20)])
    func sameFramesAsMaterialised(maxFrame: Int, stepBytes: Int) {
        for seed in [1, 2] as [UInt64] {
            let (base, versions) = Self.history(seed: seed, edits: 200)
            for maxQueued in [20, 262_144] {
                let streamed = Self.script(.correct, base: base, versions: versions, seed: seed, maxFrame: maxFrame,
                                           stepBytes: stepBytes, maxQueued: maxQueued)
                let whole = Self.script(.materialisedCatchUp, base: base, versions: versions, seed: seed, maxFrame: maxFrame,
                                        stepBytes: stepBytes, maxQueued: maxQueued)
                #expect(streamed.count > 50, "the script did something")
                #expect(streamed == whole, "seed \(seed), maxFrame \(maxFrame), stepBytes \(stepBytes), maxQueued \(maxQueued)")
            }
        }
    }

    @Test("a catch-up from any version: its frames are the operations it lacks split as OperationFrames.split does, in steps of stepBytes",
          .cpuHeavy, arguments: [(256, 1), (300, 700), (4096, 9000), (1 << 20, 1 << 20)])
    func framesOfACatchUp(maxFrame: Int, stepBytes: Int) throws {
        let (base, versions) = Self.history(seed: 4, edits: 400)
        for version in versions {
            var core = DocumentCore(id: Self.doc, name: "n", epoch: 1, document: base, maxFrame: maxFrame, stepBytes: stepBytes)
            // The expected steps, from the operations rebuilt whole.
            let lacking = base.operations(since: version)
            var steps: [[DocumentCore.Action]] = [[.send(Self.a, SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 1,
                                                                                          version: base.version).encoded())]]
            var sent = 0
            for (frame, _) in OperationFrames.split(Self.doc, lacking[...], maxFrame: maxFrame) {
                if sent >= stepBytes {
                    steps[steps.count - 1].append(.awaitRoom(Self.a))
                    steps.append([])
                    sent = 0
                }
                steps[steps.count - 1].append(.send(Self.a, frame))
                sent += frame.count
            }
            steps[steps.count - 1].append(.send(Self.a, SyncMessage.synced(document: Self.doc, version: base.version).encoded()))
            var got = [core.subscribe(Self.a, epoch: 0, version: version)]
            while got.last?.last == .awaitRoom(Self.a), got.count <= steps.count {
                #expect(core.subscribers[Self.a]!.outbox.held.count <= OperationFrames.maxOperations,
                        "a step holds a frame's worth of the catch-up, not the history")
                got.append(core.roomAvailable(Self.a))
            }
            #expect(got == steps, "from \(version): \(got.count) steps, \(steps.count) expected")
            #expect(got.flatMap { $0 }.operations(to: Self.a) == lacking)
        }
    }

    @Test("what a catch-up holds: a frame's worth while it streams (the history when rebuilt whole); not settled until sent")
    func heldWhileStreaming() throws {
        let base = Fixture.typed(20_000)
        for variant in [DocumentCore.Variant.correct, .materialisedCatchUp] {
            var core = DocumentCore(id: Self.doc, name: "n", epoch: 1, document: base, maxFrame: 4096, stepBytes: 4096)
            core.variant = variant
            var actions = core.subscribe(Self.a, epoch: 0, version: VersionVector())
            _ = core.seen(Self.a, replica: ReplicaID(5), version: base.version, role: .device, now: 0)
            var steps = 0, most = 0
            while actions.last == .awaitRoom(Self.a) {
                most = max(most, core.subscribers[Self.a]!.outbox.held.count)
                #expect(!core.isSettled(minOperations: 1), "compaction waits for the catch-up")
                actions = core.roomAvailable(Self.a)
                steps += 1
            }
            #expect(steps > 20)
            #expect(core.isSettled(minOperations: 1))
            if variant == .correct {
                #expect(most <= OperationFrames.maxOperations, "\(most) operations held")
            } else {
                #expect(most > 19_000, "the reference holds the history: \(most)")
            }
        }
    }

    /// Subscribes `a` from nothing, pumps 2 steps, then `interrupt`, then pumps to the end; every action.
    static func interrupted(_ variant: DocumentCore.Variant, base: ListDocument,
                            _ interrupt: (inout DocumentCore) -> [DocumentCore.Action]) -> [DocumentCore.Action] {
        var core = DocumentCore(id: doc, name: "n", epoch: 1, document: base, maxFrame: 512, stepBytes: 600)
        core.variant = variant
        _ = core.subscribe(b, epoch: 0, version: base.version)
        var all = core.subscribe(a, epoch: 0, version: VersionVector())
        all += core.roomAvailable(a)
        all += core.roomAvailable(a)
        #expect(all.last == .awaitRoom(a), "the catch-up is under way")
        all += interrupt(&core)
        repeat { all += core.roomAvailable(a) } while all.last == .awaitRoom(a)
        return all
    }

    @Test("compact(at:) or recovered(_:) while a catch-up streams: the rest of it is rebuilt from the log first, the frames unchanged")
    func logChangesMidCatchUp() throws {
        let (base, _) = Self.history(seed: 5, edits: 300)
        let compacted = { (core: inout DocumentCore) -> [DocumentCore.Action] in
            #expect(core.subscribers[Self.a]!.outbox.readsLog == (core.variant == .correct))
            _ = try? core.compact(at: core.document.version)
            #expect(core.document.historyFloor != nil)
            return []
        }
        let streamedC = Self.interrupted(.correct, base: base, compacted)
        #expect(streamedC == Self.interrupted(.materialisedCatchUp, base: base, compacted))
        #expect(streamedC.operations(to: Self.a) == base.operations)

        var rng = SplitMix64(seed: 9)
        let batch = Self.batches(on: base, count: 1, rng: &rng)[0]
        // Reloaded from a disk that holds the same operations in another causal order (a batch
        // logged before one whose operation it woke, say): the log positions differ.
        var reloaded = ListDocument(replica: ReplicaID(99))
        let refused = reloaded.receive((base.operations + batch).reversed()).refused
        #expect(refused.isEmpty, "\(refused.prefix(3)) \(reloaded.pendingCount)")
        var expected = base.version
        for op in batch { expected.observe(op.lastID) }
        #expect(reloaded.version == expected && reloaded.operations != base.operations + batch)
        let recovered = { (core: inout DocumentCore) -> [DocumentCore.Action] in
            var actions = core.receive(batch, batch: 1, from: Self.b)
            actions += core.appendFailed(ticket: 1, reason: "disk full")
            return actions + core.recovered(reloaded)
        }
        let streamedR = Self.interrupted(.correct, base: base, recovered)
        #expect(streamedR == Self.interrupted(.materialisedCatchUp, base: base, recovered))
        #expect(streamedR.operations(to: Self.a) == base.operations + batch)
    }
}
