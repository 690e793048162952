import Foundation
import ListCRDT
import Testing
@_spi(Testing) import ListSync

/// The cluster's state machine alone (no NATS, no simulator): each decision as events in and
/// actions out.
struct ClusterMachineTests {
    static let ms: UInt64 = 1_000_000

    static func ops(_ n: Int, replica: UInt64 = 7) -> [ListOperation] {
        var doc = ListDocument(replica: ReplicaID(replica))
        var out: [ListOperation] = []
        for i in 0..<n {
            if let op = try? doc.insertSection(at: i, value: Data()) { out.append(op) }
        }
        return out
    }

    static func configuration(trimMessages: Int = 3) -> ClusterMachine.Configuration {
        var c = ClusterMachine.Configuration()
        c.trimMessages = trimMessages
        c.leaseDuration = 90 * ms
        c.interestGrace = 50 * ms
        return c
    }

    /// A machine that follows from sequence 1 (snapshot checked, subject empty, consumer started).
    static func following(_ m: inout ClusterMachine) {
        #expect(m.handle(.interest(now: 0)) == [.checkSnapshot])
        #expect(m.handle(.snapshotChecked(nil, documentVersion: VersionVector())) == [.readSubjectEnd])
        #expect(m.handle(.subjectEnded(at: 0)) == [.republish(since: VersionVector()), .startConsumer(from: 1)])
        #expect(m.handle(.missing([])) == [])
        #expect(m.handle(.following) == [])
        #expect(m.isFollowing)
    }

    /// Follows, reads one message, takes the free lease at time 0 and prepares the snapshot
    /// (no head in force); returns the actions of the preparation's answer.
    static func preparedWithTheLease(_ m: inout ClusterMachine) -> [ClusterMachine.Action] {
        following(&m)
        let op = ops(1, replica: 9)[0]
        _ = m.handle(.message(sequence: 1, operations: [op]))
        _ = m.handle(.tick(now: 0, durable: m.read.version, subscribed: true))
        _ = m.handle(.leaseRead(nil, now: 0))
        _ = m.handle(.leaseWritten(revision: 1, sentAt: 0, now: 0))
        return m.handle(.snapshotPrepared(head: nil, revision: 0, durable: m.read.version, now: 0))
    }

