import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// A compacted daemon that keeps a device's edits waiting for causes another daemon parted in a
/// merge back (Docs/Semantics.md §7, "Waiting edits on parted originals"), with no socket: once
/// it holds that daemon's table, its policy says so (``DocumentHostPolicy/Action/remakeParted``)
/// and the core makes them again as its own; with `DocumentCore.Variant.keepsPartedWaiting` they
/// wait for ever.
@Suite struct PartedWaitingCoreTests {
    static let roamer = SubscriberID(9)

    /// X compacted, Y merged back and parted its device's originals; a device that took them at
    /// Y made an edit on them and sent it to X, which keeps it waiting and acknowledges it.
    static func waitingAtX(variant: DocumentCore.Variant = .correct) throws -> (x: DocumentCore, y: DocumentCore, edit: ListOperation) {
        let parted = try PeerPartedTests.partedAtY()
        // X as it is read again from its store: it never had Y's originals relayed (Y was not
        // shown to it), so it refused none of them.
        let copy = try ListDocument(snapshot: parted.x.document.encodedSnapshot(), replica: PeerMergeBackTests.x)
        var coreX = DocumentCore(id: PeerMergeBackTests.doc, name: "n", epoch: 7, document: copy)
        coreX.variant = variant
        #expect(coreX.document.historyFloor != nil)
        _ = coreX.subscribe(PeerMergeBackTests.yAtX, epoch: 7, version: coreX.document.version)
        var device = parted.device
        let edit = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("on the originals".utf8))
        _ = coreX.subscribe(Self.roamer, epoch: 7, version: coreX.document.version)
        let answer = PeerMergeBackTests.answer(PeerMergeBackTests.send([edit], from: Self.roamer, to: &coreX), to: Self.roamer)
        guard case .ack? = answer else { throw PeerMergeBackTests.Failure("X did not acknowledge the edit: \(String(describing: answer))") }
        #expect(coreX.document.pendingCount == 1, "kept waiting for Y's originals")
        return (coreX, parted.y, edit)
    }

    @Test("once X holds Y's table, its policy makes the edit waiting on Y's parted originals again as X's own: nothing waits, X's entry parts the original, it is acknowledged as held if sent again; with keepsPartedWaiting it waits for ever")
    func madeAgainOnceTheTableCame() throws {
        var (coreX, coreY, edit) = try Self.waitingAtX()
        let rule = CompactionRule(retireAfter: 1_000, minOperations: 1, interval: 0, gossipInterval: 10)
        var policy = DocumentHostPolicy(snapshotLogBytes: 1 << 20, snapshotBytes: 0, compaction: rule)
        #expect(!coreX.waitsOnParted, "X has not heard of Y's merge back")
        #expect(!policy.handle(.tick, core: &coreX, stabilityNow: 3, now: 3).contains(.remakeParted))
        let actions = policy.handle(.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: coreY.stability.peers.entries),
                                    core: &coreX, stabilityNow: 4, now: 4)
        #expect(actions.contains(.remakeParted))
        let (remade, merge) = try #require(coreX.remakePartedWaiting())
        #expect(merge.parted.map(\.id) == [edit.id] && merge.dropped.isEmpty && merge.made.count == 1)
        #expect(merge.made[0].id.replica == PeerMergeBackTests.x)
        _ = coreX.replace(with: remade, parting: merge)
        #expect(coreX.document.pendingCount == 0 && !coreX.waitsOnParted)
        #expect(coreX.document.snapshot().sections[0].items.contains { $0.value == Data("on the originals".utf8) })
        #expect(coreX.stability.peers.entries[PeerMergeBackTests.x]?.parted.contains(edit.id) == true,
                "X's entry says it parted the original")
        // The device sends it again (its acknowledgement lost): held, nothing applied.
        _ = coreX.subscribe(Self.roamer, epoch: 7, version: coreX.document.version)
        let again = PeerMergeBackTests.answer(PeerMergeBackTests.send([edit], from: Self.roamer, to: &coreX, batch: 6), to: Self.roamer)
        guard case .ack? = again else { throw PeerMergeBackTests.Failure("sent again: \(String(describing: again))") }
        #expect(coreX.document.pendingCount == 0)

        var (oldX, oldY, _) = try Self.waitingAtX(variant: .keepsPartedWaiting)
        var oldPolicy = DocumentHostPolicy(snapshotLogBytes: 1 << 20, snapshotBytes: 0, compaction: rule)
        let old = oldPolicy.handle(.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: oldY.stability.peers.entries),
                                   core: &oldX, stabilityNow: 4, now: 4)
        #expect(!old.contains(.remakeParted) && oldX.remakePartedWaiting() == nil)
        #expect(oldX.document.pendingCount == 1, "without the rule it waits for ever")
        _ = oldY
    }
}
