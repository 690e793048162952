import Foundation
import Testing
@testable @_spi(Testing) import ListCRDT
import ListSyncSimulation

/// A state snapshot's history of field writes kept as bytes at the load (`History/LazyOperations.swift`,
/// `Encoding/OperationScanning.swift`): everything that reads the log must see the operations an
/// eager load decodes, and everything an eager load refuses must be refused at the load, never
/// later.
@Suite("state snapshot: the history's field writes kept as bytes until read")
struct LazyLogSnapshotTests {
    /// The same bytes loaded with the history kept as bytes and decoded (as builds before it did).
    static func bothLoads(_ bytes: some Collection<UInt8>, replica: ReplicaID) throws -> (lazy: ListDocument, eager: ListDocument) {
        (try ListDocument(snapshot: bytes, replica: replica, maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: true),
         try ListDocument(snapshot: bytes, replica: replica, maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: false))
    }

    /// Everything that reads the log, compared: every operation in order, each by id, the
    /// history since a few versions, the exports and the re-encoded snapshot.
    static func expectSameHistory(_ a: ListDocument, _ b: ListDocument, _ what: @autoclosure () -> String) {
        let ops = a.operations
        #expect(ops == b.operations, "operations: \(what())")
        for op in ops {
            #expect(a.loggedOperation(containing: op.id) == b.loggedOperation(containing: op.id), "\(op.id): \(what())")
        }
        // Since the version each replica had at a few points of the log.
        for cut in stride(from: 0, to: ops.count, by: max(1, ops.count / 5)) {
            var v = VersionVector()
            for op in ops[..<cut] { v.observe(op.lastID) }
            #expect(a.operations(since: v) == b.operations(since: v), "since \(cut): \(what())")
        }
        #expect(a.encodedHistory() == b.encodedHistory(), "history: \(what())")
        #expect(a.encodedSnapshot() == b.encodedSnapshot(), "snapshot: \(what())")
        #expect(a.reclaimableBytes == b.reclaimableBytes && a.documentBytes == b.documentBytes, "bytes: \(what())")
    }

