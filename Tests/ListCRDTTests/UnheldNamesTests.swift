import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncTestSupport

/// An operation that names an operation its copy counts but does not hold
/// (`Compaction/ListDocument+UnheldNames.swift`, Docs/Semantics.md §7, "An edit of an original the
/// copy counts"), and the batch's operations that wait on one refused so.
@Suite struct UnheldNamesTests {
    static func gap() throws -> (x: ListDocument, original: ListOperation, edit: ListOperation, device: ListDocument) {
        let made = try UnheldNameFixture.gap()
        #expect(made.x.version.contains(made.original.id) && !made.x.holdsExactly(made.original.id))
        return made
    }

    @Test("the ids an operation names: its entity, its origins' slots, what it saw; never a zero id")
    func namedIDs() throws {
        let (_, original, edit, device) = try Self.gap()
        #expect(edit.namedIDs == [original.id])
        var d = device
        let insert = try d.insertItem(at: IndexPath(item: 3, section: 0), value: Data("next".utf8))
        #expect(insert.namedIDs.contains(original.id), "its left origin is the original's slot")
        let delete = try d.deleteItem(ItemID(original.id))
        #expect(delete.namedIDs.contains(original.id))
        #expect(!insert.namedIDs.contains { $0.counter == 0 })
    }

    @Test("an edit of an operation the copy counts but does not hold names it; one of what the copy holds names nothing unheld; a parted range names one the version does not count")
    func unheldName() throws {
        let (x, original, edit, device) = try Self.gap()
        #expect(x.unheldName(of: edit) == original.id)
        var d = device
        let held = try d.setValue(Data("a2".utf8), forItem: d.snapshot().sections[0].items[0].id)
        #expect(x.unheldName(of: held) == nil)
        // A copy whose version does not count the original: named only by a parted range.
        var y = try ListDocument.make(1, sections: [["a", "b"]]).fork(as: 5)
        #expect(y.unheldName(of: edit) == nil)
        #expect(y.unheldName(of: edit, isParted: { $0 == original.id }) == original.id)
        _ = try y.insertItem(at: IndexPath(item: 0, section: 0), value: Data("y".utf8))
    }

    @Test("the batch's operations waiting on a refused one are taken out of the buffer, through each other; another sender's waiting operation stays")
    func takeWaitingOfTheBatch() throws {
        var (x, original, edit, device) = try Self.gap()
        var d = device
        let second = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("second".utf8))
        let third = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("third".utf8))
        // Another replica's edit waiting for a cause not here yet.
        var six = x.fork(as: 6)
        let sixFirst = try six.insertItem(at: IndexPath(item: 0, section: 0), value: Data("six 1".utf8))
        let sixSecond = try six.insertItem(at: IndexPath(item: 1, section: 0), value: Data("six 2".utf8))
        #expect(try x.receive(sixSecond) == .buffered)
        let report = x.receive([edit, second, third])
        #expect(report.refused.count == 1, "the edit of the original is malformed here: \(report.refused)")
        #expect(x.pendingCount == 3)
        let taken = x.takeWaiting([edit, second, third], on: [edit.id])
        #expect(taken.map(\.id) == [second.id, third.id])
        #expect(x.pendingCount == 1 && x.isWaiting(sixSecond))
        #expect(x.takeWaiting([sixSecond], on: [edit.id]).isEmpty)
        #expect(try x.receive(sixFirst) == .applied(woken: 2))
        #expect(x.pendingCount == 0)
        try x.checkInvariants()
        _ = original
    }
}
