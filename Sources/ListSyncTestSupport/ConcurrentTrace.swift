import Foundation
import ListCRDT
import ListSyncSimulation

/// A recorded session of several people editing one document at the same time, as in
/// `Benchmarks/Traces/clownschool.concurrent.jsonl`: one transaction per line (JSON Lines),
/// `[agent, [parent, ...], [[position, deleteCount, "text"], ...]]`, whose index is its line number
/// counted from 0.
///
/// Transaction `i` was made by `agent` on the document as it was after merging exactly the
/// transactions in its past (its parents and, transitively, theirs); its patches apply in order to
/// that state, like `Array.replaceSubrange`. Each agent's transactions are in its own order (its
/// next transaction has its previous one in its past), so the past of a transaction holds a prefix
/// of every agent's sequence and is described by a version vector of counts (``version(of:)``).
/// ``ConcurrentReplay`` replays a trace on ListSync replicas.
public struct ConcurrentTrace: Sendable {
    /// One patch: delete `deleteCount` elements at `position`, then insert `text` there.
    public struct Patch: Sendable, Equatable {
        public var position: Int
        public var deleteCount: Int
        public var text: [UInt8]

        public init(position: Int, deleteCount: Int, text: [UInt8]) {
            self.position = position
            self.deleteCount = deleteCount
            self.text = text
        }
    }

    /// One transaction: the patches `agent` made on the state after merging `parents` (indices of
    /// earlier transactions).
    public struct Transaction: Sendable, Equatable {
        public var agent: Int
        public var parents: [Int]
        public var patches: [Patch]

        public init(agent: Int, parents: [Int], patches: [Patch]) {
            self.agent = agent
            self.parents = parents
            self.patches = patches
        }

        /// Number of single-element inserts and deletes.
        public var elementOperations: Int { patches.reduce(0) { $0 + $1.deleteCount + $1.text.count } }
    }

