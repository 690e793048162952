import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// Compaction in the protocol machines, with no socket and no disk (Docs/Protocol.md,
/// "Compaction"; the rule in Docs/Semantics.md §7): `seen` feeding the document core's stability,
/// compaction only at a quiescent stable point, the catch-up behind the floor as a snapshot, and
/// operations made before the floor refused with `compacted`.
@Suite struct CompactionProtocolTests {
    static let doc = Fixture.document
    static let (device, live, late) = (SubscriberID(1), SubscriberID(2), SubscriberID(3))

    /// A core on the daemon's replica 99 holding `base` (authored by replica 1), with replica 1
    /// attached as a device and replica 2 as a client that keeps no copy, both at `base`.
    static func core(_ base: ListDocument, maxFrame: Int = 1 << 20, stepBytes: Int = 1 << 20) -> DocumentCore {
        var core = DocumentCore(id: doc, name: "groceries", epoch: 7, document: base.fork(as: 99), maxFrame: maxFrame,
                                stepBytes: stepBytes)
        _ = core.subscribe(device, epoch: 7, version: base.version)
        _ = core.subscribe(live, epoch: 7, version: base.version)
        return core
    }

    /// Both subscribers say they have seen `version`.
    static func bothSeen(_ core: inout DocumentCore, _ version: VersionVector, now: UInt64 = 100) {
        _ = core.seen(device, replica: ReplicaID(1), version: version, role: .device, now: now)
        _ = core.seen(live, replica: ReplicaID(2), version: version, role: .live, now: now)
    }

    // MARK: The document core

