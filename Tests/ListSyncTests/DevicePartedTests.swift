import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport

/// A device learns what the daemons parted in merges back (Docs/Semantics.md §7, "A device
/// learns what was parted"), with no socket: the `parted` message and the version-8 `subscribe`
/// that asks for it, a daemon without a floor telling its devices and sending a snapshot to one
/// that holds parted originals it lacks, and the device's re-sync that no longer waits for its
/// acknowledged originals.
@Suite struct DevicePartedTests {
    typealias Machine = DeviceClientMachine
    static let doc = Fixture.document

    static func ranges(_ list: [(UInt64, ClosedRange<UInt64>)]) -> PartedRanges {
        var r = PartedRanges()
        for (replica, range) in list { r.insert(range, of: ReplicaID(replica)) }
        return r
    }

    // MARK: The ranges and the messages

    @Test("parted ranges merge what touches, keep the rest apart, and split operations into those a range names or that depend on one, and the others")
    func rangesMergeAndSplit() throws {
        var r = Self.ranges([(1, 5...7), (1, 9...9), (2, 1...3)])
        #expect(r.runs[ReplicaID(1)] == [5...7, 9...9])
        r.insert(8...8, of: ReplicaID(1))
        #expect(r.runs[ReplicaID(1)] == [5...9], "adjacent runs join")
        let same = r.formUnion(Self.ranges([(1, 6...8)]))
        #expect(!same, "nothing new")
        let more = r.formUnion(Self.ranges([(3, 4...4)]))
        #expect(more)
        #expect(r.contains(OpID(counter: 9, replica: ReplicaID(1))) && !r.contains(OpID(counter: 10, replica: ReplicaID(1))))
        // Originals of replica 2, an edit of replica 4 on one of them, and one of 4 that is not.
        let base = Fixture.typed(1, replica: 9)
        var author = base.fork(as: 2)
        let original = try author.insertItem(at: IndexPath(item: 0, section: 0), value: Data("o".utf8))
        var other = author.fork(as: 4)
        let on = try other.setValue(Data("on".utf8), forItem: ItemID(original.id))
        var apart = base.fork(as: 5)
        let free = try apart.insertItem(at: IndexPath(item: 0, section: 0), value: Data("f".utf8))
        let parted = Self.ranges([(2, original.id.counter...original.lastID.counter)])
        let (named, others) = parted.split([original, free, on])
        #expect(named.map(\.id) == [original.id, on.id] && others.map(\.id) == [free.id])
        #expect(PartedRanges().split([original]).others.count == 1)
    }

