import ListCRDT

/// Snapshots and trimming (Docs/Cluster.md, "Snapshots and trimming"): one node at a time holds
/// the document's lease (``ClusterLease``, a compare-and-set on the entry's revision); the holder
/// stores a snapshot covering its position, and only once the stream acknowledged the snapshot's
/// head, and while the lease is still held, does it trim the subject below what the snapshot
/// covers. Never the other order: a subject trimmed before its snapshot is stored loses
/// operations for every node that has not read them.
extension ClusterMachine {
    /// Reads the lease when a trim is due or the lease is held (to renew it).
    mutating func tendLease(_ now: UInt64, _ out: inout [Action]) {
        let due = configuration.trimMessages > 0 && sinceSnapshot >= configuration.trimMessages
        guard due || lease.held != nil, !leaseInFlight else { return }
        leaseInFlight = true
        out.append(.readLease)
    }

    mutating func leaseRead(_ entry: ClusterLease.Entry?, _ now: UInt64, _ out: inout [Action]) {
        leaseInFlight = false
        switch lease.decide(entry: entry, now: now) {
        case .keep: snapshotIfDue(now, &out)
        case .wait: break
        case let .take(revision):
            leaseInFlight = true
            out.append(.writeLease(revision: revision, sentAt: now, taking: true))
        case let .renew(revision):
            leaseInFlight = true
            out.append(.writeLease(revision: revision, sentAt: now, taking: false))
        }
    }

    /// Asks for a snapshot when due, held and everything read is durable here.
    mutating func snapshotIfDue(_ now: UInt64, _ out: inout [Action]) {
        guard !snapshotInFlight, !stopped, follow == .following, configuration.trimMessages > 0,
              sinceSnapshot >= configuration.trimMessages, lease.isHeld(now: now), read.sequence > 0,
              lastDurable.includes(read.version) else { return }
        snapshotInFlight = true
        snapshotPosition = read
        out.append(.prepareSnapshot(read))
    }

    /// The head in force is read: a snapshot is written only past it, only when what it covers
    /// is durable here, and never over a head whose operations this copy lacks (a trim this node
    /// has not caught up with: replacing the head would drop them from the cluster; the head is
    /// checked, and loaded, first).
    mutating func snapshotPrepared(_ head: Position?, _ revision: UInt64, _ durable: VersionVector, _ now: UInt64, _ out: inout [Action]) {
        guard snapshotInFlight, let position = snapshotPosition else { return }
        lastDurable = durable
        if let head, head.sequence >= position.sequence {
            // Another node's snapshot covers as much: nothing to write, nothing for this node to trim.
            snapshotInFlight = false
            sinceSnapshot = 0
            return
        }
        guard durable.includes(position.version), lease.isHeld(now: now) else {
            snapshotInFlight = false
            return
        }
        if let head, !durable.includes(head.version) {
            snapshotInFlight = false
            requestCheck(&out)
            return
        }
        out.append(.writeSnapshot(position, after: revision))
        if variant == .trimsBeforeSnapshotAcknowledged { out.append(.trim(keepFrom: position.sequence + 1)) }
    }

    mutating func snapshotStored(_ sequence: UInt64, _ now: UInt64, _ out: inout [Action]) {
        guard snapshotInFlight else { return }
        snapshotInFlight = false
        sinceSnapshot = 0
        counts.snapshots += 1
        guard variant == .correct else { return }
        // The snapshot's head is acknowledged: only now may the subject lose what it covers, and
        // only by the lease's holder.
        if lease.isHeld(now: now) { out.append(.trim(keepFrom: sequence + 1)) } else { counts.trimsSkipped += 1 }
    }
}
