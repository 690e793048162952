import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP
import ListTable

/// Why a ``SyncClient`` call failed. The device's copy is as it was before the call.
public enum SyncClientError: Error, CustomStringConvertible, Sendable {
    /// The device's folder or a document's store failed (locked by another process, full, damaged).
    case store(StoreError)
    /// No document with that id on this device (``SyncClient/fetch(_:name:)`` adds one from the daemon).
    case notOnDevice(DocumentID)
    /// The edit was refused by the document (an index path out of range, an unknown id, ...).
    case edit(ListError)
    /// Syncing failed for a reason the app must act on (``SyncStatus/failed(_:)``).
    case failed(SyncFailure)
    /// ``SyncClient/waitUntilSynced(timeout:)`` ran out of time; the status says where it stands.
    case timeout(SyncStatus)
    /// The client was closed.
    case closed
    /// ``SyncClient/acceptReset(_:)`` on a document that was not reset.
    case notReset(DocumentID)

    public var description: String {
        switch self {
        case let .store(e): return "this device's store: \(e)"
        case let .notOnDevice(id): return "document \(id) is not on this device (fetch it from the daemon first)"
        case let .edit(e): return "the edit was refused: \(e)"
        case let .failed(f): return f.description
        case let .timeout(s): return "not synced in time (\(s))"
        case .closed: return "the sync client is closed"
        case let .notReset(id): return "document \(id) was not reset on the daemon"
        }
    }
}

