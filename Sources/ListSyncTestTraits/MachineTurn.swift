import Testing

// Tests that bound a wall-clock time, and tests that load the whole machine, take turns.
//
// A few tests check that an honest client is served in about a second while strangers flood a
// daemon: a daemon a flood locks makes it wait for a handshake deadline (3 s) or fail. Beside the
// whole suite on two cores, the honest command's own start took over a second whenever a test that
// loads the machine ran at the same time (16 clients editing through a daemon, a 66 MB catch-up,
// 400 documents scraped at once), and such a test failed a bound it meets alone in a tenth of it.
// `.timed` and `.loadsMachine` share one turn: at most one test holding either runs at a time, so
// a timed test never runs beside a load generator (nor beside another timed test). The rest of the
// suite still runs beside it, so the bounds keep room for that load.
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
    /// For a test that bounds a wall-clock time (a client served within a second under a flood):
    /// it never runs beside a `.loadsMachine` test or another `.timed` one.
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
