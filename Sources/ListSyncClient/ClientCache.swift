import ListCRDT
import ListStore
import Synchronization

/// The copies of daemon documents that a command-line client keeps between runs, so that a
/// command opens a document by catching up from its copy's version (what changed since the last
/// run) instead of downloading and rebuilding the whole list (`Docs/Client.md`, "The command
/// line's copy").
///
/// One folder per ``ClientReplica`` slot (`<slot file>.cache`), one ``ListStore/DocumentStore``
/// in it per document: a snapshot plus a log of appended batches, each record checked by its
/// CRC32C. The slot's `flock` is the lock: only the process holding the slot uses its cache, so
/// two commands at once never write the same files. A copy that does not load (a damaged or
/// foreign snapshot, an inconsistent folder) is removed and fetched again; a log torn at its end
/// loses only its damaged tail, which the next catch-up brings back. What the copy holds is only
/// ever operations the daemon sent or acknowledged as durable, so resuming from it sends the
/// daemon nothing it does not already have, unless a daemon lost them (then they go back to it).
public final class ClientCache: Sendable {
    /// The folder of the copies.
    public let folder: String
    private let fs: FileSystem
    private let stores = Mutex<[DocumentID: DocumentStore]>([:])

    /// Uses (and makes, mode 0700) `folder`.
    ///
    /// - Throws: ``ListStore/StoreError`` when the folder cannot be made.
    public init(folder: String, fileSystem fs: FileSystem = .system) throws(StoreError) {
        try DeviceFolder.makeParents(of: folder, fs: fs)
        if !fs.exists(folder) { try fs.mkdir(folder) }
        self.folder = folder
        self.fs = fs
    }

    /// The cache of a client replica slot: `<slot file>.cache`.
    public convenience init(for slot: ClientReplica, fileSystem fs: FileSystem = .system) throws(StoreError) {
        try self.init(folder: slot.path + ".cache", fileSystem: fs)
    }

    deinit {
        for store in stores.withLock({ Array($0.values) }) { try? store.close() }
    }

    private func path(_ id: DocumentID) -> String { folder + "/" + id.description }

    /// The kept copy of `document`, editing as `replica`, and the epoch it belongs to; nil when
    /// none is kept (nothing was cached yet, or the copy was damaged and has been removed).
    ///
    /// - Complexity: O(b) for b bytes of the copy, plus loading its snapshot and log.
    public func load(_ document: DocumentID, replica: ReplicaID) -> (document: ListDocument, epoch: UInt64)? {
        close(document)
        for attempt in 0..<2 {
            do {
                let (store, doc) = try DocumentStore.open(at: path(document), documentID: document, replica: replica,
                                                          options: Self.options, fileSystem: fs)
                stores.withLock { $0[document] = store }
                guard doc.operationCount > 0 else { return nil }
                return (doc, try store.epoch)
            } catch {
                // Damaged, or not a copy of this document: fetched again from nothing.
                close(document)
                if attempt == 0 { try? fs.removeTree(path(document)) }
            }
        }
        return nil
    }

    /// Brings the copy of `document` up to `current`, the live copy after a catch-up from what
    /// ``load(_:replica:)`` returned (`held`; nil when nothing was held): appends the operations
    /// `current` applied since, or, when the catch-up replaced the copy (`replaced`: a daemon's
    /// snapshot) or nothing was held, writes `current` whole. Starts a new generation when the
    /// log has grown past the snapshot. Failures only cost the next run a longer catch-up.
    ///
    /// - Complexity: O(k) for k new operations; O(n) for a document of n operations when it is
    ///   written whole.
    public func update(_ document: DocumentID, to current: ListDocument, from held: ListDocument?,
                       replaced: Bool, epoch: UInt64) async {
        guard let store = stores.withLock({ $0[document] }) else { return }
        do {
            if (try? store.epoch) != epoch { _ = try store.resetEpoch(to: epoch) }
            if let held, !replaced, current.operationCount >= held.operationCount {
                try await append(store, try current.operations(from: held.operationCount), current: current)
            } else {
                try store.replace(with: current)
            }
        } catch {
            drop(document)
        }
    }

    /// Appends operations made or uploaded by this client that the daemon acknowledged;
    /// `current` is the live copy that holds them.
    ///
    /// - Complexity: O(k) to encode k operations, plus one write and one sync; O(n) for a
    ///   document of n operations when the log has grown past the snapshot (a new generation).
    public func append(_ document: DocumentID, _ operations: [ListOperation], current: ListDocument) async {
        guard let store = stores.withLock({ $0[document] }) else { return }
        do { try await append(store, operations, current: current) } catch { drop(document) }
    }

    private func append(_ store: DocumentStore, _ operations: [ListOperation], current: ListDocument) async throws(StoreError) {
        guard operations.count <= max(Self.minimumLogOperations, current.operationCount / 2) else {
            // Most of the document (an import, a first catch-up): written once, as a snapshot,
            // not logged and then snapshotted again.
            try store.compact(current)
            return
        }
        try await store.append(operations)
        if try store.logSize > max(Self.minimumLog, try store.snapshotBytes) { try store.compact(current) }
    }

    /// Forgets the copy of `document` (its epoch changed, it was destroyed, or a write failed).
    public func drop(_ document: DocumentID) {
        close(document)
        try? fs.removeTree(path(document))
    }

    private func close(_ document: DocumentID) {
        if let store = stores.withLock({ $0.removeValue(forKey: document) }) { try? store.close() }
    }

    /// A log this long is kept before a new snapshot, even when the snapshot is smaller.
    static let minimumLog: Int64 = 1 << 20
    /// A batch of at most this many operations is always appended, even to a small document.
    static let minimumLogOperations = 1_024

    static var options: StoreOptions {
        var o = StoreOptions()
        o.preallocation = 0
        return o
    }
}
