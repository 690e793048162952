import Foundation
import Testing
import ListSyncTestTraits
import ListSyncRandom
@testable import ListCRDT

/// The recorded editing traces (Benchmarks/Traces) typed into one card's text field, as a text
/// view reports them (Docs/Semantics.md §8.5): each patch one splice. The list path replays the
/// same traces one item per character (TraceTests, ConcurrentTraceTests); here the characters are
/// a text field's, so what is checked is the text kind's order, its runs on the wire and in the
/// log, and its loads, on real editing rather than on generated edits. (automerge-paper, typed the
/// same way, is W16.text's workload: `listsync-bench` checks its final text, history and loads.)
@Suite(.cpuHeavy) struct TextTraceTests {
    static let clownschool = Result { try ConcurrentTrace(named: "clownschool.concurrent", in: tracesDirectory) }

    /// A board of one section and one card, made by replica 1; the other replicas received it.
    static func board(_ replicas: [UInt64]) throws -> ([ListDocument], ItemID) {
        var first = ListDocument(replica: ReplicaID(replicas[0]))
        try first.insertSection(at: 0, value: Data("Board".utf8))
        let item = ItemID(try first.insertItem(at: IndexPath(item: 0, section: 0), value: Data("card".utf8)).id)
        var docs = [first]
        for r in replicas.dropFirst() {
            var d = ListDocument(replica: ReplicaID(r))
            #expect(d.receive(first.operations).isSuccess)
            docs.append(d)
        }
        return (docs, item)
    }

    /// One patch of a trace as a text view reports it: characters removed at a position, then
    /// text typed there. A patch that types several characters is typed one keystroke at a time
    /// when `keystrokes` (the trace's single-character lines already are), else pasted at once.
    static func apply(position: Int, deleteCount: Int, text: [UInt8], to doc: inout ListDocument, item: ItemID,
                      keystrokes: Bool) throws -> [ListOperation] {
        var ops: [ListOperation] = []
        if deleteCount > 0 {
            ops.append(try doc.splice("notes", ofItem: item, at: position, delete: deleteCount))
        }
        guard !text.isEmpty else { return ops }
        let s = String(decoding: text, as: UTF8.self)
        if keystrokes {
            for (k, c) in s.unicodeScalars.enumerated() {
                ops.append(try doc.splice("notes", ofItem: item, at: position + k, insert: String(c)))
            }
        } else {
            ops.append(try doc.splice("notes", ofItem: item, at: position, insert: s))
        }
        return ops
    }

    /// The notes of `item`, as bytes (the traces are ASCII).
    static func notes(_ doc: ListDocument, _ item: ItemID) -> [UInt8] {
        Array((doc.text("notes", ofItem: item) ?? "").utf8)
    }

