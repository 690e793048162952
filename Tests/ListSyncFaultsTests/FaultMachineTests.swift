import ListSyncFaults
import Testing

/// Feeds a machine and records, for every byte of each direction, when it was forwarded; and how
/// each connection closed.
struct Harness {
    typealias ID = FaultMachine.ConnectionID
    var machine: FaultMachine
    /// Per connection and direction: the release time of each forwarded byte, in order.
    var releases: [ID: [[UInt64]]] = [:]
    var closes: [ID: (FaultMachine.CloseReason, Bool)] = [:]
    var connects: [ID] = []
    var now: UInt64 = 0

    init(_ plan: FaultPlan) { machine = FaultMachine(plan: plan) }

    mutating func apply(_ actions: [FaultMachine.Action]) {
        for a in actions {
            switch a {
            case let .connect(id): connects.append(id)
            case let .forward(id, d, n):
                #expect(closes[id] == nil, "bytes forwarded after the close of \(id)")
                releases[id, default: [[], []]][d.rawValue] += Array(repeating: now, count: n)
            case let .close(id, reason, reset):
                #expect(closes[id] == nil, "\(id) closed twice")
                closes[id] = (reason, reset)
            }
        }
    }

    /// Accepts a connection and, if the machine says so, completes its connect.
    mutating func open() -> ID {
        let (id, actions) = machine.accept(now: now)
        apply(actions)
        if actions.contains(.connect(id)) { apply(machine.connected(id, now: now)) }
        return id
    }

    mutating func send(_ id: ID, _ d: FaultMachine.Direction, _ n: Int) { apply(machine.received(id, d, bytes: n, now: now)) }

    /// Advances time to each deadline until none is left, or `until`.
    mutating func run(until limit: UInt64 = .max) {
        while let next = machine.nextDeadline, next <= limit {
            now = max(now, next)
            apply(machine.advance(now: now))
        }
        now = max(now, limit == .max ? now : limit)
    }

    func forwarded(_ id: ID, _ d: FaultMachine.Direction) -> Int { releases[id]?[d.rawValue].count ?? 0 }
}

let ms: UInt64 = 1_000_000

func faultyPlan(_ seed: UInt64) -> FaultPlan {
    var p = FaultPlan(seed: seed)
    p.delay = .milliseconds(1) ... .milliseconds(30)
    p.segmentBytes = 1 ... 300
    p.stallProbability = 0.1
    p.stall = .milliseconds(100) ... .milliseconds(400)
    p.dropProbability = 0.2
    p.cutProbability = 0.4
    p.cutBytes = 1 ... 5_000
    return p
}

/// A seeded sequence of chunk sizes.
func chunks(_ seed: UInt64, total: Int, max: Int) -> [Int] {
    var rng = FaultRandom(seed: seed, streams: 77)
    var left = total, out: [Int] = []
    while left > 0 {
        let n = min(left, 1 + Int(rng.next() % UInt64(max)))
        out.append(n)
        left -= n
    }
    return out
}

@Suite("Fault machine: seeded faults decided per connection and byte, with no socket")
struct FaultMachineTests {
    @Test("with no faults every byte passes at once, in order, both ways; an end of stream closes after the bytes")
    func passThrough() {
        var h = Harness(FaultPlan(seed: 1))
        let id = h.open()
        #expect(h.connects == [id])
        h.send(id, .upstream, 100)
        h.send(id, .downstream, 5)
        h.now = 7
        h.send(id, .upstream, 1)
        #expect(h.forwarded(id, .upstream) == 101 && h.forwarded(id, .downstream) == 5)
        #expect(h.releases[id]![0].last == 7)
        #expect(h.machine.nextDeadline == nil)
        h.apply(h.machine.ended(id, .downstream, now: h.now))
        #expect(h.closes[id]?.0 == .ended)
        #expect(h.machine.openConnections == 0)
    }

    @Test("bytes received before the target connection is made wait for it, then pass in order")
    func heldUntilConnected() {
        var h = Harness(FaultPlan(seed: 1))
        let (id, actions) = h.machine.accept(now: 0)
        #expect(actions == [.connect(id)])
        h.apply(h.machine.received(id, .upstream, bytes: 40, now: 0))
        #expect(h.forwarded(id, .upstream) == 0)
        #expect(h.machine.held(id, .upstream) == 40)
        h.now = 3
        h.apply(h.machine.connected(id, now: 3))
        #expect(h.forwarded(id, .upstream) == 40)
    }

