import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §2: the effect of each local operation, checked against a plain array model, and
/// replayed on a second replica (which must converge).
@Suite("§2 local operations")
struct LocalOperationTests: ScenarioSupport {
    // MARK: Helpers


    /// A replica that saw `base` receives `op` and must show what `author` shows.
    private func replay(_ op: ListOperation, on base: ListDocument, author: ListDocument,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        var other = base
        let outcome = try other.receive(op)
        #expect(outcome == .applied(woken: 1), sourceLocation: sourceLocation)
        try valid(other, sourceLocation: sourceLocation)
        expectConverged([author, other], sourceLocation: sourceLocation)
    }

    /// The model of UITableView's `moveRowAt`: remove the row, then insert it at the destination.
    private func modelMove(_ rows: [[String]], from: IndexPath, to: IndexPath) -> [[String]] {
        var m = rows
        let v = m[from.section].remove(at: from.item)
        m[to.section].insert(v, at: to.item)
        return m
    }

    // MARK: Inserts

    @Test("§2 insert section at an index makes a new identity at that place with its value")
    func insertSection() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        var ops: [ListOperation] = []
        ops.append(try doc.insertSection(at: 0, value: Data("B")))
        ops.append(try doc.insertSection(at: 0, value: Data("A")))
        ops.append(try doc.insertSection(at: 2, value: Data("D")))
        ops.append(try doc.insertSection(at: 2, value: Data("C")))
        try valid(doc)
        #expect(doc.sectionValues == ["A", "B", "C", "D"])
        #expect(doc.sectionIDs == [ops[1], ops[0], ops[3], ops[2]].map { SectionID($0.id) })
        #expect(Set(ops.map(\.id)).count == 4)
        #expect(doc.operationCount == 4)
        for (k, op) in ops.enumerated() {
            #expect(doc.value(of: SectionID(op.id))?.string == ["B", "A", "D", "C"][k])
            guard case .insertSection = op.kind else { Issue.record("not an insertSection: \(op)"); continue }
        }
        var other = ListDocument(replica: ReplicaID(2))
        other.receive(ops)
        try valid(other)
        expectConverged([doc, other])
    }

    @Test("§2 insert item at an index path makes a new identity at that place with its value")
    func insertItem() throws {
        var doc = try ListDocument.make(1, sections: [["a", "c"], []])
        let base = doc
        let op = try doc.insertItem(at: ip(0, 1), value: Data("b"))
        try valid(doc)
        #expect(doc.rows == [["a", "b", "c"], []])
        #expect(doc.item("b") == ItemID(op.id))
        #expect(doc.indexPath(of: ItemID(op.id)) == ip(0, 1))
        #expect(doc.value(of: ItemID(op.id))?.string == "b")
        try replay(op, on: base, author: doc)

        let base2 = doc
        let op2 = try doc.insertItem(at: ip(1, 0), value: Data("x"))
        let op3 = try doc.insertItem(at: ip(0, 3), value: Data("d"))
        try valid(doc)
        #expect(doc.rows == [["a", "b", "c", "d"], ["x"]])
        var other = base2
        other.receive([op2, op3])
        try valid(other)
        expectConverged([doc, other])
    }

    // MARK: Deletes

    @Test("§2 delete item removes exactly that identity; its value stays readable")
    func deleteItem() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]])
        let base = doc
        let b = try #require(doc.item("b"))
        let op = try doc.deleteItem(at: ip(0, 1))
        try valid(doc)
        #expect(doc.rows == [["a", "c"], ["x"]])
        #expect(!doc.contains(b))
        #expect(doc.indexPath(of: b) == nil)
        #expect(doc.value(of: b)?.string == "b")
        if case let .deleteItem(id, _) = op.kind { #expect(id == b) } else { Issue.record("kind \(op.kind)") }
        try replay(op, on: base, author: doc)

        let x = try #require(doc.item("x"))
        let base2 = doc
        let op2 = try doc.deleteItem(x)
        try valid(doc)
        #expect(doc.rows == [["a", "c"], []])
        try replay(op2, on: base2, author: doc)
    }

    @Test("§2 delete section removes the section and every item in it")
    func deleteSection() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        let base = doc
        let op = try doc.deleteSection(at: 1)
        try valid(doc)
        #expect(doc.rows == [["a", "b"], ["p"]])
        #expect(doc.sectionValues == ["A", "C"])
        let secB = try #require(base.sectionIDs.dropFirst().first)
        #expect(!doc.contains(secB))
        #expect(doc.index(of: secB) == nil)
        #expect(doc.value(of: secB)?.string == "B")
        if case let .deleteSection(id, _, seen) = op.kind {
            #expect(id == secB)
            #expect(Set(seen.map(\.item)) == Set([base.item("x")!, base.item("y")!]))
        } else { Issue.record("kind \(op.kind)") }
        try replay(op, on: base, author: doc)

        let base2 = doc
        let secA = doc.sectionIDs[0]
        let op2 = try doc.deleteSection(secA)
        try valid(doc)
        #expect(doc.rows == [["p"]])
        try replay(op2, on: base2, author: doc)
    }

    // MARK: Moves of one item (UITableView moveRowAt)

    @Test("§2 moveItem within a section has UITableView moveRowAt semantics, for every from and to")
    func moveWithinSectionExhaustive() throws {
        let start = [["a", "b", "c", "d", "e"], ["x"]]
        let base = try ListDocument.make(1, sections: start)
        for from in 0..<5 {
            for to in 0..<5 {
                var doc = base
                let op = try doc.moveItem(from: ip(0, from), to: ip(0, to))
                try valid(doc)
                if from == to {
                    #expect(op == nil)
                    #expect(doc.encodedState() == base.encodedState())
                    continue
                }
                let expected = modelMove(start, from: ip(0, from), to: ip(0, to))
                #expect(doc.rows == expected, "move \(from) -> \(to)")
                #expect(doc.operationCount == base.operationCount + 1)
                try replay(try #require(op), on: base, author: doc)
            }
        }
    }

    @Test("§2 moveItem downwards within a section: [a b c d] 0 -> 2 gives [b c a d]")
    func moveDown() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        let base = doc
        let a = try #require(doc.item("a"))
        let op = try #require(try doc.moveItem(from: ip(0, 0), to: ip(0, 2)))
        try valid(doc)
        #expect(doc.rows == [["b", "c", "a", "d"]])
        #expect(doc.indexPath(of: a) == ip(0, 2))
        #expect(doc.item("a") == a, "a move keeps the identity")
        try replay(op, on: base, author: doc)
    }

    @Test("§2 moveItem upwards within a section: [a b c d] 3 -> 1 gives [a d b c]")
    func moveUp() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        let base = doc
        let op = try #require(try doc.moveItem(from: ip(0, 3), to: ip(0, 1)))
        try valid(doc)
        #expect(doc.rows == [["a", "d", "b", "c"]])
        try replay(op, on: base, author: doc)
    }

    @Test("§2 moveItem across sections has moveRowAt semantics, for every from and every destination row")
    func moveAcrossSectionsExhaustive() throws {
        let start = [["a", "b", "c"], ["x", "y"], []]
        let base = try ListDocument.make(1, sections: start)
        for fs in 0..<3 {
            for fr in 0..<start[fs].count {
                for ts in 0..<3 where ts != fs {
                    for tr in 0...start[ts].count {
                        var doc = base
                        let op = try #require(try doc.moveItem(from: ip(fs, fr), to: ip(ts, tr)))
                        try valid(doc)
                        #expect(doc.rows == modelMove(start, from: ip(fs, fr), to: ip(ts, tr)),
                                "move \([fs, fr]) -> \([ts, tr])")
                        try replay(op, on: base, author: doc)
                    }
                }
            }
        }
    }

    @Test("§2 moveItem to the end of another section (row == count of that section)")
    func moveToEndOfOtherSection() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x", "y"]])
        let base = doc
        let op = try #require(try doc.moveItem(from: ip(0, 0), to: ip(1, 2)))
        try valid(doc)
        #expect(doc.rows == [["b", "c"], ["x", "y", "a"]])
        try replay(op, on: base, author: doc)
        // and into an empty section
        var doc2 = try ListDocument.make(1, sections: [["a", "b"], []])
        let base2 = doc2
        let op2 = try #require(try doc2.moveItem(from: ip(0, 1), to: ip(1, 0)))
        try valid(doc2)
        #expect(doc2.rows == [["a"], ["b"]])
        try replay(op2, on: base2, author: doc2)
    }

    @Test("§2 moveItem by identity has the same meaning as by index path")
    func moveByIdentity() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]])
        let base = doc
        let c = try #require(doc.item("c"))
        let op = try #require(try doc.moveItem(c, to: ip(1, 0)))
        try valid(doc)
        #expect(doc.rows == [["a", "b"], ["c", "x"]])
        try replay(op, on: base, author: doc)
        do { let result = try doc.moveItem(c, to: ip(1, 0)); #expect(result == nil) }
    }

    @Test("§2 moveItem and moveSection with from == to return nil and change nothing")
    func moveToSamePlaceIsNil() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]])
        let state = doc.encodedState(), count = doc.operationCount, version = doc.version
        for r in 0..<3 { do { let result = try doc.moveItem(from: ip(0, r), to: ip(0, r)); #expect(result == nil) } }
        do { let result = try doc.moveItem(from: ip(1, 0), to: ip(1, 0)); #expect(result == nil) }
        do { let result = try doc.moveSection(from: 0, to: 0); #expect(result == nil) }
        do { let result = try doc.moveSection(from: 1, to: 1); #expect(result == nil) }
        try valid(doc)
        #expect(doc.encodedState() == state)
        #expect(doc.operationCount == count)
        #expect(doc.version == version)
    }

    @Test("§2 a move names its target by identity and its destination by neighbouring identities")
    func moveNamesIdentities() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x"]])
        let ids = ["a", "b", "c", "d"].map { doc.item($0)! }
        let section0 = doc.sectionIDs[0]
        let op = try #require(try doc.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a d]
        guard case let .moveItems(moved, section, origins) = op.kind else {
            Issue.record("a move of one item should be a moveItems op: \(op)"); return
        }
        #expect(moved == [ids[0]])
        #expect(section == section0)
        #expect(origins.after == SlotID(ids[2].opID), "after c")
        #expect(origins.before == SlotID(ids[3].opID), "before d")
        #expect(op.span == 1)
    }

    // MARK: Moves of a selection

    @Test("§2 moveItems lands the selection contiguously in selection order: [a b c d e] select [d b] to 0")
    func moveItemsExample() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"], ["x", "y"]])
        let base = doc
        let op = try doc.moveItems([doc.item("d")!, doc.item("b")!], to: ip(0, 0))
        try valid(doc)
        #expect(doc.rows == [["d", "b", "a", "c", "e"], ["x", "y"]])
        #expect(doc.operationCount == base.operationCount + 1, "one op, whatever the number of items")
        #expect(op.span == 2)
        try replay(op, on: base, author: doc)

        // across sections, from two sections, to the end of the destination
        let base2 = doc
        let op2 = try doc.moveItems([doc.item("x")!, doc.item("a")!, doc.item("e")!], to: ip(1, 1))
        try valid(doc)
        #expect(doc.rows == [["d", "b", "c"], ["y", "x", "a", "e"]])
        try replay(op2, on: base2, author: doc)
    }

    @Test("§2 moveItems matches the model (remove the selection, insert it in order) for random selections")
    func moveItemsRandom() throws {
        var rng = SplitMix64(seed: 0x5EED_0002)
        let start = [["a", "b", "c", "d", "e", "f"], ["g", "h", "i", "j"], []]
        let base = try ListDocument.make(1, sections: start)
        let all = start.flatMap { $0 }
        for _ in 0..<150 {
            var pool = all
            var selection: [String] = []
            for _ in 0..<(1 + rng.below(4)) { selection.append(pool.remove(at: rng.below(pool.count))) }
            let dest = rng.below(3)
            let remaining = start.map { $0.filter { !selection.contains($0) } }
            let row = rng.below(remaining[dest].count + 1)
            var expected = remaining
            expected[dest].insert(contentsOf: selection, at: row)

            var doc = base
            let op = try doc.moveItems(selection.map { doc.item($0)! }, to: ip(dest, row))
            try valid(doc)
            #expect(doc.rows == expected, "move \(selection) to \([dest, row])")
            #expect(op.span == selection.count)
            try replay(op, on: base, author: doc)
        }
    }

    // MARK: Section moves

    @Test("§2 moveSection has array-move semantics, for every from and to, and is one op")
    func moveSectionExhaustive() throws {
        let names = ["A", "B", "C", "D"]
        let base = try ListDocument.make(1, sections: [["a"], ["b"], [], ["d1", "d2"]], names: names)
        for from in 0..<4 {
            for to in 0..<4 where from != to {
                var doc = base
                let op = try #require(try doc.moveSection(from: from, to: to))
                try valid(doc)
                var model = names
                model.insert(model.remove(at: from), at: to)
                #expect(doc.sectionValues == model, "section move \(from) -> \(to)")
                #expect(doc.totalItemCount == 4)
                #expect(doc.operationCount == base.operationCount + 1)
                if case .moveSection = op.kind {} else { Issue.record("kind \(op.kind)") }
                try replay(op, on: base, author: doc)
            }
        }
    }

    // MARK: Values

    @Test("§2 set value of item and section writes the value")
    func setValues() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"]], names: ["A"])
        let base = doc
        let a = try #require(doc.item("a"))
        let op1 = try doc.setValue(Data("a2"), forItem: a)
        let op2 = try doc.setValue(Data("A2"), forSection: doc.sectionIDs[0])
        try valid(doc)
        #expect(doc.rows == [["a2", "b"]])
        #expect(doc.sectionValues == ["A2"])
        #expect(doc.indexPath(of: a) == ip(0, 0))
        var other = base
        other.receive([op1, op2])
        try valid(other)
        expectConverged([doc, other])
    }

    @Test("§2 values are LWW: concurrent writes keep the greater op id's value in both delivery orders")
    func valuesLWW() throws {
        var r1 = try ListDocument.make(1, sections: [["a"]], names: ["A"])
        var r2 = r1.fork(as: 2)
        let a = try #require(r1.item("a"))
        let s = r1.sectionIDs[0]
        let w1 = try r1.setValue(Data("from1"), forItem: a)
        let w2 = try r2.setValue(Data("from2"), forItem: a)
        let v1 = try r1.setValue(Data("S1"), forSection: s)
        let v2 = try r2.setValue(Data("S2"), forSection: s)
        #expect(w2.id > w1.id)
        try r1.receive(w2); try valid(r1)
        try r1.receive(v2); try valid(r1)
        try r2.receive(w1); try valid(r2)
        try r2.receive(v1); try valid(r2)
        #expect(r1.rows == [["from2"]])
        #expect(r2.rows == [["from2"]])
        #expect(r1.sectionValues == ["S2"])
        expectConverged([r1, r2])

        // a later (causally following) write wins whatever its replica
        let w3 = try r1.setValue(Data("later1"), forItem: a)
        try r2.receive(w3)
        try valid(r1, r2)
        #expect(r2.rows == [["later1"]])
        expectConverged([r1, r2])

        // the smaller replica wins with a greater counter
        var r3 = r1.fork(as: 3)
        _ = try r1.insertItem(at: ip(0, 1), value: Data("bump"))
        let w4 = try r1.setValue(Data("r1-high"), forItem: a)
        let w5 = try r3.setValue(Data("r3-low"), forItem: a)
        #expect(w4.id > w5.id)
        r3.merge(r1)
        try r1.receive(w5)
        try valid(r1, r3)
        #expect(r1.rows == [["r1-high", "bump"]])
        expectConverged([r1, r3])
    }
}
