import Testing
import ListSync
import ListSyncSimulation

/// `listsync simulate --trace` (``SimulationConfiguration/trace``): a line per frame delivered and
/// per step of a run, the same for the same seed (Docs/Simulation.md, "Tracing a seed").
@Suite struct SimulatorTraceTests {
    @Test("a traced run notes its frames and steps, the same lines for the same seed; untraced, none, and the run is the same")
    func traceIsDeterministic() {
        var config = SimulatorMergeBackTests.refusedInPart()
        config.trace = true
        var first = Simulator(config), second = Simulator(config)
        let a = first.run(), b = second.run()
        #expect(!first.traceLines.isEmpty)
        #expect(first.traceLines == second.traceLines)
        #expect(first.traceLines.contains { $0.contains(" → ") && $0.contains("operations batch") })
        #expect(first.traceLines.contains { $0.contains("merges back onto") })
        config.trace = false
        var quiet = Simulator(config)
        let c = quiet.run()
        #expect(quiet.traceLines.isEmpty)
        #expect(a.description == b.description && a.description == c.description, "tracing changes nothing of the run")
    }
}
