import Foundation
import ListCRDT
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A data folder: many documents by id under one root, and a lock file so that one process (one
/// `DataFolder`) uses it at a time.
///
/// ```
/// <root>/                           mode 0700 (a folder group or others can write to is refused)
/// <root>/lock                       flock(LOCK_EX | LOCK_NB) held while the DataFolder is open
/// <root>/documents/<id>/name        the document's name (UTF-8), written atomically
/// <root>/documents/<id>/...         the DocumentStore files
/// <root>/documents/.trash-<id>/      a destroyed or dropped document's folder while it is removed
/// <root>/destroyed/<id>              a deletion record (``DestroyedRecord``), mode 0600
/// ```
///
/// A destroyed document (``destroy(_:epoch:time:)``) leaves its deletion record, written durably
/// before anything of the document is removed; opening the folder finishes any removal a crash
/// interrupted (a record with the document's folder still there: the record wins).
///
/// The lock is an `flock` on an open file description: a second process, or a second `DataFolder`
/// in this one (its own descriptor), gets ``StoreError/locked(path:)``. It goes with the process
/// (a crash or `kill -9` releases it).
public final class DataFolder: Sendable {
    /// The root folder.
    public let root: String
    /// The write-ahead log every document's batches go to (`<root>/wal`), when the folder has one;
    /// nil when each document keeps a log of its own.
    public let sharedLog: SharedLog?
    let fs: FileSystem
    let lock: Mutex<Int32?>

    /// One document of the folder.
    public struct Entry: Hashable, Sendable {
        /// Its id.
        public var id: DocumentID
        /// Its name, as given to ``DataFolder/create(name:id:)``.
        public var name: String
    }

    /// How many times a held lock is tried, 25 ms apart, before ``StoreError/locked(path:)``.
    static let lockAttempts = 20

    /// Opens (creating if needed, mode 0700) the data folder at `root` and takes its lock.
    ///
    /// Everything created in it is the owner's only (``FileSystem/fileMode``,
    /// ``FileSystem/folderMode``). An existing folder that group or others may write to is refused.
    ///
    /// With `sharedLog` (or when the folder has a `wal` folder already) every document's batches
    /// go to one write-ahead log (Docs/Storage.md, "The shared log"): it is opened and recovered
    /// here, and a document that still has a log of its own moves to it when opened.
    ///
    /// - Throws: ``StoreError/locked(path:)`` when another process or `DataFolder` holds it (after
    ///   trying for half a second);
    ///   ``StoreError/insecureFolder(path:mode:)`` when group or others can write to it.
    public init(root: String, fileSystem: FileSystem = .system, sharedLog: SharedLogOptions? = nil) throws(StoreError) {
        self.root = root
        fs = fileSystem
        if !fs.exists(root) {
            try fs.mkdir(root)
            try fs.syncFolder(Opener.parent(of: root))
        }
        if let mode = fs.permissions(root), mode & 0o022 != 0 { throw .insecureFolder(path: root, mode: mode) }
        let lockPath = root + "/lock"
        let fd = try fs.open(lockPath, flags: O_RDWR | O_CREAT)
        // Held: tried again for up to half a second. A holder that just closed may live on for a
        // moment in a child process this one is spawning (between its fork and its exec, the
        // child shares every descriptor, the lock's too); a real second holder is still refused.
        var attempts = 0
        while true {
            do throws(StoreError) {
                try fs.flock(fd, LOCK_EX | LOCK_NB, path: lockPath)
                break
            } catch {
                if case .system(_, let code, _) = error, code == EWOULDBLOCK || code == EAGAIN {
                    attempts += 1
                    if attempts < Self.lockAttempts {
                        usleep(25_000)
                        continue
                    }
                    try? fs.close(fd, path: lockPath)
                    throw .locked(path: lockPath)
                }
                try? fs.close(fd, path: lockPath)
                throw error
            }
        }
        lock = Mutex(fd)
        let documents = root + "/documents"
        var log: SharedLog?
        do throws(StoreError) {
            if !fs.exists(documents) {
                // Its entry in the root is durable only with the root's fsync: without it a crash
                // could take every document created since (with no shared log, nothing else
                // syncs the root).
                try fs.mkdir(documents)
                try fs.syncFolder(root)
            }
            let walPath = root + "/wal"
            if sharedLog != nil || fs.exists(walPath) {
                log = try SharedLog.open(folder: walPath, options: sharedLog ?? SharedLogOptions(), fileSystem: fs)
            }
        } catch {
            lock.withLock { held in
                if let f = held { try? fileSystem.close(f, path: lockPath) }
                held = nil
            }
            self.sharedLog = nil
            throw error
        }
        self.sharedLog = log
        do throws(StoreError) {
            try finishRemovals()
            if let log {
                // Records of documents no longer here (destroyed or removed) are never read.
                for id in log.documents where !fs.exists(folder(of: id) + "/name") { try log.forget(id) }
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    var documentsPath: String { root + "/documents" }

    /// The folder of document `id`.
    public func folder(of id: DocumentID) -> String { documentsPath + "/" + id.description }

    /// Creates a document named `name` (with a fresh random id unless `id` is given) and returns its id.
    /// Its store is created by the first ``open(_:replica:options:)``.
    ///
    /// - Throws: ``StoreError/closed`` after ``close()``.
    @discardableResult
    public func create(name: String, id: DocumentID? = nil) throws(StoreError) -> DocumentID {
        try checkOpen()
        var rng = SystemRandomNumberGenerator()
        let id = id ?? DocumentID.random(using: &rng)
        if isDestroyed(id) { throw .destroyed(id) }
        let folder = folder(of: id)
        try fs.mkdir(folder)
        try fs.syncFolder(documentsPath)
        try fs.writeAtomically(Array(name.utf8), to: folder + "/name", folder: folder)
        return id
    }

    /// Renames document `id` to `name`: its `name` file replaced atomically (a temporary file,
    /// fsynced, renamed over it, the folder fsynced), so a crash leaves the old name or the new one.
    ///
    /// - Throws: ``StoreError/destroyed(_:)`` or ``StoreError/unknownDocument(_:)`` for an id this
    ///   folder does not hold (nothing is written); ``StoreError/closed`` after ``close()``.
    public func rename(_ id: DocumentID, to name: String) throws(StoreError) {
        try checkOpen()
        if isDestroyed(id) { throw .destroyed(id) }
        let folder = folder(of: id)
        guard fs.exists(folder + "/name") else { throw .unknownDocument(id) }
        try fs.writeAtomically(Array(name.utf8), to: folder + "/name", folder: folder)
    }

    /// Opens document `id`'s store (recovering it; see ``DocumentStore/open(at:documentID:replica:options:fileSystem:)``).
    ///
    /// - Throws: ``StoreError/unknownDocument(_:)`` for an id this folder does not have.
    /// - Complexity: that of recovery.
    public func open(_ id: DocumentID, replica: ReplicaID,
                     options: StoreOptions = StoreOptions()) throws(StoreError) -> (store: DocumentStore, document: ListDocument) {
        try checkOpen()
        let folder = folder(of: id)
        if isDestroyed(id) { throw .destroyed(id) }
        guard fs.exists(folder + "/name") else { throw .unknownDocument(id) }
        if let sharedLog {
            if sharedLog.hasFailed { try sharedLog.recover() }
            return try DocumentStore.open(at: folder, documentID: id, replica: replica, log: sharedLog, options: options,
                                          fileSystem: fs)
        }
        return try DocumentStore.open(at: folder, documentID: id, replica: replica, options: options, fileSystem: fs)
    }

    /// Every document, ordered by id; folders that are not documents are skipped.
    ///
    /// - Complexity: O(d) file reads for d documents.
    public func list() throws(StoreError) -> [Entry] {
        try checkOpen()
        return try Self.entries(root: root, fileSystem: fs)
    }

    /// The documents of the data folder at `root` without taking its lock (a daemon may hold it):
    /// an operator's command that only reads names. Ordered by id; none when there is no folder.
    ///
    /// - Complexity: O(d) file reads for d documents.
    public static func entries(root: String, fileSystem fs: FileSystem = .system) throws(StoreError) -> [Entry] {
        let documents = root + "/documents"
        guard fs.exists(documents) else { return [] }
        var entries: [Entry] = []
        for name in try fs.list(documents) {
            guard let id = DocumentID(hex: name), fs.exists(documents + "/" + name + "/name") else { continue }
            let bytes = try fs.readFile(documents + "/" + name + "/name")
            entries.append(Entry(id: id, name: String(decoding: bytes, as: UTF8.self)))
        }
        return entries.sorted { $0.id < $1.id }
    }

    /// How many documents the folder holds: the entries of `documents/` named by an id, without
    /// reading their names (what ``list()`` adds).
    ///
    /// - Complexity: O(d) for d entries (one `readdir`), no file reads.
    public func count() throws(StoreError) -> Int {
        try checkOpen()
        return try fs.list(documentsPath).count { DocumentID(hex: $0) != nil }
    }

    // MARK: Destroying

    var destroyedPath: String { root + "/destroyed" }

    private func recordPath(_ id: DocumentID) -> String { destroyedPath + "/" + id.description }

    /// Whether document `id` was destroyed (its deletion record exists; nothing is read).
    public func isDestroyed(_ id: DocumentID) -> Bool { fs.exists(recordPath(id)) }

    /// Destroys document `id`: writes its deletion record (`destroyed/<id>`: the epoch it had and
    /// `time`, Unix milliseconds; mode 0600, written atomically and its folder synced), and only
    /// then removes its folder (``remove(_:)``). From then on ``create(name:id:)`` and
    /// ``open(_:replica:options:)`` refuse the id with ``StoreError/destroyed(_:)``. Close its
    /// store first. Destroying it again rewrites nothing and finishes the removal.
    ///
    /// A crash at any point leaves the document whole, or the record (with all, part or none of
    /// the folder, which the next opening of the data folder removes).
    ///
    /// - Complexity: O(f) file calls for the document's f files.
    public func destroy(_ id: DocumentID, epoch: UInt64, time: UInt64) throws(StoreError) {
        try checkOpen()
        if !isDestroyed(id) {
            if !fs.exists(destroyedPath) {
                try fs.mkdir(destroyedPath)
                try fs.syncFolder(root)
            }
            let text = "epoch \(String(epoch, radix: 16))\ntime \(time)\n"
            try fs.writeAtomically(Array(text.utf8), to: recordPath(id), folder: destroyedPath)
        }
        try remove(id)
    }

    /// Removes document `id`'s folder without a deletion record (a device dropping its copy):
    /// renamed to `documents/.trash-<id>` and the folder synced (from then on it is not listed),
    /// then removed, and the folder synced again. Nothing there is fine.
    ///
    /// - Complexity: O(f) file calls for the document's f files.
    public func remove(_ id: DocumentID) throws(StoreError) {
        try checkOpen()
        let trash = documentsPath + "/.trash-" + id.description
        if fs.exists(folder(of: id)) {
            try fs.removeTree(trash)   // a trash left by an earlier removal of the same id
            try fs.rename(folder(of: id), to: trash)
            try fs.syncFolder(documentsPath)
        }
        if let sharedLog { try sharedLog.remove(id) }
        guard fs.exists(trash) else { return }
        try fs.removeTree(trash)
        try fs.syncFolder(documentsPath)
    }

    /// Document `id`'s deletion record, if it was destroyed.
    public func destroyedRecord(_ id: DocumentID) throws(StoreError) -> DestroyedRecord? {
        let path = recordPath(id)
        guard fs.exists(path) else { return nil }
        return DestroyedRecord(id: id, text: String(decoding: try fs.readFile(path), as: UTF8.self))
    }

    /// Every deletion record, ordered by id (records that do not parse count, with epoch and time 0).
    ///
    /// - Complexity: O(d) file reads for d records.
    public func destroyedRecords() throws(StoreError) -> [DestroyedRecord] {
        try checkOpen()
        guard fs.exists(destroyedPath) else { return [] }
        var out: [DestroyedRecord] = []
        for name in try fs.list(destroyedPath) {
            guard let id = DocumentID(hex: name), let r = try destroyedRecord(id) else { continue }
            out.append(r)
        }
        return out.sorted { $0.id < $1.id }
    }

    /// The ids of the destroyed documents, from the names in `destroyed/` (no record is read).
    ///
    /// - Complexity: O(d) for d records (one `readdir`).
    public func destroyedIDs() throws(StoreError) -> Set<DocumentID> {
        try checkOpen()
        guard fs.exists(destroyedPath) else { return [] }
        return Set(try fs.list(destroyedPath).compactMap { DocumentID(hex: $0) })
    }

    /// Finishes what a crash interrupted: the folders of destroyed documents, and trash folders.
    private func finishRemovals() throws(StoreError) {
        for name in try fs.list(documentsPath) where name.hasPrefix(".trash-") {
            try fs.removeTree(documentsPath + "/" + name)
            try fs.syncFolder(documentsPath)
        }
        guard fs.exists(destroyedPath) else { return }
        for name in try fs.list(destroyedPath) {
            guard let id = DocumentID(hex: name), fs.exists(folder(of: id)) else { continue }
            try remove(id)
        }
    }

    /// Releases the lock. The stores opened through this folder stay open; close them first.
    public func close() {
        try? sharedLog?.close()
        lock.withLock { fd in
            guard let f = fd else { return }
            try? fs.close(f, path: root + "/lock")
            fd = nil
        }
    }

    private func checkOpen() throws(StoreError) {
        guard lock.withLock({ $0 != nil }) else { throw .closed }
    }
}


/// A destroyed document's deletion record (`<root>/destroyed/<id>`), kept so that a peer's or a
/// device's copy does not bring it back.
public struct DestroyedRecord: Hashable, Sendable {
    /// The document's id.
    public var id: DocumentID
    /// The epoch it had when it was destroyed.
    public var epoch: UInt64
    /// When, in Unix milliseconds.
    public var time: UInt64

    /// A record.
    public init(id: DocumentID, epoch: UInt64, time: UInt64) {
        (self.id, self.epoch, self.time) = (id, epoch, time)
    }

    /// Reads the record's text (`epoch <hex>` and `time <ms>` lines); what does not parse is 0:
    /// the id alone is what is refused.
    init(id: DocumentID, text: String) {
        var epoch: UInt64 = 0, time: UInt64 = 0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "epoch" { epoch = UInt64(parts[1], radix: 16) ?? 0 }
            if parts[0] == "time" { time = UInt64(parts[1]) ?? 0 }
        }
        self.init(id: id, epoch: epoch, time: time)
    }
}