    @Test("a client's batch is released only once the stream acknowledged it; a duplicated acknowledgement changes nothing")
    func releasedOnlyAfterTheStream() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        let batch = Self.ops(1)
        #expect(m.handle(.appended(ticket: 1, batch)) == [.publish(piece: 1, operations: batch, delay: 0)])
        #expect(m.handle(.published(piece: 1)) == [.release(ticket: 1)])
        #expect(m.handle(.published(piece: 1)) == [])
        #expect(m.counts.duplicateAcknowledgements == 1)
    }

    @Test("pieces are published one at a time in order, a failed one retried first with a growing delay")
    func inOrderWithRetries() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        let all = Self.ops(2)
        #expect(m.handle(.appended(ticket: 1, [all[0]])).count == 1)
        #expect(m.handle(.appended(ticket: 2, [all[1]])) == [])
        #expect(m.handle(.publishFailed(piece: 1)) == [.publish(piece: 1, operations: [all[0]], delay: m.configuration.retryFirst)])
        #expect(m.handle(.published(piece: 1)) == [.release(ticket: 1), .publish(piece: 2, operations: [all[1]], delay: 0)])
    }

    @Test("a stopping node refuses the batches the stream has not acknowledged")
    func stopRefuses() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        _ = m.handle(.appended(ticket: 4, Self.ops(1)))
        #expect(m.handle(.stopping(durable: VersionVector())) == [.refuse(ticket: 4)])
    }

    @Test("a message redelivered at or below the position is not applied again")
    func redeliveryIgnored() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        Self.following(&m)
        let batch = Self.ops(1, replica: 9)
        #expect(m.handle(.message(sequence: 1, operations: batch)) == [.apply(batch)])
        #expect(m.handle(.message(sequence: 1, operations: batch)) == [])
        #expect(m.counts.duplicateMessages == 1)
    }

    @Test("the subject is trimmed only after the snapshot's head is acknowledged, and only below what it covers")
    func trimAfterSnapshotAcknowledged() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        Self.following(&m)
        let batch = Self.ops(3, replica: 9)
        var version = VersionVector()
        for (i, op) in batch.enumerated() {
            _ = m.handle(.message(sequence: UInt64(i + 1), operations: [op]))
            version.observe(op.lastID)
        }
        #expect(m.handle(.tick(now: 10 * Self.ms, durable: version, subscribed: true)) == [.writeCheckpoint(m.read), .readLease])
        #expect(m.handle(.leaseRead(nil, now: 11 * Self.ms)) == [.writeLease(revision: 0, sentAt: 11 * Self.ms, taking: true)])
        let position = ClusterMachine.Position(sequence: 3, version: version)
        #expect(m.handle(.leaseWritten(revision: 5, sentAt: 11 * Self.ms, now: 12 * Self.ms)) == [.prepareSnapshot(position)])
        #expect(m.handle(.snapshotPrepared(head: nil, revision: 0, durable: version, now: 12 * Self.ms)) == [.writeSnapshot(position, after: 0)])
        #expect(m.handle(.snapshotStored(sequence: 3, now: 13 * Self.ms)) == [.trim(keepFrom: 4)])
    }

    @Test("a lease that lapsed while the snapshot was stored trims nothing")
    func noTrimWithoutTheLease() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration(trimMessages: 1))
        _ = Self.preparedWithTheLease(&m)
        #expect(m.handle(.snapshotStored(sequence: 1, now: 80 * Self.ms)) == [])
        #expect(m.counts.trimsSkipped == 1)
    }

    @Test("the broken variant trims as it asks for the snapshot (what the simulator must catch)")
    func brokenVariantTrimsEarly() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration(trimMessages: 1))
        m.variant = .trimsBeforeSnapshotAcknowledged
        #expect(Self.preparedWithTheLease(&m).contains(.trim(keepFrom: 2)))
    }

    /// Found by `listsync simulate --cluster 3` (seeds 2–5): a batch appended after a restart was
    /// published before the republish of the batches the killed node had never published; the
    /// stream's version then claimed those, and they were never published (copies stuck with
    /// operations waiting for them).
    @Test("after a restart, new batches wait until the batches never published are republished ahead of them")
    func batchAfterRestartWaitsForTheRepublish() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        let mine = Self.ops(3)
        #expect(m.handle(.started(mayHoldUnpublished: true, now: 0)) == [.checkSnapshot])
        #expect(m.handle(.appended(ticket: 1, [mine[2]])) == [])
        #expect(m.handle(.snapshotChecked(nil, documentVersion: VersionVector())) == [.readSubjectEnd])
        #expect(m.handle(.subjectEnded(at: 1)) == [.startConsumer(from: 1)])
        _ = m.handle(.following)
        #expect(m.handle(.message(sequence: 1, operations: [mine[0]])) == [.apply([mine[0]]), .republish(since: m.read.version)])
        #expect(m.handle(.missing([mine[1], mine[2]])) == [.publish(piece: 2, operations: [mine[1], mine[2]], delay: 0)])
        #expect(m.handle(.published(piece: 2)) == [.publish(piece: 1, operations: [mine[2]], delay: 0)])
    }

    @Test("a snapshot over a head this copy has not caught up with is not written; the head is checked first")
    func outdatedSnapshotChecksTheHead() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration(trimMessages: 1))
        Self.following(&m)
        let op = Self.ops(1, replica: 9)[0]
        let theirs = Self.ops(1, replica: 11)[0]
        _ = m.handle(.message(sequence: 5, operations: [op]))
        _ = m.handle(.tick(now: 0, durable: m.read.version, subscribed: true))
        _ = m.handle(.leaseRead(nil, now: 0))
        #expect(m.handle(.leaseWritten(revision: 1, sentAt: 0, now: 0)) == [.prepareSnapshot(m.read)])
        // The head in force covers sequence 3 and an operation this copy never read (a trim overtook it).
        let head = ClusterMachine.Position(sequence: 3, version: VersionVector([theirs.id.replica: theirs.lastID.counter]))
        #expect(m.handle(.snapshotPrepared(head: head, revision: 4, durable: m.read.version, now: 0)) == [.checkSnapshot])
        #expect(m.handle(.snapshotStored(sequence: 5, now: 0)) == [])
    }

    @Test("a node nobody reads here stops following after the grace, and gives its lease back")
    func interestEnds() {
        var m = ClusterMachine(node: "a", configuration: Self.configuration())
        Self.following(&m)
        #expect(m.handle(.tick(now: 10 * Self.ms, durable: VersionVector(), subscribed: false)) == [])
        #expect(m.handle(.tick(now: 60 * Self.ms, durable: VersionVector(), subscribed: false)) == [.stopConsumer])
        #expect(!m.isFollowing)
    }
}
