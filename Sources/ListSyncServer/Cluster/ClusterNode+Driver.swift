import ListCRDT
import ListSync
import ListSyncNATS

/// The driver of each document's ``ClusterMachine``: an event in, the machine's actions out, and
/// for each action a `switch` case that does its I/O and reports the outcome as the event the
/// action names. A request to NATS runs in a task of its own (the machine keeps at most one of
/// each kind in flight per document); work on the document here (applying a batch, reading what
/// the stream lacks, writing a checkpoint) is awaited in order. Every failure is logged with its
/// typed error and reported to the machine, which decides what follows (a retry, a new follow).
extension ClusterNode {
    /// Hands `event` to document `id`'s machine (made if needed, unless `onlyIfKnown`) and does
    /// its actions.
    func event(_ id: DocumentID, _ event: ClusterMachine.Event, onlyIfKnown: Bool = false) async {
        guard !onlyIfKnown || machines[id] != nil, !knownDestroyed.contains(id) || isStopping(event) else { return }
        var m = machine(id)
        let actions = m.handle(event)
        machines[id] = m
        await run(id, actions)
    }

    private func isStopping(_ event: ClusterMachine.Event) -> Bool {
        if case .stopping = event { return true }
        return false
    }

    /// Does `actions` of document `id`'s machine, in order.
    func run(_ id: DocumentID, _ actions: [ClusterMachine.Action]) async {
        for a in actions { await perform(id, a) }
    }

    /// Runs `work` (a request to NATS) in a task, and hands the machine the event it returns.
    private func request(_ id: DocumentID, _ work: @escaping @Sendable (isolated ClusterNode) async -> ClusterMachine.Event?) {
        Task {
            guard let answer = await work(self) else { return }
            await self.event(id, answer, onlyIfKnown: true)
        }
    }

