import ListCRDT
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Snapshots and compaction (Docs/Storage.md, "Snapshot and compact").
extension DocumentStore {
    /// Starts generation g + 1 from `document`, so that a later open loads it instead of replaying
    /// generation g's log, and removes generation g.
    ///
    /// The steps, each durable before the next (Docs/Storage.md): write
    /// `snapshot-<g+1>.tmp`, fsync, rename to `snapshot-<g+1>`, fsync the folder; write
    /// `log-<g+1>.tmp` (header, epoch, and the operations of `document` still waiting for their
    /// dependencies, which the snapshot does not hold), fsync, rename, fsync the folder; switch
    /// appends to it; only then remove `log-<g>` and `snapshot-<g>` and fsync the folder. A crash
    /// at any point leaves either generation g whole, or generation g + 1 whole (open finishes
    /// what was left).
    ///
    /// Appends wait while it runs. The snapshot payload is `document.encodedSnapshot()`.
    ///
    /// - Parameters:
    ///   - document: the document every appended batch was applied to (received into); it must
    ///     contain every logged operation, or hold it among its pending operations.
    ///   - relayed: the operations of `document` that came through a peer link, written in the
    ///     new generation's log (``LogRecordType/relayed``): the records that said so go with
    ///     the old generation.
    /// - Throws: ``StoreError/snapshotBehindLog(replica:logged:inDocument:)`` (nothing written)
    ///   when it does not; ``StoreError/system(call:errno:path:)`` when a file call fails: if
    ///   before the switch, generation g stays in use and appends go on.
    /// - Complexity: O(n) to encode and write a document of n operations.
    public func snapshot(_ document: ListDocument, relayed: OperationRuns = OperationRuns()) throws(StoreError) {
        try startGeneration(from: document, relayed: relayed, dropTails: false)
    }

    /// ``snapshot(_:)``, and also removes every tail that recovery kept aside in older generations
    /// (`log-<k>.tail-<n>` for k ≤ g): compaction is what frees the disk.
    ///
    /// - Complexity: O(n) to encode and write a document of n operations.
    public func compact(_ document: ListDocument, relayed: OperationRuns = OperationRuns()) throws(StoreError) {
        try startGeneration(from: document, relayed: relayed, dropTails: true)
    }

    /// Starts generation g + 1 from `document` as ``compact(_:)`` does, even though `document`
    /// lacks operations the log holds: a device that re-synced from its daemon's snapshot after
    /// being left behind a compaction (Docs/Semantics.md §7) replaces its copy, whose unsent
    /// operations were refused and made again as new ones. Those logged operations are gone
    /// once it returns; until the new generation is complete, the old one stays whole.
    ///
    /// - Complexity: O(n) to encode and write a document of n operations.
    public func replace(with document: ListDocument, relayed: OperationRuns = OperationRuns()) throws(StoreError) {
        try startGeneration(from: document, relayed: relayed, dropTails: true, replacing: true)
    }

    private func startGeneration(from document: ListDocument, relayed: OperationRuns, dropTails: Bool,
                                 replacing: Bool = false) throws(StoreError) {
        let writer: LogWriter
        switch backend {
        case let .own(w): writer = w
        case let .shared(log, doc):
            try snapshotShared(document, relayed: relayed, log: log, state: doc, dropTails: dropTails, replacing: replacing)
            return
        }
        let payload = document.encodedSnapshot()
        let pending = document.pendingOperations
        var covered = document.version.counters
        for (r, c) in Self.maxIDs(pending) where c > covered[r, default: 0] { covered[r] = c }
        let carry = pending.isEmpty ? [] : try Self.records(for: pending)
        try writer.exclusive { (o: inout LogWriter.Output) throws(StoreError) in
            for (r, c) in o.logged where covered[r, default: 0] < c && !replacing {
                throw .snapshotBehindLog(replica: r, logged: c, inDocument: covered[r, default: 0])
            }
            let old = o.generation
            let g = old + 1
            let snapshotPath = path(Self.snapshotName(g))
            let logPath = path(Self.logName(g))
            let newLog = LogFormat.logHeader(documentID) + LogFormat.epochRecord(o.epoch) + LogFormat.relayedRecords(relayed) + carry
            let snapshotFile = LogFormat.snapshotFile(payload, document: documentID, epoch: o.epoch)
            do throws(StoreError) {
                try fs.writeAtomically(snapshotFile, to: snapshotPath, folder: folder)
                try fs.writeAtomically(newLog, to: logPath, folder: folder)
            } catch {
                // Generation g is still whole and in use; leave no half-made g + 1 behind for it.
                for p in [snapshotPath + ".tmp", logPath + ".tmp", logPath, snapshotPath] where fs.exists(p) {
                    try? fs.unlink(p)
                }
                throw error
            }
            let fd = try fs.open(logPath, flags: O_RDWR)
            try? fs.close(o.fd, path: o.path)
            o.fd = fd
            o.path = logPath
            o.end = Int64(newLog.count)
            o.allocated = o.end
            o.snapshotBytes = Int64(snapshotFile.count)
            o.generation = g
            if replacing { o.logged = covered }
            // Generation g + 1 is complete: generation g may go.
            try fs.unlink(path(Self.logName(old)))
            if old > 0 { try fs.unlink(path(Self.snapshotName(old))) }
            if dropTails {
                let files = FolderFiles(try fs.list(folder))
                for (k, numbers) in files.tails where k <= old {
                    for n in numbers { try fs.unlink(path(Self.tailName(k, n))) }
                }
            }
            try fs.syncFolder(folder)
        }
    }
}
