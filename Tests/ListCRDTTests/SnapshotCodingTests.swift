import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Whole-document snapshots (Docs/WireFormat.md, "Snapshots"): a loaded snapshot is the same
/// document, on any replica; malformed or inconsistent snapshots give typed errors.
@Suite(.cpuHeavy) struct SnapshotCodingTests {
    /// Loads `doc`'s snapshot as another replica and checks that it is the same document.
    func expectSameAfterLoading(_ doc: ListDocument, as replica: UInt64 = 77, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = doc.encodedSnapshot()
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(replica))
        #expect(loaded.encodedState() == doc.encodedState(), sourceLocation: sourceLocation)
        #expect(loaded.version == doc.version, sourceLocation: sourceLocation)
        #expect(loaded.frontier == doc.frontier, sourceLocation: sourceLocation)
        #expect(loaded.operations == doc.operations, sourceLocation: sourceLocation)
        #expect(loaded.snapshot() == doc.snapshot(), sourceLocation: sourceLocation)
        #expect(loaded.replica == ReplicaID(replica), sourceLocation: sourceLocation)
        #expect(loaded.encodedSnapshot() == bytes, sourceLocation: sourceLocation)
        try loaded.checkInvariants()
    }

    @Test("an empty document's snapshot loads as an empty document")
    func empty() throws {
        let doc = ListDocument(replica: ReplicaID(1))
        #expect(doc.encodedSnapshot(format: .history) == Array("LSNP".utf8) + [1, 0, 1, 0, 0])
        // Version 2: no replicas, slots, records, registers, values or frontier; one empty tree.
        #expect(doc.encodedSnapshot() == Array("LSNP".utf8) + [2] + Array(repeating: 0, count: 12))
        try expectSameAfterLoading(doc)
    }

    @Test("seeded multi-replica documents load identically on another replica, and keep working")
    func randomDocuments() throws {
        for seed in 0..<25 as Range<UInt64> {
            let (_, doc) = OperationCodingTests.randomHistory(seed: seed, replicas: 2 + Int(seed % 4))
            try expectSameAfterLoading(doc)
            try expectSameAfterLoading(doc, as: doc.replica.rawValue)   // its own snapshot, reloaded
        }
        // A loaded document edits with counters after everything it loaded, and syncs both ways.
        let (_, original) = OperationCodingTests.randomHistory(seed: 99, replicas: 3)
        var loaded = try ListDocument(snapshot: original.encodedSnapshot(), replica: ReplicaID(500))
        var peer = original
        let op = try loaded.insertSection(at: 0, value: Data("new"))
        #expect(original.version.entries.allSatisfy { $0.counter < op.id.counter })
        #expect(peer.receive(loaded.operations(since: peer.version)).refused.isEmpty)
        let back = try peer.insertItem(at: IndexPath(item: 0, section: 0), value: Data("back"))
        try loaded.receive(back)
        #expect(loaded.encodedState() == peer.encodedState())
    }

    @Test("a snapshot does not carry operations still waiting for their dependencies")
    func pendingLeftOut() throws {
        var a = ListDocument(replica: ReplicaID(1))
        let first = try a.insertSection(at: 0, value: Data("S"))
        let second = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x"))
        var b = ListDocument(replica: ReplicaID(2))
        #expect(try b.receive(second) == .buffered)
        let empty = try ListDocument(snapshot: b.encodedSnapshot(), replica: ReplicaID(3))
        #expect(empty.operationCount == 0 && empty.pendingCount == 0)
        try b.receive(first)
        try expectSameAfterLoading(b)
    }

    @Test("the automerge-paper snapshot is compact and loads to the same document (size printed)")
    func automergePaper() throws {
        let doc = try AutomergePaper.document()
        let bytes = doc.encodedSnapshot()
        print("automerge-paper: snapshot of \(doc.operationCount) operations, \(try doc.itemCount(inSection: 0)) live items: \(bytes.count) bytes")
        #expect(bytes.count < 2 * 182_315)   // about one byte per typed character; Loro's list snapshot is ~455 KB
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(2))
        #expect(loaded.encodedState() == doc.encodedState())
        #expect(TraceTests.text(loaded) == TraceTests.text(doc))
    }

    @Test("every proper prefix of a snapshot fails with a typed error")
    func truncation() throws {
        let (_, doc) = OperationCodingTests.randomHistory(seed: 5, replicas: 3, edits: 40)
        for bytes in [doc.encodedSnapshot(format: .history), doc.encodedSnapshot()] {
            for n in 0..<bytes.count {
                do {
                    _ = try ListDocument(snapshot: bytes[..<n], replica: ReplicaID(9))
                    Issue.record("a prefix of \(n) of \(bytes.count) bytes loaded")
                } catch {
                    switch error {
                    case .truncated, .countTooLarge: break
                    case .invalidValue where bytes[4] == 2: break  // a v2 count checked against what follows
                    default: Issue.record("prefix of \(n) bytes: unexpected \(error)")
                    }
                }
            }
        }
    }

    @Test("bad headers and histories that do not replay to the stated version are typed errors")
    func badSnapshots() throws {
        let (_, doc) = OperationCodingTests.randomHistory(seed: 8, replicas: 2, edits: 30)
        let good = doc.encodedSnapshot()
        var wrongMagic = good; wrongMagic[0] = 0x58
        #expect(throws: WireError.invalidTag(0x58, offset: 0)) { try ListDocument(snapshot: wrongMagic, replica: ReplicaID(1)) }
        // (Version 13 is the compacted state whose floor admits concurrent operations,
        // Docs/WireFormat.md §5.13: the next one is unknown.)
        let unknown = ListDocument.compactedConcurrentSnapshotFormatVersion + 1
        var wrongVersion = good; wrongVersion[4] = unknown
        #expect(throws: WireError.unsupportedVersion(unknown)) { try ListDocument(snapshot: wrongVersion, replica: ReplicaID(1)) }
        #expect(throws: WireError.trailingBytes(2)) { try ListDocument(snapshot: good + [0, 0], replica: ReplicaID(1)) }

        // A header whose version vector the operations do not reach.
        func snapshot(version: [(UInt64, UInt64)], ops: [ListOperation]) -> [UInt8] {
            var w = WireWriter()
            w.bytes = Array("LSNP".utf8) + [1]
            w.count(version.count)
            for (r, c) in version { w.varint(r); w.varint(c) }
            return w.bytes + ListOperation.encode(ops)
        }
        let ops = doc.operations
        let entries = doc.version.entries.map { ($0.replica.rawValue, $0.counter) }
        #expect(try ListDocument(snapshot: snapshot(version: entries, ops: ops), replica: ReplicaID(1)).encodedState() == doc.encodedState())
        var higher = entries; higher[0].1 += 1
        #expect { try ListDocument(snapshot: snapshot(version: higher, ops: ops), replica: ReplicaID(1)) }
            throws: { if case WireError.inconsistentSnapshot = $0 { true } else { false } }
        #expect { try ListDocument(snapshot: snapshot(version: entries.reversed(), ops: ops), replica: ReplicaID(1)) }
            throws: { if case WireError.invalidValue = $0 { true } else { false } }
        // Operations out of causal order, duplicated, or conflicting.
        #expect { try ListDocument(snapshot: snapshot(version: entries, ops: ops.reversed()), replica: ReplicaID(1)) }
            throws: { if case WireError.inconsistentSnapshot = $0 { true } else { false } }
        #expect { try ListDocument(snapshot: snapshot(version: entries, ops: ops + [ops[0]]), replica: ReplicaID(1)) }
            throws: { if case WireError.inconsistentSnapshot = $0 { true } else { false } }
        // A value over the loader's limit.
        #expect { try ListDocument(snapshot: good, replica: ReplicaID(1), maxValueSize: 1) }
            throws: { if case WireError.valueTooLarge = $0 { true } else { false } }
        // A tiny snapshot claiming 2^40 operations.
        let huge: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x20]
        #expect { try ListDocument(snapshot: Array("LSNP".utf8) + [1, 0, 1, 0] + huge, replica: ReplicaID(1)) }
            throws: { if case WireError.countTooLarge = $0 { true } else { false } }
        #expect { try ListDocument(snapshot: Array("LSNP".utf8) + [1] + huge, replica: ReplicaID(1)) }
            throws: { if case WireError.countTooLarge = $0 { true } else { false } }
    }

    @Test("2,000 mutated snapshots never crash the loader")
    func garbageFuzz() throws {
        var rng = SplitMix64(seed: 77)
        let (_, doc) = OperationCodingTests.randomHistory(seed: 11, replicas: 3, edits: 30)
        let good = doc.encodedSnapshot()
        var loaded = 0
        for _ in 0..<2_000 {
            var bytes = good
            for _ in 0..<(1 + rng.below(3)) {
                let at = rng.below(bytes.count)
                if rng.chance(80) { bytes[at] ^= UInt8(1 << rng.below(8)) } else { bytes.remove(at: at) }
            }
            if let d = try? ListDocument(snapshot: bytes, replica: ReplicaID(4)) {
                loaded += 1
                try d.checkInvariants()
            }
        }
        print("snapshot fuzz: \(loaded) of 2000 mutated snapshots still loaded")
    }
}