    @Test("the same seed gives the same faults; another seed other faults", arguments: [1, 2, 3, 4, 5] as [UInt64])
    func seeded(seed: UInt64) {
        func run(_ seed: UInt64) -> ([[UInt64]], [String], FaultStatistics) {
            var h = Harness(faultyPlan(seed))
            var ids: [FaultMachine.ConnectionID] = []
            for _ in 0..<20 { ids.append(h.open()) }
            for (k, n) in chunks(seed, total: 20_000, max: 700).enumerated() {
                let id = ids[k % ids.count]
                h.now += UInt64(k % 3) * ms
                h.send(id, k % 4 == 0 ? .downstream : .upstream, n)
                h.run(until: h.now)
            }
            h.run()
            let times = ids.map { h.releases[$0]?[0] ?? [] }
            let closes = ids.map { h.closes[$0].map { "\($0)" } ?? "open" }
            return (times, closes, h.machine.statistics)
        }
        let a = run(seed), b = run(seed), c = run(seed + 100)
        #expect(a.0 == b.0 && a.1 == b.1 && a.2 == b.2)
        #expect(a.0 != c.0 || a.1 != c.1)
        #expect(a.2.faults > 0)
    }

    @Test("faults fall on the same bytes however the bytes are split into reads", arguments: [11, 12, 13] as [UInt64])
    func splitInvariance(seed: UInt64) {
        // The same stream, arriving at the same times, fed in one piece per instant or in many.
        var arrivals: [(UInt64, Int)] = []
        var t: UInt64 = 0
        for n in chunks(seed, total: 30_000, max: 2_000) {
            t += 3 * ms
            arrivals.append((t, n))
        }
        func run(maxPiece: Int) -> ([UInt64], String) {
            var plan = faultyPlan(seed)
            plan.dropProbability = 0
            plan.cutProbability = 1
            plan.cutBytes = 20_000 ... 25_000
            var h = Harness(plan)
            let id = h.open()
            for (at, n) in arrivals {
                h.run(until: at)
                for piece in chunks(seed &+ at, total: n, max: maxPiece) { h.send(id, .upstream, piece) }
            }
            h.run()
            return (h.releases[id]?[0] ?? [], h.closes[id].map { "\($0.0)" } ?? "open")
        }
        let whole = run(maxPiece: .max / 2), split = run(maxPiece: 37), bytes = run(maxPiece: 1)
        #expect(whole.0.count > 0)
        #expect(whole.0 == split.0 && whole.0 == bytes.0)
        #expect(whole.1 == split.1 && whole.1 == bytes.1)
    }

    @Test("every byte passes in order, no earlier than its delay, never later than its delay plus the stalls")
    func delaysAndStalls() {
        var plan = FaultPlan(seed: 21)
        plan.delay = .milliseconds(5) ... .milliseconds(20)
        plan.segmentBytes = 1 ... 100
        plan.stallProbability = 0.05
        plan.stall = .milliseconds(200) ... .milliseconds(300)
        var h = Harness(plan)
        let id = h.open()
        var arrival: [UInt64] = []
        for k in 0..<500 {
            h.now = UInt64(k) * ms
            h.send(id, .downstream, 10)
            arrival += Array(repeating: h.now, count: 10)
            h.run(until: h.now)
        }
        h.run()
        let released = h.releases[id]![1]
        #expect(released.count == 5_000)
        #expect(released == released.sorted(), "bytes leave in order")
        let stalls = h.machine.statistics.stalls
        #expect(stalls > 0)
        for (r, a) in zip(released, arrival) {
            #expect(r >= a + 5 * ms)
            #expect(r <= a + 20 * ms + UInt64(stalls) * 300 * ms)
        }
        #expect(zip(released, arrival).contains { r, a in r - a >= 200 * ms }, "a stall held bytes past any delay")
    }

    @Test("a cut connection passes exactly its cut point's bytes, counting both directions, then closes")
    func cut() {
        var plan = FaultPlan(seed: 5)
        plan.cutProbability = 1
        plan.cutBytes = 1 ... 3_000
        plan.resetProbability = 1
        for _ in 0..<30 {
            var h = Harness(plan)
            let id = h.open()
            var k = 0
            while h.closes[id] == nil && k < 1_000 {
                h.send(id, k % 2 == 0 ? .upstream : .downstream, 1 + k % 50)
                k += 1
            }
            guard case let .cut(at)? = h.closes[id]?.0 else {
                Issue.record("not cut: \(String(describing: h.closes[id]))")
                continue
            }
            #expect(h.closes[id]?.1 == true, "a reset")
            #expect(h.forwarded(id, .upstream) + h.forwarded(id, .downstream) == at)
            #expect((1...3_000).contains(at))
            plan.seed += 1
        }
    }

