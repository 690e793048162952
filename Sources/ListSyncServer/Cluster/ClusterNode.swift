import Foundation
import ListCRDT
import ListSync
import ListSyncNATS
import ListSyncTCP

/// A daemon's part in a cluster (Docs/Cluster.md): its NATS connection, the stream of every
/// document's operations, the bucket of the document list and the bucket of snapshots and leases.
///
/// Out: each batch a document host appended locally (from a client, or the daemon's own) is
/// published to the document's subject, tagged with the cluster key, with a `Nats-Msg-Id` from
/// its operations' ids; with `--ack cluster` the host releases the batch only once JetStream has
/// acknowledged it (publishing is retried until then). In (`ClusterNode+Follow.swift`): while a
/// document has subscribers here (its *interest*), the node reads its subject with an ordered
/// consumer, from its read checkpoint or the cluster's snapshot, checks each message's tag and
/// hands the operations to the document's host as a batch from the cluster. Trimming
/// (`ClusterNode+Trim.swift`): the holder of a document's lease snapshots it into the cluster
/// and, once the snapshot is stored, trims the subject below what it covers. The document list:
/// a created document is put into the bucket; every ``ClusterConfiguration/listInterval`` the
/// node reads the bucket and makes the documents it lacks (empty, same id, name and epoch: their
/// operations come from the cluster when someone reads them here).
actor ClusterNode {
    weak var daemon: Daemon?
    let configuration: ClusterConfiguration
    let key: [UInt8]
    private let loop: EventLoop
    /// The sender number of batches from the cluster (never published again).
    nonisolated let subscriberID: SubscriberID
    /// This node's name in leases (the daemon's replica id, in hexadecimal).
    let nodeName: String
    /// The read checkpoints on this node's disk.
    let checkpoints: ClusterCheckpoints
    private var connection: NATSConnection?
    var js: JetStream?
    private var bucket: KeyValue?
    /// The snapshots and leases (nil until started).
    var snapshots: ClusterSnapshots?
    var consumers: [DocumentID: (consumer: OrderedConsumer, task: Task<Void, Never>)] = [:]
    /// Documents whose consumer is being made (a second ``follow(_:)`` waits for nothing).
    var starting: Set<DocumentID> = []
    /// The last stream sequence applied per document (a restarted consumer starts after it).
    var applied: [DocumentID: UInt64] = [:]
    /// The operations of each document's subject up to ``applied`` (and of the snapshots it
    /// covers): what the cluster holds, as far as read.
    var streamVersion: [DocumentID: VersionVector] = [:]
    /// Documents this node has begun to follow since it started (and so has reconciled, or will).
    var followedOnce: Set<DocumentID> = []
    /// Local documents that may hold batches never published, not yet followed since the start.
    var unpublished: Set<DocumentID> = []
    /// Per document being caught up: the subject's last sequence when the node began to follow
    /// it; once applied up to there, the node publishes what it has and the stream lacks.
    var catchUpTarget: [DocumentID: UInt64] = [:]
    /// The sequence of each document's last checkpoint written here.
    var checkpointed: [DocumentID: UInt64] = [:]
    /// When each followed document last had interest (subscribers, a publish, a catch-up), ns.
    var lastInterest: [DocumentID: UInt64] = [:]
    /// Messages applied per document since its last snapshot known here.
    var sinceSnapshot: [DocumentID: Int] = [:]
    /// This node's side of each document's trim lease.
    var leases: [DocumentID: ClusterLease] = [:]
    /// Documents destroyed in the cluster (seen in the bucket or destroyed here).
    private var knownDestroyed: Set<DocumentID> = []
    /// The document list's revision when this node last compared its names with it (renames).
    private var listRevision: UInt64 = 0
    /// Per document, the last publish queued (the next one waits for it).
    private var publishChain: [DocumentID: Task<Bool, Never>] = [:]
    /// Per document, publishes queued and not yet stored (or given up).
    var publishesPending: [DocumentID: Int] = [:]
    private var listTask: Task<Void, Never>?
    private var maintenanceTask: Task<Void, Never>?
    /// The subscription to every snapshot head written (``headWritten(_:)``).
    private var headSubscription: UInt64?
    var stopped = false
    /// Messages refused (no tag, a wrong tag, not operations).
    var refused = 0
    /// Batches published and acknowledged by JetStream.
    private(set) var published = 0
    /// Snapshots this node stored and trimmed after.
    var trims = 0
    /// Cluster snapshots this node loaded into a copy that lacked what they cover.
    var snapshotsLoaded = 0

    init(daemon: Daemon, configuration: ClusterConfiguration, daemonKey: [UInt8], subscriber: Int, loop: EventLoop,
         nodeName: String, checkpoints: ClusterCheckpoints) {
        self.daemon = daemon
        self.configuration = configuration
        key = ClusterEnvelope.clusterKey(daemonKey: daemonKey)
        subscriberID = SubscriberID(subscriber)
        self.loop = loop
        self.nodeName = nodeName
        self.checkpoints = checkpoints
    }

    /// The monotonic clock of leases and interest, in nanoseconds.
    static func now() -> UInt64 { Daemon.clock() }

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
            let snapshotBucket = try await KeyValue.open(js, bucket: configuration.snapshotBucket, replicas: configuration.replicas)
            snapshots = ClusterSnapshots(bucket: snapshotBucket, key: key)
            // Every head written (a snapshot stored, its subject about to be trimmed): a node
            // behind what it covers loads it (ClusterNode+Follow.swift).
            headSubscription = try await c.subscribe(snapshotBucket.subject("*.head"), deliver: { [weak self] m in
                let tokens = m.subject.split(separator: ".")
                guard tokens.count >= 2, let id = DocumentID(hex: String(tokens[tokens.count - 2])) else { return }
                Task { await self?.headWritten(id) }
            })
            // Heads written while the connection was down were not heard: check them all.
            _ = await c.listen { [weak self] event in
                if case .reconnected = event { Task { await self?.reconnected() } }
            }
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
        let every = configuration.maintenanceInterval
        maintenanceTask = Task { [weak self] in
            await self?.followUnpublished()
            while !Task.isCancelled {
                try? await Task.sleep(for: every)
                await self?.maintain()
            }
        }
    }

    func stop() async {
        stopped = true
        listTask?.cancel()
        maintenanceTask?.cancel()
        for id in Array(consumers.keys) {
            if let h = await daemon?.residentHost(id) { await writeCheckpoint(id, h) }
            // Its lease is not given back here: with JetStream gone, each release would wait
            // for the request timeout and hold the stop; it lapses instead.
            await unfollow(id)
        }
        await connection?.close()
    }

    /// What `listsync status` shows of the cluster.
    struct Status: Sendable {
        var servers: [String], ack: String, connected: Bool, followed: [String], published: Int, refused: Int
        var trims: Int, snapshotsLoaded: Int, leasesHeld: [String]
    }

    /// The node's cluster status now.
    func status() async -> Status {
        let now = Self.now()
        return Status(servers: configuration.servers.map(\.description), ack: configuration.acknowledgement.rawValue,
                      connected: await connection?.isConnected ?? false, followed: consumers.keys.map(\.description).sorted(),
                      published: published, refused: refused, trims: trims, snapshotsLoaded: snapshotsLoaded,
                      leasesHeld: leases.filter { $0.value.isHeld(now: now) }.keys.map(\.description).sorted())
    }

    // MARK: Documents

    /// A host was loaded or made: its batches are published from now on, and each subscriber it
    /// attaches makes the node follow the document's subject (``interested(_:)``).
    func attach(_ host: DocumentHost) async {
        guard !stopped else { return }
        let publish: @Sendable (DocumentID, [ListOperation]) async -> String? = { [weak self] id, ops in
            guard let self else { return "the cluster node is gone" }
            return await self.replicate(id, ops)
        }
        await host.setReplicator(publish, sender: subscriberID, interest: { [weak self] id in await self?.interested(id) })
    }

    /// A document was created on this node: put it in the bucket (once: a compare-and-set on
    /// the key's absence).
    func created(_ id: DocumentID, name: String, epoch: UInt64) async {
        guard let bucket, let value = Self.listEntry(name: name, epoch: epoch) else { return }
        do { try await bucket.update(id.description, value, revision: 0) } catch {
            if case let .api(_, code, _) = error, code == JetStreamError.wrongLastSequence { return }
            daemon?.log("cluster list not updated", ["document": id.description, "error": "\(error)"])
        }
    }

    /// A document is being renamed on this node: the bucket takes the new name first (key
    /// `name.<id>`, written whole: the last rename wins), and every node renames its copy when it
    /// next reads the list. Returns why the bucket did not take it (the rename is then refused),
    /// nil once it did.
    func renamed(_ id: DocumentID, name: String) async -> String? {
        guard let bucket else { return nil }
        do { try await bucket.put(Self.namePrefix + id.description, Array(name.utf8)) } catch {
            return "the cluster's document list did not take the name: \(error)"
        }
        return nil
    }

    static let namePrefix = "name."

    /// A list entry's bytes: `{"name", "epoch"}`.
    static func listEntry(name: String, epoch: UInt64) -> [UInt8]? {
        (try? JSONSerialization.data(withJSONObject: ["name": name, "epoch": epoch] as [String: Any])).map(Array.init)
    }

    /// A list entry's name and epoch, nil if it is not one.
    static func readEntry(_ bytes: [UInt8]) -> (name: String, epoch: UInt64)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
              let name = object["name"] as? String, let epoch = (object["epoch"] as? NSNumber)?.uint64Value else { return nil }
        return (name, epoch)
    }

    /// A document was destroyed on this node: the bucket says so (key `destroyed.<id>`), and
    /// every node destroys its copy when it next reads the list.
    func destroyed(_ id: DocumentID) async {
        guard let bucket, !knownDestroyed.contains(id) else { return }
        knownDestroyed.insert(id)
        await unfollow(id)
        await forget(id)
        do { try await bucket.put(Self.destroyedPrefix + id.description, Array("destroyed".utf8)) } catch {
            daemon?.log("cluster destroy not listed", ["document": id.description, "error": "\(error)"])
            knownDestroyed.remove(id)
            return
        }
        // Listed as destroyed (the id is refused from now on): its operations, snapshot and
        // lease go from the cluster. Not before: a node that died in between would leave a
        // document that every node still lists, emptied.
        if let js { _ = try? await js.purge(configuration.stream, subject: ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)) }
        await snapshots?.remove(id)
    }

    static let destroyedPrefix = "destroyed."

    /// Reads the bucket; destroys the documents destroyed elsewhere and makes those this node
    /// lacks (it follows none of them for that: only for a subscriber).
    private func readList() async {
        guard !stopped, let bucket, let daemon else { return }
        let keys: [String], revision: UInt64
        do { (keys, revision) = try await bucket.keysAndRevision() } catch {
            daemon.log("cluster list not read", ["error": "\(error)"])
            return
        }
        let names = Dictionary(await daemon.list().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        let local = Set(names.keys)
        let gone = Set(keys.filter { $0.hasPrefix(Self.destroyedPrefix) }.compactMap { DocumentID(hex: String($0.dropFirst(Self.destroyedPrefix.count))) })
        for id in gone.sorted() where !knownDestroyed.contains(id) {
            knownDestroyed.insert(id)
            await unfollow(id)
            await forget(id)
            if local.contains(id) {
                do { _ = try await daemon.destroy(id, epoch: 0, reason: "destroyed on another cluster node") } catch {
                    daemon.log("cluster destroy not applied", ["document": id.description, "error": "\(error)"])
                }
            }
        }
        // Renames: a key `name.<id>` per renamed document, read only when the bucket changed since
        // this node last looked (its revision moved), and only those keys, not every entry.
        let renamed = Set(keys.filter { $0.hasPrefix(Self.namePrefix) }.compactMap { DocumentID(hex: String($0.dropFirst(Self.namePrefix.count))) })
        func currentName(_ id: DocumentID) async -> String? {
            guard renamed.contains(id), let entry = try? await bucket.get(Self.namePrefix + id.description) else { return nil }
            return String(decoding: entry.value, as: UTF8.self)
        }
        for k in keys {
            guard let id = DocumentID(hex: k), !gone.contains(id), !local.contains(id) else { continue }
            guard let entry = try? await bucket.get(k), let (made, epoch) = Self.readEntry(entry.value) else { continue }
            let name = await currentName(id) ?? made
            do { _ = try await daemon.create(name: name, sections: [], id: id, epoch: epoch) } catch {
                daemon.log("cluster document not made", ["document": k, "error": "\(error)"])
            }
        }
        if revision != listRevision {
            for id in renamed.sorted() where local.contains(id) && !gone.contains(id) {
                guard let name = await currentName(id), name != names[id] else { continue }
                do { _ = try await daemon.rename(id, to: name, fromCluster: true) } catch {
                    daemon.log("cluster rename not applied", ["document": id.description, "error": "\(error)"])
                }
            }
        }
        listRevision = revision
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
    func replicate(_ id: DocumentID, _ ops: [ListOperation]) async -> String? {
        guard !ops.isEmpty else { return nil }
        guard !stopped else { return configuration.acknowledgement == .cluster ? "the node is stopping" : nil }
        let subject = ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)
        for piece in Self.pieces(ops, maxBytes: Self.maxPayload) {
            let (payload, headers, messageID) = ClusterEnvelope.seal(piece, document: id, subject: subject, key: key)
            let previous = publishChain[id]
            publishesPending[id, default: 0] += 1
            let task = Task { [weak self] () -> Bool in
                _ = await previous?.value
                let stored = await self?.publishUntilStored(id, subject, payload, headers, messageID) ?? false
                await self?.publishEnded(id)
                return stored
            }
            publishChain[id] = task
            if configuration.acknowledgement == .cluster, await !task.value {
                return "not stored by JetStream before the node stopped"
            }
        }
        return nil
    }

    private func publishEnded(_ id: DocumentID) {
        publishesPending[id, default: 1] -= 1
        lastInterest[id] = Self.now()
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

    func log(_ event: String, _ fields: [String: String]) { daemon?.log(event, fields) }
}
