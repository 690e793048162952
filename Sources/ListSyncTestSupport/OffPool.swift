import Foundation

// Blocking work in async tests, kept off Swift's cooperative thread pool.
//
// The pool has one thread per core (two on the CI machine) and Swift Testing runs every test on it,
// in parallel. A test that blocks a pool thread (a poll() with a 10 s timeout, waitUntilExit, a
// CPU-bound minute of simulation) takes that thread from everything else in the process: with two
// such tests at once, an in-process server's handler task cannot run at all, and a socket test
// waiting for that handler's answer fails after its timeout although nothing is wrong. So blocking
// waits and long computations run on a thread of their own, and the test awaits them.

/// Runs `body` on a new thread of its own and returns its result; the calling task is suspended
/// meanwhile, so its pool thread is free for other tasks.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// ``offPool(_:)`` for a body that cannot throw.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
