import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport

/// A peer's floor that counts a waiting edit it never held (Docs/Semantics.md §7, "A floor that
/// counts what it skipped"), with no socket: the left-out daemon's core keeps device 3's field
/// write waiting for its cause, and the peer's snapshot says its floor skipped it; the core merges
/// back and makes it again. With `DocumentCore.Variant.countsSkippedAsHeld` (the floor taken for
/// held, as before) the core takes the copy for held by the snapshot, and the write is lost.
@Suite struct FloorSkippedCoreTests {
    static func core(variant: DocumentCore.Variant = .correct) throws -> (core: DocumentCore, hub: ListDocument, snapshot: ListDocument, p: ListOperation, w: ListOperation) {
        let (hub, parted, p, w, _) = try FloorSkippedFixture.scene()
        var core = DocumentCore(id: PeerMergeBackTests.doc, name: "n", epoch: 7, document: parted)
        core.variant = variant
        let snapshot = try ListDocument(snapshot: hub.encodedSnapshot(), replica: parted.replica)
        return (core, hub, snapshot, p, w)
    }

    @Test("the left-out core merges back onto a snapshot whose floor skipped its waiting edit: made again as its own, named in its parted ranges, taken by the peer")
    func waitingEditMadeAgain() throws {
        var (core, hub, snapshot, p, w) = try Self.core()
        #expect(!snapshot.floorSkipped.isEmpty)
        #expect(!core.isHeld(by: snapshot), "the snapshot lacks the waiting edit")
        let (merged, merge) = try #require(core.mergeBack(snapshot))
        #expect(merge.parted.map(\.id) == [w.id] && merge.dropped.isEmpty && merge.made.count == 1)
        _ = core.replace(with: merged, parting: merge)
        #expect(core.document.fields(of: ItemID(p.id))["title"] == .value(.string("T")))
        #expect(core.partedRanges.contains(w.id), "devices learn that w was parted")
        var peer = hub
        #expect(peer.receive(merge.made).refused.isEmpty)
        #expect(peer.fields(of: ItemID(p.id)) == core.document.fields(of: ItemID(p.id)) && peer.rows == core.document.rows)
    }

    @Test("with the floor taken for held (DocumentCore.Variant.countsSkippedAsHeld) the core takes its copy for held by the snapshot: nothing is merged back and the acknowledged write is on no copy")
    func floorTakenForHeldLosesIt() throws {
        let (core, _, snapshot, p, _) = try Self.core(variant: .countsSkippedAsHeld)
        #expect(core.isHeld(by: snapshot), "the old check: the driver replaces the copy by the snapshot")
        #expect(core.mergeBack(snapshot) == nil)
        #expect(snapshot.fields(of: ItemID(p.id))["title"] == nil)
    }
}
