// Documents and batches made with the real editing API and encoders: seeds for the harnesses.
import Foundation
import ListCRDT

/// Two replicas' edits: sections, items, moves, values and deletes, so that operations naming
/// replicas 1 and 2 with small counters find their dependencies.


enum FuzzDocuments {
    static func shared() -> ListDocument {
        var a = ListDocument(replica: ReplicaID(1))
        var b = ListDocument(replica: ReplicaID(2))
        func text(_ s: String) -> Data { Data(s.utf8) }
        do {
            var ops: [ListOperation] = []
            ops.append(try a.insertSection(at: 0, value: text("todo")))
            ops.append(try a.insertSection(at: 1, value: text("done")))
            for (i, word) in ["milk", "eggs", "tea"].enumerated() {
                ops.append(try a.insertItem(at: IndexPath(item: i, section: 0), value: text(word)))
            }
            _ = b.receive(ops)
            var fromB: [ListOperation] = []
            fromB.append(try b.insertItem(at: IndexPath(item: 0, section: 1), value: text("bread")))
            if let m = try b.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 1, section: 1)) { fromB.append(m) }
            fromB.append(try b.setValue(text("first"), forSection: try b.sectionID(at: 0)))
            var fromA: [ListOperation] = []
            fromA.append(try a.deleteItem(at: IndexPath(item: 2, section: 0)))
            if let m = try a.moveSection(from: 1, to: 0) { fromA.append(m) }
            _ = a.receive(fromB)
            _ = b.receive(fromA)
        } catch {
            fuzzFailure("building the shared document: \(error)")
        }
        return a
    }

    /// Batches the real encoder writes: the shared history, parts of it, and new edits on it
    /// (typed runs, delete runs, move runs, section deletes, inserts with fields).
    static func batches() -> [[ListOperation]] {
        let doc = shared()
        let history = doc.operations
        var out: [[ListOperation]] = [history, Array(history.prefix(3)), Array(history.suffix(3))]
        var c = doc
        var edits: [ListOperation] = []
        do {
            for i in 0..<6 { edits.append(try c.insertItem(at: IndexPath(item: i, section: 0), value: Data([UInt8(97 + i)]))) }
            out.append(edits); edits = []
            for _ in 0..<3 { edits.append(try c.deleteItem(at: IndexPath(item: 0, section: 0))) }
            out.append(edits); edits = []
            for _ in 0..<3 {
                if let m = try c.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0)) { edits.append(m) }
            }
            out.append(edits); edits = []
            let ids = try c.itemIDs(inSection: 0)
            edits.append(try c.moveItems(Array(ids.prefix(2)), to: IndexPath(item: 0, section: 1)))
            edits.append(try c.setValue(Data("x".utf8), forItem: ids[0]))
            edits.append(try c.deleteSection(at: 1))
            out.append(edits); edits = []
            // Fields: an item and a section inserted with theirs (wire formats 4 and 5), a write.
            edits.append(try c.insertItem(at: IndexPath(item: 0, section: 0), fields: ["title": .set(.string("t")), "n": .increment(2)]))
            let section = try c.insertSection(at: 0, value: Data("s".utf8), fields: ["color": .set(.string("red")), "tags": .insert(["a"])])
            edits.append(section)
            edits.append(try c.writeFields(["color": .remove], ofSection: SectionID(section.id)))
            out.append(edits)
        } catch {
            fuzzFailure("building seed edits: \(error)")
        }
        return out
    }
}
