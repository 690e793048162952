import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

private func item(_ counter: UInt64, _ replica: UInt64 = 1) -> ItemID { ItemID(OpID(counter: counter, replica: ReplicaID(replica))) }
private let section = SectionID(OpID(counter: 1, replica: ReplicaID(1)))

/// The `presence` message (tag 15, Docs/Protocol.md, "Presence"): bytes, limits, refusals.
/// (Its round trips, every prefix and the stream cut at every offset are in `SyncMessageTests`,
/// whose `everyKind` holds these examples.)
@Suite struct PresenceMessageTests {
    /// One presence of each kind, with and without anchors.
    static let examples: [Presence] = [
        Presence(replica: ReplicaID(2), name: "phone", activity: .idle),
        Presence(replica: ReplicaID(2), name: "phone", activity: .dragging(items: [item(3)], to: PresencePlace(section: section, after: item(4), before: item(5)))),
        Presence(replica: ReplicaID(300), name: "Ana's iPad ✏️", activity: .dragging(items: [item(3), item(9, 300)], to: PresencePlace(section: section, after: nil, before: nil))),
        Presence(replica: ReplicaID(2), name: "", activity: .selecting(items: [item(4), item(3)])),
        Presence(replica: ReplicaID(2), name: "phone", activity: .selecting(items: [])),
    ]

    static func frame(_ p: Presence) -> [UInt8] { SyncMessage.presence(document: Fixture.document, p).encoded() }

    /// Carets and selections in text fields (kind 3, message version 5).
    static let caretExamples: [Presence] = [
        Presence(replica: ReplicaID(2), name: "phone", activity: .editing(TextCaret(
            target: .item(item(3)), field: "notes", at: TextAnchor(character: OpID(counter: 7, replica: ReplicaID(2)), side: .after)))),
        Presence(replica: ReplicaID(2), name: "phone", activity: .editing(TextCaret(target: .section(section), field: "title", anchor: .start, head: .end))),
    ]

    @Test("a caret in a text field is kind 3 in message version 5: bytes, round trips, every prefix and bad parts refused")
    func caretIsVersionFive() throws {
        let hex = "05 0f 0123456789abcdef fedcba9876543210 02 05 70686f6e65 03 00 01 03 05 6e6f746573 00 01 02 07 00 01 02 07"
        #expect(Self.frame(Self.caretExamples[0]) == SyncMessageTests.bytes(hex))
        for p in Self.caretExamples {
            let bytes = Self.frame(p)
            #expect(bytes.first == SyncMessage.caretVersion && bytes[1] == 15)
            #expect(try SyncMessage(decoding: bytes) == .presence(document: Fixture.document, p))
            expectEveryPrefixRefused(bytes)
        }
        let ok = SyncMessageTests.bytes(hex)
        func refused(_ patch: (inout [UInt8]) -> Void, _ why: Comment) {
            var b = ok
            patch(&b)
            #expect(throws: SyncProtocolError.self, why) { try SyncMessage(decoding: b) }
        }
        refused({ $0[26] = 2 }, "a target that is neither an item nor a section")
        refused({ $0[30] = 0x01 }, "a field name that is a control character")
        refused({ $0[31] = 0xFF; $0[32] = 0xFE }, "a field name that is not UTF-8 (not repaired)")
        refused({ $0[35] = 2 }, "a caret end that is neither after nor before")
        refused({ $0[36] = 2 }, "a character flag of 2")
        refused({ $0[0] = SyncMessage.version + 1 }, "a version this build does not speak")
        // A field name over the limit is cut to idle by the initializer, never written.
        let long = Presence(replica: ReplicaID(2), name: "", activity: .editing(TextCaret(
            target: .item(item(3)), field: String(repeating: "n", count: FieldLimits.maxNameBytes + 1), at: .start)))
        #expect(long.activity == .idle)
    }

