import Foundation
import ListCRDT

/// A copy whose version counts an operation it does not hold (Docs/Semantics.md §7, "An edit of
/// an original the copy counts"), for the tests of ListCRDT and of the daemon's core.
public enum UnheldNameFixture {
    /// X (replica 2) took replica 3's edit made again after a re-sync under counter 10 (its
    /// author had seen replica 9's six operations), so X's version counts 3:10 though it holds
    /// only 10@3; replica 3's `original` 4@3, an item, is held only by `device` (replica 4),
    /// which made `edit` on it: the original's value written again.
    public static func gap() throws -> (x: ListDocument, original: ListOperation, edit: ListOperation, device: ListDocument) {
        let a = try ListDocument.make(1, sections: [["a", "b"]])
        var x = a.fork(as: 2)
        var left = a.fork(as: 3)
        let original = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
        var device = left.fork(as: 4)
        let edit = try device.setValue(Data("original2".utf8), forItem: ItemID(original.id))
        var nine = a.fork(as: 9)
        var remade = a.fork(as: 3)
        for k in 0..<6 {
            let op = try nine.insertItem(at: IndexPath(item: 0, section: 0), value: Data("nine \(k)".utf8))
            _ = try remade.receive(op)
            _ = try x.receive(op)
        }
        let again = try remade.insertItem(at: IndexPath(item: 0, section: 0), value: Data("made again".utf8))
        precondition(again.id.counter > original.id.counter, "made again as \(again.id)")
        _ = try x.receive(again)
        return (x, original, edit, device)
    }
}
