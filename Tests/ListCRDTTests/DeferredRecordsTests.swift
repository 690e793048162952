import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncSimulation

/// A state snapshot's load files the field writes of values, counters and sets per record and
/// replays a record when it is first read or changed (Records/DeferredRecords.swift, issue 43).
/// What a reader sees must be exactly what an eager replay gives, before and after any later
/// edit, on every copy of the document, with the byte counts of Docs/Semantics.md §7.
@Suite("deferred records: a loaded history's field writes replayed on first use")
struct DeferredRecordsTests {
    /// Three replicas edited at random (fields, counters, sets, text, moves, deletes), each
    /// receiving the others' operations: a board whose history holds every kind of field write.
    static func board(seed: UInt64, rounds: Int = 3) throws -> [ListDocument] {
        var rng = SplitMix64(seed: seed)
        var workload = Workload()
        workload.fieldWrites = 40
        workload.textEdits = 10
        var n = 0
        var docs = (1 ... 3).map { ListDocument(replica: ReplicaID(UInt64($0))) }
        for _ in 0 ..< rounds {
            var made: [[ListOperation]] = Array(repeating: [], count: docs.count)
            for r in docs.indices {
                for _ in 0 ..< 10 + rng.below(30) {
                    let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { n += 1; return "v\(n)" }
                    if let op = try? edit.apply(to: &docs[r]) { made[r].append(op) }
                }
            }
            for r in docs.indices {
                _ = docs[r].receive(docs.indices.filter { $0 != r }.flatMap { made[$0] })
            }
        }
        return docs
    }

    /// The same document built the slow way: its whole history received into an empty one.
    static func replayed(_ doc: ListDocument, replica: ReplicaID) throws -> ListDocument {
        var fresh = ListDocument(replica: replica)
        _ = try fresh.receive(encoded: ListOperation.encode(doc.operations(since: VersionVector())))
        return fresh
    }

    /// Fails with `what` unless `a` and `b` hold the same records (every field's whole state:
    /// stamps, increments, tags, text) and show the same list.
    static func expectSame(_ a: ListDocument, _ b: ListDocument, _ what: @autoclosure () -> String) {
        #expect(a.records.allRecords == b.records.allRecords, "records: \(what())")
        #expect(a.snapshot() == b.snapshot(), "shown: \(what())")
        #expect(a.fieldClock == b.fieldClock, "field clock: \(what())")
    }