    @Test("hex example: a drag of one row between two others, byte for byte (Docs/Protocol.md)")
    func hexDrag() throws {
        let m = SyncMessage.presence(document: Fixture.document, Self.examples[1])
        let hex = "02 0f 0123456789abcdef fedcba9876543210 02 05 70686f6e65 01 01 01 03 01 01 01 01 04 01 01 05"
        #expect(m.encoded() == SyncMessageTests.bytes(hex))
        #expect(try SyncMessage(decoding: SyncMessageTests.bytes(hex)) == m)
    }

    @Test("replica 0, a name over 256 bytes or not UTF-8, 0 or 257 dragged items, an item twice, an unknown kind, a bad anchor flag: malformed")
    func refusals() {
        let head = [UInt8](Self.frame(Self.examples[0]).prefix(18))   // version, tag, document
        func refused(_ body: [UInt8], _ why: Comment) {
            #expect(throws: SyncProtocolError.self, why) { try SyncMessage(decoding: head + body) }
        }
        refused([0, 0, 0], "replica 0")
        refused([2] + [0x81, 0x02] + [UInt8](repeating: 0x61, count: 257) + [0], "a name of 257 bytes")
        // Not repaired: 256 bytes that are not UTF-8 would become 768 of replacement characters,
        // a name over the limit (found by the daemon fuzz harness's corpus, Docs/Fuzzing.md).
        refused([2] + [0x80, 0x02] + [UInt8](repeating: 0xFF, count: 256) + [0], "a name of 256 bytes that is not UTF-8")
        refused([2, 1, 0xC3, 0], "a name cut inside a character")
        refused([2, 0, 1, 0, 1, 1, 0, 0], "a drag of no item")
        refused([2, 0, 4], "kind 4")
        refused([2, 0, 2, 2, 1, 3, 1, 3], "an item twice")
        refused([2, 0, 1, 1, 1, 3, 1, 1, 2], "an anchor flag of 2")
        var many = [UInt8]([2, 0, 2, 0x81, 0x02])
        for i in 0..<257 { many += [1, UInt8(i & 0x7f) | 0x80, 1] }
        refused(many, "a selection of 257 items")
        // At the limits: decoded as sent.
        let longest = Presence(replica: ReplicaID(2), name: String(repeating: "é", count: 200),
                               activity: .selecting(items: (1...300).map { item(UInt64($0)) }))
        #expect(longest.name.utf8.count == Presence.maxNameBytes && longest.activity.items.count == Presence.maxItems,
                "the initializer cuts a name at a character and a selection at the limit")
        #expect((try? SyncMessage(decoding: Self.frame(longest))) == .presence(document: Fixture.document, longest))
    }

    @Test("a malformed presence closes the connection like any malformed message; a good one needs no answer")
    func serverRefusesMalformed() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        s.attached(Fixture.document)
        #expect(s.receive(Self.frame(Self.examples[1]), now: 0) == [.presence(Fixture.document, Self.examples[1])])
        let bad = Array(Self.frame(Self.examples[1]).dropLast())
        let actions = s.receive(bad, now: 0)
        #expect(actions.sent.map(\.code) == [.malformed] && actions.requests == [.close(reason: "malformed message")])
        #expect(s.isClosed)
    }
}

/// Presence through the server connection and the document core, with no socket: relayed to the
/// other subscribers that take part, never to the sender, never stored; the daemon's limit drops
/// the excess silently.
@Suite struct PresenceRelayTests {
    static let doc = Fixture.document
    static let (a, b, c) = (SubscriberID(1), SubscriberID(2), SubscriberID(3))
    static let drag = PresenceMessageTests.examples[1]

    static func core() -> DocumentCore {
        let base = Fixture.typed(3)
        var core = DocumentCore(id: doc, name: "groceries", epoch: 7, document: base)
        for s in [a, b, c] { _ = core.subscribe(s, epoch: 7, version: base.version) }
        return core
    }

