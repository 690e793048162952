import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// A daemon that never compacted and took another daemon's originals relayed just before that
/// daemon merged back and parted them (Docs/Semantics.md §7, "Parted originals a copy holds"),
/// with no socket: once it holds that daemon's table, its policy says so
/// (``DocumentHostPolicy/Action/remakeParted``) and the core takes the originals out and makes
/// its device's edit on them again as its own; with `DocumentCore.Variant.keepsHeldParted` they
/// stay beside the edits made again.
@Suite struct PartedHeldCoreTests {
    static let w = ReplicaID(77)
    static let (device, yAtW) = (SubscriberID(9), SubscriberID(5))

    /// W holds X's edits, and Y's originals relayed by Y's link before Y merged back (what the
    /// device of `PeerPartedTests.partedAtY()` holds); its own device (replica 8) inserted an
    /// item on them, which W acknowledged.
    static func heldAtW(variant: DocumentCore.Variant = .correct) throws -> (w: DocumentCore, y: DocumentCore, edit: ListOperation, originals: Set<OpID>) {
        let parted = try PeerPartedTests.partedAtY()
        let relayed = parted.device.operations.filter { $0.id.replica == ReplicaID(2) }
        var copy = Fixture.typed(3).fork(as: Self.w.rawValue)
        #expect(copy.receive(Fixture.edits(on: Fixture.typed(3), replica: 1, count: 2)).refused.isEmpty)
        var coreW = DocumentCore(id: PeerMergeBackTests.doc, name: "n", epoch: 7, document: copy)
        coreW.variant = variant
        _ = coreW.subscribe(Self.yAtW, epoch: 7, version: coreW.document.version)
        _ = coreW.seen(Self.yAtW, replica: PeerMergeBackTests.y, version: coreW.document.version, role: .relay, now: 2)
        let took = PeerMergeBackTests.answer(PeerMergeBackTests.send(relayed, from: Self.yAtW, to: &coreW, batch: 0), to: Self.yAtW)
        guard relayed.allSatisfy({ coreW.document.version.contains($0.lastID) }) else {
            throw PeerMergeBackTests.Failure("W did not take Y's relayed originals: \(String(describing: took))")
        }
        #expect(coreW.document.historyFloor == nil)
        var eight = try ListDocument(snapshot: coreW.document.encodedSnapshot(), replica: ReplicaID(8))
        let edit = try eight.insertItem(at: IndexPath(item: 0, section: 0), value: Data("on the originals".utf8))
        _ = coreW.subscribe(Self.device, epoch: 7, version: coreW.document.version)
        let answer = PeerMergeBackTests.answer(PeerMergeBackTests.send([edit], from: Self.device, to: &coreW), to: Self.device)
        guard case .ack? = answer else { throw PeerMergeBackTests.Failure("W did not acknowledge the edit: \(String(describing: answer))") }
        return (coreW, parted.y, edit, Set(relayed.map(\.id)))
    }

    @Test("once W holds Y's table, its policy takes Y's parted originals out of W's copy and makes W's device's edit on them again as W's own; W's entry names that edit alone; a subscriber holding them gets a snapshot; with keepsHeldParted they stay")
    func takenOutOnceTheTableCame() throws {
        var (coreW, coreY, edit, originals) = try Self.heldAtW()
        #expect(!originals.isEmpty)
        let rule = CompactionRule(retireAfter: 1_000, minOperations: 1, interval: 0, gossipInterval: 10)
        var policy = DocumentHostPolicy(snapshotLogBytes: 1 << 20, snapshotBytes: 0, compaction: rule)
        #expect(!policy.handle(.tick, core: &coreW, stabilityNow: 3, now: 3).contains(.remakeParted), "W has not heard of Y's merge back")
        let yEntries = coreY.stability.peers.entries
        let actions = policy.handle(.peerStability(Self.yAtW, from: PeerMergeBackTests.y, entries: yEntries), core: &coreW, stabilityNow: 4, now: 4)
        #expect(actions.contains(.remakeParted))
        let versionBefore = coreW.document.version
        let (remade, merge) = try #require(coreW.remakePartedWaiting())
        #expect(Set(merge.originals.map(\.id)) == originals)
        #expect(Set(merge.parted.map(\.id)) == originals.union([edit.id]))
        #expect(merge.made.count == 1 && merge.made[0].id.replica == Self.w)
        _ = coreW.replace(with: remade, parting: merge)
        #expect(!coreW.document.holdsParted(PartedRanges(yEntries.values).runs))
        let values = coreW.document.snapshot().sections[0].items.map(\.value)
        #expect(values.filter { $0 == Data("on the originals".utf8) }.count == 1)
        #expect(coreW.stability.peers.entries[Self.w]?.parted == PartedRanges(hulls: [edit.id.replica: edit.id.counter...edit.lastID.counter]),
                "W's entry names what it parted of its own authors only, not Y's originals again")
        // Nothing more to take out: the policy asks no more.
        #expect(!policy.handle(.tick, core: &coreW, stabilityNow: 5, now: 5).contains(.remakeParted))
        // A compaction renumbers the log: the positions found clean are forgotten with it (else a
        // log grown past the old count again would be looked at only from there).
        #expect(coreW.partedHeldChecked?.logCount == coreW.document.operationCount)
        try coreW.compact(at: coreW.document.version)
        #expect(coreW.partedHeldChecked == nil)
        #expect(!policy.handle(.tick, core: &coreW, stabilityNow: 6, now: 6).contains(.remakeParted))
        // The device, holding the originals and its edit, subscribes again: a snapshot.
        let again = coreW.subscribe(Self.device, epoch: 7, version: versionBefore)
        #expect(again.sent(to: Self.device).contains(where: PeerPartedTests.isSnapshot))

        var (oldW, oldY, _, _) = try Self.heldAtW(variant: .keepsHeldParted)
        var oldPolicy = DocumentHostPolicy(snapshotLogBytes: 1 << 20, snapshotBytes: 0, compaction: rule)
        let old = oldPolicy.handle(.peerStability(Self.yAtW, from: PeerMergeBackTests.y, entries: oldY.stability.peers.entries),
                                   core: &oldW, stabilityNow: 4, now: 4)
        #expect(!old.contains(.remakeParted) && oldW.remakePartedWaiting() == nil)
        #expect(oldW.document.holdsParted(PartedRanges(oldY.stability.peers.entries.values).runs), "without the rule they stay")
    }
}
