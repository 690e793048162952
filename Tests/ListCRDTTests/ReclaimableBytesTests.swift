import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncSimulation

/// The bytes compaction would free (`ListDocument.reclaimableBytes`, Docs/Semantics.md §7,
/// "Reclaimable bytes"), counted as operations apply: always what a slow count from the tables
/// and the log's operations gives (`referenceBytes`), on every route an operation takes (local
/// edits, received operations in any order, encoded batches and their typed and delete runs, a
/// whole history into an empty document), and across compactions and snapshot loads.
@Suite("reclaimable bytes: the running count against a slow reference")
struct ReclaimableBytesTests {
    /// Fails with `what` unless `doc`'s running counts are the reference's.
    static func check(_ doc: ListDocument, _ what: @autoclosure () -> String) {
        let reference = doc.referenceBytes
        #expect(doc.reclaimableBytes == reference.reclaimable, "reclaimable: \(what())")
        #expect(doc.documentBytes == reference.document, "document bytes: \(what())")
        #expect(doc.reclaimableBytes <= doc.documentBytes, "reclaimable within the document: \(what())")
    }

    /// A value of 0 to 300 bytes (some long, as a note or a picture's caption is), unique.
    static func value(_ rng: inout SplitMix64, _ n: inout Int) -> String {
        n += 1
        let length = rng.below(4) == 0 ? rng.below(300) : rng.below(12)
        return "v\(n)-" + String(repeating: "x", count: length)
    }

    @Test("random edits of 3 replicas, delivered shuffled in random batches (half encoded), compacted and reloaded now and then: the running count is the reference's after every step", arguments: 1 ... 30)
    func runningCountMatchesReference(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var values = SplitMix64(seed: seed &+ 1_000_003)
        var workload = Workload()
        workload.textEdits = 15
        workload.fieldWrites = 25
        var n = 0
        var docs = (1 ... 3).map { ListDocument(replica: ReplicaID(UInt64($0))) }
        for round in 0 ..< 6 {
            var made: [[ListOperation]] = Array(repeating: [], count: docs.count)
            for r in docs.indices {
                for _ in 0 ..< 4 + rng.below(16) {
                    let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { Self.value(&values, &n) }
                    if let op = try? edit.apply(to: &docs[r]) { made[r].append(op) }
                    Self.check(docs[r], "seed \(seed) round \(round): replica \(r) after \(edit)")
                }
                // Now and then a typed run and its backspaces (the run routes).
                if rng.below(3) == 0, docs[r].sectionCount > 0 {
                    let count = try docs[r].itemCount(inSection: 0)
                    var at = rng.below(count + 1)
                    for _ in 0 ..< 5 + rng.below(20) {
                        made[r].append(try docs[r].insertItem(at: IndexPath(item: at, section: 0), value: Data("k".utf8)))
                        at += 1
                    }
                    for _ in 0 ..< rng.below(at + 1) where at > 0 {
                        at -= 1
                        made[r].append(try docs[r].deleteItem(at: IndexPath(item: at, section: 0)))
                    }
                    Self.check(docs[r], "seed \(seed) round \(round): replica \(r) after a typed run")
                }
            }
            for r in docs.indices {
                var incoming = docs.indices.filter { $0 != r }.flatMap { made[$0] }
                incoming += incoming.filter { _ in rng.below(5) == 0 }   // duplicates
                if rng.below(2) == 0 { incoming.shuffle(using: &rng) }
                while !incoming.isEmpty {
                    let k = 1 + rng.below(incoming.count)
                    let batch = Array(incoming.prefix(k))
                    incoming.removeFirst(k)
                    if rng.below(2) == 0 {
                        _ = try docs[r].receive(encoded: ListOperation.encode(batch))
                    } else {
                        _ = docs[r].receive(batch)
                    }
                    Self.check(docs[r], "seed \(seed) round \(round): replica \(r) after a batch of \(k)")
                }
            }
            // Every replica has everything: a whole history into an empty document (the load
            // routes), a snapshot's load, and now and then a compaction of every replica.
            let history = docs[0].operations(since: VersionVector())
            var fresh = ListDocument(replica: ReplicaID(9))
            _ = try fresh.receive(encoded: ListOperation.encode(history))
            Self.check(fresh, "seed \(seed) round \(round): the whole history into an empty document")
            for r in docs.indices {
                let loaded = try ListDocument(snapshot: docs[r].encodedSnapshot(), replica: docs[r].replica)
                Self.check(loaded, "seed \(seed) round \(round): replica \(r) loaded from its snapshot")
                #expect(loaded.reclaimableBytes == docs[r].reclaimableBytes, "seed \(seed): a load counts what the document counted")
            }
            if rng.below(3) == 0, docs.allSatisfy({ $0.version == docs[0].version && $0.pendingCount == 0 }) {
                for r in docs.indices {
                    try docs[r].compact(stable: docs[r].version)
                    Self.check(docs[r], "seed \(seed) round \(round): replica \(r) compacted")
                    let loaded = try ListDocument(snapshot: docs[r].encodedSnapshot(), replica: docs[r].replica)
                    Self.check(loaded, "seed \(seed) round \(round): replica \(r) loaded from its compacted snapshot")
                }
            }
        }
    }

    @Test("six items of 60,000 bytes, five deleted: the five values and the log are reclaimable; a compaction frees them and counts nothing left")
    func deletedValuesAreReclaimable() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        _ = try doc.insertSection(at: 0, value: Data("board".utf8))
        for k in 0 ..< 6 { _ = try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data(repeating: UInt8(65 + k), count: 60_000)) }
        let log = 7 * ListDocument.loggedOperationBytes
        #expect(doc.reclaimableBytes == log, "nothing dead yet: only the log")
        #expect(doc.documentBytes == 360_005 + log)
        for _ in 0 ..< 5 { _ = try doc.deleteItem(at: IndexPath(item: 0, section: 0)) }
        #expect(doc.reclaimableBytes == 300_000 + 12 * ListDocument.loggedOperationBytes)
        Self.check(doc, "after the deletes")
        try doc.compact(stable: doc.version)
        #expect(doc.reclaimableBytes == 0, "compaction frees everything it counted")
        #expect(doc.documentBytes == 60_005, "what is left: the live item's value and the section's")
        Self.check(doc, "after the compaction")
    }

    @Test("a move that wins over a concurrent delete brings the item back: its value is no longer reclaimable")
    func moveRevivesItem() throws {
        var a = ListDocument(replica: ReplicaID(1))
        _ = try a.insertSection(at: 0, value: Data("s".utf8))
        _ = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data(repeating: 1, count: 1_000))
        _ = try a.insertItem(at: IndexPath(item: 1, section: 0), value: Data("b".utf8))
        var b = a.fork(as: 2)
        let delete = try a.deleteItem(at: IndexPath(item: 0, section: 0))
        let move = try #require(try b.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 1, section: 0)))
        #expect(a.reclaimableBytes >= 1_000)
        _ = a.receive([move])
        _ = b.receive([delete])
        #expect(a.contains(try b.itemID(at: IndexPath(item: 1, section: 0))), "the move wins (§3.4)")
        #expect(a.reclaimableBytes < 1_000 && a.reclaimableBytes == b.reclaimableBytes)
        Self.check(a, "a")
        Self.check(b, "b")
    }
}
