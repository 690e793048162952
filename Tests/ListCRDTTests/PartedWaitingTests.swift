import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT

/// A copy that keeps operations waiting for causes another daemon parted in a merge
/// back (`Compaction/ListDocument+PartedWaiting.swift`, Docs/Semantics.md §7, "Waiting edits on
/// parted originals"): it makes them again itself, as new operations, and keeps waiting only
/// what waits for something else.
@Suite struct PartedWaitingTests {
    /// X (replica 2) compacted; replica 3's original `parted` (an item inserted at the end) never
    /// reaches it; replica 4 took the original and made `edits` on it: an item inserted after
    /// the original's item, then item "a"'s value written again, then the original's value.
    func waitingOnParted() throws -> (x: ListDocument, parted: ListOperation, edits: [ListOperation]) {
        let a = try ListDocument.make(1, sections: [["a", "b"]])
        var x = a.fork(as: 2)
        _ = try x.insertItem(at: IndexPath(item: 2, section: 0), value: Data("x".utf8))
        try x.compact(stable: x.version)
        var left = a.fork(as: 3)
        let parted = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
        var device = left.fork(as: 4)
        var edits: [ListOperation] = []
        edits.append(try device.insertItem(at: IndexPath(item: 3, section: 0), value: Data("edit".utf8)))
        edits.append(try device.setValue(Data("a2".utf8), forItem: device.snapshot().sections[0].items[0].id))
        edits.append(try device.setValue(Data("original2".utf8), forItem: ItemID(parted.id)))
        for op in edits { #expect(try x.receive(op) == .buffered) }
        return (x, parted, edits)
    }

    /// Replica 6's two edits made after X's floor; the second received, waiting for the first.
    static func sixWaiting(in x: inout ListDocument) throws -> (first: ListOperation, second: ListOperation) {
        var six = try ListDocument(snapshot: x.encodedSnapshot(), replica: ReplicaID(6))
        let first = try six.insertItem(at: IndexPath(item: 0, section: 0), value: Data("six 1".utf8))
        let second = try six.insertItem(at: IndexPath(item: 1, section: 0), value: Data("six 2".utf8))
        #expect(try x.receive(second) == .buffered)
        return (first, second)
    }

    @Test("waiting operations on a parted cause are taken out of the buffer and made again as this copy's own, after the others' order; an edit of the parted entity itself is dropped")
    func madeAgain() throws {
        var (x, parted, edits) = try waitingOnParted()
        #expect(x.pendingCount == 3)
        #expect(!x.waitsOnParted { _ in false })
        #expect(x.waitsOnParted { $0 == parted.id })
        let version = x.version
        let made = x.remakeWaiting(onParted: { $0 == parted.id }, remakes: { _ in true })
        let merge = try #require(made)
        #expect(merge.parted.map(\.id) == edits.map(\.id))
        #expect(merge.dropped.isEmpty)
        #expect(merge.made.count == 2, "the insert and the value of a; the original's value names an item this copy never shows")
        #expect(merge.made.allSatisfy { $0.id.replica == ReplicaID(2) && !version.contains($0.id) })
        #expect(x.pendingCount == 0)
        let values = x.snapshot().sections[0].items.map { String(decoding: $0.value, as: UTF8.self) }
        #expect(values.contains("edit") && values.contains("a2") && !values.contains("a"), "\(values)")
        try x.checkInvariants()
        // Another copy takes what was made again.
        let other = try ListDocument(snapshot: x.encodedSnapshot(), replica: ReplicaID(5))
        #expect(other.pendingCount == 0)
        #expect(other.snapshot() == x.snapshot())
    }

    @Test("those remakes does not name are dropped, not made again; a waiting operation on another cause stays waiting")
    func droppedAndKept() throws {
        var (x, parted, edits) = try waitingOnParted()
        let (first, second) = try Self.sixWaiting(in: &x)
        let made = x.remakeWaiting(onParted: { $0 == parted.id }, remakes: { $0.id != edits[0].id })
        let merge = try #require(made)
        #expect(merge.dropped.map(\.id) == [edits[0].id])
        #expect(Set(merge.parted.map(\.id)) == Set(edits.map(\.id)))
        #expect(x.pendingCount == 1, "six's second edit still waits")
        let woke = try x.receive(first)
        #expect(woke == .applied(woken: 2), "\(woke)")
        #expect(x.pendingCount == 0)
        let values = x.snapshot().sections[0].items.map { String(decoding: $0.value, as: UTF8.self) }
        #expect(!values.contains("edit") && values.contains("a2") && values.contains("six 2"), "\(values)")
        try x.checkInvariants()
    }

    @Test("a copy without a floor makes them again too (no copy ever takes the parted cause, so it never comes); nothing when no waiting operation is on a parted one")
    func withoutFloorAndUnparted() throws {
        let (x, parted, edits) = try waitingOnParted()
        var unfloored = try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 2)
        for op in edits { #expect(try unfloored.receive(op) == .buffered) }
        #expect(unfloored.waitsOnParted { $0 == parted.id })
        let made = unfloored.remakeWaiting(onParted: { $0 == parted.id }, remakes: { _ in true })
        let merge = try #require(made)
        #expect(merge.parted.map(\.id) == edits.map(\.id) && merge.made.count == 2)
        #expect(unfloored.pendingCount == 0)
        let values = unfloored.snapshot().sections[0].items.map { String(decoding: $0.value, as: UTF8.self) }
        #expect(values.contains("edit") && values.contains("a2"), "\(values)")
        try unfloored.checkInvariants()
        var same = x
        let unparted = same.remakeWaiting(onParted: { $0.replica == ReplicaID(9) }, remakes: { _ in true })
        #expect(unparted == nil)
        #expect(same.pendingCount == 3)
    }

    @Test("a device's copy told the ranges drops what waits on a parted original and the original itself, makes nothing again, shows the same, and keeps waiting what waits for something else")
    func deviceDropsWithoutMakingAgain() throws {
        var (x, parted, edits) = try waitingOnParted()
        let (first, second) = try Self.sixWaiting(in: &x)
        let shown = x.snapshot()
        let version = x.version
        #expect(!x.holdsWaitingOnParted { _ in false })
        #expect(x.holdsWaitingOnParted { $0 == parted.id })
        let dropped = x.dropWaiting(onParted: { $0 == parted.id })
        #expect(Set(dropped.map(\.id)) == Set(edits.map(\.id)))
        #expect(x.snapshot() == shown && x.version == version, "nothing made again, nothing shown differently")
        #expect(x.pendingCount == 1 && x.isWaiting(second))
        #expect(x.dropWaiting(onParted: { $0 == parted.id }).isEmpty)
        // A waiting operation a range names is dropped though it waits for nothing parted.
        var named = try waitingOnParted().x
        #expect(named.holdsWaitingOnParted { $0 == edits[2].id })
        #expect(named.dropWaiting(onParted: { $0 == edits[2].id }).map(\.id) == [edits[2].id])
        #expect(named.pendingCount == 2)
        #expect(try x.receive(first) == .applied(woken: 2))
        try x.checkInvariants()
    }
}
