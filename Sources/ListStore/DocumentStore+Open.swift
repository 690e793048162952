import ListCRDT
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creating and recovering (Docs/Storage.md, "Recovery").
extension DocumentStore {
    /// Opens the document stored in `folder`, creating the folder and an empty document if there is
    /// none, and recovering it otherwise.
    ///
    /// Recovery: the newest generation's snapshot is checked and loaded; its log's header is checked
    /// (a file that is not this document's log is refused, never truncated); the records are
    /// scanned up to the first bad one (short, zero or oversized length, CRC mismatch, unknown type,
    /// undecodable payload) or to an all-zero rest (preallocated space, kept for the next appends);
    /// the bytes of a bad one on are copied to `log-<g>.tail-<n>`, the log is
    /// truncated and fsynced; the intact records are replayed through ``ListDocument/receive(_:)-([ListOperation])``.
    /// A snapshot that a crash interrupted is finished (see ``snapshot(_:)``).
    ///
    /// - Parameters:
    ///   - folder: the document's own folder (created, and its parent fsynced, if missing).
    ///   - replica: the replica the returned document edits as.
    ///   - fileSystem: the file-call funnel (tests pass one with a hook).
    /// - Returns: the store, and the document as it was last made durable.
    /// - Throws: ``StoreError``: ``StoreError/notOurs(path:reason:)``,
    ///   ``StoreError/corruptSnapshot(path:reason:)`` and ``StoreError/inconsistentFolder(path:reason:)``
    ///   leave every file as it was.
    /// - Complexity: O(b) for b bytes on disk, plus loading the snapshot and replaying the log.
    public static func open(
        at folder: String,
        documentID: DocumentID,
        replica: ReplicaID,
        options: StoreOptions = StoreOptions(),
        fileSystem fs: FileSystem = .system
    ) throws(StoreError) -> (store: DocumentStore, document: ListDocument) {
        var opener = Opener(folder: folder, id: documentID, replica: replica, options: options, fs: fs)
        let (document, output) = try opener.run()
        let store = DocumentStore(folder: folder, documentID: documentID, options: options, report: opener.report,
                                  fs: fs, output: output)
        return (store, document)
    }
}

/// The files of a store folder, by kind.
struct FolderFiles {
    var snapshots: Set<UInt64> = []
    var logs: Set<UInt64> = []
    /// Tail numbers by generation.
    var tails: [UInt64: [Int]] = [:]
    /// Leftovers of interrupted atomic writes.
    var temporary: [String] = []

    init(_ names: [String]) {
        for name in names {
            if name.hasSuffix(".tmp") {
                if name.hasPrefix("snapshot-") || name.hasPrefix("log-") { temporary.append(name) }
            } else if let g = Self.number(name, after: "snapshot-") {
                snapshots.insert(g)
            } else if let g = Self.number(name, after: "log-") {
                logs.insert(g)
            } else if name.hasPrefix("log-"), let dot = name.firstIndex(of: ".") {
                let gen = Self.number(String(name[..<dot]), after: "log-")
                let n = Self.number(String(name[dot...]), after: ".tail-")
                if let gen, let n { tails[gen, default: []].append(Int(n)) }
            }
        }
    }

    /// The newest generation with a snapshot or a log.
    var latest: UInt64? { snapshots.union(logs).max() }

    static func number(_ name: String, after prefix: String) -> UInt64? {
        guard name.hasPrefix(prefix) else { return nil }
        let digits = name.dropFirst(prefix.count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }
}

/// The steps of ``DocumentStore/open(at:documentID:replica:options:fileSystem:)``.
struct Opener {
    let folder: String
    let id: DocumentID
    let replica: ReplicaID
    let options: StoreOptions
    let fs: FileSystem
    var report = RecoveryReport()

    init(folder: String, id: DocumentID, replica: ReplicaID, options: StoreOptions, fs: FileSystem) {
        (self.folder, self.id, self.replica, self.options, self.fs) = (folder, id, replica, options, fs)
    }

    func path(_ name: String) -> String { folder + "/" + name }