    private func perform(_ id: DocumentID, _ action: ClusterMachine.Action) async {
        let document = ["document": id.description]
        switch action {
        case let .publish(piece, ops, delay):
            guard let js else { return }
            let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
            let (payload, headers, messageID) = ClusterEnvelope.seal(ops, document: id, subject: subject, key: key)
            request(id) { node in
                if delay > 0 {
                    do { try await Task.sleep(for: .nanoseconds(delay)) } catch { return nil }
                }
                do {
                    _ = try await js.publish(subject, payload: payload, messageID: messageID, headers: headers)
                    return .published(piece: piece)
                } catch {
                    node.log("cluster publish retried", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .publishFailed(piece: piece)
                }
            }
        case let .release(ticket): waiting.removeValue(forKey: ticket)?.resume(returning: nil)
        case let .refuse(ticket): waiting.removeValue(forKey: ticket)?.resume(returning: Self.notStored)
        case .checkSnapshot:
            guard let snapshots, let daemon else { return }
            request(id) { node in
                do {
                    let found = try await snapshots.head(id)
                    let version = try await daemon.host(id).document.version
                    guard let head = found?.head else { return .snapshotChecked(nil, documentVersion: version) }
                    guard let covered = ClusterCheckpoint.decode(head.version) else {
                        node.log("cluster snapshot refused", document.merging(["error": "its version is not a version vector"]) { a, _ in a })
                        return .snapshotUnreadable
                    }
                    node.heads[id] = head
                    return .snapshotChecked(.init(sequence: head.sequence, version: covered), documentVersion: version)
                } catch {
                    // Reading the subject from here could skip what a trim removed: not without the snapshot.
                    node.log("cluster follow failed", document.merging(["error": "the snapshot could not be checked: \(error)"]) { a, _ in a })
                    return .snapshotUnreadable
                }
            }
        case let .loadSnapshot(position):
            guard let snapshots, let daemon, let head = heads[id] else { return await event(id, .snapshotUnreadable) }
            request(id) { node in
                do {
                    let pieces = try await snapshots.read(id, head)
                    let host = try await daemon.host(id)
                    for p in pieces { await host.receive(p, batch: 0, from: node.subscriberID) }
                    node.log("cluster snapshot loaded", document.merging(["sequence": "\(head.sequence)",
                        "operations": "\(pieces.reduce(0) { $0 + $1.count })"]) { a, _ in a })
                    return .snapshotLoaded(position)
                } catch {
                    // A chunk replaced by a newer snapshot meanwhile, among others: the machine
                    // checks the head again on its next follow.
                    node.log("cluster snapshot refused", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .snapshotUnreadable
                }
            }
        case .readSubjectEnd:
            guard let js else { return }
            let (stream, subject) = (configuration.stream, ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id))
            request(id) { node in
                do { return .subjectEnded(at: try await js.getMessage(stream, lastBySubject: subject)?.sequence ?? 0) } catch {
                    node.log("cluster follow failed", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .followFailed
                }
            }
        case let .startConsumer(from):
            guard let js else { return }
            let (stream, subject) = (configuration.stream, ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id))
            request(id) { node in
                do {
                    let consumer = try await OrderedConsumer.start(js, stream: stream, filter: subject, from: from)
                    return await node.consumerStarted(id, consumer, from: from)
                } catch {
                    node.log("cluster follow failed", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .followFailed
                }
            }
        case let .apply(ops):
            guard let daemon else { return }
            do { try await daemon.host(id).receive(ops, batch: 0, from: subscriberID) } catch {
                // The machine counted the message read; the document could not be loaded here.
                log("cluster message not applied", document.merging(["error": "\(error)"]) { a, _ in a })
            }
        case let .republish(since):
            guard let daemon else { return }
            do {
                let missing = try await daemon.host(id).document.operations(since: since)
                if !missing.isEmpty { log("cluster republishing", document.merging(["operations": "\(missing.count)"]) { a, _ in a }) }
                await event(id, .missing(missing))
            } catch {
                log("cluster republish failed", document.merging(["error": "\(error)"]) { a, _ in a })
                await event(id, .missing([]))
            }
        case .stopConsumer:
            await stopConsumer(id)
            log("cluster unfollowed", document)
        case .readLease:
            guard let snapshots else { return }
            request(id) { node in
                do { return .leaseRead(try await snapshots.lease(id), now: Self.now()) } catch {
                    node.log("cluster lease not read", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .leaseFailed
                }
            }
        case let .writeLease(revision, sentAt, taking):
            guard let snapshots else { return }
            let name = nodeName
            request(id) { node in
                do {
                    let stored = try await snapshots.setLease(id, holder: name, revision: revision)
                    if taking { node.log("cluster lease taken", document.merging(["node": name]) { a, _ in a }) }
                    return .leaseWritten(revision: stored, sentAt: sentAt, now: Self.now())
                } catch {
                    // Another node's write came first (wrong last sequence), or no answer.
                    node.log("cluster lease not written", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .leaseFailed
                }
            }
        case let .releaseLease(revision):
            guard let snapshots else { return }
            request(id) { node in
                do { _ = try await snapshots.setLease(id, holder: "", revision: revision) } catch {
                    node.log("cluster lease not released", document.merging(["error": "\(error)"]) { a, _ in a })
                }
                return nil
            }
        case .prepareSnapshot:
            guard let snapshots, let daemon else { return }
            request(id) { node in
                do {
                    let found = try await snapshots.head(id)
                    let durable = try await daemon.host(id).durableVersion
                    node.preparedHeads[id] = found
                    guard let found else { return .snapshotPrepared(head: nil, revision: 0, durable: durable, now: Self.now()) }
                    guard let covered = ClusterCheckpoint.decode(found.head.version) else {
                        node.log("cluster snapshot not written", document.merging(["error": "the head's version is not a version vector"]) { a, _ in a })
                        return .snapshotFailed
                    }
                    return .snapshotPrepared(head: .init(sequence: found.head.sequence, version: covered), revision: found.revision,
                                             durable: durable, now: Self.now())
                } catch {
                    node.log("cluster snapshot not written", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .snapshotFailed
                }
            }
        case let .writeSnapshot(position, revision):
            guard let daemon else { return }
            let previous = preparedHeads.removeValue(forKey: id) ?? nil
            guard (previous?.revision ?? 0) == revision else { return await event(id, .snapshotFailed, onlyIfKnown: true) }
            request(id) { node in await node.writeSnapshot(id, position, after: previous, daemon) }
        case let .trim(keepFrom):
            guard let js else { return }
            let (stream, subject, name) = (configuration.stream, ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id), nodeName)
            request(id) { node in
                do {
                    let purged = try await js.purge(stream, subject: subject, keepFrom: keepFrom)
                    node.log("cluster trimmed", document.merging(["sequence": "\(keepFrom - 1)", "purged": "\(purged)", "node": name]) { a, _ in a })
                    return .trimmed(keptFrom: keepFrom)
                } catch {
                    node.log("cluster trim failed", document.merging(["error": "\(error)"]) { a, _ in a })
                    return .trimFailed
                }
            }
        case let .writeCheckpoint(position):
            // Off the cooperative pool: the write waits for two fsyncs.
            let (checkpoints, checkpoint) = (checkpoints, ClusterCheckpoint(sequence: position.sequence, version: position.version))
            do {
                try await offPool { try checkpoints.write(id, checkpoint) }
                await event(id, .checkpointWritten(position), onlyIfKnown: true)
            } catch {
                log("cluster checkpoint not written", document.merging(["error": "\(error)"]) { a, _ in a })
                await event(id, .checkpointFailed, onlyIfKnown: true)
            }
        }
    }

    /// Stores a snapshot of document `id`'s durable operations covering `position`, by
    /// compare-and-set on the head read before (`previous`); the answer for the machine.
    func writeSnapshot(_ id: DocumentID, _ position: ClusterMachine.Position, after previous: (head: ClusterSnapshots.Head, revision: UInt64)?,
                       _ daemon: Daemon) async -> ClusterMachine.Event {
        let document = ["document": id.description]
        guard let snapshots else { return .snapshotFailed }
        do {
            guard let (operations, version) = try await daemon.host(id).clusterSnapshot(), version.includes(position.version) else {
                log("cluster snapshot not written", document.merging(["error": "the store is failing or closed"]) { a, _ in a })
                return .snapshotFailed
            }
            let head = try await snapshots.write(id, pieces: ClusterMachine.pieces(operations, maxBytes: Self.maxPayload), sequence: position.sequence,
                                                 version: position.version, after: previous, oldChunksLeft: { [weak self] error in
                Task { await self?.log("cluster snapshot chunks left", document.merging(["error": "\(error)"]) { a, _ in a }) }
            })
            log("cluster snapshot stored", document.merging(["sequence": "\(position.sequence)", "operations": "\(operations.count)",
                                                             "generation": "\(head.generation)"]) { a, _ in a })
            return .snapshotStored(sequence: position.sequence, now: Self.now())
        } catch {
            log("cluster snapshot not written", document.merging(["error": "\(error)"]) { a, _ in a })
            return .snapshotFailed
        }
    }

    /// A consumer started: kept and read (each message handed to the machine in order), unless
    /// the machine stopped wanting it meanwhile.
    func consumerStarted(_ id: DocumentID, _ consumer: OrderedConsumer, from: UInt64) async -> ClusterMachine.Event? {
        guard !stopped, consumers[id] == nil else {
            await consumer.stop()
            return nil
        }
        consumerSerial += 1
        let serial = consumerSerial
        let task = Task { [weak self] in
            for await m in consumer.messages { await self?.message(id, m) }
            await self?.consumerEnded(id, serial)
        }
        consumers[id] = (consumer, task, serial)
        log("cluster following", ["document": id.description, "from": "\(from)"])
        return .following
    }

    /// A message read: its tag checked, its operations handed to the machine (nil if refused).
    func message(_ id: DocumentID, _ m: StoredMessage) async {
        let ops: [ListOperation]?
        do { ops = try ClusterEnvelope.open(subject: m.subject, headers: m.headers, payload: m.payload, key: key) } catch {
            log("cluster message refused", ["document": id.description, "sequence": "\(m.sequence)", "reason": "\(error)"])
            ops = nil
        }
        await event(id, .message(sequence: m.sequence, operations: ops), onlyIfKnown: true)
    }

    /// A consumer's messages ended: if it is still the current one, the machine hears it is lost.
    func consumerEnded(_ id: DocumentID, _ serial: UInt64) async {
        guard consumers[id]?.serial == serial else { return }
        consumers[id] = nil
        await event(id, .consumerLost, onlyIfKnown: true)
    }

    /// Stops document `id`'s consumer, if any.
    func stopConsumer(_ id: DocumentID) async {
        guard let c = consumers.removeValue(forKey: id) else { return }
        c.task.cancel()
        await c.consumer.stop()
    }
}
