import ListCRDT
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a document of the shared log keeps beside it: its epoch, its snapshot's generation and
/// size, and the highest operation ids handed to the log (a snapshot must cover them).
final class SharedDocument: Sendable {
    struct State: Sendable {
        var epoch: UInt64
        var generation: UInt64
        var snapshotBytes: Int64
        /// The highest counter of each replica in every batch handed to the log, counted before
        /// the append is issued: a snapshot taken while one is in flight is refused.
        var logged: [ReplicaID: UInt64]
        var closed = false
    }

    let state: Mutex<State>

    init(_ state: State) { self.state = Mutex(state) }

    /// The state, unless the store was closed.
    func current() throws(StoreError) -> State {
        try state.withLock { (s: inout State) throws(StoreError) -> State in
            if s.closed { throw .closed }
            return s
        }
    }

    /// The records of `ops`, after counting them as logged; with `relayed`, a record naming them
    /// as relayed first (a crash that keeps the batch keeps it).
    func willAppend(_ ops: [ListOperation], of id: DocumentID, relayed: Bool = false) throws(StoreError) -> [UInt8] {
        let bytes = (relayed ? SharedLogFormat.relayedRecords(OperationRuns(ops), document: id) : [])
            + (try SharedLogFormat.records(for: ops, document: id))
        try state.withLock { (s: inout State) throws(StoreError) in
            if s.closed { throw .closed }
            for (r, c) in DocumentStore.maxIDs(ops) where c > s.logged[r, default: 0] { s.logged[r] = c }
        }
        return bytes
    }
}

/// Documents whose batches go to the data folder's shared log (Docs/Storage.md, "The shared log").
extension DocumentStore {
    /// Opens the document stored in `folder` whose batches go to `log`, creating or recovering it.
    ///
    /// - Its newest snapshot is of format 2: loaded, then its records in the log from the position
    ///   the snapshot covers are replayed; older generations' files are removed.
    /// - Its folder holds a log of its own (a document from before the shared log): that log is
    ///   recovered as always, then the document moves to the shared log (its waiting operations
    ///   appended to the log, a format 2 snapshot written, then its own log removed).
    /// - Neither: the document is its records in the log; with none, it is new (an epoch record
    ///   is appended).
    ///
    /// - Throws: ``StoreError``.
    /// - Complexity: loading the snapshot, plus reading and replaying this document's records.
    public static func open(at folder: String, documentID id: DocumentID, replica: ReplicaID, log: SharedLog,
                            options: StoreOptions = StoreOptions(),
                            fileSystem fs: FileSystem = .system) throws(StoreError) -> (store: DocumentStore, document: ListDocument) {
        if !fs.exists(folder) {
            try fs.mkdir(folder)
            try fs.syncFolder(Opener.parent(of: folder))
        }
        let files = FolderFiles(try fs.list(folder))
        for tmp in files.temporary { try fs.unlink(folder + "/" + tmp) }
        if !files.temporary.isEmpty { try fs.syncFolder(folder) }
        var report = RecoveryReport()
        var document = ListDocument(replica: replica, maxValueSize: options.maxValueSize)
        document.pendingLimits = options.pendingLimits
        var state = SharedDocument.State(epoch: 0, generation: 0, snapshotBytes: 0, logged: [:])

        let newestSnapshot = files.snapshots.max()
        let ownLogs = files.logs
        var covering: LogPosition?
        if let g = newestSnapshot, ownLogs.allSatisfy({ $0 < g }) {
            let path = folder + "/" + snapshotName(g)
            let bytes = try fs.readFile(path)
            let read = try LogFormat.readSnapshotFile(bytes, document: id, path: path)
            if let c = read.covering {
                do {
                    document = try ListDocument(snapshot: read.payload, replica: replica, maxValueSize: options.maxValueSize)
                } catch {
                    throw .corruptSnapshot(path: path, reason: "the document does not load: \(error)")
                }
                document.pendingLimits = options.pendingLimits
                covering = c
                state.epoch = read.epoch
                state.generation = g
                state.snapshotBytes = Int64(bytes.count)
                report.generation = g
                report.loadedSnapshot = true
                // Older generations (of either kind) are behind this one.
                var removed = false
                for old in files.snapshots where old < g { try fs.unlink(folder + "/" + snapshotName(old)); removed = true }
                for old in ownLogs { try fs.unlink(folder + "/" + logName(old)); removed = true }
                if removed {
                    try fs.syncFolder(folder)
                    report.finishedSnapshot = true
                }
            }
        }
        if let covering {
            var epoch = state.epoch
            Opener.replay(try log.records(of: id, from: covering, maxValueSize: options.maxValueSize), into: &document,
                   epoch: &epoch, report: &report)
            state.epoch = epoch
        } else if !ownLogs.isEmpty || newestSnapshot != nil {
            return try migrate(folder: folder, id: id, replica: replica, log: log, options: options, fs: fs)
        } else {
            var epoch: UInt64 = 0
            Opener.replay(try log.records(of: id, maxValueSize: options.maxValueSize), into: &document, epoch: &epoch,
                   report: &report)
            if epoch == 0 {
                epoch = options.newEpoch()
                try log.appendBlocking(SharedLogFormat.epochRecord(epoch, document: id), of: id)
                report.created = true
            }
            state.epoch = epoch
        }
        state.logged = document.version.counters
        for (r, c) in maxIDs(document.pendingOperations) where c > state.logged[r, default: 0] { state.logged[r] = c }
        let store = DocumentStore(folder: folder, documentID: id, options: options, report: report, fs: fs, log: log,
                                  document: SharedDocument(state))
        return (store, document)
    }