    @Test("a board's field writes load as bytes, and every reader of the log sees the operations an eager load decodes", arguments: 1 ... 12)
    func sameOperations(seed: UInt64) throws {
        let docs = try StateRecordsSnapshotTests.board(seed: seed)
        let bytes = docs[0].encodedSnapshot()
        #expect([ListDocument.stateRecordsSnapshotFormatVersion, ListDocument.stateRecordsPastedSnapshotFormatVersion,
                  ListDocument.stateDerivedTextSnapshotFormatVersion].contains(bytes[4]))
        let (lazy, eager) = try Self.bothLoads(bytes, replica: ReplicaID(7))
        try lazy.checkInvariants()
        #expect((lazy.log.others.lazy?.count ?? 0) > 0, "seed \(seed): field writes kept as bytes")
        #expect(eager.log.others.lazy == nil, "seed \(seed): none in an eager load")
        #expect(lazy.operations == docs[0].operations, "seed \(seed): the original's operations")
        Self.expectSameHistory(lazy, eager, "seed \(seed)")
        StateRecordsSnapshotTests.expectSame(lazy, eager, "seed \(seed)")
        #expect(lazy.encodedSnapshot() == bytes, "seed \(seed): the same bytes again")
        // The batch's bytes are counted while the log keeps them.
        let parts = Dictionary(uniqueKeysWithValues: lazy.memoryBreakdown.map { ($0.name, $0) })
        #expect((parts["log.lazyBytes"]?.bytes ?? 0) > 0 && (parts["log.lazyEntries"]?.count ?? 0) == lazy.log.others.lazy?.count,
                "seed \(seed): memoryBreakdown counts the kept bytes")
    }

    @Test("side by side, a load keeping the history as bytes and an eager one take the same local and concurrent edits, merges and compaction, and read the same history all along", arguments: 1 ... 10)
    func sideBySide(seed: UInt64) throws {
        var docs = try StateRecordsSnapshotTests.board(seed: seed, rounds: 2)
        let mine = docs[1]
        var (lazy, eager) = try Self.bothLoads(mine.encodedSnapshot(), replica: mine.replica)
        var rng = SplitMix64(seed: seed &* 0x2545_F491 &+ 7)
        var workload = Workload()
        workload.fieldWrites = 50
        workload.textEdits = 10
        var n = 0
        for step in 0 ..< 60 {
            if rng.below(2) == 0 {
                let edit = RandomEdit.random(for: lazy, workload: workload, using: &rng) { n += 1; return "w\(n)" }
                let a = try? edit.apply(to: &lazy)
                let b = try? edit.apply(to: &eager)
                #expect(a == b, "seed \(seed) step \(step): \(edit) makes the same operation")
                if let a { for r in [0, 2] { _ = docs[r].receive([a]) } }
            } else {
                let r = rng.below(2) == 0 ? 0 : 2
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) { n += 1; return "x\(n)" }
                guard let op = try? edit.apply(to: &docs[r]) else { continue }
                #expect(lazy.receive([op]).applied == eager.receive([op]).applied, "seed \(seed) step \(step)")
            }
            #expect(lazy.takeFieldConflicts() == eager.takeFieldConflicts(), "seed \(seed) step \(step): lost field writes")
            if step % 20 == 19 { Self.expectSameHistory(lazy, eager, "seed \(seed) step \(step)") }
        }
        for r in [0, 2] {
            _ = lazy.receive(docs[r].operations)
            _ = eager.receive(docs[r].operations)
        }
        Self.expectSameHistory(lazy, eager, "seed \(seed): merged")
        StateRecordsSnapshotTests.expectSame(lazy, eager, "seed \(seed): merged")
        // A peer that had nothing receives the whole history from the lazily loaded one.
        var peer = ListDocument(replica: ReplicaID(40))
        _ = try peer.receive(encoded: lazy.encodedHistory())
        StateRecordsSnapshotTests.expectSame(peer, eager, "seed \(seed): a peer synced from it")
        try lazy.compact(stable: lazy.version)
        try eager.compact(stable: eager.version)
        StateRecordsSnapshotTests.expectSame(lazy, eager, "seed \(seed): compacted")
        Self.expectSameHistory(lazy, eager, "seed \(seed): compacted")
    }

    /// A small board: an item inserted with fields, field writes of every kind to items and a
    /// section, with a concurrent replica's writes merged.
    static func smallBoard() throws -> ListDocument {
        var a = ListDocument(replica: ReplicaID(1))
        try a.insertSection(at: 0)
        _ = try a.writeFields(["name": .set(.string("todo"))], ofSection: try a.sectionID(at: 0))
        var ids: [ItemID] = []
        for k in 0 ..< 3 {
            let id = ItemID(try a.insertItem(atRow: k, inSection: 0, value: Data("c\(k)".utf8)).id)
            _ = try a.writeFields(["title": .set(.string("card \(k)")), "votes": .increment(Int64(k + 1)),
                                   "tags": .insert(["x", "y\(k)"]), "due": .set(.date(Date(timeIntervalSince1970: 1000))),
                                   "done": .set(.bool(false)), "size": .set(.double(1.5))], ofItem: id)
            ids.append(id)
        }
        var b = ListDocument(replica: ReplicaID(2))
        _ = b.receive(a.operations)
        _ = try b.writeFields(["title": .set(.string("theirs")), "tags": .delete(["x"])], ofItem: ids[1])
        _ = try a.writeFields(["title": .set(.string("mine")), "votes": .increment(-1), "extra": .remove], ofItem: ids[1])
        _ = a.receive(b.operations)
        return a
    }

    @Test("every cut of a small snapshot is a typed error at the load, kept as bytes or not; every flipped byte is refused by both loads or loads the same document by both, whose history then reads whole")
    func damagedBytesAgree() throws {
        let bytes = try Self.smallBoard().encodedSnapshot()
        #expect(bytes[4] == ListDocument.stateRecordsSnapshotFormatVersion)
        let (lazy, _) = try Self.bothLoads(bytes, replica: ReplicaID(9))
        #expect((lazy.log.others.lazy?.count ?? 0) >= 5)
        for n in 0 ..< bytes.count {
            #expect(throws: WireError.self) {
                try ListDocument(snapshot: bytes.prefix(n), replica: ReplicaID(9), maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: true)
            }
        }
        var rng = SplitMix64(seed: 0x1A2B)
        var refused = 0, loaded = 0
        for at in 5 ..< bytes.count {
            for flip in [UInt8(1), 0x80, UInt8(1 + rng.below(255))] {
                var damaged = bytes
                damaged[at] ^= flip
                let l = Result { () throws(WireError) in
                    try ListDocument(snapshot: damaged, replica: ReplicaID(9), maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: true)
                }
                let e = Result { () throws(WireError) in
                    try ListDocument(snapshot: damaged, replica: ReplicaID(9), maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: false)
                }
                switch (l, e) {
                case (.failure, .failure): refused += 1
                case let (.success(l), .success(e)):
                    loaded += 1
                    try l.checkInvariants()
                    Self.expectSameHistory(l, e, "byte \(at) ^ \(flip)")
                    StateRecordsSnapshotTests.expectSame(l, e, "byte \(at) ^ \(flip)")
                default:
                    Issue.record("byte \(at) ^ \(flip): kept as bytes \(l), eager \(e)")
                }
            }
        }
        #expect(refused > 0 && loaded > 0, "\(refused) refused, \(loaded) loaded")
    }

    @Test("a field write the limits refuse is refused at the load, kept as bytes or not: a set change naming a member twice, seen replicas out of order, a value over the load's limit")
    func limitsCheckedAtTheLoad() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let id = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
        _ = try doc.writeFields(["tags": .insert(["a", "b"]), "title": .set(.string(String(repeating: "t", count: 40)))], ofItem: id)
        let bytes = doc.encodedSnapshot()
        // Over a smaller limit of the loader: refused by both.
        for lazyLog in [true, false] {
            #expect(throws: WireError.self) {
                try ListDocument(snapshot: bytes, replica: ReplicaID(2), maxValueSize: 20, lazyLog: lazyLog)
            }
        }
        // The member "b" spelled "a": the same member twice.
        let b = bytes.indices.filter { bytes[$0] == UInt8(ascii: "b") && bytes[$0 - 1] == 1 && bytes[$0 - 2] == UInt8(ascii: "a") }
        #expect(!b.isEmpty)
        for at in b {
            var damaged = bytes
            damaged[at] = UInt8(ascii: "a")
            for lazyLog in [true, false] {
                #expect(throws: WireError.self) {
                    try ListDocument(snapshot: damaged, replica: ReplicaID(2), maxValueSize: ListDocument.defaultMaxValueSize, lazyLog: lazyLog)
                }
            }
        }
    }
}
