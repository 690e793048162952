import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// Docs/Semantics.md §8.10: seeded multi-replica typing into one text field, delivered in random
/// order with duplicates (half the batches through the wire format): every replica converges,
/// nobody's typed characters are lost, and runs typed concurrently never interleave; now and then
/// every replica compacts at a quiescent point and the typing goes on.
@Suite("§8.10 text fields: seeded multi-replica fuzz")
struct TextFieldFuzzTests {
    @Test("converged, nothing lost, no interleaving", arguments: 1 ... 24)
    func fuzz(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let n = 3
        var (docs, item) = try TextFieldTests.replicas(n)
        var inserted = Set<OpID>(), removed = Set<OpID>()
        for round in 0 ..< 8 {
            var made: [[ListOperation]] = Array(repeating: [], count: n)
            var bursts: [[OpID]] = []
            for r in 0 ..< n {
                let count = docs[r].text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                // Maybe remove a range of what this replica sees.
                if count > 0, rng.next() % 3 == 0 {
                    let at = Int(rng.next() % UInt64(count))
                    let k = 1 + Int(rng.next() % UInt64(min(count - at, 6)))
                    let op = try docs[r].splice("notes", ofItem: item, at: at, delete: k)
                    if case .writeFields(_, let w) = op.kind, case .text(let e) = w.writes[0].change {
                        for range in e.deletes { for j in 0 ..< range.count { removed.insert(range.first.advanced(by: j)) } }
                    }
                    made[r].append(op)
                }
                // Type a burst, one keystroke per operation, sometimes a paste in the middle.
                let after = docs[r].text("notes", ofItem: item)?.unicodeScalars.count ?? 0
                var at = Int(rng.next() % UInt64(after + 1))
                var burst: [OpID] = []
                for _ in 0 ..< 1 + Int(rng.next() % 6) {
                    let len = rng.next() % 5 == 0 ? 2 + Int(rng.next() % 4) : 1
                    let s = String((0 ..< len).map { _ in Character(Unicode.Scalar(UInt8(97 + rng.next() % 26))) })
                    let op = try docs[r].splice("notes", ofItem: item, at: at, insert: s)
                    for j in 0 ..< len { burst.append(op.id.advanced(by: j)) }
                    at += len
                    made[r].append(op)
                }
                inserted.formUnion(burst)
                bursts.append(burst)
            }
            // Deliver everyone's operations to everyone: shuffled, some twice, in random batches.
            for r in 0 ..< n {
                var incoming = (0 ..< n).filter { $0 != r }.flatMap { made[$0] }
                incoming += incoming.filter { _ in rng.next() % 4 == 0 }
                incoming.shuffle(using: &rng)
                while !incoming.isEmpty {
                    let k = 1 + Int(rng.next() % UInt64(incoming.count))
                    let batch = Array(incoming.prefix(k))
                    incoming.removeFirst(k)
                    if rng.next() % 2 == 0 {
                        let decoded = try ListOperation.decode(ListOperation.encode(batch))
                        #expect(decoded == batch, "seed \(seed): the wire round trip")
                        _ = docs[r].receive(decoded)
                    } else {
                        _ = docs[r].receive(batch)
                    }
                }
                #expect(docs[r].pendingCount == 0, "seed \(seed) round \(round): replica \(r) waits for nothing")
            }
            let reference = try #require(TextFieldTests.sequence(docs[0], item))
            let order = reference.ordered
            for r in 1 ..< n {
                let seq = try #require(TextFieldTests.sequence(docs[r], item))
                let same = seq == reference   // ids, scalars and visibility, in order
                #expect(same, "seed \(seed) round \(round): replica \(r) shows \(seq.string.debugDescription), replica 0 \(reference.string.debugDescription)")
                #expect(seq.forest.problems(TextSequence.tree).isEmpty)
            }
            // Nothing lost: exactly the characters typed and not removed are shown.
            let shown = Set(order.filter { $0.2 }.map(\.0))
            #expect(shown == inserted.subtracting(removed), "seed \(seed) round \(round): shown characters")
            // No interleaving: each burst of this round is one contiguous run, in typing order.
            let visible = order.filter { $0.2 }.map(\.0)
            let place = Dictionary(uniqueKeysWithValues: visible.enumerated().map { ($1, $0) })
            for burst in bursts {
                let spots = burst.compactMap { place[$0] }
                #expect(spots.count == burst.count)
                #expect(zip(spots, spots.dropFirst()).allSatisfy { $0.1 == $0.0 + 1 },
                        "seed \(seed) round \(round): a burst was split or reordered")
            }
            // Each replica's log (its text runs included, issue 45) gives back its operations: its
            // history decodes to them, and a fresh replica loading it, or its state snapshot,
            // holds the same text and records.
            for r in 0 ..< n where docs[r].compaction == nil {
                let history = docs[r].encodedHistory()
                let decoded = try ListOperation.decode(history, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: .max)
                #expect(decoded == docs[r].operations, "seed \(seed) round \(round): replica \(r)'s history")
                var fresh = ListDocument(replica: ReplicaID(99))
                #expect(try fresh.receive(encoded: history, maxOperations: .max).refused.isEmpty)
                #expect(TextFieldTests.sequence(fresh, item) == reference, "seed \(seed) round \(round): replica \(r)'s history loaded")
                let loaded = try ListDocument(snapshot: docs[r].encodedSnapshot(), replica: ReplicaID(98))
                #expect(loaded.records == docs[r].records, "seed \(seed) round \(round): replica \(r)'s state snapshot")
            }
            // Sometimes compact everyone at this quiescent point: later rounds merge on the
            // compacted text (removed characters dropped but the first of each removed run).
            if rng.next() % 3 == 0 {
                for r in 0 ..< n { try docs[r].compact(stable: docs[r].version) }
                #expect(TextFieldTests.sequence(docs[0], item)?.string == reference.string)
            }
        }
    }
}
