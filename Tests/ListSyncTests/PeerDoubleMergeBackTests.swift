import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// A left-out daemon that merges back twice in a row (Docs/Semantics.md §7, "A left-out daemon
/// that only accepts links"), with no socket. Y both dials X and is dialled by it: X's link offers
/// X's snapshot (`floorSnapshot`, taken through Y's `ServerSession`) while Y's own link fetches it
/// too (`behindFloor`), so Y is handed the same snapshot again right after merging back onto it;
/// or a second peer Z, which compacted without Y at a floor the operations Y made again are not
/// after, hands Y its snapshot next. Each time: no operation Y acknowledged is lost, none shows
/// twice, and the copies meet once they exchange operations.
@Suite struct PeerDoubleMergeBackTests {
    static let doc = Fixture.document
    static let (x, y, z) = (PeerMergeBackTests.x, PeerMergeBackTests.y, ReplicaID(70))
    static let (deviceAtY, yAtX, zAtY, deviceAtZ, xAtZ) = (PeerMergeBackTests.deviceAtY, PeerMergeBackTests.yAtX,
                                                           SubscriberID(11), SubscriberID(12), SubscriberID(13))

    /// The values `document` shows, each with how many times it shows.
    static func shown(_ document: ListDocument) -> [Data: Int] {
        document.snapshot().sections.flatMap { $0.items.map(\.value) }.reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }

    /// The value each of `ops` inserted.
    static func values(_ ops: [ListOperation]) -> [Data] {
        ops.compactMap { if case let .insertItem(_, _, value) = $0.kind { value } else { nil } }
    }

    /// The bytes X's link offers Y (its core's `floorSnapshot` parts: the catch-up of a link whose
    /// `version` is behind X's floor, or on a refusal for its floor of `ops`), as Y's
    /// `ServerSession` joins them.
    static func offered(by coreX: inout DocumentCore, relaying ops: [ListOperation], version: VersionVector) throws -> [UInt8] {
        let link = PeerFloorOfferTests.linkAtX
        var actions = coreX.subscribe(link, epoch: 0, version: version, ownLink: true,
                                      relay: DocumentCore.RelayMark(daemon: y, gossips: true), offersFloor: true)
        actions += PeerMergeBackTests.send(ops, from: link, to: &coreX, batch: 0)
        coreX.unsubscribe(link)
        var server = PeerFloorOfferTests.server()
        var taken: [UInt8]?
        for frame in actions.frames(to: link) where PeerSession.relays(frame, sendsStability: true) {
            for case let .floorSnapshot(_, bytes) in server.receive(frame, now: 1) { taken = bytes }
        }
        return try #require(taken, "X's link offered its snapshot")
    }

    @Test("Y merges back onto X's snapshot (its own link fetched it), then X's link offers the same snapshot: the second merge back keeps what the first made again as it is, makes nothing again, shows the same, and the copies meet")
    func sameSnapshotTwice() throws {
        var (coreX, coreY, own) = try PeerMergeBackTests.parted(ownSize: 6)
        let start = Fixture.typed(3).version
        let relayed = coreY.document.operations(since: start)
        // Both read before Y merged back: X's link offers while Y's own link fetches.
        let offer = try Self.offered(by: &coreX, relaying: relayed, version: coreY.document.version)
        let fetched = coreX.document.encodedSnapshot()
        #expect(offer == fetched, "the same bytes either way")

        let first = try ListDocument(snapshot: fetched, replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(first))
        #expect(merge.parted.map(\.id) == own.map(\.id) && merge.made.count == own.count)
        _ = coreY.replace(with: merged, parting: merge)
        let afterFirst = coreY.document.snapshot(), parted = coreY.stability.peers.entries[Self.y]?.parted
        // The device subscribes again: it holds the originals, so it loads a snapshot.
        let resubscribed = coreY.subscribe(Self.deviceAtY, epoch: 7, version: Fixture.typed(3).version.observing(own))
        let deviceBytes = try #require(Self.snapshotSent(resubscribed))
        var device = try ListDocument(snapshot: deviceBytes, replica: ReplicaID(2))

        let second = try ListDocument(snapshot: offer, replica: Self.y)
        #expect(!coreY.isHeld(by: second), "Y holds what it made again, which the snapshot lacks")
        let (again, secondMerge) = try #require(coreY.mergeBack(second))
        #expect(secondMerge.parted.isEmpty && secondMerge.made.isEmpty && secondMerge.dropped.isEmpty,
                "nothing made before the floor: nothing parted, nothing made again")
        #expect(Set(secondMerge.kept.map(\.id)) == Set(merge.made.map(\.id)), "what the first made again is kept, ids and all")
        let cut = coreY.replace(with: again, parting: secondMerge)
        #expect(cut.contains { if case .close(Self.deviceAtY, _) = $0 { true } else { false } }, "its subscribers re-sync once more")
        #expect(coreY.document.snapshot() == afterFirst && coreY.mergesBack == 2 && coreY.operationsMergedBack == own.count)
        #expect(coreY.stability.peers.entries[Self.y]?.parted == parted, "nothing more named parted")

