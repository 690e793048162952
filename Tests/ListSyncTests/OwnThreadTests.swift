import Foundation
import Testing
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

    @Test("an unmarked test runs on the pool")
    func pool() {
        #expect(!threadName().hasPrefix("test-"))
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
