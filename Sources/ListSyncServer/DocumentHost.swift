import ListCRDT
import ListStore

/// Something a document's operations are forwarded to: a client's or a peer's connection.
protocol DocumentSubscriber: AnyObject, Sendable {
    /// Sends `operations` of `document` (already durable) to the subscriber, in order.
    func push(_ document: DocumentID, _ operations: [ListOperation]) async
}

extension ReceiveReport {
    /// The ids of the operations refused as equivocations (a known id with other content).
    var equivocations: [OpID] {
        refused.compactMap { if case let .equivocation(id) = $0 { id } else { nil } }
    }
}

/// One resident document: its state, its store, and who is subscribed to it.
///
/// Every batch is made durable before it is applied, acknowledged or forwarded (DAEMON.md,
/// Promise 1): ``receive(_:from:)`` appends the operations the document lacks to the store, then
/// applies them and forwards what was applied to the other subscribers. When the log has grown past
/// the snapshot threshold, the host snapshots the document (a new generation) while it stays
/// resident, so recovery replays at most about that much log.
///
/// The host runs on a dispatch queue of its own (``QueueExecutor``), not on the cooperative pool:
/// its snapshots, closes and reopens block on the disk, and only this document waits for them.
actor DocumentHost {
    private nonisolated let executor: QueueExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let id: DocumentID
    let name: String
    private(set) var store: DocumentStore
    private(set) var document: ListDocument
    /// Why the store failed, while it is failed (a failed store takes no more appends: after a
    /// failed `fdatasync` the kernel may have dropped the pages, so it is reopened, see
    /// ``reopenStore()``).
    private(set) var storeFailure: String?
    /// Opens the document's store again (recovering it from its files).
    private let reopen: @Sendable () throws -> (DocumentStore, ListDocument)
    private let log: @Sendable (String, [String: String]) -> Void
    private(set) var epoch: UInt64
    private var subscribers: [ObjectIdentifier: any DocumentSubscriber] = [:]
    /// When the host was last used (for idle unloading), in event-loop nanoseconds.
    private(set) var lastUsed: UInt64
    private let clock: @Sendable () -> UInt64
    /// Operations received and applied here, for metrics.
    private(set) var operationsIn = 0
    /// The log size past which the document is snapshotted (``DaemonConfiguration/snapshotLogBytes``).
    private let snapshotLogBytes: Int64
    /// Where the next snapshot check fires: past both the threshold and the last snapshot's size
    /// (so the cost of snapshots stays proportional to the log written), and further out after a
    /// failed snapshot (so a full disk is not retried on every batch).
    private var nextSnapshotAt: Int64

    init(id: DocumentID, name: String, store: DocumentStore, document: ListDocument, epoch: UInt64,
         pendingLimits: PendingLimits, clock: @escaping @Sendable () -> UInt64,
         reopen: @escaping @Sendable () throws -> (DocumentStore, ListDocument),
         log: @escaping @Sendable (String, [String: String]) -> Void, held: Bool = false,
         snapshotLogBytes: Int64 = DaemonConfiguration.defaultSnapshotLogBytes) {
        self.executor = QueueExecutor(label: "listsync.document.\(id)")
        self.snapshotLogBytes = snapshotLogBytes
        self.nextSnapshotAt = max(snapshotLogBytes, (try? store.snapshotBytes) ?? 0)
        self.holds = held ? 1 : 0
        self.reopen = reopen
        self.log = log
        self.id = id
        self.name = name
        self.store = store
        self.document = document
        self.document.pendingLimits = pendingLimits
        self.epoch = epoch
        self.clock = clock
        self.lastUsed = clock()
    }

    /// Number of subscribers.
    var subscriberCount: Int { subscribers.count }

    /// Adds `subscriber`; returns the name, epoch, version and the operations it lacks.
    ///
    /// - Complexity: O(m) in the document's log (``ListDocument/operations(since:)``).
    /// Nil if the host was unloaded meanwhile (``unloadIfIdle(snapshotLogBytes:)``): ask the daemon
    /// for the document's host again.
    func subscribe(_ subscriber: any DocumentSubscriber, version: VersionVector)
        -> (name: String, epoch: UInt64, version: VersionVector, missing: [ListOperation])? {
        guard !isClosed else { return nil }
        subscribers[ObjectIdentifier(subscriber)] = subscriber
        lastUsed = clock()
        return (name, epoch, document.version, document.operations(since: version))
    }

    /// Removes `subscriber`.
    func unsubscribe(_ subscriber: any DocumentSubscriber) {
        subscribers[ObjectIdentifier(subscriber)] = nil
        lastUsed = clock()
    }

    /// The operations after `version` (anti-entropy).
    func operations(since version: VersionVector) -> [ListOperation] {
        lastUsed = clock()
        return document.operations(since: version)
    }

    /// Makes the operations the document lacks durable, applies them, forwards what was applied
    /// to every subscriber but `sender`, and returns the document's version and the report.
    ///
    /// Operations already known are checked against what is known (``ListDocument/receive(_:)``
    /// changes nothing for them): one that reuses a known id with other content is refused as an
    /// equivocation, and counted in ``equivocations``.
    ///
    /// - Throws: ``StoreError`` if the store could not make them durable (or, failed before, could
    ///   not be reopened): nothing was applied, acknowledged or forwarded.
    func receive(_ ops: [ListOperation], from sender: (any DocumentSubscriber)?) async throws(StoreError)
        -> (version: VersionVector, report: ReceiveReport) {
        lastUsed = clock()
        var fresh: [ListOperation] = [], seen: [ListOperation] = []
        for op in ops {
            if document.version.contains(op.lastID) { seen.append(op) } else { fresh.append(op) }
        }
        var known = ReceiveReport()
        if !seen.isEmpty {
            known = document.receive(seen)
            equivocations += known.equivocations.count
        }
        guard !fresh.isEmpty else { return (document.version, known) }
        if isClosed { throw .closed }
        if storeFailure != nil { try reopenStore() }
        do {
            try await store.append(fresh)
        } catch {
            if storeFailure == nil { log("store failed", ["document": id.description, "error": error.description]) }
            storeFailure = error.description
            throw error
        }
        // Another batch may have been applied while this one was being written: apply what is
        // still new (the engine ignores the rest either way).
        let start = document.operationCount
        let report = document.receive(fresh)
        let applied = (try? document.operations(from: start)) ?? []
        operationsIn += applied.count
        if !applied.isEmpty {
            for (key, s) in subscribers where sender.map({ ObjectIdentifier($0) != key }) ?? true {
                await s.push(id, applied)
            }
        }
        var all = report
        all.add(known)
        snapshotIfDue()
        return (document.version, all)
    }

    /// Snapshots the document if its log has passed ``nextSnapshotAt``. A failure is logged, not
    /// thrown: the batches are durable in the log either way, and the next check is a threshold
    /// further out.
    private func snapshotIfDue() {
        guard let size = try? store.logSize, size > nextSnapshotAt else { return }
        do {
            try store.snapshot(document)
            nextSnapshotAt = max(snapshotLogBytes, (try? store.snapshotBytes) ?? 0)
            log("document snapshotted", ["document": id.description, "log_bytes": "\(size)",
                                         "generation": "\((try? store.generation) ?? 0)"])
        } catch .snapshotBehindLog {
            // Another batch is logged but not yet applied (its append is in flight): the next
            // batch tries again.
        } catch {
            nextSnapshotAt = size + max(snapshotLogBytes, 1)
            log("snapshot failed", ["document": id.description, "error": error.description])
        }
    }

    /// Operations refused here because their id was known with other content.
    private(set) var equivocations = 0

    /// Reopens the failed store: recovery keeps every record that reached the disk whole (all
    /// that was acknowledged, and perhaps the failed batch, if its bytes got there after all).
    /// Operations the files hold that the document lacks are applied and forwarded (they are
    /// durable now); any the document holds that the files lack are appended again.
    ///
    /// - Throws: ``StoreError`` if the store cannot be opened or written yet (still no space).
    private func reopenStore() throws(StoreError) {
        try? store.close()
        let (fresh, recovered): (DocumentStore, ListDocument)
        do { (fresh, recovered) = try reopen() } catch {
            storeFailure = "\(error)"
            throw (error as? StoreError) ?? .failed(first: "\(error)")
        }
        let missing = document.operations(since: recovered.version)
        if !missing.isEmpty {
            do { try fresh.append(missing) } catch {
                try? fresh.close()
                storeFailure = error.description
                throw error
            }
        }
        store = fresh
        let extra = recovered.operations(since: document.version)
        if !extra.isEmpty {
            let start = document.operationCount
            _ = document.receive(extra)
            let applied = (try? document.operations(from: start)) ?? []
            for s in subscribers.values { Task { await s.push(id, applied) } }
        }
        storeFailure = nil
        log("store reopened", ["document": id.description, "recovered_extra": "\(extra.count)",
                               "appended_again": "\(missing.count)"])
    }

    /// Writes a snapshot (a new generation) if the log has grown past `logBytes`.
    func snapshotIfLarge(logBytes: Int64) {
        guard let size = try? store.logSize, size > logBytes else { return }
        try? store.snapshot(document)
    }

    /// Closes the store (the daemon stops); the host takes nothing more.
    func close() {
        isClosed = true
        try? store.close()
    }

    /// Holds that keep the host loaded without a subscriber (a document being created is held from
    /// its birth until its first sections are written).
    private var holds: Int

    /// Ends a hold.
    func release() { holds -= 1 }

    /// Whether the host was unloaded or closed: it takes no subscriber and no batch, and its store is
    /// never reopened (the document's next host opens it).
    private(set) var isClosed = false

    /// Unloads the host if nobody is subscribed: a snapshot if the log is large, then the store
    /// closed. Checked and done in one step of this actor, so that a subscriber arriving meanwhile
    /// either comes first (and the host stays) or finds it closed (and asks for a new one).
    func unloadIfIdle(snapshotLogBytes: Int64) -> Bool {
        guard subscribers.isEmpty, holds == 0, !isClosed else { return false }
        snapshotIfLarge(logBytes: snapshotLogBytes)
        close()
        return true
    }
}
