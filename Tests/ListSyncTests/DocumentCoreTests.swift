import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// One document on the daemon with no disk and no socket: batches in, appends and frames out; the
/// test says when an append is durable (Docs/Protocol.md, "The document core").
@Suite struct DocumentCoreTests {
    static let doc = Fixture.document
    static let (a, b, c) = (SubscriberID(1), SubscriberID(2), SubscriberID(3))

    /// A core holding `base`, with `a`, `b` (and `c`) subscribed holding all of it.
    static func core(_ base: ListDocument = Fixture.typed(3), subscribers: [SubscriberID] = [a, b],
                     maxFrame: Int = 1 << 20, stepBytes: Int = 1 << 20, maxQueued: Int = 262_144) -> DocumentCore {
        var core = DocumentCore(id: doc, name: "groceries", epoch: 7, document: base, maxFrame: maxFrame,
                                stepBytes: stepBytes, maxQueuedOperations: maxQueued)
        for s in subscribers {
            let actions = core.subscribe(s, epoch: 7, version: base.version)
            #expect(actions.sent(to: s) == [.subscribed(document: doc, name: "groceries", epoch: 7, version: base.version),
                                            .synced(document: doc, version: base.version)])
        }
        return core
    }

    /// An item insert made by `replica` on a copy of `base`, with `value`.
    static func insert(on base: ListDocument, replica: UInt64, _ value: String) throws -> ListOperation {
        var copy = base.fork(as: replica)
        return try copy.insertItem(at: IndexPath(item: 0, section: 0), value: Data(value))
    }

    // MARK: Durability and order

    @Test("a batch is acknowledged and forwarded only after durable(ticket:), not before")
    func durableFirst() {
        let base = Fixture.typed(3)
        var core = Self.core(base)
        let ops = Fixture.edits(on: base, replica: 2, count: 3)
        let received = core.receive(ops, batch: 5, from: Self.a)
        #expect(received.count == 1 && received.appends.map(\.ticket) == [1] && received.appends.first?.operations == ops)
        #expect(core.durableVersion == base.version && core.inFlightCount == 1 && !core.isQuiet)
        #expect(core.durableOperations == base.operations)
        // A subscriber that attaches meanwhile is not sent what is not durable.
        let late = core.subscribe(Self.c, epoch: 0, version: base.version)
        #expect(late.sent(to: Self.c) == [.subscribed(document: Self.doc, name: "groceries", epoch: 7, version: base.version),
                                          .synced(document: Self.doc, version: base.version)])
        let released = core.durable(ticket: 1)
        var after = base
        after.receive(ops)
        #expect(core.durableVersion == after.version && core.isQuiet)
        #expect(core.durableOperations == base.operations + ops)
        #expect(released.sent(to: Self.a) == [.ack(document: Self.doc, batch: 5, version: after.version)])
        #expect(released.operations(to: Self.b) == ops)
        #expect(released.operations(to: Self.c) == ops)
        #expect(core.durable(ticket: 1).isEmpty, "a ticket is released once")
    }

    @Test("batches are released in ticket order, whatever order their appends become durable in")
    func ticketOrder() {
        let base = Fixture.typed(2)
        var core = Self.core(base)
        let first = Fixture.edits(on: base, replica: 2, count: 2)
        var withFirst = base
        withFirst.receive(first)
        let second = Fixture.edits(on: withFirst, replica: 3, count: 1)
        _ = core.receive(first, batch: 1, from: Self.a)
        _ = core.receive(second, batch: 2, from: Self.b)
        let again = core.receive(first, batch: 3, from: Self.a)   // nothing new: no append, yet it waits its turn
        #expect(again.isEmpty)
        #expect(core.durable(ticket: 2).isEmpty)
        let released = core.durable(ticket: 1)
        var all = withFirst
        all.receive(second)
        #expect(released.sent(to: Self.a) == [.ack(document: Self.doc, batch: 1, version: withFirst.version),
                                              .operations(document: Self.doc, batch: 0, operations: second),
                                              .ack(document: Self.doc, batch: 3, version: all.version)])
        #expect(released.sent(to: Self.b) == [.operations(document: Self.doc, batch: 0, operations: first),
                                              .ack(document: Self.doc, batch: 2, version: all.version)])
        #expect(core.inFlightCount == 0)
    }

    @Test("operations are forwarded to every other subscriber exactly once; a resent batch is acknowledged, not forwarded again")
    func forwardOnce() {
        let base = Fixture.typed(2)
        var core = Self.core(base, subscribers: [Self.a, Self.b, Self.c])
        let ops = Fixture.edits(on: base, replica: 2, count: 4)
        _ = core.receive(ops, batch: 1, from: Self.a)
        let released = core.durable(ticket: 1)
        #expect(released.operations(to: Self.a).isEmpty)
        #expect(released.operations(to: Self.b) == ops && released.operations(to: Self.c) == ops)
        let resent = core.receive(ops, batch: 2, from: Self.a)
        #expect(resent.appends.isEmpty)
        #expect(resent.sent(to: Self.a) == [.ack(document: Self.doc, batch: 2, version: core.durableVersion)])
        #expect(resent.operations(to: Self.b).isEmpty && resent.operations(to: Self.c).isEmpty)
        // The daemon's own batch (no sender) goes to everyone, and nobody is answered.
        let own = Fixture.edits(on: core.document, replica: 9, count: 1)
        _ = core.receive(own, batch: 0, from: nil)
        let ownReleased = core.durable(ticket: 3)
        for s in [Self.a, Self.b, Self.c] { #expect(ownReleased.sent(to: s) == [.operations(document: Self.doc, batch: 0, operations: own)]) }
    }

    @Test("a batch with batch number 0 is forwarded but not answered")
    func noAnswerAsked() {
        var core = Self.core()
        let ops = Fixture.edits(on: core.document, replica: 2, count: 1)
        _ = core.receive(ops, batch: 0, from: Self.a)
        let released = core.durable(ticket: 1)
        #expect(released.sent(to: Self.a).isEmpty && released.operations(to: Self.b) == ops)
    }

    @Test("refused operations: the others are logged, forwarded and the sender gets one refused error after they are durable")
    func refusedOperations() throws {
        let base = Fixture.typed(2)
        var core = Self.core(base)
        let good = try Self.insert(on: base, replica: 2, "good")
        let evil = try Self.insert(on: base, replica: 2, "evil")
        #expect(good.id == evil.id && good != evil)
        _ = core.receive([good], batch: 1, from: Self.a)
        _ = core.durable(ticket: 1)
        var withGood = base
        withGood.receive([good])
        let other = try Self.insert(on: withGood, replica: 3, "other")
        let received = core.receive([evil, other], batch: 2, from: Self.b)
        #expect(received.appends.first?.operations == [other], "only what the engine accepted is logged")
        #expect(received.sent(to: Self.b).isEmpty, "no answer before it is durable")
        let released = core.durable(ticket: 2)
        #expect(released.operations(to: Self.a) == [other])
        let answer = released.sent(to: Self.b)
        #expect(answer.count == 1 && answer.first?.code == .refused)
        if case let .error(2, d, _, _)? = answer.first { #expect(d == Self.doc) } else { Issue.record("\(answer)") }
        #expect(core.equivocations == 1 && core.lastEquivocation == good.id)
    }

    @Test("unsubscribed while its batch is in flight: the batch is still logged and forwarded; nobody is answered")
    func unsubscribeInFlight() {
        var core = Self.core()
        let ops = Fixture.edits(on: core.document, replica: 2, count: 2)
        _ = core.receive(ops, batch: 4, from: Self.a)
        core.unsubscribe(Self.a)
        #expect(!core.isSubscribed(Self.a) && core.subscriberIDs == [Self.b])
        let released = core.durable(ticket: 1)
        #expect(released.frames(to: Self.a).isEmpty && released.operations(to: Self.b) == ops)
    }

    @Test("operations a batch wakes from the causal buffer reach its sender too")
    func wokenToSender() throws {
        let base = Fixture.typed(2)
        var core = Self.core(base, subscribers: [Self.a, Self.b, Self.c])
        // Y by replica 3; X by replica 4, which saw Y. The core gets X (from b) before Y (from a).
        var y = base.fork(as: 3)
        let opY = try y.insertItem(at: IndexPath(item: 0, section: 0), value: Data("y"))
        var x = y.fork(as: 4)
        let opX = try x.insertItem(at: IndexPath(item: 1, section: 0), value: Data("x"))
        _ = core.receive([opX], batch: 1, from: Self.b)
        #expect(core.document.pendingCount == 1)
        let first = core.durable(ticket: 1)
        #expect(first.sent(to: Self.b).first?.isAck == true && first.operations(to: Self.a).isEmpty)
        _ = core.receive([opY], batch: 2, from: Self.a)
        let released = core.durable(ticket: 2)
        #expect(released.operations(to: Self.a) == [opX], "the sender lacks what its batch woke")
        #expect(released.sent(to: Self.a).last?.isAck == true)
        #expect(released.operations(to: Self.c) == [opY, opX])
        #expect(Set(released.operations(to: Self.b)) == [opY, opX])
    }

    // MARK: Failures

    @Test("a failed append refuses every batch in flight with a storage error and stops the core until recovered")
    func appendFailed() {
        let base = Fixture.typed(2)
        var core = Self.core(base)
        let first = Fixture.edits(on: base, replica: 2, count: 2)
        let second = Fixture.edits(on: base, replica: 3, count: 1)
        _ = core.receive(first, batch: 1, from: Self.a)
        _ = core.receive(second, batch: 2, from: Self.b)
        let failed = core.appendFailed(ticket: 1, reason: "disk full")
        #expect(failed.sent(to: Self.a).map(\.code) == [.storage] && failed.sent(to: Self.b).map(\.code) == [.storage])
        #expect(failed.operations(to: Self.a).isEmpty && failed.operations(to: Self.b).isEmpty)
        #expect(core.failure == "disk full" && core.inFlightCount == 0 && core.durableVersion == base.version)
        #expect(core.durable(ticket: 2).isEmpty, "a late durable changes nothing")
        let refused = core.receive(Fixture.edits(on: base, replica: 4, count: 1), batch: 3, from: Self.a)
        #expect(refused.appends.isEmpty && refused.sent(to: Self.a).map(\.code) == [.storage])
        #expect(core.appendFailed(ticket: 9, reason: "again").isEmpty)
        // The reload holds the first batch (it reached the disk): it is forwarded to everyone now.
        var reloaded = base
        reloaded.receive(first)
        let recovered = core.recovered(reloaded)
        #expect(recovered.operations(to: Self.a) == first && recovered.operations(to: Self.b) == first)
        #expect(core.failure == nil && core.durableVersion == reloaded.version && core.isQuiet)
        let next = core.receive(second, batch: 4, from: Self.b)
        #expect(next.appends.count == 1)
        #expect(core.durable(ticket: next.appends[0].ticket).sent(to: Self.b) == [.ack(document: Self.doc, batch: 4, version: core.durableVersion)])
    }

    @Test("a failed append also refuses a durable batch that waits behind one not yet durable; nothing is released")
    func appendFailedBehindPending() {
        let base = Fixture.typed(2)
        var core = Self.core(base, subscribers: [Self.a, Self.b, Self.c])
        _ = core.receive(Fixture.edits(on: base, replica: 2, count: 1), batch: 1, from: Self.a)
        _ = core.receive(Fixture.edits(on: base, replica: 3, count: 1), batch: 2, from: Self.b)
        _ = core.receive(Fixture.edits(on: base, replica: 4, count: 1), batch: 3, from: Self.c)
        #expect(core.durable(ticket: 2).isEmpty, "it waits for ticket 1")
        let failed = core.appendFailed(ticket: 3, reason: "sync failed")
        for (s, batch) in [(Self.a, UInt64(1)), (Self.b, 2), (Self.c, 3)] {
            let sent = failed.sent(to: s)
            #expect(sent.count == 1 && sent.first?.code == .storage, "\(s): \(sent)")
            if case let .error(request, _, _, _)? = sent.first { #expect(request == batch) }
        }
        #expect(core.inFlightCount == 0 && core.durableVersion == base.version)
        // A subscriber that attaches now is sent only what is durable.
        let late = core.subscribe(SubscriberID(4), epoch: 7, version: VersionVector())
        #expect(late.operations(to: SubscriberID(4)) == base.operations)
    }

    // MARK: Subscribers

    @Test("a subscription at another epoch is refused with epochMismatch and changes nothing; epoch 0 attaches")
    func epochs() {
        var core = Self.core(subscribers: [])
        let refused = core.subscribe(Self.a, epoch: 6, version: VersionVector())
        #expect(refused.sent(to: Self.a).map(\.code) == [.epochMismatch])
        #expect(refused.count == 1 && !core.isSubscribed(Self.a) && core.subscriberIDs.isEmpty)
        #expect(core.subscribe(Self.a, epoch: 0, version: VersionVector()).sent(to: Self.a).first
                == .subscribed(document: Self.doc, name: "groceries", epoch: 7, version: core.durableVersion))
        #expect(core.isSubscribed(Self.a))
    }

    @Test("hello: the durable operations the subscriber lacks, then synced; from a stranger, nothing")
    func hello() {
        let base = Fixture.typed(4)
        var core = Self.core(base)
        let actions = core.hello(Self.a, version: VersionVector())
        #expect(actions.operations(to: Self.a) == base.operations)
        #expect(actions.sent(to: Self.a).last == .synced(document: Self.doc, version: base.version))
        #expect(core.hello(Self.c, version: VersionVector()).isEmpty)
    }

    @Test("a catch-up goes in steps: after each, the core waits for roomAvailable; synced comes after the last")
    func catchUpSteps() {
        let base = Fixture.typed(300)
        var core = Self.core(base, subscribers: [Self.b], maxFrame: 256, stepBytes: 256)
        var actions = core.subscribe(Self.a, epoch: 7, version: VersionVector())
        var received: [ListOperation] = [], steps = 0, extra: [ListOperation] = []
        while true {
            steps += 1
            #expect(actions.frames(to: Self.a).allSatisfy { $0.count <= 256 })
            received += actions.operations(to: Self.a)
            if actions.sent(to: Self.a).last == .synced(document: Self.doc, version: core.durableVersion) { break }
            guard actions.last == .awaitRoom(Self.a) else { Issue.record("step \(steps) ends with \(String(describing: actions.last))"); return }
            if steps == 2 {
                // Meanwhile another subscriber's batch is released: queued behind the catch-up.
                extra = Fixture.edits(on: base, replica: 5, count: 2)
                _ = core.receive(extra, batch: 1, from: Self.b)
                let released = core.durable(ticket: 1)
                #expect(released.frames(to: Self.a).isEmpty, "nothing is sent while the core waits for room")
            }
            if steps == 1 { #expect(core.hello(Self.a, version: base.version).isEmpty, "nothing is sent while the core waits for room") }
            actions = core.roomAvailable(Self.a)
            if steps > 100 { Issue.record("no end"); return }
        }
        #expect(steps > 3, "\(steps) steps")
        #expect(received == base.operations + extra)
        #expect(core.roomAvailable(Self.a).isEmpty, "nothing left")
        #expect(core.roomAvailable(Self.c).isEmpty, "not a subscriber")
    }

    @Test("a subscriber is cut off past maxQueuedOperations queued beyond its catch-up; its catch-up does not count")
    func slowConsumer() {
        let base = Fixture.typed(200)
        var core = Self.core(base, subscribers: [Self.b], maxFrame: 256, stepBytes: 1, maxQueued: 10)
        let start = core.subscribe(Self.a, epoch: 7, version: VersionVector())
        #expect(start.last == .awaitRoom(Self.a))
        var doc = base
        var ticket: UInt64 = 0
        for k in 1...11 {
            let ops = Fixture.edits(on: doc, replica: 2, count: 1)
            doc.receive(ops)
            _ = core.receive(ops, batch: UInt64(k), from: Self.b)
            ticket += 1
            let released = core.durable(ticket: ticket)
            let cut = released.contains { if case .close(Self.a, _) = $0 { return true }; return false }
            #expect(cut == (k == 11), "after \(k) operations queued beyond the catch-up")
        }
        #expect(!core.isSubscribed(Self.a) && core.isSubscribed(Self.b))
    }

    @Test("a second catch-up (hello) while the first is not sent counts the first: hellos cannot grow the queue without bound")
    func helloFlood() {
        let base = Fixture.typed(200)
        var core = Self.core(base, subscribers: [], maxFrame: 256, stepBytes: 1, maxQueued: 10)
        #expect(core.subscribe(Self.a, epoch: 7, version: VersionVector()).last == .awaitRoom(Self.a))
        let again = core.hello(Self.a, version: VersionVector())
        #expect(again.count == 1)
        if case .close(Self.a, _)? = again.first {} else { Issue.record("\(again)") }
        #expect(!core.isSubscribed(Self.a))
    }

    @Test("a subscriber's frames, read from a byte stream split at every offset, give a client the same results")
    func streamToClient() {
        let base = Fixture.typed(6)
        var core = Self.core(base, subscribers: [Self.b])
        var frames = core.subscribe(Self.a, epoch: 0, version: VersionVector()).frames(to: Self.a)
        let ops = Fixture.edits(on: base, replica: 2, count: 2)
        _ = core.receive(ops, batch: 3, from: Self.b)
        frames += core.durable(ticket: 1).frames(to: Self.a)
        var client = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        _ = client.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        expectSameAtEverySplit(client, frames) { $0.receive($1, now: 1) }
        let results = frames.flatMap { client.receive($0, now: 1) }
        #expect(results == [.subscribed(Self.doc, name: "groceries", epoch: 7, version: base.version),
                            .operations(Self.doc, base.operations), .synced(Self.doc, base.version), .operations(Self.doc, ops)])
    }
}

extension SyncMessage {
    /// Whether this is an `ack`.
    var isAck: Bool { if case .ack = self { return true }; return false }
}
