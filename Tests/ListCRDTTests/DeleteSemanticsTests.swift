import Foundation
import Testing
@testable import ListCRDT

/// SEMANTICS §3.4–§3.6: a delete removes what its author saw; nothing the deleter did not see is
/// deleted, at item level and at section level.
@Suite("§3.4 §3.5 §3.6 deletes remove what their author saw")
struct DeleteSemanticsTests: ScenarioSupport {
    // MARK: Helpers


    // MARK: §3.4 item delete vs move

    @Test("§3.4 delete vs concurrent move: the item survives at the mover's destination (move delivered first)")
    func moveThenDelete() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let a = try #require(r1.item("a"))
        let d1 = try r1.deleteItem(a)
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 3)))   // [b c d a]
        try valid(r1, r2)
        #expect(r1.rows == [["b", "c", "d"]])
        try deliver(m2, to: &r3)
        try deliver(d1, to: &r3)   // move first, then delete
        #expect(r3.rows == [["b", "c", "d", "a"]])
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["b", "c", "d", "a"]])
            #expect(r.contains(a))
        }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.4 delete vs concurrent move: the item survives at the mover's destination (delete delivered first)")
    func deleteThenMove() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let d1 = try r1.deleteItem(a)
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(1, 1)))   // a to the end of section 1
        try deliver(d1, to: &r3)
        #expect(r3.rows == [["b", "c", "d"], ["x"]])
        #expect(r3.contains(a) == false)
        try deliver(m2, to: &r3)   // the move the deleter had not seen brings it back, at the mover's destination
        #expect(r3.rows == [["b", "c", "d"], ["x", "a"]])
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        for r in [r1, r2, r3] { #expect(r.rows == [["b", "c", "d"], ["x", "a"]]) }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, m2], expected: [["b", "c", "d"], ["x", "a"]])
    }

    @Test("§3.4 a delete that causally follows a move deletes the item")
    func deleteAfterMove() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))
        try deliver(m2, to: &r1)
        let d1 = try r1.deleteItem(a)
        try deliver(d1, to: &r2)
        // r3 gets the delete first: it waits for the move
        #expect(try r3.receive(d1) == .buffered)
        try valid(r3)
        #expect(r3.rows == [["a", "b", "c"]])
        #expect(try r3.receive(m2) == .applied(woken: 2))
        try valid(r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["b", "c"]])
            #expect(r.contains(a) == false)
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m2, d1], expected: [["b", "c"]])
    }

    @Test("§3.4 a concurrent move that loses the position register to a move the deleter saw does not save the item")
    func losingConcurrentMoveDoesNotSave() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let bump = try r2.setValue(Data("B"), forItem: try #require(r2.item("b")))
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))   // counter N+2
        let m3 = try #require(try r3.moveItem(from: ip(0, 0), to: ip(0, 1)))   // counter N+1, concurrent
        #expect(m3.id < m2.id)
        try deliver(bump, m2, to: &r1)
        let d1 = try r1.deleteItem(a)                                           // saw m2, not m3
        try deliver(m3, to: &r1)
        try deliver(m3, d1, to: &r2)
        try deliver(bump, m2, d1, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["B", "c"]])
            #expect(r.contains(a) == false)
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [bump, m2, m3, d1], expected: [["B", "c"]])
    }

    @Test("§3.4 a concurrent move that wins over the move the deleter saw keeps the item at its destination")
    func winningConcurrentMoveSaves() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a]
        let m3 = try #require(try r3.moveItem(from: ip(0, 0), to: ip(0, 1)))   // [b a c], greater id
        #expect(m3.id > m2.id)
        try deliver(m2, to: &r1)
        let d1 = try r1.deleteItem(a)
        try deliver(m3, to: &r1)
        try deliver(d1, m3, to: &r2)
        try deliver(m2, d1, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["b", "a", "c"]])
            #expect(r.contains(a))
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m2, m3, d1], expected: [["b", "a", "c"]])
    }

    @Test("§3.4 two concurrent deletes of the same item delete it once; a concurrent move still saves it")
    func twoDeletesAndAMove() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let d1 = try r1.deleteItem(at: ip(0, 0))
        let d2 = try r2.deleteItem(at: ip(0, 0))
        try deliver(d2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.rows == [["b"], ["x"]])
        expectConverged([r1, r2])
        let m3 = try #require(try r3.moveItem(from: ip(0, 0), to: ip(1, 0)))
        try deliver(d1, d2, to: &r3)
        try deliver(m3, to: &r1)
        try deliver(m3, to: &r2)
        for r in [r1, r2, r3] { #expect(r.rows == [["b"], ["a", "x"]]) }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, d2, m3], expected: [["b"], ["a", "x"]])
    }

    @Test("§3.4 delete vs concurrent multi-item move: the deleted item survives inside the moved selection")
    func deleteVsSelectionMove() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let d1 = try r1.deleteItem(at: ip(0, 1))                                  // b
        let m2 = try r2.moveItems([r2.item("a")!, r2.item("b")!], to: ip(0, 2))  // [c d a b]
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.rows == [["c", "d", "a", "b"]])
        expectConverged([r1, r2])
        try everyOrder(base, [d1, m2], expected: [["c", "d", "a", "b"]])
    }

    @Test("§3.4 a concurrent multi-item move with a smaller op id loses the register to the move the deleter saw, so the item stays deleted")
    func losingSelectionMoveDoesNotSave() throws {
        var r1 = try ListDocument.make(1, sections: [["x", "a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let m1 = try r1.moveItems([r1.item("x")!, a], to: ip(0, 2))               // [b c x a], op id (N+1)@1
        let m2 = try #require(try r2.moveItem(from: ip(0, 1), to: ip(0, 3)))     // [x b c a], op id (N+1)@2
        #expect(m2.id > m1.id)
        try deliver(m2, to: &r3)
        let d3 = try r3.deleteItem(a)                                            // saw m2, the register's winner
        try deliver(m2, d3, to: &r1)
        try deliver(m1, d3, to: &r2)
        try deliver(m1, to: &r3)
        // m1 was not seen by the deleter but does not win a's register (m2's op id is greater): a is deleted
        let expected = [["b", "c", "x"]]
        for r in [r1, r2, r3] {
            #expect(r.rows == expected)
            #expect(r.contains(a) == false)
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2, d3], expected: expected)
    }

    @Test("§3.4 delete vs concurrent set value: the item stays deleted (a value write is not a position write)")
    func deleteVsSetValue() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let a = try #require(r1.item("a"))
        let d1 = try r1.deleteItem(a)
        let v2 = try r2.setValue(Data("A!"), forItem: a)
        try deliver(v2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.rows == [["b"]])
        #expect(r1.value(of: a)?.string == "A!")
        expectConverged([r1, r2])
        try everyOrder(base, [d1, v2], expected: [["b"]])
    }

    // MARK: §3.5 section delete

    @Test("§3.5 section delete vs concurrent insert into it: the section stays visible with that item, with its old value at its old place")
    func sectionDeleteVsInsert() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let sb = r1.sectionIDs[1]
        let d1 = try r1.deleteSection(at: 1)
        let i2 = try r2.insertItem(at: ip(1, 1), value: Data("n"))
        try valid(r1, r2)
        #expect(r1.rows == [["a", "b"], ["p"]])
        try deliver(i2, to: &r1)
        try deliver(d1, to: &r2)
        try deliver(d1, i2, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["a", "b"], ["n"], ["p"]])
            #expect(r.sectionValues == ["A", "B", "C"])
            #expect(r.index(of: sb) == 1)
            #expect(r.contains(sb))
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, i2], expected: [["a", "b"], ["n"], ["p"]], sections: ["A", "B", "C"])
    }

    @Test("§3.5 section delete vs concurrent move into it: the section stays visible with the moved item")
    func sectionDeleteVsMoveInto() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let d1 = try r1.deleteSection(at: 1)
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(1, 2)))   // a to the end of B
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        try deliver(d1, m2, to: &r3)
        let expected = [["b"], ["a"], ["p"]]
        for r in [r1, r2, r3] {
            #expect(r.rows == expected)
            #expect(r.sectionValues == ["A", "B", "C"])
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, m2], expected: expected, sections: ["A", "B", "C"])
    }

    @Test("§3.5 section delete vs concurrent multi-item move into it from two sections")
    func sectionDeleteVsSelectionInto() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p", "q"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let d1 = try r1.deleteSection(at: 1)
        let m2 = try r2.moveItems([r2.item("q")!, r2.item("a")!], to: ip(1, 1))   // B = [x q a y]
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        let expected = [["b"], ["q", "a"], ["p"]]
        #expect(r1.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [d1, m2], expected: expected, sections: ["A", "B", "C"])
    }

    @Test("§3.5 section delete vs concurrent move of an item within it: that item survives, the others are deleted")
    func sectionDeleteVsMoveWithin() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x", "y", "z"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let d1 = try r1.deleteSection(at: 1)
        let m2 = try #require(try r2.moveItem(from: ip(1, 0), to: ip(1, 2)))   // B = [y z x]
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        let expected = [["a"], ["x"], ["p"]]
        #expect(r1.rows == expected)
        #expect(r2.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [d1, m2], expected: expected, sections: ["A", "B", "C"])
    }

    @Test("§3.5 the section keeps its old value: a concurrent section value write still applies, a delete does not erase it")
    func revivedSectionValue() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"]], names: ["A", "B"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let sb = r1.sectionIDs[1]
        let d1 = try r1.deleteSection(sb)
        let i2 = try r2.insertItem(at: ip(1, 0), value: Data("n"))
        let v3 = try r3.setValue(Data("B!"), forSection: sb)
        try deliver(i2, v3, to: &r1)
        try deliver(v3, d1, to: &r2)
        try deliver(d1, i2, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["a"], ["n"]])
            #expect(r.sectionValues == ["A", "B!"])
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, i2, v3], expected: [["a"], ["n"]], sections: ["A", "B!"])
    }

    @Test("§3.5 a section delete that causally follows an insert into it deletes everything")
    func sectionDeleteAfterInsert() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let i2 = try r2.insertItem(at: ip(1, 0), value: Data("n"))
        try deliver(i2, to: &r1)
        let d1 = try r1.deleteSection(at: 1)
        try deliver(d1, to: &r2)
        #expect(try r3.receive(d1) == .buffered)
        try valid(r3)
        #expect(try r3.receive(i2) == .applied(woken: 2))
        try valid(r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["a"], ["p"]])
            #expect(r.sectionValues == ["A", "C"])
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [i2, d1], expected: [["a"], ["p"]])
    }

    @Test("§3.5 a section kept visible by a surviving item disappears when that item is deleted or moved out")
    func revivedSectionDisappears() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let d1 = try r1.deleteSection(at: 1)
        let i2 = try r2.insertItem(at: ip(1, 0), value: Data("n"))
        let j2 = try r2.insertItem(at: ip(1, 0), value: Data("m"))
        try deliver(i2, j2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.rows == [["a"], ["m", "n"], ["p"]])
        expectConverged([r1, r2])
        // m moves out: B still holds n
        let m1 = try #require(try r1.moveItem(from: ip(1, 0), to: ip(0, 1)))
        try deliver(m1, to: &r2)
        #expect(r2.rows == [["a", "m"], ["n"], ["p"]])
        // n is deleted: B is empty and deleted, so it disappears
        let d2 = try r2.deleteItem(at: ip(1, 0))
        try valid(r2)
        #expect(r2.rows == [["a", "m"], ["p"]])
        #expect(r2.sectionValues == ["A", "C"])
        try deliver(d2, to: &r1)
        expectConverged([r1, r2])

        // the same when the last item moves out
        var s1 = try ListDocument.make(1, sections: [["a"], ["x"]], names: ["A", "B"])
        var s2 = s1.fork(as: 2)
        let e1 = try s1.deleteSection(at: 1)
        let k2 = try s2.insertItem(at: ip(1, 1), value: Data("n"))
        try deliver(k2, to: &s1)
        try deliver(e1, to: &s2)
        #expect(s1.rows == [["a"], ["n"]])
        let out = try #require(try s2.moveItem(from: ip(1, 0), to: ip(0, 0)))
        try valid(s2)
        #expect(s2.rows == [["n", "a"]])
        try deliver(out, to: &s1)
        expectConverged([s1, s2])
    }

    @Test("§3.5 section delete vs concurrent move of that section: it survives at the mover's destination without the items the deleter saw")
    func sectionDeleteVsSectionMove() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let d1 = try r1.deleteSection(at: 1)
        let m2 = try #require(try r2.moveSection(from: 1, to: 0))   // B A C
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.sectionValues == ["B", "A", "C"])
        #expect(r1.rows == [[], ["a"], ["p"]])
        expectConverged([r1, r2])
        try everyOrder(base, [d1, m2], expected: [[], ["a"], ["p"]], sections: ["B", "A", "C"])
    }

    @Test("§3.5 two concurrent deletes of a section and an insert into it: the insert survives, the section stays")
    func twoSectionDeletesAndInsert() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"]], names: ["A", "B"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let d1 = try r1.deleteSection(at: 1)
        let d2 = try r2.deleteSection(at: 1)
        let i3 = try r3.insertItem(at: ip(1, 0), value: Data("n"))
        try deliver(d2, i3, to: &r1)
        try deliver(i3, d1, to: &r2)
        try deliver(d1, d2, to: &r3)
        for r in [r1, r2, r3] { #expect(r.rows == [["a"], ["n"]]) }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, d2, i3], expected: [["a"], ["n"]], sections: ["A", "B"])
    }

    @Test("§3.5 deleting a section kept visible by a surviving item deletes it and that item")
    func deleteRevivedSection() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let d1 = try r1.deleteSection(at: 1)
        let i2 = try r2.insertItem(at: ip(1, 0), value: Data("n"))
        try deliver(i2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r2.rows == [["a"], ["n"], ["p"]])
        let d2 = try r2.deleteSection(at: 1)
        try valid(r2)
        #expect(r2.rows == [["a"], ["p"]])
        try deliver(d2, to: &r1)
        try deliver(i2, d1, d2, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.rows == [["a"], ["p"]])
            #expect(r.sectionValues == ["A", "C"])
        }
        expectConverged([r1, r2, r3])
    }

    @Test("§3.5 an insert into a section kept visible only by a surviving item is kept and shown")
    func insertIntoRevivedSection() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["x"]], names: ["A", "B"])
        var r2 = r1.fork(as: 2)
        let d1 = try r1.deleteSection(at: 1)
        let i2 = try r2.insertItem(at: ip(1, 0), value: Data("n"))
        try deliver(i2, to: &r1)
        try deliver(d1, to: &r2)
        let j1 = try r1.insertItem(at: ip(1, 1), value: Data("o"))
        try valid(r1)
        try deliver(j1, to: &r2)
        #expect(r2.rows == [["a"], ["n", "o"]])
        expectConverged([r1, r2])
    }

    // MARK: §3.6 move out of a deleted section

    @Test("§3.6 move out of a concurrently deleted section: the item survives in its new section (both delivery orders)")
    func moveOutOfDeletedSection() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let d1 = try r1.deleteSection(at: 0)
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(2, 1)))   // a to the end of C
        try deliver(m2, to: &r1)       // delete, then move
        try deliver(d1, to: &r2)       // move, then delete
        try deliver(d1, m2, to: &r3)
        let expected = [["x", "y"], ["p", "a"]]
        for r in [r1, r2, r3] {
            #expect(r.rows == expected)
            #expect(r.sectionValues == ["B", "C"])
            #expect(r.indexPath(of: a) == ip(1, 1))
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, m2], expected: expected, sections: ["B", "C"])
    }

    @Test("§3.6 a selection moved out of a concurrently deleted section survives in its new section")
    func selectionOutOfDeletedSection() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]], names: ["A", "B"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let d1 = try r1.deleteSection(at: 0)
        let m2 = try r2.moveItems([r2.item("c")!, r2.item("a")!], to: ip(1, 0))   // B = [c a x]
        try deliver(m2, to: &r1)
        try deliver(d1, to: &r2)
        #expect(r1.rows == [["c", "a", "x"]])
        expectConverged([r1, r2])
        try everyOrder(base, [d1, m2], expected: [["c", "a", "x"]], sections: ["B"])
    }

    @Test("§3.6 an item moved out of a deleted section into a section deleted concurrently by a third replica survives there")
    func moveBetweenTwoDeletedSections() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let d1 = try r1.deleteSection(at: 0)
        let m2 = try #require(try r2.moveItem(from: ip(0, 1), to: ip(1, 0)))   // b into B
        let d3 = try r3.deleteSection(at: 1)
        try deliver(m2, d3, to: &r1)
        try deliver(d3, d1, to: &r2)
        try deliver(d1, m2, to: &r3)
        let expected = [["b"], ["p"]]
        for r in [r1, r2, r3] {
            #expect(r.rows == expected)
            #expect(r.sectionValues == ["B", "C"])
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [d1, m2, d3], expected: expected, sections: ["B", "C"])
    }
}
