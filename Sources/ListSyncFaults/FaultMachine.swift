/// The decisions of a fault proxy, with no sockets: events in (a connection accepted, bytes
/// received, time passing, a partition), actions out (connect through, forward so many bytes,
/// close). ``FaultProxy`` is the thin socket loop around it.
///
/// The machine never sees the bytes, only their counts: it tells the loop how many of the bytes
/// it holds for a direction to pass on, in order. So a byte can be delayed, held or never sent
/// (when the connection closes first), but never altered, reordered or sent twice.
///
/// Every random decision comes from the plan's seed, drawn per connection (by its index) and per
/// segment of each direction (by byte offset), so the same seed gives the same faults at the same
/// bytes however the kernel splits the reads (``FaultMachineTests`` checks this).
///
/// Times are monotonic nanoseconds, passed in: the machine reads no clock.
public struct FaultMachine: Sendable {
    /// A proxied connection: its index in the order of accepts (0, 1, 2, ...).
    public struct ConnectionID: Hashable, Comparable, Sendable, CustomStringConvertible {
        public let index: UInt64
        public init(_ index: UInt64) { self.index = index }
        public static func < (a: Self, b: Self) -> Bool { a.index < b.index }
        public var description: String { "#\(index)" }
    }

    /// Which way bytes flow.
    public enum Direction: Int, Sendable, CaseIterable {
        /// From the client that connected to the proxy, to the target.
        case upstream
        /// From the target back to the client.
        case downstream
    }

    /// Why the machine closes a connection.
    public enum CloseReason: Hashable, Sendable {
        /// Closed at once after the accept (a seeded drop).
        case dropped
        /// Cut after this many bytes had passed (both directions counted).
        case cut(afterBytes: Int)
        /// A partition in mode `reset`.
        case partitioned
        /// One side closed (its end of stream, once what it had sent was passed on).
        case ended
        /// A socket failed (the loop said so), or the target refused the connection.
        case failed
    }

    /// What the loop must do.
    public enum Action: Hashable, Sendable {
        /// Connect to the target for this connection (then call ``connected(_:now:)`` or
        /// ``failed(_:)``).
        case connect(ConnectionID)
        /// Send the next `bytes` held for this direction to its destination.
        case forward(ConnectionID, Direction, bytes: Int)
        /// Close both sockets of the connection; with a reset (RST) if `reset`.
        case close(ConnectionID, CloseReason, reset: Bool)
    }

    /// The plan the faults are drawn from.
    public let plan: FaultPlan
    /// What has been done so far.
    public private(set) var statistics = FaultStatistics()
    /// Whether a partition is on.
    public private(set) var isPartitioned = false
    /// Whether random faults are injected (until ``heal(now:)``).
    public private(set) var faultsEnabled = true

    private var nextIndex: UInt64 = 0
    private var connections: [ConnectionID: Connection] = [:]

    /// A machine that draws its faults from `plan`.
    public init(plan: FaultPlan) {
        self.plan = plan
    }

    /// The connections open now.
    public var openConnections: Int { connections.count }

    /// The bytes held for `direction` of `id`, received and not yet forwarded.
    public func held(_ id: ConnectionID, _ direction: Direction) -> Int {
        guard let c = connections[id] else { return 0 }
        let d = c.directions[direction.rawValue]
        return d.received - d.forwarded
    }

    /// The earliest time at which ``advance(now:)`` has something to do; `nil`: nothing waits on
    /// time (during a blackhole partition, nothing is released until it ends).
    public var nextDeadline: UInt64? {
        if isPartitioned && plan.partitionMode == .blackhole { return nil }
        var earliest: UInt64?
        for c in connections.values where c.phase == .open {
            for d in c.directions {
                if let first = d.pieces.first, earliest.map({ first.at < $0 }) ?? true { earliest = first.at }
            }
        }
        return earliest
    }

    // MARK: Events

