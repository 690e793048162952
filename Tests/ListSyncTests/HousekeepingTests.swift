import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// The daemon's housekeeping decision (``DocumentCore/housekeeping(stabilityNow:now:rule:)``),
/// which the daemon's host and the simulator's daemons both take: who is retired, when the
/// stability is written, where and how often to compact.
@Suite struct HousekeepingTests {
    static let (device, live) = (SubscriberID(1), SubscriberID(2))

    /// A core on replica 99 holding a document authored by replica 1 (3 items), with only a live
    /// client (replica 2) attached, which has said it has seen everything.
    static func core() -> DocumentCore {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: base.fork(as: 99), maxFrame: 1 << 20)
        _ = core.subscribe(live, epoch: 7, version: base.version)
        _ = core.seen(live, replica: ReplicaID(2), version: base.version, role: .live, now: 100)
        return core
    }

    static let rule = CompactionRule(retireAfter: 50, minOperations: 1, interval: 1_000, gossipInterval: 10)

    @Test("a silent author holds compaction back until retired; the stability is written before the compaction point; the interval is kept")
    func retiresThenCompactsAtInterval() throws {
        var core = Self.core()
        let first = core.housekeeping(stabilityNow: 100, now: 0, rule: Self.rule)
        #expect(first.point == nil && first.retired.isEmpty, "replica 1 authored everything and is not silent for long yet")
        #expect(first.saveStability, "replica 1 is a new sender: written down")
        let due = core.housekeeping(stabilityNow: 150, now: 10, rule: Self.rule)
        #expect(due.retired == [ReplicaID(1)])
        let point = try #require(due.point)
        #expect(point == core.document.version && due.saveStability)
        try core.compact(at: point)

        // More edits, durable and seen: the next point waits for the interval.
        let ops = Fixture.edits(on: core.document, replica: 2, count: 2)
        let received = core.receive(ops, batch: 1, from: Self.live)
        _ = core.durable(ticket: try #require(received.appends.first).ticket)
        _ = core.seen(Self.live, replica: ReplicaID(2), version: core.document.version, role: .live, now: 160)
        #expect(core.housekeeping(stabilityNow: 160, now: 500, rule: Self.rule).point == nil, "within the interval")
        #expect(core.housekeeping(stabilityNow: 161, now: 1_010, rule: Self.rule).point == core.document.version)
    }

    @Test("no sender is retired while the document is not settled (a subscriber has not said what it has seen)")
    func noRetirementUnsettled() throws {
        var core = Self.core()
        _ = core.housekeeping(stabilityNow: 100, now: 0, rule: Self.rule)
        _ = core.subscribe(Self.device, epoch: 7, version: core.document.version)   // has not said `seen`
        let step = core.housekeeping(stabilityNow: 1_000, now: 0, rule: Self.rule)
        #expect(step.retired.isEmpty && step.point == nil)
        #expect(core.stability.tracker.retired.isEmpty, "refreshing the senders waits until it can change the answer")
        // Once it has said so, replica 1 (silent since 100) is retired and the document compacts.
        _ = core.seen(Self.device, replica: ReplicaID(3), version: core.document.version, role: .live, now: 1_000)
        let settled = core.housekeeping(stabilityNow: 1_000, now: 0, rule: Self.rule)
        #expect(settled.retired == [ReplicaID(1)] && settled.point == core.document.version)
    }
}
