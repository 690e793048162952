import Foundation
import ListCRDT
import ListSync
import ListSyncNATS
import ListSyncTCP

/// A daemon's part in a cluster (Docs/Cluster.md): its NATS connection, the stream of every
/// document's operations and the bucket of the document list.
///
/// Out: each batch a document host appended locally (from a client, or the daemon's own) is
/// published to the document's subject, tagged with the cluster key, with a `Nats-Msg-Id` from
/// its operations' ids; with `--ack cluster` the host releases the batch only once JetStream has
/// acknowledged it (publishing is retried until then). In: for each document it holds, the node
/// reads the subject from the sequence after the last it applied (an ordered consumer), checks
/// each message's tag (an untagged or wrongly tagged message is refused and counted, nothing of
/// it applied) and hands the operations to the document's host as a batch from the cluster,
/// which forwards them to the node's clients. The document list: a created document is put into
/// the bucket; every ``ClusterConfiguration/listInterval`` the node reads the bucket and makes
/// the documents it lacks (empty, same id, name and epoch: their operations come from the stream).
actor ClusterNode {
    private weak var daemon: Daemon?
    private let configuration: ClusterConfiguration
    private let key: [UInt8]
    private let loop: EventLoop
    /// The sender number of batches from the cluster (never published again).
    nonisolated let subscriberID: SubscriberID
    private var connection: NATSConnection?
    private var js: JetStream?
    private var bucket: KeyValue?
    private var consumers: [DocumentID: (consumer: OrderedConsumer, task: Task<Void, Never>)] = [:]
    /// The last stream sequence applied per document (a restarted consumer starts after it).
    private var applied: [DocumentID: UInt64] = [:]
    /// The operations seen in each document's subject (what the stream holds, as far as read).
    private var streamVersion: [DocumentID: VersionVector] = [:]
    /// Per document being caught up: the subject's last sequence when the node began to follow
    /// it; once applied up to there, the node publishes what it has and the stream lacks.
    private var catchUpTarget: [DocumentID: UInt64] = [:]
    /// Documents destroyed in the cluster (seen in the bucket or destroyed here).
    private var knownDestroyed: Set<DocumentID> = []
    /// Per document, the last publish queued (the next one waits for it).
    private var publishChain: [DocumentID: Task<Bool, Never>] = [:]
    private var listTask: Task<Void, Never>?
    private var stopped = false
    /// Messages refused (no tag, a wrong tag, not operations).
    private(set) var refused = 0
    /// Batches published and acknowledged by JetStream.
    private(set) var published = 0

    init(daemon: Daemon, configuration: ClusterConfiguration, daemonKey: [UInt8], subscriber: Int, loop: EventLoop) {
        self.daemon = daemon
        self.configuration = configuration
        key = ClusterEnvelope.clusterKey(daemonKey: daemonKey)
        subscriberID = SubscriberID(subscriber)
        self.loop = loop
    }

    /// Connects, makes the stream and the bucket if missing, and starts following the list.
    ///
    /// - Throws: ``DaemonError/cluster(_:)`` when no NATS server answers or JetStream refuses.
    func start() async throws(DaemonError) {
        var options = NATSOptions()
        options.name = "listsync"
        options.requestTimeout = .seconds(10)
        do {
            let c = try await NATSConnection.connect(to: configuration.servers, options: options, loop: loop)
            connection = c
            let js = JetStream(c, timeout: .seconds(10))
            self.js = js
            var stream = StreamConfig(name: configuration.stream, subjects: ["\(configuration.subjectPrefix).>"])
            stream.replicas = configuration.replicas
            stream.maxBytes = configuration.maxBytes
            stream.discard = .new
            stream.storage = .file
            do { try await js.createStream(stream) } catch {
                // Made by another node (perhaps with other limits): use it as it is.
                _ = try await js.streamInfo(configuration.stream)
            }
            bucket = try await KeyValue.open(js, bucket: configuration.bucket, replicas: configuration.replicas)
        } catch {
            await connection?.close()
            throw .cluster("\(error)")
        }
        await readList()
        let interval = configuration.listInterval
        listTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                await self?.readList()
            }
        }
    }

    func stop() async {
        stopped = true
        listTask?.cancel()
        for (_, c) in consumers {
            c.task.cancel()
            await c.consumer.stop()
        }
        consumers = [:]
        await connection?.close()
    }

    /// What `listsync status` shows of the cluster.
    struct Status: Sendable {
        var servers: [String], ack: String, connected: Bool, followed: Int, published: Int, refused: Int
    }

    /// The node's cluster status now.
    func status() async -> Status {
        Status(servers: configuration.servers.map(\.description), ack: configuration.acknowledgement.rawValue,
               connected: await connection?.isConnected ?? false, followed: consumers.count, published: published, refused: refused)
    }

    // MARK: Documents

    /// A host was loaded or made: its batches are published from now on, and the node follows
    /// the document's subject.
    func attach(_ host: DocumentHost) async {
        guard !stopped else { return }
        let publish: @Sendable (DocumentID, [ListOperation]) async -> String? = { [weak self] id, ops in
            guard let self else { return "the cluster node is gone" }
            return await self.replicate(id, ops)
        }
        await host.setReplicator(publish, sender: subscriberID)
        await follow(host.id)
    }

    /// A document was created on this node: put it in the bucket (once: a compare-and-set on
    /// the key's absence).
    func created(_ id: DocumentID, name: String, epoch: UInt64) async {
        guard let bucket else { return }
        let entry: [String: Any] = ["name": name, "epoch": epoch]
        guard let value = try? JSONSerialization.data(withJSONObject: entry) else { return }
        do { try await bucket.update(id.description, Array(value), revision: 0) } catch {
            if case let .api(_, code, _) = error, code == JetStreamError.wrongLastSequence { return }
            daemon?.log("cluster list not updated", ["document": id.description, "error": "\(error)"])
        }
    }

    /// A document was destroyed on this node: the bucket says so (key `destroyed.<id>`), and
    /// every node destroys its copy when it next reads the list.
    func destroyed(_ id: DocumentID) async {
        guard let bucket, !knownDestroyed.contains(id) else { return }
        knownDestroyed.insert(id)
        await unfollow(id)
        do { try await bucket.put(Self.destroyedPrefix + id.description, Array("destroyed".utf8)) } catch {
            daemon?.log("cluster destroy not listed", ["document": id.description, "error": "\(error)"])
            knownDestroyed.remove(id)
        }
    }

    static let destroyedPrefix = "destroyed."

    private func unfollow(_ id: DocumentID) async {
        guard let c = consumers.removeValue(forKey: id) else { return }
        c.task.cancel()
        await c.consumer.stop()
    }

    /// Reads the bucket; destroys the documents destroyed elsewhere, makes those this node
    /// lacks, and follows every one.
    private func readList() async {
        guard !stopped, let bucket, let daemon else { return }
        let keys: [String]
        do { keys = try await bucket.keys() } catch {
            daemon.log("cluster list not read", ["error": "\(error)"])
            return
        }
        let local = Set(await daemon.list().map(\.id))
        let gone = Set(keys.filter { $0.hasPrefix(Self.destroyedPrefix) }.compactMap { DocumentID(hex: String($0.dropFirst(Self.destroyedPrefix.count))) })
        for id in gone.sorted() where !knownDestroyed.contains(id) {
            knownDestroyed.insert(id)
            await unfollow(id)
            if local.contains(id) {
                do { _ = try await daemon.destroy(id, epoch: 0, reason: "destroyed on another cluster node") } catch {
                    daemon.log("cluster destroy not applied", ["document": id.description, "error": "\(error)"])
                }
            }
        }
        for k in keys {
            guard let id = DocumentID(hex: k), !gone.contains(id) else { continue }
            if !local.contains(id) {
                guard let entry = try? await bucket.get(k),
                      let object = (try? JSONSerialization.jsonObject(with: Data(entry.value))) as? [String: Any],
                      let name = object["name"] as? String, let epoch = (object["epoch"] as? NSNumber)?.uint64Value else { continue }
                do { _ = try await daemon.create(name: name, sections: [], id: id, epoch: epoch) } catch {
                    daemon.log("cluster document not made", ["document": k, "error": "\(error)"])
                    continue
                }
            }
            if consumers[id] == nil, let h = try? await daemon.host(id) { await attach(h) }
        }
    }

    // MARK: Out

    /// Publishes a batch appended locally (in pieces of at most ``maxPayload`` bytes); with
    /// `--ack cluster`, returns once JetStream stored every piece (each retried with the same
    /// message id until then, or until the node stops). A document's pieces are published one
    /// after the other, in the order they were given: the stream holds a prefix of what the node
    /// appended, which ``reconcile(_:)`` relies on.
    ///
    /// - Returns: nil when the batch may be released; why not when `--ack cluster` and a piece
    ///   was not stored because the node stopped first.
    private func replicate(_ id: DocumentID, _ ops: [ListOperation]) async -> String? {
        guard !ops.isEmpty else { return nil }
        guard !stopped else { return configuration.acknowledgement == .cluster ? "the node is stopping" : nil }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        for piece in Self.pieces(ops, maxBytes: Self.maxPayload) {
            let (payload, headers, messageID) = ClusterEnvelope.seal(piece, document: id, subject: subject, key: key)
            let previous = publishChain[id]
            let task = Task { [weak self] () -> Bool in
                _ = await previous?.value
                return await self?.publishUntilStored(id, subject, payload, headers, messageID) ?? false
            }
            publishChain[id] = task
            if configuration.acknowledgement == .cluster, await !task.value {
                return "not stored by JetStream before the node stopped"
            }
        }
        return nil
    }

    /// The largest payload published (NATS servers take 1 MiB by default).
    static let maxPayload = 256 << 10

    /// `ops` in runs whose encodings are at most `maxBytes` each (one operation alone may be more).
    ///
    /// - Complexity: O(operations).
    static func pieces(_ ops: [ListOperation], maxBytes: Int) -> [[ListOperation]] {
        var out: [[ListOperation]] = [], current: [ListOperation] = [], size = 0
        for op in ops {
            let n = ListOperation.encode([op]).count
            if !current.isEmpty, size + n > maxBytes {
                out.append(current)
                current = []
                size = 0
            }
            current.append(op)
            size += n
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// Whether JetStream stored it (false: the node stopped first).
    private func publishUntilStored(_ id: DocumentID, _ subject: String, _ payload: [UInt8], _ headers: NATSHeaders, _ messageID: String) async -> Bool {
        guard let js else { return false }
        var delay = Duration.milliseconds(50)
        while !stopped {
            do {
                _ = try await js.publish(subject, payload: payload, messageID: messageID, headers: headers)
                published += 1
                return true
            } catch {
                log("cluster publish retried", ["document": id.description, "error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(1))
            }
        }
        return false
    }

    private func log(_ event: String, _ fields: [String: String]) { daemon?.log(event, fields) }

    // MARK: In

    /// Follows document `id`'s subject from the sequence after the last applied.
    private func follow(_ id: DocumentID) async {
        guard consumers[id] == nil, let js else { return }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        let from = (applied[id] ?? 0) + 1
        if streamVersion[id] == nil {
            // First follow since the node started: learn where the subject ends, to reconcile
            // once caught up (a batch appended here and never published, the node killed between).
            do {
                let last = try await js.getMessage(configuration.stream, lastBySubject: subject)?.sequence ?? 0
                streamVersion[id] = VersionVector()
                if last == 0 { Task { await self.reconcile(id) } } else { catchUpTarget[id] = last }
            } catch {
                daemon?.log("cluster follow failed", ["document": id.description, "error": "\(error)"])
                return
            }
        }
        let consumer: OrderedConsumer
        do { consumer = try await OrderedConsumer.start(js, stream: configuration.stream, filter: subject, from: from) } catch {
            daemon?.log("cluster follow failed", ["document": id.description, "error": "\(error)"])
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
    }

    private func apply(_ id: DocumentID, _ m: StoredMessage) async {
        guard let daemon else { return }
        defer { caughtUp(id, m.sequence) }
        let ops: [ListOperation]
        do { ops = try ClusterEnvelope.open(subject: m.subject, headers: m.headers, payload: m.payload, key: key) } catch {
            refused += 1
            daemon.log("cluster message refused", ["document": id.description, "sequence": "\(m.sequence)", "reason": "\(error)"])
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
    /// prefix of each node's appends and its version vector tells what it lacks. Operations the
    /// stream has already, republished by a race with a live batch, change nothing where read.
    private func reconcile(_ id: DocumentID) async {
        guard !stopped, let daemon, let h = try? await daemon.host(id) else { return }
        let missing = await h.document.operations(since: streamVersion[id] ?? VersionVector())
        guard !missing.isEmpty else { return }
        daemon.log("cluster republishing", ["document": id.description, "operations": "\(missing.count)"])
        await replicate(id, missing)
    }
}