    /// A client connected to the proxy: its id, and what to do (connect through, hold it during a
    /// blackhole partition, or close it).
    ///
    /// Each accept draws the same four values from the connection's own generator, whatever they
    /// are used for, so that one connection's faults do not depend on another's.
    public mutating func accept(now: UInt64) -> (ConnectionID, [Action]) {
        let id = ConnectionID(nextIndex)
        nextIndex += 1
        statistics.connections += 1
        var rng = FaultRandom(seed: plan.seed, streams: id.index)
        let drop = rng.chance(plan.dropProbability)
        let reset = rng.chance(plan.resetProbability)
        let cut = rng.chance(plan.cutProbability)
        let cutAt = rng.draw(plan.cutBytes)
        if isPartitioned && plan.partitionMode == .reset {
            statistics.closedByPartition += 1
            return (id, [.close(id, .partitioned, reset: true)])
        }
        if faultsEnabled && drop {
            statistics.dropped += 1
            if reset { statistics.resets += 1 }
            return (id, [.close(id, .dropped, reset: reset)])
        }
        var c = Connection(
            phase: isPartitioned ? .held : .connecting,
            directions: Direction.allCases.map { DirectionState(rng: FaultRandom(seed: plan.seed, streams: id.index, UInt64($0.rawValue) + 1)) })
        if faultsEnabled && cut {
            c.cutAt = cutAt
            c.resetOnCut = reset
        }
        connections[id] = c
        return (id, isPartitioned ? [] : [.connect(id)])
    }

    /// The connection to the target is made: what was held for it may pass.
    public mutating func connected(_ id: ConnectionID, now: UInt64) -> [Action] {
        guard connections[id]?.phase == .connecting else { return [] }
        connections[id]?.phase = .open
        return release(id, now: now)
    }

    /// `bytes` bytes arrived for `direction` (the loop keeps them, in order, until told to
    /// forward them).
    ///
    /// - Complexity: O(segments the bytes span).
    public mutating func received(_ id: ConnectionID, _ direction: Direction, bytes: Int, now: UInt64) -> [Action] {
        guard bytes > 0, var c = connections[id] else { return [] }
        var d = c.directions[direction.rawValue]
        var offset = d.received
        let end = offset + bytes
        while offset < end {
            if offset == d.segmentEnd { startSegment(&d, now: now) }
            let pieceEnd = min(end, d.segmentEnd)
            let at = max(now &+ d.segmentDelay, d.lastRelease, d.stallUntil)
            d.lastRelease = at
            if let last = d.pieces.last, last.at == at {
                d.pieces[d.pieces.count - 1].end = pieceEnd
            } else {
                d.pieces.append(Piece(end: pieceEnd, at: at))
            }
            offset = pieceEnd
        }
        d.received = end
        c.directions[direction.rawValue] = d
        connections[id] = c
        return release(id, now: now)
    }

    /// The source of `direction` reached its end of stream: the connection closes once what it
    /// sent has been passed on.
    public mutating func ended(_ id: ConnectionID, _ direction: Direction, now: UInt64) -> [Action] {
        guard connections[id] != nil else { return [] }
        connections[id]!.directions[direction.rawValue].ended = true
        return release(id, now: now)
    }

    /// A socket of the connection failed, or the target refused it: it is closed.
    public mutating func failed(_ id: ConnectionID) -> [Action] {
        guard connections.removeValue(forKey: id) != nil else { return [] }
        return [.close(id, .failed, reset: false)]
    }

    /// Time passed: what is due is forwarded.
    ///
    /// - Complexity: O(open connections).
    public mutating func advance(now: UInt64) -> [Action] {
        var actions: [Action] = []
        for id in connections.keys.sorted() { actions += release(id, now: now) }
        return actions
    }

    /// Starts a partition (nothing if one is on). Mode `reset`: every connection is closed with a
    /// reset, and new ones are closed at once. Mode `blackhole`: nothing passes until it ends.
    public mutating func partition(now: UInt64) -> [Action] {
        guard !isPartitioned else { return [] }
        isPartitioned = true
        statistics.partitions += 1
        guard plan.partitionMode == .reset else { return [] }
        let ids = connections.keys.sorted()
        connections = [:]
        statistics.closedByPartition += ids.count
        return ids.map { .close($0, .partitioned, reset: true) }
    }

    /// Ends a partition: held connections are connected through, and held bytes pass when due.
    public mutating func endPartition(now: UInt64) -> [Action] {
        guard isPartitioned else { return [] }
        isPartitioned = false
        var actions: [Action] = []
        for id in connections.keys.sorted() {
            if connections[id]?.phase == .held {
                connections[id]?.phase = .connecting
                actions.append(.connect(id))
            }
        }
        return actions + advance(now: now)
    }