    mutating func run() throws(StoreError) -> (ListDocument, LogWriter.Output) {
        if !fs.exists(folder) {
            try fs.mkdir(folder)
            try fs.syncFolder(Self.parent(of: folder))
        }
        let files = FolderFiles(try fs.list(folder))
        var folderChanged = false
        for tmp in files.temporary {
            try fs.unlink(path(tmp))
            folderChanged = true
        }
        var document: ListDocument
        var epoch: UInt64 = 0
        let g: UInt64
        /// Where log-<g>'s records end, when recovery scanned it (else its length).
        var recordsEnd: Int64?
        var snapshotBytes: Int64 = 0
        if let latest = files.latest {
            g = latest
            report.generation = g
            if files.snapshots.contains(g) {
                (document, epoch, snapshotBytes) = try loadSnapshot(g)
                report.loadedSnapshot = true
            } else if g > 0 {
                throw .inconsistentFolder(path: folder, reason: "log-\(g) has no snapshot-\(g)")
            } else {
                document = ListDocument(replica: replica, maxValueSize: options.maxValueSize)
            }
            if files.logs.contains(g) {
                let scan = try recoverLog(g, files)
                replay(scan, into: &document, epoch: &epoch)
                recordsEnd = Int64(scan.validLength)
            } else {
                // snapshot-<g> without log-<g>: a snapshot stopped before starting its log. The
                // previous log still holds what the snapshot may lack (operations that were waiting
                // for their dependencies): carry those into the new log.
                var carry: [ListOperation] = []
                if let older = files.logs.filter({ $0 < g }).max() {
                    let base = document.version
                    let scan = try recoverLog(older, files)
                    var ignored = epoch
                    replay(scan, into: &document, epoch: &ignored)
                    for case let .operations(ops) in scan.records { carry += ops.filter { !base.contains($0.id) } }
                }
                let bytes = LogFormat.logHeader(id) + LogFormat.epochRecord(epoch)
                    + (carry.isEmpty ? [] : try DocumentStore.records(for: carry))
                try fs.writeAtomically(bytes, to: path(DocumentStore.logName(g)), folder: folder)
                report.finishedSnapshot = true
            }
            // Generation g is complete: the older ones can go (a snapshot stopped before removing them).
            for old in files.snapshots.union(files.logs) where old < g {
                if files.snapshots.contains(old) { try fs.unlink(path(DocumentStore.snapshotName(old))) }
                if files.logs.contains(old) { try fs.unlink(path(DocumentStore.logName(old))) }
                folderChanged = true
                report.finishedSnapshot = true
            }
        } else {
            g = 0
            epoch = options.newEpoch()
            document = ListDocument(replica: replica, maxValueSize: options.maxValueSize)
            try fs.writeAtomically(LogFormat.logHeader(id) + LogFormat.epochRecord(epoch),
                                   to: path(DocumentStore.logName(0)), folder: folder)
            report.created = true
            folderChanged = false
        }
        if folderChanged { try fs.syncFolder(folder) }

        let logPath = path(DocumentStore.logName(g))
        let fd = try fs.open(logPath, flags: O_RDWR)
        let size: Int64
        do throws(StoreError) { size = try fs.size(fd, path: logPath) } catch {
            try? fs.close(fd, path: logPath)
            throw error
        }
        var logged = document.version.counters
        for (r, c) in DocumentStore.maxIDs(document.pendingOperations) where c > logged[r, default: 0] { logged[r] = c }
        let output = LogWriter.Output(fd: fd, path: logPath, end: min(recordsEnd ?? size, size), allocated: size,
                                      generation: g, snapshotBytes: snapshotBytes, epoch: epoch, logged: logged)
        return (document, output)
    }

    /// The document and epoch of `snapshot-<g>`, and the file's size.
    func loadSnapshot(_ g: UInt64) throws(StoreError) -> (ListDocument, UInt64, bytes: Int64) {
        let p = path(DocumentStore.snapshotName(g))
        let bytes = try fs.readFile(p)
        let (epoch, payload, covering) = try LogFormat.readSnapshotFile(bytes, document: id, path: p)
        if covering != nil {
            throw .inconsistentFolder(path: folder, reason: "\(DocumentStore.snapshotName(g)) is a snapshot of a document kept in the shared log; open the data folder with its log")
        }
        do {
            return (try ListDocument(snapshot: payload, replica: replica, maxValueSize: options.maxValueSize), epoch,
                    Int64(bytes.count))
        } catch {
            throw .corruptSnapshot(path: p, reason: "the document does not load: \(error)")
        }
    }

    /// Scans `log-<g>`; a damaged tail is copied to `log-<g>.tail-<n>` (fsynced), then cut off the
    /// log (fsynced). Preallocated zeros after the last record stay: the next append writes there.
    mutating func recoverLog(_ g: UInt64, _ files: FolderFiles) throws(StoreError) -> LogScan {
        let p = path(DocumentStore.logName(g))
        let bytes = try fs.readFile(p)
        let scan = try LogScan.scan(bytes, document: id, path: p, maxValueSize: options.maxValueSize)
        guard let (_, damage) = scan.damage else { return scan }
        let n = (files.tails[g]?.max() ?? 0) + 1
        let tailPath = path(DocumentStore.tailName(g, n))
        try fs.writeAtomically(Array(bytes[scan.validLength...]), to: tailPath, folder: folder)
        let fd = try fs.open(p, flags: O_RDWR)
        defer { try? fs.close(fd, path: p) }
        try fs.ftruncate(fd, length: Int64(scan.validLength), path: p)
        try fs.fsync(fd, path: p)
        report.bytesKeptAside += bytes.count - scan.validLength
        report.tailPath = tailPath
        report.damage = damage
        return scan
    }

    /// Applies the records of `scan` to `document` through the normal receive path.
    mutating func replay(_ scan: LogScan, into document: inout ListDocument, epoch: inout UInt64) {
        // The limits the operations were accepted under: one refused live is refused here too.
        document.pendingLimits = options.pendingLimits
        Self.replay(scan.records, into: &document, epoch: &epoch, report: &report)
    }

    /// Applies `records` to `document` through the normal receive path; the last epoch record
    /// sets `epoch`.
    static func replay(_ records: [LogRecord], into document: inout ListDocument, epoch: inout UInt64,
                       report: inout RecoveryReport) {
        // Stored history: a field conflict it holds was news when it happened, not now.
        let reports = document.reportsFieldConflicts
        document.reportsFieldConflicts = false
        defer { document.reportsFieldConflicts = reports }
        for record in records {
            switch record {
            case let .operations(ops):
                document.receive(ops)
                report.operationsReplayed += ops.count
            case let .epoch(e):
                epoch = e
            case let .relayed(runs):
                report.relayed.formUnion(runs)
            }
            report.recordsReplayed += 1
        }
        // Field writes of this replica that lost were reported (or not) when the operations
        // first arrived: a reload does not report them again.
        _ = document.takeFieldConflicts()
    }

    static func parent(of folder: String) -> String {
        var trimmed = folder
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
