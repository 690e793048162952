import Foundation
import Testing
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import ListSyncTestTraits

/// The name of the thread this runs on (a synchronous call: `Thread.current` is not for async code).
private func threadName() -> String { currentTestThread() ?? "pool thread \(Thread.current.name ?? "")" }

@Suite("Test threads: .ownThread keeps long tests off the cooperative pool")
struct OwnThreadTests {
    @Test("a test marked .ownThread runs on a dedicated thread, before and after it awaits", .ownThread)
    func dedicated() async throws {
        #expect(threadName().hasPrefix("test-wait-"))
        try await Task.sleep(for: .milliseconds(1))
        #expect(threadName().hasPrefix("test-wait-"))
    }

    @Test("testTask runs where the test runs: on its own thread under .ownThread; a plain Task does not", .ownThread)
    func unstructured() async {
        let mine = await testTask { threadName() }.value
        let plain = await Task { threadName() }.value
        #expect(mine == threadName() && mine.hasPrefix("test-wait-"))
        #expect(!plain.hasPrefix("test-"), "a plain Task ran on \(plain)")
        let thrown = await testTask { () async throws -> String in threadName() }.result
        #expect((try? thrown.get()) == mine)
    }

    @Test("testTask in an unmarked test runs on the pool, as Task does")
    func unstructuredOnPool() async {
        #expect(await !testTask { threadName() }.value.hasPrefix("test-"))
    }

    @Test("an unmarked test runs on the pool")
    func pool() {
        #expect(!threadName().hasPrefix("test-"))
    }

    @Test("expectOwnThread fails a test that blocks on the pool (a known issue here), and passes one on its own thread")
    func blockingOnThePool() {
        withKnownIssue { expectOwnThread("a helper that blocks") } matching: { $0.description.contains(".ownThread") }
    }

    @Test("a failed expectation on the dedicated thread belongs to the test", .ownThread)
    func attributed() {
        withKnownIssue { #expect(Bool(false), "recorded on \(threadName())") }
    }
}

@Suite("Test threads: .cpuHeavy runs at a lower priority")
struct CPUHeavyThreadTests {
    @Test("a test marked .cpuHeavy runs on a dedicated thread with nice 10", .cpuHeavy)
    func niced() {
        #expect(threadName().hasPrefix("test-cpu-"))
        #if canImport(Glibc)
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 10)
        #endif
    }
}

/// How many `.timed` or `.loadsMachine` tests of the suite below are inside their body now.
private let insideTurn = Mutex(0)

@Suite("Test turns: .timed and .loadsMachine never run at once")
struct MachineTurnTests {
    /// Holds the turn for a while, checking that nobody else holds it meanwhile.
    private func hold() async throws {
        let before = insideTurn.withLock { n in n += 1; return n }
        #expect(before == 1, "another turn holder was inside")
        for _ in 0 ..< 10 {
            try await Task.sleep(for: .milliseconds(20))
            #expect(insideTurn.withLock { $0 } == 1, "another turn holder came in")
        }
        insideTurn.withLock { $0 -= 1 }
    }

    @Test("a timed test holds the turn", .timed) func timedA() async throws { try await hold() }
    @Test("another timed test waits for it", .timed) func timedB() async throws { try await hold() }
    @Test("a test that loads the machine waits too", .loadsMachine) func loads() async throws { try await hold() }
    @Test("a parameterized timed test takes a turn per case", .timed, arguments: 0 ..< 3)
    func timedCases(_ k: Int) async throws { try await hold() }
}

/// Calls ``expectOwnThread(_:sourceLocation:)`` from a test case marked `.ownThread`: no issue.
@Suite("Test threads: a blocking helper on its own thread")
struct OwnThreadProbe {
    @Test("expectOwnThread records nothing on a dedicated thread", .ownThread)
    func quiet() {
        #expect(currentTestThread() != nil)
        expectOwnThread("a helper that blocks")
    }
}
