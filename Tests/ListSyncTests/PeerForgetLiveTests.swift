import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport

/// A daemon forgotten while it still runs (an operator's mistake: `listsync serve --forget-peer`
/// for a daemon that was only cut off), with no socket (Docs/Semantics.md §7, "A daemon forgotten
/// while it runs"): once it holds the entries that forgot it and publishes again, its entry
/// acknowledges them, and the daemons that forgot it take it back; a stale copy of its entry from
/// before never does; the operator's word does not forget it again.
@Suite struct PeerForgetLiveTests {
    static let (a, b, c) = (PeerForgetTests.a, PeerForgetTests.b, PeerForgetTests.c)
    static let device = PeerForgetTests.device

    /// Three daemons that published `v1` and hold each other's entries (`c` claims the device);
    /// `c` is cut off, forgotten on `a` by its operator, and on `b` through the gossip; both
    /// move on to `v2`. Returns the three tables and `c`'s entry of before (stale).
    static func forgottenWhileRunning() -> (x: PeerStability, y: PeerStability, z: PeerStability, stale: PeerStability.Entry) {
        let v1 = PeerRetirementTests.v([101: 1]), v2 = PeerRetirementTests.v([101: 2])
        var x = PeerStability(), y = PeerStability(), z = PeerStability()
        expect(x.publish(a, version: v1, claimed: [], now: 1))
        expect(y.publish(b, version: v1, claimed: [], now: 1))
        expect(z.publish(c, version: v1, claimed: [device], now: 1))
        for _ in 0 ..< 2 {
            PeerRetirementTests.gossip(z, into: &x, me: a, now: 2); PeerRetirementTests.gossip(z, into: &y, me: b, now: 2)
            PeerRetirementTests.gossip(x, into: &y, me: b, now: 2); PeerRetirementTests.gossip(y, into: &x, me: a, now: 2)
            PeerRetirementTests.gossip(x, into: &z, me: c, now: 2); PeerRetirementTests.gossip(y, into: &z, me: c, now: 2)
        }
        let stale = z.entries[c]!
        expect(x.forget(daemon: c, me: a, now: 3))
        PeerRetirementTests.gossip(x, into: &y, me: b, now: 4)
        #expect(y.retired == [c] && y.entries[b]!.retired == [c], "b forgot c through the gossip")
        expect(x.publish(a, version: v2, claimed: [], now: 5))
        expect(y.publish(b, version: v2, claimed: [], now: 5))
        PeerRetirementTests.gossip(y, into: &x, me: a, now: 6)
        return (x, y, z, stale)
    }

