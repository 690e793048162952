import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncHTTP
import ListSyncTCP
import Synchronization
import ListSyncFiles

/// The peer daemon: documents durable in a data folder, served over TCP to clients and peers
/// that hold the key (Docs/Daemon.md).
///
/// ``start()`` takes the data folder's lock, reads or creates the key, listens, and connects to
/// the configured peers. Documents are loaded when first asked for and unloaded when idle.
/// ``stop()`` stops accepting, closes every connection, snapshots large logs and releases the lock.
public actor Daemon {
    /// What the daemon was started with.
    public nonisolated let configuration: DaemonConfiguration
    /// The key's path.
    public nonisolated let keyPath: String
    /// Whether ``start()`` created the key file.
    public private(set) var keyCreated = false
    /// The address it listens on (with the port chosen, when 0 was asked), once started.
    public private(set) var address: SocketAddress?
    let loop: EventLoop
    private var folder: DataFolder?
    private(set) var key: [UInt8] = []
    private(set) var replica = ReplicaID(1)
    private var listener: TCPListener?
    /// The listener again, for the refusal counts that `/metrics` reads without this actor.
    nonisolated let listenerForMetrics = Mutex<TCPListener?>(nil)
    /// The data folder's shared log once started, for ``storageUsage(_:)`` from any thread.
    nonisolated let sharedLogHandle = Mutex<SharedLog?>(nil)
    private var acceptTask: Task<Void, Never>?
    private(set) var hosts: [DocumentID: DocumentHost] = [:] {
        didSet { metrics.setResident(hosts.count) }
    }
    private var loading: [DocumentID: Task<DocumentHost, any Error>] = [:]
    /// Documents being destroyed (``destroy(_:epoch:reason:)``): not loaded, created or
    /// subscribed to while their files go.
    private var destroying: Set<DocumentID> = []
    private var connections: [ObjectIdentifier: DaemonConnection] = [:]
    private var devices: DeviceRegistry
    /// The last reason each document could not be loaded, as logged (once per reason).
    private var loadFailuresLogged: [DocumentID: String] = [:]
    /// The last failure to read the devices file (logged once), and the device connections whose
    /// access was ended (counted once).
    private var devicesFileError: String?
    private var accessEnded: Set<ObjectIdentifier> = []
    private var deviceWatch: Task<Void, Never>?
    /// Numbers for connections and peer links (their ``SubscriberID``s).
    private var nextSubscriber = 1
    /// Static (`--peer`) and discovered peer links.
    var peers: [PeerLink] = []
    /// Cluster mode's node (Docs/Cluster.md), nil outside it.
    var cluster: ClusterNode?
    private var housekeeping: Task<Void, Never>?
    /// The background sampler of the bytes on disk (``sampleDiskUsage()``).
    var diskSampler: Task<Void, Never>?
    var udp: UDPSocket?
    var announcer: Task<Void, Never>?
    /// Discovery's memory (`nil` while it is off), consulted on the event loop's thread for each
    /// datagram without this actor.
    nonisolated let discoveryState = Mutex<DiscoveryState?>(nil)
    /// When each discovered peer link (by its label) last heard an announcement, monotonic ns.
    var discoveredHeard: [String: UInt64] = [:]
    let metrics = DaemonMetrics()
    private var stopping = false
    var adminServer: HTTPServer?
    /// The admin token file, when the admin port requires a token (Docs/Security.md, "Admin port").
    public internal(set) var adminTokenPath: String?
    /// Whether ``start()`` created the admin token file.
    public internal(set) var adminTokenCreated = false
    /// The admin HTTP server's address, when `--admin` was given and it started.
    public var adminAddress: SocketAddress? { adminServer?.address }
    var isStopping: Bool { stopping }
    var handshakes: HandshakeGauges { listener?.handshakes ?? HandshakeGauges() }

    func handshakeJSON() -> [String: Int] {
        let h = handshakes
        return ["in_progress": h.inHandshake, "peak": h.peakInHandshake, "completed": h.completed,
                "failed_proofs": h.failedProofs, "evicted": h.evicted, "pool": configuration.tcp.maxUnauthenticated]
    }

    /// A daemon for `configuration`, not started.
    public init(configuration: DaemonConfiguration, loop: EventLoop = .shared) {
        self.configuration = configuration
        self.keyPath = configuration.keyFile ?? configuration.dataFolder + "/key"
        self.loop = loop
        devices = DeviceRegistry(dataFolder: configuration.dataFolder, fileSystem: configuration.fileSystem)
    }

    /// Opens the data folder, reads or creates the key, listens and connects to the peers.
    ///
    /// - Throws: ``DaemonError`` naming what stopped it (the folder locked by another daemon, a
    ///   key file others can read, the port in use).
    /// Why listening failed, in words: an address in use says so (not "errno 98").
    static func listenProblem(_ error: any Error) -> String {
        if case let .system(call, code)? = error as? TransportError, code == EADDRINUSE {
            return "the address is already in use (\(call)): another daemon or program listens there; stop it, or choose another port with --listen HOST:PORT"
        }
        return "\(error)"
    }

    public func start() async throws(DaemonError) {
        // Missing folders above the data folder are made 0700 (so that a umask such as 277
        // cannot leave one the owner cannot write to); the data folder itself 0700 (DataFolder),
        // refused if group or others can write to it.
        let parent = SecretFile.folder(of: configuration.dataFolder)
        if !FileManager.default.fileExists(atPath: parent) {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .dataFolder("cannot create \(parent): \(error.localizedDescription)")
            }
        }
        do {
            folder = try DataFolder(root: configuration.dataFolder, fileSystem: configuration.fileSystem,
                                    sharedLog: configuration.sharedLog)
            if let shared = folder?.sharedLog {
                sharedLogHandle.withLock { $0 = shared }
                log("shared log opened", ["recovery": shared.recoveryReport.description])
            }
        } catch {
            throw .dataFolder("\(error)")
        }
        do {
            if configuration.keyFile == nil {
                (key, keyCreated) = try KeyFile.readOrCreate(keyPath, fileSystem: configuration.fileSystem)
            } else {
                key = try KeyFile.read(keyPath, fileSystem: configuration.fileSystem)
            }
        } catch {
            folder?.close()
            throw .key(error.description)
        }
        // A devices file that does not parse would leave no row: every device would be told its
        // credential was revoked. Refused at the start instead, naming the file (while running, a
        // damaged file keeps the rows read before).
        do { try devices.reload() } catch {
            folder?.close()
            throw .devices(error.description)
        }
        replica = Self.daemonReplica(in: configuration.dataFolder, fileSystem: configuration.fileSystem)
        metrics.setOnDisk((try? folder?.count()) ?? 0)
        do {
            listener = try await TCPListener.listen(host: configuration.listenHost, port: configuration.listenPort,
                                                    key: key, options: configuration.tcp, loop: loop)
        } catch {
            folder?.close()
            throw .listen("\(configuration.listenHost):\(configuration.listenPort): \(Self.listenProblem(error))")
        }
        address = listener?.address
        let l = listener!
        listenerForMetrics.withLock { $0 = l }
        acceptTask = Task { [weak self] in
            while let t = try? await l.acceptTCP() {
                guard let self else { await t.close(); return }
                await self.adopt(t)
            }
        }
        for p in configuration.peers {
            let link = PeerLink(daemon: self, number: subscriberNumber(), host: p.host, port: p.port, key: key,
                                options: configuration.tcp, backoff: configuration.peerBackoff, loop: loop)
            peers.append(link)
            await link.start()
        }
        if let c = configuration.cluster {
            let node = ClusterNode(daemon: self, configuration: c, daemonKey: key, subscriber: subscriberNumber(), loop: loop,
                                   nodeName: String(replica.rawValue, radix: 16),
                                   checkpoints: ClusterCheckpoints(dataFolder: configuration.dataFolder, fileSystem: configuration.fileSystem))
            cluster = node
            do { try await node.start() } catch {
                await stop()
                throw error
            }
        }
        if let a = configuration.admin {
            do { adminServer = try await startAdmin(host: a.host, port: a.port) } catch {
                await stop()
                throw error
            }
        }
        if let d = configuration.discovery {
            do { try await startDiscovery(d) } catch {
                log("discovery off", ["reason": "\(error)"])
            }
        }
        housekeeping = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await self?.tidy()
            }
        }
        sampleDiskUsage()
        checkDevices()
        deviceWatch = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.deviceCheckInterval)
                await self?.checkConnectedDevices()
            }
        }
    }

    /// How often the devices file is reread and expiries checked: a revoked device's connections
    /// close within this (and the close's own time).
    static let deviceCheckInterval: Duration = .milliseconds(250)

    /// The periodic check: only while a device is connected (with none, a device's connection
    /// rereads the file itself in ``adopt(_:)``).
    func checkConnectedDevices() {
        guard connections.values.contains(where: { $0.claims != nil }) else { return }
        checkDevices()
    }

    /// Rereads the devices file and ends the access of every connected device whose credential
    /// is revoked, unknown or expired (once per connection).
    ///
    /// - Complexity: O(c) for c connections, plus the file's read.
    func checkDevices() {
        do {
            try devices.reload()
            devicesFileError = nil
        } catch {
            // A devices file that does not parse keeps the rows read before; said once per failure.
            if devicesFileError != error.description { log("devices file unreadable", ["reason": error.description]) }
            devicesFileError = error.description
        }
        let now = UInt64(Date().timeIntervalSince1970)
        for (id, c) in connections where !accessEnded.contains(id) {
            guard let claims = c.claims, let (code, text) = devices.refusal(for: claims, now: now) else { continue }
            accessEnded.insert(id)
            metrics.deviceRefused()
            log("device refused", ["device": claims.idText, "name": claims.name, "reason": "\(code)"])
            Task { await c.endAccess(code, text: text) }
        }
    }

    /// Stops accepting, closes every connection and peer link, snapshots large logs, closes the
    /// stores and releases the data folder. Everything acknowledged was durable already.
    public func stop() async {
        guard !stopping else { return }
        stopping = true
        housekeeping?.cancel()
        deviceWatch?.cancel()
        diskSampler?.cancel()
        announcer?.cancel()
        await udp?.close()
        await adminServer?.close()
        await listener?.close()
        acceptTask?.cancel()
        await cluster?.stop()
        for p in peers { await p.stop() }
        for c in connections.values { await c.close(reason: "the daemon is stopping") }
        connections = [:]
        for (_, h) in hosts {
            await h.snapshotIfLarge(logBytes: configuration.snapshotLogBytes)
            await h.close()
        }
        hosts = [:]
        folder?.close()
        folder = nil
    }

    // MARK: Documents

    /// The resident host of document `id`, loading it (recovering its store) if needed.
    ///
    /// - Throws: ``DaemonError/unknownDocument(_:)`` or a storage failure.
    func host(_ id: DocumentID) async throws(DaemonError) -> DocumentHost {
        if destroying.contains(id) { throw .destroyed(id) }
        if let h = hosts[id] {
            if await !h.isClosed { return h }
            if hosts[id] === h { hosts[id] = nil }   // unloaded meanwhile: load it again
        }
        if let h = hosts[id] { return h }
        guard let folder else { throw .stopping }
        if let pending = loading[id] {
            do { return try await pending.value } catch { throw DaemonError.from(error) }
        }
        let replica = replica
        let clock = Self.clock
        let limits = configuration.pendingLimits
        let options = storeOptions()
        let maxFrame = configuration.tcp.maxPayload
        let snapshotLogBytes = configuration.snapshotLogBytes
        let log = log
        let compaction = compactionSettings
        let metrics = metrics
        // Recovery reads and replays the document's files: off this actor and the cooperative pool.
        let task = Task { () throws -> DocumentHost in
            try await offPool {
                let entry = try folder.list().first { $0.id == id }
                guard let entry else {
                    if folder.isDestroyed(id) { throw DaemonError.destroyed(id) }
                    throw DaemonError.unknownDocument(id)
                }
                let (store, document) = try folder.open(id, replica: replica, options: options)
                return DocumentHost(id: id, name: entry.name, store: store, document: document,
                                    epoch: try store.epoch, pendingLimits: limits, maxFrame: maxFrame, clock: clock,
                                    reopen: { try folder.open(id, replica: replica, options: options) }, log: log,
                                    snapshotLogBytes: snapshotLogBytes, compaction: compaction.policy, wallClock: compaction.wallClock,
                                    stabilityPath: folder.folder(of: id) + "/stability", fileSystem: compaction.fileSystem,
                                    metrics: metrics)
            }
        }
        loading[id] = task
        defer { loading[id] = nil }
        do {
            let h = try await task.value
            if isDestroyed(id, in: folder) {
                // Destroyed while it loaded: no host for it, and its store closed.
                await h.close()
                throw DaemonError.destroyed(id)
            }
            if let made = hosts[id], made !== h {
                // Created here while it loaded (a peer's copy): one store per document, the first.
                await h.close()
                return made
            }
            hosts[id] = h
            metrics.loaded()
            if let cluster { await cluster.attach(h) }
            return h
        } catch {
            if case DaemonError.destroyed? = error as? DaemonError { throw .destroyed(id) }
            if let made = hosts[id] { return made }
            let failure = DaemonError.from(error)
            if case .storage = failure, loadFailuresLogged[id] != failure.description {
                // A damaged snapshot or log: said in the log once per document and reason (the
                // client is told too, and may ask again and again).
                loadFailuresLogged[id] = failure.description
                log("document could not be loaded", ["document": id.description, "reason": failure.description])
            }
            throw failure
        }
    }

    /// What document `id` holds in the shared log beyond its snapshot (bytes of its records there)
    /// and when its newest record there was made durable (ms since 1970, if since the daemon
    /// started or found at its start); nil without a shared log. Its folder has the rest (its
    /// name and snapshot). Safe from any thread.
    public nonisolated func storageUsage(_ id: DocumentID) -> (logBytes: Int64, lastWriteMillis: UInt64?)? {
        guard let log = sharedLogHandle.withLock({ $0 }) else { return nil }
        return (log.uncoveredBytes(of: id), log.lastWrite(of: id))
    }

    /// Whether document `id` is being destroyed or was (its deletion record).
    private func isDestroyed(_ id: DocumentID, in folder: DataFolder) -> Bool {
        destroying.contains(id) || folder.isDestroyed(id)
    }

    /// Creates a document with `sections` (made by this daemon's replica), or, with `id` (a
    /// peer's copy), returns the existing one or makes an empty one with that id and `epoch`.
    func create(name: String, sections: [String], id: DocumentID?, epoch: UInt64) async throws(DaemonError)
        -> (DocumentID, UInt64) {
        guard let folder else { throw .stopping }
        if id == nil, let why = DocumentInfo.nameProblem(name) { throw .invalidName(why) }
        // A destroyed id is never made again, whoever holds a copy (Docs/Daemon.md, "Destroying a document").
        if let id, isDestroyed(id, in: folder) { throw .destroyed(id) }
        if let id, let existing = try? await host(id) { return (id, await existing.epoch) }
        // Another create of this id may have made it while this one waited: from this check to
        // `hosts[newID] = h` nothing awaits, so one store per document whatever the races.
        if let id, let made = hosts[id] { return (id, await made.epoch) }
        // Counted at start and at each create: no listing of the folder per create.
        let count = metrics.documentsOnDisk
        guard count < configuration.maxDocuments else { throw .limit("\(count) documents: the limit") }
        let newID: DocumentID
        do { newID = try folder.create(name: name, id: id) } catch { throw DaemonError.from(error) }
        metrics.setOnDisk(count + 1)
        log("document created", ["id": newID.description, "name": name, "from": id == nil ? "client" : "peer"])
        var options = storeOptions()
        let reopenOptions = options
        if epoch != 0 { options.newEpoch = { epoch } }
        let h: DocumentHost
        do {
            let (store, document) = try folder.open(newID, replica: replica, options: options)
            let replica = replica
            h = DocumentHost(id: newID, name: name, store: store, document: document, epoch: try store.epoch,
                             pendingLimits: configuration.pendingLimits, maxFrame: configuration.tcp.maxPayload, clock: Self.clock,
                             reopen: { try folder.open(newID, replica: replica, options: reopenOptions) }, log: log, held: true,
                             snapshotLogBytes: configuration.snapshotLogBytes, compaction: compactionSettings.policy,
                             wallClock: compactionSettings.wallClock, stabilityPath: folder.folder(of: newID) + "/stability",
                             fileSystem: compactionSettings.fileSystem, metrics: metrics)
        } catch { throw DaemonError.from(error) }
        hosts[newID] = h
        metrics.loaded()
        // Cluster mode: its sections, and every later batch, are published.
        if let cluster { await cluster.attach(h) }
        // Held (not unloaded for want of a subscriber) until its sections are written.
        defer { Task { await h.release() } }
        // A document made here (not a peer's copy) starts with the sections asked for.
        if id == nil, !sections.isEmpty {
            let names = sections
            var doc = await h.document
            var ops: [ListOperation] = []
            for (i, n) in names.enumerated() {
                if let op = try? doc.insertSection(at: i, value: Data(n.utf8)) { ops.append(op) }
            }
            try await h.receiveOwn(ops)
        }
        let madeEpoch = await h.epoch
        // Cluster mode: every document made here goes into the cluster's list (a client's, a
        // device's with its own id; for a copy of the list's own, a compare-and-set that loses).
        if let cluster { await cluster.created(newID, name: name, epoch: madeEpoch) }
        if id == nil {
            let local = await h.localDescription
            for p in peers { await p.documentCreated(local) }
        }
        // Connected peers that follow the list hear of it at once (they have no link to us).
        let info = DocumentInfo(id: newID, name: name, epoch: madeEpoch, operations: 0)
        for c in connections.values { await c.announce(info) }
        return (newID, madeEpoch)
    }

    /// Destroys document `id` (Docs/Daemon.md, "Destroying a document"): its subscribers hear
    /// `destroyed` and are detached, its host closes, its deletion record is written durably,
    /// then its files are removed, and the peers are told. `epoch` 0: whatever epoch it is at;
    /// another: only at that epoch. Destroying a destroyed document answers its record's epoch
    /// (and finishes a removal left half done).
    ///
    /// - Returns: the epoch the document had.
    /// - Throws: ``DaemonError/unknownDocument(_:)``, ``DaemonError/epochMismatch(_:epoch:)``, or
    ///   a storage failure (the record may be written: the document is then destroyed, and the
    ///   removal is finished at the next start).
    func destroy(_ id: DocumentID, epoch: UInt64, reason: String) async throws(DaemonError) -> UInt64 {
        guard let folder else { throw .stopping }
        if let record = try? folder.destroyedRecord(id) {
            try? folder.remove(id)
            return record.epoch
        }
        guard !destroying.contains(id) else { throw .destroyed(id) }
        let h: DocumentHost?
        do { h = try await host(id) } catch {
            // A document that cannot be loaded (a damaged store) can still be destroyed, at any epoch.
            guard case .storage = error, epoch == 0, (try? folder.list())?.contains(where: { $0.id == id }) == true else { throw error }
            log("destroying a document that does not load", ["id": id.description, "error": error.description])
            h = nil
        }
        let current = await h?.epoch ?? 0
        guard epoch == 0 || epoch == current else { throw .epochMismatch(id, epoch: current) }
        guard !destroying.contains(id) else { throw .destroyed(id) }
        destroying.insert(id)
        defer { destroying.remove(id) }
        if let h {
            await h.destroy(reason: "document \(id) was destroyed (\(reason)); its id is not used again")
            if hosts[id] === h { hosts[id] = nil }
            metrics.unloaded()
        }
        do { try folder.destroy(id, epoch: current, time: Self.unixMillis()) } catch {
            log("document destroy failed", ["id": id.description, "error": error.description])
            throw DaemonError.from(error)
        }
        metrics.setOnDisk(max(0, metrics.documentsOnDisk - 1))
        log("document destroyed", ["id": id.description, "name": await h?.name ?? "", "epoch": String(current, radix: 16), "by": reason])
        for c in connections.values { await c.announceDestroyed(id, epoch: current) }
        for p in peers { await p.destroyOnPeer(id) }
        await cluster?.destroyed(id)
        return current
    }

    /// Renames document `id` to `name` (Docs/Daemon.md, "Renaming a document"): the name file is
    /// written durably, a resident host takes the new name (later subscribers hear it), and every
    /// connection that listed the documents hears the new info. Peers are not told; in cluster mode
    /// the cluster's document list takes the name first, and the other nodes take it from there.
    ///
    /// - Returns: the document's info with its new name.
    /// - Throws: ``DaemonError/invalidName(_:)`` (nothing written), ``DaemonError/unknownDocument(_:)``,
    ///   ``DaemonError/destroyed(_:)`` or a storage failure.
    func rename(_ id: DocumentID, to name: String, fromCluster: Bool = false) async throws(DaemonError) -> DocumentInfo {
        guard let folder else { throw .stopping }
        if let why = DocumentInfo.nameProblem(name) { throw .invalidName(why) }
        if isDestroyed(id, in: folder) { throw .destroyed(id) }
        // Cluster mode: the cluster's list first (every node takes its names from it), then here.
        if !fromCluster, let cluster, let failure = await cluster.renamed(id, name: name) { throw .cluster(failure) }
        do { try folder.rename(id, to: name) } catch {
            throw DaemonError.from(error)
        }
        // A host loading now may have read the old name: it takes the new one once loaded.
        if let pending = loading[id] { _ = try? await pending.value }
        var info = DocumentInfo(id: id, name: name, epoch: 0, operations: 0)
        if let h = hosts[id] {
            await h.rename(name)
            info.epoch = await h.epoch
            info.operations = await h.document.operationCount
        }
        log("document renamed", ["id": id.description, "name": name])
        for c in connections.values { await c.announce(info) }
        return info
    }

    /// The ids of the destroyed documents (their deletion records).
    func destroyedIDs() -> Set<DocumentID> {
        (try? folder?.destroyedIDs()) ?? []
    }

    /// Document `id`'s host if it is loaded (none is loaded for the asking).
    func residentHost(_ id: DocumentID) -> DocumentHost? { hosts[id] }

    /// Every document in the data folder.
    func list() async -> [DocumentInfo] {
        guard let folder, let entries = try? folder.list() else { return [] }
        var out: [DocumentInfo] = []
        for e in entries {
            if let h = hosts[e.id] {
                out.append(DocumentInfo(id: e.id, name: e.name, epoch: await h.epoch, operations: await h.document.operationCount))
            } else {
                out.append(DocumentInfo(id: e.id, name: e.name, epoch: 0, operations: 0))
            }
        }
        return out
    }

    static func unixMillis() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// A peer created a document here: tell the other peers.
    func relayCreated(_ document: PeerSession.LocalDocument, except: PeerLink?) async {
        for p in peers where p !== except { await p.documentCreated(document) }
    }

    // MARK: Connections

    func subscriberNumber() -> Int {
        defer { nextSubscriber += 1 }
        return nextSubscriber
    }

    private func adopt(_ transport: TCPTransport) async {
        let c = DaemonConnection(transport: transport, daemon: self, number: subscriberNumber())
        connections[ObjectIdentifier(c)] = c
        metrics.connected()
        var fields = ["peer": transport.remoteAddress.description]
        if let claims = transport.peerClaims {
            fields["device"] = claims.idText
            fields["name"] = claims.name
            // The file as it is now: a device added or revoked a moment ago counts at once.
            checkDevices()
        }
        log("connection opened", fields)
        Task { [weak self] in
            await c.run()
            await self?.forget(c)
        }
    }

    private func forget(_ c: DaemonConnection) {
        connections[ObjectIdentifier(c)] = nil
        accessEnded.remove(ObjectIdentifier(c))
        metrics.disconnected()
        log("connection closed", ["peer": c.transport.remoteAddress.description,
                                  "reason": c.transport.closeReason?.description ?? "closed"])
    }

    /// Logs one event through the configuration's sink.
    nonisolated func log(_ event: String, _ fields: [String: String]) {
        configuration.log?(event, fields)
    }

    /// Compacts the documents that are due (quiet now: a last client gone, an interval over),
    /// then unloads idle documents (no subscriber, unused for `idleUnload`, or over the resident
    /// limit).
    private func tidy() async {
        let now = Self.clock()
        var idle: [(DocumentID, UInt64)] = []
        for (id, h) in hosts {
            await h.compactIfDue()
            if await h.subscriberCount == 0 { idle.append((id, await h.lastUsed)) }
        }
        idle.sort { $0.1 < $1.1 }
        var excess = hosts.count - configuration.maxResidentDocuments
        for (id, used) in idle {
            guard excess > 0 || now &- used >= configuration.idleUnload.nanoseconds else { continue }
            // Subscribed to since the check above (this actor let others in while it awaited)?
            // Then it stays.
            guard let h = hosts[id], await h.unloadIfIdle(snapshotLogBytes: configuration.snapshotLogBytes) else { continue }
            if hosts[id] === h { hosts[id] = nil }
            metrics.unloaded()
            excess -= 1
        }
        for p in peers { await p.tick() }
        for h in hosts.values { await h.peerTick() }
        await dropSilentPeers()
        await checkpoint()
    }

    /// Snapshots the documents that hold the shared log's oldest segment once it has more than
    /// ``DaemonConfiguration/checkpointSegments`` (loading those not resident), so that the
    /// segment is deleted: the log stays a few segments long whatever the documents do. At most
    /// 16 documents a turn.
    private func checkpoint() async {
        guard let log = folder?.sharedLog else { return }
        for id in log.documentsHolding(moreThan: configuration.checkpointSegments).prefix(16) {
            guard let h = try? await host(id) else { continue }
            await h.checkpoint()
        }
    }

    /// The resident documents whose store failed, with the reason (disk full: they acknowledge
    /// nothing until their next batch reopens the store). Read by status and readiness.
    func failingStores() async -> [String: String] {
        var out: [String: String] = [:]
        for (id, h) in hosts { if let e = await h.storeFailure { out[id.description] = e } }
        return out
    }

    /// The status as a JSON object (what `listsync status` prints).
    func statusJSON() async -> String {
        _ = try? devices.reload()   // the rows as they are now (the periodic read runs only while devices connect)
        var resident: [[String: Any]] = []
        let failing = await failingStores()
        for (id, h) in hosts {
            var entry: [String: Any] = ["id": id.description, "name": await h.name, "operations": await h.document.operationCount,
                                        "subscribers": await h.subscriberCount]
            if let failure = await h.storeFailure { entry["store_error"] = failure }
            let compaction = await h.compactionStatus
            entry["senders"] = compaction.senders
            entry["retired"] = compaction.retired
            if let floor = compaction.floor { entry["floor"] = floor }
            if compaction.lastCompaction > 0 { entry["last_compaction"] = compaction.lastCompaction }
            if compaction.refusedCompacted > 0 { entry["refused_compacted"] = compaction.refusedCompacted }
            if let waits = compaction.waitsFor { entry["compaction_waits_for"] = waits }
            if let peers = compaction.peers {
                entry["peers"] = peers
                entry["peers_at_version"] = compaction.peersAtVersion
            }
            resident.append(entry)
        }
        var peerList: [[String: Any]] = []
        for p in peers { peerList.append(["address": p.label, "connected": await p.isConnected, "discovered": p.discovered]) }
        let onDisk = metrics.documentsOnDisk
        let clusterStatus = await cluster?.status()
        var object: [String: Any] = [
            "address": address?.description ?? "",
            "data_folder": configuration.dataFolder,
            "documents_on_disk": onDisk,
            "documents_resident": hosts.count,
            "connections": connections.count,
            "poller": loop.pollerKind.rawValue,
            "compaction": compactionSettings.policy == nil ? "off" : "on",
            "peers": peerList,
            "resident": resident,
            // Documents whose store failed (disk full, I/O error): they acknowledge nothing until
            // a write succeeds again (each new batch retries by reopening the store).
            "storage": failing.isEmpty ? "ok" : "failing",
            "store_errors": failing,
            "refused_connections": listener?.refused ?? [:],
            "handshakes": handshakeJSON(),
            "devices": ["issued": devices.records.count, "revoked": devices.records.values.filter { $0.revoked != nil }.count,
                        "connected": connections.values.filter { $0.claims != nil }.count,
                        "refused_total": metrics.state.withLock { $0.devicesRefused }],
            "rss_bytes": DaemonMetrics.residentBytes(),
            "bytes_on_disk": metrics.diskBytes ?? 0,
            "limits": [
                "max_connections": configuration.tcp.maxConnections,
                "max_unauthenticated": configuration.tcp.maxUnauthenticated,
                "max_per_address": configuration.tcp.maxPerAddress,
                "frame_bytes": configuration.tcp.frameLimit,
                "send_queue_bytes": configuration.tcp.sendQueueLimit,
                "handshake_timeout_ms": Int(configuration.tcp.handshakeTimeout.nanoseconds / 1_000_000),
                "idle_timeout_ms": Int(configuration.tcp.idleTimeout.nanoseconds / 1_000_000),
                "max_resident_documents": configuration.maxResidentDocuments,
                "max_documents": configuration.maxDocuments,
                "pending_operations_per_document": configuration.pendingLimits.maxOperations,
                "pending_bytes_per_document": configuration.pendingLimits.maxBytes,
            ] as [String: Any],
        ]
        for (k, v) in metrics.snapshot() { object[k] = v }
        if let c = clusterStatus {
            // Cluster mode (Docs/Cluster.md): batches published and acknowledged by JetStream,
            // messages refused (no tag or a wrong one), documents followed (read from their
            // subjects: those with interest here), snapshots stored and trims, snapshots loaded,
            // trim leases held.
            object["cluster"] = ["servers": c.servers, "ack": c.ack, "connected": c.connected, "documents_followed": c.followed.count,
                                 "followed": c.followed, "published": c.published, "refused": c.refused, "trims": c.trims,
                                 "snapshots_loaded": c.snapshotsLoaded, "leases_held": c.leasesHeld] as [String: Any]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Helpers

    /// The store options of every document: recovery replays under the daemon's own buffer limits,
    /// so an operation refused live for a full buffer is refused at recovery too.
    private func storeOptions() -> StoreOptions {
        var options = StoreOptions()
        options.pendingLimits = configuration.pendingLimits
        return options
    }

    static let clock: @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }

    /// What a document host needs to compact: the policy (nil when compaction is off, or in a
    /// cluster, whose JetStream relays it cannot see past; with peers, the peers' stability
    /// gossip decides: Docs/Semantics.md §7, "Peers"), the wall clock and the file funnel.
    var compactionSettings: (policy: CompactionPolicy?, wallClock: @Sendable () -> UInt64, fileSystem: FileSystem) {
        (configuration.cluster != nil ? nil : configuration.compaction, configuration.wallClock, configuration.fileSystem)
    }

    /// The daemon's own replica id (for the sections it makes, and its node id in discovery),
    /// drawn once per data folder and kept in `DIR/replica` (mode 0600, written atomically).
    static func daemonReplica(in folder: String, fileSystem: FileSystem) -> ReplicaID {
        let path = folder + "/replica"
        if let bytes = try? fileSystem.readFile(path),
           let v = UInt64(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), radix: 16), v != 0 {
            return ReplicaID(v)
        }
        let r = ReplicaID.random()
        try? fileSystem.writeAtomically(Array(String(r.rawValue, radix: 16).utf8), to: path, folder: folder)
        return r
    }

    /// Bytes in the files under `path`: a walk of the whole tree (what ``sampleDiskUsage()`` runs
    /// in the background, never per request).
    ///
    /// - Complexity: O(f) `stat`s for f files.
    static func diskUsage(_ path: String) -> Int {
        guard let e = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        while let f = e.nextObject() as? String {
            if let s = try? FileManager.default.attributesOfItem(atPath: path + "/" + f)[.size] as? NSNumber {
                total += s.intValue
            }
        }
        return total
    }
}

