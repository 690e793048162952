import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §3.8 (duplicate and out-of-order delivery) and §3.9 (equivocation).
@Suite("§3.8 §3.9 delivery: duplicates, causal buffering, equivocation")
struct DeliveryTests: ScenarioSupport {
    // MARK: Helpers


    private func valid(_ docs: ListDocument..., sourceLocation: SourceLocation = #_sourceLocation) throws {
        for d in docs {
            try d.checkInvariants()
            let snap = d.snapshot()
            let ids = snap.sections.flatMap { $0.items.map(\.id) }
            #expect(Set(ids).count == ids.count, "an item is shown twice", sourceLocation: sourceLocation)
            #expect(Set(snap.sections.map(\.id)).count == snap.sections.count, sourceLocation: sourceLocation)
            #expect(d.totalItemCount == ids.count, sourceLocation: sourceLocation)
            expectCausal(d, sourceLocation: sourceLocation)
        }
    }

    /// Every applied operation was applied after all of its dependencies.
    private func expectCausal(_ d: ListDocument, sourceLocation: SourceLocation = #_sourceLocation) {
        var applied = VersionVector()
        for op in d.operations {
            for dep in op.deps {
                #expect(applied.contains(dep), "\(op.id) applied before its cause \(dep)", sourceLocation: sourceLocation)
            }
            applied.formUnion(VersionVector([op.id.replica: op.lastID.counter]))
        }
    }


    // MARK: §3.8 duplicates