    @Test("a daemon forgotten while it runs comes back once its entry acknowledges every entry that lists it; a stale copy of its entry never does, nor one without the rule")
    func comesBackOnceItAcknowledged() {
        var (x, y, z, stale) = Self.forgottenWhileRunning()
        let v2 = PeerRetirementTests.v([101: 2])
        // A stale copy of c's entry, even with a greater sequence, is not taken.
        var newer = stale
        newer.sequence += 10
        _ = x.merge([Self.c: newer], me: Self.a, floor: nil, now: 7)
        #expect(x.entries[Self.c] == nil && x.retired == [Self.c])
        // The cut heals: c holds a's and b's entries that list it, and publishes again (it caught
        // up to v2): its entry acknowledges both retirements.
        PeerRetirementTests.gossip(x, into: &z, me: Self.c, now: 8)
        PeerRetirementTests.gossip(y, into: &z, me: Self.c, now: 8)
        #expect(z.entries[Self.c] != nil && z.retired.isEmpty, "c never forgets itself")
        expect(z.publish(Self.c, version: v2, claimed: [Self.device], now: 9))
        let back = z.entries[Self.c]!
        #expect(back.acknowledged[Self.a] == x.entries[Self.a]!.retiredAt && back.acknowledged[Self.b] == y.entries[Self.b]!.retiredAt)
        // Not while its version lacks a's floor.
        _ = x.merge([Self.c: back], me: Self.a, floor: PeerRetirementTests.v([101: 3]), now: 10)
        #expect(x.entries[Self.c] == nil)
        // Without the rule, never.
        var old = x
        _ = old.merge(z.entries, me: Self.a, floor: nil, now: 10, takesBack: false)
        #expect(old.entries[Self.c] == nil && old.retired == [Self.c])
        // With it, a takes c back, and b's entry that still lists c does not forget it again.
        _ = x.merge(z.entries, me: Self.a, floor: v2, now: 10)
        #expect(x.entries[Self.c] == back && !x.retired.contains(Self.c) && x.returned == [Self.c])
        PeerRetirementTests.gossip(y, into: &x, me: Self.a, now: 11)
        #expect(x.entries[Self.c] != nil && x.returned == [Self.c])
        // a's next entry no longer lists c; b takes c back from c's entry too (it acknowledged b's).
        expect(x.publish(Self.a, version: v2, claimed: [], now: 12))
        #expect(x.entries[Self.a]!.retired.isEmpty)
        PeerRetirementTests.gossip(x, into: &y, me: Self.b, now: 13)
        #expect(y.entries[Self.c] == back && !y.retired.contains(Self.c))
        expect(y.publish(Self.b, version: v2, claimed: [], now: 14))
        // Once every daemon acknowledged every retirement, all three compact at v2 again, c's
        // device claimed by c (no relay author unclaimed).
        for _ in 0 ..< 3 {
            PeerRetirementTests.gossip(x, into: &z, me: Self.c, now: 15); PeerRetirementTests.gossip(y, into: &z, me: Self.c, now: 15)
            PeerRetirementTests.gossip(z, into: &x, me: Self.a, now: 15); PeerRetirementTests.gossip(z, into: &y, me: Self.b, now: 15)
            PeerRetirementTests.gossip(x, into: &y, me: Self.b, now: 15); PeerRetirementTests.gossip(y, into: &x, me: Self.a, now: 15)
            _ = x.acknowledgeRetirements(Self.a, now: 16); _ = y.acknowledgeRetirements(Self.b, now: 16)
            _ = z.acknowledgeRetirements(Self.c, now: 16)
        }
        _ = x.noteRelayAuthors([Self.device], now: 17, isLocal: { _ in false })
        #expect(x.allows(v2, me: Self.a) && y.allows(v2, me: Self.b) && z.allows(v2, me: Self.c),
                "\(String(describing: x.hold(v2, me: Self.a))) \(String(describing: y.hold(v2, me: Self.b))) \(String(describing: z.hold(v2, me: Self.c)))")
    }

    @Test("an entry that lists the daemon again with a later retirement it has not acknowledged forgets it again (a daemon restarted with --forget-peer)")
    func forgottenAgainByALaterListing() {
        var (x, y, z, _) = Self.forgottenWhileRunning()
        let v2 = PeerRetirementTests.v([101: 2])
        PeerRetirementTests.gossip(x, into: &z, me: Self.c, now: 8)
        PeerRetirementTests.gossip(y, into: &z, me: Self.c, now: 8)
        expect(z.publish(Self.c, version: v2, claimed: [Self.device], now: 9))
        _ = x.merge(z.entries, me: Self.a, floor: nil, now: 10)
        #expect(x.entries[Self.c] != nil)
        // b's operator forgets c again (a restart, the flag still given): its new retirement,
        // which c has not acknowledged, forgets c on a again.
        var again = y.entries[Self.b]!
        again.sequence += 1
        again.retiredAt = again.sequence
        _ = x.merge([Self.b: again], me: Self.a, floor: nil, now: 11)
        #expect(x.entries[Self.c] == nil && x.retired.contains(Self.c) && x.returned.isEmpty)
    }

    @Test("the core does not forget again on the operator's word a daemon that came back")
    func operatorWordDoesNotForgetAgain() {
        var core = DocumentCore(id: Fixture.document, name: "forget", epoch: 1, document: ListDocument(replica: Self.a))
        _ = core.subscribe(SubscriberID(2), epoch: 1, version: VersionVector())
        core.markRelay(SubscriberID(2), daemon: Self.c)
        #expect(core.refreshPeers(now: 10, retireAfter: 100, forgotten: [Self.c]).forgotten == [Self.c])
        let listing = core.stability.peers.entries[Self.a]!
        #expect(listing.retired == [Self.c])
        // c's entry acknowledges a's retirement: it ran after it was forgotten.
        let back = PeerStability.Entry(sequence: 5, version: VersionVector(), claimed: [Self.c, Self.device],
                                       acknowledged: [Self.a: listing.retiredAt])
        _ = core.peerStability(SubscriberID(2), from: Self.c, entries: [Self.c: back], now: 11)
        #expect(core.stability.peers.entries[Self.c] == back && core.stability.peers.returned == [Self.c])
        #expect(core.refreshPeers(now: 12, retireAfter: 100, forgotten: [Self.c]).forgotten.isEmpty)
        #expect(core.stability.peers.entries[Self.c] != nil)
        // With DocumentCore.Variant.keepsForgottenForGood, the entry is not taken.
        var old = DocumentCore(id: Fixture.document, name: "forget", epoch: 1, document: ListDocument(replica: Self.a))
        old.variant = .keepsForgottenForGood
        _ = old.subscribe(SubscriberID(2), epoch: 1, version: VersionVector())
        old.markRelay(SubscriberID(2), daemon: Self.c)
        _ = old.refreshPeers(now: 10, retireAfter: 100, forgotten: [Self.c])
        var stale = back
        stale.acknowledged = [Self.a: old.stability.peers.entries[Self.a]!.retiredAt]
        _ = old.peerStability(SubscriberID(2), from: Self.c, entries: [Self.c: stale], now: 11)
        #expect(old.stability.peers.entries[Self.c] == nil)
    }
}

