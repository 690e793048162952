import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The tight pass of decoded delete runs in a load into an empty document
/// (`ListDocument.applyConsecutiveDeletes`, ListDocument+ConsecutiveDeletes.swift), and the
/// insert run route's origins checked against the trees: every branch against decode + receive,
/// one operation at a time and the general path alone (`bothLoads`).
extension EncodedLoadTests {
    @Test("into an empty document, delete runs whose items another replica deleted already, or whose slots are not consecutive, match")
    func consecutiveDeletesIntoAnEmptyDocument() throws {
        let empty = ListDocument(replica: ReplicaID(9))
        let base = try ListDocument.make(1, sections: [["a", "z"]])

        // Two replicas backspace the same typed items concurrently: the second delete run finds
        // them deleted at their insert (no death), and one more item on each side alive.
        var typist = base.fork(as: 2)
        _ = try type(&typist, "abcdefgh", at: 1)
        var left = typist.fork(as: 3), right = typist.fork(as: 4)
        _ = try backspace(&left, 4, at: 8)
        _ = try backspace(&right, 5, at: 9)
        var merged = left
        merged.receive(right.operations)
        var loaded = try bothLoads(empty, ListOperation.encode(merged.operations))
        try loaded.checkInvariants()
        #expect(loaded.rows == merged.rows)

        // Consecutive ids of one replica whose slots are not consecutive (another replica's slot
        // was made between them): one delete run, in two segments, the second looked up by id.
        var a = base.fork(as: 5), b = base.fork(as: 6)
        let x = try a.insertItem(at: ip(0, 1), value: Data("x".utf8))
        let y = try b.insertItem(at: ip(0, 1), value: Data("y".utf8))
        let z = try a.insertItem(at: ip(0, 2), value: Data("z".utf8))
        #expect(z.id.counter == x.id.counter + 1)
        var backward = a, typing = a
        let forward = try forwardDelete(&a, 2, at: 1)          // x, then z
        let back = try backspace(&backward, 2, at: 3)          // z, then x
        let typed = try type(&typing, "qq", at: 3)
        let typedBack = try backspace(&typing, 4, at: 5)       // q, q, z, x: right after typing
        for deletes in [forward, back, typed + typedBack] {
            let ops = base.operations + [x, y, z] + deletes
            let bytes = ListOperation.encode(ops)
            let batch = try DecodedBatch.decode(bytes, maxValueSize: empty.maxValueSize, maxOperations: .max)
            #expect(batch.deleteRuns.last?.count == deletes.count - (deletes.count == 6 ? 2 : 0))
            loaded = try bothLoads(empty, bytes)
            try loaded.checkInvariants()
            var expected = base.fork(as: 7)
            expected.receive(ops)
            #expect(loaded.rows == expected.rows)
        }
    }

    @Test("into an empty document, delete runs longer than a chunk, and one that runs past the items, match")
    func longConsecutiveDeletesIntoAnEmptyDocument() throws {
        let empty = ListDocument(replica: ReplicaID(9))
        let chunk = ListDocument.deleteChunk
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let n = 2 * chunk + 40
        _ = try type(&author, String(repeating: "t", count: n + 10), at: 1)
        _ = try backspace(&author, n, at: n + 11)
        _ = try forwardDelete(&author, 10, at: 1)
        var loaded = try bothLoads(empty, ListOperation.encode(author.operations))
        #expect(loaded.rows == author.rows)

        // A crafted forward-delete run whose items go past the typed ones (into the deletes' own
        // ids, which are no items): the pass stops there, the general path refuses the rest.
        var crafter = try ListDocument.make(1, sections: [["a", "z"]])
        let typed = try type(&crafter, String(repeating: "u", count: chunk + 30), at: 1)
        let crafted = forwardDeletes(from: typed, count: chunk + 60)
        loaded = try bothLoads(empty, ListOperation.encode(crafter.operations + crafted))
        #expect(try loaded.itemCount(inSection: 0) == 2)
    }

    @Test("insert runs whose origins are in another sequence (the right one next to the left one, or not) are refused as decode + receive refuses them")
    func insertRunOriginsInAnotherSequence() throws {
        let base = try ListDocument.make(1, sections: [["a", "b", "c"], ["x", "y"]])
        let s0 = base.sectionIDs[0], s1 = base.sectionIDs[1]
        let a = SlotID(try #require(base.item("a")).opID), c = SlotID(try #require(base.item("c")).opID)
        let x = SlotID(try #require(base.item("x")).opID), y = SlotID(try #require(base.item("y")).opID)
        let r = ReplicaID(7)
        let first = (base.operations.map(\.lastID.counter).max() ?? 0) + 1
        /// A typed run of three by replica 7 into `section` between `origins`, after `base`.
        func run(_ section: SectionID, _ origins: ListOperation.Origins) -> [ListOperation] {
            var ops: [ListOperation] = []
            var deps = base.frontier
            var after = origins.after
            for k in 0 ..< 3 {
                let id = OpID(counter: first + UInt64(k), replica: r)
                ops.append(ListOperation(id: id, deps: deps,
                                         kind: .insertItem(section: section, .init(after: after, before: origins.before),
                                                           value: Data("n".utf8))))
                (deps, after) = (Frontier(only: id), SlotID(id))
            }
            return ops
        }
        let cases: [(SectionID, ListOperation.Origins)] = [
            (s0, .init(after: x, before: nil)),              // left in section 1's items
            (s0, .init(after: nil, before: y)),              // right in section 1's items, no left
            (s0, .init(after: a, before: x)),                // right in another sequence, not next
            (s0, .init(after: c, before: SlotID(s1.opID))),  // right a section slot
            (s0, .init(after: SlotID(s0.opID), before: nil)),// left a section slot
            (s1, .init(after: x, before: y)),                // fine: next to each other
            (s1, .init(after: nil, before: x)),              // fine: at the start
        ]
        for (section, origins) in cases {
            let ops = run(section, origins)
            try bothLoads(base, ListOperation.encode(ops))
            try bothLoads(ListDocument(replica: ReplicaID(9)), ListOperation.encode(base.operations + ops))
        }
    }
}
