import Foundation
import ListCRDT
import ListSyncSimulation

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
        /// Author by author, as a sync by version vector sends them: the operations of the same
        /// set grouped by agent, each agent's in its own order in one `receive(_:)` call, the
        /// agents in an order shuffled by a SplitMix64 generator seeded with `seed`. An agent's
        /// operations that follow a merge wait in the causal buffer until the agents they merged
        /// arrive. ``ConcurrentReplay/mergeAll()`` interleaves the replicas (in round k every
        /// replica receives the k-th agent of its own shuffled order), so that every replica's
        /// buffer fills at the same time; operations a full buffer refuses
        /// (``ApplyError/bufferFull(_:_:)``) are sent again after the last round, as a peer does
        /// at its next sync.
        case authors(seed: UInt64)
        /// Transaction by transaction in a shuffled order (each transaction's operations in
        /// their order, one `receive(_:)` call each), so that most of what a replica lacks waits
        /// until the transactions before it arrive. ``ConcurrentReplay/mergeAll()`` interleaves the
        /// replicas (in round k every replica receives the k-th of 64 slices of its own shuffled
        /// order); refused operations are sent again as with ``authors(seed:)``.
        case transactions(seed: UInt64)

        public var description: String {
            switch self {
            case .causal: return "causal"
            case let .shuffled(seed): return "shuffled(seed: \(seed))"
            case let .authors(seed): return "authors(seed: \(seed))"
            case let .transactions(seed): return "transactions(seed: \(seed))"
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
    /// The most operations waiting in all replicas' causal buffers together, read after each
    /// `receive` call of the ``Delivery/authors(seed:)`` and ``Delivery/transactions(seed:)``
    /// deliveries (0 in the other modes).
    public private(set) var peakPending = 0
    /// The most bytes (``ListDocument/pendingBytes``) waiting in all replicas' buffers together,
    /// read with ``peakPending``.
    public private(set) var peakPendingBytes = 0
    /// How many operations a full causal buffer refused and were sent again.
    public private(set) var resent = 0
    /// The operations (and their bytes) waiting in all replicas' buffers now.
    private var waiting = 0, waitingBytes = 0

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
        switch delivery {
        case .causal: rng = SplitMix64(seed: 0)
        case let .shuffled(seed), let .authors(seed), let .transactions(seed): rng = SplitMix64(seed: seed)
        }
        for i in trace.transactions.indices { try step(i) }
    }

    /// Delivers to every replica every operation it has not received (in the replay's delivery
    /// order), after which all replicas have the same operations.
    public mutating func mergeAll() throws(ReplayError) {
        if case .authors = delivery { return try mergeAllInterleaved() }
        if case .transactions = delivery { return try mergeAllScattered() }
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
        if case .authors = delivery { return try deliverByAuthor(to: a, upTo: version, transaction: transaction) }
        if case .transactions = delivery { return try deliverScattered(to: a, upTo: version, transaction: transaction) }
        let n = trace.agentCount
        let byAgent = trace.transactionsByAgent
        // Next undelivered position in each other agent's sequence; merged by transaction index
        // (parents precede children in the file), which is a causal order.
        var next = (0..<n).map { delivered[a * n + $0] }
        var any = false
        if delivery != .causal { scratch.removeAll(keepingCapacity: true) }
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
            case .shuffled, .authors, .transactions:
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

    // MARK: Author by author

    /// The agents other than `a` of which replica `a` has not received every transaction up to
    /// `version`, in a shuffled order.
    private mutating func missingAuthors(of a: Int, upTo version: [Int]) -> [Int] {
        let n = trace.agentCount
        var order = (0..<n).filter { $0 != a && delivered[a * n + $0] < version[$0] }
        var k = order.count - 1
        while k > 0 {
            order.swapAt(k, rng.below(k + 1))
            k -= 1
        }
        return order
    }

    /// Delivers to replica `a` agent `b`'s transactions up to `count`, one `receive(_:)` per
    /// transaction, keeping the operations a full buffer refused in `retry`.
    private mutating func deliver(author b: Int, to a: Int, upTo count: Int, transaction: Int?,
                                  retry: inout [ListOperation]) throws(ReplayError) {
        let n = trace.agentCount
        try deliver(trace.transactionsByAgent[b][delivered[a * n + b]..<count], to: a, transaction: transaction, retry: &retry)
        delivered[a * n + b] = count
    }

    /// Delivers the transactions `list` to replica `a`, one `receive(_:)` each, keeping the
    /// operations a full buffer refused in `retry`.
    private mutating func deliver<C: Collection<Int>>(_ list: C, to a: Int, transaction: Int?,
                                                      retry: inout [ListOperation]) throws(ReplayError) {
        for t in list {
            let before = documents[a].pendingCount, beforeBytes = documents[a].pendingBytes
            let report = documents[a].receive(operations[t])
            for e in report.refused {
                guard case let .bufferFull(id, _) = e, let op = operations[t].first(where: { $0.id == id }) else {
                    throw .receive(transaction: transaction, agent: a, e)
                }
                retry.append(op)
            }
            waiting += documents[a].pendingCount - before
            waitingBytes += documents[a].pendingBytes - beforeBytes
            peakPending = max(peakPending, waiting)
            peakPendingBytes = max(peakPendingBytes, waitingBytes)
        }
    }

    /// Sends replica `a` the operations its buffer refused again, until none is left; throws if
    /// a pass takes none of them.
    private mutating func resend(_ retry: inout [ListOperation], to a: Int, transaction: Int?) throws(ReplayError) {
        while !retry.isEmpty {
            var again: [ListOperation] = []
            for op in retry {
                let before = documents[a].pendingCount, beforeBytes = documents[a].pendingBytes
                do throws(ApplyError) { _ = try documents[a].receive(op) } catch {
                    guard case .bufferFull = error else { throw .receive(transaction: transaction, agent: a, error) }
                    again.append(op)
                }
                waiting += documents[a].pendingCount - before
                waitingBytes += documents[a].pendingBytes - beforeBytes
            }
            resent += retry.count
            guard again.count < retry.count else {
                throw .pending(transaction: transaction, agent: a, count: documents[a].pendingCount)
            }
            retry = again
        }
    }

    /// ``Delivery/authors(seed:)`` before a transaction: agent by agent, in a shuffled order.
    private mutating func deliverByAuthor(to a: Int, upTo version: [Int], transaction: Int?) throws(ReplayError) {
        var retry: [ListOperation] = []
        for b in missingAuthors(of: a, upTo: version) {
            try deliver(author: b, to: a, upTo: version[b], transaction: transaction, retry: &retry)
        }
        try resend(&retry, to: a, transaction: transaction)
        let pending = documents[a].pendingCount
        if pending != 0 { throw .pending(transaction: transaction, agent: a, count: pending) }
    }

    /// ``Delivery/authors(seed:)``'s final merge: in round k every replica receives the k-th
    /// agent of its own shuffled order of the agents it lacks; then what full buffers refused.
    private mutating func mergeAllInterleaved() throws(ReplayError) {
        let n = trace.agentCount
        let all = trace.transactionsByAgent.map(\.count)
        var orders: [[Int]] = []
        for a in 0..<n { orders.append(missingAuthors(of: a, upTo: all)) }
        var retry = Array(repeating: [ListOperation](), count: n)
        for k in 0..<(orders.map(\.count).max() ?? 0) {
            for a in 0..<n where k < orders[a].count {
                try deliver(author: orders[a][k], to: a, upTo: all[orders[a][k]], transaction: nil, retry: &retry[a])
            }
        }
        for a in 0..<n {
            try resend(&retry[a], to: a, transaction: nil)
            let pending = documents[a].pendingCount
            if pending != 0 { throw .pending(transaction: nil, agent: a, count: pending) }
        }
    }

    // MARK: Transaction by transaction

    /// The transactions of the agents other than `a` that replica `a` has not received, up to
    /// `version`, in a shuffled order; marks them delivered.
    private mutating func missingTransactions(of a: Int, upTo version: [Int]) -> [Int] {
        let n = trace.agentCount
        var list: [Int] = []
        for b in 0..<n where b != a {
            list += trace.transactionsByAgent[b][delivered[a * n + b]..<version[b]]
            delivered[a * n + b] = max(delivered[a * n + b], version[b])
        }
        var k = list.count - 1
        while k > 0 {
            list.swapAt(k, rng.below(k + 1))
            k -= 1
        }
        return list
    }

    /// ``Delivery/transactions(seed:)`` before a transaction.
    private mutating func deliverScattered(to a: Int, upTo version: [Int], transaction: Int?) throws(ReplayError) {
        var retry: [ListOperation] = []
        try deliver(missingTransactions(of: a, upTo: version), to: a, transaction: transaction, retry: &retry)
        try resend(&retry, to: a, transaction: transaction)
        let pending = documents[a].pendingCount
        if pending != 0 { throw .pending(transaction: transaction, agent: a, count: pending) }
    }

    /// ``Delivery/transactions(seed:)``'s final merge: 64 rounds; in round k every replica
    /// receives the k-th slice of its own shuffled order of the transactions it lacks.
    private mutating func mergeAllScattered() throws(ReplayError) {
        let n = trace.agentCount, rounds = 64
        let all = trace.transactionsByAgent.map(\.count)
        var orders: [[Int]] = []
        for a in 0..<n { orders.append(missingTransactions(of: a, upTo: all)) }
        var retry = Array(repeating: [ListOperation](), count: n)
        for k in 0..<rounds {
            for a in 0..<n {
                let c = orders[a].count
                try deliver(orders[a][(c * k / rounds)..<(c * (k + 1) / rounds)], to: a, transaction: nil, retry: &retry[a])
            }
        }
        for a in 0..<n {
            try resend(&retry[a], to: a, transaction: nil)
            let pending = documents[a].pendingCount
            if pending != 0 { throw .pending(transaction: nil, agent: a, count: pending) }
        }
    }
}
