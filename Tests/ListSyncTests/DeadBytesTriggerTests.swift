import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// The bytes trigger of compaction (``CompactionTrigger``; Docs/Semantics.md §7, "When it is
/// worth it"): a settled document compacts once the bytes a compaction would free reach the
/// floor and the share of its bytes, as well as after N operations; the quiescent stable point
/// of §7 is still required.
@Suite struct DeadBytesTriggerTests {
    static let live = SubscriberID(2)

    /// A core on replica 99 holding six items of 60,000 bytes, `deleted` of them deleted, all
    /// authored by replica 1 (retired) and seen by a live client (replica 2): settled and stable.
    static func core(deleted: Int, size: Int = 60_000) throws -> DocumentCore {
        var doc = ListDocument(replica: ReplicaID(1))
        _ = try doc.insertSection(at: 0, value: Data("board".utf8))
        for k in 0 ..< 6 { _ = try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data(repeating: 65, count: size)) }
        for _ in 0 ..< deleted { _ = try doc.deleteItem(at: IndexPath(item: 0, section: 0)) }
        var core = DocumentCore(id: Fixture.document, name: "big", epoch: 7, document: doc.fork(as: 99), maxFrame: 1 << 20)
        _ = core.subscribe(live, epoch: 7, version: doc.version)
        _ = core.seen(live, replica: ReplicaID(2), version: doc.version, role: .live, now: 100)
        _ = core.refreshStability(now: 100, retireAfter: 50)
        let retired = core.refreshStability(now: 200, retireAfter: 50).retired
        #expect(retired == [ReplicaID(1)], "the author, silent, is retired")
        _ = core.seen(live, replica: ReplicaID(2), version: doc.version, role: .live, now: 200)
        return core
    }

    @Test("compactionPoint by dead bytes: five of six 60,000-byte items deleted (a dozen operations) is a point with the default floor and share; the operations trigger alone waits for 10,000")
    func deadBytesTriggerCompactsFewLargeDeletions() throws {
        var core = try Self.core(deleted: 5)
        #expect(core.reclaimableSinceCompaction >= 300_000)
        #expect(core.compactionPoint(.operations(10_000)) == nil, "12 operations are not 10,000")
        let trigger = CompactionTrigger(minOperations: 10_000)
        #expect(trigger.reclaimableFloor == CompactionTrigger.defaultFloor && trigger.reclaimableShare == CompactionTrigger.defaultShare)
        let point = try #require(core.compactionPoint(trigger), "300,000 of about 360,000 bytes are dead")
        #expect(point == core.document.version)
        try core.compact(at: point)
        #expect(core.reclaimableSinceCompaction == 0 && core.document.documentBytes == 60_005)
        #expect(core.compactionPoint(trigger) == nil, "nothing logged since the compaction")
    }

    @Test("the bytes trigger waits for both: the share of the document (one of six items dead: a sixth) and the floor (small items: under 64 KiB)")
    func deadBytesTriggerNeedsShareAndFloor() throws {
        let trigger = CompactionTrigger(minOperations: 10_000)
        let oneDead = try Self.core(deleted: 1)
        #expect(oneDead.reclaimableSinceCompaction >= 60_000)
        #expect(oneDead.compactionPoint(trigger) == nil, "a sixth of the document is under half")
        #expect(oneDead.compactionPoint(CompactionTrigger(minOperations: 10_000, reclaimableFloor: 0, reclaimableShare: 0.15)) != nil,
                "over a share of 0.15, no floor")
        let small = try Self.core(deleted: 5, size: 1_000)
        #expect(small.compactionPoint(trigger) == nil, "5,000 dead bytes are under the 64 KiB floor")
        #expect(small.compactionPoint(CompactionTrigger(minOperations: 10_000, reclaimableFloor: 4_096)) != nil, "over a 4 KiB floor")
        #expect(small.compactionPoint(.operations(12)) != nil, "the operations trigger still works alone")
    }

    @Test("the bytes trigger keeps the stable point: a live client that has not seen the deletes holds their collection back")
    func deadBytesTriggerWaitsForStability() throws {
        var core = try Self.core(deleted: 0)
        var more = core.document.fork(as: 2)
        let ops = try (0 ..< 5).map { _ in try more.deleteItem(at: IndexPath(item: 0, section: 0)) }
        let received = core.receive(ops, batch: 1, from: Self.live)
        #expect(core.compactionPoint(CompactionTrigger(minOperations: 10_000)) == nil, "in flight")
        _ = core.durable(ticket: try #require(received.appends.first).ticket)
        #expect(core.reclaimableSinceCompaction >= 300_000)
        #expect(core.quiescentPoint(CompactionTrigger(minOperations: 10_000)) == nil, "the live client has not seen them")
        // A stable prefix (Semantics §7) is only what the live client has seen: not the deletes.
        #expect(core.compactionPoint(CompactionTrigger(minOperations: 10_000)).map { !$0.includes(core.document.version) } ?? true)
        _ = core.seen(Self.live, replica: ReplicaID(2), version: core.document.version, role: .live, now: 201)
        _ = core.refreshStability(now: 201, retireAfter: 1_000)
        #expect(core.compactionPoint(CompactionTrigger(minOperations: 10_000)) == core.document.version)
    }

    @Test("the housekeeping decision takes the rule's bytes trigger (the daemon's and the simulator's rule)")
    func housekeepingUsesDeadBytes() throws {
        var core = try Self.core(deleted: 5)
        let off = CompactionRule(retireAfter: 1_000, minOperations: 10_000, interval: 0, gossipInterval: 10)
        #expect(core.housekeeping(stabilityNow: 200, now: 0, rule: off).point == nil, "no floor given: the bytes trigger is off")
        let on = CompactionRule(retireAfter: 1_000, minOperations: 10_000, interval: 0, gossipInterval: 10,
                                reclaimableFloor: CompactionTrigger.defaultFloor)
        #expect(core.housekeeping(stabilityNow: 200, now: 0, rule: on).point == core.document.version)
    }

    @Test("the threshold: the floor, or the share of the document if greater; shares outside 0...1 are clamped")
    func threshold() {
        let t = CompactionTrigger(minOperations: 100, reclaimableFloor: 1_000, reclaimableShare: 0.5)
        #expect(t.reclaimableThreshold(documentBytes: 100) == 1_000)
        #expect(t.reclaimableThreshold(documentBytes: 10_000) == 5_000)
        #expect(!t.isDue(operations: 0, reclaimable: 1_000_000, documentBytes: 1), "nothing logged: nothing to compact")
        #expect(t.isDue(operations: 1, reclaimable: 5_000, documentBytes: 10_000))
        #expect(!t.isDue(operations: 99, reclaimable: 4_999, documentBytes: 10_000))
        #expect(t.isDue(operations: 100, reclaimable: 0, documentBytes: 10_000))
        #expect(CompactionTrigger(minOperations: 1, reclaimableShare: 7).reclaimableShare == 1)
        #expect(CompactionTrigger(minOperations: 1, reclaimableShare: -1).reclaimableShare == 0)
        #expect(CompactionTrigger.operations(5).reclaimableThreshold(documentBytes: 10) == nil)
    }
}
