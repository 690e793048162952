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
        case let .insertItemWithFields(_, _, value, writes):
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

/// Received operations waiting for causal dependencies. Each waits in exactly one queue: that of
/// the replica of the first dependency it lacks, ordered by that dependency's counter. When a
/// replica's counter reaches `c`, ``takeReady(_:upTo:)`` hands back exactly the operations that
/// waited for a counter up to `c`: each waiting operation is looked at once per dependency it
/// waits for, so n operations received in any order cost O(n log n) to file and wake.
struct PendingBuffer: Sendable {
    private struct Waiting: Sendable {
        var op: ListOperation
        var footprint: Int
    }

    /// One queue entry: `op` waits until its replica's counter reaches `counter`.
    private struct Entry: Sendable, Comparable {
        var counter: UInt64
        var op: OpID
        static func < (a: Entry, b: Entry) -> Bool { (a.counter, a.op) < (b.counter, b.op) }
    }

    private var byID: [OpID: Waiting] = [:]
    private var queues: [ReplicaID: MinHeap<Entry>] = [:]
    /// The sum of the waiting operations' ``ListOperation/bufferFootprint``.
    private(set) var bytes = 0
    /// How many times an operation was handed back by ``takeReady(_:upTo:)`` (tests check it
    /// stays linear in the number of operations).
    private(set) var looks = 0

    var count: Int { byID.count }

    /// The buffered operation with this id, if any.
    func operation(_ id: OpID) -> ListOperation? { byID[id]?.op }

    /// All buffered operations, sorted by id.
    ///
    /// - Complexity: O(p log p) for p buffered operations.
    var all: [ListOperation] { byID.values.map(\.op).sorted { $0.id < $1.id } }

    /// The limit an operation of `footprint` bytes (its ``ListOperation/bufferFootprint``)
    /// would pass if it were added, or nil when it fits.
    func limitPassed(footprint: Int, limits: PendingLimits) -> PendingLimit? {
        if byID.count >= limits.maxOperations { return .operations(limits.maxOperations) }
        if bytes + footprint > limits.maxBytes { return .bytes(limits.maxBytes) }
        return nil
    }

    /// Files a new operation of `footprint` bytes until `dependency` is applied.
    ///
    /// - Complexity: O(log p).
    mutating func add(_ op: ListOperation, footprint: Int, waitingFor dependency: OpID) {
        byID[op.id] = Waiting(op: op, footprint: footprint)
        bytes += footprint
        refile(op.id, waitingFor: dependency)
    }

    /// Files a buffered operation, handed back by ``takeReady(_:upTo:)``, under the next
    /// dependency it lacks.
    ///
    /// - Complexity: O(log p).
    mutating func refile(_ id: OpID, waitingFor dependency: OpID) {
        queues[dependency.replica, default: MinHeap()].push(Entry(counter: dependency.counter, op: id))
    }

    /// Hands back the ids of the operations filed under `replica` that waited for a counter of at
    /// most `counter`. They stay buffered: the caller removes or refiles each.
    ///
    /// - Complexity: O(k log p) for k operations handed back.
    mutating func takeReady(_ replica: ReplicaID, upTo counter: UInt64) -> [OpID] {
        guard var queue = queues[replica], let top = queue.min, top.counter <= counter else { return [] }
        queues[replica] = nil   // uniquely referenced while it changes
        var ready: [OpID] = []
        while let e = queue.min, e.counter <= counter {
            ready.append(e.op)
            queue.popMin()
        }
        if !queue.isEmpty { queues[replica] = queue }
        looks += ready.count
        return ready
    }

    /// Removes a buffered operation (once it applies, or is dropped).
    mutating func remove(_ id: OpID) -> ListOperation? {
        guard let w = byID.removeValue(forKey: id) else { return nil }
        bytes -= w.footprint
        return w.op
    }
}