    @Test("§3.8 duplicate delivery of any kind of operation is a no-op")
    func duplicatesOfEveryKind() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"], ["x", "y"], ["p"]], names: ["A", "B", "C"])
        var r2 = r1.fork(as: 2)
        var ops: [ListOperation] = []
        ops.append(try r1.insertSection(at: 3, value: Data("D")))
        ops.append(try r1.insertItem(at: ip(3, 0), value: Data("n")))
        ops.append(try #require(try r1.moveItem(from: ip(0, 0), to: ip(1, 1))))
        ops.append(try r1.moveItems([r1.item("c")!, r1.item("y")!], to: ip(2, 1)))
        ops.append(try #require(try r1.moveSection(from: 3, to: 0)))
        ops.append(try r1.deleteItem(at: ip(1, 0)))
        ops.append(try r1.setValue(Data("B!"), forSection: r1.sectionIDs[2]))
        ops.append(try r1.setValue(Data("p!"), forItem: r1.item("p")!))
        ops.append(try r1.deleteSection(at: 2))
        try valid(r1)
        for op in ops {
            #expect(try r2.receive(op) == .applied(woken: 1))
            try valid(r2)
            let before = DocumentFingerprint(r2)
            #expect(try r2.receive(op) == .duplicate, "\(op.kind)")
            #expect(DocumentFingerprint(r2) == before, "duplicate of \(op.kind) changed the document")
            try valid(r2)
        }
        expectConverged([r1, r2])
        // the author itself, and a replay of the whole log, are no-ops too
        let before = DocumentFingerprint(r1)
        for op in ops { #expect(try r1.receive(op) == .duplicate) }
        #expect(r2.receive(r1.operations).refused.isEmpty)
        #expect(DocumentFingerprint(r1) == before)
        try valid(r1, r2)
        expectConverged([r1, r2])
    }

    @Test("§3.8 a duplicate of a buffered operation is a no-op and it is still applied once")
    func duplicateOfBuffered() throws {
        var r1 = try ListDocument.make(1, sections: [["a"]])
        var r2 = r1.fork(as: 2)
        let i1 = try r1.insertItem(at: ip(0, 1), value: Data("n"))
        let m1 = try #require(try r1.moveItem(from: ip(0, 1), to: ip(0, 0)))
        #expect(try r2.receive(m1) == .buffered)
        #expect(r2.pendingCount == 1)
        let before = DocumentFingerprint(r2)
        #expect(try r2.receive(m1) == .duplicate)
        #expect(DocumentFingerprint(r2) == before)
        #expect(r2.pendingCount == 1)
        try valid(r2)
        #expect(try r2.receive(i1) == .applied(woken: 2))
        #expect(r2.pendingCount == 0)
        #expect(r2.operationCount == r1.operationCount)
        #expect(try r2.receive(m1) == .duplicate)
        try valid(r2)
        #expect(r2.rows == [["n", "a"]])
        expectConverged([r1, r2])
    }

    // MARK: §3.8 out-of-order delivery

    @Test("§3.8 out-of-order delivery from one replica is buffered and applied when its causes arrive")
    func outOfOrderOneReplica() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        let i1 = try r1.insertItem(at: ip(0, 2), value: Data("n"))
        let m1 = try #require(try r1.moveItem(from: ip(0, 2), to: ip(0, 0)))
        let v1 = try r1.setValue(Data("N"), forItem: r1.item("n")!)
        let start = DocumentFingerprint(r2)
        #expect(try r2.receive(v1) == .buffered)
        #expect(r2.pendingCount == 1)
        #expect(r2.pendingOperations == [v1])
        #expect(try r2.receive(m1) == .buffered)
        #expect(r2.pendingCount == 2)
        try valid(r2)
        // nothing is visible yet: the state is what it was
        var visible = DocumentFingerprint(r2)
        visible.pending = 0
        #expect(visible == start)
        #expect(r2.rows == [["a", "b"]])
        #expect(try r2.receive(i1) == .applied(woken: 3))
        #expect(r2.pendingCount == 0)
        try valid(r2)
        #expect(r2.rows == [["N", "a", "b"]])
        expectConverged([r1, r2])
    }

    @Test("§3.8 an operation that depends on another replica's operation waits for it and never shows before it")
    func outOfOrderAcrossReplicas() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"], ["x"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        let i1 = try r1.insertItem(at: ip(0, 0), value: Data("n"))
        #expect(try r2.receive(i1) == .applied(woken: 1))
        let m2 = try #require(try r2.moveItem(from: ip(0, 0), to: ip(1, 1)))    // n to the end of section 1
        let d2 = try r2.deleteItem(at: ip(0, 0))                                // a
        // r3 gets r2's ops first
        #expect(try r3.receive(d2) == .buffered)
        #expect(try r3.receive(m2) == .buffered)
        try valid(r3)
        #expect(r3.rows == [["a", "b"], ["x"]])
        #expect(r3.pendingCount == 2)
        #expect(try r3.receive(i1) == .applied(woken: 3))
        #expect(r3.pendingCount == 0)
        try valid(r3)
        #expect(r3.rows == [["b"], ["x", "n"]])
        r1.merge(r2)
        try valid(r1)
        expectConverged([r1, r2, r3])
    }

