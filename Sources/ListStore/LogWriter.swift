import Dispatch
import ListCRDT
import Synchronization

/// Where the commit rounds that no appending caller leads run (``SharedLogOptions/executor``).
///
/// The daemon's log runs them on a serial dispatch queue of its own; the simulator passes a
/// ``ManualCommitExecutor`` and runs them when its virtual clock says the disk is done, so that the
/// same group commit runs deterministically.
public protocol CommitExecutor: Sendable {
    /// Runs `round` later, after every round given before it.
    func execute(_ round: @escaping @Sendable () -> Void)
}

/// The production executor: a serial dispatch queue.
struct DispatchCommitExecutor: CommitExecutor {
    let queue: DispatchQueue
    func execute(_ round: @escaping @Sendable () -> Void) { queue.async(execute: round) }
}

/// Commit rounds that run only when ``runPending()`` is called (the simulator's disk).
public final class ManualCommitExecutor: CommitExecutor {
    let pending = Mutex<[@Sendable () -> Void]>([])

    /// An executor with nothing to run.
    public init() {}

    public func execute(_ round: @escaping @Sendable () -> Void) { pending.withLock { $0.append(round) } }

    /// Whether a round waits to run.
    public var hasPending: Bool { pending.withLock { !$0.isEmpty } }

    /// Runs what waits, and what that gives to run, until nothing waits; returns how many ran.
    ///
    /// - Complexity: the rounds' own.
    @discardableResult
    public func runPending() -> Int {
        var ran = 0
        while true {
            let work = pending.withLock { p in
                let w = p
                p = []
                return w
            }
            if work.isEmpty { return ran }
            for w in work { w() }
            ran += work.count
        }
    }

    /// Forgets what waits without running it (the process it belonged to crashed).
    public func discardPending() { pending.withLock { $0 = [] } }
}

/// The appending end of a document's log, with group commit: every append is one `pwrite` of whole
/// records followed by one `fdatasync`, and the appends that arrive while a sync runs share the next
/// one.
///
/// Leader and followers: an append queues its records; if no commit round is running, the caller
/// leads one (takes everything queued, writes it in one `pwrite`, `fdatasync`s, completes every
/// entry of the round); if more entries queued meanwhile, the writer's executor (a serial dispatch
/// queue, or the simulator's ``ManualCommitExecutor``) leads the next rounds until the queue is
/// empty. Blocking callers wait on a semaphore, async callers on a
/// continuation, so an async append never holds a cooperative thread while the disk syncs.
///
/// After a failed write or sync the writer is failed for good (after a failed `fsync` Linux may
/// have dropped the dirty pages, so retrying could acknowledge lost data): reopen the store.
final class LogWriter: Sendable {
    /// The open log file and what the store knows about it; guarded by ``output``, held for the
    /// whole of a commit round or a snapshot.
    struct Output {
        var fd: Int32
        var path: String
        /// Where the next records go: the end of the last record.
        var end: Int64
        /// The file's length: `end` plus the zeros preallocated after it (Docs/Storage.md,
        /// "Preallocation").
        var allocated: Int64
        var generation: UInt64
        /// The size of `snapshot-<generation>` (0 for generation 0, which has none).
        var snapshotBytes: Int64 = 0
        var epoch: UInt64
        /// The highest counter of each replica in every operation this store has logged (from the
        /// recovered document on): a snapshot must cover it.
        var logged: [ReplicaID: UInt64]
        var failure: StoreError?
        var closed = false
        var syncs = 0
    }

    /// A queued append.
    struct Entry {
        var bytes: [UInt8]
        var maxIDs: [ReplicaID: UInt64]
        var epoch: UInt64?
        /// Called once the round ended: the error, or nil and where the bytes were written.
        var done: @Sendable (StoreError?, Placement) -> Void
        /// Called when the bytes are durable, with the file still held (before ``afterRound``).
        var placed: (@Sendable (Placement) -> Void)? = nil
    }

    /// Where an entry's bytes went: the file (its ``Output/generation``) and the offset in it.
    struct Placement: Sendable {
        var generation: UInt64
        var offset: Int64
    }

    struct Queue {
        var entries: [Entry] = []
        var leading = false
    }

    let fs: FileSystem
    let output: Mutex<Output>
    let queue = Mutex(Queue())
    let drain: any CommitExecutor
    /// Zero bytes written after the records whenever a round would pass ``Output/allocated``
    /// (``StoreOptions/preallocation``).
    let preallocation: Int
    /// Runs after every successful round, with the file still held (a shared log starts its next
    /// segment there). An error is not the round's: the records are durable either way.
    let afterRound: (@Sendable (inout Output) -> Void)?
    /// The smallest chunk of zeros preallocated (a page), unless ``preallocation`` is smaller.
    static let minimumChunk = 4096

    init(fs: FileSystem, output: Output, label: String, preallocation: Int, executor: (any CommitExecutor)? = nil,
         afterRound: (@Sendable (inout Output) -> Void)? = nil) {
        self.fs = fs
        self.output = Mutex(output)
        self.preallocation = max(0, preallocation)
        self.afterRound = afterRound
        drain = executor ?? DispatchCommitExecutor(queue: DispatchQueue(label: "ListStore.commit.\(label)"))
    }

    // MARK: Appending

    /// Appends `bytes` (whole records) and returns once they are durable.
    func commit(_ bytes: [UInt8], maxIDs: [ReplicaID: UInt64], epoch: UInt64? = nil) throws(StoreError) {
        _ = try commitPlacedBlocking(bytes, maxIDs: maxIDs, epoch: epoch)
    }