    @Test("§8.5 a recorded trace typed into a card's notes gives exactly its final text, and so do its history and state snapshot loaded elsewhere",
          arguments: ["friendsforever"])
    func sequentialTrace(name: String) throws {
        let trace = try EditingTrace(named: name, in: tracesDirectory)
        let expected = try #require(trace.finalText)
        var (docs, item) = try Self.board([1, 2])
        for e in trace.edits {
            _ = try Self.apply(position: e.position, deleteCount: e.deleteCount, text: e.text, to: &docs[0], item: item,
                               keystrokes: true)
        }
        #expect(Self.notes(docs[0], item) == expected)

        // The whole history, as a device catching up receives it.
        let history = docs[0].encodedHistory()
        var fresh = ListDocument(replica: ReplicaID(3))
        let report = try fresh.receive(encoded: history, maxOperations: Int.max)
        #expect(report.isSuccess && fresh.pendingCount == 0)
        #expect(Self.notes(fresh, item) == expected)
        // What the other replica had lacks everything after the card: it catches up from its version.
        let since = docs[0].encodedOperations(since: docs[1].versionVector)
        #expect(try docs[1].receive(encoded: since, maxOperations: Int.max).isSuccess)
        #expect(Self.notes(docs[1], item) == expected)

        // The state snapshot, lazily and eagerly loaded, and the history snapshot.
        for format in [ListDocument.SnapshotFormat.state, .history] {
            let bytes = docs[0].encodedSnapshot(format: format)
            for lazy in [true, false] where format == .state || lazy {
                let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(4), maxValueSize: ListDocument.defaultMaxValueSize,
                                              lazyLog: lazy)
                #expect(Self.notes(loaded, item) == expected, "\(format), lazy \(lazy)")
                #expect(loaded.versionVector == docs[0].versionVector)
                #expect(loaded.encodedHistory() == history, "\(format), lazy \(lazy): the history written again")
            }
        }
        expectConverged([docs[0], docs[1], fresh])
    }

    /// How a replica receives what it lacks before a transaction: the operations themselves, or
    /// the batch encoded and decoded by `receive(encoded:)` (text runs written as runs).
    enum Route: String, CaseIterable, CustomStringConvertible {
        case operations, encoded
        var description: String { rawValue }
    }

    @Test("§8.5 clownschool typed by three people into one card's notes: every copy ends with exactly the final text, whatever the ids and the route",
          arguments: zip([[1, 2, 3], [3, 1, 2]] as [[UInt64]], [Route.operations, .encoded]))
    func concurrentTrace(ids: [UInt64], route: Route) throws {
        let trace = try Self.clownschool.get()
        let expected = try #require(trace.finalText)
        var (docs, item) = try Self.board(ids)
        let n = trace.agentCount
        // made[t]: the operations of transaction t; delivered[a][b]: how many of agent b's
        // transactions replica a holds.
        var made: [[ListOperation]] = []
        made.reserveCapacity(trace.transactions.count)
        var delivered = Array(repeating: Array(repeating: 0, count: n), count: n)
        func deliver(to a: Int, upTo wanted: [Int]) throws {
            var batch: [ListOperation] = []
            for b in 0 ..< n where b != a {
                let sequence = trace.transactionsByAgent[b]
                while delivered[a][b] < wanted[b] {
                    batch += made[sequence[delivered[a][b]]]
                    delivered[a][b] += 1
                }
            }
            guard !batch.isEmpty else { return }
            let report: ReceiveReport
            switch route {
            case .operations: report = docs[a].receive(batch)
            case .encoded: report = try docs[a].receive(encoded: ListOperation.encode(batch))
            }
            #expect(report.isSuccess, "replica \(ids[a]): \(report)")
        }
        for (t, tx) in trace.transactions.enumerated() {
            let a = tx.agent
            // Operations of one agent follow each other in its own order; what an agent had merged
            // is what it saw.
            try deliver(to: a, upTo: trace.version(of: t))
            var ops: [ListOperation] = []
            // Odd transactions paste their text, even ones type it key by key.
            for p in tx.patches {
                ops += try Self.apply(position: p.position, deleteCount: p.deleteCount, text: p.text, to: &docs[a], item: item,
                                      keystrokes: t % 2 == 0)
            }
            made.append(ops)
            delivered[a][a] += 1
        }
        let all = trace.transactionsByAgent.map(\.count)
        for a in 0 ..< n { try deliver(to: a, upTo: all) }
        for (a, doc) in docs.enumerated() {
            #expect(Self.notes(doc, item) == expected, "replica \(ids[a]) (\(route)): the final text")
            #expect(doc.pendingCount == 0)
        }
        expectConverged(docs)

        // Each copy's state snapshot and history load elsewhere to the same text.
        for doc in docs {
            let loaded = try ListDocument(snapshot: doc.encodedSnapshot(format: .state), replica: ReplicaID(9))
            #expect(Self.notes(loaded, item) == expected)
            var fresh = ListDocument(replica: ReplicaID(9))
            #expect(try fresh.receive(encoded: doc.encodedHistory(), maxOperations: Int.max).isSuccess)
            #expect(Self.notes(fresh, item) == expected)
        }
    }

    @Test("§8.5 clownschool delivered shuffled, one operation at a time, with duplicates: the causal buffer puts the keystrokes back in order")
    func concurrentTraceShuffled() throws {
        let trace = try Self.clownschool.get()
        let expected = try #require(trace.finalText)
        // Made in causal order on three replicas, then everyone's operations delivered to a
        // fourth replica in a random order.
        var (docs, item) = try Self.board([1, 2, 3, 4])
        let n = trace.agentCount
        var made: [[ListOperation]] = []
        var delivered = Array(repeating: Array(repeating: 0, count: n), count: n)
        for (t, tx) in trace.transactions.enumerated() {
            let a = tx.agent, wanted = trace.version(of: t)
            var batch: [ListOperation] = []
            for b in 0 ..< n where b != a {
                while delivered[a][b] < wanted[b] {
                    batch += made[trace.transactionsByAgent[b][delivered[a][b]]]
                    delivered[a][b] += 1
                }
            }
            #expect(docs[a].receive(batch).isSuccess)
            var ops: [ListOperation] = []
            for p in tx.patches {
                ops += try Self.apply(position: p.position, deleteCount: p.deleteCount, text: p.text, to: &docs[a], item: item,
                                      keystrokes: true)
            }
            made.append(ops)
            delivered[a][a] += 1
        }
        var rng = SplitMix64(seed: 0x7E47)
        var all = made.flatMap { $0 }
        all += all.filter { _ in rng.next() % 8 == 0 }
        all.shuffle(using: &rng)
        var reader = docs[3]
        var received = 0
        while received < all.count {
            let k = min(all.count - received, 1 + Int(rng.next() % 64))
            _ = reader.receive(Array(all[received ..< received + k]))
            received += k
        }
        #expect(reader.pendingCount == 0)
        #expect(Self.notes(reader, item) == expected)
    }
}