    @Test("drops close at accept, before any connect, at about the planned rate")
    func drops() {
        var plan = FaultPlan(seed: 9)
        plan.dropProbability = 0.3
        var h = Harness(plan)
        for _ in 0..<2_000 { _ = h.open() }
        let dropped = h.closes.values.filter { $0.0 == .dropped }.count
        #expect(dropped == h.machine.statistics.dropped)
        #expect((500...700).contains(dropped), "\(dropped) of 2000")
        #expect(h.connects.count == 2_000 - dropped)
        #expect(Set(h.connects).isDisjoint(with: h.closes.keys))
    }

    @Test("partition (reset): open connections closed with a reset, new ones refused; after it, connections pass")
    func partitionReset() {
        var h = Harness(FaultPlan(seed: 3))
        let a = h.open(), b = h.open()
        h.apply(h.machine.partition(now: 0))
        #expect(h.closes[a]! == (.partitioned, true) && h.closes[b]! == (.partitioned, true))
        let c = h.open()
        #expect(h.closes[c]?.0 == .partitioned)
        #expect(!h.connects.contains(c))
        h.apply(h.machine.endPartition(now: 1))
        let d = h.open()
        h.send(d, .upstream, 10)
        #expect(h.forwarded(d, .upstream) == 10)
        #expect(h.machine.statistics.partitions == 1 && h.machine.statistics.closedByPartition == 3)
    }

    @Test("partition (blackhole): nothing passes and nothing closes; at the end everything held passes, in order")
    func partitionBlackhole() {
        var plan = FaultPlan(seed: 3)
        plan.partitionMode = .blackhole
        var h = Harness(plan)
        let a = h.open()
        h.send(a, .upstream, 10)
        h.apply(h.machine.partition(now: 0))
        h.now = 5 * ms
        h.send(a, .upstream, 20)
        h.send(a, .downstream, 7)
        let b = h.open()
        h.send(b, .upstream, 3)
        #expect(h.machine.nextDeadline == nil)
        #expect(h.forwarded(a, .upstream) == 10 && h.forwarded(a, .downstream) == 0)
        #expect(!h.connects.contains(b), "held, not connected through")
        #expect(h.closes.isEmpty)
        h.now = 9 * ms
        let actions = h.machine.endPartition(now: h.now)
        #expect(actions.contains(.connect(b)))
        h.apply(actions)
        h.apply(h.machine.connected(b, now: h.now))
        #expect(h.forwarded(a, .upstream) == 30 && h.forwarded(a, .downstream) == 7 && h.forwarded(b, .upstream) == 3)
        #expect(h.releases[a]![0].suffix(20).allSatisfy { $0 == 9 * ms })
    }

    @Test("heal: held and delayed bytes pass now, pending cuts are cancelled, and no fault happens any more")
    func heal() {
        var plan = faultyPlan(31)
        plan.cutProbability = 1
        plan.cutBytes = 5_000 ... 5_000
        plan.partitionMode = .blackhole
        var h = Harness(plan)
        var id = h.open()
        while h.closes[id] != nil { id = h.open() }   // a connection that was not dropped
        h.send(id, .upstream, 1_000)
        h.apply(h.machine.partition(now: 0))
        h.send(id, .upstream, 1_000)
        h.now = 1 * ms
        h.apply(h.machine.heal(now: h.now))
        #expect(h.forwarded(id, .upstream) == 2_000)
        #expect(h.machine.nextDeadline == nil)
        let before = h.machine.statistics
        h.send(id, .upstream, 10_000)
        #expect(h.forwarded(id, .upstream) == 12_000 && h.closes[id] == nil, "not cut at 5,000: the cut was cancelled")
        for _ in 0..<200 { _ = h.open() }
        let after = h.machine.statistics
        #expect(after.dropped == before.dropped && after.cut == before.cut && after.stalls == before.stalls)
        #expect(h.machine.partition(now: 2).isEmpty == true)
        #expect(h.machine.isPartitioned, "a later partition still works: healing ends faults, not control")
    }

    @Test("connections draw from streams of their own: one connection's traffic does not change another's faults")
    func independentConnections() {
        func cutsOfSecond(trafficOnFirst: Int) -> [UInt64] {
            var h = Harness(faultyPlan(41))
            var a = h.open(), b = h.open()
            while h.closes[a] != nil || h.closes[b] != nil { a = h.open(); b = h.open() }
            if trafficOnFirst > 0 { h.send(a, .upstream, trafficOnFirst) }
            h.send(b, .downstream, 4_000)
            h.run()
            return h.releases[b]?[1] ?? []
        }
        #expect(cutsOfSecond(trafficOnFirst: 0) == cutsOfSecond(trafficOnFirst: 3_333))
    }
}
