@_spi(Testing) import ListCRDT
import ListStore
import ListSyncRandom
import Synchronization
@_spi(Testing) import ListSync

/// A daemon's disk in the simulator: the production store (``DataFolder``, its ``SharedLog`` and
/// the document's ``DocumentStore``) over a ``SimulatedFileSystem``, so that every write, sync,
/// rename and recovery is the daemon's own code. The log's commit rounds run on a
/// ``ManualCommitExecutor``: appends queue (group commit, as in the daemon) and the round runs when
/// the virtual clock reaches ``syncDue``. A crash cuts the power at a random point of the round in
/// progress, crashes the file system (unsynced bytes lost, the last write of a file torn) and
/// opens the data folder again: the real recovery.
struct SimulatedDisk {
    static let root = "/data"
    let document: DocumentID
    let replica: ReplicaID
    let files: SimulatedFileSystem
    private(set) var executor: ManualCommitExecutor
    private(set) var folder: DataFolder
    private(set) var store: DocumentStore
    /// Appends whose round ran: (ticket, failure).
    let completed = CompletedAppends()
    /// When the queued round runs (virtual ms), if appends wait.
    var syncDue: UInt64?
    /// Tickets appended whose round has not run.
    private(set) var inFlight = 0
    /// Batches appended since the disk was made.
    private(set) var appends = 0
    /// The operations the last recovery found in the log (those of the snapshot's generation, and
    /// any before it still in a live segment).
    private(set) var replayed: [ListOperation] = []

    /// Where appends that ran report (a round's callback runs inside ``ManualCommitExecutor/runPending()``).
    final class CompletedAppends: Sendable {
        let list = Mutex<[(ticket: UInt64, error: StoreError?)]>([])
        func take() -> [(ticket: UInt64, error: StoreError?)] {
            list.withLock { l in
                defer { l = [] }
                return l
            }
        }
    }

    /// A new data folder holding the document (created with `epoch`), and the empty document.
    init(document: DocumentID, replica: ReplicaID, epoch: UInt64, skipsSyncs: Bool) throws(StoreError) {
        self.document = document
        self.replica = replica
        files = SimulatedFileSystem()
        files.ignoresFdatasync = skipsSyncs
        (executor, folder) = try Self.openFolder(files)
        try folder.create(name: "simulated", id: document)
        var options = Self.storeOptions
        options.newEpoch = { epoch }
        (store, _) = try folder.open(document, replica: replica, options: options)
    }

    static var storeOptions: StoreOptions {
        var o = StoreOptions()
        o.pendingLimits = SimulatedDaemon.limits
        return o
    }

    static func openFolder(_ files: SimulatedFileSystem) throws(StoreError) -> (ManualCommitExecutor, DataFolder) {
        let executor = ManualCommitExecutor()
        var options = SharedLogOptions()
        options.executor = executor
        return (executor, try DataFolder(root: root, fileSystem: files.fileSystem, sharedLog: options))
    }

    /// Queues `ops` in the log (durable once the round runs).
    mutating func write(ticket: UInt64, _ ops: [ListOperation], relayed: Bool) {
        inFlight += 1
        appends += 1
        let completed = self.completed
        store.append(ops, relayed: relayed) { error in completed.list.withLock { $0.append((ticket, error)) } }
    }

    /// The queued round runs (write, fdatasync); returns what completed, in order.
    mutating func sync() -> [(ticket: UInt64, error: StoreError?)] {
        executor.runPending()
        let done = completed.take()
        inFlight -= done.count
        return done
    }

    /// Whether an append waits for its round.
    var busy: Bool { inFlight > 0 || syncDue != nil }

    /// The document's log size in bytes since its last snapshot (the policy's snapshot
    /// threshold), nil if the store cannot say.
    var logSize: Int64? { try? store.logSize }
    /// The current snapshot's size in bytes (0: none yet).
    var snapshotBytes: Int64 { (try? store.snapshotBytes) ?? 0 }

    /// Where the daemon keeps the document's stability: `stability` in its folder, as the host.
    var stabilityPath: String { folder.folder(of: document) + "/stability" }

