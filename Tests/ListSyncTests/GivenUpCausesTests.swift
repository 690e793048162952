import Foundation
import Testing
import ListCRDT
@_spi(Testing) import ListSync
import ListSyncTestSupport

/// Others' edits only a forgotten daemon held (Docs/Semantics.md §7): a device that took another
/// author's operations from daemon `d` and made edits on them, caught up with a daemon `x` that
/// lacks both once `d` is given up, sends those operations with its own, so that its edits do not
/// wait for them on `x` for ever. No socket, no file.
@Suite struct GivenUpCausesTests {
    typealias Machine = DeviceClientMachine

    /// A device (replica 1) at `d`: it took replica 5's edit `f` from `d`, made `edits` items of
    /// its own on it, sent them to `d` and had them acknowledged when `acknowledgedByD`; then
    /// connected to `x`, subscribed at the daemon's document (replica 9) without `f`.
    static func tookFromD(edits: Int, acknowledgedByD: Bool = true, keeps: Bool = false) throws
        -> (machine: Machine, doc: ListDocument, server: ListDocument, f: ListOperation) {
        var (machine, doc, server) = try DeviceClientMachineTests.device(edits: 0, daemon: "d")
        machine.keepsGivenUpCauses = keeps
        _ = machine.synced(server.version, document: doc)
        var other = server.fork(as: 5)
        try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("theirs".utf8))
        let f = other.operations(since: server.version)
        #expect(f.count == 1)
        _ = doc.receive(f)
        #expect(machine.received(f, document: doc).applies)
        for i in 0..<edits { try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("mine\(i)".utf8)) }
        if acknowledgedByD {
            let ops = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc))[0]
            #expect(ops.allSatisfy { $0.id.replica == ReplicaID(1) }, "only its own: d sent it f")
            machine.sent(edit: 1, ops)
            _ = machine.answered(edit: 1, .success(doc.version), document: doc)
            #expect(!machine.hasUnacknowledged(doc))
        }
        machine.disconnected()
        machine.connected(to: "x")
        _ = machine.subscribing(doc)
        _ = machine.subscribed(server.version, document: doc)
        return (machine, doc, server, f[0])
    }

    @Test("d given up, x lacks f and the device's edits: f goes first, then the edits, under their ids, and x's acknowledgement counts all of them")
    func causesGoWithTheEdits() throws {
        var (machine, doc, server, f) = try Self.tookFromD(edits: 2)
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        #expect(machine.givenUpCausesResends == 1 && machine.givenUpResends == 1)
        let sends = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc))
        #expect(sends.count == 1)
        #expect(sends.first?.map(\.id) == doc.operations(since: server.version).map(\.id), "in the order the copy applied them")
        #expect(sends.first?.first?.id == f.id)
        machine.sent(edit: 1, sends[0])
        _ = machine.answered(edit: 1, .success(doc.version), document: doc, askable: { $0 != "d" })
        #expect(machine.acknowledged == doc.version)
        #expect(machine.synced(doc.version, document: doc, askable: { $0 != "d" }).count == 4 && machine.givenUpCausesResends == 1,
                "held by x now: not again")
    }

    @Test("edits d never acknowledged (sent to x only) go with f too, once a daemon that acknowledged the device's edits is given up")
    func unsentEditsOnF() throws {
        var (machine, doc, server, f) = try Self.tookFromD(edits: 1)
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("later".utf8))
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        let sent = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc)).first ?? []
        #expect(sent.first?.id == f.id && sent.count == 3)
    }

    @Test("nothing of others goes while d may be asked (it relays f, or a left-out daemon parts it), nor what x holds, nor when x holds every edit of the device's own")
    func onlyWhenGivenUpAndNeeded() throws {
        var (machine, doc, server, f) = try Self.tookFromD(edits: 2)
        var askable = machine
        _ = askable.synced(server.version, document: doc)
        #expect(askable.sendUnacknowledged(doc).isEmpty && askable.givenUpCausesResends == 0)
        var holdsF = server.version
        holdsF.observe(f.lastID)
        var held = machine
        _ = held.synced(holdsF, document: doc, askable: { $0 != "d" })
        #expect(DeviceClientMachineTests.sent(held.sendUnacknowledged(doc)).first?.contains { $0.id == f.id } == false)
        #expect(held.givenUpCausesResends == 0, "nothing of others' to send")
        var nothingOwn = doc.version
        nothingOwn.formUnion(server.version)
        var withoutF = nothingOwn.counters
        withoutF[ReplicaID(5)] = nil
        _ = machine.synced(VersionVector(withoutF), document: doc, askable: { $0 != "d" })
        #expect(machine.givenUpCausesResends == 0, "x holds every edit of the device's: nothing waits on f there")
    }

    @Test("a device whose edits no daemon given up acknowledged sends no one else's (nothing tells it a daemon it took them from is gone)")
    func noRunOfAGivenUpDaemon() throws {
        var (machine, doc, server, _) = try Self.tookFromD(edits: 1, acknowledgedByD: false)
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        let sent = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc)).first ?? []
        #expect(sent.allSatisfy { $0.id.replica == ReplicaID(1) } && machine.givenUpCausesResends == 0)
    }

    @Test("the broken client (keepsGivenUpCauses) sends its own edits again and not f: they wait for it on x")
    func brokenClientKeeps() throws {
        var (machine, doc, server, f) = try Self.tookFromD(edits: 2, keeps: true)
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        let sent = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc)).first ?? []
        #expect(sent.count == 2 && !sent.contains { $0.id == f.id } && machine.givenUpResends == 1)
    }

    @Test("the copy's floor: what is before it is not sent (every daemon held it); the device's later edit goes alone")
    func notBeforeTheFloor() throws {
        var (machine, doc, server, f) = try Self.tookFromD(edits: 1)
        let floor = doc.version
        try doc.compact(stable: floor)
        _ = machine.compacted(at: floor, document: doc)
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("later".utf8))
        _ = machine.synced(server.version, document: doc, askable: { $0 != "d" })
        let sent = DeviceClientMachineTests.sent(machine.sendUnacknowledged(doc)).first ?? []
        #expect(sent.map(\.id) == [doc.operations.last?.id], "f and the edit before the floor stay")
        #expect(machine.givenUpCausesResends == 0 && f.id.replica == ReplicaID(5))
    }
}
