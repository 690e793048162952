import ListSyncRandom

/// What a fault proxy does to the connections through it: every fault is drawn from the seed.
///
/// Faults are decided per connection (in the order the proxy accepts them) and, within a
/// connection, per *segment*: each direction's byte stream is cut into segments of seeded sizes
/// (``segmentBytes``), and each segment gets a delay and maybe a stall. So the decisions depend
/// on the seed, the connection's index and the byte offsets, never on how the kernel happened to
/// split the bytes into reads. Bytes are never altered, reordered, dropped or duplicated: they are
/// delayed, held, or the connection is closed.
public struct FaultPlan: Sendable, Equatable {
    /// The seed every decision is drawn from.
    public var seed: UInt64
    /// The delay of each segment, drawn uniformly (bytes stay in order: a segment never
    /// overtakes the one before it).
    public var delay: ClosedRange<Duration> = .zero ... .zero
    /// The sizes of the segments the delays and stalls are drawn for.
    public var segmentBytes: ClosedRange<Int> = 1 ... 16_384
    /// The probability that a segment starts a stall: it and everything after it in that
    /// direction wait ``stall`` (drawn) before they pass.
    public var stallProbability = 0.0
    /// How long a stall lasts.
    public var stall: ClosedRange<Duration> = .milliseconds(100) ... .milliseconds(1_000)
    /// The probability that an accepted connection is closed at once, before the proxy connects
    /// to the target.
    public var dropProbability = 0.0
    /// The probability that a connection is cut after ``cutBytes`` (drawn) bytes have passed,
    /// counting both directions.
    public var cutProbability = 0.0
    /// Where a cut falls, in bytes passed.
    public var cutBytes: ClosedRange<Int> = 1 ... 10_000
    /// The probability that a drop or a cut closes with a reset (RST) rather than a FIN.
    public var resetProbability = 0.5
    /// What a partition does.
    public var partitionMode = PartitionMode.reset

    /// A plan with no faults (a plain proxy until told to partition) and `seed`.
    public init(seed: UInt64) {
        self.seed = seed
    }

    /// Whether any random fault can happen (a plan with none still obeys partitions).
    public var injectsFaults: Bool {
        delay.upperBound > .zero || stallProbability > 0 || dropProbability > 0 || cutProbability > 0
    }
}

/// What a partition does to the link through a proxy.
public enum PartitionMode: String, Sendable, CaseIterable {
    /// Every connection is closed (with a reset) and new ones are closed as soon as they are
    /// accepted, until the partition ends: what peers see when a router refuses the route.
    case reset
    /// Nothing passes and nothing is closed: bytes are held (up to the proxy's buffer, then the
    /// senders' own buffers fill), new connections are accepted but not connected through. When
    /// the partition ends, everything held is delivered: what peers see when a cable is pulled
    /// and put back before their timeouts.
    case blackhole
}

/// Counts of what a proxy did: the faults it injected and the bytes it passed.
public struct FaultStatistics: Sendable, Equatable {
    /// Connections accepted.
    public var connections = 0
    /// Connections closed at once after the accept (``FaultPlan/dropProbability``).
    public var dropped = 0
    /// Connections cut after a random number of bytes.
    public var cut = 0
    /// Of the drops and cuts, how many closed with a reset.
    public var resets = 0
    /// Stalls started.
    public var stalls = 0
    /// Segments given a nonzero delay.
    public var delayedSegments = 0
    /// Partitions started.
    public var partitions = 0
    /// Connections closed by a partition (mode `reset`), open ones and those accepted during it.
    public var closedByPartition = 0
    /// Bytes passed in each direction: to the target, and back to the clients.
    public var bytesUpstream = 0
    public var bytesDownstream = 0

    public init() {}

    /// The faults injected: drops, cuts, stalls and partitions (delays are counted apart).
    public var faults: Int { dropped + cut + stalls + partitions }

    /// The counts as `name: value` pairs, for printing.
    public var fields: KeyValuePairs<String, Int> {
        ["connections": connections, "dropped": dropped, "cut": cut, "resets": resets, "stalls": stalls,
         "delayed_segments": delayedSegments, "partitions": partitions, "closed_by_partition": closedByPartition,
         "bytes_upstream": bytesUpstream, "bytes_downstream": bytesDownstream]
    }

    /// The sum of two proxies' counts.
    public static func + (a: FaultStatistics, b: FaultStatistics) -> FaultStatistics {
        var s = a
        s.connections += b.connections
        s.dropped += b.dropped
        s.cut += b.cut
        s.resets += b.resets
        s.stalls += b.stalls
        s.delayedSegments += b.delayedSegments
        s.partitions += b.partitions
        s.closedByPartition += b.closedByPartition
        s.bytesUpstream += b.bytesUpstream
        s.bytesDownstream += b.bytesDownstream
        return s
    }
}

/// The generator every fault is drawn from: the package's `SplitMix64`, one stream per connection
/// and direction, with the draws a fault plan needs.
public struct FaultRandom: RandomNumberGenerator, Sendable {
    private var generator: SplitMix64

    /// A generator for `seed`, mixed with `streams` (a connection's index, a direction), so that
    /// each connection and direction draws from a sequence of its own.
    public init(seed: UInt64, streams: UInt64...) {
        generator = SplitMix64(seed: seed, streams: streams)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { generator.next() }

    /// `true` with probability `p` (one draw, whatever `p` is).
    mutating func chance(_ p: Double) -> Bool {
        let u = Double(next() >> 11) / Double(1 << 53)
        return u < p
    }

    /// A value of `range`, uniformly (one draw).
    mutating func draw(_ range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound) &+ 1
        let r = next()
        return range.lowerBound + Int(span == 0 ? r >> 1 : r % span)
    }

    /// A duration of `range` in nanoseconds, uniformly (one draw).
    mutating func draw(_ range: ClosedRange<Duration>) -> UInt64 {
        let lo = range.lowerBound.nanoseconds, hi = range.upperBound.nanoseconds
        let r = next()
        return hi <= lo ? lo : lo + r % (hi - lo + 1)
    }
}
