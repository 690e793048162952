import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

/// A device copy's re-sync (``CopyResync``), the state machine SyncClient's copies and the
/// simulator's clients both keep: built from the catch-up, ready only once it holds what
/// `synced` said and every acknowledged edit of the device, then the unsent edits made again.
@Suite struct CopyResyncTests {
    @Test("refused: the catch-up from nothing builds the daemon's copy; ready at synced; the unsent edits are made again under new ids")
    func fromOperations() throws {
        let daemon = Fixture.typed(2, replica: 9)
        var device = daemon.fork(as: 1)
        let own = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("mine".utf8))
        var resync = CopyResync()
        let taken = resync.receive(daemon.operations)
        #expect(!resync.isActive && !taken, "not re-syncing: operations are the copy's")
        resync.begin(replica: ReplicaID(1), afterRefusal: true)
        #expect(resync.isActive && resync.afterRefusal)
        #expect(resync.outcome(local: device, acknowledged: daemon.version) == nil, "nothing received, no synced")
        let built = resync.receive(daemon.operations)
        #expect(built)
        #expect(resync.outcome(local: device, acknowledged: daemon.version) == nil, "synced not said yet")
        resync.synced(daemon.version)
        let outcome = try #require(resync.outcome(local: device, acknowledged: daemon.version))
        #expect(outcome.unsent.map(\.id) == [own.id])
        #expect(outcome.held == daemon.version)
        #expect(outcome.made.count == 1 && outcome.made[0].id != own.id, "made again after a refusal: a new identity")
        #expect(outcome.document.snapshot().sections[0].items.contains { $0.value == Data("mine".utf8) })
        resync.finish()
        #expect(!resync.isActive)
    }

    @Test("not ready while an edit of the device that a daemon acknowledged is missing from the daemon's copy (relayed later)")
    func waitsForAcknowledged() throws {
        let daemon = Fixture.typed(2, replica: 9)
        var device = daemon.fork(as: 1)
        let taken = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("taken".utf8))
        var acknowledged = daemon.version
        acknowledged.observe(taken.lastID)   // another daemon acknowledged it
        var resync = CopyResync()
        resync.begin(replica: ReplicaID(1), afterRefusal: true)
        _ = resync.receive(daemon.operations)
        resync.synced(daemon.version)
        #expect(resync.outcome(local: device, acknowledged: acknowledged) == nil)
        _ = resync.receive([taken])   // relayed to this daemon, then sent on
        let outcome = try #require(resync.outcome(local: device, acknowledged: acknowledged))
        #expect(outcome.unsent.isEmpty && outcome.made.isEmpty)
    }

    @Test("an acknowledged edit made before the snapshot's floor, which no compacted copy ever takes (a daemon left out of that floor took it and merged it back), is not waited for; one made after it still is")
    func partedEditNotWaitedFor() throws {
        var hub = Fixture.typed(2, replica: 9)
        var device = hub.fork(as: 1)
        let parted = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("parted".utf8))
        var acknowledged = hub.version
        acknowledged.observe(parted.lastID)   // a daemon no peer knew acknowledged it
        _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.compact(stable: hub.version)
        var resync = CopyResync()
        try resync.snapshot(hub.encodedSnapshot(), replica: ReplicaID(1))
        resync.synced(hub.version)
        let outcome = try #require(resync.outcome(local: device, acknowledged: acknowledged),
                                   "made before the floor and missing: it never comes as it is")
        #expect(outcome.unsent.isEmpty, "acknowledged: its daemon made it again, not the device")
        #expect(!outcome.document.version.contains(parted.id))
        // After the floor, acknowledged by another daemon and not relayed yet: waited for.
        var late = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(1))
        let after = try late.insertItem(at: IndexPath(item: 0, section: 0), value: Data("after".utf8))
        var ackAfter = hub.version
        ackAfter.observe(after.lastID)
        var waiting = CopyResync()
        try waiting.snapshot(hub.encodedSnapshot(), replica: ReplicaID(1))
        waiting.synced(hub.version)
        #expect(waiting.outcome(local: late, acknowledged: ackAfter) == nil)
    }

    @Test("a snapshot catch-up replaces what was built and waits for its synced; a snapshot that does not load is an error and changes nothing")
    func snapshot() throws {
        let daemon = Fixture.typed(3, replica: 9)
        var resync = CopyResync()
        #expect(throws: WireError.self) { try resync.snapshot([1, 2, 3], replica: ReplicaID(1)) }
        #expect(!resync.isActive)
        try resync.snapshot(daemon.encodedSnapshot(), replica: ReplicaID(1))
        #expect(resync.isActive && !resync.afterRefusal)
        #expect(resync.outcome(local: ListDocument(replica: ReplicaID(1)), acknowledged: VersionVector()) == nil)
        resync.synced(daemon.version)
        let outcome = try #require(resync.outcome(local: ListDocument(replica: ReplicaID(1)), acknowledged: VersionVector()))
        #expect(outcome.document.snapshot() == daemon.snapshot())
    }

    @Test("a peer link relays operations, and the stability table unless the peer refused it; nothing else")
    func peerRelays() {
        let ops = SyncMessage.operations(document: Fixture.document, batch: 0, operations: Fixture.typed(1).operations).encoded()
        let table = SyncMessage.stability(document: Fixture.document, from: ReplicaID(5), entries: [:]).encoded()
        let synced = SyncMessage.synced(document: Fixture.document, version: VersionVector()).encoded()
        #expect(PeerSession.relays(ops, sendsStability: false))
        #expect(PeerSession.relays(table, sendsStability: true) && !PeerSession.relays(table, sendsStability: false))
        #expect(!PeerSession.relays(synced, sendsStability: true) && !PeerSession.relays([], sendsStability: true))
    }

    @Test("a refusal for the floor waits for every later batch's answer; acted on only if edits are still unacknowledged; dropped with its connection")
    func refusalWaits() {
        var wait = RefusalWait()
        let atOnce = wait.refused(inFlight: 0)
        #expect(atOnce && !wait.isWaiting, "nothing else in flight: at once")
        let waits = !wait.refused(inFlight: 2)
        #expect(waits && wait.isWaiting)
        let early = wait.answered(inFlight: 1, unacknowledged: true)
        #expect(!early, "one batch still unanswered")
        let due = wait.answered(inFlight: 0, unacknowledged: true)
        #expect(due && !wait.isWaiting)
        _ = wait.refused(inFlight: 1)
        let taken = wait.answered(inFlight: 0, unacknowledged: false)
        #expect(!taken && !wait.isWaiting, "the later batch took every edit: no re-sync")
        _ = wait.refused(inFlight: 1)
        wait.reset()
        let afterReset = wait.answered(inFlight: 0, unacknowledged: true)
        #expect(!wait.isWaiting && !afterReset)
    }
}
