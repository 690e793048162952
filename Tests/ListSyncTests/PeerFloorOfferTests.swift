import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// A left-out daemon that only accepts links (Docs/Semantics.md §7), with no
/// socket: daemon X compacted without knowing daemon Y, whose device edited meanwhile, and only
/// X dials (X's link is Y's subscriber; Y has no link to X). X's link relays Y's operations to
/// X's core, which refuses them for its floor and offers Y, over the same connection, its table
/// and its snapshot (`floorSnapshot`); Y's side takes it as its own link takes a peer's snapshot
/// and merges back. With a link of the builds before (`PeerSession` with `offersFloor` false) the
/// copies stay apart.
@Suite struct PeerFloorOfferTests {
    static let doc = Fixture.document
    static let (x, y) = (PeerMergeBackTests.x, PeerMergeBackTests.y)
    /// X's link as X's core knows it, and as Y's core knows the connection.
    static let (linkAtX, linkAtY) = (SubscriberID(5), SubscriberID(6))

    @Test("encodings: a subscribe that offers the floor and floorSnapshot are version 11; flag bit 1 or tag 25 in an older version is malformed; an older daemon's refusal of version 11 is recognised")
    func encodings() throws {
        let version = VersionVector([ReplicaID(3): 4])
        let offering = SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version, offersFloor: true)
        let bytes = offering.encoded()
        #expect(bytes[0] == SyncMessage.floorVersion && SyncMessage.floorVersion == 11 && SyncMessage.version == 11)
        #expect(try SyncMessage(decoding: bytes) == offering)
        let both = SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version, learnsParted: true, offersFloor: true)
        #expect(try SyncMessage(decoding: both.encoded()) == both)
        // Unchanged byte for byte: a subscribe that does not offer, or only asks for parted.
        #expect(SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version).encoded()[0] == 2)
        #expect(SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version, learnsParted: true).encoded()[0] == 8)
        var asEight = bytes
        asEight[0] = SyncMessage.partedVersion
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: asEight) }
        let part = SyncMessage.floorSnapshot(document: Self.doc, part: [1, 2, 3], more: true)
        #expect(part.encoded()[0] == 11 && part.encoded()[1] == SyncMessage.floorSnapshotTag && SyncMessage.floorSnapshotTag == 25)
        #expect(try SyncMessage(decoding: part.encoded()) == part)
        var asTen = part.encoded()
        asTen[0] = SyncMessage.remadeVersion
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: asTen) }
        #expect(ClientSession.OlderDaemon.refused("malformed message: unsupported sync protocol version 11 (this build speaks 2 to 10)") == .floor)
        #expect(PeerSession.relays(part.encoded(), sendsStability: false))
    }

    @Test("the link says offersFloor in its subscriptions; a daemon that refuses that subscribe by its version byte is noted, and the link neither says it nor offers after")
    func linkSaysItAndFallsBack() {
        var p = PeerSession(maxFrame: 1 << 20, daemon: Self.x, offersFloor: true)
        _ = p.start(now: 0)
        let local = PeerSession.LocalDocument(id: Self.doc, name: "n", epoch: 7, version: VersionVector())
        let info = DocumentInfo(id: Self.doc, name: "n", epoch: 7, operations: 0)
        #expect(p.reconcile(remote: [info], local: [local], now: 0).sent
                == [.subscribe(document: Self.doc, epoch: 7, version: VersionVector(), offersFloor: true)])
        #expect(p.takesFloor)
        let older = SyncMessage.error(request: 0, document: nil, code: .malformed,
                                      text: "malformed message: unsupported sync protocol version 11 (this build speaks 2 to 10)")
        _ = p.receive(older.encoded(), now: 1)
        #expect(p.client.refusedByDaemon.contains(.floor) && !p.takesFloor)
        // The driver's next link to that peer: as the builds before.
        var next = PeerSession(maxFrame: 1 << 20, daemon: Self.x, offersFloor: false)
        _ = next.start(now: 2)
        #expect(next.reconcile(remote: [info], local: [local], now: 2).sent
                == [.subscribe(document: Self.doc, epoch: 7, version: VersionVector())])
        #expect(!next.takesFloor)
    }

    /// A daemon's side of a link's connection, the document attached (subscribed with
    /// `offersFloor`), and its `seen` as a relay when `seen`.
    static func server(access: Access = .full, offers: Bool = true, seen: Bool = true) -> ServerSession {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: access)
        _ = s.receive(SyncMessage.subscribe(document: doc, epoch: 7, version: VersionVector(), offersFloor: offers).encoded(), now: 0)
        s.attached(doc)
        if seen { _ = s.receive(SyncMessage.seen(document: doc, replica: x, version: VersionVector(), role: .relay).encoded(), now: 0) }
        return s
    }

    static func offer(_ part: [UInt8], more: Bool = false, document: DocumentID = doc) -> [UInt8] {
        SyncMessage.floorSnapshot(document: document, part: part, more: more).encoded()
    }

    static func refusal(_ actions: [ServerSession.Action]) -> SyncErrorCode? {
        guard actions.requests.isEmpty, actions.count == 1, case let .error(0, _?, code, _)? = actions.sent.first else { return nil }
        return code
    }

    @Test("the daemon's side: an offer is taken only from a peer's link that subscribed with offersFloor and said seen, in parts; from a device, for a document not attached, or without the flag it is a typed error that changes nothing")
    func serverTakesOnlyFromAPeerLink() {
        var s = Self.server()
        #expect(s.receive(Self.offer([1, 2], more: true), now: 1).isEmpty)
        #expect(s.receive(Self.offer([3]), now: 1) == [.floorSnapshot(Self.doc, [1, 2, 3])])
        // A device: forbidden, whatever it said (its flag is not even noted).
        let device = Access(documents: nil, readOnly: false)
        var d = Self.server(access: device)
        #expect(d.offeringFloor.isEmpty)
        #expect(Self.refusal(d.receive(Self.offer([1]), now: 1)) == .forbidden)
        // A document the connection is not attached to.
        var other = Self.server()
        #expect(Self.refusal(other.receive(Self.offer([1], document: Fixture.other), now: 1)) == .unknownDocument)
        // A subscription that did not say offersFloor, or a connection that never said seen as a relay.
        var plain = Self.server(offers: false)
        #expect(Self.refusal(plain.receive(Self.offer([1]), now: 1)) == .unsupported)
        var unseen = Self.server(seen: false)
        #expect(Self.refusal(unseen.receive(Self.offer([1]), now: 1)) == .unsupported)
        // A refused part drops the parts so far: the next offer starts afresh.
        var partial = Self.server()
        _ = partial.receive(Self.offer([9], more: true), now: 1)
        _ = partial.receive(SyncMessage.subscribe(document: Self.doc, epoch: 7, version: VersionVector()).encoded(), now: 1)
        #expect(Self.refusal(partial.receive(Self.offer([1]), now: 1)) == .unsupported)
        _ = partial.receive(SyncMessage.subscribe(document: Self.doc, epoch: 7, version: VersionVector(), offersFloor: true).encoded(), now: 1)
        #expect(partial.receive(Self.offer([1]), now: 1) == [.floorSnapshot(Self.doc, [1])])
        #expect(s.floorRefused(Self.doc, text: "no").sent.first.map { if case .error(0, _, .refused, _) = $0 { true } else { false } } == true)
    }

    @Test("a peer's link is known as one from its first subscription that offers the floor, before its seen (the daemon notes then that it has peers); also from a seen as a relay or a table; a device, or a client that says none of them, never")
    func peerLinkKnownAtItsFirstSubscription() {
        // The link's first subscription, nothing relayed or seen yet.
        let first = Self.server(seen: false)
        #expect(first.isPeerLink && first.relayDaemon == nil)
        // A client with the daemon's key that does not offer (a `listsync` command) and says no seen.
        #expect(!Self.server(offers: false, seen: false).isPeerLink)
        // A link of an older build (no flag) is known by its seen as a relay, or by its table.
        #expect(Self.server(offers: false).isPeerLink)
        var tabled = Self.server(offers: false, seen: false)
        _ = tabled.receive(SyncMessage.stability(document: Self.doc, from: Self.x, entries: [:]).encoded(), now: 0)
        #expect(tabled.isPeerLink)
        // A device's flag, seen or table says nothing.
        var device = Self.server(access: Access(documents: nil, readOnly: false))
        _ = device.receive(SyncMessage.stability(document: Self.doc, from: Self.x, entries: [:]).encoded(), now: 0)
        #expect(!device.isPeerLink)
    }

    @Test("X's core offers its own link its table and snapshot when it refuses what the link relays for its floor, once per subscription; a link that does not offer (builds before) gets nothing")
    func coreOffersOnce() throws {
        for offers in [true, false] {
            var (coreX, coreY, _) = try PeerMergeBackTests.parted()
            // Y's copy includes X's floor here (it took X's edits before X compacted; else the
            // catch-up itself is the offer: ``catchUpBehindTheFloorIsOffered()``).
            var remote = coreY.document.version
            remote.formUnion(coreX.document.version)
            _ = coreX.subscribe(Self.linkAtX, epoch: 0, version: remote, ownLink: true,
                                relay: DocumentCore.RelayMark(daemon: Self.y, gossips: true), offersFloor: offers)
            let relayed = coreY.document.operations(since: Fixture.typed(3).version)
            let refused = PeerMergeBackTests.send(relayed, from: Self.linkAtX, to: &coreX, batch: 0)
            #expect(PeerMergeBackTests.isCompacted(PeerMergeBackTests.answer(refused, to: Self.linkAtX)))
            let frames = refused.frames(to: Self.linkAtX).filter { PeerSession.relays($0, sendsStability: true) }
            var parts: [UInt8] = [], last = false
            for case let .floorSnapshot(_, part, more)? in frames.map(decoded) { parts += part; last = !more }
            if offers {
                #expect(last && parts == coreX.document.encodedSnapshot(), "the whole snapshot, in order")
                #expect(PeerMergeBackTests.isCompacted(PeerMergeBackTests.answer(PeerMergeBackTests.send(relayed, from: Self.linkAtX, to: &coreX, batch: 0), to: Self.linkAtX)))
                let again = PeerMergeBackTests.send(relayed, from: Self.linkAtX, to: &coreX, batch: 0)
                #expect(!again.sent(to: Self.linkAtX).contains { if case .floorSnapshot = $0 { true } else { false } }, "once per subscription")
            } else {
                #expect(parts.isEmpty, "the builds before offer nothing")
            }
        }
    }

    @Test("X's own link whose peer is behind X's floor (its copy only waits, or holds nothing of X's): the catch-up, a snapshot the link would not relay, goes as floorSnapshot parts after the table; a link of before gets the snapshot, which it drops")
    func catchUpBehindTheFloorIsOffered() throws {
        for offers in [true, false] {
            var (coreX, _, _) = try PeerMergeBackTests.parted()
            let sent = coreX.subscribe(Self.linkAtX, epoch: 0, version: VersionVector(), ownLink: true,
                                       relay: DocumentCore.RelayMark(daemon: Self.y, gossips: true), offersFloor: offers)
            let relayed = sent.frames(to: Self.linkAtX).filter { PeerSession.relays($0, sendsStability: true) }.compactMap(decoded)
            var parts: [UInt8] = []
            for case let .floorSnapshot(_, part, _) in relayed { parts += part }
            if offers {
                #expect(parts == coreX.document.encodedSnapshot())
                // A refusal later on the same subscription offers nothing more.
                let again = PeerMergeBackTests.send(Fixture.edits(on: Fixture.typed(3), replica: 9, count: 1), from: Self.linkAtX, to: &coreX, batch: 0)
                #expect(!again.sent(to: Self.linkAtX).contains { if case .floorSnapshot = $0 { true } else { false } })
            } else {
                #expect(parts.isEmpty && relayed.allSatisfy { if case .snapshot = $0 { false } else { true } })
                #expect(sent.sent(to: Self.linkAtX).contains { if case .snapshot = $0 { true } else { false } }, "the catch-up the link drops")
            }
        }
    }

    /// X compacted without Y; Y's device edited; X's link (offering or not) dials Y, and the frames
    /// go both ways through the state machines until nothing moves: X's `PeerSession`, Y's
    /// `ServerSession`, both cores. Returns both cores and Y's device's edits.
    static func acceptOnly(offers: Bool) throws -> (x: DocumentCore, y: DocumentCore, own: [ListOperation], merged: Bool) {
        var (coreX, coreY, own) = try PeerMergeBackTests.parted()
        var link = PeerSession(maxFrame: 1 << 20, daemon: x, offersFloor: offers)
        var server = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        var toY: [[UInt8]] = [], toX: [[UInt8]] = []
        var merged = false
        func fromLink(_ actions: [PeerSession.Action]) -> [PeerSession.Action] {
            var more: [PeerSession.Action] = []
            for a in actions {
                switch a {
                case let .send(f): toY.append(f)
                case let .listed(remote):
                    let local = PeerSession.LocalDocument(id: doc, name: "n", epoch: 7, version: coreX.durableVersion)
                    more += link.reconcile(remote: remote, local: [local], now: 0)
                case let .attach(_, remote):
                    coreX.unsubscribe(linkAtX)
                    toYFromCore(coreX.subscribe(linkAtX, epoch: 0, version: remote, ownLink: true,
                                                relay: DocumentCore.RelayMark(daemon: link.peerDaemon, gossips: true), offersFloor: link.takesFloor))
                case let .stability(_, from, entries):
                    _ = coreX.peerStability(linkAtX, from: from, entries: entries, now: 3)
                case let .deliver(_, ops):
                    var actions = coreX.receive(ops, batch: 0, from: linkAtX)
                    for t in actions.appends { actions += coreX.durable(ticket: t.ticket) }
                    toYFromCore(actions)
                default: break
                }
            }
            return more
        }
        func toYFromCore(_ actions: [DocumentCore.Action]) {
            toY += actions.frames(to: linkAtX).filter { PeerSession.relays($0, sendsStability: link.client.sendsStability) }
        }
        func atY(_ frame: [UInt8]) {
            for a in server.receive(frame, now: 0) {
                switch a {
                case let .send(f): toX.append(f)
                case .listDocuments(let r, _):
                    for case let .send(f) in server.documents(request: r, [DocumentInfo(id: doc, name: "n", epoch: 7, operations: 1)]) { toX.append(f) }
                case let .subscribe(_, epoch, version, _):
                    coreY.unsubscribe(linkAtY)
                    let relay = server.relayDaemon.map { DocumentCore.RelayMark(daemon: $0, gossips: server.relayGossips) }
                    toX += coreY.subscribe(linkAtY, epoch: epoch, version: version, relay: relay).frames(to: linkAtY)
                    server.attached(doc)
                case let .seen(_, replica, version, role):
                    _ = coreY.seen(linkAtY, replica: replica, version: version, role: role, now: 3)
                case let .stability(_, from, entries):
                    _ = coreY.peerStability(linkAtY, from: from, entries: entries, now: 3)
                case let .operations(_, batch, ops):
                    var actions = coreY.receive(ops, batch: batch, from: linkAtY)
                    for t in actions.appends { actions += coreY.durable(ticket: t.ticket) }
                    toX += actions.frames(to: linkAtY)
                case let .floorSnapshot(_, bytes):
                    // Y's daemon, as DaemonConnection: merged back, every subscriber cut off.
                    guard let snapshot = try? ListDocument(snapshot: bytes, replica: y), let (copy, merge) = coreY.mergeBack(snapshot) else {
                        toX += server.floorRefused(doc, text: "not taken").compactMap { if case let .send(f) = $0 { f } else { nil } }
                        continue
                    }
                    _ = coreY.replace(with: copy, parting: merge)
                    merged = true
                    // The connection is cut: X's link connects again and subscribes with its version.
                    link = PeerSession(maxFrame: 1 << 20, daemon: x, offersFloor: offers)
                    server = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
                    coreX.unsubscribe(linkAtX)
                    coreY.unsubscribe(linkAtY)
                    toY = []; toX = []
                    _ = fromLink(link.start(now: 4))
                    return
                default: break
                }
            }
        }
        _ = fromLink(link.start(now: 0))
        var rounds = 0
        while !(toY.isEmpty && toX.isEmpty), rounds < 1_000 {
            rounds += 1
            if !toY.isEmpty { atY(toY.removeFirst()); continue }
            var more = fromLink(link.receive(toX.removeFirst(), now: 1))
            while !more.isEmpty { more = fromLink(more) }
        }
        #expect(rounds < 1_000, "the exchange ends")
        return (coreX, coreY, own, merged)
    }

    @Test("only X dials: X's link offers its snapshot, Y merges back onto it, and X takes what Y made again: both copies the same, every edit Y acknowledged on X")
    func acceptOnlyMergesBack() throws {
        let (coreX, coreY, own, merged) = try Self.acceptOnly(offers: true)
        #expect(merged && coreY.mergesBack == 1)
        #expect(coreX.document.version == coreY.document.version)
        #expect(coreX.document.snapshot() == coreY.document.snapshot())
        #expect(coreX.document.version.includes(coreY.document.version))
        #expect(own.allSatisfy { !coreY.document.version.contains($0.lastID) || coreX.document.version.contains($0.lastID) })
        #expect(coreY.operationsMergedBack == own.count, "Y's device's edits made again as Y's, and X holds them (its version includes Y's)")
    }

    @Test("with the link of the builds before (no offer): the copies stay apart, Y's acknowledged edits only on Y")
    func withoutTheOfferCopiesStayApart() throws {
        let (coreX, coreY, own, merged) = try Self.acceptOnly(offers: false)
        #expect(!merged && coreY.mergesBack == 0)
        #expect(own.allSatisfy { coreY.document.version.contains($0.lastID) && !coreX.document.version.contains($0.lastID) })
        #expect(coreX.document.snapshot() != coreY.document.snapshot())
    }
}