    /// Heals the link for good: ends any partition and every fault. No more drops, cuts, delays
    /// or stalls; what is held passes now, in order. From here on the proxy only forwards.
    public mutating func heal(now: UInt64) -> [Action] {
        faultsEnabled = false
        for id in connections.keys {
            connections[id]?.cutAt = nil
            for k in 0..<2 {
                var d = connections[id]!.directions[k]
                if let last = d.pieces.last {
                    d.pieces = [Piece(end: last.end, at: min(now, d.pieces[0].at))]
                }
                d.lastRelease = 0
                d.stallUntil = 0
                d.segmentDelay = 0
                connections[id]!.directions[k] = d
            }
        }
        if isPartitioned { return endPartition(now: now) }
        return advance(now: now)
    }

    // MARK: Internals

    private mutating func startSegment(_ d: inout DirectionState, now: UInt64) {
        // Always the same three draws, so that later segments do not depend on the heal.
        let length = d.rng.draw(plan.segmentBytes)
        let delay: UInt64 = d.rng.draw(plan.delay)
        let stall = d.rng.chance(plan.stallProbability)
        let stallFor: UInt64 = d.rng.draw(plan.stall)
        d.segmentEnd += max(1, length)
        guard faultsEnabled else {
            d.segmentDelay = 0
            return
        }
        d.segmentDelay = delay
        if delay > 0 { statistics.delayedSegments += 1 }
        if stall {
            statistics.stalls += 1
            d.stallUntil = max(d.stallUntil, now &+ stallFor)
        }
    }

    /// Forwards what is due for `id` (cutting it at its cut point), and closes it once a side
    /// ended and its bytes are through.
    private mutating func release(_ id: ConnectionID, now: UInt64) -> [Action] {
        guard var c = connections[id], c.phase == .open,
              !(isPartitioned && plan.partitionMode == .blackhole) else { return [] }
        var actions: [Action] = []
        for k in 0..<2 {
            var d = c.directions[k]
            var due = 0
            while let first = d.pieces.first, first.at <= now {
                due = first.end - d.forwarded
                d.pieces.removeFirst()
            }
            if due > 0, let cutAt = c.cutAt, c.passed + due >= cutAt {
                let allowed = cutAt - c.passed
                if allowed > 0 { actions.append(.forward(id, Direction(rawValue: k)!, bytes: allowed)) }
                count(allowed, k)
                statistics.cut += 1
                if c.resetOnCut { statistics.resets += 1 }
                connections[id] = nil
                return actions + [.close(id, .cut(afterBytes: cutAt), reset: c.resetOnCut)]
            }
            if due > 0 {
                d.forwarded += due
                c.passed += due
                count(due, k)
                actions.append(.forward(id, Direction(rawValue: k)!, bytes: due))
            }
            c.directions[k] = d
        }
        if c.directions.contains(where: { $0.ended && $0.forwarded == $0.received }) {
            connections[id] = nil
            return actions + [.close(id, .ended, reset: false)]
        }
        connections[id] = c
        return actions
    }

    private mutating func count(_ bytes: Int, _ direction: Int) {
        if direction == 0 { statistics.bytesUpstream += bytes } else { statistics.bytesDownstream += bytes }
    }

    private struct Piece: Sendable {
        /// The offset one past the piece's last byte, in its direction's stream.
        var end: Int
        /// When it may pass.
        var at: UInt64
    }

    private struct DirectionState: Sendable {
        var rng: FaultRandom
        var received = 0
        var forwarded = 0
        /// Received bytes waiting, in order, each piece with its release time (non-decreasing).
        var pieces: [Piece] = []
        var segmentEnd = 0
        var segmentDelay: UInt64 = 0
        var stallUntil: UInt64 = 0
        var lastRelease: UInt64 = 0
        var ended = false

        init(rng: FaultRandom) { self.rng = rng }
    }

    private enum Phase: Sendable {
        /// Accepted during a blackhole partition: not connected through yet.
        case held
        case connecting
        case open
    }

    private struct Connection: Sendable {
        var phase: Phase
        var directions: [DirectionState]
        /// Bytes passed, both directions.
        var passed = 0
        var cutAt: Int?
        var resetOnCut = false
    }
}
