import Foundation
import Testing
import ListCRDT
@_spi(Testing) import ListSync
import ListSyncTestSupport

/// An edit only a forgotten daemon held (Docs/Semantics.md §7): the device records which daemon
/// acknowledged each of its edits (``AcknowledgingDaemons``), and, caught up with a daemon that
/// lacks edits only a daemon given up since acknowledged, counts them unacknowledged again, so
/// that they go again. No socket, no file.
@Suite struct GivenUpAcknowledgementsTests {
    typealias Machine = DeviceClientMachine
    typealias Runs = AcknowledgingDaemons<String>

    @Test("runs: a counter keeps the first daemon that acknowledged it; a record of an older build knows no daemon; truncating drops what follows")
    func runs() {
        var runs = Runs(runs: nil, acknowledged: 3)
        #expect(runs.runs == [.init(upTo: 3, daemon: nil)])
        runs.record(through: 2, by: "x")
        #expect(runs.upTo == 3, "counted already: kept")
        runs.record(through: 5, by: "d")
        runs.record(through: 7, by: "d")
        runs.record(through: 9, by: "x")
        #expect(runs.runs == [.init(upTo: 3, daemon: nil), .init(upTo: 7, daemon: "d"), .init(upTo: 9, daemon: "x")])
        #expect(runs.daemon(of: 5) == "d" && runs.daemon(of: 4) == "d" && runs.daemon(of: 8) == "x")
        #expect(runs.daemon(of: 2) == nil && runs.daemon(of: 10) == nil && runs.daemon(of: 0) == nil)
        var cut = runs
        cut.truncate(through: 5)
        #expect(cut.runs == [.init(upTo: 3, daemon: nil), .init(upTo: 5, daemon: "d")])
        cut.truncate(through: 3)
        #expect(cut.runs == [.init(upTo: 3, daemon: nil)])
        #expect(Runs(runs: nil, acknowledged: 0).runs.isEmpty)
    }

    @Test("the first counter given up: only a daemon that cannot be asked, past what the daemon holds and the floor, not parted; nothing of an unknown daemon")
    func firstGivenUp() {
        var runs = Runs(runs: nil, acknowledged: 3)
        runs.record(through: 7, by: "d")
        runs.record(through: 9, by: "x")
        let gone: (String) -> Bool = { $0 != "d" }
        #expect(runs.firstGivenUp(after: 0, floor: 0, askable: { _ in true }) == nil, "every daemon askable: nothing")
        #expect(runs.firstGivenUp(after: 0, floor: 0, askable: { _ in false }) == 4, "unknown (older record) counters never go again")
        #expect(runs.firstGivenUp(after: 0, floor: 0, askable: gone) == 4)
        #expect(runs.firstGivenUp(after: 5, floor: 0, askable: gone) == 6, "the daemon holds up to 5")
        #expect(runs.firstGivenUp(after: 0, floor: 6, askable: gone) == 7, "the copy's floor: every daemon held it")
        #expect(runs.firstGivenUp(after: 7, floor: 0, askable: gone) == nil, "held: nothing")
        #expect(runs.firstGivenUp(after: 0, floor: 0, askable: gone, parted: { $0 <= 5 }) == 6, "parted ones are not sent again")
        #expect(runs.firstGivenUp(after: 0, floor: 0, askable: gone, parted: { _ in true }) == nil)
    }

