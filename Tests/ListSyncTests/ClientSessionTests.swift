import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// The client's state machine with no socket: calls and frames in, frames and results out
/// (Docs/Protocol.md, "The client").
@Suite struct ClientSessionTests {
    static let timeout: UInt64 = 1_000
    static let doc = Fixture.document

    static func session(maxFrame: Int = 1 << 20) -> ClientSession { ClientSession(maxFrame: maxFrame, timeout: timeout) }

    static func core(_ document: ListDocument = Fixture.typed(3), epoch: UInt64 = 7) -> DocumentCore {
        DocumentCore(id: doc, name: "groceries", epoch: epoch, document: document)
    }

    /// The frame of a message from the daemon.
    static func frame(_ m: SyncMessage) -> [UInt8] { m.encoded() }

    // MARK: Requests

    @Test("status, the document list and create each end in exactly one answer")
    func requestsEndOnce() {
        var w = Wired(core: Self.core())
        w.otherDocuments = [DocumentInfo(id: Fixture.other, name: "b", epoch: 3, operations: 0)]
        let (status, a1) = w.client.request(.status, now: 0)
        w.run(a1)
        let (list, a2) = w.client.request(.documents, now: 0)
        w.run(a2)
        let (made, a3) = w.client.request(.create(name: "new", sections: ["a"]), now: 0)
        w.run(a3)
        let (refused, a4) = w.client.request(.create(name: "", sections: []), now: 0)
        w.run(a4)
        let (limited, a5) = w.client.request(.create(name: "one too many", sections: []), now: 0)
        w.run(a5)
        #expect(w.results == [
            .answered(status, .success(.status("{\"ok\":true}"))),
            .answered(list, .success(.documents([DocumentInfo(id: Self.doc, name: "groceries", epoch: 7, operations: 4),
                                                 DocumentInfo(id: Fixture.other, name: "b", epoch: 3, operations: 0)]))),
            .answered(made, .success(.created(Fixture.other, epoch: 9))),
            .answered(refused, .failure(.refused(.refused, "a document's name cannot be empty"))),
            .answered(limited, .failure(.refused(.limit, "the documents limit"))),
        ])
        #expect(w.client.waitingCount == 0)
        #expect(w.client.tick(now: 1 << 40).isEmpty, "nothing is left to time out")
        // A second answer to a request already answered changes nothing.
        #expect(w.client.receive(Self.frame(.created(request: made, document: Self.doc, epoch: 1)), now: 0).isEmpty)
        #expect(w.client.receive(Self.frame(.statusReport(request: status, part: [65], more: false)), now: 0).isEmpty)
    }

    @Test("a document list over many pages is fetched page by page and answered once, whole")
    func documentPages() {
        var w = Wired(core: Self.core(), maxFrame: 256)
        w.otherDocuments = (1...40).map { DocumentInfo(id: DocumentID(high: 0x2000 + $0, low: 0), name: "list number \($0) of forty",
                                                       epoch: $0, operations: Int($0)) }
        let (n, actions) = w.client.request(.documents, now: 0)
        w.run(actions)
        let expected = ([DocumentInfo(id: Self.doc, name: "groceries", epoch: 7, operations: 4)] + w.otherDocuments).sorted { $0.id < $1.id }
        #expect(w.results == [.answered(n, .success(.documents(expected)))])
    }

    @Test("a status larger than a frame comes in parts and is answered once, whole")
    func statusParts() {
        var w = Wired(core: Self.core(), maxFrame: 256)
        w.statusJSON = "{\"x\":\"" + String(repeating: "é", count: 1_500) + "\"}"
        let (n, actions) = w.client.request(.status, now: 0)
        w.run(actions)
        #expect(w.results == [.answered(n, .success(.status(w.statusJSON)))])
    }

    @Test("an error with a request's number answers it, once")
    func requestError() {
        var s = Self.session()
        let (n, _) = s.request(.status, now: 0)
        let error = Self.frame(.error(request: n, document: nil, code: .unsupported, text: "no status here"))
        #expect(s.receive(error, now: 0) == [.answered(n, .failure(.refused(.unsupported, "no status here")))])
        #expect(s.receive(error, now: 0).isEmpty)
        #expect(s.waitingCount == 0)
    }

    @Test("a request, a subscription and an edit with no answer fail at their deadline, once; a late answer is dropped")
    func deadlines() {
        var s = Self.session()
        let (n, _) = s.request(.status, now: 100)
        _ = s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 200)
        let (edit, sent) = s.send(Self.doc, Fixture.typed(2).operations, now: 300)
        #expect(s.tick(now: 1_099).isEmpty)
        let first = s.tick(now: 1_100)
        #expect(first.count == 1)
        if case .answered(n, .failure(.timeout))? = first.first {} else { Issue.record("\(first)") }
        let second = s.tick(now: 1_300)
        #expect(second.count == 2)
        if case .subscribeFailed(Self.doc, .timeout)? = second.first {} else { Issue.record("\(second)") }
        if case .editDone(edit, .failure(.timeout))? = second.last {} else { Issue.record("\(second)") }
        #expect(s.tick(now: 10_000).isEmpty)
        #expect(s.waitingCount == 0)
        // Late answers.
        #expect(s.receive(Self.frame(.statusReport(request: n, part: [65], more: false)), now: 2_000).isEmpty)
        if case let .operations(_, batch, _)? = sent.sent.first {
            #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: batch, version: VersionVector())), now: 2_000).isEmpty)
        } else {
            Issue.record("the edit sent no operations: \(sent)")
        }
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "x", epoch: 1, version: VersionVector())), now: 2_000).isEmpty)
    }

    @Test("each page of the document list moves the request's deadline")
    func pageDeadline() {
        var s = Self.session()
        let (n, _) = s.request(.documents, now: 0)
        let page = [DocumentInfo(id: Self.doc, name: "a", epoch: 1, operations: 0)]
        #expect(s.receive(Self.frame(.documents(request: n, page, more: true)), now: 900).sent == [.listDocuments(request: n, after: Self.doc)])
        #expect(s.tick(now: 1_500).isEmpty)
        let late = s.tick(now: 1_900)
        if case .answered(n, .failure(.timeout))? = late.first, late.count == 1 {} else { Issue.record("\(late)") }
    }

    // MARK: Edits

    @Test("an edit split into several frames ends only when every frame is acknowledged")
    func editAcks() throws {
        var s = Self.session(maxFrame: 256)
        let ops = Fixture.edits(on: Fixture.typed(1), replica: 2, count: 60, size: 20)
        let (edit, actions) = s.send(Self.doc, ops, now: 0)
        let frames = actions.compactMap { a -> [UInt8]? in if case let .send(f) = a { return f }; return nil }
        #expect(frames.count == actions.count && frames.count > 3, "\(frames.count) frames")
        #expect(frames.allSatisfy { $0.count <= 256 })
        var batches: [UInt64] = [], carried: [ListOperation] = []
        for f in frames {
            guard case let .operations(d, b, o) = try SyncMessage(decoding: f) else { Issue.record("not operations"); continue }
            #expect(d == Self.doc && b != 0)
            batches.append(b)
            carried += o
        }
        #expect(carried == ops)
        #expect(Set(batches).count == batches.count, "a batch number per frame")
        var union = VersionVector()
        for (k, b) in batches.enumerated().reversed() where k > 0 {
            let v = VersionVector([ReplicaID(2): UInt64(k)])
            union.formUnion(v)
            #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: b, version: v)), now: 10).isEmpty, "frame \(k) of \(batches.count)")
        }
        let last = VersionVector([ReplicaID(1): 9])
        union.formUnion(last)
        #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: batches[0], version: last)), now: 10) == [.editDone(edit, .success(union))])
        #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: batches[0], version: last)), now: 10).isEmpty)
        #expect(s.waitingCount == 0)
    }

    @Test("an edit with a refused frame ends with the refusal, once every frame is answered")
    func editRefused() {
        var s = Self.session(maxFrame: 256)
        let ops = Fixture.edits(on: Fixture.typed(1), replica: 2, count: 40, size: 20)
        let (edit, actions) = s.send(Self.doc, ops, now: 0)
        let batches = actions.sent.compactMap { m -> UInt64? in if case let .operations(_, b, _) = m { return b }; return nil }
        #expect(batches.count > 2)
        #expect(s.receive(Self.frame(.error(request: batches[1], document: Self.doc, code: .refused, text: "equivocation")), now: 1).isEmpty)
        for b in batches.dropLast() where b != batches[1] {
            #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: b, version: VersionVector())), now: 1).isEmpty)
        }
        #expect(s.receive(Self.frame(.ack(document: Self.doc, batch: batches.last!, version: VersionVector())), now: 1)
                == [.editDone(edit, .failure(.refused(.refused, "equivocation")))])
    }

    @Test("an edit with frames refused in part ends with one refusal that says what the daemon took of all of them (its acknowledged frames too); a frame refused without saying makes it say nothing")
    func editRefusedInPartSaysTaken() {
        for saysAll in [true, false] {
            var s = Self.session(maxFrame: 256)
            let ops = Fixture.edits(on: Fixture.typed(1), replica: 2, count: 40, size: 20)
            let (edit, actions) = s.send(Self.doc, ops, now: 0)
            let batches = actions.sent.compactMap { m -> UInt64? in if case let .operations(_, b, _) = m { return b }; return nil }
            #expect(batches.count > 3)
            let first = TakenInPart(version: VersionVector([ReplicaID(2): 5]), refusedFrom: VersionVector([ReplicaID(2): 9]))
            let second = TakenInPart(version: VersionVector([ReplicaID(2): 4, ReplicaID(1): 2]), refusedFrom: VersionVector([ReplicaID(2): 7]))
            #expect(s.receive(Self.frame(.error(request: batches[1], document: Self.doc, code: .compacted,
                                                text: first.appended(to: "late"))), now: 1).isEmpty)
            #expect(s.receive(Self.frame(.error(request: batches[2], document: Self.doc, code: .compacted,
                                                text: saysAll ? second.appended(to: "later") : "later")), now: 1).isEmpty)
            var done: [ClientSession.Action] = []
            for b in batches where ![batches[1], batches[2]].contains(b) {
                done += s.receive(Self.frame(.ack(document: Self.doc, batch: b, version: VersionVector([ReplicaID(3): 1]))), now: 1)
            }
            let expected = saysAll
                ? TakenInPart(version: VersionVector([ReplicaID(2): 5, ReplicaID(1): 2, ReplicaID(3): 1]),
                              refusedFrom: VersionVector([ReplicaID(2): 7])).appended(to: "late")
                : "late"
            #expect(done == [.editDone(edit, .failure(.refused(.compacted, expected)))])
            #expect(s.waitingCount == 0)
        }
    }

    @Test("an edit through the daemon's connection and document: done only once every append is durable")
    func editDurable() {
        var w = Wired(core: Self.core(), maxFrame: 256)
        w.run(w.client.subscribe(Self.doc, epoch: 7, version: Fixture.typed(3).version, now: 0))
        w.results = []
        let ops = Fixture.edits(on: Fixture.typed(3), replica: 2, count: 50, size: 20)
        let (edit, actions) = w.client.send(Self.doc, ops, now: 0)
        w.run(actions)
        #expect(w.appending.count > 3 && w.results.isEmpty, "\(w.appending.count) appends, \(w.results)")
        w.durable(w.appending.dropLast().map(\.ticket))
        #expect(w.results.isEmpty, "one append is not durable yet")
        w.durable()
        #expect(w.results == [.editDone(edit, .success(w.core.durableVersion))])
        #expect(w.core.durableVersion.contains(ops.last!.id))
    }

    @Test("an empty edit is done at once; an edit on a closed session fails at once")
    func trivialEdits() {
        var s = Self.session()
        let (e1, a1) = s.send(Self.doc, [], now: 0)
        #expect(a1 == [.editDone(e1, .success(VersionVector()))])
        _ = s.disconnected()
        let (e2, a2) = s.send(Self.doc, Fixture.typed(1).operations, now: 0)
        #expect(a2 == [.editDone(e2, .failure(.disconnected))])
        let (r, a3) = s.request(.status, now: 0)
        #expect(a3 == [.answered(r, .failure(.disconnected))])
        #expect(s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0) == [.subscribeFailed(Self.doc, .disconnected)])
    }

    // MARK: Subscriptions

    @Test("subscribe → subscribed → operations → synced; nothing of the document before subscribed or after unsubscribe")
    func subscription() {
        var s = Self.session()
        let held = VersionVector([ReplicaID(1): 2])
        #expect(s.subscribe(Self.doc, epoch: 7, version: held, now: 0).sent == [.subscribe(document: Self.doc, epoch: 7, version: held)])
        let ops = Fixture.typed(2).operations
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: ops)), now: 0).isEmpty)
        #expect(s.receive(Self.frame(.synced(document: Self.doc, version: held)), now: 0).isEmpty)
        let v = VersionVector([ReplicaID(1): 3])
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: v)), now: 0)
                == [.subscribed(Self.doc, name: "g", epoch: 7, version: v)])
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: v)), now: 0).isEmpty, "answered once")
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: ops)), now: 0) == [.operations(Self.doc, ops)])
        #expect(s.receive(Self.frame(.synced(document: Self.doc, version: v)), now: 0) == [.synced(Self.doc, v)])
        #expect(s.hello(Self.doc, version: v).sent == [.hello(document: Self.doc, version: v)])
        #expect(s.unsubscribe(Self.doc).sent == [.unsubscribe(document: Self.doc)])
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: ops)), now: 0).isEmpty)
        #expect(s.hello(Self.doc, version: v).isEmpty)
        #expect(s.unsubscribe(Self.doc).isEmpty)
    }

    @Test("a subscription to an unknown document or at a stale epoch fails with the daemon's code")
    func subscriptionRefused() {
        var w = Wired(core: Self.core(epoch: 7))
        w.run(w.client.subscribe(Fixture.other, epoch: 0, version: VersionVector(), now: 0))
        w.run(w.client.subscribe(Self.doc, epoch: 6, version: VersionVector(), now: 0))
        #expect(w.results.count == 2)
        if case .subscribeFailed(Fixture.other, .refused(.unknownDocument, _))? = w.results.first {} else { Issue.record("\(w.results)") }
        if case .subscribeFailed(Self.doc, .refused(.epochMismatch, _))? = w.results.last {} else { Issue.record("\(w.results)") }
        #expect(!w.core.isSubscribed(w.connection))
        #expect(w.client.subscriptions.isEmpty && w.client.waitingCount == 0)
        // Epoch 0 ("I hold nothing") attaches at the document's epoch, with its whole history.
        w.results = []
        w.run(w.client.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0))
        #expect(w.results.first == .subscribed(Self.doc, name: "groceries", epoch: 7, version: w.core.durableVersion))
        #expect(w.results.dropFirst().dropLast().flatMap { a -> [ListOperation] in
            if case let .operations(_, o) = a { return o }; return []
        } == Fixture.typed(3).operations)
        #expect(w.results.last == .synced(Self.doc, w.core.durableVersion))
    }

    @Test("a refused push (request 0, limit or refused) while a subscription waits is not its answer")
    func pushRefusalWhileSubscribing() {
        var s = Self.session()
        _ = s.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        #expect(s.receive(Self.frame(.error(request: 0, document: Self.doc, code: .limit, text: "rate limit")), now: 0)
                == [.documentError(Self.doc, .limit, "rate limit")])
        #expect(s.receive(Self.frame(.error(request: 0, document: Self.doc, code: .refused, text: "equivocation")), now: 0)
                == [.documentError(Self.doc, .refused, "equivocation")])
        let v = VersionVector([ReplicaID(1): 1])
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: v)), now: 0)
                == [.subscribed(Self.doc, name: "g", epoch: 7, version: v)])
        let ops = Fixture.typed(1).operations
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: ops)), now: 0) == [.operations(Self.doc, ops)])
    }

    @Test("a subscription made again while one waits is sent once that one's answer came; that answer and its catch-up are dropped")
    func subscriptionMadeAgainWhileWaiting() {
        var s = Self.session()
        let held = VersionVector([ReplicaID(1): 2])
        #expect(s.subscribe(Self.doc, epoch: 7, version: held, now: 0).sent == [.subscribe(document: Self.doc, epoch: 7, version: held)])
        // Made again from nothing (a re-sync): one subscribe on the wire at a time.
        #expect(s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0).isEmpty)
        #expect(s.subscriptions == [Self.doc] && s.waitingCount == 1)
        let first = VersionVector([ReplicaID(1): 3])
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: first)), now: 0).sent
                == [.subscribe(document: Self.doc, epoch: 0, version: VersionVector())], "the first answer sends the second, and is dropped")
        let ops = Fixture.typed(3).operations
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: Array(ops.suffix(1)))), now: 0).isEmpty)
        #expect(s.receive(Self.frame(.synced(document: Self.doc, version: first)), now: 0).isEmpty, "the first catch-up is not the second's")
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: first)), now: 0)
                == [.subscribed(Self.doc, name: "g", epoch: 7, version: first)])
        #expect(s.receive(Self.frame(.operations(document: Self.doc, batch: 0, operations: ops)), now: 0) == [.operations(Self.doc, ops)])
        #expect(s.receive(Self.frame(.synced(document: Self.doc, version: first)), now: 0) == [.synced(Self.doc, first)])
        #expect(s.waitingCount == 0)
    }

    @Test("a subscription given up while waiting: its answer, subscribed or an error, is never another's")
    func givenUpSubscriptionAnswers() {
        // Unsubscribed while waiting, then made again: sent after the first answer.
        var s = Self.session()
        _ = s.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        #expect(s.unsubscribe(Self.doc).sent == [.unsubscribe(document: Self.doc)])
        #expect(s.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0).isEmpty)
        let refused = s.receive(Self.frame(.error(request: 0, document: Self.doc, code: .epochMismatch, text: "reset")), now: 0)
        #expect(refused.sent == [.subscribe(document: Self.doc, epoch: 7, version: VersionVector())], "an error answers the given-up one")
        #expect(!refused.contains { if case .subscribeFailed = $0 { return true }; return false })
        #expect(s.receive(Self.frame(.error(request: 0, document: Self.doc, code: .epochMismatch, text: "reset")), now: 0)
                == [.subscribeFailed(Self.doc, .refused(.epochMismatch, "reset"))], "the second's own answer")
        // Past its deadline: the next one waits for its late answer, or for a whole deadline.
        var t = Self.session()
        _ = t.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        #expect(t.tick(now: Self.timeout) == [.subscribeFailed(Self.doc, .timeout("the subscription to \(Self.doc)"))])
        #expect(t.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: Self.timeout).isEmpty)
        #expect(t.tick(now: 2 * Self.timeout) == [.subscribeFailed(Self.doc, .timeout("the subscription to \(Self.doc)"))])
        #expect(t.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 2 * Self.timeout).sent
                == [.subscribe(document: Self.doc, epoch: 7, version: VersionVector())], "the late answer is taken as lost")
        // A queued subscription given up is never sent; the connection is detached all the same.
        var u = Self.session()
        _ = u.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        _ = u.subscribe(Self.doc, epoch: 7, version: VersionVector(), now: 0)
        #expect(u.unsubscribe(Self.doc).sent == [.unsubscribe(document: Self.doc)])
        #expect(u.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 7, version: VersionVector())), now: 0).isEmpty)
        #expect(u.waitingCount == 0 && u.subscriptions.isEmpty)
    }

    @Test("through the daemon's connection and document: a subscription made again while one waits gets its own catch-up, once")
    func subscriptionMadeAgainWired() {
        var w = Wired(core: Self.core())
        let partly = Fixture.typed(3).operations.prefix(2)
        var held = VersionVector()
        for op in partly { held.observe(op.lastID) }
        w.sendOnly(w.client.subscribe(Self.doc, epoch: 7, version: held, now: 0))
        w.sendOnly(w.client.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0))
        #expect(w.toClient.count == 3, "the first subscription's subscribed, catch-up and synced; the second not sent yet")
        w.deliver()
        #expect(w.results.count == 3, "\(w.results)")
        #expect(w.results.first == .subscribed(Self.doc, name: "groceries", epoch: 7, version: w.core.durableVersion))
        #expect(w.results.dropFirst().first == .operations(Self.doc, Fixture.typed(3).operations), "the whole history: the second's catch-up")
        #expect(w.results.last == .synced(Self.doc, w.core.durableVersion))
        #expect(w.core.isSubscribed(w.connection))
    }

    @Test("new documents announced to a client that listed them")
    func announcements() {
        var s = Self.session()
        let info = DocumentInfo(id: Self.doc, name: "new", epoch: 1, operations: 0)
        #expect(s.receive(Self.frame(.documents(request: 0, [info], more: false)), now: 0) == [.announced([info])])
    }

    // MARK: Bytes

    @Test("a frame that does not decode closes the session and fails everything waiting, once, with a typed error")
    func malformed() {
        var s = Self.session()
        let (n, _) = s.request(.status, now: 0)
        _ = s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        let (edit, _) = s.send(Self.doc, Fixture.typed(1).operations, now: 0)
        let actions = s.receive([2, 99, 0], now: 0)
        #expect(actions.count == 4)
        if case .close? = actions.first {} else { Issue.record("\(actions)") }
        if case .answered(n, .failure(.malformed))? = actions.dropFirst().first {} else { Issue.record("\(actions)") }
        if case .subscribeFailed(Self.doc, .malformed) = actions[2] {} else { Issue.record("\(actions)") }
        if case .editDone(edit, .failure(.malformed)) = actions[3] {} else { Issue.record("\(actions)") }
        #expect(s.isClosed && s.waitingCount == 0)
        #expect(s.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 1, version: VersionVector())), now: 0).isEmpty)
        #expect(s.tick(now: 1 << 40).isEmpty && s.disconnected().isEmpty)
    }

    @Test("every strict prefix of a daemon's frame is refused: the session closes and delivers nothing")
    func prefixes() {
        var live = Self.session()
        _ = live.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        _ = live.receive(Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 1, version: VersionVector())), now: 0)
        let frame = Self.frame(.operations(document: Self.doc, batch: 0, operations: Fixture.typed(4).operations))
        for k in 0..<frame.count {
            var s = live
            let actions = s.receive(Array(frame[..<k]), now: 0)
            guard case .close? = actions.first, actions.count == 1, s.isClosed else {
                Issue.record("\(k) bytes: \(actions)")
                return
            }
        }
    }

    @Test("the daemon's frames read from a byte stream split at every offset give the same results")
    func streamSplits() {
        var s = Self.session()
        let (n, _) = s.request(.status, now: 0)
        _ = s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        let (_, edit) = s.send(Self.doc, Fixture.edits(on: Fixture.typed(1), replica: 2, count: 2), now: 0)
        let batch = edit.sent.compactMap { m -> UInt64? in if case let .operations(_, b, _) = m { return b }; return nil }.first ?? 0
        let v = VersionVector([ReplicaID(1): 3])
        let frames = [
            Self.frame(.subscribed(document: Self.doc, name: "g", epoch: 4, version: v)),
            Self.frame(.operations(document: Self.doc, batch: 0, operations: Fixture.typed(2).operations)),
            Self.frame(.synced(document: Self.doc, version: v)),
            Self.frame(.statusReport(request: n, part: Array("{\"a\":".utf8), more: true)),
            Self.frame(.ack(document: Self.doc, batch: batch, version: v)),
            Self.frame(.statusReport(request: n, part: Array("1}".utf8), more: false)),
        ]
        expectSameAtEverySplit(s, frames) { $0.receive($1, now: 5) }
        var whole = s
        let results = frames.flatMap { whole.receive($0, now: 5) }
        #expect(results.count == 5 && whole.waitingCount == 0, "\(results)")
    }

    @Test("disconnected: everything waiting fails once with disconnected")
    func disconnect() {
        var s = Self.session()
        let (n, _) = s.request(.documents, now: 0)
        _ = s.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        let (edit, _) = s.send(Self.doc, Fixture.typed(1).operations, now: 0)
        #expect(s.disconnected() == [.answered(n, .failure(.disconnected)), .subscribeFailed(Self.doc, .disconnected),
                                     .editDone(edit, .failure(.disconnected))])
        #expect(s.disconnected().isEmpty && s.isClosed)
    }
}