    @Test("relayed to the subscribers that sent presence, not to its sender nor to one that never did; nothing appended")
    func relay() {
        var core = Self.core()
        let (document, version) = (core.document, core.durableVersion)
        #expect(core.presence(PresenceMessageTests.examples[0], from: Self.b).isEmpty, "b announces itself: nobody else listens yet")
        let relayed = core.presence(Self.drag, from: Self.a)
        #expect(relayed.sent(to: Self.b) == [.presence(document: Self.doc, Self.drag)])
        #expect(relayed.sent(to: Self.a).isEmpty, "not back to its sender")
        #expect(relayed.sent(to: Self.c).isEmpty, "c never sent presence: an older client would not read it")
        #expect(relayed.appends.isEmpty && relayed.count == 1)
        #expect(core.document.encodedState() == document.encodedState() && core.durableVersion == version, "presence changes no document")
        #expect(core.presenceListenerIDs == [Self.a, Self.b])
        #expect(core.presence(Self.drag, from: SubscriberID(9)).isEmpty, "not subscribed: dropped")
    }

    @Test("a sender that leaves mid-drag: the others get its end at once; one that was idle: nothing")
    func leaving() {
        var core = Self.core()
        _ = core.presence(PresenceMessageTests.examples[0], from: Self.b)
        _ = core.presence(PresenceMessageTests.examples[0], from: Self.c)
        _ = core.presence(Self.drag, from: Self.a)
        let ended = core.unsubscribe(Self.a)
        let idle = Presence(replica: Self.drag.replica, name: Self.drag.name, activity: .idle)
        #expect(ended.sent(to: Self.b) == [.presence(document: Self.doc, idle)])
        #expect(ended.sent(to: Self.c) == [.presence(document: Self.doc, idle)])
        #expect(core.unsubscribe(Self.c).isEmpty, "c had nothing in progress")
        #expect(core.presenceListenerIDs == [Self.b])
        // A drag that ended is not ended again.
        _ = core.presence(PresenceMessageTests.examples[2], from: Self.b)
        _ = core.presence(PresenceMessageTests.examples[0], from: Self.b)
        #expect(core.unsubscribe(Self.b).isEmpty)
    }

    @Test("a presence for a document the connection is not attached to is dropped, not refused")
    func unattached() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        #expect(s.receive(PresenceMessageTests.frame(Self.drag), now: 0).isEmpty)
        #expect(!s.isClosed)
    }

    @Test("the daemon's limit per connection: the excess dropped silently, counted; the connection stays; a second later it passes again")
    func daemonLimit() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, presenceLimit: RateLimit(batchesPerSecond: 20, burst: 40))
        s.attached(Self.doc)
        let frame = PresenceMessageTests.frame(Self.drag)
        var passed = 0
        for _ in 0..<100 {
            let actions = s.receive(frame, now: 1_000)
            #expect(actions.sent.isEmpty, "never an error")
            passed += actions.count
        }
        #expect(passed == 40 && s.presenceDroppedCount == 60 && !s.isClosed)
        #expect(s.receive(frame, now: 1_000 + 1_000_000_000) == [.presence(Self.doc, Self.drag)])
        // The default allows twice what a reference client sends while dragging in two documents.
        #expect(RateLimit.presence.rate >= 2 * 10)
    }

    @Test("client → server → core, the frames fed whole, at every split and one byte at a time: the same relay")
    func streamed() {
        let frames = PresenceMessageTests.examples.map(PresenceMessageTests.frame)
        var server = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        server.attached(Self.doc)
        let machine = (server, Self.core())
        expectSameAtEverySplit(machine, frames) { m, frame -> [DocumentCore.Action] in
            var out: [DocumentCore.Action] = []
            for case let .presence(_, p) in m.0.receive(frame, now: 0) { out += m.1.presence(p, from: Self.a) }
            out += m.1.presence(PresenceMessageTests.examples[0], from: Self.b)
            return out
        }
    }

    @Test("a wired client publishes only while live, and hears the others' presence only for a live document")
    func client() {
        var w = Wired(core: Self.core())
        #expect(w.client.publish(Self.doc, Self.drag).isEmpty, "not subscribed: nothing sent")
        w.run(w.client.subscribe(Self.doc, epoch: 7, version: w.core.document.version, now: 0))
        w.run(w.client.publish(Self.doc, PresenceMessageTests.examples[0]))
        #expect(w.core.presenceListenerIDs == [w.connection])
        _ = w.core.presence(PresenceMessageTests.examples[0], from: Self.b)
        w.run(w.client.publish(Self.doc, Self.drag))
        #expect(w.toOthers.map(\.0) == [Self.b] && w.toOthers.compactMap { decoded($0.1) } == [.presence(document: Self.doc, Self.drag)])
        let theirs = PresenceMessageTests.examples[2]
        #expect(w.client.receive(PresenceMessageTests.frame(theirs), now: 0) == [.presence(Self.doc, theirs)])
        #expect(w.client.receive(SyncMessage.presence(document: Fixture.other, theirs).encoded(), now: 0).isEmpty, "not live: dropped")
    }
}

