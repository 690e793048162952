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

    /// Status for `listsync status` and the metrics.
    var status: [String: Any] {
        ["servers": configuration.servers.map(\.description), "ack": configuration.acknowledgement.rawValue,
         "documents_followed": consumers.count, "published": published, "refused": refused]
    }

    // MARK: Documents

    /// A host was loaded or made: its batches are published from now on, and the node follows
    /// the document's subject.
    func attach(_ host: DocumentHost) async {
        guard !stopped else { return }
        let publish: @Sendable (DocumentID, [ListOperation]) async -> Void = { [weak self] id, ops in
            await self?.replicate(id, ops)
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

    /// Reads the bucket; makes the documents this node lacks and follows every one.
    private func readList() async {
        guard !stopped, let bucket, let daemon else { return }
        let keys: [String]
        do { keys = try await bucket.keys() } catch {
            daemon.log("cluster list not read", ["error": "\(error)"])
            return
        }
        let local = Set(await daemon.list().map(\.id))
        for k in keys {
            guard let id = DocumentID(hex: k) else { continue }
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

    /// Publishes a batch appended locally; with `--ack cluster`, returns once JetStream stored
    /// it (retrying with the same message id until then, or until the node stops).
    private func replicate(_ id: DocumentID, _ ops: [ListOperation]) async {
        guard let js, !ops.isEmpty else { return }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        let (payload, headers, messageID) = ClusterEnvelope.seal(ops, document: id, subject: subject, key: key)
        let attempt: @Sendable () async -> Void = { [weak self] in
            var delay = Duration.milliseconds(50)
            while true {
                do {
                    _ = try await js.publish(subject, payload: payload, messageID: messageID, headers: headers)
                    await self?.countPublished()
                    return
                } catch {
                    guard let self, await !self.stopped else { return }
                    await self.log("cluster publish retried", ["document": id.description, "error": "\(error)"])
                    try? await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(1))
                }
            }
        }
        switch configuration.acknowledgement {
        case .cluster: await attempt()
        case .local: Task { await attempt() }
        }
    }

    private func countPublished() { published += 1 }
    private func log(_ event: String, _ fields: [String: String]) { daemon?.log(event, fields) }

    // MARK: In

    /// Follows document `id`'s subject from the sequence after the last applied.
    private func follow(_ id: DocumentID) async {
        guard consumers[id] == nil, let js else { return }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        let from = (applied[id] ?? 0) + 1
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
        let ops: [ListOperation]
        do { ops = try ClusterEnvelope.open(subject: m.subject, headers: m.headers, payload: m.payload, key: key) } catch {
            refused += 1
            daemon.log("cluster message refused", ["document": id.description, "sequence": "\(m.sequence)", "reason": "\(error)"])
            applied[id] = max(applied[id] ?? 0, m.sequence)
            return
        }
        guard let h = try? await daemon.host(id) else { return }
        await h.receive(ops, batch: 0, from: subscriberID)
        applied[id] = max(applied[id] ?? 0, m.sequence)
    }
}
