import ListCRDT
import ListSyncRandom
@_spi(Testing) import ListSync

/// One cluster node in the simulator: its disk (the document, durable as soon as edited or
/// applied, and its read checkpoint), and while it runs, its ``ClusterMachine`` and consumer.
struct ClusterSimNode {
    let index: Int
    let replica: ReplicaID
    let machineConfiguration: ClusterMachine.Configuration
    let variant: ClusterMachine.Variant
    var document: ListDocument
    var checkpoint: ClusterMachine.Position?
    var machine: ClusterMachine
    var alive = false
    /// Counts each start: answers to an earlier incarnation's requests are dropped.
    var incarnation = 0
    var subscribed: Bool
    /// The consumer's next sequence (nil: none).
    var consumer: UInt64?
    var lastDelivered: SimulatedJetStream.Message?
    /// Client batches appended and not yet released, by ticket.
    var waiting: [UInt64: ListOperation] = [:]
    /// The counts of the incarnations before this one.
    var pastCounts: [ClusterMachine.Counts] = []

    init(index: Int, replica: ReplicaID, machine: ClusterMachine.Configuration, variant: ClusterMachine.Variant) {
        self.index = index
        self.replica = replica
        machineConfiguration = machine
        self.variant = variant
        document = ListDocument(replica: replica)
        subscribed = index % 2 == 0
        self.machine = ClusterMachine(node: "node\(index)", configuration: machine)
    }

    var name: String { "node\(index)" }

    func makeMachine() -> ClusterMachine {
        var m = ClusterMachine(node: name, configuration: machineConfiguration, checkpoint: checkpoint)
        m.variant = variant
        return m
    }

    mutating func absorbCounts() { pastCounts.append(machine.counts) }
}

/// A request in flight to the server or the node's disk, answered at `due`.
struct ClusterSimCompletion {
    enum Kind {
        case publish(piece: UInt64, operations: [ListOperation])
        case duplicateAcknowledgement(piece: UInt64)
        case checkSnapshot, loadSnapshot(ClusterMachine.Position), readSubjectEnd, startConsumer(from: UInt64)
        case readLease, writeLease(revision: UInt64, sentAt: UInt64), releaseLease(revision: UInt64)
        case prepareSnapshot, writeSnapshot(ClusterMachine.Position, after: UInt64, [ListOperation]), trim(keepFrom: UInt64)
        case writeCheckpoint(ClusterMachine.Position), headNotice
    }

    var due: UInt64
    var node: Int
    /// Whether it only keeps a lease (the holder renews it as long as it follows).
    var isLeaseUpkeep: Bool {
        switch kind {
        case .readLease, .writeLease, .releaseLease: return true
        default: return false
        }
    }

    var incarnation: Int
    var kind: Kind
}

extension ClusterSimulator {
    /// Does one action of node `n`'s machine; returns the actions that follow at once (a
    /// republish's batch).
    mutating func perform(_ n: Int, _ action: ClusterMachine.Action) -> [ClusterMachine.Action] {
        switch action {
        case let .publish(piece, ops, delay): schedule(n, .publish(piece: piece, operations: ops), after: delay)
        case let .release(ticket):
            if let op = nodes[n].waiting.removeValue(forKey: ticket) {
                report.acknowledged += 1
                acknowledged.append(op)
            }
        case let .refuse(ticket): nodes[n].waiting[ticket] = nil
        case .checkSnapshot: schedule(n, .checkSnapshot)
        case let .loadSnapshot(head): schedule(n, .loadSnapshot(head))
        case .readSubjectEnd: schedule(n, .readSubjectEnd)
        case let .startConsumer(from): schedule(n, .startConsumer(from: from))
        case let .apply(ops): _ = nodes[n].document.receive(ops)
        case let .republish(since):
            return nodes[n].machine.handle(.missing(nodes[n].document.operations(since: since)))
        case .stopConsumer:
            nodes[n].consumer = nil
            nodes[n].lastDelivered = nil
        case .readLease: schedule(n, .readLease)
        case let .writeLease(revision, sentAt, _): schedule(n, .writeLease(revision: revision, sentAt: sentAt))
        case let .releaseLease(revision): schedule(n, .releaseLease(revision: revision))
        case .prepareSnapshot: schedule(n, .prepareSnapshot)
        case let .writeSnapshot(position, revision):
            schedule(n, .writeSnapshot(position, after: revision, nodes[n].document.operations(since: VersionVector())))
        case let .trim(keepFrom): schedule(n, .trim(keepFrom: keepFrom))
        case let .writeCheckpoint(position): schedule(n, .writeCheckpoint(position))
        }
        return []
    }

    mutating func schedule(_ n: Int, _ kind: ClusterSimCompletion.Kind, after delay: UInt64 = 0) {
        let latency = UInt64(1 + rng.below(15)) * Self.ms
        pending.append(ClusterSimCompletion(due: now + delay + latency, node: n, incarnation: nodes[n].incarnation, kind: kind))
    }

    /// Whether a request to the server is lost before it is done, or its answer after.
    enum Loss { case none, request, answer }

    mutating func loss() -> Loss {
        guard faulty else { return .none }
        let r = rng.below(100)
        if r < configuration.lossPercent / 2 { report.answersLost += 1; return .request }
        if r < configuration.lossPercent { report.answersLost += 1; return .answer }
        return .none
    }

    /// Answers the request due first (the clock moves to it). The server does its part even if
    /// the node died meanwhile; the answer then goes nowhere.
    mutating func completeNext() {
        guard let i = pending.indices.min(by: { pending[$0].due < pending[$1].due }) else { return }
        let c = pending.remove(at: i)
        now = max(now, c.due)
        let n = c.node
        let answer = serve(c)
        guard nodes[n].alive, nodes[n].incarnation == c.incarnation, let answer else { return }
        handle(n, answer)
    }

