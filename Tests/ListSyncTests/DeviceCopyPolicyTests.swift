import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// The device's decisions about its copy (``DeviceCopyPolicy``), which SyncClient, the command
/// line's kept copy and the simulator's clients share: when to compact at the daemon's floor,
/// what receiving acknowledges, what to send, what to make again after a re-sync.
@Suite struct DeviceCopyPolicyTests {
    /// A device (replica 1) holding the daemon's document (replica 9's section and items) and
    /// `own` item inserts of its own.
    static func device(own: Int) throws -> (daemon: ListDocument, device: ListDocument) {
        let daemon = Fixture.typed(3, replica: 9)
        var device = daemon.fork(as: 1)
        for i in 0..<own { try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("own-\(i)".utf8)) }
        return (daemon, device)
    }

    @Test("a copy compacts at the floor when it holds all of it, unsent edits of its own in it or after it; not at a floor it lacks part of, nor one its history starts past")
    func compactsAtFloor() throws {
        let (daemon, device) = try Self.device(own: 2)
        let floor = device.version   // the daemon took the two edits and compacted there
        #expect(DeviceCopyPolicy.compactsAtFloor(floor, version: device.version, historyFloor: nil, resyncing: false),
                "its own edits not yet acknowledged are in the floor: nothing of the copy is unsent")
        #expect(DeviceCopyPolicy.compactsAtFloor(daemon.version, version: device.version, historyFloor: nil, resyncing: false),
                "the copy is ahead of the floor: its own edits after it stay in its log, to be sent")
        var further = daemon
        try further.insertItem(at: IndexPath(item: 0, section: 0), value: Data("another's".utf8))
        #expect(!DeviceCopyPolicy.compactsAtFloor(further.version, version: device.version, historyFloor: nil, resyncing: false),
                "the floor holds an operation the copy lacks")
        #expect(!DeviceCopyPolicy.compactsAtFloor(floor, version: device.version, historyFloor: floor, resyncing: false),
                "compacted there already")
        #expect(!DeviceCopyPolicy.compactsAtFloor(daemon.version, version: device.version, historyFloor: floor, resyncing: false),
                "its history starts past that floor")

        // Compacted at the daemon's floor while its own two edits are unsent: it shows the same,
        // and the two edits are still there to send, after the floor.
        var copy = device
        let shown = copy.snapshot()
        try copy.compact(stable: daemon.version)
        #expect(copy.snapshot() == shown && copy.historyFloor == daemon.version)
        #expect(copy.hasHistory(since: daemon.version) && copy.operations(since: daemon.version).count == 2)
        #expect(!DeviceCopyPolicy.compactsAtFloor(floor, version: device.version, historyFloor: nil, resyncing: true),
                "re-syncing: its history is what its edits are made again from")
        #expect(!DeviceCopyPolicy.compactsAtFloor(VersionVector(), version: VersionVector(), historyFloor: nil, resyncing: false),
                "the empty floor: the daemon never compacted")
    }

    @Test("receiving a typed run acknowledges it up to its last character (the record names the daemon's whole version); nothing goes back")
    func receiptAcknowledgesWholeSpans() throws {
        var other = Fixture.typed(1, replica: 2)
        let item = ItemID(other.operations.last!.id)
        let run = try other.splice("notes", ofItem: item, at: 0, insert: "hello")
        #expect(run.lastID != run.id, "a typed run spans several ids")
        var device = ListDocument(replica: ReplicaID(1))
        _ = device.receive(other.operations)
        #expect(device.version == other.version)
        let acknowledged = DeviceCopyPolicy.acknowledgedByReceipt(other.operations)
        #expect(acknowledged == other.version)
        #expect(DeviceCopyPolicy.toSend(device, acknowledged: acknowledged) == [], "nothing of another replica goes back")
    }

    @Test("what a caught-up copy sends is everything unacknowledged, in order; nil once its history does not go back that far")
    func toSend() throws {
        let (daemon, device) = try Self.device(own: 3)
        let ops = try #require(DeviceCopyPolicy.toSend(device, acknowledged: daemon.version))
        #expect(ops.map(\.id) == device.operations(since: daemon.version).map(\.id) && ops.count == 3)
        #expect(ops.allSatisfy { $0.id.replica == ReplicaID(1) })
        var compacted = device
        _ = try compacted.compact(stable: compacted.version)
        #expect(DeviceCopyPolicy.toSend(compacted, acknowledged: daemon.version) == nil)
        #expect(DeviceCopyPolicy.toSend(compacted, acknowledged: compacted.version) == [])
    }

    @Test("a re-sync makes again the device's own edits after what was acknowledged that the daemon's copy lacks")
    func unsent() throws {
        let (daemon, device) = try Self.device(own: 3)
        let own = device.operations(since: daemon.version)
        var base = daemon
        _ = base.receive([own[0]])   // the daemon took the first
        #expect(base.version.contains(own[0].lastID))
        let unsent = DeviceCopyPolicy.unsent(device, acknowledged: daemon.version, base: base)
        #expect(unsent.map(\.id) == own.dropFirst().map(\.id))
        var acknowledged = daemon.version
        acknowledged.observe(own[1].lastID)   // another daemon acknowledged the second
        #expect(DeviceCopyPolicy.unsent(device, acknowledged: acknowledged, base: base).map(\.id) == [own[2].id])
        #expect(DeviceCopyPolicy.subscribeVersion(device.version, resyncing: true) == VersionVector())
        #expect(DeviceCopyPolicy.subscribeVersion(device.version, resyncing: false) == device.version)
    }

    @Test("an edit's acknowledgement counts the device's own operations it carried, oldest first, while every earlier one is acknowledged: one the daemon keeps waiting is counted, one lost on the way stops the count")
    func acknowledgedByEdit() throws {
        let (daemon, device) = try Self.device(own: 3)
        let own = device.operations(since: daemon.version)
        #expect(own.count == 3)
        // The daemon keeps them waiting for their causes: its version counts none of them.
        let all = DeviceCopyPolicy.acknowledgedByEdit(own, version: daemon.version, acknowledged: daemon.version, local: device)
        #expect(all == device.version)
        #expect(DeviceCopyPolicy.toSend(device, acknowledged: all) == [], "none is sent again, none made again in a re-sync")
        // Sent ahead: the first was lost on the way, the others acknowledged: nothing counted,
        // so the first (and the others, harmlessly) go again.
        let ahead = DeviceCopyPolicy.acknowledgedByEdit(Array(own.dropFirst()), version: daemon.version, acknowledged: daemon.version, local: device)
        #expect(ahead == daemon.version)
        #expect(DeviceCopyPolicy.toSend(device, acknowledged: ahead)?.first?.id == own[0].id)
        let first = DeviceCopyPolicy.acknowledgedByEdit([own[0]], version: daemon.version, acknowledged: daemon.version, local: device)
        #expect(first[ReplicaID(1)] == own[0].lastID.counter)
        // Another operation under the same id (a re-sync made one since): not the one acknowledged.
        var other = daemon.fork(as: 1)
        let impostor = try other.insertItem(at: IndexPath(item: 1, section: 0), value: Data("other"))
        #expect(impostor.id == own[0].id && impostor != own[0])
        #expect(DeviceCopyPolicy.acknowledgedByEdit([impostor], version: daemon.version, acknowledged: daemon.version, local: device) == daemon.version)
    }
}
