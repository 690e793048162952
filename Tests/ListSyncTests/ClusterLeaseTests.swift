import Foundation
import Testing
import ListCRDT
import ListSync

/// The trim lease as a machine (no NATS): who may take it when, and that the holder stops
/// trusting it before anyone else may take it.
struct ClusterLeaseTests {
    let second: UInt64 = 1_000_000_000

    @Test func aFreeLeaseIsTakenAndRenewedEveryThirdOfItsDuration() {
        var a = ClusterLease(node: "a", duration: 9 * second)
        #expect(a.decide(entry: nil, now: 0) == .take(revision: 0))
        a.won(revision: 5, sentAt: 0)
        #expect(a.isHeld(now: 1 * second))
        #expect(a.decide(entry: .init(holder: "a", revision: 5), now: 2 * second) == .keep)
        #expect(a.decide(entry: .init(holder: "a", revision: 5), now: 3 * second) == .renew(revision: 5))
        // Not renewed: trusted for three quarters of the duration only.
        #expect(a.isHeld(now: 6 * second) && !a.isHeld(now: 7 * second))
        // Released by its holder: free at once.
        var b = ClusterLease(node: "b", duration: 9 * second)
        #expect(b.decide(entry: .init(holder: "", revision: 8), now: 0) == .take(revision: 8))
    }

    @Test func anotherNodesLeaseIsTakenOnlyAfterItsRevisionStoodStillForTheWholeDuration() {
        var b = ClusterLease(node: "b", duration: 9 * second)
        let held = ClusterLease.Entry(holder: "a", revision: 5)
        #expect(b.decide(entry: held, now: 100 * second) == .wait)
        #expect(b.decide(entry: held, now: 108 * second) == .wait)
        // Renewed by its holder: the wait starts again from the new revision.
        let renewed = ClusterLease.Entry(holder: "a", revision: 9)
        #expect(b.decide(entry: renewed, now: 110 * second) == .wait)
        #expect(b.decide(entry: renewed, now: 118 * second) == .wait)
        #expect(b.decide(entry: renewed, now: 119 * second) == .take(revision: 9))
        #expect(!b.isHeld(now: 119 * second))
        // A clock read before the first sighting (another task stamped it meanwhile) counts as
        // no time at all, not as a wrapped-around eternity.
        var c = ClusterLease(node: "c", duration: 9 * second)
        #expect(c.decide(entry: held, now: 200 * second) == .wait)
        #expect(c.decide(entry: held, now: 199 * second) == .wait)
        #expect(ClusterLease.elapsed(since: 10, 5) == 0 && ClusterLease.elapsed(since: 5, 10) == 5)
        // A take that loses the compare-and-set is not a lease.
        b.lost()
        #expect(!b.isHeld(now: 119 * second))
    }

    @Test func theHolderStopsTrustingItsLeaseBeforeAnyoneMayTakeIt() {
        // A renewal sent at t is stored later; another node reads it later still. Whatever the
        // delays, the holder's trust ends (t + 3/4 d) before the other's take (read + d).
        let d = 8 * second
        for delay in [UInt64(0), second / 2, 3 * second] {
            var a = ClusterLease(node: "a", duration: d)
            var b = ClusterLease(node: "b", duration: d)
            let t: UInt64 = 50 * second
            a.won(revision: 3, sentAt: t)
            let entry = ClusterLease.Entry(holder: "a", revision: 3)
            #expect(b.decide(entry: entry, now: t + delay) == .wait)
            var firstTake: UInt64 = t + delay
            while b.decide(entry: entry, now: firstTake) != .take(revision: 3) { firstTake += second / 10 }
            var lastTrusted = t
            while a.isHeld(now: lastTrusted + second / 10) { lastTrusted += second / 10 }
            #expect(lastTrusted < firstTake, "delay \(delay): trusted to \(lastTrusted), taken at \(firstTake)")
        }
    }

    @Test func aRestartedNodeTakesBackItsOwnLeaseAtOnce() {
        // One daemon per data folder: the entry's holder with this node's name is a dead process.
        var a = ClusterLease(node: "a", duration: 9 * second)
        #expect(a.decide(entry: .init(holder: "a", revision: 12), now: 0) == .take(revision: 12))
    }
}
