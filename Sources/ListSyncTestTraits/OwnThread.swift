import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Long tests run on threads of their own, not on Swift's cooperative pool.
//
// Swift Testing runs every test on the cooperative pool, which has one thread per core (two on the
// CI machine). A test that computes for a minute, or blocks waiting for a child process, holds one
// of those threads all that time; two such tests at once hold them all, and every task in the
// process stops: an in-process server's handler, a daemon actor, the continuation of a socket test
// that waits for them. Nothing is wrong, yet the socket test fails at its deadline (CI did, twice).
//
// `.ownThread` (or `.cpuHeavy`) on a suite or a test runs each of its test cases with a task executor preference
// for a dedicated thread (SE-0417): the test's synchronous code and the async code it awaits run
// there, in the same task (so `#expect` and `Issue.record` still belong to the test), and the
// pool's threads stay free for everything else. At most `limit` such tests run at once; the
// others wait without holding any thread.

/// Runs each test case of the suite or test it is applied to on a thread of its own (see above).
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    /// Whether the test mostly computes (then it runs at a lower priority, at most one per core at
    /// once) or mostly waits (then it starts at once, at normal priority: its time limit runs).
    public var computes: Bool

    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreadTrait? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        let threads = computes ? TestThreads.computing : TestThreads.waiting
        let executor = await threads.acquire()
        do {
            try await withTaskExecutorPreference(executor) {
                // The preference applies from the next enqueue on: suspend once so that even a
                // test that never awaits runs on the dedicated thread.
                await Task.yield()
                try await TestThreads.$current.withValue(executor) { try await function() }
            }
        } catch {
            await threads.release(executor)
            throw error
        }
        await threads.release(executor)
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs each test case on a thread of its own instead of the cooperative pool, at once and at
    /// normal priority: for tests that block on processes, files or sockets.
    public static var ownThread: Self { OwnThreadTrait(computes: false) }

    /// Runs each test case on a thread of its own at a lower priority (nice 10), at most one per
    /// core at once: for tests that compute for seconds. Whatever waits on the pool, or on a
    /// daemon process a test started, goes first.
    public static var cpuHeavy: Self { OwnThreadTrait(computes: true) }
}

let testThreadKey = "ListSyncTestTraits.thread"

/// Starts an unstructured task that runs where the calling test runs: on the test's own thread
/// under `.ownThread` or `.cpuHeavy`, else on the pool as `Task {}` would.
///
/// A plain `Task {}` does not keep the test's executor preference (SE-0417): its work goes to the
/// cooperative pool, which tests blocking on processes can hold for many seconds, and a responder
/// or a flood started that way stalled past a test's deadline in CI (a NATS request timed out
/// after 20 s). Child tasks (`async let`, task groups) keep the preference without this.
@discardableResult
public func testTask<Success: Sendable>(_ body: sending @escaping () async -> Success) -> Task<Success, Never> {
    Task(executorPreference: TestThreads.current, operation: body)
}

/// ``testTask(_:)`` for a body that throws.
@discardableResult
public func testTask<Success: Sendable>(_ body: sending @escaping () async throws -> Success) -> Task<Success, any Error> {
    Task(executorPreference: TestThreads.current, operation: body)
}

/// The name of the dedicated test thread this runs on (see ``OwnThreadTrait``), or nil on any
/// other thread. A synchronous call: threads are not for async code to ask about.
public func currentTestThread() -> String? {
    Thread.current.threadDictionary[testThreadKey] as? String
}

/// The dedicated threads, reused: at most `limit` are handed out at once.
actor TestThreads {
    /// The executor of the `.ownThread` or `.cpuHeavy` test running in this task, if any.
    @TaskLocal static var current: ThreadExecutor?

    static let computing = TestThreads(name: "cpu", limit: max(2, ProcessInfo.processInfo.activeProcessorCount), nice: 10)
    static let waiting = TestThreads(name: "wait", limit: .max, nice: 0)

    private let name: String
    private let limit: Int
    private let nice: Int32
    private var idle: [ThreadExecutor] = []
    private var created = 0
    private var queue: [CheckedContinuation<ThreadExecutor, Never>] = []

    init(name: String, limit: Int, nice: Int32) {
        self.name = name
        self.limit = limit
        self.nice = nice
    }

    func acquire() async -> ThreadExecutor {
        if let executor = idle.popLast() { return executor }
        if created < limit {
            created += 1
            // A thread name on Linux has at most 15 bytes (else it is not set at all).
            return ThreadExecutor(name: "test-\(name)-\(created)", nice: nice)
        }
        return await withCheckedContinuation { queue.append($0) }
    }

    func release(_ executor: ThreadExecutor) {
        if queue.isEmpty { idle.append(executor) } else { queue.removeFirst().resume(returning: executor) }
    }
}

/// A task executor that runs its jobs, in order, on one thread it owns for the life of the process.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {   // state guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init(name: String, nice: Int32) {
        let thread = Thread { [unowned(unsafe) self] in
            // Recognised by the dictionary entry, not the name: Foundation's Thread.name setter can
            // race with start() and leave the creator's name (it did once in CI).
            Thread.current.name = name
            Thread.current.threadDictionary[testThreadKey] = name
            #if canImport(Glibc)
            // On Linux the nice value is per thread, and who = 0 is the calling thread.
            if nice != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) }
            #endif
            self.run()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Records an issue unless it runs on a dedicated test thread (``OwnThreadTrait``): for helpers
/// that block their thread for a long time (waiting for a child process, polling a condition for up
/// to ``livenessGuardSeconds``). On Swift's cooperative pool two such waits at once hold every
/// thread of it, and every task of the process stops until they end: in-process daemons, device
/// clients and the other tests' continuations (a CI run failed six tests at once that way, each at
/// its own deadline). This makes the mistake fail every run, not only the unlucky ones.
public func expectOwnThread(_ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard currentTestThread() == nil, Test.current != nil else { return }
    Issue.record("\(what()) blocks its thread, and runs on Swift's cooperative pool: give the suite or test the .ownThread trait",
                 sourceLocation: sourceLocation)
}