    @Test("a loaded board's records are the replayed history's, record by record, and a load defers every record without text", arguments: 1 ... 12)
    func loadedRecordsAreReplayed(seed: UInt64) throws {
        let docs = try Self.board(seed: seed)
        let loaded = try ListDocument(snapshot: docs[0].encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(7))
        let eager = try Self.replayed(docs[0], replica: ReplicaID(7))
        #expect(loaded.records.deferred != nil, "seed \(seed): the load deferred the records")
        let withText = Set(loaded.records.materialized.keys)
        #expect(loaded.records.materialized.values.allSatisfy { $0.values.contains { $0.text != nil } },
                "seed \(seed): only records with text are made at the load")
        #expect(loaded.records.deferred!.targets.keys.allSatisfy { !withText.contains($0) }, "seed \(seed): no record both ways")
        Self.expectSame(loaded, eager, "seed \(seed): loaded against replayed")
        Self.expectSame(loaded, docs[0], "seed \(seed): loaded against the original")
        #expect(loaded.records.taken.isEmpty, "seed \(seed): reading takes nothing")
        ReclaimableBytesTests.check(loaded, "seed \(seed): loaded")
    }

    @Test("edits after a load (local ones and received ones, deletes and revivals among them) leave the loaded copy equal to one built eagerly, and its byte counts the reference's", arguments: 1 ... 16)
    func editsAfterLoad(seed: UInt64) throws {
        var docs = try Self.board(seed: seed, rounds: 2)
        var loaded = try ListDocument(snapshot: docs[1].encodedStateSnapshotBeforeVersion9(), replica: docs[1].replica)
        var eager = try Self.replayed(docs[1], replica: docs[1].replica)
        var rng = SplitMix64(seed: seed &+ 99)
        var workload = Workload()
        workload.fieldWrites = 45
        workload.textEdits = 10
        var n = 0
        for step in 0 ..< 60 {
            if rng.below(2) == 0 {
                // A local edit of the loaded copy; the eager copy receives it.
                let edit = RandomEdit.random(for: loaded, workload: workload, using: &rng) { n += 1; return "w\(n)" }
                guard let op = try? edit.apply(to: &loaded) else { continue }
                #expect(eager.receive([op]).applied == 1, "seed \(seed) step \(step): \(edit) applies to the eager copy")
            } else {
                // Another replica's edit, received by both.
                let r = rng.below(2) == 0 ? 0 : 2
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { n += 1; return "x\(n)" }
                guard let op = try? edit.apply(to: &docs[r]) else { continue }
                _ = loaded.receive([op])
                _ = eager.receive([op])
            }
            Self.expectSame(loaded, eager, "seed \(seed) step \(step)")
            ReclaimableBytesTests.check(loaded, "seed \(seed) step \(step)")
        }
        try loaded.compact(stable: loaded.version)
        try eager.compact(stable: eager.version)
        Self.expectSame(loaded, eager, "seed \(seed): both compacted")
        ReclaimableBytesTests.check(loaded, "seed \(seed): compacted")
    }

    @Test("copies of a loaded document share its deferred writes, never each other's changes")
    func copiesKeepTheirOwnChanges() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        var ids: [ItemID] = []
        for k in 0 ..< 20 {
            let id = ItemID(try doc.insertItem(atRow: k, inSection: 0, value: Data("card \(k)".utf8)).id)
            _ = try doc.writeFields(["title": .set(.string("t\(k)")), "votes": .increment(1)], ofItem: id)
            ids.append(id)
        }
        let loaded = try ListDocument(snapshot: doc.encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(2))
        var a = loaded, b = loaded
        #expect(a.field("title", of: ids[3]) == .value(.string("t3")), "read through the deferred writes")
        _ = try a.writeFields(["title": .set(.string("changed")), "votes": .increment(5)], ofItem: ids[3])
        #expect(a.field("title", of: ids[3]) == .value(.string("changed")))
        #expect(a.field("votes", of: ids[3]) == .counter(6))
        #expect(b.field("title", of: ids[3]) == .value(.string("t3")), "the other copy keeps the loaded record")
        #expect(b.field("votes", of: ids[3]) == .counter(1))
        #expect(loaded.field("title", of: ids[3]) == .value(.string("t3")))
        _ = try b.writeFields(["title": .set(.string("other"))], ofItem: ids[3])
        #expect(a.field("title", of: ids[3]) == .value(.string("changed")), "and the first keeps its own")
        #expect(b.field("title", of: ids[3]) == .value(.string("other")))
        #expect(a.records.taken == [ids[3].opID] && b.records.taken == [ids[3].opID], "each copy took only the record it changed")
        for k in [0, 7, 19] {
            #expect(a.field("title", of: ids[k]) == .value(.string("t\(k)")) || k == 3)
        }
        ReclaimableBytesTests.check(a, "copy a")
        ReclaimableBytesTests.check(b, "copy b")
    }

    @Test("a record whose value writes come before and after a text edit loads with both, in order")
    func valueWritesAroundText() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let id = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data("card".utf8)).id)
        let other = ItemID(try doc.insertItem(atRow: 1, inSection: 0, value: Data("other".utf8)).id)
        _ = try doc.writeFields(["title": .set(.string("first")), "tags": .insert(["a"])], ofItem: id)
        _ = try doc.writeFields(["title": .set(.string("untouched"))], ofItem: other)
        _ = try doc.splice("notes", ofItem: id, at: 0, insert: "hello")
        _ = try doc.writeFields(["title": .set(.string("second")), "tags": .delete(["a"])], ofItem: id)
        _ = try doc.splice("notes", ofItem: id, at: 5, insert: " world")
        let loaded = try ListDocument(snapshot: doc.encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(2))
        #expect(loaded.text("notes", ofItem: id) == "hello world")
        #expect(loaded.field("title", of: id) == .value(.string("second")))
        #expect(loaded.field("tags", of: id) == .set([]))
        #expect(loaded.records.materialized[id.opID] != nil, "the record with text is made at the load")
        #expect(loaded.records.deferred?.holds(other.opID) == true, "the other is deferred")
        #expect(loaded.records.deferred?.holds(id.opID) == false, "its writes were taken back from the deferral")
        Self.expectSame(loaded, doc, "loaded against the original")
    }
}

@Suite("state snapshots of typed text")
struct TypedTextSnapshotTests {
    @Test("a field typed into by many splices of one replica loads from a state snapshot", arguments: [1, 25, 26, 27, 100, 1_000])
    func manySplicesLoad(splices: Int) throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let id = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data("card".utf8)).id)
        for k in 0 ..< splices { _ = try doc.splice("notes", ofItem: id, at: k, insert: "a") }
        let loaded = try ListDocument(snapshot: doc.encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(2))
        #expect(loaded.text("notes", ofItem: id) == String(repeating: "a", count: splices))
    }

    @Test("thousands of small field writes of one replica (increments, set adds) load from a state snapshot")
    func manySmallWritesLoad() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let id = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data("card".utf8)).id)
        for k in 0 ..< 3_000 {
            _ = try doc.increment("votes", by: 1, ofItem: id)
            _ = try doc.writeFields(["tags": .insert(["t\(k % 50)"])], ofItem: id)
        }
        let loaded = try ListDocument(snapshot: doc.encodedStateSnapshotBeforeVersion9(), replica: ReplicaID(2))
        #expect(loaded.field("votes", of: id) == .counter(3_000))
        #expect(loaded.field("tags", of: id) == doc.field("tags", of: id))
    }
}
