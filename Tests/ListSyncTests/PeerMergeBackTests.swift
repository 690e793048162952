import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// A copy left out of a peer's floor (Docs/Semantics.md §7), with no socket: daemon X compacted
/// without knowing daemon Y, whose device edited meanwhile; X refuses what Y relays, Y's link
/// fetches X's snapshot, and Y's core merges its copy back onto it, so that what Y acknowledged
/// reaches X and the copies are the same again. With `DocumentCore.Variant.partsCopies` (no
/// merge back) they stay apart.
@Suite struct PeerMergeBackTests {
    static let doc = Fixture.document
    static let (x, y) = (ReplicaID(50), ReplicaID(99))
    static let (deviceAtX, deviceAtY, yAtX) = (SubscriberID(1), SubscriberID(2), SubscriberID(5))

    /// Receives `ops` from `from` and makes the batch durable; returns every action.
    static func send(_ ops: [ListOperation], from: SubscriberID?, to core: inout DocumentCore, batch: UInt64 = 4) -> [DocumentCore.Action] {
        var actions = core.receive(ops, batch: batch, from: from)
        for a in actions.appends { actions += core.durable(ticket: a.ticket) }
        return actions
    }

    static func answer(_ actions: [DocumentCore.Action], to s: SubscriberID) -> SyncMessage? {
        actions.sent(to: s).first { m in
            switch m {
            case .ack, .error: return true
            default: return false
            }
        }
    }

    static func isCompacted(_ m: SyncMessage?) -> Bool {
        if case .error(_, _, .compacted, _)? = m { return true }
        return false
    }

    /// X (its device, replica 1, edited and reported) compacted at its version; Y, which X does
    /// not know, acknowledged two edits of its device (replica 2) made on the common start, of
    /// values of `ownSize` bytes (X's device's are 8).
    static func parted(variant: DocumentCore.Variant = .correct, ownSize: Int = 8) throws -> (x: DocumentCore, y: DocumentCore, own: [ListOperation]) {
        let base = Fixture.typed(3)
        var coreX = DocumentCore(id: doc, name: "n", epoch: 7, document: base.fork(as: x.rawValue))
        var coreY = DocumentCore(id: doc, name: "n", epoch: 7, document: base.fork(as: y.rawValue))
        coreY.variant = variant
        _ = coreX.subscribe(deviceAtX, epoch: 7, version: base.version)
        let atX = Fixture.edits(on: base, replica: 1, count: 2)
        guard case .ack? = answer(send(atX, from: deviceAtX, to: &coreX), to: deviceAtX) else { throw Failure("X refused its device") }
        _ = coreX.seen(deviceAtX, replica: ReplicaID(1), version: coreX.document.version, role: .compactingDevice, now: 1)
        let floor = try #require(coreX.compactionPoint(minOperations: 1))
        _ = try coreX.compact(at: floor)
        _ = coreY.subscribe(deviceAtY, epoch: 7, version: base.version)
        let own = Fixture.edits(on: base, replica: 2, count: 2, size: ownSize)
        guard case .ack? = answer(send(own, from: deviceAtY, to: &coreY), to: deviceAtY) else { throw Failure("Y refused its device") }
        // Y's link attaches at X: what Y relays is refused for X's floor.
        _ = coreX.subscribe(yAtX, epoch: 7, version: coreY.document.version)
        _ = coreX.seen(yAtX, replica: y, version: coreY.document.version, role: .relay, now: 2)
        #expect(isCompacted(answer(send(coreY.document.operations(since: base.version), from: yAtX, to: &coreX, batch: 0), to: yAtX)),
                "X refuses Y's acknowledged edits: the copies parted")
        return (coreX, coreY, own)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    @Test("Y merges its copy back onto X's snapshot: its device's edits are made again as Y's, X takes them, both show the same")
    func mergedBack() throws {
        var (coreX, coreY, own) = try Self.parted()
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        #expect(merge.parted.map(\.id) == own.map(\.id) && merge.dropped.isEmpty && merge.kept.isEmpty)
        #expect(merge.made.allSatisfy { $0.id.replica == Self.y })
        let cut = coreY.replace(with: merged, parting: merge)
        #expect(cut.contains { if case .close(Self.deviceAtY, _) = $0 { return true }; return false }, "its subscribers subscribe again")
        #expect(coreY.mergesBack == 1 && coreY.partedVersion != nil)
        // X takes what Y holds that it lacks (the link's catch-up): nothing refused.
        let relayed = coreY.document.operations(since: coreX.document.version)
        #expect(!relayed.isEmpty)
        let answer = Self.answer(Self.send(relayed, from: Self.yAtX, to: &coreX, batch: 0), to: Self.yAtX)
        #expect(!Self.isCompacted(answer))
        #expect(coreX.document.snapshot() == coreY.document.snapshot())
        #expect(coreX.document.version == coreY.document.version)
    }

