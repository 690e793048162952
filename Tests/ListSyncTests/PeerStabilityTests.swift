import Foundation
import Testing
import ListCRDT
@testable import ListSync
import ListSyncRandom
import ListSyncTestSupport

/// The peers' stability table (Docs/Semantics.md §7, "Peers") with no socket: merge, retire,
/// claims, a cycle of daemons, the document core's rule, and the table on disk.
@Suite struct PeerStabilityTests {
    static let (a, b, c) = (ReplicaID(101), ReplicaID(102), ReplicaID(103))
    static func v(_ c: [UInt64: UInt64]) -> VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: c.map { (ReplicaID($0.key), $0.value) }))
    }
    static func entry(_ seq: UInt64, _ version: VersionVector, _ claimed: Set<ReplicaID> = []) -> PeerStability.Entry {
        PeerStability.Entry(sequence: seq, version: version, claimed: claimed)
    }

    @Test("merge keeps the greater sequence per daemon, whatever the order and the duplicates; a daemon's own entry is its own")
    func merge() {
        let older = [Self.b: Self.entry(1, Self.v([1: 3]))]
        let newer = [Self.b: Self.entry(2, Self.v([1: 5]))]
        var x = PeerStability(), y = PeerStability()
        expect(x.merge(older, me: Self.a, floor: nil, now: 1))
        expect(x.merge(newer, me: Self.a, floor: nil, now: 2))
        expect(!x.merge(older, me: Self.a, floor: nil, now: 3), "older: nothing changes")
        expect(!x.merge(newer, me: Self.a, floor: nil, now: 4), "a duplicate: nothing changes")
        expect(y.merge(newer, me: Self.a, floor: nil, now: 1))
        expect(!y.merge(older, me: Self.a, floor: nil, now: 2))
        #expect(x.entries == y.entries && x.entries[Self.b]?.version == Self.v([1: 5]))
        // Nobody else writes a's entry, not even with a greater sequence; a's sequence moves past
        // it (a's file was lost or restored), so that a's next reports are taken.
        expect(x.publish(Self.a, version: Self.v([1: 5]), claimed: [], now: 5))
        expect(x.merge([Self.a: Self.entry(99, Self.v([1: 9]))], me: Self.a, floor: nil, now: 6))
        #expect(x.entries[Self.a] == Self.entry(100, Self.v([1: 5]), [Self.a]))
        expect(!x.merge([Self.a: Self.entry(99, Self.v([1: 9]))], me: Self.a, floor: nil, now: 6), "older than a's own: nothing")
        // Publishing the same again is no change; a heartbeat is, once due.
        expect(!x.publish(Self.a, version: Self.v([1: 5]), claimed: [], now: 7, heartbeat: 10))
        expect(x.publish(Self.a, version: Self.v([1: 5]), claimed: [], now: 16, heartbeat: 10))
        expect(!x.heartbeat(Self.a, now: 20, every: 10) && x.heartbeat(Self.a, now: 26, every: 10))
        #expect(x.entries[Self.a]?.sequence == 102)
        // A daemon that has published nothing yet and hears of its old entry starts past it, empty.
        var fresh = PeerStability()
        expect(fresh.merge([Self.a: Self.entry(7, Self.v([1: 5]))], me: Self.a, floor: nil, now: 1))
        #expect(fresh.entries[Self.a] == Self.entry(8, VersionVector(), [Self.a]))
        #expect(!fresh.allows(Self.v([1: 5]), me: Self.a))
    }

    @Test("every daemon known must report exactly the version; a placeholder holds it back")
    func allows() {
        var x = PeerStability()
        let vv = Self.v([1: 4])
        #expect(!x.allows(vv, me: Self.a), "not even this daemon has published")
        _ = x.publish(Self.a, version: vv, claimed: [], now: 1)
        #expect(x.allows(vv, me: Self.a), "alone")
        expect(x.note(daemon: Self.b, me: Self.a, now: 1))
        expect(!x.note(daemon: Self.b, me: Self.a, now: 2) && !x.note(daemon: Self.a, me: Self.a, now: 2))
        #expect(!x.allows(vv, me: Self.a), "b attached and has said nothing")
        _ = x.merge([Self.b: Self.entry(1, Self.v([1: 3]))], me: Self.a, floor: nil, now: 2)
        #expect(!x.allows(vv, me: Self.a), "b is behind")
        _ = x.merge([Self.b: Self.entry(2, Self.v([1: 5]))], me: Self.a, floor: nil, now: 3)
        #expect(!x.allows(vv, me: Self.a), "b is ahead: it may hold what this daemon lacks")
        _ = x.publish(Self.a, version: Self.v([1: 5]), claimed: [], now: 4)
        #expect(x.allows(Self.v([1: 5]), me: Self.a))
    }

    @Test("a relay author holds compaction back until a daemon claims it, or it is retired")
    func claims() {
        var x = PeerStability()
        let vv = Self.v([1: 4, 7: 2])
        _ = x.publish(Self.a, version: vv, claimed: [], now: 1)
        _ = x.merge([Self.b: Self.entry(1, vv, [Self.b, ReplicaID(8)])], me: Self.a, floor: nil, now: 1)
        expect(x.noteRelayAuthors([ReplicaID(7), ReplicaID(8), Self.b], now: 1, isLocal: { _ in false }))
        #expect(!x.allows(vv, me: Self.a), "7 is claimed by nobody: it may be a replica of a daemon not heard of")
        #expect(x.isClaimed(ReplicaID(8)) && x.isClaimed(Self.b))
        expect(x.retireSilent(me: Self.a, now: 5, after: 10).isEmpty)
        // b claims 7 from now on.
        _ = x.merge([Self.b: Self.entry(2, vv, [Self.b, ReplicaID(7), ReplicaID(8)])], me: Self.a, floor: nil, now: 6)
        #expect(x.allows(vv, me: Self.a))
        // Counted locally: no longer a relay author.
        expect(x.local(ReplicaID(7)) && !x.relayAuthors.contains(ReplicaID(7)))
        // An author nobody claims, silent for the retire period: retired, it no longer counts.
        var y = PeerStability()
        _ = y.publish(Self.a, version: vv, claimed: [], now: 1)
        _ = y.noteRelayAuthors([ReplicaID(7)], now: 1, isLocal: { _ in false })
        #expect(!y.allows(vv, me: Self.a))
        expect(y.retireSilent(me: Self.a, now: 11, after: 10) == [ReplicaID(7)])
        #expect(y.allows(vv, me: Self.a))
        expect(!y.noteRelayAuthors([ReplicaID(7)], now: 12, isLocal: { _ in false }), "retired stays retired")
    }

    @Test("a silent daemon is retired; it counts again only with a version past the floor")
    func retire() {
        var x = PeerStability()
        let vv = Self.v([1: 4])
        _ = x.publish(Self.a, version: vv, claimed: [], now: 0)
        _ = x.merge([Self.b: Self.entry(1, Self.v([1: 2]))], me: Self.a, floor: nil, now: 0)
        #expect(!x.allows(vv, me: Self.a))
        expect(x.retireSilent(me: Self.a, now: 9, after: 10).isEmpty)
        expect(x.retireSilent(me: Self.a, now: 10, after: 10) == [Self.b], "this daemon's own entry is never retired")
        #expect(x.allows(vv, me: Self.a) && x.retired == [Self.b])
        expect(!x.note(daemon: Self.b, me: Self.a, now: 11), "a retired daemon's link is no placeholder")
        expect(!x.merge([Self.b: Self.entry(5, Self.v([1: 3]))], me: Self.a, floor: vv, now: 12), "behind the floor: stays retired")
        expect(x.merge([Self.b: Self.entry(6, Self.v([1: 4]))], me: Self.a, floor: vv, now: 13), "caught up: counts again")
        #expect(x.retired.isEmpty && x.allows(vv, me: Self.a))
    }

    @Test("a cycle of daemons a-b-c-a: gossip in any order converges, stale tables going round change nothing, and each compacts only once all three reported the version")
    func cycle() {
        let ids = [Self.a, Self.b, Self.c]
        let vv = Self.v([1: 9])
        for seed in UInt64(1)...50 {
            var rng = SplitMix64(seed: seed)
            var tables = [PeerStability(), PeerStability(), PeerStability()]
            // Every daemon notes its two neighbours (their links attached).
            for i in 0..<3 { for j in 0..<3 where i != j { _ = tables[i].note(daemon: ids[j], me: ids[i], now: 0) } }
            var inFlight: [(to: Int, from: Int, entries: [ReplicaID: PeerStability.Entry])] = []
            func send(_ i: Int) {
                for j in [(i + 1) % 3, (i + 2) % 3] { inFlight.append((j, i, tables[i].entries)) }
            }
            // Each daemon publishes an older version, then the final one (versions only grow), the
            // daemons in random order.
            var turns = [0, 0, 1, 1, 2, 2]
            turns.shuffle(using: &rng)
            var published = Set<Int>()
            for i in turns {
                let version = published.insert(i).inserted ? Self.v([1: UInt64(5 + i)]) : vv
                _ = tables[i].publish(ids[i], version: version, claimed: [], now: 1)
                send(i)
                // Deliver some, duplicate some, in random order.
                while !inFlight.isEmpty, rng.next() % 3 != 0 {
                    let k = Int(rng.next() % UInt64(inFlight.count))
                    let m = inFlight[k]
                    if rng.next() % 4 != 0 { inFlight.remove(at: k) }
                    if tables[m.to].merge(m.entries, me: ids[m.to], floor: nil, now: 2) { send(m.to) }
                }
            }
            while let m = inFlight.popLast() {
                if tables[m.to].merge(m.entries, me: ids[m.to], floor: nil, now: 3) { send(m.to) }
            }
            for i in 0..<3 {
                #expect(tables[i].entries == tables[0].entries, "seed \(seed): daemon \(i) did not converge")
                #expect(tables[i].allows(vv, me: ids[i]), "seed \(seed): daemon \(i) does not allow the final version")
                #expect(!tables[i].allows(Self.v([1: 5]), me: ids[i]))
            }
            // A stale table arriving late (an old entry of b's, from round the cycle) changes nothing.
            var late = tables[0]
            expect(!late.merge([Self.b: Self.entry(1, Self.v([1: 5]))], me: Self.a, floor: nil, now: 4))
            #expect(late.allows(vv, me: Self.a))
        }
    }

    @Test("an author counted here that never reported, claimed by another daemon, becomes a relay author (lost file, crash); claimed only by this daemon, it stays")
    func adoptClaimed() {
        var s = DocumentStability()
        _ = s.noteAuthors(of: Self.v([5: 2, 6: 1]), now: 1)
        #expect(s.tracker.acknowledged.keys.sorted() == [ReplicaID(5), ReplicaID(6)])
        _ = s.peers.publish(Self.a, version: VersionVector(), claimed: [ReplicaID(6)], now: 2)
        expect(!s.adoptClaimedAuthors(me: Self.a, now: 3), "claimed by this daemon only")
        _ = s.peers.merge([Self.b: Self.entry(1, Self.v([5: 2]), [ReplicaID(5)])], me: Self.a, floor: nil, now: 4)
        expect(s.adoptClaimedAuthors(me: Self.a, now: 5))
        #expect(s.tracker.acknowledged.keys.sorted() == [ReplicaID(6)] && s.peers.relayAuthors == [ReplicaID(5)])
        // One that reported stays a sender.
        _ = s.heardFromDevice(ReplicaID(6), version: Self.v([6: 1]), caughtUp: true, now: 6)
        _ = s.peers.merge([Self.b: Self.entry(2, Self.v([5: 2]), [ReplicaID(5), ReplicaID(6)])], me: Self.a, floor: nil, now: 7)
        expect(!s.adoptClaimedAuthors(me: Self.a, now: 8) && s.tracker.acknowledged[ReplicaID(6)] == Self.v([6: 1]))
    }

    @Test("the table round-trips in the stability file; a version-1 file still loads, with no peers")
    func persistence() throws {
        var s = DocumentStability()
        _ = s.noteAuthors(of: Self.v([1: 3]), now: 50)
        _ = s.peers.noteRelayAuthors([ReplicaID(6)], now: 55, isLocal: { _ in false })
        _ = s.heardFromRelay(Self.b, me: Self.a, now: 60)
        _ = s.peers.publish(Self.a, version: Self.v([1: 3]), claimed: [ReplicaID(1)], now: 61)
        _ = s.peers.merge([Self.c: Self.entry(4, Self.v([1: 3, 5: 1]), [ReplicaID(5)])], me: Self.a, floor: nil, now: 62)
        _ = s.peers.noteRelayAuthors([ReplicaID(5)], now: 63, isLocal: { _ in false })
        let gone = s.peers.retireSilent(me: Self.a, now: 200, after: 140)   // b (heard at 60) and 6 (never claimed)
        #expect(gone == [Self.b, ReplicaID(6)])
        #expect(s.noteAuthors(of: Self.v([1: 3, 5: 1, 6: 1, 102: 1, 103: 1]), now: 201) == false,
                "relay authors and daemons, retired or not, are not counted as this daemon's senders")
        #expect(s.peers.retired == [Self.b] && s.peers.retiredAuthors == [ReplicaID(6)])
        let bytes = s.encoded()
        #expect(bytes.starts(with: Array("LSSTAB8\n".utf8)))
        let back = try DocumentStability(decoding: bytes)
        #expect(back == s)
        for n in 0..<bytes.count {
            #expect(throws: SyncProtocolError.self) { try DocumentStability(decoding: Array(bytes.prefix(n))) }
        }
        // Version 1: "LSSTAB1\n" relayed:u8 senders (replica heard version)× retired× ephemeral×.
        var w = [UInt8]("LSSTAB1\n".utf8) + [1]          // relayed
        w += [1, 7, 50, 1, 7, 3]                          // sender 7, heard 50, version {7: 3}
        w += [1, 8]                                       // retired 8
        w += [1, 9]                                       // ephemeral 9
        let old = try DocumentStability(decoding: w)
        #expect(old.relayed && old.peers.isEmpty)
        #expect(old.tracker.acknowledged == [ReplicaID(7): Self.v([7: 3])] && old.tracker.retired == [ReplicaID(8)])
        #expect(old.ephemeral == [ReplicaID(9)])
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 3")
        #expect(throws: SyncProtocolError.self) { try DocumentStability(decoding: w + [0]) }
    }

    @Test("the stability message round-trips and refuses a daemon twice, a replica claimed twice, replica 0 and every truncation")
    func message() throws {
        let m = SyncMessage.stability(document: Fixture.document, from: Self.a, entries: [
            Self.a: Self.entry(3, Self.v([1: 4, 101: 2]), [Self.a, ReplicaID(1)]),
            Self.b: Self.entry(0, VersionVector(), []),
        ])
        let bytes = m.encoded()
        #expect(bytes[1] == 21 && SyncMessage.stabilityTag == 21)
        #expect(try SyncMessage(decoding: bytes) == m)
        for n in 0..<bytes.count {
            #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: Array(bytes.prefix(n))) }
        }
        // document, from, 1 entry: daemon 5, sequence 1, version {}, claimed [7, 7].
        let head = [2, 21] + Fixture.document.bytes + [101]
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: head + [1, 5, 1, 0, 2, 7, 7]) }
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: head + [2, 5, 1, 0, 0, 5, 1, 0, 0]) }
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: head + [1, 0, 1, 0, 0]) }
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: [2, 21] + Fixture.document.bytes + [0, 0]) }
        #expect(try SyncMessage(decoding: head + [1, 5, 1, 0, 1, 7]) ==
                .stability(document: Fixture.document, from: Self.a, entries: [ReplicaID(5): Self.entry(1, VersionVector(), [ReplicaID(7)])]))
    }
}

