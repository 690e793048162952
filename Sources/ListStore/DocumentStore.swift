import ListCRDT
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Settings of a ``DocumentStore``.
public struct StoreOptions: Sendable {
    /// The largest value an operation may carry (as ``ListDocument/maxValueSize``).
    public var maxValueSize = ListDocument.defaultMaxValueSize
    /// Makes the epoch of a new document (Docs/Daemon.md, "Epochs"). Default: 64 random bits from
    /// `SystemRandomNumberGenerator`, never 0.
    public var newEpoch: @Sendable () -> UInt64 = {
        var rng = SystemRandomNumberGenerator()
        return UInt64.random(in: 1...UInt64.max, using: &rng)
    }

    /// The most bytes of zeros the log is extended by whenever an append reaches its end (default
    /// 1 MiB; 0: none, the file grows by each append). A chunk is as long as the log so far, from
    /// 4 KiB up to this. Appends then overwrite blocks already written, so their `fdatasync` has no
    /// new file length to commit: one file-system journal commit per chunk instead of per append
    /// (Docs/Storage.md, "Preallocation"). Recovery reads an all-zero rest as this space, not as
    /// damage.
    public var preallocation = 1 << 20
    /// The causal buffer's limits while the log is replayed (a daemon passes its own, so recovery
    /// refuses what the live document refused).
    public var pendingLimits = PendingLimits.default

    /// The defaults.
    public init() {}
}

/// One document on disk: a snapshot and an operation log per generation, in a folder of its own.
///
/// ```
/// <folder>/snapshot-<g>        the document at the start of generation g (none for g = 0)
/// <folder>/log-<g>             every operation batch logged since, each fdatasynced before
///                              append returns
/// <folder>/log-<g>.tail-<n>    damaged bytes that recovery cut off a log, kept for inspection
/// ```
///
/// ``open(at:documentID:replica:options:fileSystem:)`` creates or recovers the document;
/// ``append(_:)-([ListOperation])`` makes a batch durable (group commit); ``snapshot(_:)`` starts a
/// new generation from a document and drops the old one. The store does not keep the document: the
/// caller applies what it appends, and hands the document to `snapshot`. One store per folder at a
/// time (``DataFolder`` holds a lock for that); a store is safe to use from many threads.
public final class DocumentStore: Sendable {
    /// The store's folder.
    public let folder: String
    /// The document's id, in every file's header.
    public let documentID: DocumentID
    /// The settings it was opened with.
    public let options: StoreOptions
    /// What opening found and did.
    public let recoveryReport: RecoveryReport
    let fs: FileSystem
    /// Where the document's batches go: a log of its own, or the data folder's shared log.
    let backend: Backend

    enum Backend: Sendable {
        /// `log-<g>` in the document's folder.
        case own(LogWriter)
        /// The data folder's shared log (Docs/Storage.md, "The shared log").
        case shared(SharedLog, SharedDocument)
    }

    init(folder: String, documentID: DocumentID, options: StoreOptions, report: RecoveryReport,
         fs: FileSystem, output: LogWriter.Output) {
        self.folder = folder
        self.documentID = documentID
        self.options = options
        self.recoveryReport = report
        self.fs = fs
        backend = .own(LogWriter(fs: fs, output: output, label: documentID.description, preallocation: options.preallocation))
    }

    init(folder: String, documentID: DocumentID, options: StoreOptions, report: RecoveryReport,
         fs: FileSystem, log: SharedLog, document: SharedDocument) {
        self.folder = folder
        self.documentID = documentID
        self.options = options
        self.recoveryReport = report
        self.fs = fs
        backend = .shared(log, document)
    }

    /// Whether the document's batches go to the data folder's shared log.
    public var usesSharedLog: Bool {
        if case .shared = backend { return true }
        return false
    }

    // MARK: Appending

    /// Appends an operation batch to the log and returns once it is durable: one `pwrite` of its
    /// records (a batch over 1 MiB encoded is split into several records), then `fdatasync`,
    /// shared with the appends that arrive while another sync runs.
    ///
    /// Call it before applying, acknowledging or forwarding the operations (Docs/Storage.md: acknowledged means durable).
    /// An empty batch returns at once.
    ///
    /// - Throws: ``StoreError``: after a failed write or sync, this and every later call fail
    ///   (``StoreError/failed(first:)``); reopen the store.
    /// - Complexity: O(n) to encode n operations, plus one write and one sync shared with others.
    public func append(_ ops: [ListOperation], relayed: Bool = false) throws(StoreError) {
        guard !ops.isEmpty else { return }
        switch backend {
        case let .own(writer):
            try writer.commit(try Self.records(for: ops, relayed: relayed), maxIDs: Self.maxIDs(ops))
        case let .shared(log, doc):
            let bytes = try doc.willAppend(ops, of: documentID, relayed: relayed)
            try log.appendBlocking(bytes, of: documentID)
        }
    }

    /// ``append(_:)-([ListOperation])`` for Swift concurrency: the write and sync run on the
    /// store's dispatch queue, so no cooperative thread waits for the disk.
    ///
    /// - Complexity: O(n) to encode n operations, plus one write and one sync shared with others.
    public func append(_ ops: [ListOperation], relayed: Bool = false) async throws(StoreError) {
        guard !ops.isEmpty else { return }
        let error: StoreError? = await withCheckedContinuation { continuation in
            append(ops, relayed: relayed) { continuation.resume(returning: $0) }
        }
        if let error { throw error }
    }

