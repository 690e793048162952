import ListCRDT
import ListSync
import ListSyncNATS

/// Reading documents' subjects (Docs/Cluster.md, "Interest" and "What a node reads after a
/// restart"): only while a document has interest here, from the node's read checkpoint, after
/// the cluster's snapshot when the copy here lacks what the snapshot covers.
extension ClusterNode {
    /// A subscriber attached to document `id` here: follow its subject (if not already).
    func interested(_ id: DocumentID) async {
        guard !stopped else { return }
        lastInterest[id] = Self.now()
        await follow(id)
    }

    /// Follows document `id`'s subject: from the read checkpoint (once per start), after the
    /// cluster's snapshot if the copy lacks what it covers, from the sequence after the last
    /// applied.
    func follow(_ id: DocumentID) async {
        guard consumers[id] == nil, !starting.contains(id), !stopped, let js else { return }
        starting.insert(id)
        defer { starting.remove(id) }
        lastInterest[id] = Self.now()
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        if applied[id] == nil, let c = checkpoints.read(id), let v = c.versionVector {
            applied[id] = c.sequence
            checkpointed[id] = c.sequence
            streamVersion[id] = v
        }
        guard await loadSnapshotIfBehind(id) else {
            // Reading from here could skip what a trim removed: not without the snapshot.
            log("cluster follow failed", ["document": id.description, "error": "the snapshot could not be checked"])
            return
        }
        if !followedOnce.contains(id) {
            // First follow since the node started: learn where the subject ends, to reconcile
            // once caught up (a batch appended here and never published, the node killed between).
            do {
                let last = try await js.getMessage(configuration.stream, lastBySubject: subject)?.sequence ?? 0
                followedOnce.insert(id)
                if last <= applied[id] ?? 0 { Task { await self.reconcile(id) } } else { catchUpTarget[id] = last }
            } catch {
                log("cluster follow failed", ["document": id.description, "error": "\(error)"])
                return
            }
        }
        let consumer: OrderedConsumer
        let from = (applied[id] ?? 0) + 1
        do { consumer = try await OrderedConsumer.start(js, stream: configuration.stream, filter: subject, from: from) } catch {
            log("cluster follow failed", ["document": id.description, "error": "\(error)"])
            return
        }
        guard consumers[id] == nil, !stopped else {
            await consumer.stop()
            return
        }
        let task = Task { [weak self] in
            for await m in consumer.messages {
                await self?.apply(id, m)
            }
        }
        consumers[id] = (consumer, task)
        log("cluster following", ["document": id.description, "from": "\(from)"])
    }

    /// Stops reading document `id`'s subject (its checkpoint and lease stay as they are).
    func unfollow(_ id: DocumentID) async {
        guard let c = consumers.removeValue(forKey: id) else { return }
        c.task.cancel()
        await c.consumer.stop()
    }

    /// Forgets what the node knew of document `id` (destroyed), its checkpoint file included.
    func forget(_ id: DocumentID) async {
        applied[id] = nil
        streamVersion[id] = nil
        catchUpTarget[id] = nil
        unpublished.remove(id)
        checkpointed[id] = nil
        sinceSnapshot[id] = nil
        leases[id] = nil
        lastInterest[id] = nil
        checkpoints.remove(id)
    }

    /// Loads the cluster's snapshot of document `id` into its host if the copy here lacks an
    /// operation it covers (a new node, a node behind the trim point, a follower that the trim
    /// overtook), and moves the read position past what it covers. A snapshot that does not
    /// check (a wrong tag, a wrong digest) is refused, logged and not applied.
    ///
    /// - Returns: whether the check was made (false: the head or its chunks could not be read
    ///   or were refused; the caller must not read the subject as if nothing was trimmed).
    @discardableResult
    func loadSnapshotIfBehind(_ id: DocumentID) async -> Bool {
        guard let snapshots, let daemon else { return false }
        for _ in 0..<3 {
            let found: (head: ClusterSnapshots.Head, revision: UInt64)?
            do { found = try await snapshots.head(id) } catch {
                log("cluster snapshot refused", ["document": id.description, "error": "\(error)"])
                return false
            }
            guard let head = found?.head else { return true }
            guard let covered = ClusterCheckpoint.decode(head.version), let h = try? await daemon.host(id) else { return false }
            if !(await h.document.version).includes(covered) {
                let pieces: [[ListOperation]]
                do { pieces = try await snapshots.read(id, head) } catch {
                    // A chunk replaced by a newer snapshot meanwhile: read the head again.
                    if case .missingChunk = error { continue }
                    log("cluster snapshot refused", ["document": id.description, "error": "\(error)"])
                    return false
                }
                for p in pieces { await h.receive(p, batch: 0, from: subscriberID) }
                snapshotsLoaded += 1
                log("cluster snapshot loaded", ["document": id.description, "sequence": "\(head.sequence)",
                                                "operations": "\(pieces.reduce(0) { $0 + $1.count })"])
            }
            streamVersion[id, default: VersionVector()].formUnion(covered)
            if head.sequence > applied[id] ?? 0 { applied[id] = head.sequence }
            sinceSnapshot[id] = 0
            return true
        }
        return false
    }

    /// A snapshot head was written (by any node): a follower of the document that lacks what it
    /// covers loads it, since the subject is trimmed below it next.
    func headWritten(_ id: DocumentID) async {
        guard consumers[id] != nil || starting.contains(id) else { return }
        await loadSnapshotIfBehind(id)
    }