/// A published version the copy's floor includes (Docs/Semantics.md §7, "A daemon forgotten while
/// it runs": a daemon that took a peer's snapshot whole after it published), with no socket.
@Suite struct PublishedBelowFloorTests {
    /// `PeerAdmissionTests.published()`'s core (it published `typed(3)`'s version), after it took
    /// whole a peer's snapshot compacted past that version: the peer's replica 50 edited on it, so
    /// the floor's frontier is 50's last edit, and no operation of the published version's heads'
    /// replica is among the dependencies of an edit made on the snapshot.
    static func tookSnapshot(_ variant: DocumentCore.Variant) throws -> (DocumentCore, ListDocument) {
        var (core, base) = try PeerAdmissionTests.published()
        core.variant = variant
        var peer = base.fork(as: 50)
        for op in Fixture.edits(on: base, replica: 50, count: 2) { _ = peer.receive([op]) }
        _ = try peer.compact(stable: peer.version)
        let snapshot = try ListDocument(snapshot: peer.encodedSnapshot(), replica: PeerAdmissionTests.me)
        try #require(snapshot.historyFloor?.includes(base.version) == true)
        _ = core.replace(with: snapshot)
        return (core, snapshot)
    }

    @Test("an unclaimed author's edit made on the snapshot a daemon took after it published is taken: the floor includes the published version, and asks all it would; with DocumentCore.Variant.checksPublishedBelowFloor it is refused as made before that version")
    func editOnTheSnapshotTaken() throws {
        for variant in [DocumentCore.Variant.correct, .checksPublishedBelowFloor] {
            var (core, snapshot) = try Self.tookSnapshot(variant)
            _ = core.subscribe(PeerAdmissionTests.stranger, epoch: 7, version: snapshot.version)
            let edit = Fixture.edits(on: snapshot, replica: 7, count: 1)
            let answer = PeerAdmissionTests.send(edit, from: PeerAdmissionTests.stranger, to: &core)
            if variant == .correct {
                guard case .ack? = answer else {
                    Issue.record("an edit made on the snapshot was refused: \(String(describing: answer))")
                    continue
                }
                #expect(core.document.version.contains(edit[0].id))
            } else {
                #expect(PeerAdmissionTests.isCompacted(answer), "the old check refuses it")
            }
        }
    }

    @Test("an edit made before the floor is still refused, by the floor's own check")
    func editBeforeTheFloorRefused() throws {
        var (core, _) = try Self.tookSnapshot(.correct)
        let older = Fixture.typed(2)
        _ = core.subscribe(PeerAdmissionTests.stranger, epoch: 7, version: older.version)
        let early = Fixture.edits(on: older, replica: 7, count: 1)
        #expect(PeerAdmissionTests.isCompacted(PeerAdmissionTests.send(early, from: PeerAdmissionTests.stranger, to: &core)))
    }

    @Test("a daemon that took a peer's snapshot whole publishes the snapshot's version once settled there, with no operation logged past the floor; with DocumentCore.Variant.publishesOnlyAfterAnOperation its entry stays below the floor")
    func publishesAtTheFloor() throws {
        for variant in [DocumentCore.Variant.correct, .publishesOnlyAfterAnOperation] {
            var (core, snapshot) = try Self.tookSnapshot(variant)
            let before = try #require(core.stability.peers.entries[PeerAdmissionTests.me]?.version)
            #expect(core.document.operationCount == 0 && before != snapshot.version)
            // Its device subscribes again and says it has seen the snapshot's version.
            _ = core.subscribe(PeerAdmissionTests.device, epoch: 7, version: snapshot.version)
            _ = core.seen(PeerAdmissionTests.device, replica: ReplicaID(1), version: snapshot.version, role: .compactingDevice, now: 12)
            _ = core.refreshPeers(now: 13, retireAfter: 1_000)
            let after = core.stability.peers.entries[PeerAdmissionTests.me]?.version
            if variant == .correct {
                #expect(after == snapshot.version, "published at the floor")
            } else {
                #expect(after == before, "the old core waits for an operation")
            }
        }
    }
}

