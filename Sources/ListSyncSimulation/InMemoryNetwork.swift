import ListCRDT
import ListSync
import ListTable

/// How an ``InMemoryNetwork`` mistreats frames.
public struct NetworkFaults: Hashable, Sendable {
    /// Delay of each frame, drawn uniformly, in virtual milliseconds. A range wider than the gap
    /// between two sends reorders frames.
    public var latency: ClosedRange<UInt64>
    /// Percent of frames lost.
    public var lossPercent: Int
    /// Percent of frames delivered twice (the copy with its own delay).
    public var duplicatePercent: Int

    /// Makes a fault model.
    public init(latency: ClosedRange<UInt64> = 1...20, lossPercent: Int = 0, duplicatePercent: Int = 0) {
        self.latency = latency
        self.lossPercent = lossPercent
        self.duplicatePercent = duplicatePercent
    }

    /// In-order delivery after 1 ms, nothing lost or duplicated.
    public static let none = NetworkFaults(latency: 1...1)
    /// The default for simulations: 1–40 ms delay (so frames reorder), 5% loss, 5% duplicates.
    public static let standard = NetworkFaults(latency: 1...40, lossPercent: 5, duplicatePercent: 5)
}

/// A simulated network of numbered nodes on a virtual clock: every link delays, reorders,
/// duplicates and loses frames as its ``NetworkFaults`` say, and links can be partitioned and
/// healed. All randomness comes from one seed, and nothing reads the wall clock, so a run replays
/// exactly.
public struct InMemoryNetwork: Sendable {
    /// A frame on its way.
    public struct Delivery: Sendable {
        /// Virtual time of arrival.
        public var time: UInt64
        /// Sending node.
        public var from: Int
        /// Receiving node.
        public var to: Int
        /// The frame.
        public var frame: [UInt8]
        fileprivate var sequence: UInt64
    }

    /// The current virtual time, in milliseconds.
    public private(set) var now: UInt64 = 0
    /// The fault model for frames sent from now on.
    public var faults: NetworkFaults
    /// Whether each link keeps its frames in order (a stream such as TCP): delay without reordering.
    public var inOrder = false
    private var lastArrival: [Int: UInt64] = [:]
    private var rng: SplitMix64
    private var heap: [Delivery] = []
    private var sequence: UInt64 = 0
    private var cut: Set<Int> = []   // partitioned links, as `low << 32 | high`

    /// Frames handed to the network.
    public private(set) var framesSent = 0
    /// Frames that arrived (duplicates count twice).
    public private(set) var framesDelivered = 0
    /// Frames lost, or dropped by a partition.
    public private(set) var framesDropped = 0
    /// Frames dropped on arrival because their link was cut after they were sent, not yet taken
    /// by ``takeCutInFlight()`` (a stream's driver resets its connection for each, as TCP does
    /// once it gives up on a segment).
    public private(set) var cutInFlight: [Delivery] = []
    /// Extra copies made.
    public private(set) var framesDuplicated = 0
    /// Bytes handed to the network.
    public private(set) var bytesSent = 0

    /// A network whose randomness starts from `seed`.
    public init(seed: UInt64, faults: NetworkFaults = .standard) {
        rng = SplitMix64(seed: seed)
        self.faults = faults
    }

    /// Number of frames on their way.
    public var inFlight: Int { heap.count }

    private func link(_ a: Int, _ b: Int) -> Int { min(a, b) << 32 | max(a, b) }

    /// Whether the link between `a` and `b` is cut.
    public func isPartitioned(_ a: Int, _ b: Int) -> Bool { cut.contains(link(a, b)) }

    /// Cuts the link between `a` and `b`: frames sent or arriving while cut are dropped.
    public mutating func partition(_ a: Int, _ b: Int) { cut.insert(link(a, b)) }

    /// Restores the link between `a` and `b`.
    public mutating func heal(_ a: Int, _ b: Int) { cut.remove(link(a, b)) }

    /// Restores every link.
    public mutating func healAll() { cut.removeAll() }

    /// Sends a frame from `from` to `to`, subject to the faults and partitions.
    ///
    /// - Complexity: O(log f) for f frames in flight.
    public mutating func send(from: Int, to: Int, _ frame: [UInt8]) {
        framesSent += 1
        bytesSent += frame.count
        if isPartitioned(from, to) || rng.chance(faults.lossPercent) {
            framesDropped += 1
            return
        }
        schedule(from: from, to: to, frame)
        if rng.chance(faults.duplicatePercent) {
            framesDuplicated += 1
            schedule(from: from, to: to, frame)
        }
    }

    /// Takes the next frame to arrive no later than `deadline`, advancing the clock to its arrival;
    /// frames on a link cut meanwhile are dropped. Nil when none is due (the clock is unchanged).
    ///
    /// - Complexity: O(log f).
    public mutating func nextDelivery(until deadline: UInt64 = .max) -> Delivery? {
        while let first = heap.first, first.time <= deadline {
            let d = popMin()
            now = max(now, d.time)
            if isPartitioned(d.from, d.to) {
                framesDropped += 1
                cutInFlight.append(d)
                continue
            }
            framesDelivered += 1
            return d
        }
        return nil
    }

    /// The frames dropped on arrival since the last call (``cutInFlight``), oldest first.
    public mutating func takeCutInFlight() -> [Delivery] {
        defer { cutInFlight = [] }
        return cutInFlight
    }

    /// Moves the clock forward to `time` (never backward).
    public mutating func advance(to time: UInt64) { now = max(now, time) }

    // MARK: Heap ordered by (time, sequence)

    private mutating func schedule(from: Int, to: Int, _ frame: [UInt8]) {
        let span = faults.latency.upperBound - faults.latency.lowerBound + 1
        let delay = faults.latency.lowerBound + rng.next() % span
        sequence += 1
        var time = now + delay
        if inOrder {
            // A stream (TCP): a frame never overtakes an earlier one on its link.
            let key = from << 32 | to
            time = max(time, lastArrival[key] ?? 0)
            lastArrival[key] = time
        }
        heap.append(Delivery(time: time, from: from, to: to, frame: frame, sequence: sequence))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !before(heap[i], heap[parent]) { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popMin() -> Delivery {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count && before(heap[l], heap[m]) { m = l }
                if r < heap.count && before(heap[r], heap[m]) { m = r }
                if m == i { break }
                heap.swapAt(i, m)
                i = m
            }
        }
        return top
    }

    private func before(_ a: Delivery, _ b: Delivery) -> Bool {
        a.time != b.time ? a.time < b.time : a.sequence < b.sequence
    }
}
