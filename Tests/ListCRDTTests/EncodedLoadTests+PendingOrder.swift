import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The order of item trees kept aside in a load into an empty document (`RunContext.order`,
/// `PendingOrder`, `ListDocument.settle`): every way out of it against decode + receive, one
/// operation at a time and the general path alone (`bothLoads`).
extension EncodedLoadTests {
    @Test("into an empty document, items typed into a section deleted before them show it again when the order kept aside goes in")
    func pendingSectionShowsAgain() throws {
        let empty = ListDocument(replica: ReplicaID(9))
        let base = try ListDocument.make(1, sections: [[], []])
        var deleter = base.fork(as: 2), typist = base.fork(as: 3)
        _ = try deleter.deleteSection(at: 1)
        _ = try type(&typist, "kept", at: 0, section: 1)
        var merged = deleter
        merged.receive(typist.operations)
        #expect(merged.sectionCount == 2)
        // The section delete comes before the typed run: the run's tree is empty, so kept aside.
        let loaded = try bothLoads(empty, ListOperation.encode(merged.operations))
        #expect(loaded.sectionCount == 2 && loaded.rows == merged.rows)
        // And typed in both sections, the deleted one's items deleted again: it hides at the end.
        _ = try type(&typist, "ab", at: 0, section: 0)
        _ = try backspace(&typist, 4, at: 4, section: 1)
        merged.receive(typist.operations)
        let again = try bothLoads(empty, ListOperation.encode(merged.operations))
        #expect(again.sectionCount == 1 && again.rows == merged.rows)
    }

    @Test("into an empty document, a run with a slot between its origins puts the order kept aside into the trees first, in both orders")
    func pendingOrderSettledByConcurrentRun() throws {
        let empty = ListDocument(replica: ReplicaID(9))
        let base = try ListDocument.make(1, sections: [["a", "z"], ["q"]])
        var first = base.fork(as: 2), second = base.fork(as: 3)
        let a = try type(&first, "aaa", at: 1)
        let b = try type(&second, "bbb", at: 1)
        for (x, y) in [(a, b), (b, a)] {
            var merged = base
            merged.receive(x + y)
            // More typing after both, in both sections, and deletes: on the trees' path.
            _ = try type(&merged, "cc", at: 4)
            _ = try type(&merged, "dd", at: 1, section: 1)
            _ = try backspace(&merged, 3, at: 6)
            let loaded = try bothLoads(empty, ListOperation.encode(merged.operations))
            #expect(loaded.rows == merged.rows)
        }
    }

    @Test("into an empty document, a tree the general path put slots in first is not kept aside, and matches")
    func treeFilledByTheGeneralPathFirst() throws {
        let base = try ListDocument.make(1, sections: [["a"], ["b"]])
        var own = base.fork(as: 2), other = base.fork(as: 3)
        _ = try type(&own, "mine", at: 1)
        var merged = own
        merged.receive(other.operations)
        other.receive(own.operations)
        _ = try type(&other, "theirs", at: 5)
        _ = try type(&other, "x", at: 1, section: 1)
        merged.receive(other.operations)
        // Loaded as replica 2: its own typed run takes the general path (into section 0's tree,
        // in the forest), and replica 3's runs after it take the trees' path there; section 1's
        // items (replica 1's, then 3's) are kept aside.
        let loaded = try bothLoads(ListDocument(replica: ReplicaID(2)), ListOperation.encode(merged.operations))
        #expect(loaded.rows == merged.rows)
        try bothLoads(ListDocument(replica: ReplicaID(3)), ListOperation.encode(merged.operations))
    }
}