    /// The connection came back: the heads written meanwhile were not heard, and the consumers
    /// are made again from their next sequence, which a trim meanwhile may have removed. Each
    /// document followed loads its snapshot if its copy lacks what the snapshot covers.
    func reconnected() async {
        for id in Array(consumers.keys) { await loadSnapshotIfBehind(id) }
    }

    /// Follows, once after the node starts, each local document that may hold operations the
    /// stream lacks (its version is not within its read checkpoint), so that they are published
    /// (``reconcile(_:)``) even if nobody reads the document here.
    func followUnpublished() async {
        guard let daemon else { return }
        for info in await daemon.list() where !stopped {
            guard let h = try? await daemon.host(info.id) else { continue }
            let version = await h.durableVersion
            if let v = checkpoints.read(info.id)?.versionVector, v.includes(version) { continue }
            if version == VersionVector() { continue }
            unpublished.insert(info.id)
            await follow(info.id)
        }
    }

    func apply(_ id: DocumentID, _ m: StoredMessage) async {
        guard let daemon else { return }
        defer { caughtUp(id, m.sequence) }
        sinceSnapshot[id, default: 0] += 1
        let ops: [ListOperation]
        do { ops = try ClusterEnvelope.open(subject: m.subject, headers: m.headers, payload: m.payload, key: key) } catch {
            refused += 1
            log("cluster message refused", ["document": id.description, "sequence": "\(m.sequence)", "reason": "\(error)"])
            return
        }
        guard let h = try? await daemon.host(id) else { return }
        await h.receive(ops, batch: 0, from: subscriberID)
        var v = streamVersion[id] ?? VersionVector()
        for op in ops { v.observe(op.lastID) }
        streamVersion[id] = v
    }

    /// Message `sequence` of document `id` was read: reconcile once the catch-up is done.
    private func caughtUp(_ id: DocumentID, _ sequence: UInt64) {
        applied[id] = max(applied[id] ?? 0, sequence)
        if let target = catchUpTarget[id], sequence >= target {
            catchUpTarget[id] = nil
            Task { await reconcile(id) }
        }
    }

    /// Publishes the operations the node has and the stream lacks (caught up to where the subject
    /// ended when the node began to follow it): batches made durable here by a node killed before
    /// their publish succeeded. A document's publishes keep their order, so the stream holds a
    /// prefix of each node's appends and its version vector (with the snapshots' and the
    /// checkpoint's) tells what it lacks. Operations the stream has already, republished by a
    /// race with a live batch, change nothing where read.
    func reconcile(_ id: DocumentID) async {
        guard !stopped, let daemon, let h = try? await daemon.host(id) else { return }
        let missing = await h.document.operations(since: streamVersion[id] ?? VersionVector())
        guard !missing.isEmpty else { return }
        log("cluster republishing", ["document": id.description, "operations": "\(missing.count)"])
        _ = await replicate(id, missing)
    }

    // MARK: Maintenance

    /// Once every ``ClusterConfiguration/maintenanceInterval``: the documents with interest whose
    /// follow failed are followed again; for each document followed, its read checkpoint, its
    /// lease and trim, and the end of following it once nobody here has read it for
    /// ``ClusterConfiguration/interestGrace``.
    func maintain() async {
        guard !stopped, let daemon else { return }
        let grace = UInt64(configuration.interestGrace.nanoseconds)
        for (id, last) in lastInterest where consumers[id] == nil && !starting.contains(id) {
            // A follow that failed (no NATS server then, a JetStream error): again, while someone
            // is subscribed here or within the grace period.
            let subscribed = await (daemon.residentHost(id)?.subscriberCount ?? 0) > 0
            if subscribed { lastInterest[id] = Self.now() }
            guard subscribed || ClusterLease.elapsed(since: last, Self.now()) < grace else { continue }
            await follow(id)
        }
        // Documents that may hold unpublished batches: followed until their first catch-up began.
        unpublished.subtract(followedOnce)
        for id in unpublished where consumers[id] == nil && !starting.contains(id) { await follow(id) }
        for id in Array(consumers.keys) {
            let h = await daemon.residentHost(id)
            let busy = await (h?.subscriberCount ?? 0) > 0 || (publishesPending[id] ?? 0) > 0 || catchUpTarget[id] != nil
            // Read after the awaits, and the difference saturated: a subscriber that came in
            // meanwhile stamped a later time.
            let now = Self.now()
            if busy { lastInterest[id] = now }
            if let h { await writeCheckpoint(id, h) }
            let idle = ClusterLease.elapsed(since: lastInterest[id] ?? now, Self.now())
            if !busy, idle >= grace, consumers[id] != nil {
                await unfollow(id)
                await releaseLease(id)
                log("cluster unfollowed", ["document": id.description, "reason": "no subscriber here"])
                continue
            }
            if let h { await tendLeaseAndTrim(id, h) }
        }
    }

    /// Writes document `id`'s read checkpoint if it moved and what it covers is durable here.
    func writeCheckpoint(_ id: DocumentID, _ h: DocumentHost) async {
        guard let sequence = applied[id], sequence > checkpointed[id] ?? 0 else { return }
        let version = streamVersion[id] ?? VersionVector()
        guard await h.durableVersion.includes(version) else { return }
        do {
            // Off the cooperative pool: the write waits for two fsyncs.
            let (checkpoints, checkpoint) = (checkpoints, ClusterCheckpoint(sequence: sequence, version: version))
            try await offPool { try checkpoints.write(id, checkpoint) }
            checkpointed[id] = max(checkpointed[id] ?? 0, sequence)
        } catch {
            log("cluster checkpoint not written", ["document": id.description, "error": "\(error)"])
        }
    }
}
