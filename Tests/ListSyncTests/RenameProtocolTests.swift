import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// Renaming a document, in the protocol machines with no socket and no disk: the server
/// connection's request and its refusals, the client's request and its one answer
/// (Docs/Protocol.md, "Renaming a document").
@Suite struct RenameProtocolTests {
    static let doc = Fixture.document

    @Test("rename from a key holder or a writable device in scope becomes one action; its answer is a one-entry documents page")
    func serverRename() {
        let frame = SyncMessage.rename(request: 4, document: Self.doc, name: "weekend").encoded()
        for access in [Access.full, Access(documents: nil, readOnly: false), Access(documents: [Self.doc], readOnly: false)] {
            var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: access)
            #expect(s.receive(frame, now: 0) == [.rename(request: 4, document: Self.doc, name: "weekend")])
        }
        let s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let info = DocumentInfo(id: Self.doc, name: "weekend", epoch: 7, operations: 3)
        #expect(s.renamed(request: 4, info).sent == [.documents(request: 4, [info], more: false)])
    }

    @Test("refused before the daemon: out of scope an unknown document, read-only forbidden, an empty name refused")
    func serverRefusals() {
        let frame = SyncMessage.rename(request: 4, document: Self.doc, name: "weekend").encoded()
        var scoped = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: Access(documents: [Fixture.other], readOnly: false))
        let outOfScope = scoped.receive(frame, now: 0)
        #expect(outOfScope.sent == [.error(request: 4, document: Self.doc, code: .unknownDocument, text: ServerSession.unknownDocumentText(Self.doc))])
        #expect(outOfScope.requests.isEmpty)
        var readOnly = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: Access(documents: nil, readOnly: true))
        let refused = readOnly.receive(frame, now: 0)
        #expect(refused.sent.map(\.code) == [.forbidden] && refused.requests.isEmpty)
        var key = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let empty = key.receive(SyncMessage.rename(request: 5, document: Self.doc, name: "").encoded(), now: 0)
        #expect(empty.sent == [.error(request: 5, document: Self.doc, code: .refused, text: "a document's name cannot be empty")])
        #expect(empty.requests.isEmpty && !key.isClosed)
    }

    @Test("every prefix of a rename frame, fed to a server session, closes it with malformed and asks nothing of the daemon")
    func serverPrefixes() {
        let frame = SyncMessage.rename(request: 300, document: Self.doc, name: "grocer\u{00E9}s").encoded()
        for n in 0..<frame.count {
            var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
            let actions = s.receive(Array(frame.prefix(n)), now: 0)
            #expect(actions.requests == [.close(reason: "malformed message")] && s.isClosed, "prefix \(n)")
        }
    }

    @Test("the client's rename request ends in one answer: renamed, the daemon's refusal, or a timeout")
    func clientRequest() {
        var c = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        let (n, sent) = c.request(.rename(Self.doc, name: "weekend"), now: 0)
        #expect(sent.sent == [.rename(request: n, document: Self.doc, name: "weekend")])
        let info = DocumentInfo(id: Self.doc, name: "weekend", epoch: 7, operations: 3)
        #expect(c.receive(SyncMessage.documents(request: n, [info], more: false).encoded(), now: 0) == [.answered(n, .success(.renamed(info)))])
        #expect(c.waitingCount == 0)
        let (m, _) = c.request(.rename(Self.doc, name: "x"), now: 0)
        #expect(c.receive(SyncMessage.error(request: m, document: Self.doc, code: .forbidden, text: "no").encoded(), now: 0)
                == [.answered(m, .failure(.refused(.forbidden, "no")))])
        let (w, _) = c.request(.rename(Self.doc, name: "x"), now: 0)
        let other = DocumentInfo(id: Fixture.other, name: "x", epoch: 1, operations: 0)
        #expect(c.receive(SyncMessage.documents(request: w, [other], more: false).encoded(), now: 0)
                == [.answered(w, .failure(.malformed("the answer to a rename is not the renamed document")))])
        let (t, _) = c.request(.rename(Self.doc, name: "x"), now: 0)
        #expect(c.tick(now: 1_000) == [.answered(t, .failure(.timeout("renaming \(Self.doc)")))])
    }

    @Test("an announcement of a renamed document (request 0) reaches a client as announced")
    func clientAnnounced() {
        var c = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        let info = DocumentInfo(id: Self.doc, name: "weekend", epoch: 7, operations: 3)
        #expect(c.receive(SyncMessage.documents(request: 0, [info], more: false).encoded(), now: 0) == [.announced([info])])
    }
}

extension RenameProtocolTests {
    @Test("wired: a client renames the document; a later subscriber hears the new name in subscribed")
    func wired() {
        let base = Fixture.typed(2)
        var w = Wired(core: DocumentCore(id: Self.doc, name: "groceries", epoch: 7, document: base))
        let (n, asked) = w.client.request(.rename(Self.doc, name: "weekend"), now: 0)
        w.results = []
        w.run(asked)
        #expect(w.results == [.answered(n, .success(.renamed(DocumentInfo(id: Self.doc, name: "weekend", epoch: 7, operations: base.operationCount))))])
        w.results = []
        w.run(w.client.subscribe(Self.doc, epoch: 7, version: base.version, now: 0))
        #expect(w.results.first == .subscribed(Self.doc, name: "weekend", epoch: 7, version: base.version))
    }
}
