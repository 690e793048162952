/// How much the causal buffer may hold: received operations whose dependencies have not arrived
/// wait there, and a peer could otherwise fill memory with operations that never unblock.
public struct PendingLimits: Hashable, Sendable {
    /// The most operations that may wait at once.
    public var maxOperations: Int
    /// The most bytes they may take, counted as ``ListOperation/bufferFootprint``.
    public var maxBytes: Int

    /// Limits of `maxOperations` operations and `maxBytes` bytes.
    public init(maxOperations: Int = PendingLimits.default.maxOperations,
                maxBytes: Int = PendingLimits.default.maxBytes) {
        self.maxOperations = maxOperations
        self.maxBytes = maxBytes
    }

    /// 1,000,000 operations and 64 MiB: room for a long offline session delivered in any order.
    public static let `default` = PendingLimits(maxOperations: 1_000_000, maxBytes: 64 << 20)
}

/// Which limit of the causal buffer an operation would have passed.
public enum PendingLimit: Hashable, Sendable, CustomStringConvertible {
    /// ``PendingLimits/maxOperations``: this many operations wait already.
    case operations(Int)
    /// ``PendingLimits/maxBytes``: the waiting operations would take more than this many bytes.
    case bytes(Int)

    public var description: String {
        switch self {
        case let .operations(n): return "its limit of \(n) operations"
        case let .bytes(n): return "its limit of \(n) bytes"
        }
    }
}

extension ListOperation {
    /// What this operation counts for against ``PendingLimits/maxBytes`` while it waits: its
    /// value's bytes plus 48 bytes for the operation and 16 for each id it carries.
    public var bufferFootprint: Int {
        var ids = 1 + deps.count
        var bytes = 48
        switch kind {
        case let .insertSection(_, value), let .insertItem(_, _, value), let .setItemValue(_, value),
             let .setSectionValue(_, value):
            bytes += value.count
            ids += 3
        case .moveSection:
            ids += 3
        case let .writeFields(_, writes):
            bytes += writes.footprint
            ids += 1
        case let .insertItemWithFields(_, _, value, writes), let .insertSectionWithFields(_, value, writes):
            bytes += value.count + writes.footprint
            ids += 3
        case let .moveItems(list, _, _):
            ids += 3 + list.count
        case .deleteItem:
            ids += 2
        case let .deleteSection(_, _, items):
            ids += 2 + 2 * items.count
        }
        return bytes + 16 * ids
    }
}

/// Received operations waiting for causal dependencies, kept as **chains**: a chain is a run of
/// one replica's operations that each (after the first) have the next counter and depend only on
/// the one before, as a replica's typing and deleting is made. Only its first operation can lack
/// a dependency outside the chain, so the chain waits as one: in exactly one queue, that of the
/// replica of the first dependency its first operation lacks, ordered by that dependency's
/// counter. When a replica's counter reaches `c`, ``takeReady(_:upTo:)`` hands back exactly the
/// chains that waited for a counter up to `c`: each chain is looked at once per dependency its
/// first operation waits for, so n operations received in any order cost O(n log n) to file and
/// wake.
///
/// A chain keeps its first operation as it is and the rest in the wire encoding
/// (``ListOperation/encode(_:)``) in segments of ``segmentSize``, the newest ones decoded until a
/// segment is full: a typed run costs a few bytes per operation while it waits instead of a
/// ``ListOperation`` and a dictionary entry each (issue 47: many replicas' buffers full at once).
/// Only item inserts and item deletes join a chain (the kinds runs are made of); any other
/// operation, and one that arrives before the operation it follows, is a chain of one.
struct PendingBuffer: Sendable {
    /// Operations of a chain after the first are encoded in batches of this many.
    static let segmentSize = 64

    private struct Chain: Sendable {
        /// The first operation, decoded: its dependencies say what the chain waits for.
        var head: ListOperation
        /// The last id of the last operation.
        var last: OpID
        /// Number of operations, the head included.
        var count: Int
        /// The sum of the operations' ``ListOperation/bufferFootprint``.
        var footprint: Int
        /// The operations after the head, oldest first: full segments encoded, then the newest.
        var sealed: [[UInt8]]
        var open: [ListOperation]