    /// A document from before the shared log: recovered from its own log, then moved. A crash at
    /// any step leaves either its own generation whole (opened this way again; what it put in the
    /// shared log meanwhile is covered by the snapshot it then writes) or the new snapshot whole.
    private static func migrate(folder: String, id: DocumentID, replica: ReplicaID, log: SharedLog,
                                options: StoreOptions, fs: FileSystem) throws(StoreError) -> (store: DocumentStore, document: ListDocument) {
        let (own, document) = try open(at: folder, documentID: id, replica: replica, options: options, fileSystem: fs)
        let epoch = try own.epoch
        let g = try own.generation
        var report = own.recoveryReport
        report.movedToSharedLog = true
        try own.close()
        let state = SharedDocument(SharedDocument.State(epoch: epoch, generation: g, snapshotBytes: 0,
                                                        logged: document.version.counters))
        let store = DocumentStore(folder: folder, documentID: id, options: options, report: report, fs: fs, log: log,
                                  document: state)
        try store.snapshotShared(document, relayed: report.relayed, log: log, state: state, dropTails: false)
        return (store, document)
    }

    /// A snapshot of a document of the shared log: generation g + 1, covering every record of it
    /// now in the log.
    ///
    /// The steps, each durable before the next: the document's waiting operations (which a snapshot
    /// does not hold) appended to the log again; `snapshot-<g+1>` (format 2, with the log position it
    /// covers) written (tmp, fsync, rename, fsync folder); `snapshot-<g>` and any own log removed; the
    /// log told, so that it can delete segments no document needs. A crash before the rename leaves
    /// generation g and the log as they were (the operations appended twice are received once).
    func snapshotShared(_ document: ListDocument, relayed: OperationRuns, log: SharedLog, state: SharedDocument,
                        dropTails: Bool, replacing: Bool = false) throws(StoreError) {
        let current = try state.current()
        let pending = document.pendingOperations
        var covered = document.version.counters
        for (r, c) in Self.maxIDs(pending) where c > covered[r, default: 0] { covered[r] = c }
        for (r, c) in current.logged where covered[r, default: 0] < c && !replacing {
            throw .snapshotBehindLog(replica: r, logged: c, inDocument: covered[r, default: 0])
        }
        let position = try log.end
        // After the position the snapshot covers: replayed after it (and durable before it).
        let carry = SharedLogFormat.relayedRecords(relayed, document: documentID)
            + (pending.isEmpty ? [] : try SharedLogFormat.records(for: pending, document: documentID))
        if !carry.isEmpty { try log.appendBlocking(carry, of: documentID) }
        let g = current.generation + 1
        let file = LogFormat.snapshotFile(document.encodedSnapshot(), document: documentID, epoch: current.epoch,
                                          covering: position)
        let path = self.path(Self.snapshotName(g))
        do throws(StoreError) {
            try fs.writeAtomically(file, to: path, folder: folder)
        } catch {
            if fs.exists(path + ".tmp") { try? fs.unlink(path + ".tmp") }
            throw error
        }
        state.state.withLock { s in
            s.generation = g
            s.snapshotBytes = Int64(file.count)
            if replacing { s.logged = covered }
        }
        let files = FolderFiles(try fs.list(folder))
        for old in files.snapshots where old < g { try fs.unlink(self.path(Self.snapshotName(old))) }
        for old in files.logs { try fs.unlink(self.path(Self.logName(old))) }
        if dropTails {
            for (k, numbers) in files.tails { for n in numbers { try fs.unlink(self.path(Self.tailName(k, n))) } }
        }
        try fs.syncFolder(folder)
        try log.covered(documentID, below: position)
    }
}