    /// Why a concurrent trace could not be read. `line` counts from 1 (transaction `line - 1`).
    public struct FormatError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public var description: String { "concurrent trace line \(line) (transaction \(line - 1)): \(reason)" }
    }

    /// The transactions; the index of one is its line number counted from 0.
    public private(set) var transactions: [Transaction]
    /// The expected final content after every replica merged everything, if a `.final.txt` file
    /// was next to the trace.
    public var finalText: [UInt8]?
    /// Number of agents: one more than the largest agent number.
    public private(set) var agentCount: Int
    /// For each agent, the indices of its transactions in its own order.
    public private(set) var transactionsByAgent: [[Int]]
    /// For each transaction, its position in its agent's sequence.
    public private(set) var sequenceNumbers: [Int]
    /// Row-major `transactions.count × agentCount`: how many of each agent's transactions are in
    /// the past of each transaction (not counting itself).
    private var pastCounts: [Int]

    /// Reads `NAME.jsonl` (and `NAME.final.txt` if present) from `directory`.
    ///
    /// - Throws: the file system's error, or ``FormatError``.
    public init(named name: String, in directory: URL) throws {
        let data = try Data(contentsOf: directory.appendingPathComponent("\(name).jsonl"))
        try self.init(parsing: Array(data))
        finalText = (try? Data(contentsOf: directory.appendingPathComponent("\(name).final.txt"))).map(Array.init)
    }

    /// Parses the JSON Lines text and computes every transaction's version vector.
    ///
    /// Only the subset of JSON the traces use is read: non-negative integers, arrays, and strings
    /// with the escapes `\" \\ \/ \n \t \r \b \f \uXXXX`. Every line must hold one transaction (a
    /// final newline is allowed); a parent must be an earlier transaction; an agent's previous
    /// transaction must be in the past of its next one.
    public init(parsing bytes: [UInt8]) throws(FormatError) {
        try self.init(transactions: Self.parse(bytes))
    }

    /// A trace of these transactions (a parent must be an earlier transaction, as in a file);
    /// computes every transaction's version vector.
    ///
    /// - Complexity: O(t × a) time and memory for t transactions and a agents.
    public init(transactions: [Transaction]) throws(FormatError) {
        self.transactions = transactions
        finalText = nil
        agentCount = (transactions.map(\.agent).max() ?? -1) + 1
        transactionsByAgent = Array(repeating: [], count: agentCount)
        sequenceNumbers = []
        sequenceNumbers.reserveCapacity(transactions.count)
        pastCounts = []
        pastCounts.reserveCapacity(transactions.count * agentCount)
        let n = agentCount
        for (i, t) in transactions.enumerated() {
            var v = Array(repeating: 0, count: n)
            for p in t.parents {
                guard p >= 0, p < i else { throw FormatError(line: i + 1, reason: "parent \(p) is not an earlier transaction") }
                // Parents come first: their past is known.
                for b in 0..<n { v[b] = max(v[b], pastCounts[p * n + b]) }
                let pa = transactions[p].agent
                v[pa] = max(v[pa], sequenceNumbers[p] + 1)
            }
            // The past holds at most the agent's earlier transactions; fewer means a gap.
            let own = transactionsByAgent[t.agent].count
            guard v[t.agent] == own else {
                let previous = transactionsByAgent[t.agent][own - 1]
                throw FormatError(line: i + 1, reason:
                    "agent \(t.agent)'s previous transaction (line \(previous + 1)) is not in its past")
            }
            sequenceNumbers.append(own)
            transactionsByAgent[t.agent].append(i)
            pastCounts.append(contentsOf: v)
        }
    }

    /// The version vector of transaction `i`'s past: for each agent, how many of its transactions
    /// (a prefix of ``transactionsByAgent``) transaction `i` had seen when it was made.
    public func version(of i: Int) -> [Int] { Array(pastCounts[(i * agentCount)..<((i + 1) * agentCount)]) }

    /// How many of `agent`'s transactions are in the past of transaction `i`.
    @inline(__always)
    public func seen(by i: Int, of agent: Int) -> Int { pastCounts[i * agentCount + agent] }

    /// Number of single-element inserts and deletes the trace performs.
    public var elementOperations: Int { transactions.reduce(0) { $0 + $1.elementOperations } }

    /// The text of a replayed document: the values of the items of section `section`, concatenated
    /// (each character of a trace is one item with a one-byte value).
    public static func text(of document: ListDocument, section: Int = 0) -> [UInt8] {
        let sections = document.snapshot().sections
        guard section < sections.count else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(sections[section].items.count)
        for item in sections[section].items { out.append(contentsOf: item.value) }
        return out
    }

    // MARK: Parsing

    /// Agents are numbered from 0; a larger number is taken for a corrupt file.
    public static let maxAgents = 1_024

    static func parse(_ bytes: [UInt8]) throws(FormatError) -> [Transaction] {
        var s = TraceScanner(bytes: bytes) { FormatError(line: $0, reason: $1) }
        var out: [Transaction] = []
        while s.i < bytes.count {
            let line = out.count + 1
            s.line = line
            if bytes[s.i] == 0x0A { throw s.fail("empty line") }
            try s.expect(0x5B)  // [
            let agent = try s.integer()
            guard agent < Self.maxAgents else { throw s.fail("agent \(agent) is not below \(Self.maxAgents)") }
            try s.expect(0x2C)
            var parents: [Int] = []
            var more = try s.openList()
            while more {
                let p = try s.integer()
                guard p < out.count else { throw s.fail("parent \(p) is not an earlier transaction") }
                parents.append(p)
                more = try s.nextElement()
            }
            try s.expect(0x2C)
            var patches: [Patch] = []
            more = try s.openList()
            while more {
                let e = try s.edit()
                patches.append(Patch(position: e.position, deleteCount: e.deleteCount, text: e.text))
                more = try s.nextElement()
            }
            try s.expect(0x5D)  // ]
            s.skipSpaces()
            if s.i < bytes.count {
                guard bytes[s.i] == 0x0A else { throw s.fail("unexpected text after the transaction") }
                s.i += 1
            }
            out.append(Transaction(agent: agent, parents: parents, patches: patches))
        }
        return out
    }
}

