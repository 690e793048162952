import Testing
@_spi(Testing) import ListSyncSimulation

/// Many seeded simulator runs, as the simulator suites make them.
enum SimulatorRuns {
    /// A configuration per seed, spread over the setups the field and text suites cover: 3–5
    /// clients, 1–3 daemons, 0–2 crashes, roaming on some runs with several daemons, compaction
    /// every 10 operations on every fourth seed; 100 edits.
    static func spread(_ config: inout SimulationConfiguration, _ seed: UInt64) {
        config.replicas = 3 + Int(seed % 3)
        config.daemons = 1 + Int(seed % 3)
        config.crashes = Int(seed / 3 % 3)
        config.roamPercent = config.daemons > 1 && seed % 5 < 2 ? 30 : 0
        config.compactAfter = seed % 4 == 3 ? 10 : nil
        config.operations = 100
    }

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

    /// Runs `seeds` as `configure` says and counts the runs that failed "copies parted", the
    /// acknowledged operations missing from some copy, and the runs (test-power tests of the
    /// merge back: the variant must part copies).
    static func parted(_ seeds: some Sequence<UInt64>, _ configure: (inout SimulationConfiguration, UInt64) -> Void)
        -> (failed: Int, parted: Int, runs: Int) {
        var failed = 0, parted = 0, runs = 0
        for seed in seeds {
            var config = SimulationConfiguration()
            config.seed = seed
            configure(&config, seed)
            var sim = Simulator(config)
            let report = sim.run()
            if report.failures.contains(where: { $0.hasPrefix("copies parted") }) { failed += 1 }
            parted += report.copiesParted
            runs += 1
        }
        return (failed, parted, runs)
    }
}
