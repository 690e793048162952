import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// One report for every receive (`ReceiveReport`): one operation, an array, an encoded batch and a
/// `LiveDocument` report the same counts and refusals for the same operations.
@Suite("ReceiveReport: every receive reports the same way")
struct ReceiveReportTests: ScenarioSupport {
    /// A history with a typed run, a delete run, a move and a value write, sent in an order that
    /// buffers two operations and duplicates one, plus one forged operation (an equivocation).
    private func delivery() throws -> (base: ListDocument, ops: [ListOperation], forged: ListOperation) {
        var author = try ListDocument.make(1, sections: [["a", "b"]])
        let base = author.fork(as: 2)
        var ops = try type(&author, "hello", at: 1)
        ops.append(try author.deleteItem(at: ip(0, 3)))
        ops.append(try author.deleteItem(at: ip(0, 2)))
        ops.append(try #require(try author.moveItem(from: ip(0, 0), to: ip(0, 3))))
        let last = try author.setValue(Data("B"), forItem: try #require(author.item("b")))
        var forged = ops[1]
        forged.kind = .setItemValue(ItemID(ops[0].id), Data("forged"))
        // The last operation first (buffered), one duplicate, the forged one after the real one.
        return (base, [last] + ops + [ops[2], forged], forged)
    }

    @Test("one at a time, as an array, encoded and through LiveDocument: the same report")
    func sameReportEveryWay() throws {
        let (base, ops, forged) = try delivery()
        var single = base, array = base, encoded = base
        var summed = ReceiveReport()
        for op in ops {
            do { summed.add(try single.receive(op)) } catch { summed.refused.append(error) }
        }
        let fromArray = array.receive(ops)
        let fromBytes = try encoded.receive(encoded: ListOperation.encode(ops))
        #expect(summed == fromArray, "\(summed) against \(fromArray)")
        #expect(fromBytes == fromArray, "\(fromBytes) against \(fromArray)")
        // What happened: every real operation applied (the first after its causes arrived), one
        // buffered, one duplicate, the forged one refused as an equivocation.
        #expect(fromArray.applied == ops.count - 2)
        #expect(fromArray.buffered == 1 && fromArray.duplicates == 1)
        #expect(fromArray.refused == [.equivocation(forged.id)])
        #expect(!fromArray.isSuccess)
        #expect(single.encodedState() == array.encodedState() && array.encodedState() == encoded.encodedState())
    }

    @Test("a single operation reports applied(woken:), buffered or duplicate, and throws when refused")
    func singleOperation() throws {
        let (base, ops, forged) = try delivery()
        var doc = base
        #expect(try doc.receive(ops[0]) == .buffered)
        #expect(try doc.receive(ops[1]) == .applied(woken: 1))
        #expect(try doc.receive(ops[1]) == .duplicate)
        for op in ops[2 ..< ops.count - 3] { _ = try doc.receive(op) }
        // The buffered value write waited for the move before it: that one wakes it.
        #expect(try doc.receive(ops[ops.count - 3]) == .applied(woken: 2))
        let before = doc.encodedState()
        #expect(throws: ApplyError.equivocation(forged.id)) { try doc.receive(forged) }
        #expect(doc.encodedState() == before, "a refused operation changed the document")
        #expect(ReceiveReport.applied(woken: 2).description == "2 applied")
    }
}