        /// Whether `op`, waiting for `dependency`, continues this chain.
        func isContinued(by op: ListOperation, waitingFor dependency: OpID) -> Bool {
            dependency == last && op.id.replica == last.replica && op.id.counter == last.counter &+ 1
                && op.deps.isOnly(last) && PendingBuffer.chains(op) && PendingBuffer.chains(head)
        }

        /// Every operation, oldest first.
        ///
        /// - Complexity: O(k) for k operations.
        func operations() -> [ListOperation] {
            var out = [head]
            out.reserveCapacity(count)
            for segment in sealed {
                // Encoded here from operations this document screened: decoding cannot fail.
                guard let ops = try? ListOperation.decode(segment, maxValueSize: .max, maxOperations: .max) else {
                    preconditionFailure("a causal buffer segment did not decode")
                }
                out.append(contentsOf: ops)
            }
            out.append(contentsOf: open)
            return out
        }
    }

    /// Ids are indexed in blocks of 64 counters of one replica: ``blocks`` maps a block to the
    /// chains whose indexed ids meet it.
    private static let blockShift: UInt64 = 6

    /// The block of `id`: its replica and its counter's block number, as an id.
    @inline(__always) private static func block(_ id: OpID) -> OpID {
        OpID(counter: id.counter >> blockShift, replica: id.replica)
    }

    /// One queue entry: chain `chain` waits until its replica's counter reaches `counter`.
    private struct Entry: Sendable, Comparable {
        var counter: UInt64
        var chain: Int
        static func < (a: Entry, b: Entry) -> Bool { (a.counter, a.chain) < (b.counter, b.chain) }
    }

    /// The chains by number; nil where a chain was removed (its number in ``free``).
    private var chains: [Chain?] = []
    private var free: [Int] = []
    /// For each block of ids, the chains whose indexed ids meet it: a chain of more than one
    /// operation (each of one id) all its ids, a chain of one operation its first id (its other
    /// ids, if any, are no operation's start). Every indexed id is an operation's first id, and
    /// no two waiting operations have the same one, so at most one chain holds an id.
    private var blocks: [OpID: [Int]] = [:]
    private var queues: [ReplicaID: MinHeap<Entry>] = [:]
    /// The decoded operations of the chain looked up last (``waitingOperation(_:)``), so that a
    /// chain received again in order is decoded once.
    private var cache: (chain: Int, operations: [ListOperation])?
    /// Number of waiting operations.
    private(set) var count = 0
    /// The sum of the waiting operations' ``ListOperation/bufferFootprint``.
    private(set) var bytes = 0
    /// How many times a chain was handed back by ``takeReady(_:upTo:)`` (tests check it stays
    /// linear in the number of operations: at most once per dependency).
    private(set) var looks = 0

    /// Whether `op` may join a chain after its first operation.
    @inline(__always) static func chains(_ op: ListOperation) -> Bool {
        switch op.kind {
        case .insertItem, .deleteItem: true
        default: false
        }
    }

    // MARK: Looking up

    /// The number of the chain holding an operation whose first id is `id`.
    ///
    /// - Complexity: O(b) for b chains indexed in its block (at most 64 plus the chains that
    ///   cross the block).
    private func chainHolding(_ id: OpID) -> Int? {
        guard let list = blocks[Self.block(id)] else { return nil }
        for key in list {
            let chain = chains[key]!
            if chain.head.id == id || (chain.count > 1 && chain.head.id.counter < id.counter && id.counter <= chain.last.counter) {
                return key
            }
        }
        return nil
    }

    /// Indexes chain `key` in the blocks of its ids `from...to` (counters of its replica).
    private mutating func index(_ key: Int, replica: ReplicaID, from: UInt64, to: UInt64) {
        for b in (from >> Self.blockShift)...(to >> Self.blockShift) {
            blocks[OpID(counter: b, replica: replica), default: []].append(key)
        }
    }

    /// The operation whose first id is `id` in `chain`, from its decoded operations.
    private static func find(_ id: OpID, in ops: [ListOperation]) -> ListOperation? {
        // A chain of more than one operation has one id per operation.
        if ops.count > 1 {
            let k = Int(id.counter &- ops[0].id.counter)
            return k >= 0 && k < ops.count && ops[k].id == id ? ops[k] : nil
        }
        return ops.first { $0.id == id }
    }

