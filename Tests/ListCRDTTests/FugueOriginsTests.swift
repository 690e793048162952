import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §3.1: a new slot's origins are Fugue's. The left origin is the visible element just
/// before the insertion point (the start at index 0), the right origin the slot right after the
/// left origin, hidden or not. So text typed in place of a deleted item stays before what another
/// replica concurrently put after that item, whatever the replica ids.
@Suite("§3.1 Fugue origins: what replaces a deleted item stays where its author put it")
struct FugueOriginsTests: ScenarioSupport {
    private func text(_ doc: ListDocument, section: Int = 0) -> String { doc.rows[section].joined() }

    /// Every order of delivering `ops` (the concurrent edits of two replicas) to each of the docs.
    private func merge(_ a: inout ListDocument, _ aOps: [ListOperation],
                       _ b: inout ListDocument, _ bOps: [ListOperation]) throws {
        for op in bOps { try a.receive(op) }
        for op in aOps { try b.receive(op) }
        try valid(a, b)
        expectConverged([a, b])
    }

    @Test("§3.1 abcd: X typed after c, while c is replaced by 12 elsewhere, gives ab12Xd for either id order",
          arguments: [(1, 2), (2, 1), (7, 3)])
    func abcd(ids: (UInt64, UInt64)) throws {
        let base = try ListDocument.make(100, sections: [["a", "b", "c", "d"]])
        var a = base.fork(as: ids.0)
        var b = base.fork(as: ids.1)
        let x = try a.insertItem(at: ip(0, 3), value: Data("X"))
        let del = try b.deleteItem(at: ip(0, 2))
        let one = try b.insertItem(at: ip(0, 2), value: Data("1"))
        let two = try b.insertItem(at: ip(0, 3), value: Data("2"))
        #expect(text(a) == "abcXd" && text(b) == "ab12d")
        try merge(&a, [x], &b, [del, one, two])
        #expect(text(a) == "ab12Xd")
        // Every delivery order to a third replica gives the same.
        try everyOrder(base, [x, del, one, two], expected: [["a", "b", "1", "2", "X", "d"]])
    }

