import Foundation
import Testing
import ListSyncTestSupport
@testable import ListCRDT
import ListTable

/// Issue 47: a catch-up of many batches is one diff (`holdChanges()` … `publishHeldChanges()`),
/// and one that touches a large part of the list is one reload.
@Suite("LiveDocument: held change sets (catch-ups)")
struct HeldChangesTests {
    /// A remote replica's list of `n` items in one section, as operations in batches of `batch`.
    static func remoteBatches(items n: Int, batch: Int) throws -> (ListDocument, [[ListOperation]]) {
        var remote = ListDocument(replica: ReplicaID(1))
        try remote.insertSection(at: 0, value: Data("S".utf8))
        for i in 0..<n { try remote.insertItem(at: IndexPath(item: i, section: 0), value: Data("item \(i)".utf8)) }
        let ops = remote.operations
        return (remote, stride(from: 0, to: ops.count, by: batch).map { Array(ops[$0..<min(ops.count, $0 + batch)]) })
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("batches received while held send nothing; the publish is one change set from the snapshot shown, and it applies")
    func oneChangeSetPerCatchUp() async throws {
        var remote = try ListDocument.make(1, sections: [["a", "b", "c"]])
        let live = LiveDocument(remote.fork(as: 2))
        let shown = live.snapshot
        let stream = live.changes()
        live.holdChanges()
        #expect(live.holdsChanges)
        var received: [ChangeSet] = []
        for i in 0..<20 {
            let op = try remote.insertItem(at: IndexPath(item: 1, section: 0), value: Data("n\(i)"))
            received.append(live.receive(op).changes)
        }
        let move = try #require(try remote.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 22, section: 0)))
        received.append(live.receive(move).changes)
        #expect(received.allSatisfy { $0.isEmpty }, "nothing is diffed while held")
        #expect(live.snapshot == shown, "the snapshot stays the one shown")
        let published = live.publishHeldChanges()
        #expect(!live.holdsChanges)
        #expect(published == ChangeSet(from: shown, to: remote.snapshot()), "21 changes, under the reload threshold: row by row")
        #expect(try BatchUpdateApplier.apply(published, to: shown, dataSource: live.snapshot) == live.snapshot)
        #expect(live.snapshot == remote.snapshot())
        #expect(live.publishHeldChanges().isEmpty, "a second publish has nothing")
        live.close()
        var got: [ChangeSet] = []
        for await c in stream { got.append(c) }
        #expect(got == [published])
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("a catch-up that touches more rows than the threshold is one reload; a local edit while held publishes all so far")
    func largeCatchUpIsOneReload() throws {
        let (remote, batches) = try Self.remoteBatches(items: 3_000, batch: 64)
        let live = LiveDocument(ListDocument(replica: ReplicaID(2)))
        let shown = live.snapshot
        live.holdChanges()
        for b in batches { live.receive(b) }
        let published = live.publishHeldChanges()
        #expect(published == .reload && published.reloadsData && !published.hasNoTableChanges)
        #expect(try BatchUpdateApplier.apply(published, to: shown, dataSource: live.snapshot) == remote.snapshot())
        #expect(ChangeSet.reloadThreshold(rows: 3_000) == 1_000)
        #expect(ChangeSet.reloadThreshold(rows: 50) == 100 && ChangeSet.reloadThreshold(rows: 600) == 300)

        // Held again: a local edit made meanwhile reports the remote rows too, and the hold goes on.
        var other = remote.fork(as: 3)
        live.holdChanges()
        let before = live.snapshot
        live.receive(try other.deleteItem(at: IndexPath(item: 0, section: 0)))
        let edit = try live.edit { doc in try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("mine".utf8)) }
        #expect(edit.changes == ChangeSet(from: before, to: live.snapshot))
        #expect(edit.changes.deletedItems.count == 1 && edit.changes.insertedItems.count == 1)
        #expect(live.holdsChanges)
        #expect(live.publishHeldChanges().isEmpty)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("without change sets a hold does nothing: receives cost what the document's do, the snapshot is current")
    func holdWithoutChangeSets() throws {
        let (remote, batches) = try Self.remoteBatches(items: 500, batch: 50)
        let live = LiveDocument(withoutChangeSets: ListDocument(replica: ReplicaID(2)))
        live.holdChanges()
        for b in batches { #expect(live.receive(b).changes.isEmpty) }
        #expect(live.snapshot == remote.snapshot())
        #expect(live.publishHeldChanges().isEmpty)
    }
}