    @Test("parted is a version-8 message that round-trips; a subscribe that asks for it is version 8, one that does not is the version-2 bytes of before; malformed ranges, unknown flags, parted in an older version and every truncation are typed errors")
    func encodings() throws {
        let version = VersionVector([ReplicaID(1): 4, ReplicaID(9): 3])
        let plain = SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version)
        #expect(plain.encoded().first == 2 && plain.encodedVersion == 2)
        var before = [UInt8](arrayLiteral: 2, 1) + Self.doc.bytes + [7, 2, 1, 4, 9, 3]
        #expect(plain.encoded() == before, "the bytes a version-7 build writes and reads")
        let asking = SyncMessage.subscribe(document: Self.doc, epoch: 7, version: version, learnsParted: true)
        let askingBytes = asking.encoded()
        #expect(askingBytes.first == SyncMessage.partedVersion && askingBytes.last == 1)
        #expect(try SyncMessage(decoding: askingBytes) == asking)
        #expect(try SyncMessage(decoding: askingBytes.dropLast() + [0]) == plain, "flags 0: it does not ask")
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: askingBytes.dropLast() + [2]) }
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(askingBytes.dropLast())) }
        before[0] = 8
        #expect(throws: SyncProtocolError.self, "version 8 needs the flags") { _ = try SyncMessage(decoding: before) }

        let parted = SyncMessage.parted(document: Self.doc, ranges: Self.ranges([(1, 5...9), (1, 20...20), (3, 1...2)]))
        let bytes = parted.encoded()
        #expect(bytes.first == SyncMessage.partedVersion)
        #expect(try SyncMessage(decoding: bytes) == parted)
        for n in 0 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        let head = [UInt8](arrayLiteral: 8, 23) + Self.doc.bytes
        #expect(try SyncMessage(decoding: head + [0]) == .parted(document: Self.doc, ranges: PartedRanges()))
        for bad: [UInt8] in [[1, 0, 1, 2],            // replica 0
                             [1, 1, 0, 2],            // counter 0
                             [1, 1, 5, 2],            // ends before it starts
                             [2, 3, 1, 2, 1, 5, 6],   // replicas out of order
                             [2, 1, 5, 6, 1, 1, 2],   // runs out of order
                             [2, 1, 1, 2, 1, 3, 4],   // adjacent runs (one set, two encodings)
                             [2, 1, 1, 4, 1, 3, 6]] { // overlapping
            #expect(throws: SyncProtocolError.self, "\(bad)") { _ = try SyncMessage(decoding: head + bad) }
        }
        var old = bytes
        old[0] = 7
        #expect(throws: SyncProtocolError.self, "parted in a version-7 message") { _ = try SyncMessage(decoding: old) }
        // A build that reads at most version 7 refuses both by their version byte, never misreads them.
        var older = askingBytes
        older[0] = SyncMessage.version + 1
        #expect(throws: SyncProtocolError.unsupportedVersion(SyncMessage.version + 1)) { _ = try SyncMessage(decoding: older) }
    }

    @Test("a client session asks for parted only when its driver says so; an older daemon's refusal of the version-8 subscribe is remembered and the next subscription does not ask; parted reaches the driver only for a live subscription")
    func clientSessionAsksOnce() throws {
        var plain = ClientSession(maxFrame: 4096)
        let notAsking = plain.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0).sent
        #expect(notAsking == [.subscribe(document: Self.doc, epoch: 0, version: VersionVector())])
        var device = ClientSession(maxFrame: 4096)
        device.asksForParted = true
        let asking = device.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0).sent
        #expect(asking == [.subscribe(document: Self.doc, epoch: 0, version: VersionVector(), learnsParted: true)])
        let ranges = Self.ranges([(1, 1...3)])
        let early = device.receive(SyncMessage.parted(document: Self.doc, ranges: ranges).encoded(), now: 1)
        #expect(early.isEmpty, "not live yet")
        _ = device.receive(SyncMessage.subscribed(document: Self.doc, name: "n", epoch: 7, version: VersionVector()).encoded(), now: 1)
        let told = device.receive(SyncMessage.parted(document: Self.doc, ranges: ranges).encoded(), now: 1)
        #expect(told == [.parted(Self.doc, ranges)])
        // A daemon that reads at most version 7 answers the version-8 subscribe so, and closes.
        var older = ClientSession(maxFrame: 4096)
        older.asksForParted = true
        _ = older.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 0)
        let text = SyncProtocolError.unsupportedVersion(8).description.replacingOccurrences(of: "2 to \(SyncMessage.version)", with: "2 to 7")
        _ = older.receive(SyncMessage.error(request: 0, document: nil, code: .malformed, text: text).encoded(), now: 1)
        #expect(older.refusedByDaemon.contains(.parted))
        var next = ClientSession(maxFrame: 4096)
        next.asksForParted = true
        next.refusedByDaemon = older.refusedByDaemon
        let nextSent = next.subscribe(Self.doc, epoch: 0, version: VersionVector(), now: 2).sent
        #expect(nextSent == [.subscribe(document: Self.doc, epoch: 0, version: VersionVector())])
        // The daemon's side: a subscribe that asks says so to the core; a client may not send parted.
        var server = ServerSession(maxFrame: 4096, rateLimit: nil, now: 0)
        let subscribing = server.receive(askingSubscribe(), now: 0)
        #expect(subscribing == [.subscribe(Self.doc, epoch: 0, version: VersionVector(), learnsParted: true)])
        let refused = server.receive(SyncMessage.parted(document: Self.doc, ranges: ranges).encoded(), now: 0).sent
        #expect(refused.contains { if case .error(_, _, .unsupported, _) = $0 { return true }; return false })
    }

    func askingSubscribe() -> [UInt8] {
        SyncMessage.subscribe(document: Self.doc, epoch: 0, version: VersionVector(), learnsParted: true).encoded()
    }

    // MARK: The daemon without a floor

    static let (link, device, other) = (SubscriberID(5), SubscriberID(9), SubscriberID(10))

    /// W, a daemon that never compacted, holds the start and X's device's edits (as the device
    /// of ``PeerPartedTests/partedAtY(xVariant:)`` does) but not Y's parted originals. Returns W
    /// with Y's table merged in (a link of Y's subscribed), Y's table, and that device's copy.
    static func w(variant: DocumentCore.Variant = .correct, heard: Bool = true) throws
        -> (w: DocumentCore, table: [ReplicaID: PeerStability.Entry], device: ListDocument) {
        let parted = try PeerPartedTests.partedAtY()
        var start = Fixture.typed(3).fork(as: 60)
        #expect(start.receive(Fixture.edits(on: Fixture.typed(3), replica: 1, count: 2)).refused.isEmpty)
        var w = DocumentCore(id: Self.doc, name: "n", epoch: 7, document: start)
        w.variant = variant
        _ = w.subscribe(Self.link, epoch: 7, version: start.version)
        _ = w.seen(Self.link, replica: PeerMergeBackTests.y, version: start.version, role: .relay, now: 1)
        if heard { _ = w.peerStability(Self.link, from: PeerMergeBackTests.y, entries: parted.y.stability.peers.entries, now: 2) }
        #expect(w.document.historyFloor == nil)
        return (w, parted.y.stability.peers.entries, parted.device)
    }

    static func isSnapshot(_ m: SyncMessage) -> Bool { if case .snapshot = m { return true }; return false }
    static func isParted(_ m: SyncMessage) -> Bool { if case .parted = m { return true }; return false }

    @Test("a daemon without a floor that holds Y's table tells a device that asks what was parted, right after subscribed; not one that did not ask (an older device, served as before), nor a peer link")
    func noFloorTellsThoseWhoAsk() throws {
        var (w, table, _) = try Self.w()
        let asked = w.subscribe(Self.device, epoch: 7, version: w.document.version, learnsParted: true).sent(to: Self.device)
        let ranges = PartedRanges(table.values)
        #expect(!ranges.isEmpty)
        #expect(asked.count >= 2 && asked[1] == .parted(document: Self.doc, ranges: ranges), "right after subscribed")
        let plain = w.subscribe(Self.other, epoch: 7, version: w.document.version).sent(to: Self.other)
        #expect(!plain.contains(where: Self.isParted))
        var hidden = try Self.w(variant: .hidesPartedFromDevices).w
        let hiddenSent = hidden.subscribe(Self.device, epoch: 7, version: hidden.document.version, learnsParted: true)
        #expect(!hiddenSent.sent(to: Self.device).contains(where: Self.isParted))
    }

    @Test("a daemon without a floor that hears of a merge back after a device subscribed tells it at its next housekeeping, once; a holder of the parted originals it caught up with is cut off then, and gets a snapshot when it subscribes again")
    func noFloorAnnouncesAndCuts() throws {
        var (w, table, device) = try Self.w(heard: false)
        _ = w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true)
        _ = w.seen(Self.device, replica: ReplicaID(3), version: device.version, role: .compactingDevice, now: 3)
        _ = w.subscribe(Self.other, epoch: 7, version: w.document.version, learnsParted: true)
        _ = w.seen(Self.other, replica: ReplicaID(4), version: w.document.version, role: .compactingDevice, now: 3)
        let rule = CompactionRule(retireAfter: 1_000, minOperations: 1, interval: 0, gossipInterval: 10)
        let quiet = w.housekeeping(stabilityNow: 4, now: 4, rule: rule)
        #expect(!quiet.gossip.contains { if case .close = $0 { return true }; return false })
        _ = w.peerStability(Self.link, from: PeerMergeBackTests.y, entries: table, now: 5)
        let step = w.housekeeping(stabilityNow: 6, now: 6, rule: rule)
        #expect(step.gossip.sent(to: Self.other).filter(Self.isParted).count == 1)
        let closed = step.gossip.compactMap { if case let .close(s, _) = $0 { return s }; return nil }
        #expect(closed == [Self.device], "it holds Y's originals, which W lacks; the other does not")
        let again = w.housekeeping(stabilityNow: 7, now: 7, rule: rule)
        #expect(!again.gossip.sent(to: Self.other).contains(where: Self.isParted), "told once")
        let back = w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true)
        #expect(back.sent(to: Self.device).contains(where: Self.isSnapshot))
    }

    @Test("a daemon without a floor answers a device whose version ends on a parted original it lacks with a snapshot; one it holds, or a version past the range, with operations; with DocumentCore.Variant.hidesPartedFromDevices always operations")
    func noFloorSnapshotForHolders() throws {
        var (w, _, device) = try Self.w()
        let answer = w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true)
        #expect(answer.sent(to: Self.device).contains(where: Self.isSnapshot))
        // W took Y's originals relayed (it holds them): operations.
        var holding = try Self.w()
        let originals = device.operations(since: holding.w.document.version)
        #expect(!originals.isEmpty)
        _ = PeerMergeBackTests.send(originals, from: Self.link, to: &holding.w, batch: 0)
        #expect(holding.w.document.version.includes(device.version))
        let held = holding.w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true)
        #expect(!held.sent(to: Self.device).contains(where: Self.isSnapshot))
        var hidden = try Self.w(variant: .hidesPartedFromDevices)
        let unaware = hidden.w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true)
        #expect(!unaware.sent(to: Self.device).contains(where: Self.isSnapshot), "without the rule: operations, and the device keeps the originals")
    }

    // MARK: The device

    /// A device (replica 1) whose two item inserts and an edit of one of them only a daemon Y
    /// acknowledged (Y then parted them), refused at W, a daemon without a floor, and re-syncing
    /// there from operations: W's copy lacks the three. Returns the machine waiting at `synced`,
    /// the device's copy, W's copy, and the device's three operations.
    static func resyncingAtW() throws -> (Machine, ListDocument, ListDocument, [ListOperation]) {
        let server = Fixture.typed(2, replica: 9)
        var doc = server.fork(as: 1)
        let first = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("one".utf8))
        let second = try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("two".utf8))
        let on = try doc.setValue(Data("one, edited".utf8), forItem: ItemID(first.id))
        var acknowledged = server.version
        acknowledged.observe(on.lastID)   // Y acknowledged all three
        var machine = Machine(replica: ReplicaID(1), acknowledged: acknowledged)
        machine.connected(to: "w")
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        let refused = machine.refusedForFloor("unclaimed", document: doc)
        #expect(DeviceClientMachineTests.names(refused) == ["refused for floor", "save record", "resubscribe"])
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        _ = machine.received(server.operations, document: doc)
        let waiting = machine.synced(server.version, document: doc)
        #expect(waiting.isEmpty, "waiting for its acknowledged edits")
        return (machine, doc, server, [first, second, on])
    }

    @Test("rule (a): a re-sync at a daemon without a floor stops waiting for acknowledged edits of its own once it learns a range naming them, and for those made on them; a range that names others leaves it waiting; the originals are dropped, nothing is made again")
    func resyncStopsWaitingForParted() throws {
        var (machine, doc, server, own) = try Self.resyncingAtW()
        let elsewhere = machine.learnedParted(Self.ranges([(1, 100...200), (7, 1...3)]), document: doc)
        #expect(elsewhere.isEmpty && machine.isResyncing, "its own are not named: still waiting")
        let originals = Self.ranges([(1, own[0].id.counter...own[1].lastID.counter)])
        let ready = machine.learnedParted(originals, document: doc)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(DeviceClientMachineTests.names(ready))")
            return
        }
        #expect(outcome.unsent.isEmpty && outcome.made.isEmpty, "acknowledged: Y made them again, not the device")
        #expect(own.allSatisfy { !outcome.document.version.contains($0.id) })
        #expect(outcome.document.snapshot() == server.snapshot(), "what W shows; Y's edits made again come from it")
        let known = machine.learnedParted(originals, document: doc)
        #expect(known.isEmpty, "known already")
        #expect(machine.parted.contains(own[0].id))
    }

    @Test("rule (b): a device that holds parted originals loads the snapshot of a daemon without a floor in place of its copy: the originals are gone, its unsent edit is made again")
    func holderLoadsTheSnapshot() throws {
        var (w, table, device) = try Self.w()
        let snapshotFrames = w.subscribe(Self.device, epoch: 7, version: device.version, learnsParted: true).sent(to: Self.device)
        let bytes = snapshotFrames.flatMap { m -> [UInt8] in if case let .snapshot(_, part, _) = m { return part }; return [] }
        #expect(!bytes.isEmpty)
        var copy = device
        let unsent = try copy.insertItem(at: IndexPath(item: 0, section: 0), value: Data("unsent".utf8))
        var machine = Machine(replica: ReplicaID(3), acknowledged: device.version)
        machine.connected(to: "w")
        _ = machine.subscribing(copy)
        _ = machine.subscribed(w.document.version, document: copy)
        _ = machine.learnedParted(PartedRanges(table.values), document: copy)
        try machine.snapshot(bytes)
        let ready = machine.synced(w.document.version, document: copy)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(DeviceClientMachineTests.names(ready))")
            return
        }
        let originals = device.operations(since: w.document.version)
        #expect(!originals.isEmpty)
        let holds = outcome.document.heldOperations()
        #expect(originals.allSatisfy { !holds($0.id) }, "Y's originals are dropped")
        #expect(outcome.unsent.map(\.id) == [unsent.id] && outcome.made.count == 1)
        #expect(outcome.document.snapshot().sections[0].items.contains { $0.value == Data("unsent".utf8) })
    }

    // MARK: A device drops what waits on parted originals

    /// A device (replica 5) whose copy keeps waiting an edit replica 4 made on replica 3's
    /// `original` (an item), which the copy never got; caught up and live.
    static func waitingOnOriginal() throws -> (Machine, ListDocument, original: ListOperation, edit: ListOperation) {
        let a = try ListDocument.make(1, sections: [["a", "b"]])
        var left = a.fork(as: 3)
        let original = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
        var other = left.fork(as: 4)
        let edit = try other.insertItem(at: IndexPath(item: 3, section: 0), value: Data("on it".utf8))
        var copy = a.fork(as: 5)
        #expect(try copy.receive(edit) == .buffered)
        var machine = Machine(replica: ReplicaID(5), acknowledged: a.version)
        machine.connected(to: "x")
        _ = machine.subscribing(copy)
        _ = machine.subscribed(a.version, document: copy)
        let live = machine.synced(a.version, document: copy)
        #expect(!DeviceClientMachineTests.names(live).contains("drop parted waiting"), "nothing parted is known")
        return (machine, copy, original, edit)
    }

    @Test("a live copy told the ranges drops what it keeps waiting on a parted original (nothing shown changes, nothing is sent); told before a catch-up brought it, at synced; a range naming others, or told again, asks nothing; with keepsPartedWaiting it keeps waiting for ever")
    func liveCopyDropsWaitingOnParted() throws {
        var (machine, copy, original, edit) = try Self.waitingOnOriginal()
        let others = machine.learnedParted(Self.ranges([(7, 1...3)]), document: copy)
        #expect(others.isEmpty)
        let told = machine.learnedParted(Self.ranges([(3, original.id.counter...original.id.counter)]), document: copy)
        #expect(DeviceClientMachineTests.names(told) == ["drop parted waiting"])
        let shown = copy.snapshot()
        #expect(copy.dropWaiting(onParted: machine.parted.contains).map(\.id) == [edit.id])
        #expect(copy.pendingCount == 0 && copy.snapshot() == shown)
        #expect(machine.learnedParted(Self.ranges([(3, original.id.counter...original.id.counter)]), document: copy).isEmpty)
        // Told first, then a catch-up brings an operation waiting on the original: at synced.
        var later = try Self.waitingOnOriginal()
        _ = later.0.learnedParted(Self.ranges([(3, later.original.id.counter...later.original.id.counter)]), document: try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 5))
        _ = later.0.subscribing(later.1)
        let synced = later.0.synced(later.1.version, document: later.1)
        #expect(DeviceClientMachineTests.names(synced).contains("drop parted waiting"), "\(DeviceClientMachineTests.names(synced))")

        var (old, oldCopy, oldOriginal, _) = try Self.waitingOnOriginal()
        old.keepsPartedWaiting = true
        #expect(old.learnedParted(Self.ranges([(3, oldOriginal.id.counter...oldOriginal.id.counter)]), document: oldCopy).isEmpty)
        _ = old.subscribing(oldCopy)
        #expect(!DeviceClientMachineTests.names(old.synced(oldCopy.version, document: oldCopy)).contains("drop parted waiting"))
        #expect(oldCopy.pendingCount == 1, "without the rule it waits for ever")
    }

    @Test("a live copy that shows an item a parted range names re-syncs from nothing (save record, resubscribe), told then or at synced; a range naming nothing it shows asks nothing; with keepsPartedShown it keeps showing it")
    func liveCopyShowingPartedResyncs() throws {
        func showing() throws -> (Machine, ListDocument, ListOperation) {
            let a = try ListDocument.make(1, sections: [["a", "b"]])
            var left = a.fork(as: 3)
            let original = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
            var copy = a.fork(as: 5)
            try copy.receive(original)
            var machine = Machine(replica: ReplicaID(5), acknowledged: copy.version)
            machine.connected(to: "x")
            _ = machine.subscribing(copy)
            _ = machine.subscribed(copy.version, document: copy)
            _ = machine.synced(copy.version, document: copy)
            return (machine, copy, original)
        }
        var (machine, copy, original) = try showing()
        #expect(machine.learnedParted(Self.ranges([(7, 1...3)]), document: copy).isEmpty, "a range naming nothing it shows")
        let ranges = Self.ranges([(3, original.id.counter...original.id.counter)])
        let told = machine.learnedParted(ranges, document: copy)
        #expect(DeviceClientMachineTests.names(told) == ["save record", "resubscribe"], "\(DeviceClientMachineTests.names(told))")
        #expect(machine.isResyncing)
        // Told first, then caught up showing it: at synced.
        var again = try showing()
        _ = again.0.learnedParted(ranges, document: try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 5))
        _ = again.0.subscribing(again.1)
        let first = again.0.synced(again.1.version, document: again.1)
        #expect(DeviceClientMachineTests.names(first).contains("resubscribe"), "told first: at synced")

        var (old, oldCopy, oldOriginal) = try showing()
        old.keepsPartedShown = true
        #expect(old.learnedParted(Self.ranges([(3, oldOriginal.id.counter...oldOriginal.id.counter)]), document: oldCopy).isEmpty)
        #expect(oldCopy.contains(ItemID(oldOriginal.id)), "without the rule it keeps showing the original")
    }

    /// A live copy at `x` that shows an original of replica 3, with an edit of its own made
    /// before it took the original (so on nothing the original made), sent to `w` and unanswered
    /// there (the connection cut): `w` may hold it.
    static func showingWithUnanswered() throws
        -> (Machine, ListDocument, ListDocument, ListOperation, PartedRanges, original: ListOperation) {
        let a = try ListDocument.make(1, sections: [["a", "b"]])
        var left = a.fork(as: 3)
        let original = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
        var copy = a.fork(as: 5)
        var machine = Machine(replica: ReplicaID(5), acknowledged: copy.version)
        machine.connected(to: "w")
        _ = machine.subscribing(copy)
        _ = machine.subscribed(copy.version, document: copy)
        _ = machine.synced(copy.version, document: copy)
        let mine = try copy.insertItem(at: IndexPath(item: 0, section: 0), value: Data("mine".utf8))
        machine.sent(edit: 1, DeviceClientMachineTests.sent(machine.sendUnacknowledged(copy))[0])
        machine.disconnected()
        // x holds the original, not the edit: the edit is unacknowledged, w owes the answer.
        try copy.receive(original)
        var held = a.version
        held.observe(original.lastID)
        machine.connected(to: "x")
        _ = machine.subscribing(copy)
        _ = machine.subscribed(held, document: copy)
        _ = machine.synced(held, document: copy)
        return (machine, copy, a, mine, Self.ranges([(3, original.id.counter...original.id.counter)]), original)
    }

    @Test("a re-sync for parted originals shown is no refusal: an unsent edit after the daemon's floor is kept as it is (its id, which a daemon that owed an answer may hold), and one the daemon's copy cannot take sends the copy to that daemon first rather than make it again; with resyncsForPartedAsRefused it is made again both times")
    func partedShownResyncIsNoRefusal() throws {
        // x compacted before the edit: the edit is after its floor, kept with its id.
        var (machine, copy, x, mine, ranges, original) = try Self.showingWithUnanswered()
        try x.compact(stable: x.version)
        #expect(DeviceClientMachineTests.names(machine.learnedParted(ranges, document: copy)) == ["save record", "resubscribe"])
        _ = machine.subscribing(copy)
        try machine.snapshot(x.encodedSnapshot())
        let ready = machine.synced(x.version, document: copy)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(DeviceClientMachineTests.names(ready))")
            return
        }
        #expect(outcome.made.map(\.id) == [mine.id], "kept as it is: w, which may hold it, holds the same operation")
        #expect(!outcome.document.contains(ItemID(original.id)), "the original is gone")

        // x compacted past the edit (its own edit, then the floor): x never takes it, w may hold it.
        var hub = x
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("hub".utf8))
        try hub.compact(stable: hub.version)
        var (settling, settlingCopy, _, _, _, _) = try Self.showingWithUnanswered()
        _ = settling.learnedParted(ranges, document: settlingCopy)
        _ = settling.subscribing(settlingCopy)
        try settling.snapshot(hub.encodedSnapshot())
        let caughtUp = settling.synced(hub.version, document: settlingCopy)
        #expect(DeviceClientMachineTests.names(caughtUp) == ["save record", "settle at w"],
                "made again here while w holds it, it would show twice (seed 12317): \(DeviceClientMachineTests.names(caughtUp))")
        #expect(!settling.isResyncing && settling.unanswered.daemons == ["w"])
        // At w, once answered, the copy re-syncs for the ranges again.
        settling.disconnected()
        settling.connected(to: "w")
        _ = settling.subscribing(settlingCopy)
        _ = settling.subscribed(settlingCopy.version, document: settlingCopy)
        #expect(DeviceClientMachineTests.names(settling.synced(settlingCopy.version, document: settlingCopy)).contains("resubscribe"),
                "the copy still shows the original: it re-syncs at the next synced")

        // The old behaviour: every unsent edit made again, the snapshot final.
        for (base, version) in [(x, x.version), (hub, hub.version)] {
            var (old, oldCopy, _, oldMine, _, _) = try Self.showingWithUnanswered()
            old.resyncsForPartedAsRefused = true
            _ = old.learnedParted(ranges, document: oldCopy)
            _ = old.subscribing(oldCopy)
            try old.snapshot(base.encodedSnapshot())
            let remade = old.synced(version, document: oldCopy)
            guard case let .replace(o)? = remade.first else {
                Issue.record("expected the copy replaced, got \(DeviceClientMachineTests.names(remade))")
                continue
            }
            #expect(o.made.count == 1 && o.made[0].id != oldMine.id, "made again under a new id")
        }
    }
}