/// `#expect` for a condition that mutates (the macro takes no mutating member).
func expect(_ condition: Bool, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(condition, comment, sourceLocation: sourceLocation)
}

/// The document core's side: a peer link's daemon and the authors it relayed.
@Suite struct PeerCompactionCoreTests {
    static let doc = Fixture.document
    static let (device, link) = (SubscriberID(1), SubscriberID(5))
    static let peer = ReplicaID(50)

    @Test("the core waits for the peer's table at its version and for a claim of every author the link relayed, then compacts; its own table goes to the link")
    func relayAuthorHoldsBack() throws {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: 99))
        _ = core.subscribe(Self.device, epoch: 7, version: base.version)
        _ = core.subscribe(Self.link, epoch: 7, version: base.version)
        _ = core.seen(Self.link, replica: Self.peer, version: base.version, role: .relay, now: 10)
        // Replica 5's edits reach this daemon through the link only.
        let ops = Fixture.edits(on: base, replica: 5, count: 2)
        let received = core.receive(ops, batch: 0, from: Self.link)
        let ticket = try #require(received.appends.first?.ticket)
        let released = core.durable(ticket: ticket)
        #expect(released.operations(to: Self.device).count == 2 && released.operations(to: Self.link).isEmpty)
        let version = core.document.version
        _ = core.seen(Self.device, replica: ReplicaID(1), version: version, role: .device, now: 11)
        _ = core.refreshPeers(now: 12, retireAfter: 1_000)
        #expect(core.stability.tracker.acknowledged[ReplicaID(5)] == nil, "a relay author is not a sender here")
        #expect(core.stability.peers.relayAuthors == [ReplicaID(5)])
        #expect(core.localQuiescentVersion == version && core.stability.peers.entries[ReplicaID(99)]?.version == version)
        #expect(core.compactionPoint(minOperations: 1) == nil, "daemon 50 has not reported")
        expect(core.gossip(now: 0, interval: 10).isEmpty, "the link never sent a table: it may be an older build")
        // The peer reports the version but does not claim 5: 5 may be a replica of a daemon not heard of.
        let entry = PeerStability.Entry(sequence: 1, version: version, claimed: [Self.peer])
        expect(core.peerStability(Self.link, from: Self.peer, entries: [Self.peer: entry], now: 13))
        #expect(core.compactionPoint(minOperations: 1) == nil)
        let gossip = core.gossip(now: 0, interval: 10)
        guard case let .stability(_, from, entries)? = gossip.sent(to: Self.link).first else {
            Issue.record("no table sent to the link: \(gossip)")
            return
        }
        #expect(from == ReplicaID(99) && entries[ReplicaID(99)]?.version == version && entries[Self.peer] == entry)
        #expect(gossip.sent(to: Self.device).isEmpty)
        let claiming = PeerStability.Entry(sequence: 2, version: version, claimed: [Self.peer, ReplicaID(5)])
        _ = core.peerStability(Self.link, from: Self.peer, entries: [Self.peer: claiming], now: 14)
        expect(core.gossip(now: 5, interval: 10).isEmpty, "coalesced: within the interval")
        expect(!core.gossip(now: 10, interval: 10).isEmpty)
        #expect(core.compactionPoint(minOperations: 1) == version)
        // A new edit of the device: this daemon is no longer at the version its peer reported.
        var device = base.fork(as: 1)
        for op in core.document.operations(since: base.version) { _ = device.receive([op]) }
        let mine = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("d".utf8))
        let more = core.receive([mine], batch: 3, from: Self.device)
        _ = core.durable(ticket: try #require(more.appends.first?.ticket))
        _ = core.seen(Self.device, replica: ReplicaID(1), version: core.document.version, role: .device, now: 15)
        _ = core.refreshPeers(now: 15, retireAfter: 1_000)
        #expect(core.compactionPoint(minOperations: 1) == nil, "the peer is behind")
    }

    @Test("a peer link of this daemon, marked relay at attach: what it delivers counts as relayed, and it takes the table at once")
    func ownLink() throws {
        let base = Fixture.typed(2)
        // This daemon's copy came through the link (a peer made the document).
        var core = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: ListDocument(replica: ReplicaID(99)))
        _ = core.subscribe(Self.link, epoch: 7, version: VersionVector())
        core.markRelay(Self.link)
        let ops = base.operations(since: VersionVector()) + Fixture.edits(on: base, replica: 6, count: 1)
        _ = core.durable(ticket: try #require(core.receive(ops, batch: 0, from: Self.link).appends.first?.ticket))
        _ = core.refreshPeers(now: 1, retireAfter: 100)
        #expect(core.stability.peers.relayAuthors == [ReplicaID(1), ReplicaID(6)])
        #expect(core.compactionPoint(minOperations: 1) == nil, "the link's daemon is not known yet")
        expect(core.gossip(now: 0, interval: 10).sent(to: Self.link).count == 1)
        let entry = PeerStability.Entry(sequence: 1, version: core.document.version, claimed: [ReplicaID(1), ReplicaID(6)])
        _ = core.peerStability(Self.link, from: Self.peer, entries: [Self.peer: entry], now: 2)
        #expect(core.compactionPoint(minOperations: 1) == core.document.version)
    }
}

