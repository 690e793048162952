import Foundation
import Testing
import ListCRDT
import ListSync

/// The daemon's per-document policy (``DocumentHostPolicy``), which the daemon's host and the
/// simulator's daemons both run: events in, actions out, without a socket, a store or a clock.
@Suite struct DocumentHostPolicyTests {
    static let (live, device) = (HousekeepingTests.live, SubscriberID(3))
    static let rule = HousekeepingTests.rule

    /// ``HousekeepingTests/core()``: replica 99 holding 3 items of replica 1, a live client
    /// (replica 2) attached that has seen everything.
    static func core() -> DocumentCore { HousekeepingTests.core() }

    /// `core` with a batch of the live client in flight (appended, not yet durable); its ticket.
    static func inFlight(_ core: inout DocumentCore) throws -> UInt64 {
        let received = core.receive(Fixture.edits(on: core.document, replica: 2, count: 1), batch: 1, from: live)
        return try #require(received.appends.first).ticket
    }

    @Test("a commit snapshots once the log passes the threshold, only when quiet and the store is free")
    func snapshotPastThreshold() throws {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: nil)
        #expect(policy.handle(.committed(logBytes: 1_000), core: &core, stabilityNow: 0, now: 0).isEmpty, "not past it")
        #expect(policy.handle(.committed(logBytes: nil), core: &core, stabilityNow: 0, now: 0).isEmpty, "size unknown")
        #expect(policy.handle(.committed(logBytes: 1_001), core: &core, stabilityNow: 0, now: 0) == [.snapshot])
        #expect(policy.handle(.committed(logBytes: 1_001), core: &core, stabilityNow: 0, now: 0, storeBusy: true).isEmpty,
                "the store writes something else")
        let ticket = try Self.inFlight(&core)
        #expect(policy.handle(.committed(logBytes: 5_000), core: &core, stabilityNow: 0, now: 0).isEmpty,
                "a batch in flight: the snapshot would hold an operation not durable")
        _ = core.durable(ticket: ticket)
        #expect(policy.handle(.committed(logBytes: 5_000), core: &core, stabilityNow: 0, now: 0) == [.snapshot])
    }

    @Test("the next snapshot waits past the last snapshot's size; a failure waits a threshold more, a race with an append does not")
    func snapshotThresholdMoves() {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 4_000, compaction: nil)
        #expect(policy.nextSnapshotAt == 4_000, "a large document is not snapshotted again for every few bytes logged")
        policy.snapshotWritten(snapshotBytes: 200)
        #expect(policy.nextSnapshotAt == 1_000)
        policy.snapshotFailed(logBytes: 1_500, retryNextBatch: true)
        #expect(policy.nextSnapshotAt == 1_000, "an append on its way: the next commit tries again")
        policy.snapshotFailed(logBytes: 1_500, retryNextBatch: false)
        #expect(policy.nextSnapshotAt == 2_500)
        #expect(policy.handle(.committed(logBytes: 2_000), core: &core, stabilityNow: 0, now: 0).isEmpty)
        #expect(policy.handle(.committed(logBytes: 2_501), core: &core, stabilityNow: 0, now: 0) == [.snapshot])
    }

    @Test("a checkpoint snapshots whatever the log's size; an unload only past the threshold")
    func checkpointAndUnload() {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 9_000, compaction: nil)
        #expect(policy.handle(.checkpoint(logBytes: 10), core: &core, stabilityNow: 0, now: 0) == [.snapshot])
        #expect(policy.handle(.checkpoint(logBytes: nil), core: &core, stabilityNow: 0, now: 0).isEmpty)
        #expect(policy.handle(.unloading(logBytes: 1_000), core: &core, stabilityNow: 0, now: 0).isEmpty)
        #expect(policy.handle(.unloading(logBytes: 1_001), core: &core, stabilityNow: 0, now: 0) == [.snapshot],
                "past the configured threshold, even under the last snapshot's size")
    }

    @Test("without compaction: no housekeeping, peer tables ignored (merged with it), nothing written at close")
    func noCompaction() {
        var core = Self.core()
        let peer = SubscriberID(5)
        _ = core.subscribe(peer, epoch: 7, version: core.document.version)
        core.markRelay(peer, daemon: ReplicaID(5))
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: nil)
        #expect(policy.handle(.tick, core: &core, stabilityNow: 1_000, now: 0).isEmpty)
        #expect(policy.handle(.released, core: &core, stabilityNow: 1_000, now: 0).isEmpty)
        let entries = [ReplicaID(5): PeerStability.Entry(sequence: 1, version: core.document.version, claimed: [ReplicaID(5)])]
        let table = DocumentHostPolicy.Event.peerStability(peer, from: ReplicaID(5), entries: entries)
        var merged = core
        #expect(policy.handle(table, core: &core, stabilityNow: 1_000, now: 0).isEmpty)
        #expect(core.stability.peers.entries[ReplicaID(5)]?.sequence == 0, "the table was not merged: a placeholder still")
        #expect(policy.handle(.closing, core: &core, stabilityNow: 1_000, now: 0).isEmpty)
        #expect(core.document.historyFloor == nil)
        // The same table with compaction on: merged.
        var compacting = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: Self.rule)
        _ = compacting.handle(table, core: &merged, stabilityNow: 1_000, now: 0)
        #expect(merged.stability.peers.entries[ReplicaID(5)]?.sequence == 1)
    }

    @Test("housekeeping: a new sender written down, then retired once silent, the stability written, then the compaction in memory")
    func retiresThenCompacts() throws {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: Self.rule)
        #expect(policy.handle(.tick, core: &core, stabilityNow: 100, now: 0) == [.saveStability], "replica 1 is a new sender")
        #expect(policy.handle(.tick, core: &core, stabilityNow: 120, now: 0).isEmpty, "replica 1 not silent for long yet")
        let version = core.document.version
        let actions = policy.handle(.tick, core: &core, stabilityNow: 150, now: 0)
        #expect(actions.count == 3)
        #expect(actions.first == .retired([ReplicaID(1)]))
        #expect(actions.dropFirst().first == .saveStability, "written before the compaction")
        guard case let .compact(floor, report) = actions.last else {
            Issue.record("no compaction: \(actions)")
            return
        }
        #expect(floor == version && core.document.historyFloor == version, "the core compacted in memory")
        #expect(report.operationsDropped > 0)
        #expect(policy.handle(.closing, core: &core, stabilityNow: 150, now: 0) == [.saveStability])
    }

    @Test("nothing is decided while the store is busy: no retirement, no compaction")
    func storeBusy() {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: Self.rule)
        _ = policy.handle(.tick, core: &core, stabilityNow: 100, now: 0)
        #expect(policy.handle(.tick, core: &core, stabilityNow: 1_000, now: 0, storeBusy: true).isEmpty)
        #expect(core.stability.tracker.retired.isEmpty && core.document.historyFloor == nil)
    }

    @Test("a seen: a new device written down; a kept copy answered with the floor; the floor told to a compacting device once durable")
    func seenAndFloor() throws {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: Self.rule)
        let version = core.document.version
        _ = core.subscribe(Self.device, epoch: 7, version: version)
        let seen = policy.handle(.seen(Self.device, replica: ReplicaID(3), version: version, role: .compactingDevice),
                                 core: &core, stabilityNow: 100, now: 0)
        #expect(seen.first == .saveStability, "a device is a new sender")
        let compacting = policy.handle(.tick, core: &core, stabilityNow: 150, now: 0)
        guard case .compact = compacting.last else {
            Issue.record("no compaction: \(compacting)")
            return
        }
        let told = policy.compactionWritten(core: core, snapshotBytes: 3_000)
        #expect(told == [.send([.send(Self.device, SyncMessage.stable(document: Fixture.document, version: version).encoded())])])
        #expect(policy.nextSnapshotAt == 3_000, "the compacted snapshot counts as the last snapshot")
        // A kept copy's `seen` is answered with the floor.
        let copy = SubscriberID(4)
        _ = core.subscribe(copy, epoch: 7, version: version)
        let answered = policy.handle(.seen(copy, replica: ReplicaID(4), version: version, role: .liveCopy),
                                     core: &core, stabilityNow: 151, now: 1)
        #expect(answered.contains(.send([.send(copy, SyncMessage.stable(document: Fixture.document, version: version).encoded())])))
    }

    @Test("the rule's interval holds a second compaction back (the driver's monotonic clock)")
    func interval() throws {
        var core = Self.core()
        var policy = DocumentHostPolicy(snapshotLogBytes: 1_000, snapshotBytes: 0, compaction: Self.rule)
        _ = policy.handle(.tick, core: &core, stabilityNow: 100, now: 0)
        #expect(policy.handle(.tick, core: &core, stabilityNow: 150, now: 10).contains { if case .compact = $0 { true } else { false } })
        let ticket = try Self.inFlight(&core)
        _ = core.durable(ticket: ticket)
        _ = core.seen(Self.live, replica: ReplicaID(2), version: core.document.version, role: .live, now: 160)
        let early = policy.handle(.released, core: &core, stabilityNow: 160, now: 500)
        #expect(!early.contains { if case .compact = $0 { true } else { false } }, "within the interval")
        let later = policy.handle(.released, core: &core, stabilityNow: 161, now: 1_010)
        #expect(later.contains { if case .compact = $0 { true } else { false } })
    }
}
