import Testing

// Flood tests, and tests that load the whole machine, take turns.
//
// No test's verdict depends on a wall-clock time (Docs/Reliability.md, "Tests on a busy
// machine"): a flood test compares an honest client's time with a control's of the same moment,
// or counts. But what it floods has deadlines of its own (a daemon's 3 s handshake deadline): an
// honest command started beside a test that loads the machine (16 clients editing through a
// daemon, a 66 MB catch-up, 400 documents scraped at once) took over a second to start, and a
// loaded enough machine would make it miss that deadline, a failure of the product's liveness, not
// of the flood. `.timed` and `.loadsMachine` share one turn: at most one test holding either runs
// at a time. The rest of the suite still runs beside it.
//
// A test waits for its turn without holding a thread, and only the test case, not its suite, holds
// the turn (a suite's cases may then interleave with other suites' between cases).

/// Takes one turn of the machine-wide test lock for each test case it applies to (see above).
public struct MachineTurnTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> MachineTurnTrait? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        await MachineTurn.shared.acquire()
        do {
            try await function()
        } catch {
            await MachineTurn.shared.release()
            throw error
        }
        await MachineTurn.shared.release()
    }
}

extension Trait where Self == MachineTurnTrait {
    /// For a flood test (an honest client served while strangers flood a daemon, timed against a
    /// control of the same moment): it never runs beside a `.loadsMachine` test or another `.timed` one.
    public static var timed: Self { MachineTurnTrait() }

    /// For a test that loads the whole machine for seconds (many clients, large documents): it
    /// never runs beside a `.timed` test or another `.loadsMachine` one.
    public static var loadsMachine: Self { MachineTurnTrait() }
}

/// The one turn: a FIFO lock that suspends its waiters (no thread is held while waiting).
actor MachineTurn {
    static let shared = MachineTurn()

    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        precondition(held, "MachineTurn released while not held")
        if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
    }
}
