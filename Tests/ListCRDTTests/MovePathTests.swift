import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The one-item move path of `ListDocument.moveItem(from:to:)` (the item's row is known, the new
/// slot is placed right after its left origin with no search, and the operation resolves without
/// arrays) must make exactly the operation, and reach exactly the state, that the general selection
/// path `moveItems(_:to:)` makes for a selection of that one item.
@Suite(.cpuHeavy) struct MovePathTests: ScenarioSupport {
    /// A document with hidden slots everywhere: three sections, deletes, and earlier moves.
    func messyDocument(seed: UInt64) throws -> ListDocument {
        var rng = SplitMix64(seed: seed)
        var doc = try ListDocument.make(1, sections: [
            (0..<30).map { "a\($0)" }, (0..<5).map { "b\($0)" }, (0..<20).map { "c\($0)" },
        ])
        for _ in 0..<40 {
            let s = Int(rng.next() % 3)
            let n = try doc.itemCount(inSection: s)
            if n > 1 { try doc.deleteItem(at: ip(s, Int(rng.next() % UInt64(n)))) }
        }
        return doc
    }

    @Test("a one-item move makes the same operation and state as a selection of that item, within and across sections")
    func oneItemMoveMatchesSelectionMove() throws {
        for seed in UInt64(1)...8 {
            var rng = SplitMix64(seed: seed &* 7919)
            var fast = try messyDocument(seed: seed)
            var moves = 0
            for _ in 0..<150 {
                let fromSection = Int(rng.next() % 3)
                let n = try fast.itemCount(inSection: fromSection)
                if n == 0 { continue }
                let from = ip(fromSection, Int(rng.next() % UInt64(n)))
                let toSection = Int(rng.next() % 3)
                let limit = try fast.itemCount(inSection: toSection) - (toSection == fromSection ? 1 : 0)
                let to = ip(toSection, Int(rng.next() % UInt64(limit + 1)))
                var general = fast
                let id = try fast.itemID(at: from)
                guard let op = try fast.moveItem(from: from, to: to) else {
                    #expect(from == to, "no operation for a real move, seed \(seed)")
                    continue
                }
                let expected = try general.moveItems([id], to: to)
                #expect(op == expected, "seed \(seed): \(from) → \(to)")
                let sameState = fast.encodedState() == general.encodedState()
                #expect(sameState, "seed \(seed): the states differ after \(from) → \(to)")
                #expect(fast.indexPath(of: id) == to, "seed \(seed): the item is not at \(to)")
                try valid(fast)
                moves += 1
            }
            #expect(moves > 100)
        }
    }

    @Test("a one-item move received by another replica lands where its author put it")
    func oneItemMoveReplays() throws {
        var rng = SplitMix64(seed: 42)
        var author = try messyDocument(seed: 3)
        var peer = author.fork(as: 2)
        for _ in 0..<200 {
            let n = try author.itemCount(inSection: 0)
            guard let op = try author.moveItem(from: ip(0, Int(rng.next() % UInt64(n))),
                                               to: ip(2, Int(rng.next() % UInt64(try author.itemCount(inSection: 2) + 1))))
            else { continue }
            try deliver(op, to: &peer)
            // And back, so the first section does not run dry.
            let m = try author.itemCount(inSection: 2)
            if let back = try author.moveItem(from: ip(2, Int(rng.next() % UInt64(m))), to: ip(0, Int(rng.next() % UInt64(n)))) {
                try deliver(back, to: &peer)
            }
        }
        expectConverged([author, peer])
    }

    @Test("an out-of-range destination is an error and changes nothing")
    func outOfRange() throws {
        var doc = try messyDocument(seed: 5)
        let before = DocumentFingerprint(doc)
        let n0 = try doc.itemCount(inSection: 0), n1 = try doc.itemCount(inSection: 1)
        #expect(throws: ListError.self) { try doc.moveItem(from: ip(0, 0), to: ip(0, n0)) }
        #expect(throws: ListError.self) { try doc.moveItem(from: ip(0, 0), to: ip(1, n1 + 1)) }
        #expect(throws: ListError.self) { try doc.moveItem(from: ip(0, 0), to: ip(0, -1)) }
        #expect(throws: ListError.self) { try doc.moveItem(from: ip(0, n0), to: ip(0, 0)) }
        #expect(throws: ListError.self) { try doc.moveItem(from: ip(0, 0), to: ip(3, 0)) }
        #expect(DocumentFingerprint(doc) == before)
    }
}
