import Testing
@_spi(Testing) import ListSyncSimulation

/// Many seeded simulator runs, as the simulator suites make them.
enum SimulatorRuns {
    /// Runs `seeds`, each configured by `configure` (from the defaults and the seed), and calls
    /// `each` with every report; records a failing run's report and replay command as an issue,
    /// and stops after three failures. Returns the reports' counts added up
    /// (``SimulationReport/addCounts(of:)``).
    static func run(_ seeds: Range<UInt64>, _ configure: (inout SimulationConfiguration, UInt64) -> Void,
                    each: (SimulationReport) -> Void = { _ in }) -> SimulationReport {
        var total = SimulationReport()
        var failures = 0
        for seed in seeds where failures < 3 {
            var config = SimulationConfiguration()
            config.seed = seed
            configure(&config, seed)
            var sim = Simulator(config)
            let report = sim.run()
            total.addCounts(of: report)
            each(report)
            if !report.passed {
                failures += 1
                Issue.record("\(report)\nreplay: swift run listsync simulate \(config.replayArguments)")
            }
        }
        return total
    }
}