    @Test("§3.8 an operation with causes on two replicas waits until both have arrived")
    func waitsForTwoReplicas() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        var r4 = r1.fork(as: 4)
        let a1 = try r1.insertItem(at: ip(0, 0), value: Data("p"))      // [p a b]
        let b2 = try r2.insertItem(at: ip(0, 2), value: Data("q"))      // [a b q]
        try r3.receive(a1); try r3.receive(b2)
        try valid(r3)
        let c3 = try r3.moveItems([r3.item("q")!, r3.item("p")!], to: ip(0, 1))   // [a q p b]
        #expect(c3.deps.count == 2)
        // r4: c3 first (buffered), then b2 (applied; c3 still waits for a1), then a1 (wakes c3)
        #expect(try r4.receive(c3) == .buffered)
        try valid(r4)
        #expect(try r4.receive(b2) == .applied(woken: 1))
        #expect(r4.pendingCount == 1)
        try valid(r4)
        #expect(r4.rows == [["a", "b", "q"]])
        #expect(try r4.receive(a1) == .applied(woken: 2))
        #expect(r4.pendingCount == 0)
        try valid(r4)
        #expect(r4.rows == [["a", "q", "p", "b"]])
        r1.merge(r3); r2.merge(r3)
        try valid(r1, r2)
        expectConverged([r1, r2, r3, r4])
    }

    @Test("§3.8 a long causal chain delivered in reverse is buffered whole and applied in one go")
    func reverseChain() throws {
        var r1 = try ListDocument.make(1, sections: [["a"]])
        var r2 = r1.fork(as: 2)
        var r3 = r1.fork(as: 3)
        var chain: [ListOperation] = []
        // the chain alternates between replicas 1 and 2
        for k in 0..<10 {
            if k % 2 == 0 {
                chain.append(try r1.insertItem(at: ip(0, 0), value: Data("v\(k)")))
                try r2.receive(chain.last!)
            } else {
                chain.append(try #require(try r2.moveItem(from: ip(0, 0), to: ip(0, r2.itemCount(inSection: 0) - 1))))
                try r1.receive(chain.last!)
            }
        }
        try valid(r1, r2)
        for (k, op) in chain.reversed().enumerated() {
            #expect(try r3.receive(op) == (k == chain.count - 1 ? .applied(woken: chain.count) : .buffered))
            try valid(r3)
            if k < chain.count - 1 { #expect(r3.rows == [["a"]]) }
        }
        #expect(r3.pendingCount == 0)
        expectConverged([r1, r2, r3])
    }

    @Test("§3.8 seeded: every delivery order, with duplicates, gives byte-identical documents")
    func randomDeliveryOrders() throws {
        for seed in UInt64(1)...25 {
            var rng = SplitMix64(seed: seed)
            var replicas = try [ListDocument.make(1, sections: [["a", "b", "c"], ["x", "y"]], names: ["A", "B"])]
            replicas.append(replicas[0].fork(as: 2))
            replicas.append(replicas[0].fork(as: 3))
            let base = replicas[0]
            var all: [ListOperation] = []
            for _ in 0..<30 {
                let k = rng.below(3)
                var d = replicas[k]
                if let op = randomEdit(&d, &rng) { all.append(op) }
                try d.checkInvariants()
                replicas[k] = d
                if rng.chance(30) {   // sometimes sync two replicas
                    let j = rng.below(3)
                    if j != k { let src = replicas[k]; replicas[j].merge(src) }
                }
            }
            for k in 0..<3 { for j in 0..<3 where j != k { let src = replicas[k]; replicas[j].merge(src) } }
            try valid(replicas[0], replicas[1], replicas[2])
            expectConverged(replicas)
            // observers get every op in a random order, some twice
            var observers: [ListDocument] = []
            for _ in 0..<3 {
                var ops = all + all.filter { _ in rng.chance(20) }
                ops.shuffle(using: &rng)
                var o = base.fork(as: 50)
                for op in ops {
                    _ = try o.receive(op)
                    try valid(o)
                }
                #expect(o.pendingCount == 0, "seed \(seed)")
                observers.append(o)
            }
            expectConverged(replicas + observers)
        }
    }

    private func randomEdit(_ d: inout ListDocument, _ rng: inout SplitMix64) -> ListOperation? {
        let sections = d.sectionCount
        let counts = (0..<sections).map { (try? d.itemCount(inSection: $0)) ?? 0 }
        let total = counts.reduce(0, +)
        func randomRow() -> IndexPath? {
            guard total > 0 else { return nil }
            var k = rng.below(total)
            for (s, c) in counts.enumerated() { if k < c { return ip(s, k) }; k -= c }
            return nil
        }
        do {
            switch rng.below(8) {
            case 0, 1:
                guard sections > 0 else { return try d.insertSection(at: 0, value: Data("S")) }
                let s = rng.below(sections)
                return try d.insertItem(at: ip(s, rng.below(counts[s] + 1)), value: Data("i\(rng.below(1000))"))
            case 2, 3:
                guard let from = randomRow() else { return nil }
                let s = rng.below(sections)
                let limit = counts[s] - (s == from.section ? 1 : 0)
                return try d.moveItem(from: from, to: ip(s, rng.below(limit + 1)))
            case 4:
                guard let p = randomRow() else { return nil }
                return try d.deleteItem(at: p)
            case 5:
                guard sections > 1 else { return nil }
                return try d.moveSection(from: rng.below(sections), to: rng.below(sections))
            case 6:
                if rng.chance(30), sections > 1 { return try d.deleteSection(at: rng.below(sections)) }
                return try d.insertSection(at: rng.below(sections + 1), value: Data("S\(rng.below(100))"))
            default:
                guard let p = randomRow() else { return nil }
                return try d.setValue(Data("v\(rng.below(1000))"), forItem: try d.itemID(at: p))
            }
        } catch {
            Issue.record("a valid random edit failed: \(error)")
            return nil
        }
    }

    // MARK: §3.9 equivocation

    @Test("§3.9 an op with a known id but other content is rejected as equivocation, recorded, and the first one stays")
    func equivocation() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        let op = try r1.insertItem(at: ip(0, 1), value: Data("n"))
        #expect(try r2.receive(op) == .applied(woken: 1))
        var forged = op
        forged.kind = .insertItem(section: r1.sectionIDs[0], .init(after: nil, before: nil), value: Data("evil"))
        let before = DocumentFingerprint(r2)
        #expect(throws: ApplyError.equivocation(op.id)) { try r2.receive(forged) }
        #expect(r2.rejectedOperations == [forged])
        #expect(DocumentFingerprint(r2) == before, "the first one stays")
        #expect(r2.rows == [["a", "n", "b"]])
        try valid(r2)
        // same id, same kind, other deps: also equivocation
        var forged2 = op
        forged2.deps = Frontier()
        #expect(throws: ApplyError.equivocation(op.id)) { try r2.receive(forged2) }
        #expect(r2.rejectedOperations == [forged, forged2])
        #expect(DocumentFingerprint(r2) == before)
        // the real one is still a duplicate
        #expect(try r2.receive(op) == .duplicate)
        try valid(r2)
        expectConverged([r1, r2])
    }

    @Test("§3.9 equivocation against a buffered operation is rejected and the buffered one is applied later")
    func equivocationWhileBuffered() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b"]])
        var r2 = r1.fork(as: 2)
        let i1 = try r1.insertItem(at: ip(0, 0), value: Data("n"))
        let n = ItemID(i1.id)
        let v1 = try r1.setValue(Data("N"), forItem: n)
        #expect(try r2.receive(v1) == .buffered)
        var forged = v1
        forged.kind = .setItemValue(n, Data("evil"))
        let before = DocumentFingerprint(r2)
        #expect(throws: ApplyError.equivocation(v1.id)) { try r2.receive(forged) }
        #expect(r2.rejectedOperations == [forged])
        #expect(DocumentFingerprint(r2) == before)
        #expect(r2.pendingOperations == [v1])
        #expect(try r2.receive(i1) == .applied(woken: 2))
        try valid(r2)
        #expect(r2.rows == [["N", "a", "b"]])
        expectConverged([r1, r2])
    }

    @Test("§3.9 equivocation on a later id of a multi-item move is rejected")
    func equivocationInsideMultiSlotOp() throws {
        var r1 = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var r2 = r1.fork(as: 2)
        let m = try r1.moveItems([r1.item("a")!, r1.item("b")!], to: ip(0, 1))   // ids m.id, m.id+1
        try r2.receive(m)
        let inner = m.id.advanced(by: 1)
        let forged = ListOperation(id: inner, deps: m.deps, kind: .setItemValue(r1.item("c")!, Data("evil")))
        let before = DocumentFingerprint(r2)
        #expect(throws: ApplyError.equivocation(inner)) { try r2.receive(forged) }
        #expect(r2.rejectedOperations == [forged])
        #expect(DocumentFingerprint(r2) == before)
        try valid(r2)
        expectConverged([r1, r2])
    }
}
