import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// Destroying a document, in the protocol machines with no socket and no disk: the server
/// connection's request and its refusals for devices, the core's end of every subscription, the
/// client's answer and the end of a live subscription, the peer link's propagation
/// (Docs/Protocol.md, "Destroying a document").
@Suite struct DestroyProtocolTests {
    static let doc = Fixture.document

    // MARK: The server connection

    @Test("destroy from a key holder becomes one action; its answer detaches the document")
    func serverDestroy() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        s.attached(Self.doc)
        let actions = s.receive(SyncMessage.destroy(request: 4, document: Self.doc, epoch: 7).encoded(), now: 0)
        #expect(actions == [.destroy(request: 4, document: Self.doc, epoch: 7)])
        #expect(s.destroyed(request: 4, document: Self.doc, epoch: 7).sent == [.destroyed(request: 4, document: Self.doc, epoch: 7)])
        #expect(s.attachedDocuments.isEmpty)
    }

    @Test("a device may not destroy: out of its scope it is an unknown document, in it forbidden; nothing reaches the daemon")
    func deviceRefused() {
        var scoped = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0,
                                   access: Access(documents: [Fixture.other], readOnly: false))
        let frame = SyncMessage.destroy(request: 4, document: Self.doc, epoch: 0).encoded()
        let outOfScope = scoped.receive(frame, now: 0)
        #expect(outOfScope.sent == [.error(request: 4, document: Self.doc, code: .unknownDocument,
                                           text: ServerSession.unknownDocumentText(Self.doc))])
        #expect(outOfScope.requests.isEmpty)
        var device = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: Access(documents: nil, readOnly: false))
        let inScope = device.receive(frame, now: 0)
        #expect(inScope.sent.map(\.code) == [.forbidden] && inScope.requests.isEmpty)
    }

    @Test("a client may not send destroyed: unsupported, the connection stays open")
    func destroyedFromClient() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let actions = s.receive(SyncMessage.destroyed(request: 1, document: Self.doc, epoch: 1).encoded(), now: 0)
        #expect(actions.sent.map(\.code) == [.unsupported] && !s.isClosed)
    }

    // MARK: The document core

    @Test("the core ends every subscription with destroyed, answers batches in flight, and refuses everything after")
    func coreDestroy() {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: Self.doc, name: "groceries", epoch: 7, document: base)
        let (a, b) = (SubscriberID(1), SubscriberID(2))
        _ = core.subscribe(a, epoch: 7, version: base.version)
        _ = core.subscribe(b, epoch: 7, version: base.version)
        let ops = Fixture.edits(on: base, replica: 2, count: 2)
        let received = core.receive(ops, batch: 5, from: a)
        #expect(received.appends.count == 1)
        let ended = core.destroy(reason: "destroyed by the operator")
        #expect(ended.sent(to: a) == [.error(request: 5, document: Self.doc, code: .destroyed, text: "destroyed by the operator"),
                                      .error(request: 0, document: Self.doc, code: .destroyed, text: "destroyed by the operator")])
        #expect(ended.sent(to: b) == [.error(request: 0, document: Self.doc, code: .destroyed, text: "destroyed by the operator")])
        #expect(core.subscriberIDs.isEmpty && core.inFlightCount == 0)
        // The append that was under way becomes durable: nothing is forwarded or acknowledged.
        #expect(core.durable(ticket: received.appends[0].ticket).isEmpty)
        #expect(core.destroy(reason: "again").isEmpty, "destroyed once")
        #expect(core.subscribe(b, epoch: 0, version: VersionVector()).sent(to: b).map(\.code) == [.destroyed])
        #expect(!core.isSubscribed(b))
        #expect(core.receive(ops, batch: 6, from: b).sent(to: b).map(\.code) == [.destroyed])
    }

    // MARK: The client

    @Test("the client's destroy request ends in one answer: destroyed, or the daemon's refusal")
    func clientRequest() {
        var c = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        let (n, sent) = c.request(.destroy(Self.doc), now: 0)
        #expect(sent.sent == [.destroy(request: n, document: Self.doc, epoch: 0)])
        #expect(c.receive(SyncMessage.destroyed(request: n, document: Self.doc, epoch: 7).encoded(), now: 0)
                == [.answered(n, .success(.destroyed(Self.doc, epoch: 7)))])
        #expect(c.waitingCount == 0)
        let (m, _) = c.request(.destroy(Self.doc, epoch: 3), now: 0)
        #expect(c.receive(SyncMessage.error(request: m, document: Self.doc, code: .forbidden, text: "no").encoded(), now: 0)
                == [.answered(m, .failure(.refused(.forbidden, "no")))])
        let (t, _) = c.request(.destroy(Self.doc), now: 0)
        #expect(c.tick(now: 1_000) == [.answered(t, .failure(.timeout("destroying \(Self.doc)")))])
    }

    @Test("destroyed with request 0 ends a live subscription and fails a waiting one; operations after it are dropped")
    func clientSubscriptionEnds() {
        var c = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        _ = c.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        _ = c.receive(SyncMessage.subscribed(document: Self.doc, name: "g", epoch: 7, version: VersionVector()).encoded(), now: 0)
        let error = SyncMessage.error(request: 0, document: Self.doc, code: .destroyed, text: "gone").encoded()
        #expect(c.receive(error, now: 0) == [.subscribeFailed(Self.doc, .refused(.destroyed, "gone"))])
        #expect(c.subscriptions.isEmpty)
        let ops = Fixture.typed(1).operations
        #expect(c.receive(SyncMessage.operations(document: Self.doc, batch: 0, operations: ops).encoded(), now: 0).isEmpty)
        _ = c.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        #expect(c.receive(error, now: 0) == [.subscribeFailed(Self.doc, .refused(.destroyed, "gone"))])
        #expect(c.waitingCount == 0)
    }

    @Test("wired: a client destroys the document it is subscribed to; its subscription ends, its edit in flight is answered, its next edit refused")
    func wired() {
        let base = Fixture.typed(2)
        var w = Wired(core: DocumentCore(id: Self.doc, name: "groceries", epoch: 7, document: base))
        w.run(w.client.subscribe(Self.doc, epoch: 7, version: base.version, now: 0))
        let (edit, sent) = w.client.send(Self.doc, Fixture.edits(on: base, replica: 2, count: 1), now: 0)
        w.run(sent)
        #expect(w.appending.count == 1, "the edit waits for its append")
        let (n, asked) = w.client.request(.destroy(Self.doc), now: 0)
        w.results = []
        w.run(asked)
        #expect(w.results.contains(.editDone(edit, .failure(.refused(.destroyed, "destroyed")))))
        #expect(w.results.contains(.subscribeFailed(Self.doc, .refused(.destroyed, "destroyed"))))
        #expect(w.results.last == .answered(n, .success(.destroyed(Self.doc, epoch: 7))))
        #expect(w.client.waitingCount == 0 && w.client.subscriptions.isEmpty && w.server.attachedDocuments.isEmpty)
        w.results = []
        w.run(w.client.subscribe(Self.doc, epoch: 7, version: base.version, now: 0))
        #expect(w.results == [.subscribeFailed(Self.doc, .refused(.destroyed, "destroyed"))])
    }

    // MARK: Peers

    @Test("a destroy here goes to the peer as destroy; the peer's answer, whatever it is, ends it")
    func peerPropagates() {
        var p = PeerSession(maxFrame: 1 << 20, timeout: 1_000, resyncDelay: 100)
        _ = p.start(now: 0)
        let sent = p.destroyed(Self.doc, now: 0).sent
        guard case let .destroy(n, doc, 0)? = sent.first, doc == Self.doc, sent.count == 1 else { Issue.record("\(sent)"); return }
        #expect(p.destroyed(Self.doc, now: 0).isEmpty, "one destroy on its way at a time")
        #expect(p.receive(SyncMessage.destroyed(request: n, document: Self.doc, epoch: 7).encoded(), now: 0).isEmpty)
        let again = p.destroyed(Self.doc, now: 0).sent
        guard case let .destroy(m, _, _)? = again.first else { Issue.record("\(again)"); return }
        #expect(p.receive(SyncMessage.error(request: m, document: Self.doc, code: .unknownDocument, text: "no").encoded(), now: 0).isEmpty)
    }

    @Test("reconcile: a document destroyed here that the peer lists is destroyed there, never probed or copied")
    func peerListsDestroyed() {
        var p = PeerSession(maxFrame: 1 << 20, timeout: 1_000, resyncDelay: 100)
        _ = p.start(now: 0)
        let remote = [DocumentInfo(id: Self.doc, name: "g", epoch: 7, operations: 0)]
        let sent = p.reconcile(remote: remote, local: [], destroyed: [Self.doc], now: 0).sent
        #expect(sent.count == 1)
        guard case .destroy(_, Self.doc, 0)? = sent.first else { Issue.record("\(sent)"); return }
    }

    @Test("the peer says destroyed (a refused create, a refused or ended subscription, a refused push): destroyLocal")
    func peerSaysDestroyed() {
        var p = PeerSession(maxFrame: 1 << 20, timeout: 1_000, resyncDelay: 100)
        _ = p.start(now: 0)
        let local = PeerSession.LocalDocument(id: Self.doc, name: "g", epoch: 7, version: VersionVector())
        // Created there: refused.
        let created = p.reconcile(remote: [], local: [local], now: 0).sent
        guard case let .create(n, _, _, _, _)? = created.first else { Issue.record("\(created)"); return }
        #expect(p.receive(SyncMessage.error(request: n, document: Self.doc, code: .destroyed, text: "gone").encoded(), now: 0)
                == [.destroyLocal(Self.doc, reason: "gone")])
        // Attached, then the peer destroys it: the subscription ends.
        let remote = [DocumentInfo(id: Self.doc, name: "g", epoch: 7, operations: 0)]
        _ = p.reconcile(remote: remote, local: [local], now: 0)
        _ = p.receive(SyncMessage.subscribed(document: Self.doc, name: "g", epoch: 7, version: VersionVector()).encoded(), now: 0)
        #expect(p.attached == [Self.doc])
        #expect(p.receive(SyncMessage.error(request: 0, document: Self.doc, code: .destroyed, text: "gone").encoded(), now: 0)
                == [.detach(Self.doc), .destroyLocal(Self.doc, reason: "gone")])
        #expect(p.attached.isEmpty)
    }

    // MARK: Connections that listed the documents

    @Test("a destroy is told (destroyed, request 0) only to a connection that listed the documents, and only within its scope")
    func listingConnectionsTold() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        #expect(s.announceDestroyed(Self.doc, epoch: 7).isEmpty, "it never listed")
        _ = s.receive(SyncMessage.listDocuments(request: 1, after: nil).encoded(), now: 0)
        #expect(s.announceDestroyed(Self.doc, epoch: 7).sent == [.destroyed(request: 0, document: Self.doc, epoch: 7)])
        var scoped = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0,
                                   access: Access(documents: [Fixture.other], readOnly: false))
        _ = scoped.receive(SyncMessage.listDocuments(request: 1, after: nil).encoded(), now: 0)
        #expect(scoped.announceDestroyed(Self.doc, epoch: 7).isEmpty, "out of the device's scope")
        #expect(scoped.announceDestroyed(Fixture.other, epoch: 2).sent == [.destroyed(request: 0, document: Fixture.other, epoch: 2)])
    }

    @Test("the client reads destroyed with request 0 as the document withdrawn from the list; nothing waiting is answered")
    func clientWithdrawn() {
        var c = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        let (n, _) = c.request(.destroy(Fixture.other), now: 0)
        #expect(c.receive(SyncMessage.destroyed(request: 0, document: Self.doc, epoch: 7).encoded(), now: 0)
                == [.withdrawn(Self.doc, epoch: 7)])
        #expect(c.waitingCount == 1, "request \(n) still waits for its own answer")
    }

    @Test("a peer that withdraws a document this daemon holds at that epoch: destroyLocal; at another epoch: nothing")
    func peerWithdraws() {
        var p = PeerSession(maxFrame: 1 << 20, timeout: 1_000, resyncDelay: 100)
        _ = p.start(now: 0)
        let local = PeerSession.LocalDocument(id: Self.doc, name: "g", epoch: 7, version: VersionVector())
        let remote = [DocumentInfo(id: Self.doc, name: "g", epoch: 7, operations: 0)]
        _ = p.reconcile(remote: remote, local: [local], now: 0)
        _ = p.receive(SyncMessage.subscribed(document: Self.doc, name: "g", epoch: 7, version: VersionVector()).encoded(), now: 0)
        #expect(p.receive(SyncMessage.destroyed(request: 0, document: Self.doc, epoch: 6).encoded(), now: 0).isEmpty,
                "another epoch's copy")
        #expect(p.attached == [Self.doc])
        #expect(p.receive(SyncMessage.destroyed(request: 0, document: Self.doc, epoch: 7).encoded(), now: 0)
                == [.detach(Self.doc), .destroyLocal(Self.doc, reason: "document \(Self.doc) was destroyed on the peer")])
        #expect(p.attached.isEmpty)
        #expect(p.receive(SyncMessage.destroyed(request: 0, document: Self.doc, epoch: 7).encoded(), now: 0).isEmpty, "once")
    }

    @Test("a create of a new list with an empty name is refused; a peer's copy (with its id) keeps its name")
    func emptyNameRefused() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let refused = s.receive(SyncMessage.create(request: 3, name: "", sections: [""], id: nil, epoch: 0).encoded(), now: 0)
        #expect(refused.sent.map(\.code) == [.refused] && refused.requests.isEmpty)
        let copy = s.receive(SyncMessage.create(request: 4, name: "", sections: [""], id: Self.doc, epoch: 7).encoded(), now: 0)
        #expect(copy == [.create(request: 4, name: "", sections: [""], id: Self.doc, epoch: 7)])
    }
}
