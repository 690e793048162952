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
    var folder: DataFolder?
    private(set) var key: [UInt8] = []
    private(set) var replica = ReplicaID(1)
    private var listener: TCPListener?
    /// The listener again, for the refusal counts that `/metrics` reads without this actor.
    nonisolated let listenerForMetrics = Mutex<TCPListener?>(nil)
    /// The data folder's shared log once started, for ``storageUsage(_:)`` from any thread.
    nonisolated let sharedLogHandle = Mutex<SharedLog?>(nil)
    private var acceptTask: Task<Void, Never>?
    var hosts: [DocumentID: DocumentHost] = [:] {
        didSet { metrics.setResident(hosts.count) }
    }
    var loading: [DocumentID: Task<DocumentHost, any Error>] = [:]
    /// Documents being destroyed (``destroy(_:epoch:reason:)``): not loaded, created or
    /// subscribed to while their files go.
    var destroying: Set<DocumentID> = []
    private(set) var connections: [ObjectIdentifier: DaemonConnection] = [:]
    var devices: DeviceRegistry
    /// The last reason each document could not be loaded, as logged (once per reason).
    var loadFailuresLogged: [DocumentID: String] = [:]
    /// The last failure to read the devices file (logged once), and the device connections whose
    /// access was ended (counted once).
    private var devicesFileError: String?
    private var accessEnded: Set<ObjectIdentifier> = []
    private var deviceWatch: Task<Void, Never>?
    /// Numbers for connections and peer links (their ``SubscriberID``s).
    private var nextSubscriber = 1
    /// Whether this daemon has peers (Daemon+Peered.swift).
    nonisolated let peered = Mutex<Bool>(false)
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
        do { replica = try DaemonReplicaFile.readOrCreate(in: configuration.dataFolder, fileSystem: configuration.fileSystem) } catch {
            folder?.close()
            throw error
        }
        metrics.setOnDisk((try? folder?.count()) ?? 0)
        loadPeered()
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
            await h.snapshotIfLarge()
            await h.close()
        }
        hosts = [:]
        folder?.close()
        folder = nil
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
            guard let h = hosts[id], await h.unloadIfIdle() else { continue }
            if hosts[id] === h { hosts[id] = nil }
            metrics.unloaded()
            excess -= 1
        }
        for p in peers { await p.tick() }
        for h in hosts.values { await h.peerTick() }
        await dropSilentPeers()
        await checkpoint()
    }

    // MARK: Helpers

    static let clock: @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }

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