    /// The buffered operation with this id, if any.
    ///
    /// - Complexity: O(b) for the b chains indexed in its block when none is; else O(k) more to
    ///   decode its chain of k operations.
    func operation(_ id: OpID) -> ListOperation? {
        guard let key = chainHolding(id) else { return nil }
        let chain = chains[key]!
        if chain.head.id == id { return chain.head }
        return Self.find(id, in: chain.operations())
    }

    /// ``operation(_:)`` for the receive path: the decoded chain is kept for the next look-up, so
    /// that a chain received again is decoded once.
    ///
    /// - Complexity: O(b) as ``operation(_:)``, plus O(k) the first time a chain of k operations
    ///   is looked into.
    mutating func waitingOperation(_ id: OpID) -> ListOperation? {
        guard let key = chainHolding(id) else { return nil }
        let chain = chains[key]!
        if chain.head.id == id { return chain.head }
        if let cache, cache.chain == key, cache.operations.count == chain.count {
            return Self.find(id, in: cache.operations)
        }
        let ops = chain.operations()
        cache = (key, ops)
        return Self.find(id, in: ops)
    }

    /// All buffered operations, sorted by id.
    ///
    /// - Complexity: O(p log p) for p buffered operations.
    var all: [ListOperation] {
        chains.flatMap { $0?.operations() ?? [] }.sorted { $0.id < $1.id }
    }

    /// The limit an operation of `footprint` bytes (its ``ListOperation/bufferFootprint``)
    /// would pass if it were added, or nil when it fits.
    func limitPassed(footprint: Int, limits: PendingLimits) -> PendingLimit? {
        if count >= limits.maxOperations { return .operations(limits.maxOperations) }
        if bytes + footprint > limits.maxBytes { return .bytes(limits.maxBytes) }
        return nil
    }

    // MARK: Filing

    /// Files a new operation of `footprint` bytes until `dependency` is applied: at the end of
    /// the chain it continues, if any, else as a new chain.
    ///
    /// - Complexity: O(log p), plus O(``segmentSize``) when it fills a segment.
    mutating func add(_ op: ListOperation, footprint: Int, waitingFor dependency: OpID) {
        count += 1
        bytes += footprint
        if dependency.replica == op.id.replica, let key = chainHolding(dependency),
           chains[key]!.isContinued(by: op, waitingFor: dependency) {
            var chain = chains[key]!
            chains[key] = nil   // uniquely referenced while it grows
            chain.open.append(op)
            chain.last = op.lastID
            chain.count += 1
            chain.footprint += footprint
            if chain.open.count == Self.segmentSize {
                chain.sealed.append(ListOperation.encode(chain.open))
                chain.open = []
            }
            chains[key] = chain
            // A new block: index the chain there too (its ids before are indexed already).
            if op.id.counter >> Self.blockShift != (op.id.counter - 1) >> Self.blockShift {
                index(key, replica: op.id.replica, from: op.id.counter, to: op.id.counter)
            }
            if cache?.chain == key { cache = nil }
            return
        }
        let chain = Chain(head: op, last: op.lastID, count: 1, footprint: footprint, sealed: [], open: [])
        let key: Int
        if let k = free.popLast() { key = k; chains[k] = chain } else { key = chains.count; chains.append(chain) }
        index(key, replica: op.id.replica, from: op.id.counter, to: op.id.counter)
        refile(chain: key, waitingFor: dependency)
    }

    /// The first operation of a chain handed back by ``takeReady(_:upTo:)``.
    func head(of chain: Int) -> ListOperation { chains[chain]!.head }

    /// Files a chain handed back by ``takeReady(_:upTo:)`` under the next dependency its first
    /// operation lacks.
    ///
    /// - Complexity: O(log p).
    mutating func refile(chain: Int, waitingFor dependency: OpID) {
        queues[dependency.replica, default: MinHeap()].push(Entry(counter: dependency.counter, chain: chain))
    }

    /// Hands back the numbers of the chains filed under `replica` that waited for a counter of
    /// at most `counter`. They stay buffered: the caller removes or refiles each.
    ///
    /// - Complexity: O(k log p) for k chains handed back.
    mutating func takeReady(_ replica: ReplicaID, upTo counter: UInt64) -> [Int] {
        guard var queue = queues[replica], let top = queue.min, top.counter <= counter else { return [] }
        queues[replica] = nil   // uniquely referenced while it changes
        var ready: [Int] = []
        while let e = queue.min, e.counter <= counter {
            ready.append(e.chain)
            looks += 1
            queue.popMin()
        }
        if !queue.isEmpty { queues[replica] = queue }
        return ready
    }