    /// Writes the stability down as the host does, atomically (a temporary file synced, renamed,
    /// the folder synced: ``FileSystem/writeAtomically(_:to:folder:)``).
    func saveStability(_ stability: DocumentStability) throws(StoreError) {
        try files.fileSystem.writeAtomically(stability.encoded(), to: stabilityPath, folder: folder.folder(of: document))
    }

    /// Deletes the stability file, as a replaced disk or a backup restored without it would
    /// (`listsync simulate --lose-stability`); nothing if there is none yet.
    func loseStability() throws(StoreError) {
        let fs = files.fileSystem
        if fs.exists(stabilityPath) { try fs.unlink(stabilityPath) }
    }

    /// The stability as a restarted host reads it (``DocumentStability/recovered(from:now:)``):
    /// the file's, or, where it is missing or unreadable, a stability lost, written at once.
    func loadStability(now: UInt64) throws(StoreError) -> DocumentStability {
        let fs = files.fileSystem
        let bytes = fs.exists(stabilityPath) ? try? fs.readFile(stabilityPath) : nil
        let (stability, problem) = DocumentStability.recovered(from: bytes, now: now)
        if problem != nil { try saveStability(stability) }
        return stability
    }

    /// A snapshot through the store (``DocumentStore/snapshot(_:)``), as the host writes when its
    /// log passed the threshold: nothing may be in flight.
    mutating func snapshot(_ document: ListDocument, relayed: OperationRuns) throws(StoreError) {
        precondition(!busy && !executor.hasPending, "a snapshot with appends in flight")
        try store.snapshot(document, relayed: relayed)
    }

    /// A compaction through the store (``DocumentStore/compact(_:)``): nothing may be in flight
    /// (the host compacts only then).
    mutating func compact(_ document: ListDocument, relayed: OperationRuns) throws(StoreError) {
        precondition(!busy && !executor.hasPending, "a compaction with appends in flight")
        try store.compact(document, relayed: relayed)
    }

    /// A merge back through the store (``DocumentStore/replace(with:)``): the new generation
    /// lacks logged operations (those made again under other ids). Nothing may be in flight.
    mutating func replace(with document: ListDocument, relayed: OperationRuns) throws(StoreError) {
        precondition(!busy && !executor.hasPending, "a replacement with appends in flight")
        try store.replace(with: document, relayed: relayed)
    }

    /// A crash: the power goes after `calls` more mutating calls of the round in progress (if one
    /// waits: 0, before its write; 1, after it; more, after its sync too, unacknowledged), the file
    /// system loses what was not synced (torn last writes drawn from `rng`), and the process's
    /// queued rounds and callbacks are gone.
    mutating func crash(cutAfter calls: Int, using rng: inout SplitMix64) {
        files.cutPower(afterMutatingCalls: calls)
        executor.runPending()
        _ = completed.take()
        executor.discardPending()
        files.crash(using: &rng)
        inFlight = 0
        syncDue = nil
    }

    /// What the recovered store's log said came through a peer link.
    var relayed: OperationRuns { store.recoveryReport.relayed }

    /// Opens the data folder again, as a restarted daemon does: the real recovery.
    mutating func recover() throws(StoreError) -> ListDocument {
        (executor, folder) = try Self.openFolder(files)
        let (store, document) = try folder.open(self.document, replica: replica, options: Self.storeOptions)
        self.store = store
        replayed = []
        for case let .operations(ops) in try folder.sharedLog!.records(of: self.document, maxValueSize: document.maxValueSize) {
            replayed += ops
        }
        return document
    }
}

/// One daemon in the simulator: the production ``DocumentCore`` of the document and the
/// daemon's policy for it (``DocumentHostPolicy``, what its host decides: snapshots, the
/// stability, retirement, compaction), a production ``ServerSession`` per incoming connection, a
/// production ``PeerSession`` per outgoing link, and a ``SimulatedDisk`` (the production store on
/// a simulated file system). Node numbers of the other ends are its subscriber numbers.
struct SimulatedDaemon {
    let node: Int
    let replica: ReplicaID
    let epoch: UInt64
    var core: DocumentCore
    /// The host's policy; made again at a restart (the threshold from the snapshot on disk).
    var policy: DocumentHostPolicy
    /// The store, and the stability file the policy has written (``SimulatedDisk/saveStability(_:)``);
    /// a crash restarts from what they keep.
    var disk: SimulatedDisk
    var servers: [Int: ServerSession] = [:]
    var links: [Int: PeerSession] = [:]
    /// Operation ids this daemon acknowledged to a client, with the batch.
    var acknowledged: Set<OpID> = []
    /// Batches each client has waiting for an ack here: (client node, batch) → last ids.
    var awaitingAck: [Int: [UInt64: [OpID]]] = [:]
    static let limits = PendingLimits(maxOperations: 100_000, maxBytes: 32 << 20)