extension PeerCompactionCoreTests {
    @Test("an empty copy replaced by a peer's compacted snapshot: the document is the snapshot's, every subscriber is cut off and subscribes again from the snapshot")
    func replaceWithSnapshot() throws {
        var peer = Fixture.typed(4)
        try peer.compact(stable: peer.version)
        let snapshot = try ListDocument(snapshot: peer.encodedSnapshot(), replica: ReplicaID(99))
        var core = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: ListDocument(replica: ReplicaID(99)))
        _ = core.subscribe(Self.device, epoch: 7, version: VersionVector())
        let cut = core.replace(with: snapshot)
        #expect(cut == [.close(Self.device, reason: "the daemon's copy was replaced by a peer's snapshot; subscribe again")])
        #expect(core.document.version == peer.version && core.durableVersion == peer.version && core.document.historyFloor == peer.version)
        #expect(!core.isSubscribed(Self.device))
        // Subscribing again from nothing: the catch-up is the snapshot.
        let again = core.subscribe(Self.device, epoch: 7, version: VersionVector())
        #expect(again.sent(to: Self.device).contains { if case .snapshot = $0 { return true }; return false })
    }
}

/// The peer link's side: what it says and passes on.
@Suite struct PeerSessionStabilityTests {
    static let doc = Fixture.document