    @Test("§3.1 the origins of a local insert: the visible item before, and the slot right after it even when hidden")
    func localOrigins() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"]])
        let ids = doc.snapshot().sections[0].items.map(\.id)
        try doc.deleteItem(at: ip(0, 2))   // c
        let op = try doc.insertItem(at: ip(0, 2), value: Data("1"))
        guard case let .insertItem(_, origins, _) = op.kind else { Issue.record("not an insert"); return }
        #expect(origins.after?.opID == ids[1].opID)    // b, visible
        #expect(origins.before?.opID == ids[2].opID)   // c, hidden
        // At the start: no left origin; the right origin is the first slot, hidden or not.
        try doc.deleteItem(at: ip(0, 0))   // a
        let start = try doc.insertItem(at: ip(0, 0), value: Data("0"))
        guard case let .insertItem(_, o0, _) = start.kind else { Issue.record("not an insert"); return }
        #expect(o0.after == nil)
        #expect(o0.before?.opID == ids[0].opID)        // a, hidden
        // At the end: the left origin is the last visible item ("1"), the right origin the slot
        // right after it, hidden or not: "c", which "1" went before.
        try doc.deleteItem(at: ip(0, doc.itemCount(inSection: 0) - 1))   // d
        let end = try doc.insertItem(at: ip(0, doc.itemCount(inSection: 0)), value: Data("e"))
        guard case let .insertItem(_, oe, _) = end.kind else { Issue.record("not an insert"); return }
        #expect(oe.after?.opID == op.id)
        #expect(oe.before?.opID == ids[2].opID)        // c, hidden
        #expect(text(doc) == "0b1e")
        try valid(doc)
    }

    @Test("§3.1 an item moved in place of a deleted one stays before what was concurrently typed after it",
          arguments: [(1, 2), (2, 1)])
    func moveIntoDeletedPlace(ids: (UInt64, UInt64)) throws {
        let base = try ListDocument.make(100, sections: [["a", "b", "c", "d", "e"]])
        var a = base.fork(as: ids.0)
        var b = base.fork(as: ids.1)
        let x = try a.insertItem(at: ip(0, 3), value: Data("X"))            // after c
        let del = try b.deleteItem(at: ip(0, 2))                             // c
        let move = try #require(try b.moveItem(from: ip(0, 3), to: ip(0, 2)))   // e between b and d
        #expect(text(b) == "abed")
        try merge(&a, [x], &b, [del, move])
        #expect(text(a) == "abeXd")
    }

    @Test("§3.1 a multi-item move in place of a deleted item stays before a concurrent insert after it",
          arguments: [(1, 2), (2, 1)])
    func selectionIntoDeletedPlace(ids: (UInt64, UInt64)) throws {
        let base = try ListDocument.make(100, sections: [["a", "b", "c", "d", "e", "f"]])
        var a = base.fork(as: ids.0)
        var b = base.fork(as: ids.1)
        let items = base.snapshot().sections[0].items.map(\.id)
        let x = try a.insertItem(at: ip(0, 3), value: Data("X"))            // after c
        let del = try b.deleteItem(at: ip(0, 2))                             // c
        let move = try b.moveItems([items[5], items[4]], to: ip(0, 2))       // f, e between b and d
        #expect(text(b) == "abfed")
        try merge(&a, [x], &b, [del, move])
        #expect(text(a) == "abfeXd")
    }

    @Test("§3.1 sections: a section inserted in place of a deleted one stays before a concurrent one after it",
          arguments: [(1, 2), (2, 1)])
    func sections(ids: (UInt64, UInt64)) throws {
        let base = try ListDocument.make(100, sections: [[], [], [], []], names: ["a", "b", "c", "d"])
        var a = base.fork(as: ids.0)
        var b = base.fork(as: ids.1)
        let x = try a.insertSection(at: 3, value: Data("X"))
        let del = try b.deleteSection(at: 2)
        let one = try b.insertSection(at: 2, value: Data("1"))
        let move = try #require(try b.moveSection(from: 3, to: 2))           // d, then 1
        #expect(b.sectionValues == ["a", "b", "d", "1"])
        try merge(&a, [x], &b, [del, one, move])
        #expect(a.sectionValues == ["a", "b", "d", "1", "X"])
    }

    @Test("§3.1 legacy origins (older builds) give abX12d: the text typed in place of c lands after X, whatever the ids")
    func legacyDiffers() throws {
        var results: Set<String> = []
        for ids: (UInt64, UInt64) in [(1, 2), (2, 1)] {
            let base = try ListDocument.make(100, sections: [["a", "b", "c", "d"]])
            var a = base.fork(as: ids.0)
            var b = base.fork(as: ids.1)
            a.variant = .legacyOrigins
            b.variant = .legacyOrigins
            let x = try a.insertItem(at: ip(0, 3), value: Data("X"))
            let del = try b.deleteItem(at: ip(0, 2))
            let one = try b.insertItem(at: ip(0, 2), value: Data("1"))
            let two = try b.insertItem(at: ip(0, 3), value: Data("2"))
            try merge(&a, [x], &b, [del, one, two])
            results.insert(text(a))
        }
        // X (the smaller counter) and "1" had the same origins (c, d): X first, whatever the replicas.
        #expect(results == ["abX12d"])
    }

    @Test("Operations of older builds (legacy origins) and of this one mix: 300 seeded sessions converge with every invariant")
    func mixedBuilds() throws {
        for seed in 0..<300 as Range<UInt64> {
            var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 11)
            let base = try ListDocument.make(100, sections: [["a", "b", "c"], ["d", "e"]])
            var docs = (1...3).map { base.fork(as: UInt64($0)) }
            docs[Int(seed % 3)].variant = .legacyOrigins
            var sent: [[ListOperation]] = [[], [], []]
            for _ in 0..<40 {
                let r = Int(rng.next() % 3)
                if rng.next() % 4 == 0 {
                    // Deliver another replica's operations so far.
                    let from = Int(rng.next() % 3)
                    if from != r { docs[r].receive(sent[from]) }
                    continue
                }
                if let op = randomLocalEdit(&docs[r], &rng) { sent[r].append(op) }
            }
            for r in 0..<3 { for f in 0..<3 where f != r { docs[r].receive(sent[f]) } }
            for d in docs {
                #expect(d.pendingCount == 0, "seed \(seed)")
                try valid(d)
            }
            expectConverged(docs)
            if docs.contains(where: { $0.encodedState() != docs[0].encodedState() }) {
                Issue.record("seed \(seed): replicas differ")
                return
            }
        }
    }

    /// One random local edit: insert, delete or move of an item (in or across sections), or
    /// an insert or move of a section; nil when nothing applied.
    private func randomLocalEdit(_ doc: inout ListDocument, _ rng: inout SplitMix64) -> ListOperation? {
        let sections = doc.sectionCount
        guard sections > 0 else { return try? doc.insertSection(at: 0, value: Data("s")) }
        let s = Int(rng.next() % UInt64(sections))
        let n = (try? doc.itemCount(inSection: s)) ?? 0
        switch rng.next() % 8 {
        case 0, 1, 2:
            return try? doc.insertItem(at: ip(s, Int(rng.next() % UInt64(n + 1))), value: Data("i"))
        case 3, 4:
            guard n > 0 else { return nil }
            return try? doc.deleteItem(at: ip(s, Int(rng.next() % UInt64(n))))
        case 5:
            guard n > 0 else { return nil }
            let t = Int(rng.next() % UInt64(sections))
            let limit = ((try? doc.itemCount(inSection: t)) ?? 0) - (t == s ? 1 : 0)
            return try? doc.moveItem(from: ip(s, Int(rng.next() % UInt64(n))),
                                     to: ip(t, Int(rng.next() % UInt64(limit + 1))))
        case 6:
            return try? doc.insertSection(at: Int(rng.next() % UInt64(sections + 1)), value: Data("t"))
        default:
            return try? doc.moveSection(from: s, to: Int(rng.next() % UInt64(sections)))
        }
    }
}
