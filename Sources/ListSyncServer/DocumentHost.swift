import ListCRDT
import ListStore

/// Something a document's operations are forwarded to: a client's or a peer's connection.
protocol DocumentSubscriber: AnyObject, Sendable {
    /// Sends `operations` of `document` (already durable) to the subscriber, in order.
    func push(_ document: DocumentID, _ operations: [ListOperation]) async
}

/// One resident document: its state, its store, and who is subscribed to it.
///
/// Every batch is made durable before it is applied, acknowledged or forwarded (DAEMON.md,
/// Promise 1): ``receive(_:from:)`` appends the operations the document lacks to the store, then
/// applies them and forwards what was applied to the other subscribers.
actor DocumentHost {
    let id: DocumentID
    let name: String
    let store: DocumentStore
    private(set) var document: ListDocument
    private(set) var epoch: UInt64
    private var subscribers: [ObjectIdentifier: any DocumentSubscriber] = [:]
    /// When the host was last used (for idle unloading), in event-loop nanoseconds.
    private(set) var lastUsed: UInt64
    private let clock: @Sendable () -> UInt64
    /// Operations received and applied here, for metrics.
    private(set) var operationsIn = 0

    init(id: DocumentID, name: String, store: DocumentStore, document: ListDocument, epoch: UInt64,
         pendingLimits: PendingLimits, clock: @escaping @Sendable () -> UInt64) {
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
    func subscribe(_ subscriber: any DocumentSubscriber, version: VersionVector)
        -> (name: String, epoch: UInt64, version: VersionVector, missing: [ListOperation]) {
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
    /// - Throws: ``StoreError`` if the store could not make them durable: nothing was applied,
    ///   acknowledged or forwarded.
    func receive(_ ops: [ListOperation], from sender: (any DocumentSubscriber)?) async throws(StoreError)
        -> (version: VersionVector, report: ReceiveReport) {
        lastUsed = clock()
        let fresh = ops.filter { !document.version.contains($0.lastID) }
        guard !fresh.isEmpty else { return (document.version, ReceiveReport(duplicates: ops.count)) }
        try await store.append(fresh)
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
        return (document.version, report)
    }

    /// Writes a snapshot (a new generation) if the log has grown past `logBytes`.
    func snapshotIfLarge(logBytes: Int64) {
        guard let size = try? store.logSize, size > logBytes else { return }
        try? store.snapshot(document)
    }

    /// Closes the store (the host is unloaded).
    func close() {
        try? store.close()
    }
}