    @Test("seen feeds the tracker; the core compacts at its version only when every subscriber and sender has seen exactly it, nothing in flight, and meanwhile at the stable prefix they have all seen")
    func compactsOnlyWhenQuiescent() throws {
        let base = Fixture.typed(4)
        var core = Self.core(base)
        let noted = core.refreshStability(now: 100, retireAfter: 1_000)
        #expect(noted.changed, "the author of the document, replica 1, is a sender")
        #expect(core.stability.tracker.acknowledged[ReplicaID(1)] == VersionVector())
        #expect(core.compactionPoint(minOperations: 1) == nil, "nobody said what it has seen")
        let deviceIsNew = core.seen(Self.device, replica: ReplicaID(1), version: base.version, role: .device, now: 100)
        #expect(!deviceIsNew, "replica 1 was noted as an author already")
        #expect(core.stability.tracker.acknowledged[ReplicaID(1)] == base.version)
        #expect(core.compactionPoint(minOperations: 1) == nil, "the live client has not said")
        let liveIsNew = core.seen(Self.live, replica: ReplicaID(2), version: base.version, role: .live, now: 100)
        #expect(liveIsNew, "replica 2 keeps no copy: new")
        #expect(core.compactionPoint(minOperations: 1) == base.version)
        #expect(core.compactionPoint(minOperations: 1_000) == nil, "not enough to collect")

        // A batch in flight, then durable but not yet seen: no compaction.
        let ops = Fixture.edits(on: base, replica: 2, count: 3)
        let received = core.receive(ops, batch: 1, from: Self.live)
        #expect(core.compactionPoint(minOperations: 1) == nil)
        _ = core.durable(ticket: try #require(received.appends.first).ticket)
        let after = core.document.version
        _ = core.refreshStability(now: 101, retireAfter: 1_000)
        #expect(core.quiescentPoint(.operations(1)) == nil, "the device has not seen the new operations")
        #expect(core.compactionPoint(minOperations: 1) == base.version, "a stable prefix: what both have seen (Semantics §7)")
        _ = core.seen(Self.device, replica: ReplicaID(1), version: after, role: .device, now: 101)
        #expect(core.quiescentPoint(.operations(1)) == nil, "the live client's report is older")
        #expect(core.compactionPoint(minOperations: 1) == base.version, "a stable prefix: what both have seen")
        _ = core.seen(Self.live, replica: ReplicaID(2), version: after, role: .live, now: 101)
        let point = try #require(core.compactionPoint(minOperations: 1))
        #expect(point == after)
        let shown = core.document.snapshot()
        let report = try core.compact(at: point)
        #expect(report.operationsDropped == base.operationCount + ops.count)
        #expect(core.document.historyFloor == after && core.document.snapshot() == shown && core.durableVersion == after)
        #expect(core.compactionPoint(minOperations: 1) == nil, "nothing logged since")
    }

    @Test("a sender that never reports holds compaction back until it is retired; a retired device caught up counts again")
    func retire() throws {
        let base = Fixture.typed(3)
        var core = Self.core(base)
        _ = core.unsubscribe(Self.device)
        _ = core.seen(Self.live, replica: ReplicaID(2), version: base.version, role: .live, now: 100)
        _ = core.refreshStability(now: 100, retireAfter: 50)
        #expect(core.compactionPoint(minOperations: 1) == nil, "replica 1 authored operations and has said nothing")
        let early = core.refreshStability(now: 149, retireAfter: 50)
        #expect(early.retired.isEmpty)
        let due = core.refreshStability(now: 150, retireAfter: 50)
        #expect(due.retired == [ReplicaID(1)])
        #expect(core.stability.tracker.retired == [ReplicaID(1)])
        let point = try #require(core.compactionPoint(minOperations: 1))
        try core.compact(at: point)
        // Replica 1 comes back behind the floor: its report does not make it a sender again.
        _ = core.subscribe(Self.device, epoch: 7, version: VersionVector())
        _ = core.seen(Self.device, replica: ReplicaID(1), version: VersionVector([ReplicaID(1): 1]), role: .device, now: 200)
        #expect(core.stability.tracker.retired == [ReplicaID(1)])
        // Caught up past the floor (after its snapshot): it counts again.
        let reinstated = core.seen(Self.device, replica: ReplicaID(1), version: point, role: .device, now: 201)
        #expect(reinstated)
        #expect(core.stability.tracker.retired.isEmpty && core.stability.tracker.acknowledged[ReplicaID(1)] == point)
    }

    @Test("a peer link holds compaction back until its daemon's table reports the version; remembered after it left, never retired")
    func relayHoldsBack() {
        let base = Fixture.typed(3)
        var core = Self.core(base)
        Self.bothSeen(&core, base.version)
        _ = core.refreshStability(now: 100, retireAfter: 1_000)
        #expect(core.compactionPoint(minOperations: 1) == base.version)
        _ = core.subscribe(Self.late, epoch: 7, version: base.version)
        let relayIsNew = core.seen(Self.late, replica: ReplicaID(50), version: base.version, role: .relay, now: 100)
        #expect(relayIsNew)
        _ = core.refreshPeers(now: 100, retireAfter: 1_000)
        #expect(core.compactionPoint(minOperations: 1) == nil, "daemon 50 has not reported")
        _ = core.unsubscribe(Self.late)
        _ = core.refreshPeers(now: 1_000, retireAfter: 1_000)
        #expect(core.compactionPoint(minOperations: 1) == nil, "remembered after the link left")
        let (_, retired, _) = core.refreshPeers(now: 5_000, retireAfter: 1_000)
        #expect(retired.isEmpty, "nobody is retired on a document a peer syncs")
        #expect(core.compactionPoint(minOperations: 1) == nil)
        // The peer's link comes back and its table reports the version: compacted.
        _ = core.subscribe(Self.late, epoch: 7, version: base.version)
        _ = core.seen(Self.late, replica: ReplicaID(50), version: base.version, role: .relay, now: 5_001)
        let entry = PeerStability.Entry(sequence: 3, version: base.version, claimed: [ReplicaID(50)])
        _ = core.peerStability(Self.late, from: ReplicaID(50), entries: [ReplicaID(50): entry], now: 5_002)
        #expect(core.compactionPoint(minOperations: 1) == base.version)
    }

    /// A core compacted at `base` plus three edits of replica 2, with the edits.
    static func compacted(maxFrame: Int = 1 << 20, stepBytes: Int = 1 << 20) throws -> (DocumentCore, ListDocument, [ListOperation]) {
        let base = Fixture.typed(30)
        var core = Self.core(base, maxFrame: maxFrame, stepBytes: stepBytes)
        let ops = Fixture.edits(on: base, replica: 2, count: 3)
        let received = core.receive(ops, batch: 1, from: Self.live)
        _ = core.durable(ticket: try #require(received.appends.first).ticket)
        Self.bothSeen(&core, core.document.version)
        _ = core.refreshStability(now: 100, retireAfter: 1_000)
        try core.compact(at: try #require(core.compactionPoint(minOperations: 1)))
        return (core, base, ops)
    }

    /// The snapshot parts sent to `s`, joined; nil when none ends.
    static func snapshot(_ messages: [SyncMessage]) -> [UInt8]? {
        var bytes: [UInt8] = []
        for m in messages {
            guard case let .snapshot(_, part, more) = m else { continue }
            bytes += part
            if !more { return bytes }
        }
        return nil
    }

    @Test("a subscriber behind the floor gets subscribed, the snapshot in parts under the frame size, then synced; one at the floor gets operations")
    func catchUpBehindFloorIsSnapshot() throws {
        let (core0, _, _) = try Self.compacted(maxFrame: 256)
        var core = core0
        let actions = core.subscribe(Self.late, epoch: 7, version: VersionVector())
        let sent = actions.sent(to: Self.late)
        #expect(sent.count > 3, "several parts")
        #expect(actions.frames(to: Self.late).allSatisfy { $0.count <= 256 })
        guard case .subscribed = sent.first, case .synced(_, core.durableVersion) = sent.last else {
            Issue.record("not subscribed … synced: \(sent)")
            return
        }
        let loaded = try ListDocument(snapshot: try #require(Self.snapshot(sent)), replica: ReplicaID(5))
        #expect(loaded.snapshot() == core.document.snapshot() && loaded.version == core.document.version)
        #expect(sent.allSatisfy { if case .operations = $0 { return false }; return true })
        // At the floor: the operations after it, no snapshot.
        let atFloor = core.subscribe(SubscriberID(4), epoch: 7, version: core.document.version).sent(to: SubscriberID(4))
        #expect(Self.snapshot(atFloor) == nil && atFloor.count == 2)
        // A hello behind the floor is answered the same way.
        #expect(Self.snapshot(core.hello(Self.late, version: VersionVector()).sent(to: Self.late)) != nil)
    }

    @Test("subscribers behind the floor at the same state get the same snapshot parts (made once); after a new durable batch the next one's snapshot holds it")
    func snapshotPartsShared() throws {
        let (core0, _, _) = try Self.compacted(maxFrame: 256)
        var core = core0
        let parts = { (sent: [SyncMessage]) in sent.filter { if case .snapshot = $0 { true } else { false } } }
        let firstFrames = core.subscribe(Self.late, epoch: 7, version: VersionVector()).frames(to: Self.late)
        let secondFrames = core.subscribe(SubscriberID(4), epoch: 7, version: VersionVector()).frames(to: SubscriberID(4))
        let first = parts(firstFrames.compactMap { try? SyncMessage(decoding: $0) })
        let second = parts(secondFrames.compactMap { try? SyncMessage(decoding: $0) })
        #expect(first.count >= 2 && first == second)
        // Made once: the second subscriber's parts are the first's bytes, not a copy.
        let storage = { (frames: [[UInt8]]) in frames.filter { $0.count > 2 && $0[1] == 20 }.map { $0.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } } }
        #expect(storage(firstFrames).count == first.count && storage(firstFrames) == storage(secondFrames))
        // A batch made durable: the next catch-up is a snapshot of the new state.
        let more = Fixture.edits(on: core.document, replica: 2, count: 2)
        let received = core.receive(more, batch: 2, from: Self.live)
        _ = core.durable(ticket: try #require(received.appends.first).ticket)
        let third = core.subscribe(SubscriberID(5), epoch: 7, version: VersionVector()).sent(to: SubscriberID(5))
        let loaded = try ListDocument(snapshot: try #require(Self.snapshot(third)), replica: ReplicaID(6))
        #expect(loaded.version == core.document.version && loaded.snapshot() == core.document.snapshot())
        #expect(parts(third) != first)
    }

    @Test("the snapshot catch-up is stepped like an operations catch-up: a step, then wait for room; operations made meanwhile follow it, then synced")
    func snapshotStepped() throws {
        var (core, _, _) = try Self.compacted(maxFrame: 256, stepBytes: 1)
        var all = core.subscribe(Self.late, epoch: 7, version: VersionVector())
        var steps = 1
        #expect(all.last == .awaitRoom(Self.late), "the first step waits for room")
        let more = Fixture.edits(on: core.document, replica: 2, count: 2)
        let received = core.receive(more, batch: 2, from: Self.live)
        all += core.durable(ticket: try #require(received.appends.first).ticket)
        func waits() -> Bool {
            all.last { if case .awaitRoom(Self.late) = $0 { return true }; if case .send(Self.late, _) = $0 { return true }; return false }
                == .awaitRoom(Self.late)
        }
        while waits(), steps < 100 {
            all += core.roomAvailable(Self.late)
            steps += 1
        }
        #expect(steps > 2)
        let sent = all.sent(to: Self.late)
        guard case .synced(_, core.durableVersion) = sent.last else {
            Issue.record("no synced at the end: \(sent.suffix(3))")
            return
        }
        // Every part before the operations made meanwhile, which come before synced.
        let lastPart = try #require(sent.lastIndex { if case .snapshot = $0 { return true }; return false })
        let firstOps = try #require(sent.firstIndex { if case .operations = $0 { return true }; return false })
        #expect(lastPart < firstOps)
        var loaded = try ListDocument(snapshot: try #require(Self.snapshot(sent)), replica: ReplicaID(5))
        _ = loaded.receive(all.operations(to: Self.late))
        #expect(loaded.snapshot() == core.document.snapshot() && loaded.version == core.document.version)
    }

    @Test("a catch-up behind the floor while a batch is in flight waits for it: the snapshot holds only durable operations, nothing is forwarded before it")
    func snapshotWaitsForDurable() throws {
        var (core, base, _) = try Self.compacted()
        let more = Fixture.edits(on: core.document, replica: 2, count: 2)
        let received = core.receive(more, batch: 2, from: Self.live)
        let waiting = core.subscribe(Self.late, epoch: 7, version: VersionVector()).sent(to: Self.late)
        #expect(waiting.count == 1, "only subscribed: \(waiting)")
        let released = core.durable(ticket: try #require(received.appends.first).ticket)
        let sent = released.sent(to: Self.late)
        #expect(sent.allSatisfy { if case .operations = $0 { return false }; return true }, "not forwarded: in the snapshot")
        let loaded = try ListDocument(snapshot: try #require(Self.snapshot(sent)), replica: ReplicaID(5))
        #expect(loaded.version == core.durableVersion && loaded.version.includes(base.version))
        #expect(more.allSatisfy { loaded.version.contains($0.lastID) })
    }

    @Test("operations made before the floor are refused with compacted and change nothing; after it they are taken")
    func beforeFloorRefused() throws {
        var (core, base, _) = try Self.compacted()
        let state = core.document.encodedState()
        let version = core.document.version
        // Replica 3 had seen only `base`, not replica 2's edits in the floor.
        let stale = Fixture.edits(on: base, replica: 3, count: 1)
        let answer = core.receive(stale, batch: 7, from: Self.device)
        #expect(answer.appends.isEmpty)
        let sent = answer.sent(to: Self.device)
        guard case let .error(7, _, code, _)? = sent.first else {
            Issue.record("no error: \(sent)")
            return
        }
        #expect(code == .compacted && core.refusedBeforeFloor == 1)
        #expect(core.document.encodedState() == state && core.document.version == version && core.document.pendingCount == 0)
        #expect(answer.sent(to: Self.live).isEmpty, "nothing forwarded")
        // Its next edits depend on the refused one: refused too, in the same batch or a later
        // one, never kept waiting in the causal buffer for an operation that will not come.
        let chain = Fixture.edits(on: base, replica: 4, count: 3)
        _ = core.receive(Array(chain.prefix(2)), batch: 9, from: Self.device)
        let later = core.receive([chain[2]], batch: 10, from: Self.device)
        #expect(later.sent(to: Self.device).map(\.code) == [.compacted])
        #expect(core.document.pendingCount == 0 && core.refusedBeforeFloor == 4 && core.document.encodedState() == state)
        // Made after the floor: taken.
        let fresh = Fixture.edits(on: core.document, replica: 3, count: 1)
        let ok = core.receive(fresh, batch: 8, from: Self.device)
        #expect(ok.appends.count == 1)
    }

    @Test("an operation that reaches the daemon ahead of its author's earlier ones, the author behind the floor, is refused with compacted, not kept waiting to be woken by the edits made again")
    func aheadOfRefusedCauses() throws {
        var (core, base, _) = try Self.compacted()
        let state = core.document.encodedState()
        // Replica 4 had seen only `base`; its second edit (on its first) arrives first.
        let chain = Fixture.edits(on: base, replica: 4, count: 2)
        let ahead = core.receive([chain[1]], batch: 9, from: Self.device)
        #expect(ahead.sent(to: Self.device).map(\.code) == [.compacted])
        #expect(core.document.pendingCount == 0, "not kept waiting for its cause")
        #expect(core.receive([chain[0]], batch: 10, from: Self.device).sent(to: Self.device).map(\.code) == [.compacted])
        // It re-syncs and makes them again on the snapshot, with higher counters of the same
        // replica: nothing of the refused ones is applied.
        var copy = try ListDocument(snapshot: core.document.encodedSnapshot(), replica: ReplicaID(4))
        var local = base.fork(as: 4)
        _ = local.receive(chain)
        let made = copy.remake(chain, from: local)
        let taken = core.receive(made, batch: 11, from: Self.device)
        _ = core.durable(ticket: try #require(taken.appends.first).ticket)
        #expect(core.document.pendingCount == 0 && core.document.rows == copy.rows)
        #expect(core.document.encodedState() != state)
        // In one batch and in order, an edit on the same author's earlier one is taken as before.
        let fresh = Fixture.edits(on: core.document, replica: 5, count: 2)
        let ok = core.receive(fresh, batch: 12, from: Self.device)
        #expect(ok.appends.first?.operations.count == 2)
    }

    // MARK: Stability on disk

    @Test("stability round-trips; every truncation and a wrong magic are refused")
    func stabilityEncoding() throws {
        var s = DocumentStability()
        _ = s.noteAuthors(of: VersionVector([ReplicaID(1): 3, ReplicaID(7): 2]), now: 50)
        _ = s.heardFromDevice(ReplicaID(1), version: VersionVector([ReplicaID(1): 3]), caughtUp: true, now: 60)
        _ = s.heardFromLive(ReplicaID(9))
        let retired = s.retireSilent(now: 200, after: 145)
        #expect(retired == [ReplicaID(7)])
        _ = s.heardFromRelay(ReplicaID(50), me: ReplicaID(99), now: 70)
        let bytes = s.encoded()
        #expect(try DocumentStability(decoding: bytes) == s)
        for n in 0..<bytes.count {
            #expect(throws: SyncProtocolError.self) { try DocumentStability(decoding: Array(bytes.prefix(n))) }
        }
        var bad = bytes
        bad[0] ^= 1
        #expect(throws: SyncProtocolError.self) { try DocumentStability(decoding: bad) }
        #expect(throws: SyncProtocolError.self) { try DocumentStability(decoding: bytes + [0]) }
    }

    @Test("after a compaction the floor goes to the subscribers that said seen as compacting devices, and to no other; none before a compaction")
    func floorGoesToCompactingDevices() throws {
        let base = Fixture.typed(4)
        var core = Self.core(base)
        _ = core.subscribe(Self.late, epoch: 7, version: base.version)
        #expect(core.floorAnnouncements().isEmpty, "never compacted")
        _ = core.seen(Self.device, replica: ReplicaID(1), version: base.version, role: .device, now: 100)
        _ = core.seen(Self.live, replica: ReplicaID(2), version: base.version, role: .live, now: 100)
        _ = core.seen(Self.late, replica: ReplicaID(3), version: base.version, role: .compactingDevice, now: 100)
        #expect(core.stability.tracker.acknowledged[ReplicaID(3)] == base.version, "a compacting device is a device")
        _ = core.refreshStability(now: 100, retireAfter: 1_000)
        let point = try #require(core.compactionPoint(minOperations: 1))
        try core.compact(at: point)
        let frame = SyncMessage.stable(document: Self.doc, version: point).encoded()
        #expect(core.floorAnnouncements() == [.send(Self.late, frame)])

        // The client side: a live document's floor becomes an action; another document's is dropped.
        var client = ClientSession(maxFrame: 1 << 20, timeout: 1_000_000_000)
        _ = client.subscribe(Self.doc, epoch: 7, version: base.version, now: 0)
        _ = client.receive(SyncMessage.subscribed(document: Self.doc, name: "groceries", epoch: 7, version: base.version).encoded(), now: 0)
        _ = client.receive(SyncMessage.synced(document: Self.doc, version: base.version).encoded(), now: 0)
        #expect(client.receive(frame, now: 0) == [.stable(Self.doc, point)])
        let other = SyncMessage.stable(document: DocumentID(hex: String(repeating: "ab", count: 16))!, version: point).encoded()
        #expect(client.receive(other, now: 0).isEmpty)
        // A daemon takes no `stable` from a client.
        var server = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        server.attached(Self.doc)
        let refused = server.receive(frame, now: 0)
        #expect(refused.contains { if case .send = $0 { return true } else { return false } } && !refused.contains { if case .seen = $0 { return true } else { return false } })
    }

    // MARK: The connections

    @Test("the server connection passes seen for attached documents only; a read-only device counts as live; bad seen bytes close it")
    func serverSeen() {
        var s = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let frame = SyncMessage.seen(document: Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 2]), role: .device).encoded()
        #expect(s.receive(frame, now: 0).isEmpty, "not attached")
        s.attached(Self.doc)
        #expect(s.receive(frame, now: 0) == [.seen(Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 2]), role: .device)])
        var readOnly = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: Access(documents: nil, readOnly: true))
        readOnly.attached(Self.doc)
        #expect(readOnly.receive(frame, now: 0) == [.seen(Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 2]), role: .live)])
        // Replica 0, and role 5 (no such role): malformed (the connection closes, nothing reaches the daemon).
        var zero = frame
        zero[18] = 0
        var role = frame
        role[role.count - 1] = 5
        for bad in [zero, role] {
            var t = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
            t.attached(Self.doc)
            let actions = t.receive(bad, now: 0)
            #expect(actions.requests == [.close(reason: "malformed message")] && t.isClosed)
        }
    }

    @Test("the client coalesces seen: sent after a change, at most once a second, the latest kept for the tick")
    func clientSeenCoalesced() {
        var c = ClientSession(maxFrame: 1 << 20)
        let r = ReplicaID(4)
        let v1 = VersionVector([r: 1]), v2 = VersionVector([r: 2]), v3 = VersionVector([r: 3])
        #expect(c.reportSeen(Self.doc, replica: r, version: v1, role: .device, now: 0).isEmpty, "not live")
        _ = c.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        _ = c.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 0)
        let second = ClientSession.seenInterval
        #expect(c.reportSeen(Self.doc, replica: r, version: v1, role: .device, now: 10).sent
                == [.seen(document: Self.doc, replica: r, version: v1, role: .device)])
        #expect(c.reportSeen(Self.doc, replica: r, version: v1, role: .device, now: 20).isEmpty, "unchanged")
        #expect(c.reportSeen(Self.doc, replica: r, version: v2, role: .device, now: 30).isEmpty, "within a second")
        #expect(c.reportSeen(Self.doc, replica: r, version: v3, role: .device, now: 40).isEmpty)
        #expect(c.nextSeenDeadline == 10 + second)
        #expect(c.tick(now: 10 + second - 1).sent.isEmpty)
        #expect(c.tick(now: 10 + second).sent == [.seen(document: Self.doc, replica: r, version: v3, role: .device)], "the latest only")
        #expect(c.tick(now: 10 + 3 * second).sent.isEmpty && c.nextSeenDeadline == nil)
    }

    @Test("an older daemon's refusal of seen (unknown message type 19) stops the session from sending it; other malformed errors do not")
    func olderDaemon() {
        func session() -> ClientSession {
            var c = ClientSession(maxFrame: 1 << 20)
            _ = c.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
            _ = c.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 0)
            return c
        }
        var other = session()
        _ = other.receive(SyncMessage.error(request: 0, document: nil, code: .malformed, text: "malformed message: 3 trailing bytes").encoded(), now: 0)
        #expect(other.sendsSeen)
        var c = session()
        // What ServerSession of a build without tag 19 answers, byte for byte the same message.
        let old = SyncMessage.error(request: 0, document: nil, code: .malformed,
                                    text: SyncProtocolError.malformed("unknown message type 19").description)
        _ = c.receive(old.encoded(), now: 0)
        #expect(!c.sendsSeen)
        var next = ClientSession(maxFrame: 1 << 20)
        next.sendsSeen = c.sendsSeen
        _ = next.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        _ = next.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 0)
        #expect(next.reportSeen(Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 1]), role: .device, now: 0).isEmpty)
    }

    @Test("a live copy (role 4) is read as such, kept for a read-only device, and an older daemon's refusal of it is noted for the driver")
    func liveCopyRole() {
        let frame = SyncMessage.seen(document: Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 2]), role: .liveCopy).encoded()
        var readOnly = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0, access: Access(documents: nil, readOnly: true))
        readOnly.attached(Self.doc)
        #expect(readOnly.receive(frame, now: 0) == [.seen(Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 2]), role: .liveCopy)])
        var c = ClientSession(maxFrame: 1 << 20)
        let old = SyncMessage.error(request: 0, document: nil, code: .malformed,
                                    text: SyncProtocolError.malformed("seen role 4").description)
        _ = c.receive(old.encoded(), now: 0)
        #expect(c.refusedByDaemon == [.liveCopy])
    }