    /// Queues `bytes` (whole records) and returns at once; `placed` runs as soon as they are
    /// durable, before the round lets go of the file; `done` is called once they are durable
    /// (or their round failed), from the round that wrote them, which the executor runs.
    func commitPlaced(_ bytes: [UInt8], maxIDs: [ReplicaID: UInt64], placed: (@Sendable (Placement) -> Void)? = nil,
                      done: @escaping @Sendable (Result<Placement, StoreError>) -> Void) {
        let entry = Entry(bytes: bytes, maxIDs: maxIDs, epoch: nil, done: { error, placement in
            done(error.map { .failure($0) } ?? .success(placement))
        }, placed: placed)
        if enqueue(entry) { drain.execute { self.drainAll() } }
    }

    /// The blocking form of ``commitPlaced(_:maxIDs:placed:done:)``: the caller leads a round if none
    /// runs, and waits on a semaphore otherwise.
    func commitPlacedBlocking(_ bytes: [UInt8], maxIDs: [ReplicaID: UInt64] = [:], epoch: UInt64? = nil,
                              placed: (@Sendable (Placement) -> Void)? = nil) throws(StoreError) -> Placement {
        let semaphore = DispatchSemaphore(value: 0)
        let box = Mutex<Result<Placement, StoreError>?>(nil)
        let entry = Entry(bytes: bytes, maxIDs: maxIDs, epoch: epoch, done: { error, placement in
            box.withLock { $0 = error.map { .failure($0) } ?? .success(placement) }
            semaphore.signal()
        }, placed: placed)
        if enqueue(entry) {
            if runRound() { drain.execute { self.drainAll() } }
        }
        semaphore.wait()
        return try box.withLock { $0 }!.get()
    }

    /// Queues `entry`; true if the caller is to lead (no round is running).
    private func enqueue(_ entry: Entry) -> Bool {
        queue.withLock { q in
            q.entries.append(entry)
            if q.leading { return false }
            q.leading = true
            return true
        }
    }

    private func drainAll() {
        while runRound() {}
    }

    /// One commit round: writes and syncs everything queued, completes it. Returns whether more
    /// entries are queued (the caller keeps leading); when not, leadership is given up.
    private func runRound() -> Bool {
        let batch = queue.withLock { q in
            let b = q.entries
            q.entries = []
            return b
        }
        var placements: [Placement] = []
        placements.reserveCapacity(batch.count)
        let error: StoreError? = output.withLock { o in
            if let failure = o.failure { return .failed(first: failure.description) }
            if o.closed { return .closed }
            var bytes = batch.count == 1 ? batch[0].bytes : []
            if batch.count > 1 {
                bytes.reserveCapacity(batch.reduce(0) { $0 + $1.bytes.count })
                for e in batch { bytes += e.bytes }
            }
            let recordsEnd = o.end + Int64(bytes.count)
            // Past the preallocated space: the same pwrite writes the next chunk of zeros after the
            // records, so later rounds overwrite written blocks and their fdatasync has no file
            // length (no journal commit) to make durable. The chunk is as long as the log so far
            // (one page at least, `preallocation` at most): a small document's log stays small.
            var chunk = 0
            if recordsEnd > o.allocated, preallocation > 0 {
                chunk = min(preallocation, max(Self.minimumChunk, Int(recordsEnd)))
                bytes.append(contentsOf: repeatElement(0, count: chunk))
            }
            do throws(StoreError) {
                do throws(StoreError) {
                    try fs.pwriteAll(o.fd, bytes, offset: o.end, path: o.path)
                } catch where chunk > 0 && error.isNoSpace {
                    // The zeros did not fit; the records alone may: preallocation must never be
                    // why a batch is refused. (Whatever part of the zeros was written is free
                    // space to recovery.)
                    bytes.removeLast(chunk)
                    try fs.pwriteAll(o.fd, bytes, offset: o.end, path: o.path)
                }
                try fs.fdatasync(o.fd, path: o.path)
            } catch {
                o.failure = error
                return error
            }
            o.allocated = max(o.allocated, o.end + Int64(bytes.count))
            var at = o.end
            for e in batch {
                let placement = Placement(generation: o.generation, offset: at)
                placements.append(placement)
                e.placed?(placement)
                at += Int64(e.bytes.count)
            }
            o.end = recordsEnd
            o.syncs += 1
            for e in batch {
                for (r, c) in e.maxIDs where c > o.logged[r, default: 0] { o.logged[r] = c }
                if let epoch = e.epoch { o.epoch = epoch }
            }
            afterRound?(&o)
            return nil
        }
        let nowhere = Placement(generation: 0, offset: -1)
        for (i, e) in batch.enumerated() { e.done(error, error == nil ? placements[i] : nowhere) }
        return queue.withLock { q in
            if q.entries.isEmpty {
                q.leading = false
                return false
            }
            return true
        }
    }

    // MARK: Exclusive access

    /// Runs `body` with the log to itself: no commit round runs meanwhile (snapshots swap the file).
    func exclusive<T: Sendable>(_ body: (inout Output) throws(StoreError) -> T) throws(StoreError) -> T {
        try output.withLock { (o: inout Output) throws(StoreError) -> T in
            if let failure = o.failure { throw .failed(first: failure.description) }
            if o.closed { throw .closed }
            return try body(&o)
        }
    }

    /// Closes the file; later appends fail with ``StoreError/closed``.
    func close() throws(StoreError) {
        try output.withLock { (o: inout Output) throws(StoreError) in
            guard !o.closed else { return }
            o.closed = true
            try fs.close(o.fd, path: o.path)
        }
    }
}
