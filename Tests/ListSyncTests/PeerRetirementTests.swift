import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport

/// Retiring a replica on a document that peer daemons sync (Docs/Semantics.md §7, "Retiring with
/// peers"), with no socket: a daemon that retired a replica compacts only once every daemon was
/// locally quiescent holding its entry without it; a relay author the daemon claiming it retired is
/// retired where it was relayed; the new fields on the wire and on disk.
@Suite struct PeerRetirementTests {
    static let (a, b, c) = (ReplicaID(101), ReplicaID(102), ReplicaID(103))
    static let device = ReplicaID(7), other = ReplicaID(8)
    static func v(_ c: [UInt64: UInt64]) -> VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: c.map { (ReplicaID($0.key), $0.value) }))
    }

    /// Gossips `from`'s table into `to` (the daemons' ids).
    static func gossip(_ from: PeerStability, into to: inout PeerStability, me: ReplicaID, now: UInt64) {
        _ = to.merge(from.entries, me: me, floor: nil, now: now)
    }

    @Test("a daemon that retired a device compacts only once every peer was locally quiescent holding its entry without it; a heartbeat is not enough")
    func retirementAcknowledged() {
        let version = Self.v([7: 5, 101: 3])
        var x = PeerStability(), y = PeerStability(), z = PeerStability()
        // a counts the device; b and c count nobody but themselves. All quiescent at `version`.
        expect(x.publish(Self.a, version: version, claimed: [Self.device], now: 1))
        expect(y.publish(Self.b, version: version, claimed: [], now: 1))
        expect(z.publish(Self.c, version: version, claimed: [], now: 1))
        for _ in 0 ..< 2 {
            Self.gossip(x, into: &y, me: Self.b, now: 2); Self.gossip(x, into: &z, me: Self.c, now: 2)
            Self.gossip(y, into: &x, me: Self.a, now: 2); Self.gossip(y, into: &z, me: Self.c, now: 2)
            Self.gossip(z, into: &x, me: Self.a, now: 2); Self.gossip(z, into: &y, me: Self.b, now: 2)
        }
        #expect(x.allows(version, me: Self.a) && y.allows(version, me: Self.b) && z.allows(version, me: Self.c))

        // a retires the device: its entry claims less, a retirement at its new sequence.
        expect(x.publish(Self.a, version: version, claimed: [], retired: [Self.device], now: 3))
        let retiredAt = x.entries[Self.a]!.retiredAt
        #expect(retiredAt == x.entries[Self.a]!.sequence && retiredAt > 0)
        #expect(x.entries[Self.a]!.retired == [Self.device])
        #expect(!x.allows(version, me: Self.a), "b and c have not acknowledged it")
        #expect(!x.retirementsAcknowledged)
        Self.gossip(x, into: &y, me: Self.b, now: 4)
        Self.gossip(x, into: &z, me: Self.c, now: 4)
        #expect(!y.allows(version, me: Self.b), "b's own entry does not acknowledge it yet")

        // b only heartbeats (not quiescent): its entry is republished unchanged, nothing acknowledged.
        expect(y.heartbeat(Self.b, now: 100, every: 10))
        #expect(y.entries[Self.b]!.acknowledged.isEmpty)
        Self.gossip(y, into: &x, me: Self.a, now: 101)
        #expect(!x.allows(version, me: Self.a))

        // b quiescent again, holding a's entry: it acknowledges; c not yet.
        expect(y.publish(Self.b, version: version, claimed: [], now: 102))
        #expect(y.entries[Self.b]!.acknowledged == [Self.a: retiredAt])
        expect(!y.publish(Self.b, version: version, claimed: [], now: 103), "the same again: no change")
        Self.gossip(y, into: &x, me: Self.a, now: 104)
        #expect(!x.allows(version, me: Self.a), "c has not acknowledged")
        // c is not quiescent, but its copy has not moved from its entry's version: it acknowledges.
        expect(z.acknowledgeRetirements(Self.c, now: 105))
        #expect(z.entries[Self.c]!.acknowledged == [Self.a: retiredAt] && z.entries[Self.c]!.version == version)
        expect(!z.acknowledgeRetirements(Self.c, now: 105), "the same again: no change")
        Self.gossip(z, into: &x, me: Self.a, now: 106)
        Self.gossip(z, into: &y, me: Self.b, now: 106)
        Self.gossip(y, into: &z, me: Self.c, now: 106)
        Self.gossip(x, into: &z, me: Self.c, now: 106)
        Self.gossip(x, into: &y, me: Self.b, now: 106)
        #expect(x.allows(version, me: Self.a) && y.allows(version, me: Self.b) && z.allows(version, me: Self.c))

        // An acknowledgement of an older retirement is not one of a newer.
        expect(x.publish(Self.a, version: version, claimed: [Self.other], retired: [Self.device], now: 200))
        #expect(x.entries[Self.a]!.retiredAt == retiredAt, "claiming more is no retirement")
        expect(x.publish(Self.a, version: version, claimed: [], retired: [Self.device, Self.other], now: 201))
        #expect(x.entries[Self.a]!.retiredAt > retiredAt)
        Self.gossip(x, into: &y, me: Self.b, now: 202)
        #expect(!x.allows(version, me: Self.a) && !y.allows(version, me: Self.b))
    }

    /// Two peered cores, X (replica 50) and W (replica 99), at `typed(2)`: X counts device 7, W
    /// counts device 1 (the author); both published and learnt each other's entries (W's view of
    /// X's claims device 7). Device 7 goes offline; device 1's next insert reaches W, then X over
    /// the link; X retires device 7 and publishes the new version without it, W publishes it
    /// too, and X learns W's entry. Returns the cores, the new version and device 7's edit made
    /// offline before it.
    static func retiredOffline(_ variant: DocumentCore.Variant) throws -> (x: DocumentCore, w: DocumentCore, version: VersionVector,
                                                                            offline: [ListOperation]) {
        let two = Fixture.typed(2), three = Fixture.typed(3)
        let insert = three.operations(since: two.version)
        var x = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: two.fork(as: 50))
        var w = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: two.fork(as: 99))
        x.variant = variant
        _ = x.subscribe(link, epoch: 7, version: two.version)
        _ = x.seen(link, replica: ReplicaID(99), version: two.version, role: .relay, now: 1)
        _ = w.subscribe(link, epoch: 7, version: two.version)
        _ = w.seen(link, replica: ReplicaID(50), version: two.version, role: .relay, now: 1)
        _ = x.subscribe(deviceAtX, epoch: 7, version: two.version)
        _ = x.seen(deviceAtX, replica: Self.device, version: two.version, role: .compactingDevice, now: 1)
        _ = w.subscribe(authorAtW, epoch: 7, version: two.version)
        _ = w.seen(authorAtW, replica: ReplicaID(1), version: two.version, role: .compactingDevice, now: 1)
        // Two rounds: X counts the author as its sender until W's entry claims it.
        for now in [UInt64(2), 3] {
            _ = x.refreshPeers(now: now, retireAfter: 100)
            _ = w.refreshPeers(now: now, retireAfter: 100)
            _ = x.peerStability(link, from: ReplicaID(99), entries: w.stability.peers.entries, now: now)
            _ = w.peerStability(link, from: ReplicaID(50), entries: x.stability.peers.entries, now: now)
        }
        try #require(w.stability.peers.entries[ReplicaID(50)]?.claimed.contains(Self.device) == true)
        // Device 7 goes offline and edits there; device 1 inserts at W, relayed to X.
        _ = x.unsubscribe(deviceAtX)
        let offline = Fixture.edits(on: two, replica: Self.device.rawValue, count: 1)
        guard case .ack? = PeerAdmissionTests.send(insert, from: authorAtW, to: &w) else { throw Failure("W refused the author's insert") }
        _ = w.seen(authorAtW, replica: ReplicaID(1), version: three.version, role: .compactingDevice, now: 4)
        var actions = x.receive(insert, batch: 0, from: link)
        for a in actions.appends { actions += x.durable(ticket: a.ticket) }
        try #require(x.document.version == three.version && w.document.version == three.version)
        #expect(x.compactionBlock == "not locally quiescent: senders behind [\(Self.device)]", "\(x.compactionBlock)")
        // Device 7 silent past the retire period: X retires it and publishes; so does W.
        let (_, retired, _) = x.refreshPeers(now: 200, retireAfter: 100)
        try #require(retired == [Self.device])
        _ = w.refreshPeers(now: 200, retireAfter: 100)
        _ = x.peerStability(link, from: ReplicaID(99), entries: w.stability.peers.entries, now: 201)
        try #require(x.stability.peers.entries[ReplicaID(50)]?.version == three.version
                     && x.stability.peers.entries[ReplicaID(99)]?.version == three.version)
        return (x, w, three.version, offline)
    }

    static let link = SubscriberID(5), deviceAtX = SubscriberID(1), authorAtW = SubscriberID(1), roamerAtW = SubscriberID(2)
    struct Failure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

    @Test("the split retiring by agreement prevents: X retired a device W still takes for X's; X waits for W to acknowledge, so the device's offline edit that W takes is taken by X too; compacting without waiting, X refuses it and the copies differ")
    func retiredRoamerNoSplit() throws {
        for variant in [DocumentCore.Variant.correct, .retiresWithoutAgreement] {
            var (x, w, version, offline) = try Self.retiredOffline(variant)
            let point = x.compactionPoint(minOperations: 1)
            if variant == .correct {
                #expect(point == nil, "X compacted before W acknowledged the retirement")
                #expect(x.compactionBlock.hasPrefix("a retirement not acknowledged"), "\(x.compactionBlock)")
            } else {
                #expect(point == version)
                _ = try x.compact(at: version)
            }
            // The device roams to W with its offline edit: W still takes it for X's (claimed).
            _ = w.subscribe(Self.roamerAtW, epoch: 7, version: Fixture.typed(2).version)
            guard case .ack? = PeerAdmissionTests.send(offline, from: Self.roamerAtW, to: &w, batch: 9) else {
                Issue.record("W refused an edit of a device X claims in its view")
                continue
            }
            // W relays it to X.
            var actions = x.receive(offline, batch: 0, from: Self.link)
            for a in actions.appends { actions += x.durable(ticket: a.ticket) }
            let same = x.document.version == w.document.version
            if variant == .correct {
                #expect(same, "the copies differ")
            } else {
                #expect(!same, "the broken core was not caught: the copies are the same")
            }
        }
    }

    @Test("once W holds X's entry without the device and was quiescent, X compacts, and the device's offline edit is refused by both")
    func acknowledgedThenRefusedByBoth() throws {
        var (x, w, version, offline) = try Self.retiredOffline(.correct)
        _ = w.peerStability(Self.link, from: ReplicaID(50), entries: x.stability.peers.entries, now: 202)
        _ = w.refreshPeers(now: 203, retireAfter: 100)
        #expect(w.stability.peers.entries[ReplicaID(99)]?.acknowledged[ReplicaID(50)] == x.stability.peers.entries[ReplicaID(50)]?.retiredAt)
        _ = x.peerStability(Self.link, from: ReplicaID(99), entries: w.stability.peers.entries, now: 204)
        #expect(x.compactionPoint(minOperations: 1) == version)
        #expect(x.compactionBlock == "nothing")
        _ = try x.compact(at: version)
        _ = w.subscribe(Self.roamerAtW, epoch: 7, version: Fixture.typed(2).version)
        #expect(PeerAdmissionTests.isCompacted(PeerAdmissionTests.send(offline, from: Self.roamerAtW, to: &w, batch: 9)),
                "W took an edit of a replica X retired, made before the version X compacted at")
        #expect(w.document.version == version && x.document.version == version)
    }

    @Test("compactionBlock without peers: a device behind holds compaction back, and says so; caught up, nothing does")
    func compactionBlockAlone() {
        let two = Fixture.typed(2)
        var core = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: two.fork(as: 99))
        _ = core.subscribe(Self.deviceAtX, epoch: 7, version: Fixture.typed(1).version)
        #expect(core.compactionBlock.hasPrefix("not settled"), "\(core.compactionBlock)")
        _ = core.seen(Self.deviceAtX, replica: ReplicaID(1), version: two.version, role: .compactingDevice, now: 1)
        _ = core.refreshStability(now: 2, retireAfter: 100)
        #expect(core.compactionBlock == "nothing", "\(core.compactionBlock)")
        #expect(core.compactionPoint(minOperations: 1) == two.version)
    }

    @Test("a relay author that the daemon claiming it retired is retired where it was relayed; one nobody retired still holds compaction back")
    func relayAuthorRetired() {
        let version = Self.v([7: 5, 8: 2])
        var x = PeerStability(), y = PeerStability()
        expect(x.publish(Self.a, version: version, claimed: [Self.device], now: 1))
        // b took the device's and another replica's operations through its link to a.
        expect(y.noteRelayAuthors([Self.device, Self.other], now: 1, isLocal: { _ in false }))
        expect(y.publish(Self.b, version: version, claimed: [], now: 1))
        Self.gossip(x, into: &y, me: Self.b, now: 2)
        #expect(y.relayAuthors == [Self.device, Self.other])
        #expect(!y.allows(version, me: Self.b), "the other replica is claimed by nobody")

        expect(x.publish(Self.a, version: version, claimed: [], retired: [Self.device], now: 3))
        Self.gossip(x, into: &y, me: Self.b, now: 4)
        #expect(y.relayAuthors == [Self.other] && y.retiredAuthors == [Self.device])
        #expect(!y.allows(version, me: Self.b), "the other replica still holds it back")
        // A retired replica that another daemon claims (it roamed) is not retired as a relay author.
        var w = PeerStability()
        expect(w.noteRelayAuthors([Self.device], now: 1, isLocal: { _ in false }))
        var both = x.entries
        both[Self.c] = PeerStability.Entry(sequence: 1, version: version, claimed: [Self.c, Self.device])
        expect(w.merge(both, me: Self.b, floor: nil, now: 5))
        #expect(w.relayAuthors == [Self.device] && w.retiredAuthors.isEmpty)
    }

    @Test("a daemon whose peers hold an entry of it with claims it no longer makes (its file lost) makes its next entry a retirement")
    func lostFileIsARetirement() {
        var x = PeerStability()
        expect(x.publish(Self.a, version: Self.v([101: 1]), claimed: [], now: 1))
        let theirs = PeerStability.Entry(sequence: 9, version: Self.v([101: 1]), claimed: [Self.a, Self.device])
        expect(x.merge([Self.a: theirs], me: Self.a, floor: nil, now: 2))
        #expect(x.entries[Self.a]!.sequence == 10 && x.entries[Self.a]!.retiredAt == 10)
        // Claims it still makes: no retirement.
        var y = PeerStability()
        expect(y.publish(Self.b, version: Self.v([102: 1]), claimed: [Self.device], now: 1))
        let same = PeerStability.Entry(sequence: 5, version: Self.v([102: 1]), claimed: [Self.b, Self.device])
        expect(y.merge([Self.b: same], me: Self.b, floor: nil, now: 2))
        #expect(y.entries[Self.b]!.sequence == 6 && y.entries[Self.b]!.retiredAt == 0)
    }

    @Test("retirements round-trip in the stability message (absent when there are none, as an older daemon sends) and in the stability file; a version-2 file loads without them")
    func encodings() throws {
        var x = PeerStability()
        _ = x.publish(Self.a, version: Self.v([7: 5]), claimed: [Self.device], now: 1)
        let plain = SyncMessage.stability(document: DocumentID(high: 0, low: 9), from: Self.a, entries: x.entries)
        let plainBytes = plain.encoded()
        #expect(try SyncMessage(decoding: plainBytes) == plain)
        // What an older daemon sends: the entries alone, no retirements part.
        var y = PeerStability()
        _ = y.merge([Self.b: PeerStability.Entry(sequence: 4, version: Self.v([7: 5]), claimed: [Self.b], retiredAt: 3)],
                    me: Self.a, floor: nil, now: 1)
        _ = x.merge(y.entries, me: Self.a, floor: nil, now: 2)
        _ = x.publish(Self.a, version: Self.v([7: 5]), claimed: [], retired: [Self.device], now: 3)
        #expect(x.entries[Self.a]!.acknowledged == [Self.b: 3] && x.entries[Self.a]!.retiredAt > 0)
        let message = SyncMessage.stability(document: DocumentID(high: 0, low: 9), from: Self.a, entries: x.entries)
        let bytes = message.encoded()
        #expect(bytes.count > plainBytes.count)
        #expect(try SyncMessage(decoding: bytes) == message)
        // Cut where the entries end, it is the entries without retirements (an older daemon's);
        // every other truncation of the retirements part is refused, never a crash.
        let stripped = x.entries.mapValues { PeerStability.Entry(sequence: $0.sequence, version: $0.version, claimed: $0.claimed) }
        let entriesEnd = SyncMessage.stability(document: DocumentID(high: 0, low: 9), from: Self.a, entries: stripped).encoded().count
        #expect(try SyncMessage(decoding: Array(bytes[..<entriesEnd]))
                == .stability(document: DocumentID(high: 0, low: 9), from: Self.a, entries: stripped))
        for n in entriesEnd + 1 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        // A retirements part naming a daemon the entries lack is refused.
        var bad = SyncMessage.stability(document: DocumentID(high: 0, low: 9), from: Self.a,
                                        entries: [Self.a: PeerStability.Entry(sequence: 1, version: VersionVector(), claimed: [Self.a])]).encoded()
        bad += [1, 0x33, 1, 0, 0]   // one daemon (51), retiredAt 1, nothing acknowledged, nothing retired
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: bad) }

        // The file.
        var stability = DocumentStability()
        stability.peers = x
        let file = stability.encoded()
        #expect(Array(file.prefix(8)) == Array("LSSTAB8\n".utf8))
        let read = try DocumentStability(decoding: file)
        #expect(read.peers.entries == x.entries)
        for n in 0 ..< file.count {
            #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(file[..<n])) }
        }
        // Version 2: the entries end at their claims.
        var v2 = [UInt8]("LSSTAB2\n".utf8) + [1, 0, 0, 0]   // relayed; no senders, retired or ephemeral
        v2 += [1, 102, 5, 4, 1, 7, 5, 1, 102]                // daemon 102, heard 5, sequence 4, {7: 5}, claims itself
        v2 += [0, 0, 0]                                     // no retired daemons, relay authors or retired authors
        let old = try DocumentStability(decoding: v2)
        #expect(old.peers.entries == [Self.b: PeerStability.Entry(sequence: 4, version: Self.v([7: 5]), claimed: [Self.b])])
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 4")
    }
}