    @Test("an older daemon's refusal of the compacting device role (seen role 3) makes later reports say device; the role is kept otherwise")
    func olderDaemonRefusesCompactingRole() throws {
        // What a build without role 3 answers: today's answer to role 5 (none), with 3 in its place.
        var server = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        server.attached(Self.doc)
        var frame = SyncMessage.seen(document: Self.doc, replica: ReplicaID(4), version: VersionVector([ReplicaID(4): 1]),
                                     role: .device).encoded()
        frame[frame.count - 1] = 5
        let answer = server.receive(frame, now: 0).compactMap { action -> SyncMessage? in
            guard case let .send(bytes) = action else { return nil }
            return try? SyncMessage(decoding: bytes)
        }.first
        guard case let .error(_, nil, .malformed, text)? = answer, text.hasSuffix("seen role 5") else {
            Issue.record("unexpected answer \(String(describing: answer))")
            return
        }
        let old = SyncMessage.error(request: 0, document: nil, code: .malformed, text: String(text.dropLast()) + "3")
        func session() -> ClientSession {
            var c = ClientSession(maxFrame: 1 << 20)
            _ = c.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
            _ = c.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 0)
            return c
        }
        func role(_ actions: [ClientSession.Action]) -> SeenRole? {
            for case let .send(bytes) in actions { if case let .seen(_, _, _, r)? = try? SyncMessage(decoding: bytes) { return r } }
            return nil
        }
        let v = VersionVector([ReplicaID(4): 1])
        var kept = session()
        #expect(role(kept.reportSeen(Self.doc, replica: ReplicaID(4), version: v, role: .compactingDevice, now: 0)) == .compactingDevice)
        var c = session()
        _ = c.receive(old.encoded(), now: 0)
        #expect(!c.saysCompactingDevice && c.sendsSeen)
        var next = session()
        next.saysCompactingDevice = c.saysCompactingDevice
        #expect(role(next.reportSeen(Self.doc, replica: ReplicaID(4), version: v, role: .compactingDevice, now: 0)) == .device)
    }

    @Test("the client joins snapshot parts split at every offset into one snapshot action; not live: ignored; over the limit: closed")
    func clientSnapshotParts() throws {
        let (core0, _, _) = try Self.compacted(maxFrame: 256)
        var core = core0
        let frames = core.subscribe(Self.late, epoch: 7, version: VersionVector()).frames(to: Self.late)
        let whole = core.document.encodedSnapshot()
        for pieces in ByteStream.splits(frames) {
            var c = ClientSession(maxFrame: 256)
            _ = c.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
            var actions: [ClientSession.Action] = []
            for f in ByteStream.frames(pieces) { actions += c.receive(f, now: 0) }
            let snapshots = actions.compactMap { if case let .snapshot(_, b) = $0 { return b }; return nil }
            #expect(snapshots == [whole])
            #expect(actions.contains(.synced(Self.doc, core.durableVersion)))
        }
        var stranger = ClientSession(maxFrame: 256)
        #expect(stranger.receive(SyncMessage.snapshot(document: Self.doc, part: [1], more: false).encoded(), now: 0).isEmpty)
    }

    @Test("a peer link says it relays once its subscription is live, and a snapshot answer detaches the document")
    func peerSaysRelay() {
        var p = PeerSession(maxFrame: 1 << 20)
        let local = PeerSession.LocalDocument(id: Self.doc, name: "n", epoch: 7, version: VersionVector())
        _ = p.reconcile(remote: [DocumentInfo(id: Self.doc, name: "n", epoch: 7, operations: 0)], local: [local], complete: true, now: 0)
        let v = VersionVector([ReplicaID(3): 1])
        let live = p.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: v).encoded(), now: 0)
        #expect(live.sent.contains(.seen(document: Self.doc, replica: ReplicaID(1), version: v, role: .relay)))
        let behind = p.receive(SyncMessage.snapshot(document: Self.doc, part: [1], more: false).encoded(), now: 0)
        #expect(behind.requests == [.detach(Self.doc), .behindFloor(Self.doc, snapshot: [1])])
        #expect(!p.attached.contains(Self.doc))
    }
}
