import Testing
@_spi(Testing) import ListSync
import ListCRDT

/// A lost stability file (Docs/Semantics.md §7, "A lost stability file"): a daemon restarted
/// without the file of a document it did not create just now no longer knows whether the
/// document has peers, so it does not compact it until a peer's table arrives or the retire
/// period passes. Before the rule it took the document for one without peers and compacted it
/// alone, at a floor its peers' clients' edits were not after (found with `listsync simulate
/// --lose-stability`: 47 of 100 seeds of three daemons parted copies).
@Suite struct LostStabilityTests {
    static let device = SubscriberID(1), link = SubscriberID(5)

    /// A daemon (replica 50) restarted on `typed(2)` with its stability file lost at time 10,
    /// and its device (replica 1) subscribed and caught up: locally it could compact now.
    static func restarted(_ variant: DocumentCore.Variant = .correct) -> DocumentCore {
        let two = Fixture.typed(2)
        let (lost, problem) = DocumentStability.recovered(from: nil, now: 10)
        #expect(problem != nil && lost.lostSince == 10)
        var core = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: two.fork(as: 50), stability: lost)
        core.variant = variant
        _ = core.subscribe(Self.device, epoch: 7, version: two.version)
        _ = core.seen(Self.device, replica: ReplicaID(1), version: two.version, role: .compactingDevice, now: 11)
        _ = core.refreshStability(now: 12, retireAfter: 100)
        return core
    }

    @Test("the file's bytes give its stability; none, or bytes that do not decode, give a stability lost at that time")
    func recovered() throws {
        var stability = DocumentStability()
        _ = stability.heardFromDevice(ReplicaID(1), version: Fixture.typed(2).version, caughtUp: true, now: 3)
        let (read, problem) = DocumentStability.recovered(from: stability.encoded(), now: 20)
        #expect(read == stability && problem == nil && read.lostSince == nil)
        let (garbled, why) = DocumentStability.recovered(from: Array("LSSTAB5\n".utf8) + [7], now: 20)
        #expect(garbled.lostSince == 20 && why != nil && garbled.tracker.acknowledged.isEmpty)
    }

    @Test("a lost stability round-trips in a version-6 file; a version-4 file loads as not lost; every cut of the new part is refused")
    func encoding() throws {
        let lost = DocumentStability.lost(at: 1_234)
        let file = lost.encoded()
        #expect(Array(file.prefix(8)) == Array("LSSTAB8\n".utf8))
        #expect(try DocumentStability(decoding: file) == lost)
        for n in 0..<file.count {
            #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(file[..<n])) }
        }
        // Version 4 is version 6 without the last part, for a table without entries (version 5 and 6 differ only in entries).
        let plain = DocumentStability().encoded()
        let v4 = Array("LSSTAB4\n".utf8) + plain[8..<(plain.count - 1)]
        let old = try DocumentStability(decoding: v4)
        #expect(old == DocumentStability() && old.lostSince == nil)
        #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(file.dropLast(3)) + [2]) }
    }

    @Test("restarted with its stability lost, a daemon whose own device is caught up does not compact, and says why; with the variant that ignores the loss it compacts at once")
    func holdsCompaction() {
        let core = Self.restarted()
        #expect(core.isPeered)
        #expect(core.compactionPoint(minOperations: 1) == nil)
        #expect(core.compactionBlock.hasPrefix("the stability file was lost"), "\(core.compactionBlock)")
        let broken = Self.restarted(.compactsWithStabilityLost)
        #expect(!broken.isPeered)
        #expect(broken.compactionPoint(minOperations: 1) == Fixture.typed(2).version)
    }

    @Test("a peer's table ends the loss: the document is peered, and compacts by the peers' rule")
    func peerTableEndsIt() {
        var core = Self.restarted()
        var peer = PeerStability()
        _ = peer.publish(ReplicaID(99), version: Fixture.typed(2).version, claimed: [ReplicaID(99)], now: 5)
        _ = core.subscribe(Self.link, epoch: 7, version: Fixture.typed(2).version)
        let changed = core.peerStability(Self.link, from: ReplicaID(99), entries: peer.entries, now: 13)
        #expect(changed)
        #expect(core.stability.lostSince == nil && core.stability.relayed && core.isPeered)
        #expect(!core.compactionBlock.hasPrefix("the stability file was lost"), "\(core.compactionBlock)")
    }

    @Test("with no peer's table in the retire period, the loss ends and the document compacts alone, as one without peers")
    func retirePeriodEndsIt() {
        var core = Self.restarted()
        _ = core.refreshStability(now: 109, retireAfter: 100)
        #expect(core.stability.lostSince == 10, "not yet: 99 of 100 passed")
        _ = core.seen(Self.device, replica: ReplicaID(1), version: Fixture.typed(2).version, role: .compactingDevice, now: 110)
        let (changed, _) = core.refreshStability(now: 110, retireAfter: 100)
        #expect(changed && core.stability.lostSince == nil && !core.isPeered)
        #expect(core.compactionPoint(minOperations: 1) == Fixture.typed(2).version)
    }

    /// The housekeeping of a daemon with peers, or without, at `now`, with a retire period of 100.
    static func housekept(_ core: inout DocumentCore, peered: Bool, now: UInt64) {
        var rule = CompactionRule(retireAfter: 100, minOperations: 1, interval: 0, gossipInterval: 1)
        rule.peered = peered
        _ = core.housekeeping(stabilityNow: now, now: now, rule: rule)
    }

    @Test("on a daemon with peers (CompactionRule.peered) the retire period does not end the loss, only a peer's table does; without peers, or with the variant endsPeeredLossBySilence, it ends")
    func peeredDaemonKeepsTheLoss() {
        var core = Self.restarted()
        _ = core.seen(Self.device, replica: ReplicaID(1), version: Fixture.typed(2).version, role: .compactingDevice, now: 500)
        for now in [110, 500, 10_000] as [UInt64] { Self.housekept(&core, peered: true, now: now) }
        #expect(core.stability.lostSince == 10 && core.isPeered)
        #expect(core.compactionPoint(minOperations: 1) == nil)
        #expect(core.compactionBlock.hasPrefix("the stability file was lost"), "\(core.compactionBlock)")
        #expect(core.compactionBlock.contains("this daemon has peers"), "\(core.compactionBlock)")
        _ = core.refreshStability(now: 10_001, retireAfter: 100, keepsLoss: true)
        #expect(core.stability.lostSince == 10)
        // A peer's table still ends it.
        var peer = PeerStability()
        _ = peer.publish(ReplicaID(99), version: Fixture.typed(2).version, claimed: [ReplicaID(99)], now: 5)
        _ = core.subscribe(Self.link, epoch: 7, version: Fixture.typed(2).version)
        let changed = core.peerStability(Self.link, from: ReplicaID(99), entries: peer.entries, now: 10_002)
        #expect(changed)
        #expect(core.stability.lostSince == nil && core.stability.relayed)
        // Without peers the retire period ends it, as before; so does the variant with peers.
        var alone = Self.restarted()
        Self.housekept(&alone, peered: false, now: 500)
        #expect(alone.stability.lostSince == nil)
        var broken = Self.restarted(.endsPeeredLossBySilence)
        Self.housekept(&broken, peered: true, now: 500)
        #expect(broken.stability.lostSince == nil)
    }
}