    /// The server's (or the disk's) side of a request; returns the answer, if one comes.
    mutating func serve(_ c: ClusterSimCompletion) -> ClusterMachine.Event? {
        let n = c.node
        let up = stream.isUp
        switch c.kind {
        case let .publish(piece, ops):
            let lost = loss()
            guard up, lost != .request else { return .publishFailed(piece: piece) }
            _ = stream.publish(messageID: ClusterEnvelopeID.messageID(ops), ops, now: now)
            if lost == .answer { return .publishFailed(piece: piece) }
            if faulty, rng.chance(configuration.duplicatePercent) {
                report.acknowledgementsDuplicated += 1
                schedule(n, .duplicateAcknowledgement(piece: piece))
            }
            return .published(piece: piece)
        case let .duplicateAcknowledgement(piece):
            return nodes[n].incarnation == c.incarnation ? .published(piece: piece) : nil
        case .checkSnapshot:
            guard up, loss() == .none else { return .snapshotUnreadable }
            return .snapshotChecked(stream.snapshot?.value.head, documentVersion: nodes[n].document.version)
        case let .loadSnapshot(head):
            guard up, loss() == .none, let s = stream.snapshot?.value, s.head == head else { return .snapshotUnreadable }
            guard nodes[n].alive, nodes[n].incarnation == c.incarnation else { return nil }
            _ = nodes[n].document.receive(s.operations)
            return .snapshotLoaded(head)
        case .readSubjectEnd:
            guard up, loss() == .none else { return .followFailed }
            return .subjectEnded(at: stream.lastBySubject)
        case let .startConsumer(from):
            guard up, loss() == .none else { return .followFailed }
            guard nodes[n].alive, nodes[n].incarnation == c.incarnation else { return nil }
            nodes[n].consumer = from
            nodes[n].lastDelivered = nil
            return .following
        case .readLease:
            guard up, loss() == .none else { return .leaseFailed }
            return .leaseRead(stream.lease, now: now)
        case let .writeLease(revision, sentAt):
            let lost = loss()
            guard up, lost != .request else { return .leaseFailed }
            let before = stream.lease?.holder ?? ""
            do {
                let stored = try stream.setLease(holder: nodes[n].name, expected: revision)
                if !before.isEmpty && before != nodes[n].name { report.leaseTakes += 1 }
                return lost == .answer ? .leaseFailed : .leaseWritten(revision: stored, sentAt: sentAt, now: now)
            } catch {
                // Another node wrote first: the compare-and-set refused this one.
                return .leaseFailed
            }
        case let .releaseLease(revision):
            guard up, loss() == .none else { return nil }
            do { _ = try stream.setLease(holder: "", expected: revision) } catch {
                // Taken meanwhile by another node: nothing to give back (the driver logs it).
            }
            return nil
        case .prepareSnapshot:
            guard up, loss() == .none else { return .snapshotFailed }
            return .snapshotPrepared(head: stream.snapshot?.value.head, revision: stream.snapshot?.revision ?? 0,
                                     durable: nodes[n].document.version, now: now)
        case let .writeSnapshot(position, revision, ops):
            let lost = loss()
            guard up, lost != .request else { return .snapshotFailed }
            let generation = (stream.snapshot?.value.generation ?? 0) + 1
            do { _ = try stream.setSnapshot(.init(head: position, operations: ops, generation: generation), expected: revision) } catch {
                // Another node's head came first: the compare-and-set refused this one.
                return .snapshotFailed
            }
            checkClusterHoldsAcknowledged("a snapshot covering \(position.sequence)")
            for k in nodes.indices where nodes[k].alive { schedule(k, .headNotice) }
            return lost == .answer ? .snapshotFailed : .snapshotStored(sequence: position.sequence, now: now)
        case let .trim(keepFrom):
            let lost = loss()
            guard up, lost != .request else { return .trimFailed }
            _ = stream.purge(keepFrom: keepFrom)
            checkClusterHoldsAcknowledged("a trim below \(keepFrom)")
            return lost == .answer ? .trimFailed : .trimmed(keptFrom: keepFrom)
        case let .writeCheckpoint(position):
            guard nodes[n].alive, nodes[n].incarnation == c.incarnation else { return nil }
            nodes[n].checkpoint = position
            return .checkpointWritten(position)
        case .headNotice:
            return up ? .headWritten : nil
        }
    }
}

extension ClusterSimulator {
    /// Acknowledged means durable in the cluster: every operation a client was told was
    /// acknowledged is in a message the stream keeps or in the snapshot in force, whatever the
    /// nodes' disks hold (Docs/Cluster.md, "What each acknowledgement level promises": with
    /// `--ack cluster` an acknowledged batch is never lost). Checked after each purge and each snapshot.
    ///
    /// - Complexity: O(messages + snapshot + acknowledged).
    mutating func checkClusterHoldsAcknowledged(_ after: String) {
        var ids = Set<OpID>()
        for m in stream.messages { for op in m.operations { ids.insert(op.id) } }
        for op in stream.snapshot?.value.operations ?? [] { ids.insert(op.id) }
        let lost = acknowledged.filter { !ids.contains($0.id) }
        if let first = lost.first, !clusterLostReported {
            clusterLostReported = true
            report.failures.append("after \(after), the stream and the snapshot lack \(lost.count) acknowledged operations (first \(first.id))")
        }
    }
}

/// The message id of a piece as the cluster's envelope makes it (the operations' ids), without
/// the document: the simulator has one.
enum ClusterEnvelopeID {
    static func messageID(_ ops: [ListOperation]) -> String {
        ops.map { "\($0.id)/\($0.lastID)" }.joined(separator: ";")
    }
}
