import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport

/// Forgetting a peer daemon gone for good (`listsync serve --forget-peer`, Docs/Semantics.md §7,
/// "Forgetting a daemon"), with no socket: its stale entry no longer holds compaction back, the
/// other daemons forget it through the gossip and acknowledge that before any compacts, a stale
/// copy of its entry is not taken again, and the relay authors no daemon left claims are retired.
@Suite struct PeerForgetTests {
    static let (a, b, c) = (ReplicaID(101), ReplicaID(102), ReplicaID(103))
    static let device = ReplicaID(7), shared = ReplicaID(8)

    /// Three daemons that published `before` and know each other's entries; `c` claims the
    /// device, `b` claims `shared` (which `c` claims too); then `a` and `b` moved on to `after`
    /// (published) while `c` is gone. `b` took the device's and `shared`'s operations relayed.
    static func goneForGood() -> (a: PeerStability, b: PeerStability, before: PeerStability, after: VersionVector) {
        let before = PeerRetirementTests.v([101: 1])
        let after = PeerRetirementTests.v([101: 2, 7: 1])
        var x = PeerStability(), y = PeerStability(), z = PeerStability()
        expect(x.publish(a, version: before, claimed: [], now: 1))
        expect(y.publish(b, version: before, claimed: [shared], now: 1))
        expect(z.publish(c, version: before, claimed: [device, shared], now: 1))
        for _ in 0 ..< 2 {
            PeerRetirementTests.gossip(z, into: &x, me: a, now: 2); PeerRetirementTests.gossip(z, into: &y, me: b, now: 2)
            PeerRetirementTests.gossip(x, into: &y, me: b, now: 2); PeerRetirementTests.gossip(y, into: &x, me: a, now: 2)
        }
        let stale = y
        expect(y.noteRelayAuthors([device, shared], now: 3, isLocal: { _ in false }))
        expect(x.publish(a, version: after, claimed: [], now: 3))
        expect(y.publish(b, version: after, claimed: [shared], now: 3))
        PeerRetirementTests.gossip(x, into: &y, me: b, now: 4)
        PeerRetirementTests.gossip(y, into: &x, me: a, now: 4)
        return (x, y, stale, after)
    }

    @Test("a daemon gone for good holds compaction back on every other for ever; forgotten on one, it is forgotten on the others through the gossip, and both compact once each acknowledged the other's entry")
    func forgottenEverywhere() {
        var (x, y, _, after) = Self.goneForGood()
        #expect(x.hold(after, me: Self.a) == .daemonAtAnotherVersion(Self.c))
        #expect(y.hold(after, me: Self.b) == .daemonAtAnotherVersion(Self.c))

        // The operator forgets c on a.
        expect(x.forget(daemon: Self.c, me: Self.a, now: 5))
        expect(!x.forget(daemon: Self.c, me: Self.a, now: 5), "once")
        expect(!x.forget(daemon: Self.a, me: Self.a, now: 5), "never itself")
        #expect(x.entries[Self.c] == nil && x.retired == [Self.c])
        // Its entry lists c at once, a retirement at its next sequence; publishing the same
        // version again changes nothing more.
        let retiredAt = x.entries[Self.a]!.retiredAt
        expect(!x.publish(Self.a, version: after, claimed: [], now: 5))
        #expect(retiredAt == x.entries[Self.a]!.sequence && x.entries[Self.a]!.retired == [Self.c])
        #expect(x.hold(after, me: Self.a) == .retirementNotAcknowledged(Self.a, by: Self.b), "b has not acknowledged")

        // b holds a's entry: it forgets c too; the device, a relay author only c claimed, is
        // retired; `shared`, which b claims itself, is not.
        PeerRetirementTests.gossip(x, into: &y, me: Self.b, now: 6)
        #expect(y.entries[Self.c] == nil && y.retired == [Self.c])
        #expect(y.retiredAuthors == [Self.device] && !y.relayAuthors.contains(Self.device))
        // b, quiescent at the same version, acknowledges a's retirement and lists c itself.
        expect(y.publish(Self.b, version: after, claimed: [Self.shared], now: 7))
        #expect(y.entries[Self.b]!.acknowledged[Self.a] == retiredAt && y.entries[Self.b]!.retired == [Self.c])
        PeerRetirementTests.gossip(y, into: &x, me: Self.a, now: 8)
        expect(x.acknowledgeRetirements(Self.a, now: 9))
        PeerRetirementTests.gossip(x, into: &y, me: Self.b, now: 10)
        #expect(x.allows(after, me: Self.a) && y.allows(after, me: Self.b))
    }

