import Foundation
import Testing
import ListCRDT
@testable import ListSync

/// On a peered document, what a client may still send once its daemon published a version to
/// its peers (Docs/Semantics.md §7, "Peers", "Replicas no daemon counts";
/// `DocumentCore+Admission.swift`).
@Suite struct PeerAdmissionTests {
    static let doc = Fixture.document
    static let (device, stranger, link, roamer, cli) = (SubscriberID(1), SubscriberID(2), SubscriberID(5), SubscriberID(6), SubscriberID(8))
    static let (me, peer) = (ReplicaID(99), ReplicaID(50))

    /// A daemon's core holding `typed(3)`, a device of replica 1 (the author) that said `seen`,
    /// and a link of daemon `peer`: it publishes `typed(3)`'s version.
    static func published() throws -> (DocumentCore, ListDocument) {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: doc, name: "n", epoch: 7, document: base.fork(as: me.rawValue))
        _ = core.subscribe(device, epoch: 7, version: base.version)
        _ = core.subscribe(link, epoch: 7, version: base.version)
        _ = core.seen(link, replica: peer, version: base.version, role: .relay, now: 10)
        _ = core.seen(device, replica: ReplicaID(1), version: base.version, role: .compactingDevice, now: 10)
        _ = core.refreshPeers(now: 11, retireAfter: 1_000)
        try #require(core.stability.peers.entries[me]?.version == base.version, "the daemon published its version")
        return (core, base)
    }

    /// Receives `ops` from `from` and makes the batch durable; returns the answer to `from`.
    static func send(_ ops: [ListOperation], from: SubscriberID, to core: inout DocumentCore, batch: UInt64 = 4) -> SyncMessage? {
        var actions = core.receive(ops, batch: batch, from: from)
        for a in actions.appends { actions += core.durable(ticket: a.ticket) }
        return actions.sent(to: from).first { m in
            switch m {
            case .ack, .error: return true
            default: return false
            }
        }
    }

    /// Replica 6 reported to the peer daemon, which claims it (at `typed(2)`'s version, returned),
    /// and subscribes here as `roamer`.
    static func roamerClaimedByThePeer(_ core: inout DocumentCore) -> ListDocument {
        let older = Fixture.typed(2)
        let peerEntry = PeerStability.Entry(sequence: 1, version: older.version, claimed: [peer, ReplicaID(6)])
        _ = core.peerStability(link, from: peer, entries: [peer: peerEntry], now: 12)
        _ = core.subscribe(roamer, epoch: 7, version: older.version)
        return older
    }

    static func isCompacted(_ m: SyncMessage?) -> Bool {
        if case .error(_, _, .compacted, _)? = m { return true }
        return false
    }

    @Test("an author no daemon claims, sending an edit made before the version its daemon published, is refused as compacted; one made after it is taken")
    func unclaimedBeforePublished() throws {
        var (core, base) = try Self.published()
        let older = Fixture.typed(2)   // a prefix of typed(3): edits on it are concurrent with the published version
        _ = core.subscribe(Self.stranger, epoch: 7, version: older.version)
        let early = Fixture.edits(on: older, replica: 7, count: 2)
        let before = core.document.version
        #expect(Self.isCompacted(Self.send(early, from: Self.stranger, to: &core)))
        #expect(core.document.version == before, "a refusal changes nothing")
        // What depends on a refused edit is refused too, rather than kept waiting for it.
        var later = older.fork(as: 7)
        for op in early { _ = later.receive([op]) }
        let next = try later.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
        #expect(Self.isCompacted(Self.send([next], from: Self.stranger, to: &core, batch: 5)))
        // The same replica, re-synced: its edit is made on the published version, and taken.
        let fresh = Fixture.edits(on: base, replica: 7, count: 1)
        guard case .ack? = Self.send(fresh, from: Self.stranger, to: &core, batch: 6) else {
            Issue.record("an edit made after the published version was refused")
            return
        }
        #expect(core.document.version.contains(fresh[0].id))
    }

    @Test("an author a daemon claims (here, or a roaming device another daemon claims), a peer link, and a client that opened the document afresh are taken")
    func claimedAndAfterAreTaken() throws {
        var (core, base) = try Self.published()
        let older = Self.roamerClaimedByThePeer(&core)
        let roaming = Fixture.edits(on: older, replica: 6, count: 1)
        guard case .ack? = Self.send(roaming, from: Self.roamer, to: &core) else {
            Issue.record("a device another daemon claims was refused")
            return
        }
        // A peer link relays an edit of a replica nobody claims: the peer's business, taken.
        let relayed = Fixture.edits(on: older, replica: 9, count: 1)
        var actions = core.receive(relayed, batch: 0, from: Self.link)
        for a in actions.appends { actions += core.durable(ticket: a.ticket) }
        #expect(core.document.version.contains(relayed[0].id))
        // A client that keeps no copy opens the document now and edits it: after the published version.
        _ = core.subscribe(Self.cli, epoch: 7, version: VersionVector())
        var opened = ListDocument(replica: ReplicaID(8))
        _ = opened.receive(core.document.operations(since: VersionVector()))
        let edit = try opened.insertItem(at: IndexPath(item: 1, section: 0), value: Data("c".utf8))
        guard case .ack? = Self.send([edit], from: Self.cli, to: &core, batch: 7) else {
            Issue.record("an edit made on the current document was refused")
            return
        }
        _ = base
    }

    @Test("before its daemon published anything, any edit is taken (no peer can have compacted at a version it has not reported)")
    func nothingPublished() throws {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: Self.me.rawValue))
        _ = core.subscribe(Self.link, epoch: 7, version: base.version)
        _ = core.seen(Self.link, replica: Self.peer, version: base.version, role: .relay, now: 10)
        _ = core.subscribe(Self.stranger, epoch: 7, version: VersionVector())
        let early = Fixture.edits(on: Fixture.typed(2), replica: 7, count: 1)
        guard case .ack? = Self.send(early, from: Self.stranger, to: &core) else {
            Issue.record("refused with nothing published")
            return
        }
    }

    @Test("the split this prevents: daemon X compacts at the version both reported, daemon W moves on without compacting; an edit made before that version by a replica no daemon counts is refused by W as X would refuse it, so their copies stay the same")
    func noSplit() throws {
        let base = Fixture.typed(3)
        let (x, w) = (ReplicaID(50), ReplicaID(99))
        let (wAtX, xAtW, devAtW) = (SubscriberID(5), SubscriberID(5), SubscriberID(1))
        var coreX = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: x.rawValue))
        var coreW = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: w.rawValue))
        _ = coreX.subscribe(wAtX, epoch: 7, version: base.version)
        _ = coreX.seen(wAtX, replica: w, version: base.version, role: .relay, now: 1)
        _ = coreW.subscribe(xAtW, epoch: 7, version: base.version)
        _ = coreW.seen(xAtW, replica: x, version: base.version, role: .relay, now: 1)
        _ = coreW.subscribe(devAtW, epoch: 7, version: base.version)
        _ = coreW.seen(devAtW, replica: ReplicaID(1), version: base.version, role: .compactingDevice, now: 1)
        // Replica 1 (the author) is W's device, claimed by W; X then claims nobody but itself.
        _ = coreW.refreshPeers(now: 2, retireAfter: 1_000)
        _ = coreX.peerStability(wAtX, from: w, entries: coreW.stability.peers.entries, now: 3)
        _ = coreX.refreshPeers(now: 3, retireAfter: 1_000)
        _ = coreW.peerStability(xAtW, from: x, entries: coreX.stability.peers.entries, now: 4)
        let floor = try #require(coreX.compactionPoint(minOperations: 1))
        #expect(floor == base.version)
        _ = try coreX.compact(at: floor)
        // W's device edits before W learns anything more: W never compacts at that version.
        let moved = Fixture.edits(on: base, replica: 1, count: 1)
        guard case .ack? = Self.send(moved, from: devAtW, to: &coreW) else {
            Issue.record("the device's edit was refused")
            return
        }
        #expect(coreW.compactionPoint(minOperations: 1) == nil && coreW.document.historyFloor == nil)
        // Replica 7 subscribed once, left before its first seen arrived, and edited offline.
        let offline = Fixture.edits(on: Fixture.typed(2), replica: 7, count: 1)
        _ = coreW.subscribe(Self.stranger, epoch: 7, version: Fixture.typed(2).version)
        #expect(Self.isCompacted(Self.send(offline, from: Self.stranger, to: &coreW, batch: 9)),
                "W took an edit that X, compacted, refuses: the copies would differ")
        // X refuses it too, as relayed or sent directly.
        _ = coreX.subscribe(Self.stranger, epoch: 7, version: Fixture.typed(2).version)
        #expect(Self.isCompacted(Self.send(offline, from: Self.stranger, to: &coreX, batch: 9)))
    }

    @Test("the published version's heads, known without the document at that version (after a restart): an edit covering them through a later operation is after it")
    func headsOfAnOlderVersion() throws {
        var (core, _) = try Self.published()
        let published = try #require(core.stability.peers.entries[Self.me]?.version)
        #expect(core.heads(of: published) == core.document.frontier.ids)
        // Two concurrent edits after it, then one of a stranger that saw both.
        let a = Fixture.edits(on: core.document, replica: 1, count: 1)
        let relayed = Fixture.edits(on: core.document, replica: 9, count: 1)
        _ = Self.send(a, from: Self.device, to: &core)
        var actions = core.receive(relayed, batch: 0, from: Self.link)
        for t in actions.appends { actions += core.durable(ticket: t.ticket) }
        #expect(core.heads(of: core.document.version).count == 2)
        #expect(Set(core.heads(of: published)) == Set(Fixture.typed(3).frontier.ids))
        core.publishedMark = nil   // as after a restart: the heads are found again
        var stranger = ListDocument(replica: ReplicaID(7))
        _ = stranger.receive(core.document.operations(since: VersionVector()))
        let edit = try stranger.insertItem(at: IndexPath(item: 0, section: 0), value: Data("s".utf8))
        _ = core.subscribe(Self.stranger, epoch: 7, version: VersionVector())
        guard case .ack? = Self.send([edit], from: Self.stranger, to: &core, batch: 8) else {
            Issue.record("an edit after the published version was refused")
            return
        }
    }
    /// Found by the simulator (`--compact-after 10 --daemons 3 --crashes 3 --ops 100 --seed 700077
    /// --lose-daemon --roam 40 --retire-after 50`): a daemon acknowledged an edit waiting for its
    /// cause, refused the cause, then refused the edit when its device sent it again. The device
    /// made it again under a new id, while the first applied once a peer relayed the cause; the
    /// device never had it, and refused what later referred to it ("unknown slot") for ever.
    @Test("an edit waiting here for its cause, acknowledged, is taken again as it is when sent again after this daemon refused that cause; it applies once a peer relays the cause")
    func waitingEditNotRefusedAgain() throws {
        var (core, _) = try Self.published()
        let older = Self.roamerClaimedByThePeer(&core)   // replica 7 nobody claims
        _ = core.subscribe(Self.stranger, epoch: 7, version: older.version)
        // 7's edit, made before the published version; 6 saw it and edited after it.
        let cause = Fixture.edits(on: older, replica: 7, count: 1)
        var six = older.fork(as: 6)
        _ = six.receive(cause)
        let edit = try six.insertItem(at: IndexPath(item: 0, section: 0), value: Data("six".utf8))
        // The edit arrives first: it waits for its cause, durable and acknowledged.
        guard case .ack? = Self.send([edit], from: Self.roamer, to: &core) else {
            Issue.record("an edit of a claimed replica waiting for its cause was refused")
            return
        }
        #expect(core.document.isWaiting(edit))
        // The cause comes from 7 itself: refused (unclaimed, made before the published version).
        #expect(Self.isCompacted(Self.send(cause, from: Self.stranger, to: &core, batch: 5)))
        // 6 sends the edit again (its connection dropped before the answer): taken as it is.
        let again = Self.send([edit], from: Self.roamer, to: &core, batch: 6)
        guard case .ack? = again else {
            Issue.record("an acknowledged edit waiting here was refused when sent again: \(String(describing: again))")
            return
        }
        #expect(core.document.isWaiting(edit))
        // A peer took the cause (it judged it against its own published version) and relays it:
        // both apply.
        var actions = core.receive(cause, batch: 0, from: Self.link)
        for a in actions.appends { actions += core.durable(ticket: a.ticket) }
        #expect(core.document.version.contains(cause[0].id) && core.document.version.contains(edit.id))
        #expect(core.document.pendingCount == 0)
    }
}
