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
        out.append(.writeSnapshot(read))
        if variant == .trimsBeforeSnapshotAcknowledged { out.append(.trim(keepFrom: read.sequence + 1)) }
    }

    mutating func snapshotStored(_ sequence: UInt64, _ byThisNode: Bool, _ now: UInt64, _ out: inout [Action]) {
        snapshotInFlight = false
        sinceSnapshot = 0
        guard byThisNode else { return }
        counts.snapshots += 1
        guard variant == .correct else { return }
        // The snapshot's head is acknowledged: only now may the subject lose what it covers, and
        // only by the lease's holder.
        if lease.isHeld(now: now) { out.append(.trim(keepFrom: sequence + 1)) } else { counts.trimsSkipped += 1 }
    }
}