    init(node: Int, document: DocumentID, epoch: UInt64, variant: DocumentCore.Variant, skipsSyncs: Bool,
         snapshotLogBytes: Int64, compaction: CompactionRule?, engineVariant: EngineVariant = .correct) {
        self.node = node
        replica = ReplicaID(UInt64(1_000 + node))
        self.epoch = epoch
        do {
            disk = try SimulatedDisk(document: document, replica: replica, epoch: epoch, skipsSyncs: skipsSyncs)
            // As the host writes a document's stability file when it creates the document.
            if compaction != nil { try disk.saveStability(DocumentStability()) }
        } catch {
            // An empty in-memory file system has nothing to fail on.
            preconditionFailure("the simulated store did not open: \(error)")
        }
        var doc = ListDocument(replica: replica)
        doc.pendingLimits = Self.limits
        doc.variant = engineVariant
        core = DocumentCore(id: document, name: "simulated", epoch: epoch, document: doc, maxFrame: 1 << 16, stepBytes: 1 << 14)
        core.variant = variant
        policy = DocumentHostPolicy(snapshotLogBytes: snapshotLogBytes, snapshotBytes: disk.snapshotBytes, compaction: compaction)
    }

    /// The policy's decision about `event` (``DocumentHostPolicy/handle(_:core:stabilityNow:now:storeBusy:)``).
    /// The simulated disk runs each call to its end: never busy when asked.
    mutating func decide(_ event: DocumentHostPolicy.Event, stabilityNow: UInt64, now: UInt64) -> [DocumentHostPolicy.Action] {
        policy.handle(event, core: &core, stabilityNow: stabilityNow, now: now)
    }

    /// A crash and a restart: every session is gone, the disk keeps what it keeps, the store's
    /// recovery opens it and the stability file is read (a failure of either is returned; the
    /// daemon then starts from an empty document, or from no stability). With `losingStability`
    /// the stability file is gone when it restarts.
    mutating func crashAndRecover(cutAfter calls: Int, using rng: inout SplitMix64, variant: DocumentCore.Variant,
                                  stabilityNow: UInt64, losingStability: Bool = false) -> String? {
        let engineVariant = core.document.variant
        disk.crash(cutAfter: calls, using: &rng)
        var failure: String?
        if losingStability {
            do throws(StoreError) { try disk.loseStability() } catch { failure = "deleting the stability file: \(error)" }
        }
        var doc: ListDocument
        var relayed = OperationRuns()
        do throws(StoreError) {
            doc = try disk.recover()
            relayed = disk.relayed
        } catch {
            failure = "\(error)"
            doc = ListDocument(replica: replica)
            doc.pendingLimits = Self.limits
        }
        doc.variant = engineVariant
        var stability = DocumentStability()
        do throws(StoreError) { stability = try disk.loadStability(now: stabilityNow) } catch {
            failure = "the stability file: \(error)"
        }
        core = DocumentCore(id: core.id, name: core.name, epoch: epoch, document: doc, maxFrame: 1 << 16, stepBytes: 1 << 14,
                            stability: stability)
        core.variant = variant
        // As the host does: what the log says came through peer links.
        core.noteRelayed(relayed)
        // A new host: its settings as before, the snapshot threshold from the recovered store.
        policy = DocumentHostPolicy(snapshotLogBytes: policy.snapshotLogBytes, snapshotBytes: disk.snapshotBytes,
                                    compaction: policy.compaction)
        servers = [:]
        links = [:]
        awaitingAck = [:]
        return failure
    }
}