/// Replays a ``ConcurrentTrace`` on ListSync: one ``ListDocument`` per agent, each character one
/// item with a one-byte value in a single section.
///
/// Agent 0's replica creates the section first and every other replica receives that operation
/// before anything else. Then, for each transaction in trace order, its agent's replica receives
/// every operation of the other agents' transactions in the transaction's past that it has not
/// received yet (and nothing else), and makes the transaction's edits locally: each patch deletes
/// with `deleteItem(atRow:inSection:)` and inserts with `insertItem(atRow:inSection:value:)`, one
/// call per element. ``mergeAll()`` then delivers everything still missing to every replica.
///
/// ```swift
/// var replay = try ConcurrentReplay(trace, replicas: [ReplicaID(1), ReplicaID(2), ReplicaID(3)])
/// try replay.mergeAll()
/// ConcurrentTrace.text(of: replay.documents[0]) == trace.finalText
/// ```
public struct ConcurrentReplay: Sendable {
    /// The order in which a replica receives the operations delivered before a transaction (the
    /// set delivered is the same in every mode).
    public enum Delivery: Sendable, Hashable, CustomStringConvertible {
        /// Transaction by transaction in trace order (each agent's transactions in their order,
        /// and every transaction after its past), one `receive(_:)` call per transaction's
        /// operations. Nothing waits in the causal buffer.
        case causal
        /// The operations of the same set, shuffled by a SplitMix64 generator seeded with `seed`
        /// (one generator for the whole replay) and received one at a time with `receive(_:)`, so
        /// the causal buffer has to put them back in order.
        case shuffled(seed: UInt64)

        public var description: String {
            switch self {
            case .causal: return "causal"
            case let .shuffled(seed): return "shuffled(seed: \(seed))"
            }
        }
    }

    /// Why a replay stopped. `transaction` is nil for the section insert and the final merge.
    public enum ReplayError: Error, CustomStringConvertible {
        /// A local edit of the transaction's patches was refused.
        case edit(transaction: Int?, agent: Int, ListError)
        /// A replica refused a delivered operation.
        case receive(transaction: Int?, agent: Int, ApplyError)
        /// After a delivery, operations were still waiting in the replica's causal buffer.
        case pending(transaction: Int?, agent: Int, count: Int)
        /// The replica ids are not one per agent, or not distinct.
        case replicas(String)

        public var description: String {
            func at(_ t: Int?) -> String { t.map { "transaction \($0)" } ?? "final merge" }
            switch self {
            case let .edit(t, a, e): return "\(at(t)), agent \(a): local edit refused: \(e)"
            case let .receive(t, a, e): return "\(at(t)), agent \(a): receive refused: \(e)"
            case let .pending(t, a, n): return "\(at(t)), agent \(a): \(n) operations still pending after delivery"
            case let .replicas(why): return "bad replica ids: \(why)"
            }
        }
    }

    /// The trace being replayed.
    public let trace: ConcurrentTrace
    /// The delivery order.
    public let delivery: Delivery
    /// One document per agent (index = agent).
    public private(set) var documents: [ListDocument]
    /// Agent 0's section insert, received by every other replica first.
    public let sectionOperation: ListOperation
    /// The operations each transaction made, in order (index = transaction).
    public private(set) var operations: [[ListOperation]]
    /// Row-major `agentCount × agentCount`: how many of agent b's transactions replica a received
    /// (for a == b: made).
    private var delivered: [Int]
    private var rng: SplitMix64
    private var scratch: [ListOperation] = []