    /// A link of daemon 77 with `doc` attached (the peer answered its subscription).
    static func attached() -> (PeerSession, [PeerSession.Action]) {
        var p = PeerSession(maxFrame: 1 << 20, daemon: ReplicaID(77))
        let local = PeerSession.LocalDocument(id: doc, name: "n", epoch: 7, version: VersionVector())
        _ = p.reconcile(remote: [DocumentInfo(id: doc, name: "n", epoch: 7, operations: 0)], local: [local], complete: true, now: 0)
        let live = p.receive(SyncMessage.subscribed(document: doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 0)
        return (p, live)
    }

    @Test("the link names its daemon in its seen, before it attaches (so that nothing it relays comes first); the peer's table passes to the core and names the peer")
    func seenThenAttach() {
        var (p, live) = Self.attached()
        #expect(live.count == 2)
        #expect(live.sent == [.seen(document: Self.doc, replica: ReplicaID(77), version: VersionVector(), role: .relay)])
        #expect(live.last == .attach(Self.doc, remoteVersion: VersionVector()), "the seen goes first")
        #expect(p.peerDaemon == nil)
        let entries = [ReplicaID(88): PeerStability.Entry(sequence: 1, version: VersionVector(), claimed: [ReplicaID(88)])]
        let table = p.receive(SyncMessage.stability(document: Self.doc, from: ReplicaID(88), entries: entries).encoded(), now: 1)
        #expect(table == [.stability(Self.doc, from: ReplicaID(88), entries: entries)])
        #expect(p.peerDaemon == ReplicaID(88))
        // Not attached: nothing passes.
        let other = p.receive(SyncMessage.stability(document: Fixture.other, from: ReplicaID(88), entries: entries).encoded(), now: 1)
        #expect(other.isEmpty)
    }

    @Test("a relayed batch the peer refuses as compacted is reported, and the link fetches the peer's snapshot to merge back onto; an older peer's refusal of stability stops it")
    func refusals() {
        var (p, _) = Self.attached()
        let refused = p.receive(SyncMessage.error(request: 0, document: Self.doc, code: .compacted, text: "before the floor").encoded(), now: 1)
        #expect(refused.requests == [.refusedCompacted(Self.doc, "before the floor"), .detach(Self.doc)])
        #expect(refused.sent.count == 1, "a subscription from nothing (PeerMergeBackTests.linkFetchesTheSnapshot)")
        #expect(p.client.sendsStability)
        _ = p.receive(SyncMessage.error(request: 0, document: nil, code: .malformed, text: "malformed message: unknown message type 21").encoded(), now: 2)
        #expect(!p.client.sendsStability)
    }

    @Test("the server connection passes a peer's table for attached documents only, never a device's, and remembers the peer daemon")
    func server() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let entries = [ReplicaID(88): PeerStability.Entry(sequence: 2, version: VersionVector(), claimed: [])]
        let frame = SyncMessage.stability(document: Self.doc, from: ReplicaID(88), entries: entries).encoded()
        #expect(s.receive(frame, now: 0).isEmpty, "not attached")
        s.attached(Self.doc)
        #expect(s.relayDaemon == nil)
        _ = s.receive(SyncMessage.seen(document: Self.doc, replica: ReplicaID(88), version: VersionVector(), role: .relay).encoded(), now: 0)
        #expect(s.relayDaemon == ReplicaID(88) && !s.relayGossips)
        #expect(s.receive(frame, now: 0) == [.stability(Self.doc, from: ReplicaID(88), entries: entries)])
        #expect(s.relayGossips)
    }
}