    @Test("after a merge back: a device holding its parted edits gets a snapshot and is told they are held; sent again they are acknowledged, nothing applied; an edit on them is refused for the floor")
    func deviceAfterMergeBack() throws {
        var (coreX, coreY, own) = try Self.parted()
        _ = coreX
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        _ = coreY.replace(with: merged, parting: merge)
        var device = Fixture.typed(3).fork(as: 2)
        #expect(device.receive(own).refused.isEmpty)
        let sub = coreY.subscribe(Self.deviceAtY, epoch: 7, version: device.version)
        guard case let .subscribed(_, _, _, advertised)? = sub.sent(to: Self.deviceAtY).first else {
            Issue.record("no subscribed: \(sub)")
            return
        }
        #expect(own.allSatisfy { advertised.contains($0.lastID) }, "its parted edits count as held")
        #expect(sub.sent(to: Self.deviceAtY).contains { if case .snapshot = $0 { return true }; return false },
                "its catch-up is a snapshot, which it loads in place of its copy")
        let operations = coreY.document.operationCount
        let again = Self.send(own, from: Self.deviceAtY, to: &coreY, batch: 6)
        guard case .ack? = Self.answer(again, to: Self.deviceAtY) else {
            Issue.record("a parted edit sent again was not acknowledged: \(again)")
            return
        }
        #expect(coreY.document.operationCount == operations && again.appends.isEmpty)
        let later = Fixture.edits(on: device, replica: 2, count: 1)
        #expect(Self.isCompacted(Self.answer(Self.send(later, from: Self.deviceAtY, to: &coreY, batch: 7), to: Self.deviceAtY)),
                "an edit on a parted one would wait for it for ever: its author re-syncs")
        #expect(coreY.document.pendingCount == 0)
    }

    @Test("edits Y kept waiting for their causes (its device roamed in from X with edits on X's) are not held by X's snapshot: Y merges back, makes them again, says they are held, and X takes the result")
    func waitingEditsMadeAgain() throws {
        let base = Fixture.typed(3)
        var coreX = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: Self.x.rawValue))
        var coreY = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: base.fork(as: Self.y.rawValue))
        _ = coreX.subscribe(Self.deviceAtX, epoch: 7, version: base.version)
        let atX = Fixture.edits(on: base, replica: 1, count: 2)
        _ = Self.send(atX, from: Self.deviceAtX, to: &coreX)
        // The device took X's edits there, then roamed to Y with edits made on them.
        var device = base.fork(as: 2)
        #expect(device.receive(atX).refused.isEmpty)
        let own = Fixture.edits(on: device, replica: 2, count: 2, size: 5)
        _ = coreY.subscribe(Self.deviceAtY, epoch: 7, version: device.version)
        guard case .ack? = Self.answer(Self.send(own, from: Self.deviceAtY, to: &coreY), to: Self.deviceAtY) else {
            throw Failure("Y did not acknowledge its device's edits")
        }
        #expect(coreY.document.pendingCount == own.count, "Y keeps them waiting for X's edits")
        // X goes on past what the device saw there: its floor is after the device's edits' causes.
        let laterAtX = Fixture.edits(on: device, replica: 1, count: 1)
        _ = Self.send(laterAtX, from: Self.deviceAtX, to: &coreX, batch: 5)
        _ = coreX.seen(Self.deviceAtX, replica: ReplicaID(1), version: coreX.document.version, role: .compactingDevice, now: 1)
        let floor = try #require(coreX.compactionPoint(minOperations: 1))
        _ = try coreX.compact(at: floor)
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        #expect(snapshot.version.includes(coreY.document.version), "by version alone the snapshot holds all Y applied")
        #expect(!coreY.isHeld(by: snapshot), "taken as it is, the snapshot would lose what Y acknowledged")
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        #expect(Set(merge.parted.map(\.id)) == Set(own.map(\.id)) && merge.made.count == own.count)
        _ = coreY.replace(with: merged, parting: merge)
        let sub = coreY.subscribe(Self.deviceAtY, epoch: 7, version: VersionVector())
        guard case let .subscribed(_, _, _, advertised)? = sub.sent(to: Self.deviceAtY).first else {
            Issue.record("no subscribed: \(sub)")
            return
        }
        #expect(own.allSatisfy { advertised.contains($0.lastID) }, "its device counts them as held, and does not make them again")
        let relayed = coreY.document.operations(since: coreX.document.version)
        #expect(!Self.isCompacted(Self.answer(Self.send(relayed, from: Self.yAtX, to: &coreX, batch: 0), to: Self.yAtX)))
        #expect(coreX.document.snapshot() == coreY.document.snapshot())
        let values = Set(coreX.document.snapshot().sections.flatMap { $0.items.map(\.value) })
        #expect(own.allSatisfy { op in
            if case let .insertItem(_, _, value) = op.kind { return values.contains(value) }
            return false
        }, "every edit Y acknowledged shows on both")
    }

    @Test("without the merge back (DocumentCore.Variant.partsCopies) Y's copy stays apart: what it acknowledged never reaches X")
    func partsWithoutTheRepair() throws {
        let (coreX, coreY, own) = try Self.parted(variant: .partsCopies)
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        #expect(coreY.mergeBack(snapshot) == nil)
        #expect(own.allSatisfy { !coreX.document.version.contains($0.lastID) } && coreX.document.snapshot() != coreY.document.snapshot())
    }

    @Test("a copy that holds nothing the snapshot lacks is not merged back (it takes the snapshot as it is)")
    func nothingToMerge() throws {
        let (coreX, _, _) = try Self.parted()
        let empty = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: ListDocument(replica: Self.y))
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        #expect(empty.mergeBack(snapshot) == nil)
    }

    @Test("the link: a refusal for the peer's floor detaches the document and subscribes from nothing; that answer attaches nothing; its snapshot is the merge back's")
    func linkFetchesTheSnapshot() {
        var p = PeerSessionTests.attached()
        let both = PeerSessionTests.both
        let refused = p.receive(PeerSessionTests.frame(.error(request: 0, document: both, code: .compacted, text: "before the floor")), now: 10)
        #expect(refused.requests == [.refusedCompacted(both, "before the floor"), .detach(both)])
        #expect(refused.sent == [.subscribe(document: both, epoch: 5, version: VersionVector())])
        #expect(p.parting == [both] && p.attached.isEmpty)
        // A second refusal (the rest of what was relayed) fetches nothing more.
        #expect(p.receive(PeerSessionTests.frame(.error(request: 0, document: both, code: .compacted, text: "again")), now: 11).sent.isEmpty)
        // The answer: subscribed (nothing attached, no `seen`), then the snapshot.
        let subscribed = p.receive(PeerSessionTests.frame(.subscribed(document: both, name: "b", epoch: 5, version: PeerSessionTests.remoteVersion)), now: 12)
        #expect(subscribed.isEmpty && p.attached.isEmpty)
        let bytes = Fixture.typed(2).encodedSnapshot()
        let snap = p.receive(PeerSessionTests.frame(.snapshot(document: both, part: bytes, more: false)), now: 13)
        #expect(snap.requests.contains(.behindFloor(both, snapshot: bytes)))
        #expect(p.parting.isEmpty)
    }

    @Test("a device's edit that reached Y relayed is left to the daemon that took it from the device, though Y took others of that device directly (a roaming device): made again once, not by both")
    func relayedEditOfADirectAuthorNotMadeAgain() throws {
        var (coreX, coreY, own) = try Self.parted()
        // The device (replica 2) reports to Y: Y counts it, it is no relay author here.
        _ = coreY.seen(Self.deviceAtY, replica: ReplicaID(2), version: coreY.document.version, role: .compactingDevice, now: 1)
        // Then it roamed to a third daemon, whose link relays its next edit to Y.
        let link = SubscriberID(9)
        _ = coreY.subscribe(link, epoch: 7, version: coreY.document.version)
        coreY.markRelay(link, daemon: ReplicaID(77))
        let later = Fixture.edits(on: coreY.document, replica: 2, count: 1)
        _ = Self.send(later, from: link, to: &coreY, batch: 0)
        #expect(coreY.document.version.contains(later[0].lastID))
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        #expect(Set(merge.parted.map(\.id)) == Set((own + later).map(\.id)))
        #expect(merge.dropped.map(\.id) == later.map(\.id), "the relayed edit: its first daemon makes it again")
        #expect(merge.made.count == own.count, "the device's edits Y took itself are made again here")
        _ = coreY.replace(with: merged, parting: merge)
        #expect(!Self.isCompacted(Self.answer(Self.send(coreY.document.operations(since: coreX.document.version), from: Self.yAtX,
                                                         to: &coreX, batch: 0), to: Self.yAtX)))
    }

    /// Y took `later` (of its device, replica 2) from a peer's link, then restarted without its
    /// stability file: a core with nothing known of its senders or relay authors, and the
    /// document its store recovered. Returns X, the new Y (given `runs` back, as its host gives
    /// the store's relayed records), its own edits and `later`.
    static func restartedAfterRelay(variant: DocumentCore.Variant = .correct, runs: (OperationRuns) -> OperationRuns)
        throws -> (x: DocumentCore, y: DocumentCore, own: [ListOperation], later: [ListOperation]) {
        var (coreX, coreY, own) = try parted()
        let link = SubscriberID(9)
        _ = coreY.subscribe(link, epoch: 7, version: coreY.document.version)
        coreY.markRelay(link, daemon: ReplicaID(77))
        let later = Fixture.edits(on: coreY.document, replica: 4, count: 2)
        let actions = send(later, from: link, to: &coreY, batch: 0)
        #expect(actions.contains { if case let .append(_, ops, relayed) = $0 { return relayed && ops == later }; return false },
                "the append says the batch came through a peer link")
        #expect(!coreY.relayedRuns.isEmpty)
        var restarted = DocumentCore(id: doc, name: "n", epoch: 7, document: coreY.document,
                                     stability: DocumentStability.recovered(from: nil, now: 5).stability)
        restarted.variant = variant
        restarted.noteRelayed(runs(coreY.relayedRuns))
        _ = coreX
        return (coreX, restarted, own, later)
    }

    @Test("after a restart that lost the stability file, the log's relayed records keep a peer's clients' edits from being made again here (their daemon makes them again); this daemon's own runs in them are ignored; with DocumentCore.Variant.forgetsRelayedOnRestart they are made again")
    func relayedKnownAfterRestart() throws {
        var (coreX, coreY, own, later) = try Self.restartedAfterRelay { runs in
            var withOwn = runs
            withOwn.insert(1...1_000, of: Self.y)   // Y's own operations are never taken for relayed
            return withOwn
        }
        #expect(!coreY.relayedRuns.runs.keys.contains(Self.y))
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        #expect(Set(merge.parted.map(\.id)) == Set((own + later).map(\.id)))
        #expect(Set(merge.dropped.map(\.id)) == Set(later.map(\.id)), "relayed: left to the daemon that took them")
        #expect(merge.made.count == own.count, "the device's edits Y took itself are made again here")
        _ = coreY.replace(with: merged, parting: merge)
        #expect(!Self.isCompacted(Self.answer(Self.send(coreY.document.operations(since: coreX.document.version), from: Self.yAtX,
                                                         to: &coreX, batch: 0), to: Self.yAtX)))

        let (_, forgetful, _, forgotten) = try Self.restartedAfterRelay(variant: .forgetsRelayedOnRestart) { $0 }
        let (_, remade) = try #require(forgetful.mergeBack(snapshot))
        #expect(remade.dropped.isEmpty && remade.made.count > own.count,
                "without the records the relayed edits \(forgotten.map(\.id)) are made again here too")
    }

    @Test("a merge back makes again the edits of authors this daemon took them from: not a relay author's, nor a retired relay author's, unless that author since reported here itself")
    func retiredRelayAuthorNotMadeAgain() {
        let me = ReplicaID(1_001), author = ReplicaID(4), daemon = ReplicaID(1_000)
        var stability = DocumentStability()
        #expect(stability.tookDirectly(me, me: me) && stability.tookDirectly(author, me: me))
        _ = stability.peers.noteRelayAuthors([author], now: 1, isLocal: { _ in false })
        #expect(!stability.tookDirectly(author, me: me))
        // Forgetting a daemon retires every relay author no daemon claims.
        stability.peers.forget(daemon: daemon, me: me, now: 2)
        #expect(stability.peers.retiredAuthors.contains(author) && !stability.peers.relayAuthors.contains(author))
        #expect(!stability.tookDirectly(author, me: me), "retired, it is still another daemon's author")
        _ = stability.heardFromDevice(author, version: VersionVector(), caughtUp: true, now: 3)
        #expect(stability.tookDirectly(author, me: me), "it reports here: this daemon takes its edits itself")
    }

    @Test("Y's own link to a peer whose version counts what Y parted (the peer merged back too) gets operations, among them those Y made again, not a snapshot, which a link never relays")
    func ownLinkGetsOperationsNotASnapshot() throws {
        var (coreX, coreY, _) = try Self.parted()
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: Self.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        _ = coreY.replace(with: merged, parting: merge)
        // The peer's `subscribed` says what it held before its own merge back, Y's parted edits included.
        var remote = coreX.document.version
        remote.formUnion(try #require(coreY.partedVersion))
        let link = SubscriberID(8)
        var other = coreY
        let toLink = coreY.subscribe(link, epoch: 0, version: remote, ownLink: true)
        #expect(!toLink.sent(to: link).contains { if case .snapshot = $0 { true } else { false } })
        #expect(Set(toLink.operations(to: link).map(\.id)) == Set(merge.made.map(\.id)), "the edits Y made again go to the peer")
        let toDevice = other.subscribe(link, epoch: 0, version: remote)
        #expect(toDevice.sent(to: link).contains { if case .snapshot = $0 { true } else { false } },
                "a device holding the parted edits still loads a snapshot")
        _ = coreX
    }
}
