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

