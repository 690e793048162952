import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// The daemon's side of a connection with no socket: frames in, requests for the daemon and frames
/// out (Docs/Protocol.md, "The server connection").
@Suite struct ServerSessionTests {
    static let doc = Fixture.document

    static func session(maxFrame: Int = 1 << 20, rateLimit: RateLimit? = nil) -> ServerSession {
        ServerSession(maxFrame: maxFrame, rateLimit: rateLimit, now: 0)
    }

    static func frame(_ m: SyncMessage) -> [UInt8] { m.encoded() }

    @Test("each request becomes one action for the driver, whose answer goes out as a frame")
    func requests() {
        var s = Self.session()
        let v = VersionVector([ReplicaID(1): 2])
        #expect(s.receive(Self.frame(.subscribe(document: Self.doc, epoch: 3, version: v)), now: 0) == [.subscribe(Self.doc, epoch: 3, version: v)])
        #expect(s.receive(Self.frame(.create(request: 4, name: "n", sections: ["a"], id: nil, epoch: 0)), now: 0)
                == [.create(request: 4, name: "n", sections: ["a"], id: nil, epoch: 0)])
        #expect(s.receive(Self.frame(.status(request: 5)), now: 0) == [.status(request: 5)])
        #expect(!s.followsDocuments)
        #expect(s.receive(Self.frame(.listDocuments(request: 6, after: Self.doc)), now: 0) == [.listDocuments(request: 6, after: Self.doc)])
        #expect(s.followsDocuments)
        #expect(s.created(request: 4, document: Self.doc, epoch: 8).sent == [.created(request: 4, document: Self.doc, epoch: 8)])
        #expect(s.failed(request: 4, document: nil, code: .limit, text: "full").sent
                == [.error(request: 4, document: nil, code: .limit, text: "full")])
        #expect(s.subscribeFailed(Self.doc, code: .unknownDocument, text: "no").sent
                == [.error(request: 0, document: Self.doc, code: .unknownDocument, text: "no")])
    }

    @Test("operations, hello and unsubscribe count only for an attached document; a batch for another is refused")
    func attachment() {
        var s = Self.session()
        let ops = Fixture.typed(2).operations
        let batch = Self.frame(.operations(document: Self.doc, batch: 9, operations: ops))
        #expect(s.receive(batch, now: 0).sent.map(\.code) == [.unknownDocument])
        if case let .error(request, document, _, _)? = s.receive(batch, now: 0).sent.first {
            #expect(request == 9 && document == Self.doc, "the refusal names the batch and the document")
        }
        #expect(s.receive(Self.frame(.hello(document: Self.doc, version: VersionVector())), now: 0).isEmpty)
        #expect(s.receive(Self.frame(.unsubscribe(document: Self.doc)), now: 0).isEmpty)
        s.attached(Self.doc)
        #expect(s.attachedDocuments == [Self.doc])
        #expect(s.receive(batch, now: 0) == [.operations(Self.doc, batch: 9, ops)])
        #expect(s.receive(Self.frame(.hello(document: Self.doc, version: VersionVector())), now: 0) == [.hello(Self.doc, VersionVector())])
        #expect(s.receive(Self.frame(.unsubscribe(document: Self.doc)), now: 0) == [.unsubscribe(Self.doc)])
        #expect(s.attachedDocuments.isEmpty)
        #expect(s.receive(batch, now: 0).sent.map(\.code) == [.unknownDocument])
        s.attached(Self.doc)
        s.detached(Self.doc)
        #expect(s.receive(batch, now: 0).sent.map(\.code) == [.unknownDocument])
    }

    @Test("a message only a daemon sends is refused as unsupported; the connection stays open")
    func wrongDirection() {
        var s = Self.session()
        for m: SyncMessage in [.ack(document: Self.doc, batch: 1, version: VersionVector()), .synced(document: Self.doc, version: VersionVector()),
                               .statusReport(request: 1, part: [], more: false), .created(request: 1, document: Self.doc, epoch: 1),
                               .subscribed(document: Self.doc, name: "", epoch: 1, version: VersionVector()),
                               .documents(request: 1, [], more: false), .error(request: 1, document: nil, code: .limit, text: "")] {
            #expect(s.receive(Self.frame(m), now: 0).sent.map(\.code) == [.unsupported], "\(m)")
        }
        #expect(!s.isClosed)
        #expect(s.receive(Self.frame(.status(request: 2)), now: 0) == [.status(request: 2)])
    }

    @Test("a malformed frame: a malformed error, the connection closed, nothing else done or changed")
    func malformed() {
        var s = Self.session()
        s.attached(Self.doc)
        for bad: [UInt8] in [[], [2], [1, 11, 1], [2, 99], [2, 11, 1, 0], Array(Self.frame(.status(request: 1)).dropLast()) + [0x80]] {
            var copy = s
            let actions = copy.receive(bad, now: 0)
            #expect(actions.count == 2, "\(bad)")
            #expect(actions.sent.map(\.code) == [.malformed], "\(bad)")
            if case .close? = actions.last {} else { Issue.record("\(bad): \(actions)") }
            #expect(copy.isClosed && copy.attachedDocuments == [Self.doc])
            #expect(copy.receive(Self.frame(.status(request: 1)), now: 0).isEmpty, "a closed session takes nothing more")
        }
    }

    @Test("every strict prefix of a client's frame is malformed: nothing but the error and the close")
    func prefixes() {
        var s = Self.session()
        s.attached(Self.doc)
        let frames = [Self.frame(.operations(document: Self.doc, batch: 3, operations: Fixture.typed(3).operations)),
                      Self.frame(.subscribe(document: Self.doc, epoch: 1, version: VersionVector([ReplicaID(7): 300]))),
                      Self.frame(.create(request: 1, name: "name", sections: ["a", "b"], id: Self.doc, epoch: 2))]
        for frame in frames {
            for k in 0..<frame.count {
                var copy = s
                let actions = copy.receive(Array(frame[..<k]), now: 0)
                guard actions.requests.count == 1, case .close? = actions.requests.first, actions.sent.map(\.code) == [.malformed] else {
                    Issue.record("\(k) of \(frame.count) bytes: \(actions)")
                    break
                }
            }
        }
    }

    @Test("a client's frames read from a byte stream split at every offset give the same actions")
    func streamSplits() {
        var s = Self.session(rateLimit: RateLimit(batchesPerSecond: 1, burst: 1))
        s.attached(Self.doc)
        let frames = [Self.frame(.operations(document: Self.doc, batch: 1, operations: Fixture.typed(2).operations)),
                      Self.frame(.operations(document: Self.doc, batch: 2, operations: Fixture.typed(1).operations)),
                      Self.frame(.hello(document: Self.doc, version: VersionVector([ReplicaID(1): 1]))),
                      Self.frame(.listDocuments(request: 3, after: nil)),
                      Self.frame(.unsubscribe(document: Self.doc)),
                      Self.frame(.operations(document: Self.doc, batch: 4, operations: []))]
        expectSameAtEverySplit(s, frames) { $0.receive($1, now: 0) }
    }

    @Test("the rate limit refuses the excess batch with a limit error naming it; the bucket refills")
    func rateLimit() {
        var s = Self.session(rateLimit: RateLimit(batchesPerSecond: 2, burst: 2))
        s.attached(Self.doc)
        let ops = Fixture.typed(1).operations
        func batch(_ n: UInt64) -> [UInt8] { Self.frame(.operations(document: Self.doc, batch: n, operations: ops)) }
        #expect(s.receive(batch(1), now: 0) == [.operations(Self.doc, batch: 1, ops)])
        #expect(s.receive(batch(2), now: 0) == [.operations(Self.doc, batch: 2, ops)])
        let third = s.receive(batch(3), now: 0)
        #expect(third.requests == [.rateLimited(first: true)])
        if case let .error(3, d, .limit, text)? = third.sent.first {
            #expect(d == Self.doc && text.contains("rate limit"))
        } else {
            Issue.record("\(third)")
        }
        #expect(s.receive(batch(4), now: 100_000_000).requests == [.rateLimited(first: false)])
        #expect(s.rateLimitedCount == 2)
        #expect(s.receive(batch(5), now: 600_000_000) == [.operations(Self.doc, batch: 5, ops)])
    }

    @Test("the document list is paged to fit the frame; every page decodes and the pages cover the list in order")
    func documentPages() throws {
        let s = Self.session(maxFrame: 256)
        let list = (1...30).map { DocumentInfo(id: DocumentID(high: UInt64($0), low: 7), name: String(repeating: "n", count: $0 * 3),
                                               epoch: UInt64($0) << 40, operations: $0 * 1_000) }
        var rest = list[...], pages = 0
        while true {
            let actions = s.documents(request: 1, Array(rest))
            guard actions.count == 1, case let .send(frame) = actions[0] else { Issue.record("\(actions)"); return }
            #expect(frame.count <= 256)
            guard case let .documents(1, page, more) = try SyncMessage(decoding: frame) else { Issue.record("not documents"); return }
            #expect(!page.isEmpty && Array(rest.prefix(page.count)) == page)
            rest = rest.dropFirst(page.count)
            pages += 1
            #expect(more == !rest.isEmpty)
            if !more { break }
        }
        #expect(pages > 3)
        #expect(s.documents(request: 2, []).sent == [.documents(request: 2, [], more: false)])
    }

    @Test("the status is chunked to fit the frame; the parts join to the JSON")
    func statusParts() throws {
        let s = Self.session(maxFrame: 256)
        let json = "{\"x\":\"" + String(repeating: "ü", count: 700) + "\"}"
        let frames = s.status(request: 4, json: json).compactMap { a -> [UInt8]? in if case let .send(f) = a { return f }; return nil }
        #expect(frames.count > 4 && frames.allSatisfy { $0.count <= 256 })
        var joined: [UInt8] = [], mores: [Bool] = []
        for f in frames {
            guard case let .statusReport(4, part, more) = try SyncMessage(decoding: f) else { Issue.record("not a part"); return }
            joined += part
            mores.append(more)
        }
        #expect(String(decoding: joined, as: UTF8.self) == json)
        #expect(mores == Array(repeating: true, count: frames.count - 1) + [false])
        #expect(s.status(request: 5, json: "").sent == [.statusReport(request: 5, part: [], more: false)])
    }

    @Test("new documents are announced only to a connection that listed them")
    func announce() {
        var s = Self.session()
        let info = DocumentInfo(id: Self.doc, name: "n", epoch: 1, operations: 0)
        #expect(s.announce(info).isEmpty)
        _ = s.receive(Self.frame(.listDocuments(request: 1, after: nil)), now: 0)
        #expect(s.announce(info).sent == [.documents(request: 0, [info], more: false)])
    }
}

extension SyncMessage {
    /// The code of an `error`, nil for another message.
    var code: SyncErrorCode? {
        if case let .error(_, _, code, _) = self { return code }
        return nil
    }
}
