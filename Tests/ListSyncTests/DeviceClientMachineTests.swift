import Foundation
import Testing
import ListCRDT
@_spi(Testing) import ListSync
import ListSyncTestSupport

/// The device client's decisions (``DeviceClientMachine``), which SyncClient and the simulator's
/// clients both drive: tested as events in, actions out, with no socket and no file.
@Suite struct DeviceClientMachineTests {
    typealias Machine = DeviceClientMachine

    /// The actions, by name (an outcome or operations are not compared here).
    static func names(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case let .send(ops, recordFirst): "send \(ops.count)" + (recordFirst ? " record first" : "")
            case .sendUnacknowledged: "send unacknowledged"
            case .saveRecord: "save record"
            case .live: "live"
            case .reportSeen: "report seen"
            case .refusedForFloor: "refused for floor"
            case let .settle(daemon): "settle at \(daemon)"
            case .resubscribe: "resubscribe"
            case .replace: "replace"
            case .cannotSend: "cannot send"
            case .editFailed: "edit failed"
            case .dropPartedWaiting: "drop parted waiting"
            case let .announceRemade(ranges): "announce remade \(ranges)"
            }
        }
    }

    /// The operations of the `send` actions.
    static func sent(_ actions: [Machine.Action]) -> [[ListOperation]] {
        actions.compactMap { if case let .send(ops, _) = $0 { ops } else { nil } }
    }

    /// A device (replica 1) with a copy of the daemon's document (replica 9, acknowledged) and
    /// `edits` items of its own, connected to `daemon` and subscribed.
    static func device(edits: Int, daemon: String = "w") throws -> (Machine, ListDocument, ListDocument) {
        let server = Fixture.typed(2, replica: 9)
        var doc = server.fork(as: 1)
        for i in 0..<edits { try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("mine\(i)".utf8)) }
        var machine = Machine(replica: ReplicaID(1), acknowledged: server.version)
        machine.connected(to: daemon)
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        return (machine, doc, server)
    }

    @Test("sends nothing until caught up; at synced: live, then everything unacknowledged in order as one edit, the record written first for a new daemon")
    func sendsOnceCaughtUp() throws {
        var (machine, doc, server) = try Self.device(edits: 2)
        #expect(machine.sendUnacknowledged(doc).isEmpty, "not live before synced")
        #expect(machine.edited(doc.operations, document: doc).isEmpty, "an edit while catching up waits")
        let synced = machine.synced(server.version, document: doc)
        #expect(Self.names(synced) == ["live", "send unacknowledged", "save record", "report seen"])
        let sends = machine.sendUnacknowledged(doc)
        #expect(Self.names(sends) == ["send 2 record first"])
        #expect(Self.sent(sends).first == doc.operations(since: server.version), "in the order the copy applied them")
        #expect(machine.unanswered.daemons == ["w"])
    }

    @Test("an acknowledgement counts the device's edits it carried, in order; once all are, no daemon owes an answer")
    func acknowledgementCountsCarried() throws {
        var (machine, doc, server) = try Self.device(edits: 2)
        _ = machine.synced(server.version, document: doc)
        let ops = Self.sent(machine.sendUnacknowledged(doc))[0]
        machine.sent(edit: 1, ops)
        #expect(machine.inFlightCount == 1 && machine.hasUnacknowledged(doc))
        let done = machine.answered(edit: 1, .success(server.version), document: doc)
        #expect(Self.names(done) == ["save record", "report seen"])
        #expect(!machine.hasUnacknowledged(doc) && machine.unanswered.daemons.isEmpty && machine.inFlightCount == 0)
        #expect(machine.sendUnacknowledged(doc).isEmpty, "nothing left to send")
        let again = machine.answered(edit: 1, .success(server.version), document: doc)
        #expect(again.isEmpty, "an edit answered twice (or never sent) changes nothing")
    }

    @Test("sending again to a daemon that already owes an answer does not write the record first")
    func recordFirstOncePerDaemon() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        let made = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("more".utf8))
        let edit = machine.edited([made], document: doc)
        #expect(Self.names(edit) == ["send 2"], "both unacknowledged, not the record again")
    }

    @Test("a refusal for the floor waits for the later edits' answers; when they took every edit, nothing re-syncs")
    func refusalWaitsForLaterBatches() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        let ops = Self.sent(machine.sendUnacknowledged(doc))[0]
        machine.sent(edit: 1, ops)
        machine.sent(edit: 2, ops)
        let refused = machine.answered(edit: 1, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(Self.names(refused) == ["refused for floor"], "edit 2 is unanswered: wait")
        #expect(machine.refusal.isWaiting)
        var held = server.version
        held.observe(ops[0].lastID)
        let taken = machine.answered(edit: 2, .success(held), document: doc)
        #expect(!taken.contains { if case .resubscribe = $0 { true } else { false } } && !machine.isResyncing,
                "the later edit took them: no re-sync")
    }

    @Test("refused by one daemon while another may hold the edits: settle there first; refused there too: re-sync from nothing")
    func settleBeforeRemaking() throws {
        var (machine, doc, server) = try Self.device(edits: 1, daemon: "x")
        machine.disconnected()
        // Sent to w first, without an answer (the connection ended).
        machine.connected(to: "w")
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 2, Self.sent(machine.sendUnacknowledged(doc))[0])
        let refused = machine.answered(edit: 2, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(Self.names(refused) == ["refused for floor", "save record", "settle at w"])
        #expect(!machine.isResyncing)
        machine.disconnected()
        machine.connected(to: "w")
        #expect(machine.subscribing(doc) == doc.version)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 3, Self.sent(machine.sendUnacknowledged(doc))[0])
        let final = machine.answered(edit: 3, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(Self.names(final) == ["refused for floor", "save record", "resubscribe"])
        #expect(machine.isResyncing && machine.subscribing(doc) == VersionVector(), "re-syncs from nothing")
    }

    @Test("a daemon that can no longer be asked is given up: the refusal is final at once")
    func unaskableDaemonGivenUp() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 2, Self.sent(machine.sendUnacknowledged(doc))[0])
        let refused = machine.answered(edit: 2, .failure(.refused(.compacted, "behind")), document: doc, askable: { $0 != "w" })
        #expect(Self.names(refused).last == "resubscribe")
    }

    @Test("a snapshot catch-up behind the floor while another daemon may hold the unsent edits made before that floor: settle there first, nothing made again; with no other daemon owing an answer, the copy is replaced")
    func snapshotCatchUpSettlesFirst() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        // Sent to w, the answer lost with the connection: w may hold the edit.
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        machine.disconnected()
        // x compacted past the device's edit (its own later edit, then the floor).
        var hub = server
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("hub".utf8))
        try hub.compact(stable: hub.version)
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        try machine.snapshot(hub.encodedSnapshot())
        #expect(machine.isResyncing)
        let caughtUp = machine.synced(hub.version, document: doc)
        #expect(Self.names(caughtUp) == ["save record", "settle at w"], "made again here, the edit would exist twice if w took it")
        #expect(!machine.isResyncing && machine.unanswered.daemons == ["w"])
        // Sent to no other daemon: nothing else may hold it, the re-sync makes it again.
        var alone = try Self.device(edits: 1).0
        alone.disconnected()
        alone.connected(to: "x")
        _ = alone.subscribing(doc)
        try alone.snapshot(hub.encodedSnapshot())
        let ready = alone.synced(hub.version, document: doc)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(Self.names(ready))")
            return
        }
        #expect(outcome.made.count == 1 && outcome.made[0].id != doc.operations(since: server.version)[0].id, "made again: x will never take it")
    }

    @Test("an error for the document with compacted (edits kept waiting, refused when woken) is acted on as a refused edit; not while disconnected or re-syncing")
    func documentErrorActedOn() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        _ = machine.answered(edit: 1, .success(server.version), document: doc)
        let refused = machine.refusedForFloor("woken and refused", document: doc)
        #expect(Self.names(refused) == ["refused for floor", "save record", "resubscribe"])
        #expect(Self.names(machine.refusedForFloor("again", document: doc)) == ["refused for floor"], "re-syncing already")
        var offline = try Self.device(edits: 1).0
        offline.disconnected()
        #expect(Self.names(offline.refusedForFloor("late", document: doc)) == ["refused for floor"] && !offline.isResyncing,
                "without a connection the next one sends them again and hears again")
    }

    @Test("the broken client that takes the first refusal as final re-syncs without asking the other daemon")
    func brokenRemakesOnFirstRefusal() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        machine.remakesOnFirstRefusal = true
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 2, Self.sent(machine.sendUnacknowledged(doc))[0])
        let refused = machine.answered(edit: 2, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(Self.names(refused).last == "resubscribe")
    }

    @Test("re-sync: the catch-up from nothing builds the daemon's copy; at synced it is replaced, then live with the edits made again sent in order")
    func resyncThenLive() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        _ = machine.answered(edit: 1, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(machine.isResyncing)
        _ = machine.subscribing(doc)
        _ = machine.subscribed(VersionVector(), document: doc)
        let (applies, building) = machine.received(server.operations, document: doc)
        #expect(!applies && building.isEmpty, "re-syncing, the catch-up is the daemon's copy, not the device's")
        let ready = machine.synced(server.version, document: doc)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(Self.names(ready))")
            return
        }
        #expect(outcome.made.count == 1 && outcome.held == server.version)
        let after = machine.replaced(outcome, document: outcome.document)
        let original = doc.operations(since: server.version)[0]
        #expect(Self.names(after) == ["save record", "report seen", "announce remade \(original.id.counter)@1", "live",
                                      "send unacknowledged", "save record", "report seen"],
                "the daemon is told which edit was made again, after the seen that names the device")
        #expect(!machine.isResyncing && machine.isLive && machine.resyncs == 1)
        #expect(Self.sent(machine.sendUnacknowledged(outcome.document)).first == outcome.made)
    }

    @Test("a refusal of an edit sent before a re-sync (sending ahead, answered after it) is answered and ignored")
    func refusalFromBeforeResyncIgnored() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        // A snapshot catch-up re-syncs the copy while edit 1 is in flight.
        _ = machine.subscribing(doc)
        try machine.snapshot(server.encodedSnapshot())
        guard case let .replace(outcome)? = machine.synced(server.version, document: doc).first else {
            Issue.record("not re-synced")
            return
        }
        _ = machine.replaced(outcome, document: outcome.document)
        let refused = machine.answered(edit: 1, .failure(.refused(.compacted, "behind")), document: outcome.document)
        #expect(!Self.names(refused).contains("refused for floor") && !machine.isResyncing)
    }

    @Test("a disconnect drops the edits in flight and a refusal that waited; the next connection sends them again")
    func disconnectDropsInFlight() throws {
        var (machine, doc, server) = try Self.device(edits: 1)
        _ = machine.synced(server.version, document: doc)
        let ops = Self.sent(machine.sendUnacknowledged(doc))[0]
        machine.sent(edit: 1, ops)
        machine.sent(edit: 2, ops)
        _ = machine.answered(edit: 1, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(machine.refusal.isWaiting)
        machine.disconnected()
        #expect(machine.inFlightCount == 0 && !machine.refusal.isWaiting && !machine.isLive && machine.daemon == nil)
        #expect(machine.edited(ops, document: doc).isEmpty, "not connected: nothing is sent")
        machine.connected(to: "w")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        #expect(Self.sent(machine.sendUnacknowledged(doc)) == [ops])
    }

    @Test("what the daemon sends, it holds; a floor the copy compacted at is acknowledged; other refusals are the driver's")
    func receiptAndFloorAcknowledge() throws {
        var (machine, doc, server) = try Self.device(edits: 0)
        let others = Fixture.edits(on: server, replica: 7, count: 2)
        let (applies, actions) = machine.received(others, document: doc)
        #expect(applies && Self.names(actions) == ["report seen"])
        #expect(machine.acknowledged.includes(DeviceCopyPolicy.acknowledgedByReceipt(others)))
        _ = doc.receive(others)
        #expect(machine.compacts(at: doc.version, document: doc))
        try doc.compact(stable: doc.version)
        #expect(Self.names(machine.compacted(at: doc.version, document: doc)) == ["save record"])
        #expect(!machine.compacts(at: doc.version, document: doc), "compacted there already")
        #expect(machine.acknowledged == doc.version)
        _ = machine.synced(doc.version, document: doc)
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
        machine.sent(edit: 5, Self.sent(machine.sendUnacknowledged(doc))[0])
        #expect(Self.names(machine.answered(edit: 5, .failure(.refused(.limit, "busy")), document: doc)) == ["edit failed"])
    }

    @Test("sending ahead (the simulator's variant): an edit goes at once while subscribing; on subscribed only the device's own unacknowledged go")
    func sendsAhead() throws {
        let server = Fixture.typed(2, replica: 9)
        var doc = server.fork(as: 1)
        _ = doc.receive(Fixture.edits(on: server, replica: 7, count: 1))
        let own = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("mine".utf8))
        var machine = Machine(replica: ReplicaID(1), sending: .ahead)
        machine.connected(to: "w")
        _ = machine.subscribing(doc)
        #expect(Self.sent(machine.edited([own], document: doc)) == [[own]], "at once, not live yet")
        #expect(Self.sent(machine.subscribed(server.version, document: doc)) == [[own]], "not replica 7's")
        var everything = Machine(replica: ReplicaID(1), sending: .aheadWithOthers)
        everything.connected(to: "w")
        #expect(Self.sent(everything.subscribed(server.version, document: doc)).first?.count == 2, "replica 7's too")
    }

    /// Seed 11014's device (`listsync simulate --daemons 2 --compact-after 10 --hide-daemon --roam
    /// 30 --crashes 2 --ops 80`): three edits sent to x without an answer, then to w, which takes
    /// the first two and refuses the third; settled at x, refused there, re-synced on x's
    /// snapshot. `says`: w's refusal says what it took (``TakenInPart``), else it is the text of
    /// an older daemon. Returns the edits made again and the device's own three.
    static func refusedInPart(says: Bool) throws -> (made: [ListOperation], own: [ListOperation], acknowledged: VersionVector) {
        var (machine, doc, server) = try Self.device(edits: 3)
        let own = doc.operations(since: server.version)
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        machine.sent(edit: 1, Self.sent(machine.sendUnacknowledged(doc))[0])
        machine.disconnected()
        machine.connected(to: "w")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        let carried = Self.sent(machine.sendUnacknowledged(doc))[0]
        #expect(carried == own)
        machine.sent(edit: 2, carried)
        var held = server.version
        held.observe(own[1].lastID)
        var text = "1 operation(s) of batch 2 refused, the first: operation \(own[2].id) is malformed: it depends on an operation refused for the compaction floor; the others are durable and applied"
        if says { text = TakenInPart(version: held, refusedFrom: VersionVector([own[2].id.replica: own[2].id.counter])).appended(to: text) }
        let refused = machine.answered(edit: 2, .failure(.refused(.compacted, text)), document: doc)
        #expect(Self.names(refused) == ["refused for floor", "save record", "settle at x"])
        // x compacted past the device's edits (its own later edit, then the floor).
        var hub = server
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("hub".utf8))
        try hub.compact(stable: hub.version)
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.synced(server.version, document: doc)
        let resent = Self.sent(machine.sendUnacknowledged(doc))[0]
        #expect(resent == (says ? [own[2]] : own), "only what w did not take goes again")
        machine.sent(edit: 3, resent)
        let final = machine.answered(edit: 3, .failure(.refused(.compacted, "behind")), document: doc)
        #expect(Self.names(final) == ["refused for floor", "save record", "resubscribe"])
        _ = machine.subscribing(doc)
        try machine.snapshot(hub.encodedSnapshot())
        let ready = machine.synced(hub.version, document: doc)
        guard case let .replace(outcome)? = ready.first, ready.count == 1 else {
            Issue.record("expected the copy replaced, got \(Self.names(ready))")
            return ([], own, machine.acknowledged)
        }
        return (outcome.made, own, machine.acknowledged)
    }

    @Test("a batch refused in part that says what the daemon took: those edits are acknowledged, only the refused one is sent again and made again (seed 11014)")
    func refusedInPartMakesAgainOnlyTheRefused() throws {
        let (made, own, acknowledged) = try Self.refusedInPart(says: true)
        #expect(acknowledged.contains(own[1].lastID) && !acknowledged.contains(own[2].id))
        #expect(made.count == 1, "w makes the two it took again when it merges back: made here too, they would show twice")
        #expect(made.first?.id.replica == own[2].id.replica)
    }

    @Test("a refusal in part from an older daemon (nothing said of what it took): the whole edit is taken as refused, as before")
    func refusedInPartByAnOlderDaemon() throws {
        let (made, own, acknowledged) = try Self.refusedInPart(says: false)
        #expect(!acknowledged.contains(own[0].id))
        #expect(made.count == 3)
    }
}
