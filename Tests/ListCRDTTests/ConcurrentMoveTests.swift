import Foundation
import Testing
@testable import ListCRDT

/// SEMANTICS §3.2, §3.3, §3.7: concurrent moves of items and sections, between 2–3 replicas and in
/// explicit delivery orders.
@Suite("§3.2 §3.3 §3.7 concurrent moves")
struct ConcurrentMoveTests: ScenarioSupport {
    // MARK: Helpers


    // MARK: §3.2 the same item moved twice

    @Test("§3.2 the same item moved by two replicas lands at the greater op id's destination")
    func sameItemTwoReplicas() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(0, 4)))   // [b c d e a]
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a d e]
        try valid(r1, r2)
        #expect(r1.rows == [["b", "c", "d", "e", "a"]])
        #expect(r2.rows == [["b", "c", "a", "d", "e"]])
        #expect(m2.id > m1.id)
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.rows == [["b", "c", "a", "d", "e"]])
        #expect(r2.rows == [["b", "c", "a", "d", "e"]])
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: [["b", "c", "a", "d", "e"]])
    }

    @Test("§3.2 the greater op id wins even from the smaller replica id (greater Lamport counter)")
    func sameItemGreaterCounterWins() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let bump = try r1.setValue(Data("B"), forItem: try #require(r1.item("b")))
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(0, 4)))   // [B c d e a]
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a d e]
        #expect(m1.id > m2.id)
        try deliver(m2, to: &r1)
        try deliver(bump, m1, to: &r2)
        #expect(r1.rows == [["B", "c", "d", "e", "a"]])
        expectConverged([r1, r2])
        try everyOrder(base, [bump, m1, m2], expected: [["B", "c", "d", "e", "a"]])
    }

    @Test("§3.2 the same item moved by three replicas to three sections lands once, at the greatest op id's destination")
    func sameItemThreeReplicasAcrossSections() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(1, 0)))   // a to the front of section 1
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 1)))   // a after b
        let m3 = try #require(try r3.moveItem(from: ip(0, 0), to: ip(2, 1)))   // a to the end of section 2
        try valid(r1, r2, r3)
        let expected = [["b"], ["x", "y"], ["p", "a"]]
        // r1 gets 2 then 3; r2 gets 3 then 1; r3 gets 1 then 2
        try deliver(m2, m3, to: &r1)
        try deliver(m3, m1, to: &r2)
        try deliver(m1, m2, to: &r3)
        for r in [r1, r2, r3] { #expect(r.rows == expected) }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2, m3], expected: expected)
    }

    @Test("§3.2 a replica whose move lost can move the item again, and that later move wins")
    func loserMovesAgain() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a]
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 1)))   // [b a c]
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.rows == [["b", "a", "c"]])
        let again = try #require(try r1.moveItem(from: ip(0, 1), to: ip(0, 2)))  // [b c a]
        try deliver(again, to: &r2)
        #expect(r2.rows == [["b", "c", "a"]])
        expectConverged([r1, r2])
    }

    @Test("§3.2 the same section moved by two replicas lands at the greater op id's destination")
    func sameSectionTwoReplicas() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["b"], ["c"], ["d"]], names: ["A", "B", "C", "D"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 0, to: 3))   // B C D A
        let m2 = try #require(try r2.moveSection(from: 0, to: 1))   // B A C D
        try valid(r1, r2)
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        try deliver(m1, m2, to: &r3)
        for r in [r1, r2, r3] {
            #expect(r.sectionValues == ["B", "A", "C", "D"])
            #expect(r.rows == [["b"], ["a"], ["c"], ["d"]])
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2], expected: [["b"], ["a"], ["c"], ["d"]])
    }

    @Test("§3.2 concurrent moves of different sections both take effect")
    func differentSections() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["b"], ["c"], ["d"]], names: ["A", "B", "C", "D"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 0, to: 3))   // B C D A
        let m2 = try #require(try r2.moveSection(from: 3, to: 1))   // A D B C
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        // A is after the slot of D (which moved away), so at the end; D lands between A's old slot and B
        #expect(r1.sectionValues == ["D", "B", "C", "A"])
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: [["d"], ["b"], ["c"], ["a"]])
    }

    @Test("§3.2 a move whose destination neighbour moved concurrently lands next to the neighbour's old place")
    func neighbourMovedConcurrently() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(0, 2)))   // [b c a d e]: a between c and d
        let m2 = try #require(try r2.moveItem(from: ip(0, 2), to: ip(0, 4)))   // [a b d e c]
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.rows == [["b", "a", "d", "e", "c"]])
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: [["b", "a", "d", "e", "c"]])
    }

    // MARK: multi-item moves

    @Test("§3.2 concurrent multi-item moves of disjoint selections both land contiguous in selection order")
    func disjointSelections() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e", "f"], ["x"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try r1.moveItems([r1.item("b")!, r1.item("a")!], to: ip(1, 1))   // [c d e f] [x b a]
        let m2 = try r2.moveItems([r2.item("f")!, r2.item("d")!], to: ip(0, 0))   // [f d a b c e] [x]
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.rows == [["f", "d", "c", "e"], ["x", "b", "a"]])
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: [["f", "d", "c", "e"], ["x", "b", "a"]])
    }

    @Test("§3.2 overlapping multi-item moves: the shared item lands at the destination of the move with the greater op id")
    func overlappingSelections() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e", "f"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try r1.moveItems([r1.item("a")!, r1.item("b")!], to: ip(0, 4))   // [c d e f a b]
        let m2 = try r2.moveItems([r2.item("b")!, r2.item("c")!], to: ip(0, 0))   // [b c a d e f]
        try valid(r1, r2)
        #expect(r1.rows == [["c", "d", "e", "f", "a", "b"]])
        #expect(r2.rows == [["b", "c", "a", "d", "e", "f"]])
        #expect(m2.id > m1.id, "the ops have the same counter; replica 2 breaks the tie")
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        // b is in both selections: it goes with m2 (greater op id); a stays with m1, c with m2.
        let expected = [["b", "c", "d", "e", "f", "a"]]
        #expect(r1.rows == expected)
        #expect(r2.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: expected)
    }

    @Test("§3.2 the same selection moved by two replicas lands whole at the greater op id's destination")
    func sameSelectionTwice() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"], ["x", "y"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try r1.moveItems([r1.item("a")!, r1.item("b")!], to: ip(1, 1))   // [c d e] [x a b y]
        let m2 = try r2.moveItems([r2.item("a")!, r2.item("b")!], to: ip(0, 3))   // [c d e a b] [x y]
        #expect(m2.id > m1.id)
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        let expected = [["c", "d", "e", "a", "b"], ["x", "y"]]
        #expect(r1.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: expected)
    }

    // MARK: §3.3 move vs set value

    @Test("§3.3 a move and a concurrent set value of the same item both take effect")
    func moveVsSetValue() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]])
        var r2 = r1.fork(as: 2)
        let base = r1
        let a = try #require(r1.item("a"))
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(1, 1)))
        let v2 = try r2.setValue(Data("A!"), forItem: a)
        try deliver(v2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.rows == [["b", "c"], ["x", "A!"]])
        #expect(r1.indexPath(of: a) == ip(1, 1))
        expectConverged([r1, r2])
        try everyOrder(base, [m1, v2], expected: [["b", "c"], ["x", "A!"]])
    }

    @Test("§3.3 a section move and a concurrent set value of that section both take effect")
    func sectionMoveVsSetValue() throws {
        var r1 = try ListDocument.make(1, sections: [["a"], ["b"], ["c"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let sa = r1.sectionIDs[0]
        let m1 = try #require(try r1.moveSection(from: 0, to: 2))
        let v2 = try r2.setValue(Data("A!"), forSection: sa)
        try deliver(v2, to: &r1)
        try deliver(m1, to: &r2)
        #expect(r1.sectionValues == ["B", "C", "A!"])
        #expect(r2.sectionValues == ["B", "C", "A!"])
        expectConverged([r1, r2])
        try everyOrder(base, [m1, v2], expected: [["b"], ["c"], ["a"]])
    }

    @Test("§3.3 two moves and a set value from three replicas: the greater move wins and the value is kept")
    func twoMovesAndSetValue() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let a = try #require(r1.item("a"))
        let m1 = try #require(try r1.moveItem(from: ip(0, 0), to: ip(0, 1)))
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, 2)))
        let v3 = try r3.setValue(Data("A!"), forItem: a)
        try deliver(v3, m2, to: &r1)
        try deliver(m1, v3, to: &r2)
        try deliver(m2, m1, to: &r3)
        let expected = [["b", "c", "A!"]]
        for r in [r1, r2, r3] { #expect(r.rows == expected) }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2, v3], expected: expected)
    }

    // MARK: §3.7 section moves vs item moves

    @Test("§3.7 a section move and a concurrent item move into that section both take effect")
    func sectionMoveVsMoveInto() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 1, to: 0))                // B A C
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(1, 1)))     // a into B: [x a y]
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        let expected = [["x", "a", "y"], ["b"], ["p"]]
        #expect(r1.sectionValues == ["B", "A", "C"])
        #expect(r1.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: expected)
    }

    @Test("§3.7 a section move and a concurrent item move out of that section both take effect")
    func sectionMoveVsMoveOut() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 0, to: 2))                // B C A
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(2, 1)))     // a out of A into C: [p a]
        try deliver(m2, to: &r1)
        try deliver(m1, to: &r2)
        let expected = [["x", "y"], ["p", "a"], ["b"]]
        #expect(r1.sectionValues == ["B", "C", "A"])
        #expect(r1.rows == expected)
        expectConverged([r1, r2])
        try everyOrder(base, [m1, m2], expected: expected)
    }

    @Test("§3.7 a section move, a move into it and a move out of it by three replicas all take effect")
    func sectionMoveThreeReplicas() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 1, to: 2))                // A C B
        let m2 = try #require(try r2.moveItem(from: ip(1, 0), to: ip(0, 2)))     // x out of B: A=[a b x]
        let m3 = try #require(try r3.moveItem(from: ip(2, 0), to: ip(1, 2)))     // p into B: B=[x y p]
        try deliver(m2, m3, to: &r1)
        try deliver(m3, m1, to: &r2)
        try deliver(m1, m2, to: &r3)
        let expected = [["a", "b", "x"], [], ["y", "p"]]
        for r in [r1, r2, r3] {
            #expect(r.sectionValues == ["A", "C", "B"])
            #expect(r.rows == expected)
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2, m3], expected: expected)
    }

    @Test("§3.7 two replicas move a section while a third moves a selection across it: every move takes effect")
    func sectionMovesAndSelection() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x", "y"], ["p", "q"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let base = r1
        let m1 = try #require(try r1.moveSection(from: 2, to: 0))                           // C A B
        let m2 = try #require(try r2.moveSection(from: 2, to: 1))                           // A C B  (wins)
        let m3 = try r3.moveItems([r3.item("q")!, r3.item("a")!], to: ip(1, 1))             // [b] [x q a y] [p]
        try deliver(m2, m3, to: &r1)
        try deliver(m3, m1, to: &r2)
        try deliver(m1, m2, to: &r3)
        let expected = [["b"], ["p"], ["x", "q", "a", "y"]]
        for r in [r1, r2, r3] {
            #expect(r.sectionValues == ["A", "C", "B"])
            #expect(r.rows == expected)
        }
        expectConverged([r1, r2, r3])
        try everyOrder(base, [m1, m2, m3], expected: expected)
    }
}
