import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// A daemon's link to a peer daemon with no socket: the peer's frames and this daemon's documents
/// in, frames and requests for the daemon out (Docs/Protocol.md, "Peers").
@Suite struct PeerSessionTests {
    static let resyncDelay: UInt64 = 100
    static let (onlyRemote, both, onlyLocal) = (DocumentID(high: 1, low: 0), DocumentID(high: 2, low: 0), DocumentID(high: 3, low: 0))
    static let remoteVersion = VersionVector([ReplicaID(8): 4])
    static let localVersion = VersionVector([ReplicaID(1): 2])

    static func frame(_ m: SyncMessage) -> [UInt8] { m.encoded() }

    /// A started link and the number of its document-list request.
    static func started() -> (PeerSession, UInt64) {
        var p = PeerSession(maxFrame: 1 << 20, timeout: 1_000, resyncDelay: resyncDelay)
        let sent = p.start(now: 0).sent
        guard case let .listDocuments(n, nil)? = sent.first, sent.count == 1 else {
            Issue.record("start sent \(sent)")
            return (p, 0)
        }
        #expect(p.start(now: 0).isEmpty, "one listing at a time")
        return (p, n)
    }

    /// A link with `both` attached at epoch 5.
    static func attached() -> PeerSession {
        var (p, n) = started()
        let remote = [DocumentInfo(id: both, name: "b", epoch: 5, operations: 1)]
        #expect(p.receive(frame(.documents(request: n, remote, more: false)), now: 0) == [.listed(remote)])
        let local = [PeerSession.LocalDocument(id: both, name: "b", epoch: 5, version: localVersion)]
        #expect(p.reconcile(remote: remote, local: local, now: 0).sent == [.subscribe(document: both, epoch: 5, version: localVersion)])
        #expect(p.receive(frame(.subscribed(document: both, name: "b", epoch: 5, version: remoteVersion)), now: 0).requests
                == [.attach(both, remoteVersion: remoteVersion)])
        #expect(p.attached == [both])
        #expect(p.receive(frame(.synced(document: both, version: remoteVersion)), now: 0).isEmpty)
        #expect(p.catchingUp.isEmpty)
        return p
    }

    @Test("an anti-entropy round or a resync during a catch-up does not restart it; after synced they subscribe again")
    func noRestartDuringCatchUp() {
        var (p, n) = Self.started()
        let remote = [DocumentInfo(id: Self.both, name: "b", epoch: 5, operations: 1)]
        _ = p.receive(Self.frame(.documents(request: n, remote, more: false)), now: 0)
        let local = [PeerSession.LocalDocument(id: Self.both, name: "b", epoch: 5, version: Self.localVersion)]
        _ = p.reconcile(remote: remote, local: local, now: 0)
        _ = p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)), now: 0)
        #expect(p.catchingUp == [Self.both])
        let ops = Fixture.typed(1).operations
        #expect(p.receive(Self.frame(.operations(document: Self.both, batch: 0, operations: ops)), now: 1) == [.deliver(Self.both, ops)])
        // The next round, and a resync, while the catch-up streams: nothing sent for it.
        #expect(p.resync(Self.both, version: Self.localVersion, now: 2).isEmpty)
        #expect(p.reconcile(remote: remote, local: local, now: 2).isEmpty)
        #expect(p.receive(Self.frame(.synced(document: Self.both, version: Self.remoteVersion)), now: 3).isEmpty)
        #expect(p.catchingUp.isEmpty)
        #expect(p.resync(Self.both, version: Self.localVersion, now: 4).sent == [.subscribe(document: Self.both, epoch: 5, version: Self.localVersion)])
        // The connection ends: nothing is left catching up.
        _ = p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)), now: 5)
        _ = p.disconnected()
        #expect(p.catchingUp.isEmpty)
    }

    @Test("reconcile: a document only the peer holds is probed, made here and attached; one only here is created there; one both hold is subscribed")
    func reconcile() {
        var (p, n) = Self.started()
        let remote = [DocumentInfo(id: Self.onlyRemote, name: "r", epoch: 9, operations: 3),
                      DocumentInfo(id: Self.both, name: "b", epoch: 5, operations: 1)]
        #expect(p.receive(Self.frame(.documents(request: n, remote, more: false)), now: 0) == [.listed(remote)])
        let local = [PeerSession.LocalDocument(id: Self.both, name: "b", epoch: 5, version: Self.localVersion),
                     PeerSession.LocalDocument(id: Self.onlyLocal, name: "l", epoch: 3, version: Self.localVersion)]
        let sent = p.reconcile(remote: remote, local: local, now: 0).sent
        #expect(sent.count == 3)
        #expect(sent.first == .subscribe(document: Self.onlyRemote, epoch: 0, version: VersionVector()))
        #expect(sent.dropFirst().first == .subscribe(document: Self.both, epoch: 5, version: Self.localVersion))
        guard case let .create(request, name, sections, id, epoch)? = sent.last,
              name == "l", sections.isEmpty, id == Self.onlyLocal, epoch == 3 else { Issue.record("\(sent)"); return }

        // The peer's copy: its epoch comes with `subscribed`; the local copy is made, then subscribed again.
        let ops = Fixture.typed(2).operations
        #expect(p.receive(Self.frame(.subscribed(document: Self.onlyRemote, name: "r", epoch: 9, version: Self.remoteVersion)), now: 0).requests
                == [.createLocal(Self.onlyRemote, name: "r", epoch: 9)])
        #expect(p.receive(Self.frame(.operations(document: Self.onlyRemote, batch: 0, operations: ops)), now: 0).isEmpty,
                "nothing is delivered before the local copy is attached")
        let ready = PeerSession.LocalDocument(id: Self.onlyRemote, name: "r", epoch: 9, version: VersionVector())
        #expect(p.localReady(ready, now: 0).sent == [.subscribe(document: Self.onlyRemote, epoch: 9, version: VersionVector())])
        #expect(p.receive(Self.frame(.subscribed(document: Self.onlyRemote, name: "r", epoch: 9, version: Self.remoteVersion)), now: 0).requests
                == [.attach(Self.onlyRemote, remoteVersion: Self.remoteVersion)])
        #expect(p.receive(Self.frame(.operations(document: Self.onlyRemote, batch: 0, operations: ops)), now: 0) == [.deliver(Self.onlyRemote, ops)])

        // Held by both at one epoch: attached with the peer's version (the core then pushes what it lacks).
        #expect(p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)), now: 0).requests
                == [.attach(Self.both, remoteVersion: Self.remoteVersion)])

        // Only here: created there, then subscribed with nothing, so that `subscribed` brings the peer's version.
        #expect(p.receive(Self.frame(.created(request: request, document: Self.onlyLocal, epoch: 3)), now: 0).sent
                == [.subscribe(document: Self.onlyLocal, epoch: 3, version: VersionVector())])
        #expect(p.receive(Self.frame(.subscribed(document: Self.onlyLocal, name: "l", epoch: 3, version: VersionVector())), now: 0).requests
                == [.attach(Self.onlyLocal, remoteVersion: VersionVector())])
        #expect(p.attached == [Self.onlyRemote, Self.both, Self.onlyLocal])
        #expect(p.client.waitingCount == 0)

        // Their catch-ups end.
        for d in [Self.onlyRemote, Self.both, Self.onlyLocal] {
            #expect(p.receive(Self.frame(.synced(document: d, version: Self.remoteVersion)), now: 0).isEmpty)
        }

        // An anti-entropy round lists again; documents already made on both sides are subscribed again, not created.
        let again = p.start(now: 10)
        guard case let .listDocuments(m, nil)? = again.sent.first else { Issue.record("\(again)"); return }
        let all = remote + [DocumentInfo(id: Self.onlyLocal, name: "l", epoch: 3, operations: 0)]
        #expect(p.receive(Self.frame(.documents(request: m, all, more: false)), now: 10) == [.listed(all)])
        let round = p.reconcile(remote: all, local: local + [ready], now: 10).sent
        #expect(round.allSatisfy { if case .subscribe = $0 { return true }; return false } && round.count == 3, "\(round)")
    }

    @Test("a document held at two epochs is not synced: epochConflict, detached, left out of later rounds")
    func epochConflict() {
        var p = Self.attached()
        // A resync meets another epoch.
        #expect(p.resync(Self.both, version: Self.localVersion, now: 0).sent == [.subscribe(document: Self.both, epoch: 5, version: Self.localVersion)])
        #expect(p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 6, version: Self.remoteVersion)), now: 0).requests
                == [.detach(Self.both), .epochConflict(Self.both, local: 5, remote: 6)])
        #expect(p.attached.isEmpty && p.epochConflicts[Self.both]?.local == 5 && p.epochConflicts[Self.both]?.remote == 6)
        let local = [PeerSession.LocalDocument(id: Self.both, name: "b", epoch: 5, version: Self.localVersion)]
        #expect(p.reconcile(remote: [DocumentInfo(id: Self.both, name: "b", epoch: 6, operations: 1)], local: local, now: 0).isEmpty)
        #expect(p.receive(Self.frame(.operations(document: Self.both, batch: 0, operations: Fixture.typed(1).operations)), now: 0).isEmpty)
    }

    @Test("the peer refuses a subscription with epochMismatch: epochConflict")
    func epochMismatch() {
        var (p, _) = Self.started()
        let local = [PeerSession.LocalDocument(id: Self.both, name: "b", epoch: 5, version: Self.localVersion)]
        _ = p.reconcile(remote: [DocumentInfo(id: Self.both, name: "b", epoch: 6, operations: 1)], local: local, now: 0)
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .epochMismatch, text: "epoch 6")), now: 0)
                == [.epochConflict(Self.both, local: 5, remote: 0)])
        #expect(p.epochConflicts[Self.both] != nil && p.attached.isEmpty)
    }

    @Test("a push the peer refused for a limit or its storage is resent by a resync after resyncDelay")
    func refusedPushResync() {
        var p = Self.attached()
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .limit, text: "rate limit")), now: 1_000).isEmpty)
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .storage, text: "disk")), now: 1_050).isEmpty)
        #expect(p.tick(now: 1_099).due.isEmpty)
        #expect(p.tick(now: 1_100).due == [Self.both])
        #expect(p.tick(now: 5_000).due.isEmpty, "once")
        let v = VersionVector([ReplicaID(1): 5])
        #expect(p.resync(Self.both, version: v, now: 5_000).sent == [.subscribe(document: Self.both, epoch: 5, version: v)])
        #expect(p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)), now: 5_000).requests
                == [.detach(Self.both), .attach(Self.both, remoteVersion: Self.remoteVersion)])
        // A refusal of the operations themselves is not retried.
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .refused, text: "equivocation")), now: 6_000).isEmpty)
        #expect(p.tick(now: 9_000).due.isEmpty)
        #expect(p.resync(Self.onlyRemote, version: v, now: 9_000).isEmpty, "not attached")
    }

    @Test("a push refused while the document's resync waits for subscribed: the resync still completes and the push is resent")
    func refusedPushDuringResync() {
        var p = Self.attached()
        _ = p.resync(Self.both, version: Self.localVersion, now: 0)
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .limit, text: "rate limit")), now: 0).isEmpty)
        #expect(p.receive(Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)), now: 0).requests
                == [.detach(Self.both), .attach(Self.both, remoteVersion: Self.remoteVersion)])
        let ops = Fixture.typed(1).operations
        #expect(p.receive(Self.frame(.operations(document: Self.both, batch: 0, operations: ops)), now: 0) == [.deliver(Self.both, ops)])
        #expect(p.tick(now: Self.resyncDelay).due == [Self.both])
    }

    @Test("a resync of an attached document that fails (storage, timeout) is tried again after resyncDelay")
    func failedResync() {
        var p = Self.attached()
        _ = p.resync(Self.both, version: Self.localVersion, now: 0)
        #expect(p.receive(Self.frame(.error(request: 0, document: Self.both, code: .storage, text: "could not load")), now: 0).isEmpty)
        #expect(p.tick(now: Self.resyncDelay).due == [Self.both])
        _ = p.resync(Self.both, version: Self.localVersion, now: 200)
        let timedOut = p.tick(now: 1_200)
        #expect(timedOut.due.isEmpty && timedOut.actions.isEmpty)
        #expect(p.tick(now: 1_200 + Self.resyncDelay).due == [Self.both])
    }

    @Test("disconnected: every attached document is detached; the link sends nothing more (a new connection takes a new one)")
    func disconnect() {
        var p = Self.attached()
        #expect(p.disconnected() == [.detach(Self.both)])
        #expect(p.attached.isEmpty && p.client.isClosed)
        #expect(p.start(now: 0).isEmpty)
        #expect(p.resync(Self.both, version: Self.localVersion, now: 0).isEmpty)
    }

    @Test("announced documents, and documents created here, reach the peer")
    func announcements() {
        var (p, _) = Self.started()
        let info = DocumentInfo(id: Self.onlyRemote, name: "n", epoch: 2, operations: 0)
        #expect(p.receive(Self.frame(.documents(request: 0, [info], more: false)), now: 0) == [.announced([info])])
        let mine = PeerSession.LocalDocument(id: Self.onlyLocal, name: "l", epoch: 3, version: VersionVector())
        let create = p.created(mine, now: 0).sent
        guard case let .create(_, name, sections, id, epoch)? = create.first, create.count == 1,
              name == "l", sections.isEmpty, id == Self.onlyLocal, epoch == 3 else { Issue.record("\(create)"); return }
        #expect(p.created(mine, now: 0).isEmpty, "created once")
    }

    @Test("the peer's frames read from a byte stream split at every offset give the same actions; a malformed one closes")
    func streamSplits() {
        let (p, n) = Self.started()
        var q = p
        let remote = [DocumentInfo(id: Self.both, name: "b", epoch: 5, operations: 1)]
        _ = q.receive(Self.frame(.documents(request: n, remote, more: false)), now: 0)
        _ = q.reconcile(remote: remote, local: [PeerSession.LocalDocument(id: Self.both, name: "b", epoch: 5, version: Self.localVersion)], now: 0)
        let frames = [Self.frame(.subscribed(document: Self.both, name: "b", epoch: 5, version: Self.remoteVersion)),
                      Self.frame(.operations(document: Self.both, batch: 0, operations: Fixture.typed(3).operations)),
                      Self.frame(.synced(document: Self.both, version: Self.remoteVersion)),
                      Self.frame(.error(request: 0, document: Self.both, code: .limit, text: "slow down"))]
        expectSameAtEverySplit(q, frames) { $0.receive($1, now: 0) }
        var bad = q
        let closed = bad.receive([2, 4, 1], now: 0)
        #expect(closed.requests.first.map { if case .close = $0 { return true }; return false } == true)
    }
}
