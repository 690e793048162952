import Dispatch

/// Runs blocking `work` (opening and recovering a store, writing a snapshot) on a Dispatch thread
/// and awaits it, so that neither a cooperative thread nor the calling actor waits for the disk
/// meanwhile.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