    /// A device (replica 1) with `edits` items of its own that daemon `d` acknowledged (sent to
    /// it, answered), then connected to `x`, subscribed from its version.
    static func acknowledgedByD(edits: Int, keeps: Bool = false) throws -> (Machine, ListDocument, ListDocument) {
        var (machine, doc, server) = try DeviceClientMachineTests.device(edits: edits, daemon: "d")
        machine.keepsGivenUpAcknowledgements = keeps
        _ = machine.synced(server.version, document: doc)
        let ops = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc))[0]
        machine.sent(edit: 1, ops)
        _ = machine.answered(edit: 1, .success(doc.version), document: doc)
        #expect(!machine.hasUnacknowledged(doc))
        #expect(machine.acknowledgedBy.runs.last == .init(upTo: doc.version[ReplicaID(1)], daemon: "d"))
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        return (machine, doc, server)
    }

    @Test("caught up with x, which lacks the device's edits only d acknowledged: while d may be asked nothing goes again (a left-out daemon may make them again in its merge back); once d is given up they go again under their ids, then count as x's")
    func givenUpEditsGoAgain() throws {
        var (machine, doc, server) = try Self.acknowledgedByD(edits: 3)
        let own = doc.operations(since: server.version)
        var kept = machine
        #expect(DeviceClientMachineTests.names(kept.synced(server.version, document: doc))
                == ["live", "send unacknowledged", "save record", "report seen"])
        #expect(kept.sendUnacknowledged(doc).isEmpty, "d may still be asked (it may relay them, or make them again): nothing")
        let synced = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(DeviceClientMachineTests.names(synced) == ["live", "send unacknowledged", "save record", "report seen"])
        #expect(machine.hasUnacknowledged(doc) && machine.givenUpResends == 1)
        let sends = machine.sendUnacknowledged(doc)
        #expect(DeviceClientMachineTests.names(sends) == ["send 3 record first"])
        #expect(DeviceClientMachineTests.sent(sends)[0].map(\.id) == own.map(\.id), "the same operations, in order")
        machine.sent(edit: 1, DeviceClientMachineTests.sent(sends)[0])
        _ = machine.answered(edit: 1, .success(doc.version), document: doc)
        #expect(machine.acknowledgedBy.runs.last == .init(upTo: doc.version[ReplicaID(1)], daemon: "x"))
        #expect(machine.synced(doc.version, document: doc, askable: { $0 != "d" }).count == 4 && machine.givenUpResends == 1,
                "held by x now: not again")
    }

    @Test("x holds the first edit (d relayed it before it was lost): only the others go again")
    func onlyWhatTheDaemonLacks() throws {
        var (machine, doc, server) = try Self.acknowledgedByD(edits: 3)
        let own = doc.operations(since: server.version)
        var holds = server.version
        holds.observe(own[0].lastID)
        _ = machine.synced(holds, document: doc, askable: { $0 != "d" })
        #expect(DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc)).first?.map(\.id) == own[1...].map(\.id))
    }

    @Test("an edit the daemons parted (d made it again in a merge back) does not go again, nor one only a daemon still askable acknowledged")
    func partedAndAskableStay() throws {
        var (machine, doc, server) = try Self.acknowledgedByD(edits: 2)
        let own = doc.operations(since: server.version)
        var ranges = PartedRanges()
        ranges.insert(own[0].id.counter...own[1].lastID.counter, of: ReplicaID(1))
        _ = machine.learnedParted(ranges, document: doc)
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(machine.sendUnacknowledged(doc).isEmpty && machine.givenUpResends == 0)
    }

    @Test("a refused resend is made again: the re-sync does not wait for the given-up edits (they are unacknowledged now)")
    func refusedResendMadeAgain() throws {
        var (machine, doc, server) = try Self.acknowledgedByD(edits: 2)
        let askable: (String) -> Bool = { $0 != "d" }
        _ = machine.synced(server.version, document: doc, askable: askable)
        let ops = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc))[0]
        machine.sent(edit: 1, ops)
        let refused = machine.answered(edit: 1, .failure(.refused(.compacted, "made before the floor")), document: doc, askable: askable)
        #expect(DeviceClientMachineTests.names(refused) == ["refused for floor", "save record", "resubscribe"])
        _ = machine.subscribing(doc)
        _ = machine.subscribed(VersionVector(), document: doc)
        #expect(machine.received(server.operations, document: doc, askable: askable).actions.isEmpty)
        let done = machine.synced(server.version, document: doc, askable: askable)
        guard case let .replace(outcome)? = done.first else {
            Issue.record("the re-sync waits: \(DeviceClientMachineTests.names(done))")
            return
        }
        #expect(outcome.made.count == 2, "both edits made again on x's copy")
    }

    @Test("the broken client (keepsGivenUpAcknowledgements) never sends them again")
    func brokenClientKeeps() throws {
        var (machine, doc, server) = try Self.acknowledgedByD(edits: 2, keeps: true)
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(machine.sendUnacknowledged(doc).isEmpty && !machine.hasUnacknowledged(doc))
    }

    @Test("a machine started from a record's runs keeps them; from an older record (no runs), its edits are of no known daemon and never go again")
    func fromRecord() throws {
        let (machine, doc, server) = try Self.acknowledgedByD(edits: 2)
        var restored = Machine(replica: ReplicaID(1), acknowledged: machine.acknowledged, acknowledgedBy: machine.acknowledgedBy.runs)
        restored.connected(to: "x")
        _ = restored.subscribing(doc)
        _ = restored.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(DeviceClientMachineTests.sent(restored.sendUnacknowledged(doc)).first?.count == 2)
        var older = Machine(replica: ReplicaID(1), acknowledged: machine.acknowledged)
        older.connected(to: "x")
        _ = older.subscribing(doc)
        _ = older.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(older.sendUnacknowledged(doc).isEmpty)
    }
}
