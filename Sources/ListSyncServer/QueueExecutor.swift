import Dispatch

/// A serial executor that runs an actor's jobs on a dispatch queue of its own instead of Swift's
/// cooperative pool (one thread per core: two on a small machine).
///
/// A ``DocumentHost`` makes blocking store calls (a snapshot's writes and fsyncs, a close, a
/// reopen after a failed disk): on the cooperative pool each would hold one of its few threads and
/// stall every other connection and document meanwhile. On its own queue only that document's
/// work waits; Dispatch gives a blocked queue a thread of its own. Actor semantics are unchanged
/// (one job at a time, in order).
final class QueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// Runs blocking `work` (opening and recovering a store) on a Dispatch thread and awaits it, so
/// that neither a cooperative thread nor the calling actor waits for the disk meanwhile.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