    /// ``append(_:)-([ListOperation])`` that returns at once: `done` is called with nil once the
    /// batch is durable, or with the error (at once when the batch does not encode or the store
    /// is closed). The rounds run on the log's executor (``SharedLogOptions/executor``) unless a
    /// blocking append leads them; the async form is this one.
    ///
    /// - Complexity: O(n) to encode n operations, plus one write and one sync shared with others.
    public func append(_ ops: [ListOperation], relayed: Bool = false, then done: @escaping @Sendable (StoreError?) -> Void) {
        guard !ops.isEmpty else { return done(nil) }
        do throws(StoreError) {
            switch backend {
            case let .own(writer):
                writer.commitPlaced(try Self.records(for: ops, relayed: relayed), maxIDs: Self.maxIDs(ops)) { result in
                    if case let .failure(e) = result { done(e) } else { done(nil) }
                }
            case let .shared(log, doc):
                let bytes = try doc.willAppend(ops, of: documentID, relayed: relayed)
                log.append(bytes, of: documentID) { result in
                    if case let .failure(e) = result { done(e) } else { done(nil) }
                }
            }
        } catch {
            done(error)
        }
    }

    /// The document's epoch (Docs/Daemon.md, "Epochs"): random at creation, kept in snapshots and logs.
    /// Waits for a commit round in progress.
    public var epoch: UInt64 {
        get throws(StoreError) { try read({ $0.epoch }, { _, d in d.epoch }) }
    }

    /// The current generation (the `g` of `log-<g>`). Waits for a commit round in progress.
    public var generation: UInt64 {
        get throws(StoreError) { try read({ $0.generation }, { _, d in d.generation }) }
    }

    /// The current log's length in bytes: the end of its last record (the file may be longer by
    /// its preallocated zeros). Waits for a commit round in progress.
    public var logSize: Int64 {
        get throws(StoreError) { try read({ $0.end }, { log, _ in log.uncoveredBytes(of: documentID) }) }
    }

    /// The size in bytes of the current generation's snapshot file (0 in generation 0, which has
    /// none). Waits for a commit round in progress.
    public var snapshotBytes: Int64 {
        get throws(StoreError) { try read({ $0.snapshotBytes }, { _, d in d.snapshotBytes }) }
    }

    /// How many commit rounds (each one `fdatasync`) this store has run.
    public var syncCount: Int {
        get throws(StoreError) {
            switch backend {
            case let .own(writer): return try writer.exclusive { $0.syncs }
            case let .shared(log, _): return try log.syncCount
            }
        }
    }

    /// `own` under the log's lock, or `shared` with the document's state, unless closed or failed.
    private func read<T: Sendable>(_ own: (LogWriter.Output) -> T,
                                   _ shared: (SharedLog, SharedDocument.State) -> T) throws(StoreError) -> T {
        switch backend {
        case let .own(writer): return try writer.exclusive { own($0) }
        case let .shared(log, doc):
            let state = try doc.current()
            return shared(log, state)
        }
    }

    /// Gives the document a new epoch (after a reset or a restore from a backup), durably: an epoch
    /// record in the log. Returns it.
    @discardableResult
    public func resetEpoch(to epoch: UInt64? = nil) throws(StoreError) -> UInt64 {
        let value = epoch ?? options.newEpoch()
        switch backend {
        case let .own(writer):
            try writer.commit(LogFormat.epochRecord(value), maxIDs: [:], epoch: value)
        case let .shared(log, doc):
            _ = try doc.current()
            try log.appendBlocking(SharedLogFormat.epochRecord(value, document: documentID), of: documentID)
            doc.state.withLock { $0.epoch = value }
        }
        return value
    }

    /// Closes the log file. Appends after it fail with ``StoreError/closed``.
    public func close() throws(StoreError) {
        switch backend {
        case let .own(writer): try writer.close()
        case let .shared(_, doc): doc.state.withLock { $0.closed = true }
        }
    }

    // MARK: Records

    /// The log records of a batch: one if it fits, else the batch split in halves until each fits.
    public static func records(for ops: [ListOperation], relayed: Bool = false) throws(StoreError) -> [UInt8] {
        // The runs first: a crash that keeps the batch keeps them (a log's intact records are a prefix).
        var out = relayed ? LogFormat.relayedRecords(OperationRuns(ops)) : []
        try appendRecords(ops[...], to: &out)
        return out
    }

    private static func appendRecords(_ ops: ArraySlice<ListOperation>, to out: inout [UInt8]) throws(StoreError) {
        let payload = ListOperation.encode(ops)
        if payload.count < LogFormat.maxRecordLength, ops.count <= ListOperation.defaultMaxBatchOperations {
            LogFormat.appendRecord(.operations, payload: payload, to: &out)
            return
        }
        guard ops.count > 1 else { throw .recordTooLarge(bytes: payload.count + 1, limit: LogFormat.maxRecordLength) }
        let mid = ops.startIndex + ops.count / 2
        try appendRecords(ops[..<mid], to: &out)
        try appendRecords(ops[mid...], to: &out)
    }

    static func maxIDs(_ ops: some Sequence<ListOperation>) -> [ReplicaID: UInt64] {
        var ids: [ReplicaID: UInt64] = [:]
        for op in ops where op.id.counter > ids[op.id.replica, default: 0] { ids[op.id.replica] = op.id.counter }
        return ids
    }

    // MARK: Names

    /// `folder/name`.
    func path(_ name: String) -> String { folder + "/" + name }

    static func snapshotName(_ g: UInt64) -> String { "snapshot-\(g)" }
    static func logName(_ g: UInt64) -> String { "log-\(g)" }
    static func tailName(_ g: UInt64, _ n: Int) -> String { "log-\(g).tail-\(n)" }
}
