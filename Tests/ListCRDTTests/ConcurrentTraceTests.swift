import Foundation
import Testing
import ListSyncTestTraits
@_spi(Testing) @testable import ListCRDT

/// The clownschool trace: three people typing one document concurrently, replayed on three
/// replicas (ConcurrentReplay) with every assignment of replica ids to people.
@Suite(.cpuHeavy) struct ConcurrentTraceTests {
    /// Parsed once for all the tests of the suite.
    static let clownschool = Result { try ConcurrentTrace(named: "clownschool.concurrent", in: tracesDirectory) }

    /// Every assignment of the ids 1, 2, 3 to agents 0, 1, 2 (index = agent). Fugue-family
    /// engines reach the final text whatever the ids; an engine whose tie-breaks depend on them
    /// wrongly fails for some.
    static let assignments: [[UInt64]] = [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]]
    static let deliveries: [ConcurrentReplay.Delivery] = [.causal, .shuffled(seed: 0xC10_5C4001), .authors(seed: 47)]

    @Test("the clownschool trace parses, with a version vector per transaction")
    func parses() throws {
        let trace = try Self.clownschool.get()
        #expect(trace.transactions.count == 23_136)
        #expect(trace.agentCount == 3)
        #expect(trace.transactionsByAgent.map(\.count) == [12_676, 1_670, 8_790])
        #expect(trace.elementOperations == 24_326)
        #expect(trace.finalText?.count == 21_148)
        #expect(trace.version(of: 0) == [0, 0, 0])
        // Transaction 8 is agent 2's first, made after agent 0's first eight.
        #expect(trace.transactions[8].agent == 2 && trace.transactions[8].parents == [7])
        #expect(trace.version(of: 8) == [8, 0, 0])
        // Every version holds its own agent's earlier transactions exactly, and grows along each
        // agent's sequence.
        for (a, seq) in trace.transactionsByAgent.enumerated() {
            for (k, i) in seq.enumerated() {
                #expect(trace.seen(by: i, of: a) == k)
                if k > 0 {
                    let before = trace.version(of: seq[k - 1]), now = trace.version(of: i)
                    #expect(zip(before, now).allSatisfy { $0 <= $1 })
                }
            }
        }
    }

    @Test("clownschool replayed with every assignment of ids and every delivery order gives exactly the final text",
          arguments: assignments, deliveries)
    func clownschoolReplay(ids: [UInt64], delivery: ConcurrentReplay.Delivery) throws {
        let trace = try Self.clownschool.get()
        let expected = try #require(trace.finalText)
        var replay = try ConcurrentReplay(trace, replicas: ids.map(ReplicaID.init), delivery: delivery)
        #expect(replay.operations.count == trace.transactions.count)
        #expect(replay.operations.reduce(0) { $0 + $1.count } == trace.elementOperations)
        try replay.mergeAll()

        let docs = replay.documents
        let texts = docs.map { ConcurrentTrace.text(of: $0) }
        // Convergence first (a harness property), then the final text (an engine property).
        #expect(texts.allSatisfy { $0 == texts[0] }, "replicas \(ids) (\(delivery)) did not converge")
        for (a, doc) in docs.enumerated() {
            #expect(texts[a] == expected,
                    "agent \(a) (replica \(ids[a]), \(delivery)): \(Self.firstDifference(texts[a], expected))")
            #expect(doc.pendingCount == 0)
            #expect(doc.operationCount == trace.elementOperations + 1)
            try doc.checkInvariants()
        }
        let first = docs[0].snapshot()
        for doc in docs.dropFirst() { #expect(doc.snapshot() == first) }
    }

    /// What the trace can and cannot tell apart (measured; see also FugueOriginsTests): nobody in
    /// it inserted at the same place as someone else concurrently, so the engine variants that
    /// only change the order of concurrent inserts at one place (`.legacyOrigins`, `.noTieBreak`)
    /// reach the final text too, for every assignment of ids. What it does catch is a replica that
    /// cannot wait for missing operations: with the shuffled delivery, `.noCausalBuffer` loses
    /// agent 0's first edits and agent 2's first transaction is out of range.
    @Test("the shuffled delivery catches an engine without a causal buffer")
    func catchesMissingCausalBuffer() throws {
        let trace = try Self.clownschool.get()
        #expect(throws: ConcurrentReplay.ReplayError.self) {
            var replay = try ConcurrentReplay(trace, replicas: [1, 2, 3].map(ReplicaID.init),
                                              delivery: .shuffled(seed: 0xC10_5C4001)) { replica in
                var doc = ListDocument(replica: replica)
                doc.variant = .noCausalBuffer
                return doc
            }
            try replay.mergeAll()
        }
    }

    /// Where two texts first differ, with some context (for failure messages).
    static func firstDifference(_ got: [UInt8], _ want: [UInt8]) -> String {
        guard let k = zip(got, want).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset
            ?? (got.count == want.count ? nil : min(got.count, want.count)) else { return "equal" }
        func around(_ t: [UInt8]) -> String {
            String(decoding: t[max(0, k - 20)..<min(t.count, k + 20)], as: UTF8.self).debugDescription
        }
        return "lengths \(got.count) / \(want.count), first difference at \(k): got \(around(got)), want \(around(want))"
    }

    // MARK: A hand-made trace

    /// Two agents: agent 0 types "ab"; agent 1 appends "c" while agent 0 concurrently puts "x" in
    /// front; agent 1 then merges and deletes the "x".
    static let small = """
        [0,[],[[0,0,"ab"]]]
        [1,[0],[[2,0,"c"]]]
        [0,[0],[[0,0,"x"]]]
        [1,[1,2],[[0,1,""]]]

        """

    @Test("a small concurrent trace: version vectors, delivery and merge", arguments: deliveries)
    func small(delivery: ConcurrentReplay.Delivery) throws {
        let trace = try ConcurrentTrace(parsing: Array(Self.small.utf8))
        #expect(trace.transactions.count == 4)
        #expect(trace.agentCount == 2)
        #expect(trace.transactionsByAgent == [[0, 2], [1, 3]])
        #expect((0..<4).map { trace.version(of: $0) } == [[0, 0], [1, 0], [1, 0], [2, 1]])
        #expect(trace.transactions[3].patches == [.init(position: 0, deleteCount: 1, text: [])])
        for ids: [UInt64] in [[1, 2], [2, 1]] {
            var replay = try ConcurrentReplay(trace, replicas: ids.map(ReplicaID.init), delivery: delivery)
            // Before the merge agent 0 has not seen agent 1's "c" nor the delete.
            #expect(ConcurrentTrace.text(of: replay.documents[0]) == Array("xab".utf8))
            #expect(ConcurrentTrace.text(of: replay.documents[1]) == Array("abc".utf8))
            try replay.mergeAll()
            for doc in replay.documents {
                #expect(ConcurrentTrace.text(of: doc) == Array("abc".utf8))
                #expect(doc.pendingCount == 0)
            }
        }
    }

    @Test("bad concurrent trace lines give a FormatError with their line number", arguments: [
        ("[0,[],[[0,0,\"a\"]]]\n[1,[5],[[0,0,\"b\"]]]\n", 2, "parent 5 is not an earlier transaction"),
        ("[0,[],[[0,0,\"a\"]]]\n[1,[1],[[0,0,\"b\"]]]\n", 2, "parent 1 is not an earlier transaction"),
        ("[0,[],[[0,0,\"a\"]]]\n[0,[],[[0,0,\"b\"]]]\n", 2, "agent 0's previous transaction (line 1) is not in its past"),
        ("[0,[],[[0,0,\"a\"]]\n", 1, "expected ']'"),
        ("[0,[],[[0,0,\"a]]]\n", 1, "unterminated string"),
        ("[0,[],[[0,x,\"a\"]]]\n", 1, "expected a number"),
        ("[0,[],[[0,0,\"a\"]]]\n\n[1,[0],[]]\n", 2, "empty line"),
        ("[0,[],[[0,0,\"a\"]]] [1]\n", 1, "unexpected text after the transaction"),
        ("[0,[],[[0,0,\"a\"]]]\n[1,[0];[]]\n", 2, "expected ','"),
        ("[0,[],[[0,0,\"\\q\"]]]\n", 1, "bad escape"),
        ("[0,[],[]]\n[1024,[0],[]]\n", 2, "agent 1024 is not below 1024"),
    ])
    func badLines(text: String, line: Int, reason: String) {
        do throws(ConcurrentTrace.FormatError) {
            let trace = try ConcurrentTrace(parsing: Array(text.utf8))
            Issue.record("parsed \(trace.transactions.count) transactions, expected an error at line \(line)")
        } catch {
            // A typed throw: `error` is a ConcurrentTrace.FormatError.
            #expect(error.line == line)
            #expect(error.reason == reason)
            #expect(error.description.hasPrefix("concurrent trace line \(line) (transaction \(line - 1)): "))
        }
    }

    @Test("a generated many-agent trace is valid, deterministic, survives JSON Lines, and converges with most text deleted")
    func synthetic() throws {
        let trace = ConcurrentTrace.synthetic(agents: 12, operations: 3_000)
        #expect(trace.agentCount == 12 && trace.elementOperations >= 3_000)
        #expect(trace.transactions == ConcurrentTrace.synthetic(agents: 12, operations: 3_000).transactions)
        #expect(trace.transactions != ConcurrentTrace.synthetic(agents: 12, operations: 3_000, seed: 30).transactions)
        #expect(try ConcurrentTrace(parsing: trace.jsonLines).transactions == trace.transactions)
        var replay = try ConcurrentReplay(trace, replicas: (1...12).map { ReplicaID(UInt64($0)) },
                                          delivery: .shuffled(seed: 29))
        try replay.mergeAll()
        let text = ConcurrentTrace.text(of: replay.documents[0])
        // Concurrent transactions never delete the same character: the length is known.
        let patches = trace.transactions.flatMap(\.patches)
        let inserted = patches.reduce(0) { $0 + $1.text.count }, deleted = patches.reduce(0) { $0 + $1.deleteCount }
        #expect(text.count == inserted - deleted)
        #expect(text.count * 5 < inserted)
        for doc in replay.documents { #expect(ConcurrentTrace.text(of: doc) == text) }
        // The breakdown counts every item's insert value (one byte each) once.
        let values = replay.documents[0].memoryBreakdown.first { $0.name == "items.insertValues" }
        #expect(values?.count == inserted)
        #expect(values.map { $0.bytes >= inserted * 5 } == true)
    }

    @Test("a generated version-control-like trace (long-lived branches) is valid, deterministic, and converges in any delivery order to its known length")
    func branchy() throws {
        let trace = ConcurrentTrace.branchy(agents: 16, operations: 30_000)
        #expect(trace.agentCount <= 16 && trace.elementOperations >= 30_000)
        #expect(trace.transactions == ConcurrentTrace.branchy(agents: 16, operations: 30_000).transactions)
        #expect(trace.transactions != ConcurrentTrace.branchy(agents: 16, operations: 30_000, seed: 30).transactions)
        #expect(try ConcurrentTrace(parsing: trace.jsonLines).transactions == trace.transactions)
        // Long-lived branches: some transaction merges two heads, and some has hundreds of
        // concurrent transactions (its past misses many of the trace's earlier ones).
        #expect(trace.transactions.contains { $0.parents.count == 2 })
        let past = (0 ..< trace.transactions.count).map { i in (0 ..< trace.agentCount).reduce(0) { $0 + trace.seen(by: i, of: $1) } }
        #expect(past.enumerated().contains { i, seen in i - seen > 50 })
        let ids = (1...trace.agentCount).map { ReplicaID(UInt64($0)) }
        var texts: [[UInt8]] = []
        for delivery in [ConcurrentReplay.Delivery.causal, .shuffled(seed: 7)] {
            var replay = try ConcurrentReplay(trace, replicas: ids, delivery: delivery)
            try replay.mergeAll()
            let text = ConcurrentTrace.text(of: replay.documents[0])
            #expect(text.count == trace.finalLength)
            for doc in replay.documents { #expect(ConcurrentTrace.text(of: doc) == text) }
            texts.append(text)
        }
        #expect(texts[0] == texts[1])
        #expect(trace.finalLength * 5 < trace.elementOperations)
    }

    @Test("the late-merge shape (issue 47): large transactions on many long-lived branches, replayed author by author with every replica's causal buffer full at once, converges as in causal order")
    func lateBranches() throws {
        let trace = ConcurrentTrace.branchy(agents: 8, operations: 20_000, shape: .late)
        #expect(trace.transactions == ConcurrentTrace.branchy(agents: 8, operations: 20_000, shape: .late).transactions)
        #expect(trace.transactions != ConcurrentTrace.branchy(agents: 8, operations: 20_000).transactions)
        // Large transactions: hundreds of element operations each on average (the default shape
        // makes tens).
        #expect(trace.elementOperations / trace.transactions.count >= 200)
        // Branches merged late: transactions merge two heads, and some transaction had not seen
        // a dozen of the transactions before it.
        #expect(trace.transactions.filter { $0.parents.count == 2 }.count >= trace.agentCount)
        let past = (0 ..< trace.transactions.count).map { i in (0 ..< trace.agentCount).reduce(0) { $0 + trace.seen(by: i, of: $1) } }
        #expect(past.enumerated().contains { i, seen in i - seen >= 12 })
        let ids = (1...trace.agentCount).map { ReplicaID(UInt64($0)) }
        var causal = try ConcurrentReplay(trace, replicas: ids, delivery: .causal)
        try causal.mergeAll()
        let text = ConcurrentTrace.text(of: causal.documents[0])
        #expect(text.count == trace.finalLength)
        #expect(causal.peakPending == 0)
        var byAuthor = try ConcurrentReplay(trace, replicas: ids, delivery: .authors(seed: 47))
        try byAuthor.mergeAll()
        for doc in byAuthor.documents {
            #expect(ConcurrentTrace.text(of: doc) == text)
            #expect(doc.pendingCount == 0 && doc.pendingBytes == 0)
        }
        // The buffers filled together: at the peak, more than one replica's worth of a tenth of
        // the history waited.
        #expect(byAuthor.peakPending > trace.elementOperations / 10)
        #expect(byAuthor.peakPendingBytes > byAuthor.peakPending)
        #expect(byAuthor.resent == 0)
        // Transaction by transaction in a shuffled order: the buffers fill too, the same text.
        var scattered = try ConcurrentReplay(trace, replicas: ids, delivery: .transactions(seed: 47))
        try scattered.mergeAll()
        for doc in scattered.documents { #expect(ConcurrentTrace.text(of: doc) == text) }
        #expect(scattered.peakPending > trace.elementOperations / 10)
        // Buffers too small for that: a full buffer refuses, the replay sends the refused
        // operations again, and the replicas still converge to the same text.
        var small = try ConcurrentReplay(trace, replicas: ids, delivery: .authors(seed: 47)) { replica in
            var doc = ListDocument(replica: replica)
            doc.pendingLimits = PendingLimits(maxOperations: 500, maxBytes: 1 << 30)
            return doc
        }
        try small.mergeAll()
        #expect(small.resent > 0)
        #expect(small.peakPending <= 500 * trace.agentCount)
        for doc in small.documents { #expect(ConcurrentTrace.text(of: doc) == text) }
    }

    @Test("the replay refuses replica ids that are not one distinct id per agent")
    func badReplicas() throws {
        let trace = try ConcurrentTrace(parsing: Array(Self.small.utf8))
        for ids: [UInt64] in [[1], [1, 1], [1, 2, 3]] {
            #expect(throws: ConcurrentReplay.ReplayError.self) {
                try ConcurrentReplay(trace, replicas: ids.map(ReplicaID.init))
            }
        }
    }
}
