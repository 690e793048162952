import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation

/// Compaction (Docs/Semantics.md, "Compaction"): what is collected, what stays, and that no
/// replica ever shows something else because another compacted.
@Suite struct CompactionTests {
    /// Three replicas with the same list, synced.
    func synced(_ values: [String]) throws -> [ListDocument] {
        let a = try ListDocument.make(1, sections: [values])
        return [a, a.fork(as: 2), a.fork(as: 3)]
    }

    @Test("the visible list, values and ids are unchanged; dead slots inside runs, dead items and the log are dropped")
    func collectsDeadState() throws {
        var doc = try ListDocument.make(1, sections: [(0..<20).map { "v\($0)" }])
        for _ in 0..<10 { _ = try doc.deleteItem(at: IndexPath(item: 5, section: 0)) }
        let before = doc.snapshot()
        let report = try doc.compact(stable: doc.version)
        try doc.checkInvariants()
        #expect(doc.snapshot() == before)
        #expect(report.slotsBefore == 21 && report.slotsAfter == 12, "\(report)")   // 1 section, 10 live, 1 anchor
        #expect(report.itemsAfter == 11)
        #expect(doc.operationCount == 0 && report.operationsDropped > 0)
        #expect(doc.historyFloor == doc.version)
    }

    @Test("compaction at a version the document has not applied whole, or at one its floor already includes, is refused and changes nothing (a version it has passed is a stable prefix: PrefixCompactionTests)")
    func refusesUnstable() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"]])
        let state = doc.encodedState()
        let ahead = VersionVector([ReplicaID(1): doc.version[ReplicaID(1)] + 1])
        #expect(throws: CompactionError.self) { try doc.compact(stable: ahead) }
        #expect(doc.encodedState() == state)
        let older = VersionVector([ReplicaID(1): doc.version[ReplicaID(1)] - 1])
        try doc.compact(stable: older)
        #expect(doc.historyFloor == older && doc.operationCount == 1)
        let compacted = doc.encodedState()
        #expect(throws: CompactionError.self) { try doc.compact(stable: older) }
        #expect(throws: CompactionError.self) { try doc.compact(stable: VersionVector()) }
        #expect(doc.encodedState() == compacted)
    }

    @Test("an insert by a replica that did not compact names the first dead slot of a run as its right origin")
    func uncompactedAuthorNamesAnchor() throws {
        var docs = try synced(["a", "b", "c", "d", "e"])
        // b, c, d die on replica 1; everyone sees it.
        for _ in 0..<3 {
            let op = try docs[0].deleteItem(at: IndexPath(item: 1, section: 0))
            try docs[1].receive(op)
            try docs[2].receive(op)
        }
        try docs[0].compact(stable: docs[0].version)           // 1 compacts, 2 and 3 do not (yet)
        // Replica 2 inserts after a: right origin b (dead). Replica 3 concurrently inserts before e:
        // its right origin is e; and a legacy-free concurrent insert after a too.
        let x = try docs[1].insertItem(at: IndexPath(item: 1, section: 0), value: Data("x".utf8))
        let y = try docs[2].insertItem(at: IndexPath(item: 1, section: 0), value: Data("y".utf8))
        for (k, op) in [(0, x), (2, x), (0, y), (1, y)] { try docs[k].receive(op) }
        for d in docs { try d.checkInvariants() }
        #expect(docs[0].rows == docs[1].rows && docs[1].rows == docs[2].rows)
        #expect(Set(docs[0].flat) == ["a", "x", "y", "e"])
    }

    @Test("an operation made before its author saw the floor is refused with a typed error, changes nothing, and its author re-syncs from a snapshot")
    func offlineReplicaRebases() throws {
        var docs = try synced(["a", "b", "c", "d"])
        // Replica 3 goes offline and types after b.
        let late = try docs[2].insertItem(at: IndexPath(item: 2, section: 0), value: Data("late".utf8))
        // 1 and 2 delete b and c, and (3 being declared gone) compact.
        for _ in 0..<2 {
            let op = try docs[0].deleteItem(at: IndexPath(item: 1, section: 0))
            try docs[1].receive(op)
        }
        try docs[0].compact(stable: docs[0].version)
        let state = docs[0].encodedState()
        #expect(throws: ApplyError.self) { try docs[0].receive(late) }
        #expect(docs[0].encodedState() == state)
        #expect(docs[0].pendingCount == 0)
        // The documented path: replica 3 loads a snapshot and makes its unsent edit again.
        var again = try ListDocument(snapshot: docs[0].encodedSnapshot(), replica: ReplicaID(3))
        let redo = try again.insertItem(at: IndexPath(item: 1, section: 0), value: Data("late".utf8))
        try docs[0].receive(redo)
        try docs[1].receive(redo)
        #expect(docs[0].rows == again.rows && docs[1].rows == again.rows)
        #expect(again.flat == ["a", "late", "d"])
        // Every operation after the floor had seen every operation of it.
        let floorOp = try #require(Array(late.deps).first)     // an operation of the floor
        #expect(docs[0].historyFloor?.contains(floorOp) == true)
        #expect(docs[0].hasSeen(floorOp, at: redo.id))
        #expect(!docs[0].hasSeen(redo.id, at: floorOp))
    }

    @Test("a duplicate of an operation before the floor is a duplicate")
    func duplicateBeforeFloor() throws {
        var doc = try ListDocument.make(1, sections: [["a"]])
        var other = doc.fork(as: 2)
        let op = try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z".utf8))
        try doc.receive(op)
        try doc.compact(stable: doc.version)
        #expect(try doc.receive(op) == .duplicate)
        #expect(doc.receive([op]).duplicates == 1)
    }

    @Test("the snapshot after compaction is version 3, smaller, loads to the same document, and every truncation of it is a typed error")
    func snapshotAfterCompaction() throws {
        var doc = try ListDocument.make(1, sections: [(0..<50).map { "item \($0)" }])
        var rng = SplitMix64(seed: 29)
        for k in 0..<1_000 {
            _ = try doc.insertItem(at: IndexPath(item: rng.below(51), section: 0), value: Data("churn \(k)".utf8))
            _ = try doc.deleteItem(at: IndexPath(item: rng.below(51), section: 0))
        }
        let v2 = doc.encodedSnapshot()
        #expect(v2[4] == 2)
        try doc.compact(stable: doc.version)
        _ = try doc.insertItem(at: IndexPath(item: 3, section: 0), value: Data("after".utf8))
        let v3 = doc.encodedSnapshot()
        #expect(v3[4] == 3)
        #expect(v3.count * 3 < v2.count, "\(v3.count) vs \(v2.count)")
        let loaded = try ListDocument(snapshot: v3, replica: ReplicaID(1))
        try loaded.checkInvariants()
        #expect(loaded.snapshot() == doc.snapshot())
        #expect(loaded.version == doc.version && loaded.historyFloor == doc.historyFloor)
        #expect(loaded.encodedSnapshot() == v3)
        // An old (version 2) snapshot still loads.
        #expect(try ListDocument(snapshot: v2, replica: ReplicaID(1)).encodedSnapshot(format: .state) == v2)
        for cut in stride(from: 5, to: v3.count, by: 1) {
            #expect(throws: WireError.self) { _ = try ListDocument(snapshot: v3[..<cut], replica: ReplicaID(1)) }
        }
        for _ in 0..<300 {
            var bad = v3
            bad[5 + rng.below(bad.count - 5)] ^= UInt8(1 + rng.below(255))
            if let d = try? ListDocument(snapshot: bad, replica: ReplicaID(1)) { try d.checkInvariants() }
        }
    }

    @Test("a typed run and a delete run that go on across the compaction point, received as one encoded batch, land alike on compacted and uncompacted replicas")
    func runsAcrossTheFloor() throws {
        var docs = try synced(["a", "b", "c"])
        var shadow = docs[0].fork(as: 9)
        func send(_ ops: [ListOperation], from k: Int) throws {
            let bytes = ListOperation.encode(ops)
            for j in 0..<3 where j != k {
                #expect(try docs[j].receive(encoded: bytes, maxOperations: 1_000).isSuccess)
            }
            #expect(try shadow.receive(encoded: bytes, maxOperations: 1_000).isSuccess)
        }
        var typed: [ListOperation] = []
        for (k, ch) in ["x", "y", "z"].enumerated() {
            typed.append(try docs[0].insertItem(at: IndexPath(item: 1 + k, section: 0), value: Data(ch.utf8)))
        }
        try send(typed, from: 0)
        try docs[0].compact(stable: docs[0].version)
        try docs[1].compact(stable: docs[1].version)
        // Replica 1 types on right after z, and deletes backwards; replica 3 never compacted.
        typed = []
        for (k, ch) in ["p", "q"].enumerated() {
            typed.append(try docs[0].insertItem(at: IndexPath(item: 4 + k, section: 0), value: Data(ch.utf8)))
        }
        for k in 0..<3 { typed.append(try docs[0].deleteItem(at: IndexPath(item: 5 - k, section: 0))) }
        try send(typed, from: 0)
        let more = [try docs[2].insertItem(at: IndexPath(item: 2, section: 0), value: Data("w".utf8))]
        try send(more, from: 2)
        for d in docs + [shadow] {
            try d.checkInvariants()
            #expect(d.rows == shadow.rows)
        }
        #expect(shadow.flat == ["a", "x", "w", "y", "b", "c"])
    }

    @Test("an insert with the origins of builds before Fugue's can name a collected slot: refused with a typed error, nothing changes (why every sender must make Fugue's origins)")
    func legacyOriginsAreRefused() throws {
        var docs = try synced(["a", "b", "c", "d", "e"])
        for _ in 0..<3 {
            let op = try docs[0].deleteItem(at: IndexPath(item: 1, section: 0))
            try docs[1].receive(op)
        }
        try docs[0].compact(stable: docs[0].version)
        let state = docs[0].encodedState()
        docs[1].variant = .legacyOrigins
        // Before e: the left origin is the slot right before e, hidden or not: d, collected.
        let op = try docs[1].insertItem(at: IndexPath(item: 1, section: 0), value: Data("x".utf8))
        #expect(throws: ApplyError.self) { try docs[0].receive(op) }
        #expect(docs[0].encodedState() == state)
    }
}

