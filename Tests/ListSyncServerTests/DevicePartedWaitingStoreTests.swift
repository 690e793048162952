import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport
@testable import ListSyncClient

/// `SyncClient` told what the daemons parted drops what its copy keeps waiting on a parted
/// original, in memory and in its store (Docs/Semantics.md §7, "A device drops what waits on
/// parted originals"), with no daemon: the copy opened again from the device's folder waits for
/// nothing.
@Suite struct DevicePartedWaitingStoreTests {
    @Test("a device's copy keeping waiting an edit made on a parted original drops it once told the ranges, and opened again from its folder it still waits for nothing; dropped in memory alone, the store would keep it waiting")
    func droppedDurably() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let folder = dir.path + "/phone"
        for writesStore in [true, false] {
            let client = try SyncClient(folder: folder + "\(writesStore)", server: nil)
            let id = try await client.create(name: "board", sections: ["S"])
            let base = try await client.open(id).document
            var left = base.fork(as: 3)
            let original = try left.insertItem(at: IndexPath(item: 0, section: 0), value: Data("original".utf8))
            var other = left.fork(as: 4)
            let edit = try other.insertItem(at: IndexPath(item: 1, section: 0), value: Data("on it".utf8))
            var ranges = PartedRanges()
            ranges.insert(original.id.counter...original.id.counter, of: original.id.replica)
            let waiting = try await client.takeWaiting(id, [edit], told: ranges, writesStore: writesStore)
            #expect(waiting == (1, 0), "kept waiting, then dropped in memory")
            await client.close()
            let again = try SyncClient(folder: folder + "\(writesStore)", server: nil)
            let reopened = try await again.open(id).document
            #expect(reopened.pendingCount == (writesStore ? 0 : 1))
            await again.close()
        }
    }
}

extension SyncClient {
    /// Receives `ops` into `id`'s copy and its store as a catch-up would, then tells its machine
    /// `ranges` and does what it decides (`writesStore` false: drops them in memory only, as a
    /// driver without the store write would). Returns the waiting count before and after.
    func takeWaiting(_ id: DocumentID, _ ops: [ListOperation], told ranges: PartedRanges,
                     writesStore: Bool) async throws -> (Int, Int) {
        let copy = try #require(copies[id])
        _ = copy.live.receive(ops)
        try await copy.store.append(ops)
        let before = copy.live.document.pendingCount
        let actions = copy.machine.learnedParted(ranges, document: copy.live.document)
        #expect(actions.count == 1)
        if writesStore {
            act(actions, for: copy)
        } else {
            copy.live.dropWaiting(onParted: copy.machine.parted.contains)
        }
        return (before, copy.live.document.pendingCount)
    }
}
