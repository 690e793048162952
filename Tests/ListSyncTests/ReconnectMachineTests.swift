import ListSync
import ListSyncRandom
import Testing

/// ``ReconnectMachine``: the device client's connection policy (SyncClient's, and each simulated
/// client's), without a socket or a clock: which address it dials, when it waits and how long,
/// going back, giving up (Docs/Client.md, "Reconnecting").
@Suite("Device: reconnecting (ReconnectMachine)")
struct ReconnectMachineTests {
    /// Every jitter at its least: each wait is half the backoff's `d` exactly. (1, not 0: the
    /// standard library's `Double.random(in:using:)` rejects a 0 and draws again, for ever.)
    struct Least: RandomNumberGenerator {
        mutating func next() -> UInt64 { 1 }
    }

    static let ms: UInt64 = 1_000_000
    static let backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(800))

    static func machine(_ addresses: [String] = ["a", "b", "c"]) -> ReconnectMachine {
        ReconnectMachine(addresses: addresses, backoff: backoff)
    }

    /// A machine that started (dialling its first address), and the least jitter.
    static func started(_ addresses: [String] = ["a", "b", "c"]) -> (ReconnectMachine, Least) {
        var m = machine(addresses)
        _ = m.start()
        return (m, Least())
    }

    @Test("the first dial is to the first address, at once; starting again does nothing")
    func firstDial() {
        var m = Self.machine()
        let r1 = m.start()
        #expect(r1 == .dial(0))
        #expect(m.state == .dialling(0))
        let r2 = m.start()
        #expect(r2 == nil)
        #expect(m.state == .dialling(0))
    }

    @Test("a failed dial tries the next address at once, in order, until every one of the round failed; then it waits and goes on in order")
    func rotationOrder() {
        var (m, rng) = Self.started()
        let r3 = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(r3 == .dial(1))
        let r4 = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(r4 == .dial(2))
        // The round is over: a wait, then the next address (the first again).
        let r5 = m.dialFailed(.unreachable, now: 5 * Self.ms, using: &rng)
        #expect(r5 == .wait(until: 55 * Self.ms))
        #expect(m.state == .waiting(until: 55 * Self.ms, next: 0))
        let r6 = m.timerFired(now: 55 * Self.ms)
        #expect(r6 == .dial(0))
        let r7 = m.dialFailed(.unreachable, now: 60 * Self.ms, using: &rng)
        #expect(r7 == .dial(1))
    }

    @Test("a refused handshake (a wrong key) moves on as an unreachable address does: the machine does not give up")
    func refusedHandshakeMovesOn() {
        var (m, rng) = Self.started(["a", "b"])
        let r8 = m.dialFailed(.refused, now: 0, using: &rng)
        #expect(r8 == .dial(1))
        let r9 = m.dialFailed(.refused, now: 0, using: &rng)
        #expect(r9 == .wait(until: 50 * Self.ms))
        #expect(m.isRunning)
    }

    @Test("a connection that ends moves to the next address, after the backoff's first wait")
    func endedConnectionWaitsThenNext() {
        var (m, rng) = Self.started()
        m.connected()
        #expect(m.state == .connected(0))
        let r10 = m.lost(.closed, now: 10 * Self.ms, using: &rng)
        #expect(r10 == .wait(until: 60 * Self.ms))
        let r11 = m.timerFired(now: 60 * Self.ms)
        #expect(r11 == .dial(1))
    }

    @Test("a single address: every dial is to it, and every one after a failure waits")
    func singleAddress() {
        var (m, rng) = Self.started(["a"])
        let r12 = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(r12 == .wait(until: 50 * Self.ms))
        let r13 = m.timerFired(now: 50 * Self.ms)
        #expect(r13 == .dial(0))
        m.connected()
        let r14 = m.lost(.closed, now: 100 * Self.ms, using: &rng)
        #expect(r14 == .wait(until: 150 * Self.ms))
        let r15 = m.timerFired(now: 150 * Self.ms)
        #expect(r15 == .dial(0))
    }

    @Test("each wait since the last connection doubles the one before, up to the maximum")
    func backoffGrowsToItsCap() {
        var (m, rng) = Self.started(["a"])
        var waits: [UInt64] = []
        var now: UInt64 = 0
        for _ in 0..<6 {
            guard case let .wait(until)? = m.dialFailed(.unreachable, now: now, using: &rng) else {
                Issue.record("no wait")
                return
            }
            waits.append((until - now) / Self.ms)
            now = until
            let r16 = m.timerFired(now: now)
            #expect(r16 == .dial(0))
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
        let first = m1.dialFailed(.unreachable, now: 0, using: &a), second = m2.dialFailed(.unreachable, now: 0, using: &b)
        #expect(first == second)
    }

    @Test("a connection resets the backoff to its first wait and starts a new round")
    func connectionResetsBackoff() {
        var (m, rng) = Self.started(["a", "b"])
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)                 // b at once
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)                 // wait 50
        _ = m.timerFired(now: 50 * Self.ms)                                 // a
        _ = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)      // b at once
        let r17 = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)
        #expect(r17 == .wait(until: 150 * Self.ms))
        #expect(m.attempt == 2)
        _ = m.timerFired(now: 150 * Self.ms)
        m.connected()
        #expect(m.attempt == 0 && m.failed == 0)
        // Lost: the first wait again, then b; b fails: a at once (a new round).
        let r18 = m.lost(.closed, now: 200 * Self.ms, using: &rng)
        #expect(r18 == .wait(until: 250 * Self.ms))
        let r19 = m.timerFired(now: 250 * Self.ms)
        #expect(r19 == .dial(1))
        let r20 = m.dialFailed(.unreachable, now: 250 * Self.ms, using: &rng)
        #expect(r20 == .dial(0))
    }

    @Test("going back: once the connection ends, the daemon that may hold refused edits comes next, after a wait, whatever the round")
    func goBackAfterTheConnection() {
        var (m, rng) = Self.started()
        m.connected()
        let r21 = m.settle(at: "c")
        #expect(r21)
        #expect(m.goBack == 2)
        let r22 = m.lost(.closed, now: 0, using: &rng)
        #expect(r22 == .wait(until: 50 * Self.ms))
        #expect(m.goBack == nil)
        let r23 = m.timerFired(now: 50 * Self.ms)
        #expect(r23 == .dial(2))
        m.connected()
        // Once there, the rotation goes on from it.
        let r24 = m.lost(.closed, now: 60 * Self.ms, using: &rng)
        #expect(r24 == .wait(until: 110 * Self.ms))
        let r25 = m.timerFired(now: 110 * Self.ms)
        #expect(r25 == .dial(0))
    }

    @Test("going back to a daemon that cannot be reached: the others are tried in turn, at once, and the round's end waits")
    func goBackUnreachable() {
        var (m, rng) = Self.started()
        m.connected()
        m.settle(at: "b")
        _ = m.lost(.closed, now: 0, using: &rng)
        let r26 = m.timerFired(now: 50 * Self.ms)
        #expect(r26 == .dial(1))
        let r27 = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)
        #expect(r27 == .dial(2))
        let r28 = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)
        #expect(r28 == .dial(0))
        let r29 = m.dialFailed(.unreachable, now: 50 * Self.ms, using: &rng)
        #expect(r29 == .wait(until: 150 * Self.ms))
    }

    @Test("going back, named while a dial fails: that daemon next, after a wait, even with untried addresses left")
    func goBackPreemptsTheRound() {
        var (m, rng) = Self.started()
        m.settle(at: "c")
        let r30 = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(r30 == .wait(until: 50 * Self.ms))
        let r31 = m.timerFired(now: 50 * Self.ms)
        #expect(r31 == .dial(2))
    }

    @Test("going back to an address the device does not know is ignored: the rotation goes on")
    func goBackUnknownIgnored() {
        var (m, rng) = Self.started()
        m.connected()
        let r32 = m.settle(at: "z")
        #expect(!r32)
        #expect(m.goBack == nil)
        _ = m.lost(.closed, now: 0, using: &rng)
        let r33 = m.timerFired(now: 50 * Self.ms)
        #expect(r33 == .dial(1))
    }

    @Test("the daemon ending the device's access gives up: connecting again cannot help")
    func accessEndedGivesUp() {
        var (m, rng) = Self.started()
        m.connected()
        let r34 = m.lost(.accessEnded, now: 0, using: &rng)
        #expect(r34 == .giveUp(.accessEnded))
        #expect(m.state == .gaveUp(.accessEnded))
        #expect(!m.isRunning)
        let r35 = m.timerFired(now: 0)
        #expect(r35 == nil)
    }

    @Test("no address: gives up at the start")
    func noAddressGivesUp() {
        var m = Self.machine([])
        let r36 = m.start()
        #expect(r36 == .giveUp(.noAddress))
        #expect(!m.isRunning)
    }

    @Test("a wait cut short (the app asks to reconnect now) dials at once")
    func reconnectNowDials() {
        var (m, rng) = Self.started(["a"])
        _ = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(m.wakeAt == 50 * Self.ms)
        let r37 = m.timerFired(now: 1 * Self.ms)
        #expect(r37 == .dial(0))
        #expect(m.wakeAt == nil)
    }

    @Test("an event that does not fit the state changes nothing")
    func misfitEventsChangeNothing() {
        var m = Self.machine()
        var rng = Least()
        let r38 = m.dialFailed(.unreachable, now: 0, using: &rng)
        #expect(r38 == nil)
        let r39 = m.lost(.closed, now: 0, using: &rng)
        #expect(r39 == nil)
        let r40 = m.timerFired(now: 0)
        #expect(r40 == nil)
        m.connected()
        #expect(m.state == .idle)
        _ = m.start()
        let notConnected = m.lost(.closed, now: 0, using: &rng)     // dialling, not connected
        #expect(notConnected == nil)
        m.connected()
        let notDialling = m.dialFailed(.unreachable, now: 0, using: &rng)   // connected, not dialling
        #expect(notDialling == nil)
        #expect(m.state == .connected(0) && m.failed == 0)
        m.close()
        let closed = m.timerFired(now: 0)
        #expect(m.state == .closed && closed == nil)
    }

    @Test("the operator takes an address out: a wait for it dials the first left, a go-back to it is dropped")
    func configureDropsAnAddress() {
        var (m, rng) = Self.started()
        m.connected()
        m.settle(at: "c")
        let r41 = m.lost(.closed, now: 0, using: &rng)
        #expect(r41 == .wait(until: 50 * Self.ms))
        #expect(m.state == .waiting(until: 50 * Self.ms, next: 2))
        m.configure(["a", "b"])
        #expect(m.state == .waiting(until: 50 * Self.ms, next: 0))
        let r42 = m.timerFired(now: 50 * Self.ms)
        #expect(r42 == .dial(0))
        m.connected()
        m.settle(at: "b")
        m.configure(["b"])
        #expect(m.goBack == 0 && m.state == .connected(0))
        m.configure([])
        #expect(m.state == .gaveUp(.noAddress))
    }
}
