import ListSync
import ListSyncRandom
import Testing

/// ``ReconnectMachine``: the device client's connection policy (SyncClient's, and each simulated
/// client's), without a socket or a clock: which address it dials, when it waits and how long,
/// going back, giving up (Docs/Client.md, "Reconnecting").
@Suite("Device: reconnecting (ReconnectMachine)")
struct ReconnectMachineTests {
    /// Every jitter at its least: each wait is half the backoff's `d` exactly.
    struct Least: RandomNumberGenerator {
        mutating func next() -> UInt64 { 0 }
    }

    static let ms: UInt64 = 1_000_000
    static let backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(800))

    static func machine(_ addresses: [String] = ["a", "b", "c"]) -> ReconnectMachine {
        ReconnectMachine(addresses: addresses, backoff: backoff)
    }

    @Test("the first dial is to the first address, at once; starting again does nothing")
    func firstDial() {
        var m = Self.machine()
        #expect(m.start() == .dial(0))
        #expect(m.state == .dialling(0))
        #expect(m.start() == nil)
        #expect(m.state == .dialling(0))
    }

    @Test("a failed dial tries the next address at once, in order, until every one of the round failed; then it waits and goes on in order")
    func rotationOrder() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == .dial(1))
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == .dial(2))
        // The round is over: a wait, then the next address (the first again).
        #expect(m.dialFailed(.unreachable, now: 5 * Self.ms, using: &rng) == .wait(until: 55 * Self.ms))
        #expect(m.state == .waiting(until: 55 * Self.ms, next: 0))
        #expect(m.timerFired(now: 55 * Self.ms) == .dial(0))
        #expect(m.dialFailed(.unreachable, now: 60 * Self.ms, using: &rng) == .dial(1))
    }

    @Test("a refused handshake (a wrong key) moves on as an unreachable address does: the machine does not give up")
    func refusedHandshakeMovesOn() {
        var m = Self.machine(["a", "b"])
        var rng = Least()
        _ = m.start()
        #expect(m.dialFailed(.refused, now: 0, using: &rng) == .dial(1))
        #expect(m.dialFailed(.refused, now: 0, using: &rng) == .wait(until: 50 * Self.ms))
        #expect(m.isRunning)
    }

    @Test("a connection that ends moves to the next address, after the backoff's first wait")
    func endedConnectionWaitsThenNext() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        #expect(m.state == .connected(0))
        #expect(m.lost(.closed, now: 10 * Self.ms, using: &rng) == .wait(until: 60 * Self.ms))
        #expect(m.timerFired(now: 60 * Self.ms) == .dial(1))
    }

    @Test("a single address: every dial is to it, and every one after a failure waits")
    func singleAddress() {
        var m = Self.machine(["a"])
        var rng = Least()
        _ = m.start()
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == .wait(until: 50 * Self.ms))
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(0))
        m.connected()
        #expect(m.lost(.closed, now: 100 * Self.ms, using: &rng) == .wait(until: 150 * Self.ms))
        #expect(m.timerFired(now: 150 * Self.ms) == .dial(0))
    }

    @Test("each wait since the last connection doubles the one before, up to the maximum")
    func backoffGrowsToItsCap() {
        var m = Self.machine(["a"])
        var rng = Least()
        _ = m.start()
        var waits: [UInt64] = []
        var now: UInt64 = 0
        for _ in 0..<6 {
            guard case let .wait(until)? = m.dialFailed(.unreachable, now: now, using: &rng) else {
                Issue.record("no wait")
                return
            }
            waits.append((until - now) / Self.ms)
            now = until
            #expect(m.timerFired(now: now) == .dial(0))
        }
        // Half of 100, 200, 400, 800, then 800 (the cap): the least jitter.
        #expect(waits == [50, 100, 200, 400, 400, 400])
        #expect(m.attempt == 6)
    }

    @Test("every wait lies between half the backoff's delay and all of it, drawn from the generator handed in")
    func jitterWithinBounds() {
        var rng = SplitMix64(seed: 46)
        for _ in 0..<200 {
            var m = Self.machine(["a"])
            _ = m.start()
            var now: UInt64 = 0
            for attempt in 0..<5 {
                guard case let .wait(until)? = m.dialFailed(.unreachable, now: now, using: &rng) else {
                    Issue.record("no wait")
                    return
                }
                let d = min(100 << attempt, 800) * Self.ms
                #expect(until - now >= d / 2 && until - now <= d)
                now = until
                _ = m.timerFired(now: now)
            }
        }
        // The same seed, the same waits.
        var a = SplitMix64(seed: 7), b = SplitMix64(seed: 7)
        var m1 = Self.machine(["a"]), m2 = Self.machine(["a"])
        _ = m1.start()
        _ = m2.start()
        #expect(m1.dialFailed(.unreachable, now: 0, using: &a) == m2.dialFailed(.unreachable, now: 0, using: &b))
    }

    @Test("a connection resets the backoff to its first wait and starts a new round")
    func connectionResetsBackoff() {
        var m = Self.machine(["a", "b"])
        var rng = Least()
        _ = m.start()
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)                 // b at once
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)                 // wait 50
        _ = m.timerFired(now: 50 * Self.ms)                                 // a
        _ = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)      // b at once
        #expect(m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng) == .wait(until: 150 * Self.ms))
        #expect(m.attempt == 2)
        _ = m.timerFired(now: 150 * Self.ms)
        m.connected()
        #expect(m.attempt == 0 && m.failed == 0)
        // Lost: the first wait again, then b; b fails: a at once (a new round).
        #expect(m.lost(.closed, now: 200 * Self.ms, using: &rng) == .wait(until: 250 * Self.ms))
        #expect(m.timerFired(now: 250 * Self.ms) == .dial(1))
        #expect(m.dialFailed(.unreachable, now: 250 * Self.ms, using: &rng) == .dial(0))
    }

    @Test("going back: once the connection ends, the daemon that may hold refused edits comes next, after a wait, whatever the round")
    func goBackAfterTheConnection() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        #expect(m.settle(at: "c"))
        #expect(m.goBack == 2)
        #expect(m.lost(.closed, now: 0, using: &rng) == .wait(until: 50 * Self.ms))
        #expect(m.goBack == nil)
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(2))
        m.connected()
        // Once there, the rotation goes on from it.
        #expect(m.lost(.closed, now: 60 * Self.ms, using: &rng) == .wait(until: 110 * Self.ms))
        #expect(m.timerFired(now: 110 * Self.ms) == .dial(0))
    }

    @Test("going back to a daemon that cannot be reached: the others are tried in turn, at once, and the round's end waits")
    func goBackUnreachable() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        m.settle(at: "b")
        _ = m.lost(.closed, now: 0, using: &rng)
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(1))
        #expect(m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng) == .dial(2))
        #expect(m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng) == .dial(0))
        #expect(m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng) == .wait(until: 150 * Self.ms))
    }

    @Test("going back, named while a dial fails: that daemon next, after a wait, even with untried addresses left")
    func goBackPreemptsTheRound() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.settle(at: "c")
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == .wait(until: 50 * Self.ms))
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(2))
    }

    @Test("going back to an address the device does not know is ignored: the rotation goes on")
    func goBackUnknownIgnored() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        #expect(!m.settle(at: "z"))
        #expect(m.goBack == nil)
        _ = m.lost(.closed, now: 0, using: &rng)
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(1))
    }

    @Test("the daemon ending the device's access gives up: connecting again cannot help")
    func accessEndedGivesUp() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        #expect(m.lost(.accessEnded, now: 0, using: &rng) == .giveUp(.accessEnded))
        #expect(m.state == .gaveUp(.accessEnded))
        #expect(!m.isRunning)
        #expect(m.timerFired(now: 0) == nil)
    }

    @Test("no address: gives up at the start")
    func noAddressGivesUp() {
        var m = Self.machine([])
        #expect(m.start() == .giveUp(.noAddress))
        #expect(!m.isRunning)
    }

    @Test("a wait cut short (the app asks to reconnect now) dials at once")
    func reconnectNowDials() {
        var m = Self.machine(["a"])
        var rng = Least()
        _ = m.start()
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(m.wakeAt == 50 * Self.ms)
        #expect(m.timerFired(now: 1 * Self.ms) == .dial(0))
        #expect(m.wakeAt == nil)
    }

    @Test("an event that does not fit the state changes nothing")
    func misfitEventsChangeNothing() {
        var m = Self.machine()
        var rng = Least()
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == nil)
        #expect(m.lost(.closed, now: 0, using: &rng) == nil)
        #expect(m.timerFired(now: 0) == nil)
        m.connected()
        #expect(m.state == .idle)
        _ = m.start()
        #expect(m.lost(.closed, now: 0, using: &rng) == nil)     // dialling, not connected
        m.connected()
        #expect(m.dialFailed(.unreachable, now: 0, using: &rng) == nil)   // connected, not dialling
        #expect(m.state == .connected(0) && m.failed == 0)
        m.close()
        #expect(m.state == .closed && m.timerFired(now: 0) == nil)
    }

    @Test("the operator takes an address out: a wait for it dials the first left, a go-back to it is dropped")
    func configureDropsAnAddress() {
        var m = Self.machine()
        var rng = Least()
        _ = m.start()
        m.connected()
        m.settle(at: "c")
        #expect(m.lost(.closed, now: 0, using: &rng) == .wait(until: 50 * Self.ms))
        #expect(m.state == .waiting(until: 50 * Self.ms, next: 2))
        m.configure(["a", "b"])
        #expect(m.state == .waiting(until: 50 * Self.ms, next: 0))
        #expect(m.timerFired(now: 50 * Self.ms) == .dial(0))
        m.connected()
        m.settle(at: "b")
        m.configure(["b"])
        #expect(m.goBack == 0 && m.state == .connected(0))
        m.configure([])
        #expect(m.state == .gaveUp(.noAddress))
    }
}
