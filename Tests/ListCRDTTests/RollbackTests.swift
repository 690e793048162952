import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// `rolledBack(toOperationCount:)`: undoing a closure's local edits by a rebuild (what makes
/// `LiveDocument.edit` all or nothing without copying the document before every edit).
@Suite("Rollback of local edits")
struct RollbackTests {
    /// `count` random edits applied to `document`; their operations.
    static func edits(_ count: Int, _ document: inout ListDocument, _ rng: inout SplitMix64, _ fresh: inout Int) -> [ListOperation] {
        var ops: [ListOperation] = []
        var attempts = 0
        while ops.count < count, attempts < 20 * count {
            attempts += 1
            let edit = RandomEdit.random(for: document, using: &rng) { fresh += 1; return "v\(fresh)" }
            if let op = try? edit.apply(to: &document) { ops.append(op) }
        }
        return ops
    }

    @Test("after local edits, the rolled-back document equals the one before them in every visible respect, and edits on from it as that one does",
          arguments: 0..<40)
    func rollsBack(seed: UInt64) throws {
        var rng = SplitMix64(seed: 7_000 + seed)
        var fresh = 0
        // Two replicas' histories, one received by the other partly out of order (some operations
        // wait in the causal buffer), then local edits on top.
        var mine = ListDocument(replica: ReplicaID(1))
        var theirs = ListDocument(replica: ReplicaID(2))
        _ = Self.edits(20, &mine, &rng, &fresh)
        theirs.receive(mine.operations)
        let remote = Self.edits(30, &theirs, &rng, &fresh)
        let held = remote.count / 3
        mine.receive(Array(remote[held...]) + Array(remote[..<(held / 2)]))
        _ = Self.edits(10, &mine, &rng, &fresh)
        mine.pendingLimits = PendingLimits(maxOperations: 5_000, maxBytes: 1 << 20)
        let before = mine
        let count = mine.operationCount

        var edited = mine
        let undone = Self.edits(Int(seed % 6) + 1, &edited, &rng, &fresh)
        #expect(edited.operationCount == count + undone.count)
        let back = edited.rolledBack(toOperationCount: count)

        #expect(back.encodedState() == before.encodedState(), "seed \(seed)")
        #expect(back.version == before.version)
        #expect(back.frontier == before.frontier)
        #expect(back.operations == before.operations)
        #expect(Set(back.pendingOperations) == Set(before.pendingOperations))
        #expect(back.pendingCount > 0 || held == 0, "seed \(seed): the test wants operations waiting")
        #expect(back.pendingLimits == before.pendingLimits)
        #expect(back.snapshot() == before.snapshot())
        try back.checkInvariants()
        // The next edits (same seed) make the same operations, with the same ids.
        var a = back, b = before
        var rngA = SplitMix64(seed: seed), rngB = SplitMix64(seed: seed)
        var freshA = 0, freshB = 0
        #expect(Self.edits(5, &a, &rngA, &freshA) == Self.edits(5, &b, &rngB, &freshB), "seed \(seed)")
        // Nothing to undo: the same document.
        #expect(before.rolledBack(toOperationCount: count).encodedState() == before.encodedState())
    }
}
