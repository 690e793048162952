import Foundation
import ListCRDT
import ListSync
import ListSyncNATS
import ListSyncTCP

/// A daemon's part in a cluster (Docs/Cluster.md): its NATS connection, the stream of every
/// document's operations, the bucket of the document list and the bucket of snapshots and leases.
///
/// Every decision about a document (publish in order and release only once the stream holds
/// it, follow in stream order, the lease, snapshots and trims, checkpoints, interest) is its
/// ``ClusterMachine``'s, one per document this node has touched; this actor is the machines'
/// driver (`ClusterNode+Driver.swift`): it hands them events (a batch appended, a subscriber,
/// a message read, the answer to a request, a tick every
/// ``ClusterConfiguration/maintenanceInterval``) and does the I/O their actions name, reporting
/// every outcome back, failures included (logged with their typed error). The document list
/// (`ClusterNode+List.swift`) is read every ``ClusterConfiguration/listInterval``.
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
    var bucket: KeyValue?
    /// The snapshots and leases (nil until started).
    var snapshots: ClusterSnapshots?
    /// Each document's machine (made when the node first touches the document).
    var machines: [DocumentID: ClusterMachine] = [:]
    /// Each document's consumer, its reading task, and a number that tells its end from a later one's.
    var consumers: [DocumentID: (consumer: OrderedConsumer, task: Task<Void, Never>, serial: UInt64)] = [:]
    var consumerSerial: UInt64 = 0
    /// The snapshot head each document's machine last heard of (what ``ClusterMachine/Action/loadSnapshot(_:)`` reads).
    var heads: [DocumentID: ClusterSnapshots.Head] = [:]
    /// The head each document's snapshot in preparation was read after (its compare-and-set).
    var preparedHeads: [DocumentID: (head: ClusterSnapshots.Head, revision: UInt64)?] = [:]
    /// Clients waiting for their batch's release (`--ack cluster`), by ticket.
    var waiting: [UInt64: CheckedContinuation<String?, Never>] = [:]
    var nextTicket: UInt64 = 1
    /// The counts of machines dropped (destroyed documents), for status.
    var droppedCounts = ClusterMachine.Counts()
    /// Documents destroyed in the cluster (seen in the bucket or destroyed here).
    var knownDestroyed: Set<DocumentID> = []
    /// The document list's revision when this node last compared its names with it (renames).
    var listRevision: UInt64 = 0
    private var listTask: Task<Void, Never>?
    private var maintenanceTask: Task<Void, Never>?
    var stopped = false

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

    /// The machines' rules, from the configuration.
    var machineConfiguration: ClusterMachine.Configuration {
        var m = ClusterMachine.Configuration()
        m.acknowledgeAfterStream = configuration.acknowledgement == .cluster
        m.trimMessages = configuration.trimMessages
        m.leaseDuration = UInt64(configuration.leaseDuration.nanoseconds)
        m.interestGrace = UInt64(configuration.interestGrace.nanoseconds)
        m.maxPayload = Self.maxPayload
        return m
    }

    /// The largest payload published (NATS servers take 1 MiB by default).
    static let maxPayload = 256 << 10

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
            // Every head written (a snapshot stored, its subject about to be trimmed): the
            // document's machine checks it (and loads it if this copy lacks what it covers).
            _ = try await c.subscribe(snapshotBucket.subject("*.head"), deliver: { [weak self] m in
                let tokens = m.subject.split(separator: ".")
                guard tokens.count >= 2, let id = DocumentID(hex: String(tokens[tokens.count - 2])) else { return }
                Task { await self?.event(id, .headWritten, onlyIfKnown: true) }
            })
            // Heads written while the connection was down were not heard: every machine checks.
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
                do { try await Task.sleep(for: interval) } catch { return }
                await self?.readList()
            }
        }
        let every = configuration.maintenanceInterval
        maintenanceTask = Task { [weak self] in
            await self?.startDocuments()
            while !Task.isCancelled {
                do { try await Task.sleep(for: every) } catch { return }
                await self?.tick()
            }
        }
    }

    /// Stops: each machine refuses the batches the stream has not acknowledged, writes its
    /// checkpoint and stops its consumer. Leases are not given back: with JetStream gone, each
    /// release would wait for the request timeout and hold the stop; they lapse instead.
    func stop() async {
        stopped = true
        listTask?.cancel()
        maintenanceTask?.cancel()
        for id in Array(machines.keys) {
            let durable = await daemon?.residentHost(id)?.durableVersion ?? VersionVector()
            await event(id, .stopping(durable: durable))
        }
        for (_, c) in consumers {
            c.task.cancel()
            await c.consumer.stop()
        }
        consumers = [:]
        await connection?.close()
    }

    /// What `listsync status` shows of the cluster.
    struct Status: Sendable {
        var servers: [String], ack: String, connected: Bool, followed: [String], published: Int, refused: Int
        var trims: Int, snapshotsLoaded: Int, leasesHeld: [String]
    }

    /// The node's cluster status now.
    ///
    /// - Complexity: O(documents touched).
    func status() async -> Status {
        let now = Self.now()
        var totals = droppedCounts
        for m in machines.values {
            totals.published += m.counts.published
            totals.refused += m.counts.refused
            totals.trims += m.counts.trims
            totals.snapshotsLoaded += m.counts.snapshotsLoaded
        }
        return Status(servers: configuration.servers.map(\.description), ack: configuration.acknowledgement.rawValue,
                      connected: await connection?.isConnected ?? false,
                      followed: machines.filter { $0.value.isFollowing }.keys.map(\.description).sorted(),
                      published: totals.published, refused: totals.refused, trims: totals.trims, snapshotsLoaded: totals.snapshotsLoaded,
                      leasesHeld: machines.filter { $0.value.holdsLease(now: now) }.keys.map(\.description).sorted())
    }

    // MARK: Documents

    /// A host was loaded or made: its batches are published from now on, and each subscriber it
    /// attaches is interest in the document here.
    func attach(_ host: DocumentHost) async {
        guard !stopped else { return }
        let publish: @Sendable (DocumentID, [ListOperation]) async -> String? = { [weak self] id, ops in
            guard let self else { return "the cluster node is gone" }
            return await self.replicate(id, ops)
        }
        await host.setReplicator(publish, sender: subscriberID, interest: { [weak self] id in
            await self?.event(id, .interest(now: Self.now()))
        })
    }

    /// A batch appended locally: its machine publishes it; with `--ack cluster`, returns once
    /// the stream acknowledged every piece of it.
    ///
    /// - Returns: nil when the batch may be released; why not when the node stopped first.
    func replicate(_ id: DocumentID, _ ops: [ListOperation]) async -> String? {
        guard !ops.isEmpty else { return nil }
        let ticket = nextTicket
        nextTicket += 1
        var m = machine(id)
        let actions = m.handle(.appended(ticket: ticket, ops))
        machines[id] = m
        if actions.contains(.release(ticket: ticket)) {
            await run(id, actions)
            return nil
        }
        if actions.contains(.refuse(ticket: ticket)) {
            await run(id, actions)
            return Self.notStored
        }
        return await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            waiting[ticket] = c
            Task { await self.run(id, actions) }
        }
    }

    static let notStored = "not stored by JetStream before the node stopped"

    /// Document `id`'s machine, made from its read checkpoint if this node has none yet.
    func machine(_ id: DocumentID) -> ClusterMachine {
        if let m = machines[id] { return m }
        let checkpoint = checkpoints.read(id).flatMap { c in c.versionVector.map { ClusterMachine.Position(sequence: c.sequence, version: $0) } }
        return ClusterMachine(node: nodeName, configuration: machineConfiguration, checkpoint: checkpoint)
    }

    /// Starts each local document that may hold batches the stream lacks (its durable version
    /// is not within its read checkpoint), so that its machine publishes them even if nobody
    /// reads the document here.
    func startDocuments() async {
        guard let daemon else { return }
        for info in await daemon.list() where !stopped {
            let host: DocumentHost
            do { host = try await daemon.host(info.id) } catch {
                log("cluster document not started", ["document": info.id.description, "error": "\(error)"])
                continue
            }
            let version = await host.durableVersion
            if version == VersionVector() { continue }
            let covered = checkpoints.read(info.id)?.versionVector.map { $0.includes(version) } ?? false
            await event(info.id, .started(mayHoldUnpublished: !covered, now: Self.now()))
        }
    }

    /// Every ``ClusterConfiguration/maintenanceInterval``: each machine hears the time, what is
    /// durable here and whether a subscriber is attached.
    func tick() async {
        guard !stopped, let daemon else { return }
        for id in Array(machines.keys) {
            let host = await daemon.residentHost(id)
            let durable = await host?.durableVersion ?? VersionVector()
            let subscribed = await (host?.subscriberCount ?? 0) > 0
            await event(id, .tick(now: Self.now(), durable: durable, subscribed: subscribed))
        }
    }

    /// The connection came back: heads written meanwhile were not heard.
    func reconnected() async {
        for id in Array(machines.keys) { await event(id, .headWritten) }
    }

    /// Forgets document `id` (destroyed): its machine refuses what waits, its consumer stops,
    /// its checkpoint file goes.
    func drop(_ id: DocumentID) async {
        if machines[id] != nil { await event(id, .stopping(durable: VersionVector())) }
        if let m = machines.removeValue(forKey: id) {
            droppedCounts.published += m.counts.published
            droppedCounts.refused += m.counts.refused
            droppedCounts.trims += m.counts.trims
            droppedCounts.snapshotsLoaded += m.counts.snapshotsLoaded
        }
        await stopConsumer(id)
        heads[id] = nil
        preparedHeads[id] = nil
        do { try checkpoints.remove(id) } catch {
            log("cluster checkpoint not removed", ["document": id.description, "error": "\(error)"])
        }
    }

    func log(_ event: String, _ fields: [String: String]) { daemon?.log(event, fields) }
}
