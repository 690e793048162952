import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncRandom
import ListSyncTestSupport

/// The received text run route (`FastPaths/ListDocument+ReceivedTextRuns.swift`: another
/// replica's keystrokes or deletes of one field, applied in one step) against the general path
/// (`fastPaths = false`, one operation at a time).
@Suite("Received text runs against the general path")
struct ReceivedTextRunTests: ScenarioSupport {
    /// A document with one section and one item, and the item's id.
    static func base() throws -> (ListDocument, ItemID) {
        var d = ListDocument(replica: ReplicaID(1))
        try d.insertSection(at: 0, value: Data("S".utf8))
        let item = ItemID(try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("card".utf8)).id)
        return (d, item)
    }

    /// `ops` received by a copy of `base` as one array (the fast paths on) and, by another, one
    /// at a time through the general path, and as one encoded batch: the same report,
    /// state, records, text, counts, log and bytes. Returns the batch receiver.
    @discardableResult
    static func sameAsGeneral(_ base: ListDocument, _ ops: [ListOperation], item: ItemID,
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> ListDocument {
        let (batch, single) = Self.receivedBothWays(base, ops, sourceLocation: sourceLocation)
        for (name, d) in [("array", batch)] + Self.encodedLoad(base, ops) {
            #expect(d.records == single.records, "\(name): the records differ", sourceLocation: sourceLocation)
            #expect(d.text("notes", ofItem: item) == single.text("notes", ofItem: item), "\(name)", sourceLocation: sourceLocation)
            #expect(d.encodedState() == single.encodedState(), "\(name): the states differ", sourceLocation: sourceLocation)
            #expect(d.operations == single.operations, "\(name): the logs differ", sourceLocation: sourceLocation)
            #expect(d.version == single.version && d.frontier == single.frontier, "\(name)", sourceLocation: sourceLocation)
            #expect(d.pendingOperations == single.pendingOperations, "\(name)", sourceLocation: sourceLocation)
            #expect(d.reclaimableBytes == single.reclaimableBytes && d.documentBytes == single.documentBytes,
                    "\(name): bytes \(d.reclaimableBytes)/\(d.documentBytes) against \(single.reclaimableBytes)/\(single.documentBytes)",
                    sourceLocation: sourceLocation)
            #expect(d.encodedHistory() == single.encodedHistory(), "\(name)", sourceLocation: sourceLocation)
            #expect(d.encodedSnapshot(format: .state) == single.encodedSnapshot(format: .state), "\(name)", sourceLocation: sourceLocation)
            try d.checkInvariants()
        }
        try single.checkInvariants()
        return batch
    }

    /// `ops` encoded as one batch and received so, when they encode (refused ones may not).
    static func encodedLoad(_ base: ListDocument, _ ops: [ListOperation]) -> [(String, ListDocument)] {
        var d = base.fork(as: 90)
        guard (try? d.receive(encoded: ListOperation.encode(ops), maxOperations: Int.max)) != nil else { return [] }
        return [("encoded", d)]
    }

    /// A random edit of text field "notes" of `item` on `doc`: keystrokes at a caret mostly,
    /// backspaces, forward deletes, jumps and pastes.
    static func edit(_ doc: inout ListDocument, _ item: ItemID, caret: inout Int, _ rng: inout SplitMix64) throws -> ListOperation {
        let length = doc.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
        caret = min(caret, length)
        var at = caret, delete = 0, insert = ""
        switch rng.next() % 100 {
        case 0 ..< 60: insert = ["a", "b", " ", "é", "🙂"][Int(rng.next() % 5)]
        case 60 ..< 75 where caret > 0: at = caret - 1; delete = 1
        case 75 ..< 82 where caret < length: delete = 1
        case 82 ..< 90: at = Int(rng.next() % UInt64(length + 1)); insert = "x"
        case 90 ..< 95: insert = "paste"
        default: insert = "y"
        }
        let op = try doc.splice("notes", ofItem: item, at: at, delete: delete, insert: insert)
        caret = at + insert.unicodeScalars.count
        return op
    }

    @Test("three replicas typing into one field, exchanging now and then: one batch with the route equals one at a time without it")
    func concurrentTyping() throws {
        for seed: UInt64 in 1 ... 12 {
            let (base, item) = try Self.base()
            var replicas = [base.fork(as: 2), base.fork(as: 3), base.fork(as: 4)]
            var carets = [0, 0, 0]
            var all: [ListOperation] = []
            var sent = [0, 0, 0]   // per replica, how many of `all` it has received
            var rng = SplitMix64(seed: seed)
            for _ in 0 ..< 400 {
                let r = Int(rng.next() % 3)
                // Mostly runs: the same replica types several in a row.
                for _ in 0 ..< 1 + Int(rng.next() % 8) {
                    let op = try Self.edit(&replicas[r], item, caret: &carets[r], &rng)
                    all.append(op)
                    sent[r] = all.count
                }
                if rng.next() % 4 == 0 {
                    let to = Int(rng.next() % 3)
                    replicas[to].receive(Array(all[sent[to]...]))
                    sent[to] = all.count
                }
            }
            let received = try Self.sameAsGeneral(base, all, item: item)
            #expect(received.text("notes", ofItem: item) != nil)
        }
    }

    @Test("the route takes a run whole: a typed word and a run of backspaces each apply as one step")
    func routeIsTaken() throws {
        var (author, item) = try Self.base()
        let base = author
        var author2 = author.fork(as: 2)
        var typed: [ListOperation] = []
        for (k, c) in "hello".enumerated() {
            typed.append(try author2.splice("notes", ofItem: item, at: k, delete: 0, insert: String(c)))
        }
        var backspaces: [ListOperation] = []
        for k in (2 ..< 5).reversed() { backspaces.append(try author2.splice("notes", ofItem: item, at: k, delete: 1, insert: "")) }
        var d = base.fork(as: 90)
        #expect(d.applyTextRun(OperationList(ops: typed), from: 0) == .applied(5))
        #expect(d.text("notes", ofItem: item) == "hello")
        #expect(d.applyTextRun(OperationList(ops: backspaces), from: 0) == .applied(3))
        #expect(d.text("notes", ofItem: item) == "he")
        // One splice alone, this replica's own, or one already applied: declined, nothing changed.
        var e = base.fork(as: 90)
        #expect(e.applyTextRun(OperationList(ops: Array(typed.prefix(1))), from: 0) == .declined)
        #expect(d.applyTextRun(OperationList(ops: typed), from: 0) == .declined)
        _ = author.receive(typed)
        let before = author
        #expect(author.applyTextRun(OperationList(ops: typed), from: 0) == .declined)
        #expect(author.encodedState() == before.encodedState())
        try Self.sameAsGeneral(base, typed + backspaces, item: item)
    }

    /// `op` with its text edit replaced by `edit` and its clock by `clock`.
    static func rewritten(_ op: ListOperation, edit: TextEdit? = nil, clock: UInt64? = nil) -> ListOperation {
        guard case let .writeFields(target, writes) = op.kind, case let .text(e) = writes.writes[0].change else { return op }
        let w = FieldWrite(name: writes.writes[0].name, change: .text(edit ?? e))
        return ListOperation(id: op.id, deps: op.deps, kind: .writeFields(target, FieldWrites(clock: clock ?? writes.clock, writes: [w])))
    }

    @Test("refused, waiting, duplicated and odd runs: the route changes what the general path changes, and refuses what it refuses")
    func edges() throws {
        let (base, item) = try Self.base()
        var author = base.fork(as: 2)
        var ops: [ListOperation] = []
        for (k, c) in "abcdef".enumerated() { ops.append(try author.splice("notes", ofItem: item, at: k, delete: 0, insert: String(c))) }
        var dels: [ListOperation] = []
        for _ in 0 ..< 4 { dels.append(try author.splice("notes", ofItem: item, at: 1, delete: 1, insert: "")) }
        // The whole thing; then with a backspace run whose third removes a character the field never had.
        try Self.sameAsGeneral(base, ops + dels, item: item)
        var bad = dels
        let stranger = TextEdit(deletes: [TextRange(first: OpID(counter: 999, replica: ReplicaID(7)), count: 1)])
        bad[2] = Self.rewritten(bad[2], edit: stranger)
        let received = try Self.sameAsGeneral(base, ops + bad, item: item)
        #expect(received.version[ReplicaID(2)] < author.version[ReplicaID(2)], "the refused splice and its followers wait or are refused")
        // Clocks that go down inside a run (a peer's wall clock stepped back): the greatest stamp wins the field.
        var clocks = ops
        for k in clocks.indices { clocks[k] = Self.rewritten(clocks[k], clock: 1_000 - UInt64(k)) }
        try Self.sameAsGeneral(base, clocks, item: item)
        // The first splice waits for a dependency (its run arrives before what it follows).
        try Self.sameAsGeneral(base, Array(ops[3...]) + Array(ops[..<3]), item: item)
        // Duplicates: the run twice, and its second half again.
        try Self.sameAsGeneral(base, ops + ops + Array(ops[2...]), item: item)
        // The item deleted first: the characters count as dead bytes.
        var deleter = base.fork(as: 5)
        let gone = try deleter.deleteItem(at: IndexPath(item: 0, section: 0))
        var onDeleted = base.fork(as: 6)
        onDeleted.receive([gone])
        try Self.sameAsGeneral(onDeleted, ops + dels, item: item)
        // A section's field.
        var sectionAuthor = base.fork(as: 8)
        let section = try base.sectionID(at: 0)
        var sectionOps: [ListOperation] = []
        for (k, c) in "title".enumerated() {
            sectionOps.append(try sectionAuthor.splice("notes", ofSection: section, at: k, delete: 0, insert: String(c)))
        }
        let s = try Self.sameAsGeneral(base, sectionOps, item: item)
        #expect(s.text("notes", ofSection: section) == "title")
    }
}