    /// Removes a chain handed back by ``takeReady(_:upTo:)`` and returns its operations, oldest
    /// first.
    ///
    /// - Complexity: O(k) for k operations (and the few chains indexed in their blocks).
    mutating func remove(chain key: Int) -> [ListOperation] {
        let chain = chains[key]!
        chains[key] = nil
        free.append(key)
        if cache?.chain == key { cache = nil }
        let replica = chain.head.id.replica
        let to = chain.count > 1 ? chain.last.counter : chain.head.id.counter
        for b in (chain.head.id.counter >> Self.blockShift)...(to >> Self.blockShift) {
            let block = OpID(counter: b, replica: replica)
            var list = blocks.removeValue(forKey: block)!
            list.removeAll { $0 == key }
            if !list.isEmpty { blocks[block] = list }
        }
        count -= chain.count
        bytes -= chain.footprint
        return chain.operations()
    }

    /// The buffer's heap bytes, for ``ListDocument/memoryBreakdown``: its chains (each with its
    /// segments and its decoded operations; values of 14 bytes or less are inline), the index of
    /// their ids, and the queues. `buffer.chains` counts the waiting operations.
    ///
    /// - Complexity: O(c) for c chains.
    var memoryParts: [MemoryPart] {
        var chainBytes = chains.capacity * MemoryLayout<Chain?>.stride + free.capacity * MemoryLayout<Int>.stride
        for case let chain? in chains {
            chainBytes += chain.sealed.capacity * MemoryLayout<[UInt8]>.stride + chain.open.capacity * MemoryLayout<ListOperation>.stride
            for segment in chain.sealed { chainBytes += segment.capacity }
        }
        let indexBytes = blocks.values.reduce(blocks.capacity * MemoryLayout<(OpID, [Int])>.stride) {
            $0 + $1.capacity * MemoryLayout<Int>.stride
        }
        let queueBytes = queues.values.reduce(queues.capacity * MemoryLayout<(ReplicaID, MinHeap<Entry>)>.stride) {
            $0 + $1.count * MemoryLayout<Entry>.stride
        }
        return [MemoryPart(name: "buffer.chains", count: count, bytes: chainBytes),
                MemoryPart(name: "buffer.index", count: blocks.count, bytes: indexBytes),
                MemoryPart(name: "buffer.queues", count: queues.values.reduce(0) { $0 + $1.count }, bytes: queueBytes)]
    }

    /// The problems ``ListDocument/checkInvariants()`` reports: counts that do not add up, a
    /// chain not indexed in each block of its ids, or one that does not decode to its ids.
    ///
    /// - Complexity: O(p) for p buffered operations.
    func invariantProblems() -> [String] {
        var out: [String] = []
        let live = chains.indices.filter { chains[$0] != nil }
        if live.reduce(0, { $0 + chains[$1]!.count }) != count { out.append("causal buffer: count \(count) is not its chains' sum") }
        if live.reduce(0, { $0 + chains[$1]!.footprint }) != bytes { out.append("causal buffer: bytes \(bytes) are not its chains' sum") }
        var indexed = 0
        for key in live {
            let chain = chains[key]!
            let ops = chain.operations()
            if ops.count != chain.count || ops.last!.lastID != chain.last
                || (chain.count > 1 && zip(ops, ops.dropFirst()).contains { $1.id.counter != $0.id.counter + 1 || !$1.deps.isOnly($0.id) }) {
                out.append("causal buffer: chain at \(chain.head.id) does not hold a run of its ids")
            }
            let to = chain.count > 1 ? chain.last.counter : chain.head.id.counter
            for b in (chain.head.id.counter >> Self.blockShift)...(to >> Self.blockShift) {
                indexed += 1
                if blocks[OpID(counter: b, replica: chain.head.id.replica)]?.contains(key) != true {
                    out.append("causal buffer: chain at \(chain.head.id) is not indexed in block \(b)")
                }
            }
        }
        if blocks.values.reduce(0, { $0 + $1.count }) != indexed { out.append("causal buffer: the index holds other chains") }
        return out
    }
}