    @Test("forgotten, a daemon takes with it the devices it counted without its entry saying so here (lost before it published them): a relay author no daemon left claims is retired; one another daemon claims is not; one noted after the forget waits as before")
    func unreportedDevicesRetired() {
        let v = PeerRetirementTests.v([101: 1])
        var x = PeerStability(), y = PeerStability(), z = PeerStability()
        expect(x.publish(Self.a, version: v, claimed: [], now: 1))
        expect(y.publish(Self.b, version: v, claimed: [Self.shared], now: 1))
        // c counts the device, but was lost before an entry of it claiming the device went out.
        expect(z.publish(Self.c, version: v, claimed: [], now: 1))
        PeerRetirementTests.gossip(z, into: &x, me: Self.a, now: 2)
        PeerRetirementTests.gossip(y, into: &x, me: Self.a, now: 2)
        // The device's operations and shared's reached a through c.
        expect(x.noteRelayAuthors([Self.device, Self.shared], now: 3, isLocal: { _ in false }))
        #expect(x.hold(v, me: Self.a) == .unclaimedRelayAuthor(Self.device), "waited for: no entry claims it")
        expect(x.forget(daemon: Self.c, me: Self.a, now: 4))
        #expect(x.retiredAuthors == [Self.device] && x.relayAuthors == [Self.shared])
        // An author noted later is waited for as before; forgetting c again changes nothing.
        let late = ReplicaID(9)
        expect(x.noteRelayAuthors([late], now: 5, isLocal: { _ in false }))
        expect(!x.forget(daemon: Self.c, me: Self.a, now: 6))
        #expect(x.relayAuthors == [Self.shared, late] && x.retiredAuthors == [Self.device])
    }

    @Test("a stale copy of the forgotten daemon's entry that still goes round is not taken again while a daemon lists it")
    func staleEntryNotTakenAgain() {
        var (x, _, stale, after) = Self.goneForGood()
        expect(x.forget(daemon: Self.c, me: Self.a, now: 5))
        // b's table from before still holds c's entry; so does one with a greater sequence.
        _ = x.merge(stale.entries, me: Self.a, floor: nil, now: 6)
        var newer = stale.entries
        newer[Self.c]!.sequence += 10
        _ = x.merge(newer, me: Self.a, floor: nil, now: 7)
        #expect(x.entries[Self.c] == nil && x.retired.contains(Self.c))
        // Without any daemon listing it, a retired daemon whose new entry caught up is taken back
        // (as before: a daemon retired by silence that comes back).
        var y = PeerStability()
        expect(y.publish(Self.b, version: after, claimed: [], now: 1))
        expect(y.forget(daemon: Self.c, me: Self.b, now: 5))
        var back = newer
        back[Self.b] = nil
        back[Self.a] = nil
        _ = y.merge(back, me: Self.b, floor: nil, now: 8)
        #expect(y.entries[Self.c] == nil, "b's own entry lists it")
        // A daemon that forgot c before it ever published: its first entry is a retirement.
        var z = PeerStability()
        expect(z.forget(daemon: Self.c, me: Self.a, now: 1))
        expect(z.publish(Self.a, version: after, claimed: [], now: 2))
        #expect(z.entries[Self.a]!.retired == [Self.c] && z.entries[Self.a]!.retiredAt == z.entries[Self.a]!.sequence)
    }

    @Test("the core forgets what refreshPeers is told once, says so, and its next entry lists it")
    func coreForgets() throws {
        var core = DocumentCore(id: Fixture.document, name: "forget", epoch: 1, document: ListDocument(replica: Self.a))
        core.markRelay(SubscriberID(1))   // not subscribed: nothing
        expect(core.stability.peers.isEmpty)
        // A peer's table reaches the core over an attached link.
        _ = core.subscribe(SubscriberID(2), epoch: 1, version: VersionVector())
        core.markRelay(SubscriberID(2), daemon: Self.c)
        #expect(core.stability.peers.entries[Self.c] != nil)
        let first = core.refreshPeers(now: 10, retireAfter: 100, forgotten: [Self.c])
        #expect(first.forgotten == [Self.c] && first.changed)
        #expect(core.stability.peers.entries[Self.c] == nil && core.stability.peers.retired == [Self.c])
        #expect(core.refreshPeers(now: 11, retireAfter: 100, forgotten: [Self.c]).forgotten.isEmpty, "once")
        // Its entry (a heartbeat's, as it has not been quiescent) lists c, so a table that still
        // holds c's entry does not bring it back.
        #expect(core.stability.peers.entries[Self.a]?.retired.contains(Self.c) == true)
        _ = core.peerStability(SubscriberID(2), from: Self.b, entries: [Self.c: PeerStability.Entry(sequence: 3, version: VersionVector(), claimed: [Self.c])], now: 12)
        #expect(core.stability.peers.entries[Self.c] == nil)
        #expect(core.refreshPeers(now: 13, retireAfter: 100, forgotten: [Self.c]).forgotten.isEmpty)
    }
}
