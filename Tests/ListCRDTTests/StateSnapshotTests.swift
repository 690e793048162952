import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestSupport
import ListSyncTestTraits

/// State snapshots (format version 2, Docs/WireFormat.md §5.2): a loaded state snapshot is the same
/// document as the saved one in everything a test can see, keeps working the same way, and any
/// damaged snapshot is a typed error or (when only a value's bytes changed) a sound document.
@Suite(.cpuHeavy) struct StateSnapshotTests {
    /// Loads `doc`'s state snapshot as `replica` and checks everything visible against `doc`;
    /// returns the loaded document.
    @discardableResult
    static func expectSame(_ doc: ListDocument, as replica: UInt64 = 77,
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> ListDocument {
        let bytes = doc.encodedSnapshot()
        let fields = doc.operations.contains(where: \.carriesFields)
        // Version 11 when the log holds text runs (typed text, Docs/WireFormat.md §5.11).
        #expect(bytes[4] == (!fields ? ListDocument.stateSnapshotFormatVersion
                             : doc.log.others.hasRuns ? ListDocument.stateDerivedTextSnapshotFormatVersion
                             : ListDocument.stateRecordsSnapshotFormatVersion),
                sourceLocation: sourceLocation)
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(replica))
        try loaded.checkInvariants()
        #expect(loaded.encodedState() == doc.encodedState(), sourceLocation: sourceLocation)
        #expect(loaded.snapshot() == doc.snapshot(), sourceLocation: sourceLocation)
        #expect(loaded.version == doc.version, sourceLocation: sourceLocation)
        #expect(loaded.frontier == doc.frontier, sourceLocation: sourceLocation)
        #expect(loaded.clock == doc.clock, sourceLocation: sourceLocation)
        #expect(loaded.operationCount == doc.operationCount, sourceLocation: sourceLocation)
        #expect(loaded.operations == doc.operations, sourceLocation: sourceLocation)
        let half = doc.operationCount / 2
        #expect(try loaded.operations(from: half) == doc.operations(from: half), sourceLocation: sourceLocation)
        // operations(since:) for a few versions in the history.
        var partial = ListDocument(replica: ReplicaID(4242))
        partial.receive(Array(doc.operations.prefix(half)))
        #expect(loaded.operations(since: partial.version) == doc.operations(since: partial.version),
                sourceLocation: sourceLocation)
        #expect(loaded.operations(since: VersionVector()) == doc.operations, sourceLocation: sourceLocation)
        #expect(loaded.encodedSnapshot() == bytes, sourceLocation: sourceLocation)
        #expect(loaded.encodedSnapshot(format: .history) == doc.encodedSnapshot(format: .history),
                sourceLocation: sourceLocation)
        return loaded
    }

    /// Edits `a` and `b` the same way (the same seeded edits), and checks that they stay equal and
    /// that a third replica receiving each one's new operations ends equal to both.
    static func expectSameFurtherEdits(_ original: ListDocument, _ loaded: ListDocument, seed: UInt64,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        // Same replica, so the same edits make the same operations.
        var a = original
        var b = try ListDocument(snapshot: original.encodedSnapshot(), replica: original.replica)
        _ = loaded
        let (countA, countB) = (a.operationCount, b.operationCount)
        var rngA = SplitMix64(seed: seed), rngB = SplitMix64(seed: seed)
        var n = 0, m = 0
        for _ in 0 ..< 30 {
            let ea = RandomEdit.random(for: a, rng: &rngA) { n += 1; return "e\(n)" }
            let eb = RandomEdit.random(for: b, rng: &rngB) { m += 1; return "e\(m)" }
            #expect(ea == eb, sourceLocation: sourceLocation)
            let oa = try? ea.apply(to: &a), ob = try? eb.apply(to: &b)
            #expect(oa == ob, sourceLocation: sourceLocation)
        }
        try b.checkInvariants()
        #expect(a.encodedState() == b.encodedState(), sourceLocation: sourceLocation)
        #expect(a.operations == b.operations, sourceLocation: sourceLocation)
        // A third replica that has the original receives both documents' new operations.
        var third = try ListDocument(snapshot: original.encodedSnapshot(format: .history), replica: ReplicaID(31337))
        let fromA = try a.operations(from: countA), fromB = try b.operations(from: countB)
        #expect(fromA == fromB, sourceLocation: sourceLocation)
        #expect(third.receive(fromB).refused.isEmpty, sourceLocation: sourceLocation)
        #expect(third.encodedState() == a.encodedState(), sourceLocation: sourceLocation)
        // And the loaded document (another replica) receives them too.
        var other = loaded
        #expect(other.receive(fromA).refused.isEmpty, sourceLocation: sourceLocation)
        #expect(other.encodedState() == a.encodedState(), sourceLocation: sourceLocation)
        try other.checkInvariants()
    }

    @Test("seeded multi-replica histories (moves, deleted sections, value writes) load as the same document")
    func randomHistories() throws {
        for seed in 0 ..< 30 as Range<UInt64> {
            let (_, doc) = OperationCodingTests.randomHistory(seed: seed, replicas: 1 + Int(seed % 5), edits: 120)
            let loaded = try Self.expectSame(doc)
            try Self.expectSame(doc, as: doc.replica.rawValue)
            if seed % 3 == 0 { try Self.expectSameFurtherEdits(doc, loaded, seed: seed) }
        }
    }

    @Test("documents that every kind of edit touched, including concurrent moves and section deletes")
    func everyKind() throws {
        var rng = SplitMix64(seed: 0x5717E)
        for round in 0 ..< 6 {
            var docs = (0 ..< 3).map { ListDocument(replica: ReplicaID(UInt64($0 + 1) * 7)) }
            var n = 0
            for _ in 0 ..< 80 {
                let r = rng.below(3)
                let edit = RandomEdit.random(for: docs[r], rng: &rng) { n += 1; return "v\(n)" }
                _ = try? edit.apply(to: &docs[r])
                if rng.chance(25) {
                    let other = rng.below(3)
                    docs[other].receive(docs[r].operations(since: docs[other].version))
                }
                if rng.chance(10) { try Self.expectSame(docs[r]) }
            }
            for r in 0 ..< 3 { for s in 0 ..< 3 { docs[r].receive(docs[s].operations(since: docs[r].version)) } }
            let loaded = try Self.expectSame(docs[0])
            try Self.expectSameFurtherEdits(docs[0], loaded, seed: UInt64(round))
        }
    }

    @Test("seeded boards with fields and long typing sessions (hundreds of keystrokes and backspaces per field, by several replicas) load as the same document, records included", arguments: 0 ..< 6 as Range<UInt64>)
    func fieldsAndLongTyping(seed: UInt64) throws {
        var rng = SplitMix64(seed: 0x7E47 &+ seed)
        var workload = Workload()
        workload.fieldWrites = 30
        workload.textEdits = 15
        var docs = (0 ..< 3).map { ListDocument(replica: ReplicaID(UInt64($0 + 1) * 11)) }
        var n = 0
        for _ in 0 ..< 4 {
            for r in 0 ..< 3 {
                for _ in 0 ..< 20 {
                    let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { n += 1; return "v\(n)" }
                    _ = try? edit.apply(to: &docs[r])
                }
                // A typing session: one key at a time at a caret, with backspaces now and then.
                let rows = docs[r].snapshot().sections.flatMap(\.items)
                guard !rows.isEmpty else { continue }
                let item = rows[rng.below(rows.count)].id
                var caret = rng.below((docs[r].text("notes", ofItem: item)?.unicodeScalars.count ?? 0) + 1)
                for _ in 0 ..< rng.below(400) {
                    if caret > 0, rng.chance(15), (try? docs[r].splice("notes", ofItem: item, at: caret - 1, delete: 1)) != nil {
                        caret -= 1
                        continue
                    }
                    let typed = rng.chance(5) ? "é😀" : "k"
                    if (try? docs[r].splice("notes", ofItem: item, at: caret, insert: typed)) != nil {
                        caret += typed.unicodeScalars.count
                    } else {
                        break   // a value field: not typed into
                    }
                }
            }
            for r in 0 ..< 3 { for s in 0 ..< 3 { docs[r].receive(docs[s].operations(since: docs[r].version)) } }
        }
        for doc in docs {
            let loaded = try Self.expectSame(doc)
            #expect(loaded.records.allRecords == doc.records.allRecords, "seed \(seed): every field's state")
        }
        try Self.expectSameFurtherEdits(docs[0], try ListDocument(snapshot: docs[0].encodedSnapshot(), replica: ReplicaID(77)), seed: seed)
    }

    @Test("an empty document, and a document whose operations wait in the causal buffer")
    func emptyAndPending() throws {
        try Self.expectSame(ListDocument(replica: ReplicaID(1)))
        var a = ListDocument(replica: ReplicaID(1))
        let first = try a.insertSection(at: 0, value: Data("S".utf8))
        let second = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
        var b = ListDocument(replica: ReplicaID(2))
        #expect(try b.receive(second) == .buffered)
        // Buffered operations are not part of a snapshot (as in version 1).
        let loaded = try ListDocument(snapshot: b.encodedSnapshot(), replica: ReplicaID(3))
        #expect(loaded.operationCount == 0 && loaded.pendingCount == 0)
        try b.receive(first)
        try Self.expectSame(b)
    }

    @Test("version-1 snapshots still load: a fixed fixture, and generated ones")
    func historySnapshotsLoad() throws {
        // The worked example of Docs/WireFormat.md §6 behind a version-1 header.
        let (ops, batch) = try OperationCodingTests.workedExample()
        let fixture: [UInt8] = Array("LSNP".utf8) + [0x01, 0x01, 0x07, 0x04] + batch
        #expect(batch.count == 20)
        let doc = try ListDocument(snapshot: fixture, replica: ReplicaID(9))
        #expect(doc.operations == ops)
        #expect(doc.snapshot().sections.map { $0.items.map(\.value) } == [[Data("h".utf8)]])
        try Self.expectSame(doc)
        for seed in 0 ..< 8 as Range<UInt64> {
            let (_, doc) = OperationCodingTests.randomHistory(seed: seed + 100, replicas: 3, edits: 80)
            let v1 = doc.encodedSnapshot(format: .history)
            #expect(v1[4] == 1)
            let loaded = try ListDocument(snapshot: v1, replica: ReplicaID(5))
            #expect(loaded.encodedState() == doc.encodedState())
            #expect(loaded.encodedSnapshot() == doc.encodedSnapshot())
        }
    }

    @Test("the editing traces round trip: automerge-paper and clownschool")
    func traces() throws {
        let paper = try AutomergePaper.document()
        let bytes = paper.encodedSnapshot()
        print("automerge-paper: state snapshot \(bytes.count) bytes, history snapshot \(paper.encodedSnapshot(format: .history).count) bytes")
        #expect(bytes.count <= 455_594)   // Loro's list snapshot of the same trace (Docs/Benchmarks.md)
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        try loaded.checkInvariants()
        #expect(loaded.encodedState() == paper.encodedState())
        #expect(TraceTests.text(loaded) == TraceTests.text(paper))
        #expect(loaded.operations(since: VersionVector()).count == paper.operationCount)

        let trace = try ConcurrentTraceTests.clownschool.get()
        var replay = try ConcurrentReplay(trace, replicas: [1, 2, 3].map(ReplicaID.init))
        try replay.mergeAll()
        for doc in replay.documents { try Self.expectSame(doc) }
    }
}
