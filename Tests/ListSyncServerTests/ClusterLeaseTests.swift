import Foundation
import Testing
import ListCRDT
@testable import ListSyncServer

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

    @Test func checkpointsRoundTripAndRefuseGarbage() throws {
        let folder = NSTemporaryDirectory() + "cp-\(UInt64.random(in: 1...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = ClusterCheckpoints(dataFolder: folder, fileSystem: .system)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let id = DocumentID(high: 7, low: 9)
        #expect(store.read(id) == nil)
        let v = VersionVector([ReplicaID(0xabc): 17, ReplicaID(UInt64.max): 3])
        try store.write(id, ClusterCheckpoint(sequence: 42, version: v))
        #expect(store.read(id)?.sequence == 42 && store.read(id)?.versionVector == v)
        _ = FileManager.default.createFile(atPath: folder + "/cluster/" + id.description, contents: Data(#"{"sequence":1,"version":{"zz":1}}"#.utf8))
        #expect(store.read(id) == nil)
    }

    @Test func aSnapshotHeadIsRefusedUnlessTaggedWithTheClusterKey() throws {
        let key = ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 3, count: 32))
        let id = DocumentID(high: 1, low: 2)
        let head = ClusterSnapshots.Head(generation: 2, sequence: 99, chunks: 1, sha256: "00", version: ["a": 4])
        let sealed = ClusterSnapshots.sealHead(head, document: id, key: key)
        #expect(try ClusterSnapshots.openHead(sealed, document: id, key: key) == head)
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(sealed, document: DocumentID(high: 1, low: 3), key: key) }
        var flipped = sealed
        flipped[flipped.count - 3] ^= 1
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(flipped, document: id, key: key) }
        let other = ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 4, count: 32))
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(sealed, document: id, key: other) }
    }
}