/// An offline-first sync client for an app: documents live in a folder on the device, every edit
/// is durable there before the call returns, and the client connects to a daemon, and reconnects,
/// by itself to exchange what either side lacks (Docs/Client.md).
///
/// ```swift
/// let client = try SyncClient(folder: appSupport + "/lists", server: .init(host: "sync.local", port: 7420, key: key))
/// await client.start()
/// let id = try await client.create(name: "Groceries", sections: ["To buy", "Done"])
/// let live = try await client.open(id)                 // a LiveDocument: change sets, drag sessions
/// try await client.edit(id) { try $0.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8)) }
/// for await status in await client.statusUpdates() { print(status) }   // "offline, 1 edit(s) waiting"
/// ```
///
/// One client per folder at a time: the folder is locked (``StoreError/locked(path:)`` for a
/// second one, in this process or another).
public actor SyncClient {
    /// Where the daemon is, and how to reach it.
    public struct Server: Sendable {
        public var host: String
        public var port: UInt16
        /// What the device proves: its credential (`listsync device add`), or the daemon's key.
        public var authentication: ClientAuthentication
        /// A local address to bind before connecting (tests use other 127.x addresses).
        public var localHost: String?
        /// How long a request, a subscription or an edit may wait for the daemon's answer.
        public var requestTimeout: Duration
        /// The waits between connection attempts (jittered, doubling).
        public var backoff: Backoff
        /// Other daemons serving the same documents (cluster nodes, Docs/Cluster.md): when the
        /// one in use cannot be reached the client tries the next of `host:port` and these, in
        /// turn, at once, and waits the backoff once every one has failed; when its connection
        /// ends, it tries the next after the backoff (``ListSync/ReconnectMachine``).
        public var alternates: [(host: String, port: UInt16)] = []

        /// A daemon at `host:port` that the device reaches with the daemon's `key` (32 bytes).
        public init(host: String, port: UInt16, key: [UInt8], localHost: String? = nil,
                    requestTimeout: Duration = .seconds(30), backoff: Backoff = Backoff()) {
            self.init(host: host, port: port, authentication: .key(key), localHost: localHost,
                      requestTimeout: requestTimeout, backoff: backoff)
        }

        /// A daemon at `host:port` that the device reaches with its `credential`.
        public init(host: String, port: UInt16, credential: Credential, localHost: String? = nil,
                    requestTimeout: Duration = .seconds(30), backoff: Backoff = Backoff()) {
            self.init(host: host, port: port, authentication: .credential(credential), localHost: localHost,
                      requestTimeout: requestTimeout, backoff: backoff)
        }

        /// A daemon at `host:port`, reached with `authentication`.
        public init(host: String, port: UInt16, authentication: ClientAuthentication, localHost: String? = nil,
                    requestTimeout: Duration = .seconds(30), backoff: Backoff = Backoff()) {
            self.host = host
            self.port = port
            self.authentication = authentication
            self.localHost = localHost
            self.requestTimeout = requestTimeout
            self.backoff = backoff
        }
    }

    /// This device's replica id: made once per folder, the author of every edit made here.
    public nonisolated let replica: ReplicaID
    /// The device folder.
    public nonisolated let folderPath: String
    /// A document whose log is longer than this gets a snapshot when the client closes.
    static let snapshotLogBytes: Int64 = 256 << 10
    let folder: DeviceFolder
    let server: Server?
    let changeSets: Bool
    let loop: EventLoop
    var copies: [DocumentID: LocalCopy] = [:]
    var connection: Connection?
    var runner: Task<Void, Never>?
    var wake: CheckedContinuation<Void, Never>?
    var isConnecting = false
    /// What a daemon of an older build refused (`seen`, the compacting device role): not said
    /// again on later connections (``ListSync/ClientSession/OlderDaemon``).
    var refusedByDaemon: ClientSession.OlderDaemon = []
    var lastError: String?
    /// Which daemon it dials next, and when (``ListSync/ReconnectMachine``): the addresses are
    /// `host:port` and the alternates'; ``ListSync/DeviceClientMachine/Action/settle(at:)`` names
    /// the one to go back to.
    var reconnect: ReconnectMachine
    var sessionFailure: SyncFailure?
    var closed = false
    /// The current status (``statusUpdates()`` for every change).
    public private(set) var status: SyncStatus = .offline(waiting: 0, reason: nil)
    var watchers: [Int: AsyncStream<SyncStatus>.Continuation] = [:]
    var nextWatcher = 0
    var syncWaiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    var nextWaiter = 0
    var closedTraffic = (sent: 0, received: 0)
    /// The documents this device takes part in the presence of (`SyncClient+Presence.swift`).
    var presence = PresencePublisher()
    /// Copies removed because the daemon destroyed their document (`SyncClient+Destroy.swift`).
    var destroyed: [DocumentID: DestroyedCopy] = [:]

    /// Bytes sent and received on the wire (sealed frames, handshakes included) since the client
    /// was made, over every connection.
    public var traffic: (sent: Int, received: Int) {
        let now = connection?.transport.traffic ?? (sent: 0, received: 0)
        return (closedTraffic.sent + now.sent, closedTraffic.received + now.received)
    }

    /// Opens the device folder `folder` (created if missing) and takes its lock. Nothing connects
    /// before ``start()``; with no `server` the client works offline only.
    ///
    /// - Parameter changeSets: whether opened documents diff every change into a `ChangeSet` (an
    ///   app's table needs them; O(n) per change).
    /// - Throws: ``SyncClientError/store(_:)``: ``StoreError/locked(path:)`` when another client holds it.
    public init(folder: String, server: Server?, changeSets: Bool = true, loop: EventLoop = .shared) throws(SyncClientError) {
        do { self.folder = try DeviceFolder(root: folder) } catch { throw .store(error) }
        replica = self.folder.replica
        folderPath = folder
        self.server = server
        self.changeSets = changeSets
        self.loop = loop
        let addresses = server.map { s in ["\(s.host):\(s.port)"] + s.alternates.map { "\($0.host):\($0.port)" } } ?? []
        reconnect = ReconnectMachine(addresses: addresses, backoff: server?.backoff ?? Backoff())
    }

    // MARK: Documents on the device

    /// The documents on this device, by id, with their names.
    public func documents() throws(SyncClientError) -> [(id: DocumentID, name: String)] {
        do { return try folder.data.list().map { ($0.id, $0.name) } } catch { throw .store(error) }
    }

    /// Creates a document on this device, durably, with `sections` (none when empty); it reaches
    /// the daemon on the next connection. Opens it.
    public func create(name: String, sections: [String] = [""]) async throws(SyncClientError) -> DocumentID {
        try checkOpen()
        let id: DocumentID
        do { id = try folder.data.create(name: name) } catch { throw .store(error) }
        let copy = try load(id, name: name)
        copies[id] = copy
        if !sections.isEmpty {
            _ = try await edit(id) { (doc: inout ListDocument) throws(ListError) in
                for (i, s) in sections.enumerated() { _ = try doc.insertSection(at: i, value: Data(s.utf8)) }
            }
        }
        attach(copy)
        return id
    }

    /// Opens a document of this device (from its store: no download) and syncs it while open.
    ///
    /// - Throws: ``SyncClientError/notOnDevice(_:)`` when the device does not have it.
    /// - Complexity: that of loading its snapshot and replaying its log, the first time.
    public func open(_ id: DocumentID) throws(SyncClientError) -> LiveDocument {
        try checkOpen()
        if let c = copies[id] { return c.live }
        let entries: [DataFolder.Entry]
        do { entries = try folder.data.list() } catch { throw .store(error) }
        guard let entry = entries.first(where: { $0.id == id }) else { throw .notOnDevice(id) }
        let copy = try load(id, name: entry.name)
        copies[id] = copy
        attach(copy)
        updateStatus()
        return copy.live
    }

    /// Adds a document of the daemon to this device (empty until its download arrives) and opens it.
    public func fetch(_ id: DocumentID, name: String = "") throws(SyncClientError) -> LiveDocument {
        try checkOpen()
        if (try? documents().contains { $0.id == id }) == true { return try open(id) }
        do { _ = try folder.data.create(name: name, id: id) } catch { throw .store(error) }
        let copy = try load(id, name: name, onServer: true)
        copies[id] = copy
        attach(copy)
        updateStatus()
        return copy.live
    }

    /// The live copy of an open document.
    public func live(_ id: DocumentID) -> LiveDocument? { copies[id]?.live }

    /// The name of an open document, and the epoch of the daemon's copy it follows (0 before the
    /// daemon has it).
    public func info(_ id: DocumentID) -> (name: String, epoch: UInt64, waiting: Int)? {
        copies[id].map { ($0.name, $0.record.epoch, $0.unacked.count) }
    }

    /// Edits an open document: the operations are durable on this device when this returns, and
    /// are sent to the daemon now or on the next connection.
    ///
    /// - Throws: ``SyncClientError/edit(_:)`` when the document refused the edit (nothing changed);
    ///   ``SyncClientError/store(_:)`` when the device could not save it (the client then reports
    ///   ``SyncFailure/storage(_:)``).
    /// - Complexity: that of the edit, plus one shared write and sync.
    public func edit<R: Sendable>(_ id: DocumentID, _ body: (inout ListDocument) throws(ListError) -> R)
        async throws(SyncClientError) -> LiveDocument.Edit<R> {
        try checkOpen()
        guard let copy = copies[id] else { throw .notOnDevice(id) }
        if case let .storage(why)? = copy.failure { throw .failed(.storage(why)) }
        let result: LiveDocument.Edit<R>
        do { result = try copy.live.edit(body) } catch { throw .edit(error) }
        try await commitApplied(copy, result.operations)
        return result
    }

    /// Saves and sends operations already applied to an open document's `LiveDocument` (a drag
    /// session's drop, an undo): what ``edit(_:_:)`` does after its edit.
    public func commit(_ id: DocumentID, _ operations: [ListOperation]) async throws(SyncClientError) {
        try checkOpen()
        guard let copy = copies[id] else { throw .notOnDevice(id) }
        try await commitApplied(copy, operations)
    }

    /// The operations of a document the daemon has not acknowledged (what waits to be sent).
    public func unsent(_ id: DocumentID) -> [ListOperation] {
        guard let c = copies[id] else { return [] }
        return c.live.operations(since: c.record.version)
    }

    func commitApplied(_ copy: LocalCopy, _ ops: [ListOperation]) async throws(SyncClientError) {
        guard !ops.isEmpty else { return }
        copy.appending += 1
        do {
            try await copy.store.append(ops)
        } catch {
            copy.appending -= 1
            copy.failure = .storage(error.description)
            updateStatus()
            throw .store(error)
        }
        copy.appending -= 1
        // A batch's own counters increase; two edits whose appends finished in the other order
        // arrive here swapped, so keep `unacked` sorted across batches.
        let mine = ops.filter { $0.id.replica == replica }.map(\.id.counter)
        copy.unacked.append(contentsOf: mine)
        if let first = mine.first, let before = copy.unacked.dropLast(mine.count).last, before > first { copy.unacked.sort() }
        if copy.appending == 0 {
            // Everything applied is durable now: send what the daemon lacks (this edit, and any
            // that waited for an earlier append), if live.
            act(copy.machine.edited(ops, document: copy.live.document), for: copy)
        } else if copy.phase == .live {
            copy.resendAfterAppends = true
        }
        updateStatus()
    }

    /// Opens document `id`'s store and sync record (a new record, for the daemon's copy when
    /// `onServer`, if it has none).
    func load(_ id: DocumentID, name: String, onServer: Bool = false) throws(SyncClientError) -> LocalCopy {
        do {
            let (store, document) = try folder.data.open(id, replica: replica)
            var record = try folder.record(id)
            if record == nil {
                record = SyncRecord(epoch: onServer ? 0 : try store.epoch, onServer: onServer, acknowledged: [:], name: name)
                try folder.write(record!, for: id)
            }
            let live = changeSets ? LiveDocument(document) : LiveDocument(withoutChangeSets: document)
            return LocalCopy(id: id, name: name.isEmpty ? record!.name : name, live: live, store: store, record: record!, replica: replica)
        } catch { throw .store(error) }
    }

    func checkOpen() throws(SyncClientError) {
        if closed { throw .closed }
    }

    // MARK: Epoch resets

    /// What ``acceptReset(_:)`` set aside.
    public struct SetAside: Sendable {
        /// The document (its id is unchanged).
        public var id: DocumentID
        /// Where the old copy's files now lie (`<folder>/aside/<id>-<epoch>`).
        public var folder: String
        /// The device's copy as it was, with its unsent edits applied.
        public var previous: ListDocument
        /// The operations the daemon never acknowledged, in causal order.
        public var unsent: [ListOperation]
        /// The new, empty copy that follows the daemon's new epoch (it fills on the next sync).
        public var live: LiveDocument
    }

    /// Accepts that the daemon's copy of `id` was reset: the device's copy (with its unsent edits)
    /// moves aside, and a fresh copy follows the daemon. The app re-applies what it wants of
    /// ``SetAside/unsent`` as new edits (Docs/Client.md, "When a document is reset").
    ///
    /// - Throws: ``SyncClientError/notReset(_:)`` unless the status reported the reset.
    public func acceptReset(_ id: DocumentID) throws(SyncClientError) -> SetAside {
        guard let copy = copies[id] else { throw .notOnDevice(id) }
        guard case .documentReset? = copy.failure else { throw .notReset(id) }
        let unsent = copy.live.operations(since: copy.record.version)
        let previous = copy.live.document
        let path: String
        do {
            try copy.store.close()
            path = try folder.setAside(id, epoch: copy.record.epoch)
            _ = try folder.data.create(name: copy.name, id: id)
        } catch { throw .store(error) }
        copy.live.close()
        let fresh = try load(id, name: copy.name, onServer: true)
        copies[id] = fresh
        attach(fresh)
        updateStatus()
        return SetAside(id: id, folder: path, previous: previous, unsent: unsent, live: fresh.live)
    }

    // MARK: Status

    /// Behaves as a client of a build before `seen` (tests only): reports nothing of what it
    /// has seen, so no daemon counts it (Docs/Semantics.md §7, "Replicas no daemon counts").
    @_spi(Testing) public func sayNothingSeen() { refusedByDaemon.insert(.seen) }

    /// The daemon (`host:port`) of the current connection; nil while offline.
    @_spi(Testing) public var connectedAddress: String? { connection?.address }

    /// Every status from now on, starting with the current one.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let n = nextWatcher
        nextWatcher += 1
        watchers[n] = continuation
        continuation.yield(status)
        continuation.onTermination = { [weak self] _ in Task { await self?.unwatch(n) } }
        return stream
    }

    func unwatch(_ n: Int) { watchers[n] = nil }

    /// Returns once every open document is caught up and every edit acknowledged (``SyncStatus/upToDate``).
    ///
    /// - Throws: ``SyncClientError/failed(_:)`` when syncing fails, ``SyncClientError/timeout(_:)``
    ///   after `timeout`.
    public func waitUntilSynced(timeout: Duration = .seconds(60)) async throws(SyncClientError) {
        if case .upToDate = status { return }
        if case let .failed(f) = status { throw .failed(f) }
        if closed { throw .closed }
        let n = nextWaiter
        nextWaiter += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.timeOutWaiter(n)
        }
        defer { timer.cancel() }
        do {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in syncWaiters[n] = c }
        } catch let e as SyncClientError { throw e } catch { throw .closed }
    }

    func timeOutWaiter(_ n: Int) {
        syncWaiters.removeValue(forKey: n)?.resume(throwing: SyncClientError.timeout(status))
    }

    func updateStatus() {
        let waiting = copies.values.reduce(0) { $0 + $1.unacked.count }
        let new: SyncStatus
        // The failure of the lowest document id, so that the report does not depend on dictionary order.
        if let f = sessionFailure ?? copies.values.filter({ $0.failure != nil }).min(by: { $0.id < $1.id })?.failure
            ?? destroyedWithUnsentEdits {
            new = .failed(f)
        } else if connection == nil {
            new = isConnecting ? .connecting(waiting: waiting) : .offline(waiting: waiting, reason: lastError)
        } else if copies.values.allSatisfy(\.isUpToDate) {
            new = .upToDate
        } else {
            new = .syncing(waiting: waiting)
        }
        if new != status {
            status = new
            for w in watchers.values { w.yield(new) }
        }
        switch new {
        case .upToDate:
            for (_, c) in syncWaiters { c.resume() }
            syncWaiters = [:]
        case let .failed(f):
            for (_, c) in syncWaiters { c.resume(throwing: SyncClientError.failed(f)) }
            syncWaiters = [:]
        default: break
        }
    }

    // MARK: Closing

    /// Stops syncing, writes what the client knows of the daemon, and closes every store and the
    /// folder. Edits made before stay on the device.
    public func close() async {
        guard !closed else { return }
        closed = true
        reconnect.close()
        runner?.cancel()
        wake?.resume()
        wake = nil
        if let c = connection { await c.transport.close() }
        connection = nil
        for copy in copies.values {
            if copy.recordDirty { try? folder.write(copy.record, for: copy.id) }
            // A relaunch loads a snapshot faster than it replays a long log.
            if copy.failure == nil, copy.appending == 0, (try? copy.store.logSize) ?? 0 > Self.snapshotLogBytes {
                try? copy.store.snapshot(copy.live.document)
            }
            try? copy.store.close()
            copy.live.close()
        }
        copies = [:]
        folder.close()
        for (_, c) in syncWaiters { c.resume(throwing: SyncClientError.closed) }
        syncWaiters = [:]
        for w in watchers.values { w.finish() }
        watchers = [:]
    }
}
