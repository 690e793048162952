import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT

/// Docs/Semantics.md §3.8, "A history its author left": an operation of another author that waits
/// for an original its author skipped (ListDocument+SkippedCauses.swift) waits on when the
/// author's later counters arrive, until a daemon names the original parted.
@Suite struct SkippedCauseTests {
    /// Replica 3 makes `x`; its other history (it re-synced without `x`) goes on under later
    /// counters with `went`. Replica 2 took `x` where it was held and inserted `w` after it.
    private func scene() throws -> (base: ListDocument, x: ListOperation, w: ListOperation, fours: [ListOperation], went: ListOperation) {
        var base = ListDocument(replica: ReplicaID(100))
        try base.insertSection(at: 0)
        var left = base.fork(as: 3)
        let x = try left.insertItem(atRow: 0, inSection: 0, value: Data("x"))
        var author = base.fork(as: 2)
        try author.receive(x)
        let w = try author.insertItem(atRow: 1, inSection: 0, value: Data("w"))
        #expect(w.deps.ids.contains(x.id))
        var four = base.fork(as: 4)
        var fours: [ListOperation] = []
        for k in 0..<6 { fours.append(try four.insertItem(atRow: 0, inSection: 0, value: Data("d\(k)"))) }
        var went = base.fork(as: 3)
        went.receive(fours)
        let wentOn = try went.insertItem(atRow: 0, inSection: 0, value: Data("went on"))
        #expect(wentOn.id.counter > x.id.counter && !wentOn.deps.ids.contains(x.id))
        return (base, x, w, fours, wentOn)
    }

    private static func values(_ doc: ListDocument) -> [Data] { doc.snapshot().sections[0].items.map(\.value) }

    /// A copy that took `w` (waiting for `x`), then replica 3's later history.
    private func waitingCopy(_ s: (base: ListDocument, x: ListOperation, w: ListOperation, fours: [ListOperation], went: ListOperation),
                             variant: EngineVariant = .correct) throws -> ListDocument {
        var hub = s.base.fork(as: 9)
        hub.variant = variant
        hub.receive(s.fours)
        #expect(try hub.receive(s.w) == .buffered)
        _ = try hub.receive(s.went)
        #expect(hub.version.contains(s.x.id) && !hub.holdsExactly(s.x.id))
        return hub
    }

    @Test("§3.8 an edit on another author's skipped original waits on when the author's later counters wake it; dropped without the rule")
    func waitsOnWhenWoken() throws {
        let s = try scene()
        let hub = try waitingCopy(s)
        #expect(hub.pendingOperations == [s.w])
        #expect(hub.droppedOperations.isEmpty)
        #expect(!Self.values(hub).contains(Data("w")))
        // Without the rule the acknowledged edit is gone.
        let broken = try waitingCopy(s, variant: .dropsWokenOnSkippedCause)
        #expect(broken.pendingCount == 0 && broken.droppedOperations.map(\.operation) == [s.w])
        // Later operations of the same replica do not hand it back either.
        var more = hub
        var four = s.base.fork(as: 4)
        four.receive(s.fours)
        _ = try more.receive(try four.insertItem(atRow: 0, inSection: 0, value: Data("later")))
        #expect(more.pendingOperations == [s.w] && more.droppedOperations.isEmpty)
    }

    @Test("§7 the waiting edit is made again once its cause is named parted (a daemon), or dropped (a device)")
    func madeAgainOrDroppedWhenNamed() throws {
        let s = try scene()
        var daemon = try waitingCopy(s)
        let remade = daemon.remakeWaiting(onParted: { $0 == s.x.id }, remakes: { _ in true })
        let merge = try #require(remade)
        #expect(merge.parted.map(\.id) == [s.w.id] && merge.made.count == 1 && merge.dropped.isEmpty)
        #expect(daemon.pendingCount == 0 && Self.values(daemon).contains(Data("w")))
        var device = try waitingCopy(s)
        #expect(device.dropWaiting(onParted: { $0 == s.x.id }).map(\.id) == [s.w.id])
        #expect(device.pendingCount == 0)
    }

    @Test("§3.8 rebuilding the causal buffer (another waiting edit dropped) keeps the edit parked on a skipped cause")
    func keptWhenTheBufferIsRebuilt() throws {
        let s = try scene()
        var hub = try waitingCopy(s)
        // Another waiting edit, on an operation of replica 5 that never comes.
        var five = s.base.fork(as: 5)
        let never = try five.insertItem(atRow: 0, inSection: 0, value: Data("never"))
        let onNever = try five.insertItem(atRow: 0, inSection: 0, value: Data("on never"))
        var other = s.base.fork(as: 6)
        try other.receive(never)
        let v = try other.insertItem(atRow: 0, inSection: 0, value: Data("v"))
        _ = onNever
        #expect(try hub.receive(v) == .buffered)
        #expect(hub.dropWaiting(onParted: { $0 == never.id }).map(\.id) == [v.id])
        #expect(hub.pendingOperations == [s.w])
        var broken = try waitingCopy(s)
        broken.variant = .dropsWokenOnSkippedCause
        #expect(try broken.receive(v) == .buffered)
        _ = broken.dropWaiting(onParted: { $0 == never.id })
        #expect(broken.pendingCount == 0)
    }
}