    /// Replays the whole trace (everything but the final merge).
    ///
    /// - Parameters:
    ///   - trace: the trace.
    ///   - replicas: the replica id of each agent (index = agent), distinct.
    ///   - delivery: the order in which delivered operations are received.
    ///   - makeDocument: makes the empty document of a replica (tests use it to replay on a
    ///     deliberately broken engine variant).
    /// - Throws: ``ReplayError`` at the first refused edit or operation, or when a delivery leaves
    ///   operations in a causal buffer.
    public init(_ trace: ConcurrentTrace, replicas: [ReplicaID], delivery: Delivery = .causal,
                makeDocument: (ReplicaID) -> ListDocument = { ListDocument(replica: $0) }) throws(ReplayError) {
        guard trace.agentCount > 0 else { throw .replicas("the trace has no transactions") }
        guard replicas.count == trace.agentCount else {
            throw .replicas("\(replicas.count) ids for \(trace.agentCount) agents")
        }
        guard Set(replicas).count == replicas.count else { throw .replicas("\(replicas) are not distinct") }
        self.trace = trace
        self.delivery = delivery
        let n = trace.agentCount
        var docs = replicas.map(makeDocument)
        let section: ListOperation
        do throws(ListError) { section = try docs[0].insertSection(at: 0) } catch { throw .edit(transaction: nil, agent: 0, error) }
        for a in 1..<n {
            do throws(ApplyError) { _ = try docs[a].receive(section) } catch { throw .receive(transaction: nil, agent: a, error) }
        }
        documents = docs
        sectionOperation = section
        operations = []
        operations.reserveCapacity(trace.transactions.count)
        delivered = Array(repeating: 0, count: n * n)
        if case let .shuffled(seed) = delivery { rng = SplitMix64(seed: seed) } else { rng = SplitMix64(seed: 0) }
        for i in trace.transactions.indices { try step(i) }
    }

    /// Delivers to every replica every operation it has not received (in the replay's delivery
    /// order), after which all replicas have the same operations.
    public mutating func mergeAll() throws(ReplayError) {
        for a in 0..<trace.agentCount {
            try deliver(to: a, upTo: trace.transactionsByAgent.map(\.count), transaction: nil)
        }
    }

    // MARK: Steps

    /// One-byte values, made once.
    private static let byteValues: [Data] = (0..<256).map { Data([UInt8($0)]) }

    /// Transaction `i`: delivers its past to its agent's replica, then makes its edits there.
    private mutating func step(_ i: Int) throws(ReplayError) {
        let t = trace.transactions[i]
        let a = t.agent
        try deliver(to: a, upTo: trace.version(of: i), transaction: i)
        var ops: [ListOperation] = []
        ops.reserveCapacity(t.elementOperations)
        let values = Self.byteValues
        do throws(ListError) {
            for patch in t.patches {
                for _ in 0..<patch.deleteCount {
                    ops.append(try documents[a].deleteItem(atRow: patch.position, inSection: 0))
                }
                var p = patch.position
                for c in patch.text {
                    ops.append(try documents[a].insertItem(atRow: p, inSection: 0, value: values[Int(c)]))
                    p += 1
                }
            }
        } catch {
            throw .edit(transaction: i, agent: a, error)
        }
        operations.append(ops)
        delivered[a * trace.agentCount + a] += 1
    }

    /// Delivers to replica `a` the transactions of the other agents up to the counts `version`.
    private mutating func deliver(to a: Int, upTo version: [Int], transaction: Int?) throws(ReplayError) {
        let n = trace.agentCount
        let byAgent = trace.transactionsByAgent
        // Next undelivered position in each other agent's sequence; merged by transaction index
        // (parents precede children in the file), which is a causal order.
        var next = (0..<n).map { delivered[a * n + $0] }
        var any = false
        if case .shuffled = delivery { scratch.removeAll(keepingCapacity: true) }
        while true {
            var best = -1, bestIndex = Int.max
            for b in 0..<n where b != a && next[b] < version[b] {
                let idx = byAgent[b][next[b]]
                if idx < bestIndex { bestIndex = idx; best = b }
            }
            if best < 0 { break }
            next[best] += 1
            any = true
            switch delivery {
            case .causal:
                let report = documents[a].receive(operations[bestIndex])
                if let e = report.refused.first { throw .receive(transaction: transaction, agent: a, e) }
            case .shuffled:
                scratch.append(contentsOf: operations[bestIndex])
            }
        }
        guard any else { return }
        for b in 0..<n where b != a { delivered[a * n + b] = next[b] }
        if case .shuffled = delivery {
            var k = scratch.count - 1
            while k > 0 {
                scratch.swapAt(k, rng.below(k + 1))
                k -= 1
            }
            for op in scratch {
                do throws(ApplyError) { _ = try documents[a].receive(op) } catch { throw .receive(transaction: transaction, agent: a, error) }
            }
        }
        let pending = documents[a].pendingCount
        if pending != 0 { throw .pending(transaction: transaction, agent: a, count: pending) }
    }
}
