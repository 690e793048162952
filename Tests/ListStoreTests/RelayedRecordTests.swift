import Foundation
import ListCRDT
import ListSyncSimulation
import Testing
@testable import ListStore

/// The log's relayed records (Docs/Storage.md, "Relayed records"): which operations came through
/// a peer link, kept beside the batches so that a restart knows it without the stability file.
@Suite("Relayed records")
struct RelayedRecordTests {
    /// Three batches of two replicas, the second relayed (of replica 2).
    static func batches() -> (own: [ListOperation], relayed: [ListOperation], later: [ListOperation]) {
        var a = EditStream(replica: 1, seed: 71), b = EditStream(replica: 2, seed: 72)
        let own = a.batch(3)
        let relayed = b.batch(4)
        let later = a.batch(2)
        return (own, relayed, later)
    }

    /// The document with `ops` received, in order.
    static func document(_ ops: [ListOperation]) -> ListDocument {
        var doc = ListDocument(replica: ReplicaID(1))
        _ = doc.receive(ops)
        return doc
    }

    @Test("runs encode and decode: merged where they touch, split into parts, and bad bytes refused with a typed error")
    func runsCoding() throws {
        var runs = OperationRuns()
        runs.insert(1...4, of: ReplicaID(3))
        runs.insert(5...9, of: ReplicaID(3))
        runs.insert(20...20, of: ReplicaID(3))
        runs.insert(2...3, of: ReplicaID(7))
        #expect(runs.runs[ReplicaID(3)] == [1...9, 20...20])
        #expect(try OperationRuns(decoding: runs.encoded()) == runs)
        #expect(runs.contains(OpID(counter: 9, replica: ReplicaID(3))))
        #expect(!runs.contains(OpID(counter: 10, replica: ReplicaID(3))))
        #expect(!runs.contains(OpID(counter: 2, replica: ReplicaID(4))))
        let parts = runs.parts(maxRuns: 2)
        #expect(parts.count == 2)
        var joined = OperationRuns()
        for p in parts { joined.formUnion(p) }
        #expect(joined == runs)
        #expect(OperationRuns().parts().isEmpty)
        #expect(throws: WireError.self) { try OperationRuns(decoding: runs.encoded() + [0]) }
        #expect(throws: WireError.self) { try OperationRuns(decoding: Array(runs.encoded().dropLast())) }
        // One replica, one run 5...4: first after last.
        #expect(throws: WireError.self) { try OperationRuns(decoding: [1, 3, 1, 5, 4]) }
        // One replica, one run 0...2: counters start at 1.
        #expect(throws: WireError.self) { try OperationRuns(decoding: [1, 3, 1, 0, 2]) }
        // Out of order: the runs stay sorted, disjoint and not adjacent, so one set is one value,
        // and runs written out of order or overlapping (as a build before kept them) decode to it.
        var unordered = OperationRuns()
        for range: ClosedRange<UInt64> in [30...31, 10...12, 40...40, 13...14, 20...35, 1...1] { unordered.insert(range, of: ReplicaID(5)) }
        #expect(unordered.runs[ReplicaID(5)] == [1...1, 10...14, 20...35, 40...40])
        #expect(unordered.count == 1 + 5 + 16 + 1)
        #expect(unordered.contains(OpID(counter: 35, replica: ReplicaID(5))))
        #expect(!unordered.contains(OpID(counter: 36, replica: ReplicaID(5))))
        #expect(!unordered.contains(OpID(counter: 2, replica: ReplicaID(5))))
        #expect(try OperationRuns(decoding: [1, 5, 3, 20, 35, 10, 14, 30, 31]) == {
            var r = OperationRuns(); r.insert(10...14, of: ReplicaID(5)); r.insert(20...35, of: ReplicaID(5)); return r
        }())
        // Within a floor: counters up to it go, runs past it stay (cut where they cross it).
        var trimmed = runs
        var floor = VersionVector()
        floor.observe(OpID(counter: 5, replica: ReplicaID(3)))
        floor.observe(OpID(counter: 3, replica: ReplicaID(7)))
        trimmed.remove(within: floor)
        #expect(trimmed.runs == [ReplicaID(3): [6...9, 20...20]])
    }

    @Test("a document's own log: a relayed batch is named so after reopening, the others are not, and a snapshot carries the runs into the new generation")
    func ownLog() throws {
        let folder = temporaryFolder("relayed-own")
        defer { removeFolder(folder) }
        let (own, relayed, later) = Self.batches()
        do {
            let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
            try store.append(own)
            try store.append(relayed, relayed: true)
            try store.close()
        }
        let (store, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(doc.version == Self.document(own + relayed).version)
        #expect(store.recoveryReport.relayed == OperationRuns(relayed))
        #expect(!own.contains { store.recoveryReport.relayed.contains($0.id) })
        // A new generation: the old log's records go; the runs given are written in the new one.
        try store.snapshot(doc, relayed: store.recoveryReport.relayed)
        try store.append(later)
        try store.close()
        let (again, last) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(last.version == Self.document(own + relayed + later).version)
        #expect(again.recoveryReport.relayed == OperationRuns(relayed))
        // A compaction given none writes none.
        try again.compact(last)
        try again.close()
        let (third, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(third.recoveryReport.relayed.isEmpty)
        try third.close()
    }

    @Test("the shared log: relayed records of two documents stay each its own, across a snapshot that carries them and a reopening")
    func sharedLog() throws {
        let root = temporaryFolder("relayed-shared")
        defer { removeFolder(root) }
        let (own, relayed, later) = Self.batches()
        do {
            let (folder, stores, _) = try SharedLogTests.openFolder(root, count: 2)
            try stores[0].append(own)
            try stores[0].append(relayed, relayed: true)
            try stores[1].append(own, relayed: true)
            SharedLogTests.close(folder, stores)
        }
        do {
            let (folder, stores, docs) = try SharedLogTests.openFolder(root, count: 2)
            #expect(stores[0].recoveryReport.relayed == OperationRuns(relayed))
            #expect(stores[1].recoveryReport.relayed == OperationRuns(own))
            #expect(docs[0].version == Self.document(own + relayed).version)
            try stores[0].snapshot(docs[0], relayed: stores[0].recoveryReport.relayed)
            try stores[0].append(later)
            SharedLogTests.close(folder, stores)
        }
        let (folder, stores, docs) = try SharedLogTests.openFolder(root, count: 2)
        defer { SharedLogTests.close(folder, stores) }
        #expect(stores[0].recoveryReport.relayed == OperationRuns(relayed))
        #expect(docs[0].version == Self.document(own + relayed + later).version)
        #expect(stores[1].recoveryReport.relayed == OperationRuns(own))
    }

    @Test("the shared log cut at every byte of a relayed batch: the runs are back whenever the batch is, and name nothing else")
    func tornRelayedBatch() throws {
        let base = temporaryFolder("relayed-torn-base")
        defer { removeFolder(base) }
        var options = SharedLogOptions()
        options.segmentBytes = 1 << 20
        options.preallocation = 0
        let (own, relayed, _) = Self.batches()
        let before: UInt64, after: UInt64
        do {
            let (folder, stores, _) = try SharedLogTests.openFolder(base, count: 1, options: options)
            try stores[0].append(own)
            before = try folder.sharedLog!.end
            try stores[0].append(relayed, relayed: true)
            after = try folder.sharedLog!.end
            SharedLogTests.close(folder, stores)
        }
        let segment = "/wal/" + SharedLogFormat.segmentName(0)
        let bytes = try FileSystem.system.readFile(base + segment)
        var cases = 0, named = 0
        for cut in Int(before)...Int(after) {
            let root = temporaryFolder("relayed-torn")
            defer { removeFolder(root) }
            try FileManager.default.removeItem(atPath: root)
            try FileManager.default.copyItem(atPath: base, toPath: root)
            try Data(bytes[..<cut]).write(to: URL(fileURLWithPath: root + segment))
            let (folder, stores, docs) = try SharedLogTests.openFolder(root, count: 1, options: options)
            let hasBatch = docs[0].version.includes(Self.document(own + relayed).version)
            let runs = stores[0].recoveryReport.relayed
            if hasBatch { #expect(runs == OperationRuns(relayed), "cut \(cut)") }
            if !runs.isEmpty { named += 1 }
            #expect(runs.isEmpty || runs == OperationRuns(relayed), "cut \(cut)")
            SharedLogTests.close(folder, stores)
            cases += 1
        }
        #expect(cases > 20 && named > 0)
    }
}