/// The sender's coalescing (``PresenceOutbox``, ``PresencePublisher``): at most one message each
/// 100 ms, the latest wins, a drag in progress refreshed every second.
@Suite struct PresenceOutboxTests {
    static let ms: UInt64 = 1_000_000
    static func drag(_ n: UInt64) -> PresenceActivity {
        .dragging(items: [item(1)], to: PresencePlace(section: section, after: item(n), before: nil))
    }

    @Test("a hover every 5 ms for 2 s: at most 10 messages a second, and the last hover goes out")
    func coalesces() {
        var box = PresenceOutbox()
        var sent: [(UInt64, PresenceActivity)] = []
        #expect(box.publish(.idle, now: 0) == .idle, "the announcement goes out at once")
        sent.append((0, .idle))
        for t in stride(from: UInt64(1), through: 2_000, by: 5) {
            if let due = box.publish(Self.drag(t), now: t * Self.ms) { sent.append((t, due)) }
            if let due = box.tick(now: t * Self.ms + 1) { sent.append((t, due)) }
        }
        for k in sent.indices.dropFirst() { #expect(sent[k].0 - sent[k - 1].0 >= 100, "two messages \(sent[k].0 - sent[k - 1].0) ms apart") }
        #expect(sent.count <= 21)
        let last = box.tick(now: 2_200 * Self.ms)
        #expect(last == Self.drag(1_996), "the latest hover wins")
        #expect(box.current == Self.drag(1_996))
    }

    @Test("a drag in progress is refreshed every second; idle is not; the same activity is not sent twice")
    func refreshes() {
        var box = PresenceOutbox()
        #expect(box.publish(Self.drag(1), now: 0) == Self.drag(1))
        #expect(box.publish(Self.drag(1), now: 500 * Self.ms) == nil)
        #expect(box.tick(now: 999 * Self.ms) == nil && box.nextDeadline == 1_000 * Self.ms)
        #expect(box.tick(now: 1_000 * Self.ms) == Self.drag(1))
        #expect(box.tick(now: 2_000 * Self.ms) == Self.drag(1))
        #expect(box.publish(.idle, now: 2_050 * Self.ms) == nil, "too soon: held")
        #expect(box.tick(now: 2_100 * Self.ms) == .idle, "the end goes out when its turn comes")
        #expect(box.tick(now: 9_000 * Self.ms) == nil && box.nextDeadline == nil, "idle is not refreshed")
        box.announce()
        #expect(box.tick(now: 9_001 * Self.ms) == .idle, "a new subscription is owed the current activity")
        #expect(box.sentCount == 5)
    }

    @Test("a publisher keeps one outbox per document, each with its replica and name")
    func publisher() {
        var p = PresencePublisher()
        let (d1, d2) = (Fixture.document, Fixture.other)
        #expect(p.publish(d1, Self.drag(1), replica: ReplicaID(5), name: "phone", now: 0)
                == Presence(replica: ReplicaID(5), name: "phone", activity: Self.drag(1)))
        #expect(p.publish(d2, .idle, replica: ReplicaID(6), name: "tablet", now: 0)?.replica == ReplicaID(6))
        #expect(p.publish(d1, Self.drag(2), replica: ReplicaID(5), name: "phone", now: 10 * Self.ms) == nil)
        let due = p.tick(now: 100 * Self.ms)
        #expect(due.map(\.0) == [d1] && due.first?.1.activity == Self.drag(2))
        #expect(p.documents == [d1, d2].sorted())
    }
}
