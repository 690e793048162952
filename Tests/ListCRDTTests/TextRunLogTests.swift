import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncRandom

/// Issue 45: a run of one-character splices of one text field is one log record
/// (`History/TextRunLog.swift`), one record of a batch (wire format 6, `Records/Text/TextRunCoding.swift`)
/// and one record of a state snapshot (version 8), and gives back exactly the operations applied.
@Suite("Text runs as one record: log, wire format 6, state snapshot 8")
struct TextRunLogTests {
    /// A wall clock that moves `step` ms at each reading (keystrokes in different milliseconds).
    final class Ticker: @unchecked Sendable {
        private let lock = NSLock()
        private var ms: UInt64
        let step: UInt64
        init(start: UInt64, step: UInt64) { ms = start; self.step = step }
        func next() -> UInt64 { lock.lock(); defer { lock.unlock() }; ms += step; return ms }
    }

    static func doc(replica: UInt64 = 1, ticking: Bool = false) throws -> (ListDocument, ItemID) {
        var d = ListDocument(replica: ReplicaID(replica))
        try d.insertSection(at: 0, value: Data("S".utf8))
        let item = ItemID(try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        if ticking {
            let t = Ticker(start: 1_800_000_000_000, step: 7)
            d.wallClock = WallClock { t.next() }
        }
        return (d, item)
    }

    /// Random typing, backspaces, forward deletes, jumps, pastes and selections; returns the
    /// operations the splices returned.
    static func randomEdits(_ doc: inout ListDocument, _ item: ItemID, seed: UInt64, steps: Int) throws -> [ListOperation] {
        var rng = SplitMix64(seed: seed)
        var caret = 0, length = doc.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
        var out: [ListOperation] = []
        let alphabet = Array("abc de🙂é\u{301}".unicodeScalars)
        for _ in 0 ..< steps {
            let roll = rng.next() % 100
            var at = caret, delete = 0, insert = ""
            switch roll {
            case 0 ..< 55: insert = String(alphabet[Int(rng.next() % UInt64(alphabet.count))])
            case 55 ..< 75 where caret > 0: at = caret - 1; delete = 1
            case 75 ..< 82 where caret < length: delete = 1
            case 82 ..< 88: at = Int(rng.next() % UInt64(length + 1)); insert = "x"
            case 88 ..< 94: insert = String(repeating: "pq", count: 1 + Int(rng.next() % 3))
            default:
                if length > 0 {
                    at = Int(rng.next() % UInt64(length))
                    delete = 1 + Int(rng.next() % UInt64(min(4, length - at)))
                    insert = rng.next() % 2 == 0 ? "" : "Z"
                } else { insert = "y" }
            }
            if delete == 0 && insert.isEmpty { insert = "w" }
            out.append(try doc.splice("notes", ofItem: item, at: at, delete: delete, insert: insert))
            let k = insert.unicodeScalars.count
            length += k - delete
            caret = at + k
        }
        return out
    }

    static func textRuns(_ doc: ListDocument) -> [OpLog.Record] { doc.log.records.filter { $0.kind == .textRun } }

    @Test("a typed word is one log record, and so are the backspaces over it and forward deletes")
    func typedRunIsOneRecord() throws {
        var (doc, item) = try Self.doc()
        let typed = try TextFieldTests.type("hello world", at: 0, into: &doc, item: item)
        #expect(Self.textRuns(doc).map(\.count) == [11])
        var backspaces: [ListOperation] = []
        for k in (6 ..< 11).reversed() { backspaces.append(try doc.splice("notes", ofItem: item, at: k, delete: 1)) }
        var forward: [ListOperation] = []
        for _ in 0 ..< 3 { forward.append(try doc.splice("notes", ofItem: item, at: 0, delete: 1)) }
        #expect(doc.text("notes", ofItem: item) == "lo ")
        #expect(Self.textRuns(doc).map(\.count) == [11, 5, 3])
        #expect(doc.log.records.count == 5, "section, item and three text runs")
        #expect(doc.log.others.isEmpty, "no splice kept one by one")
        #expect(doc.operations == Array(doc.operations.prefix(2)) + typed + backspaces + forward)
        for (k, op) in (typed + backspaces + forward).enumerated() {
            #expect(doc.loggedOperation(containing: op.id) == op, "operation \(k)")
        }
    }

    @Test("the run log gives back every operation the splices returned, and the history is their batch, byte for byte",
          arguments: [1, 2, 3, 4] as [UInt64])
    func runLogGivesBackTheOperations(seed: UInt64) throws {
        var (doc, item) = try Self.doc(ticking: seed == 4)
        let head = doc.operations
        let returned = try Self.randomEdits(&doc, item, seed: seed, steps: 500)
        let ops = doc.operations
        #expect(ops == head + returned)
        let runs = Self.textRuns(doc), inRuns = runs.reduce(0) { $0 + Int($1.count) }
        #expect(inRuns > returned.count / 2 && inRuns > runs.count * 3 / 2, "typing makes runs")
        let history = doc.encodedHistory()
        #expect(history == ListOperation.encode(ops))
        #expect(try ListOperation.decode(history) == ops)
        // Read back from any position, and by id.
        for start in stride(from: 0, to: ops.count, by: 37) { #expect(try doc.operations(from: start) == Array(ops[start...])) }
        for op in returned.prefix(200) { #expect(doc.loggedOperation(containing: op.id) == op) }
        // Since a version: the unseen part of a run.
        let middle = ops[ops.count / 2].id
        let seen = VersionVector([middle.replica: middle.counter])
        #expect(doc.operations(since: seen) == ops.filter { !seen.contains($0.id) })
        try doc.checkInvariants()
    }

    @Test("received one by one, as a batch, as the encoded history and from both snapshots: the same operations, records and text",
          arguments: [1, 2, 3] as [UInt64])
    func receivedAndLoadedHistoriesAreEqual(seed: UInt64) throws {
        var (a, item) = try Self.doc(ticking: seed == 3)
        var b = ListDocument(replica: ReplicaID(2))
        #expect(b.receive(a.operations).isSuccess)
        var toB = try Self.randomEdits(&a, item, seed: seed, steps: 200)
        let toA = try Self.randomEdits(&b, item, seed: seed + 100, steps: 200)   // concurrent
        #expect(a.receive(toA).isSuccess)
        toB += try Self.randomEdits(&a, item, seed: seed + 200, steps: 100)        // after both
        #expect(b.receive(toB).isSuccess)
        #expect(a.text("notes", ofItem: item) == b.text("notes", ofItem: item))
        #expect(a.records == b.records)
        let ops = a.operations
        var oneByOne = ListDocument(replica: ReplicaID(7))
        for op in ops { _ = try oneByOne.receive(op) }
        var batch = ListDocument(replica: ReplicaID(8))
        #expect(batch.receive(ops).isSuccess)
        var encoded = ListDocument(replica: ReplicaID(9))
        #expect(try encoded.receive(encoded: a.encodedHistory(), maxOperations: .max).refused.isEmpty)
        let fromHistory = try ListDocument(snapshot: a.encodedSnapshot(format: .history), replica: ReplicaID(10))
        let state = a.encodedStateSnapshotBeforeVersion9()
        #expect(state[4] == ListDocument.stateTextRunsSnapshotFormatVersion)
        let fromState = try ListDocument(snapshot: state, replica: ReplicaID(11))
        for (what, d) in [("one by one", oneByOne), ("batch", batch), ("encoded", encoded), ("history snapshot", fromHistory),
                          ("state snapshot", fromState), ("peer", b)] {
            #expect(d.operations.count == ops.count, "\(what)")
            #expect(Set(d.operations.map(\.id)) == Set(ops.map(\.id)), "\(what)")
            #expect(d.records == a.records, "\(what)")
            #expect(d.text("notes", ofItem: item) == a.text("notes", ofItem: item), "\(what)")
            #expect(d.encodedState() == a.encodedState(), "\(what)")
            try d.checkInvariants()
        }
        // Those that applied the same order hold the same log: the same operations, bytes and snapshot.
        for (what, d) in [("one by one", oneByOne), ("batch", batch), ("encoded", encoded), ("history snapshot", fromHistory),
                          ("state snapshot", fromState)] {
            #expect(d.operations == ops, "\(what)")
            #expect(d.encodedHistory() == a.encodedHistory(), "\(what)")
            #expect(Self.textRuns(d).count == Self.textRuns(a).count, "\(what): the same runs")
        }
        #expect(fromState.encodedStateSnapshotBeforeVersion9() == state)
        // Typing goes on on a loaded copy.
        var go = fromState
        _ = try Self.randomEdits(&go, item, seed: seed + 300, steps: 50)
        try go.checkInvariants()
    }

    @Test("wire format 6 (as builds before version 7 wrote it) only for a batch holding a text run; every other batch as before; an older decoder refuses it by its version")
    func wireFormatSixOnlyForRuns() throws {
        var (doc, item) = try Self.doc()
        let one = try doc.splice("notes", ofItem: item, at: 0, insert: "a")
        #expect(ListOperation.encodeWithTextRuns([one])[0] == ListOperation.fieldsWireFormatVersion)
        let two = try doc.splice("notes", ofItem: item, at: 1, insert: "b")
        let paste = try doc.splice("notes", ofItem: item, at: 2, insert: "cd")
        #expect(ListOperation.encodeWithTextRuns([one, paste])[0] == ListOperation.fieldsWireFormatVersion)
        #expect(!ListOperation.needsWireFormat6([one, paste]) && ListOperation.needsWireFormat6([one, two]))
        let run = ListOperation.encodeWithTextRuns([one, two])
        #expect(run[0] == ListOperation.textRunWireFormatVersion)
        #expect(try ListOperation.decode(run) == [one, two])
        #expect(run.count < ListOperation.encode([one]).count + 8, "the second keystroke costs a few bytes")
        var newer = run
        newer[0] = ListOperation.wireFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListOperation.wireFormatVersion + 1)) { try ListOperation.decode(newer) }
        // Every strict prefix is refused with a typed error.
        for n in 0 ..< run.count { #expect(throws: WireError.self) { try ListOperation.decode(run.prefix(n)) } }
    }

    @Test("a run's clocks that do not go up by one (a wall clock between keystrokes), a section's field and backspace runs round-trip")
    func irregularClocksAndSectionsRoundTrip() throws {
        var (doc, item) = try Self.doc(ticking: true)
        let section = try doc.sectionID(at: 0)
        var sent = try TextFieldTests.type("tick tock", at: 0, into: &doc, item: item)
        for k in 0 ..< 4 { sent.append(try doc.splice("title", ofSection: section, at: k, insert: "T")) }
        for k in (5 ..< 9).reversed() { sent.append(try doc.splice("notes", ofItem: item, at: k, delete: 1)) }
        #expect(Self.textRuns(doc).map(\.count) == [9, 4, 4])
        let bytes = ListOperation.encode(sent)
        #expect(try ListOperation.decode(bytes) == sent)
        #expect(doc.operations.suffix(sent.count) == ArraySlice(sent))
        var peer = ListDocument(replica: ReplicaID(3))
        #expect(try peer.receive(encoded: doc.encodedHistory(), maxOperations: .max).refused.isEmpty)
        #expect(peer.operations == doc.operations)
        #expect(peer.text("title", ofSection: section) == "TTTT")
        let loaded = try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(4))
        #expect(loaded.operations == doc.operations)
        #expect(loaded.records == doc.records)
    }

    @Test("a state snapshot of version 7 (each keystroke a record) still loads into text runs")
    func versionSevenStillLoads() throws {
        var (doc, item) = try Self.doc()
        _ = try Self.randomEdits(&doc, item, seed: 9, steps: 300)
        var old = StateSnapshotEncoder(doc, textRuns: false)
        let v7 = old.encode()
        #expect(v7[4] == ListDocument.stateTextSnapshotFormatVersion)
        let loaded = try ListDocument(snapshot: v7, replica: ReplicaID(5))
        #expect(loaded.operations == doc.operations)
        #expect(loaded.records == doc.records)
        #expect(Self.textRuns(loaded).count == Self.textRuns(doc).count)
        let v8 = doc.encodedStateSnapshotBeforeVersion9()
        #expect(v8[4] == ListDocument.stateTextRunsSnapshotFormatVersion && v8.count < v7.count)
        // Version 2 (every record its own batch) too.
        var v2 = StateSnapshotEncoder(doc, othersInOneBatch: false)
        let loaded2 = try ListDocument(snapshot: v2.encode(), replica: ReplicaID(6))
        #expect(loaded2.operations == doc.operations)
    }

    @Test("a version-8 snapshot whose run record claims more operations than the batch holds, or another kind's, is refused")
    func badRunRecordsAreRefused() throws {
        var (doc, item) = try Self.doc()
        _ = try TextFieldTests.type("abc", at: 0, into: &doc, item: item)
        let bytes = doc.encodedSnapshot()
        // Every strict prefix and every single-byte change: a typed error or a document that passes its invariants.
        for n in 0 ..< bytes.count { #expect(throws: WireError.self) { try ListDocument(snapshot: bytes.prefix(n), replica: ReplicaID(2)) } }
        for k in 5 ..< bytes.count {
            for delta: UInt8 in [1, 0x80] {
                var b = bytes
                b[k] &+= delta
                if let d = try? ListDocument(snapshot: b, replica: ReplicaID(2)) { try d.checkInvariants() }
            }
        }
    }
}
