import ListCRDT
import ListSync
import ListSyncNATS

/// Snapshots and trimming (Docs/Cluster.md, "Snapshots and trimming"): one node at a time per
/// document holds its lease (``ClusterLease``, compare-and-set on the lease entry's revision);
/// the holder stores a snapshot of the document in the cluster (``ClusterSnapshots``), and only
/// once JetStream has acknowledged the snapshot's head does it purge the document's subject
/// below the sequence the snapshot covers. Never the other order: a subject trimmed before its
/// snapshot is stored would lose operations for every node that has not read them.
extension ClusterNode {
    /// Renews document `id`'s lease if this node holds it, takes it if a trim is due and the
    /// lease is free or lapsed, and trims if due and held.
    func tendLeaseAndTrim(_ id: DocumentID, _ h: DocumentHost) async {
        let due = configuration.trimMessages > 0 && (sinceSnapshot[id] ?? 0) >= configuration.trimMessages
        guard due || leases[id]?.held != nil else { return }
        guard await tendLease(id), due else { return }
        await trim(id, h)
    }

    /// Reads document `id`'s lease entry and takes, renews or keeps it as ``ClusterLease`` says.
    /// Returns whether this node holds it now.
    func tendLease(_ id: DocumentID) async -> Bool {
        guard let snapshots else { return false }
        var lease = leases[id] ?? ClusterLease(node: nodeName, duration: UInt64(configuration.leaseDuration.nanoseconds))
        defer { leases[id] = lease }
        let entry: ClusterLease.Entry?
        do { entry = try await snapshots.lease(id) } catch {
            lease.lost()
            return false
        }
        let sentAt = Self.now()
        let decision = lease.decide(entry: entry, now: sentAt)
        switch decision {
        case .keep: return lease.isHeld(now: sentAt)
        case .wait: return false
        case let .take(revision), let .renew(revision):
            do {
                let stored = try await snapshots.setLease(id, holder: nodeName, revision: revision)
                lease.won(revision: stored, sentAt: sentAt)
                if case .take = decision {
                    log("cluster lease taken", ["document": id.description, "node": nodeName, "after": entry?.holder ?? ""])
                }
            } catch {
                lease.lost()
            }
            return lease.isHeld(now: Self.now())
        }
    }

    /// Gives document `id`'s lease back if this node holds it (it stops following the document).
    func releaseLease(_ id: DocumentID) async {
        guard let held = leases.removeValue(forKey: id)?.held, let snapshots else { return }
        _ = try? await snapshots.setLease(id, holder: "", revision: held.revision)
    }

    /// Stores a snapshot of document `id` covering the subject up to the last sequence applied
    /// here, then, once JetStream acknowledged it and while the lease is still held, purges the
    /// subject below it. The snapshot holds the durable operations only; nothing happens while
    /// they lack an operation the subject had up to there (in flight, or read but causally
    /// waiting).
    func trim(_ id: DocumentID, _ h: DocumentHost) async {
        guard let snapshots, let js, let covered = applied[id], covered > 0 else { return }
        let version = streamVersion[id] ?? VersionVector()
        guard let (operations, documentVersion) = await h.clusterSnapshot(), documentVersion.includes(version) else { return }
        let previous: (head: ClusterSnapshots.Head, revision: UInt64)?
        do { previous = try await snapshots.head(id) } catch {
            log("cluster snapshot not written", ["document": id.description, "error": "\(error)"])
            return
        }
        if let p = previous, p.head.sequence >= covered {
            sinceSnapshot[id] = 0
            return
        }
        guard leases[id]?.isHeld(now: Self.now()) == true else { return }
        let head: ClusterSnapshots.Head
        do {
            head = try await snapshots.write(id, pieces: Self.pieces(operations, maxBytes: Self.maxPayload), sequence: covered,
                                             version: version, after: previous)
        } catch {
            log("cluster snapshot not written", ["document": id.description, "error": "\(error)"])
            return
        }
        sinceSnapshot[id] = 0
        // The snapshot is stored (its head acknowledged by JetStream): only now may the subject
        // lose what it covers, and only by the lease's holder.
        guard leases[id]?.isHeld(now: Self.now()) == true else {
            log("cluster trim skipped", ["document": id.description, "reason": "the lease lapsed while the snapshot was stored"])
            return
        }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        do {
            let purged = try await js.purge(configuration.stream, subject: subject, keepFrom: covered + 1)
            trims += 1
            log("cluster trimmed", ["document": id.description, "sequence": "\(covered)", "purged": "\(purged)",
                                    "operations": "\(operations.count)", "generation": "\(head.generation)", "node": nodeName])
        } catch {
            log("cluster trim failed", ["document": id.description, "error": "\(error)"])
        }
    }
}