        // The device subscribes again with what it holds: nothing to send it but `subscribed`.
        let third = coreY.subscribe(Self.deviceAtY, epoch: 7, version: device.version)
        #expect(!third.sent(to: Self.deviceAtY).contains { if case .snapshot = $0 { true } else { false } })
        #expect(device.receive(third.operations(to: Self.deviceAtY)).refused.isEmpty)
        // X takes what Y made again: every copy the same, every edit once.
        let toX = coreY.document.operations(since: coreX.document.version)
        #expect(!PeerMergeBackTests.isCompacted(PeerMergeBackTests.answer(PeerMergeBackTests.send(toX, from: Self.yAtX, to: &coreX, batch: 0), to: Self.yAtX)))
        #expect(coreX.document.snapshot() == coreY.document.snapshot() && device.snapshot() == coreY.document.snapshot())
        let counts = Self.shown(coreX.document)
        #expect(Self.values(own).allSatisfy { counts[$0] == 1 }, "each edit Y acknowledged shows once")
        #expect(counts.values.allSatisfy { $0 == 1 }, "nothing shows twice: \(counts)")
    }

    /// Y merges back onto X's snapshot and takes Z's later edits; its device, holding its
    /// originals, loads a snapshot of that copy. Then Z, which compacted without Y at a floor what
    /// Y made again is not after, hands Y its snapshot, Y merges back again, and its device
    /// subscribes with what it holds. Returns the cores, the device's copy after that catch-up,
    /// whether the catch-up was a snapshot, what Y made again the first time, and the edits of Y's
    /// device and of Z's.
    static func secondPeer(variant: DocumentCore.Variant) throws
        -> (x: DocumentCore, y: DocumentCore, z: DocumentCore, device: ListDocument, snapshot: Bool,
            remade: [ListOperation], own: [ListOperation], atZ: [ListOperation]) {
        typealias P = PeerMergeBackTests
        var (coreX, coreY, own) = try P.parted(variant: variant, ownSize: 6)
        let first = coreX.document.encodedSnapshot()
        let (merged, merge) = try #require(coreY.mergeBack(try ListDocument(snapshot: first, replica: y)))
        _ = coreY.replace(with: merged, parting: merge)
        let remade = merge.made
        #expect(remade.count == own.count && remade.allSatisfy { $0.id.replica == y })
        // X takes them: they are after its floor.
        #expect(!P.isCompacted(P.answer(P.send(coreY.document.operations(since: coreX.document.version), from: yAtX, to: &coreX, batch: 0), to: yAtX)))
        // Z: a copy of X's (from before Y's link came), whose device edits; it compacts without Y.
        var coreZ = DocumentCore(id: doc, name: "n", epoch: 7, document: try ListDocument(snapshot: first, replica: z))
        _ = coreZ.subscribe(deviceAtZ, epoch: 7, version: coreZ.document.version)
        let atZ = Fixture.edits(on: coreZ.document, replica: 3, count: 2, size: 7)
        guard case .ack? = P.answer(P.send(atZ, from: deviceAtZ, to: &coreZ), to: deviceAtZ) else {
            throw P.Failure("Z refused its device")
        }
        _ = coreZ.seen(deviceAtZ, replica: ReplicaID(3), version: coreZ.document.version, role: .compactingDevice, now: 1)
        let floor = try #require(coreZ.compactionPoint(minOperations: 1))
        _ = try coreZ.compact(at: floor)
        // Z's link relays its device's edits to Y (after X's floor: taken), and Y's device, which
        // holds its originals, subscribes and loads a snapshot: it holds what Y made again.
        _ = coreY.subscribe(zAtY, epoch: 7, version: coreZ.document.version)
        coreY.markRelay(zAtY, daemon: z)
        #expect(!P.isCompacted(P.answer(P.send(atZ, from: zAtY, to: &coreY, batch: 0), to: zAtY)))
        #expect(coreY.document.version.includes(coreZ.document.version))
        let resubscribed = coreY.subscribe(deviceAtY, epoch: 7, version: Fixture.typed(3).version.observing(own))
        var device = try ListDocument(snapshot: try #require(snapshotSent(resubscribed)), replica: ReplicaID(2))
        #expect(device.version.includes(coreZ.document.version) && remade.allSatisfy { device.version.contains($0.lastID) })

        // Z's snapshot: what Y made again is not after its floor.
        let (again, secondMerge) = try #require(coreY.mergeBack(try ListDocument(snapshot: coreZ.document.encodedSnapshot(), replica: y)))
        #expect(Set(secondMerge.parted.map(\.id)) == Set(remade.map(\.id)) && secondMerge.dropped.isEmpty
                && secondMerge.made.count == remade.count && secondMerge.kept.isEmpty)
        _ = coreY.replace(with: again, parting: secondMerge)
        #expect(remade.allSatisfy { coreY.document.version.contains($0.lastID) }, "its version counts them: made again after them")
        let atY = shown(coreY.document)
        #expect(atY.values.allSatisfy { $0 == 1 } && values(own + atZ).allSatisfy { atY[$0] == 1 }, "\(atY)")
        // The device subscribes again with what it holds.
        let sub = coreY.subscribe(deviceAtY, epoch: 7, version: device.version)
        let bytes = snapshotSent(sub)
        if let bytes {
            device = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        } else {
            #expect(device.receive(sub.operations(to: deviceAtY)).refused.isEmpty)
        }
        return (coreX, coreY, coreZ, device, bytes != nil, remade, own, atZ)
    }

    @Test("Y merges back onto X's snapshot and takes Z's later edits; then Z, which compacted without Y at a floor what Y made again is not after, hands Y its snapshot: those are parted and made again once; a device holding them gets a snapshot though Y's version counts them; X drops them when it merges back onto Z's snapshot; the three copies meet, every edit once")
    func secondPeersSnapshot() throws {
        typealias P = PeerMergeBackTests
        var (coreX, coreY, coreZ, device, snapshot, remade, own, atZ) = try Self.secondPeer(variant: .correct)
        #expect(snapshot, "the device holding what Y parted loads a snapshot")
        let atDevice = Self.shown(device)
        #expect(atDevice.values.allSatisfy { $0 == 1 }, "the device shows nothing twice: \(atDevice)")
        #expect(device.snapshot() == coreY.document.snapshot())

        // X holds the first ones after its floor: its link relays them to Z, which refuses them
        // for its floor, and X, told Y's table, merges back onto Z's snapshot: it drops them (Y
        // makes them again).
        _ = coreZ.subscribe(Self.xAtZ, epoch: 7, version: coreX.document.version)
        coreZ.markRelay(Self.xAtZ, daemon: Self.x)
        #expect(P.isCompacted(P.answer(P.send(coreX.document.operations(since: coreZ.document.version), from: Self.xAtZ, to: &coreZ, batch: 0), to: Self.xAtZ)))
        _ = coreX.peerStability(Self.yAtX, from: Self.y, entries: coreY.stability.peers.entries, now: 4)
        let (xMerged, xMerge) = try #require(coreX.mergeBack(try ListDocument(snapshot: coreZ.document.encodedSnapshot(), replica: Self.x)))
        #expect(Set(xMerge.parted.map(\.id)) == Set(remade.map(\.id)) && Set(xMerge.dropped.map(\.id)) == Set(remade.map(\.id)) && xMerge.made.isEmpty)
        _ = coreX.replace(with: xMerged, parting: xMerge)

        // What Y made again the second time reaches X and Z: the three copies are the same.
        #expect(!P.isCompacted(P.answer(P.send(coreY.document.operations(since: coreX.document.version), from: Self.yAtX, to: &coreX, batch: 0), to: Self.yAtX)))
        _ = coreZ.subscribe(Self.zAtY, epoch: 7, version: coreY.document.version)
        coreZ.markRelay(Self.zAtY, daemon: Self.y)
        #expect(!P.isCompacted(P.answer(P.send(coreY.document.operations(since: coreZ.document.version), from: Self.zAtY, to: &coreZ, batch: 0), to: Self.zAtY)))
        #expect(coreX.document.snapshot() == coreY.document.snapshot() && coreZ.document.snapshot() == coreY.document.snapshot())
        let counts = Self.shown(coreZ.document)
        #expect(counts.values.allSatisfy { $0 == 1 } && Self.values(own + atZ).allSatisfy { counts[$0] == 1 }, "\(counts)")
    }

    @Test("with DocumentCore.Variant.countsPartedByVersion (the rule before): Y's version counts what it parted the second time, the device holding it is sent operations, and shows the edits of Y's device twice")
    func secondPeersSnapshotByVersion() throws {
        let (_, _, _, device, snapshot, _, own, _) = try Self.secondPeer(variant: .countsPartedByVersion)
        #expect(!snapshot)
        let atDevice = Self.shown(device)
        #expect(Self.values(own).allSatisfy { atDevice[$0] == 2 }, "\(atDevice)")
    }

    /// The snapshot `actions` send the device subscriber, joined.
    static func snapshotSent(_ actions: [DocumentCore.Action]) -> [UInt8]? {
        let parts = actions.sent(to: deviceAtY).compactMap { m -> [UInt8]? in if case let .snapshot(_, part, _) = m { part } else { nil } }
        return parts.isEmpty ? nil : parts.flatMap { $0 }
    }
}

extension VersionVector {
    /// This version with the last id of each of `ops` observed.
    func observing(_ ops: [ListOperation]) -> VersionVector {
        var v = self
        for op in ops { v.observe(op.lastID) }
        return v
    }
}