/// Why the daemon could not do something.
public enum DaemonError: Error, CustomStringConvertible, Sendable {
    case dataFolder(String)
    case key(String)
    /// The admin port's token file cannot be used (Docs/Security.md, "Admin port").
    case admin(String)
    case listen(String)
    case unknownDocument(DocumentID)
    /// The document was destroyed: its id is refused.
    case destroyed(DocumentID)
    /// A name a document cannot have (why).
    case invalidName(String)
    /// The document is at `epoch`, not the one a request named.
    case epochMismatch(DocumentID, epoch: UInt64)
    case storage(String)
    case limit(String)
    case stopping
    /// Cluster mode could not start (no NATS server answered, JetStream refused).
    case cluster(String)
    /// The devices file cannot be read or does not parse (the file and why).
    case devices(String)

    public var description: String {
        switch self {
        case let .dataFolder(s): return "data folder: \(s)"
        case let .key(s): return s
        case let .admin(s): return s
        case let .listen(s): return "cannot listen on \(s)"
        case let .unknownDocument(id): return ServerSession.unknownDocumentText(id)
        case let .destroyed(id): return "document \(id) was destroyed; its id is not used again"
        case let .invalidName(why): return why
        case let .epochMismatch(id, epoch): return "document \(id) is at epoch \(epoch), not the one asked for"
        case let .storage(s): return "storage: \(s)"
        case let .limit(s): return "limit: \(s)"
        case .stopping: return "the daemon is stopping"
        case let .cluster(s): return "cluster: \(s)"
        case let .devices(s): return "\(s); the daemon does not start with it (every device would be refused): fix or restore the file"
        }
    }

    static func from(_ error: any Error) -> DaemonError {
        if let e = error as? DaemonError { return e }
        if let e = error as? StoreError {
            if case let .unknownDocument(id) = e { return .unknownDocument(id) }
            if case let .destroyed(id) = e { return .destroyed(id) }
            return .storage(e.description)
        }
        return .storage("\(error)")
    }
}
