import Foundation
import Testing
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSyncSimulation

/// A daemon without peers compacting under a chain of concurrent edits, in the simulator
/// (Docs/Semantics.md §7, "Compacting under a chain of concurrent edits"; Docs/Simulation.md).
@Suite struct SimulatorConcurrentCompactionTests {
    /// `listsync simulate --compact-after 10 --busy --ops 100 --seed N` (7001xx, 7002xx) and
    /// `--compact-after 10 --crashes 2 --ops 100 --seed N` (7402xx): seeds where a daemon whose
    /// floor admits concurrent operations receives an operation that depends on an admitted one.
    /// Taken for after the floor by that alone (``EngineVariant/takesDependentsOfAdmitted``, the
    /// first build's rule), it fails them.
    static func configuration(_ seed: UInt64) -> SimulationConfiguration {
        var config = SimulationConfiguration()
        config.seed = seed
        config.operations = 100
        config.compactAfter = 10
        if seed < 740_000 { config.editInterval = 1 } else { config.crashes = 2 }
        return config
    }

    static let seeds: [UInt64] = [700147, 700167, 740212, 740242]

    @Test("seeds where an operation depends on an admitted one: judged by the heads in its past, every copy converges and nothing acknowledged is lost", arguments: seeds)
    func dependentsOfAdmittedJudged(seed: UInt64) {
        var sim = Simulator(Self.configuration(seed))
        let report = sim.run()
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.compactions > 0)
    }

    @Test("test power: daemons that take an operation for after the floor once it depends on an admitted one (EngineVariant.takesDependentsOfAdmitted) fail the same seeds")
    func dependentsOfAdmittedTakenFail() {
        var failed = 0
        for seed in Self.seeds {
            var config = Self.configuration(seed)
            config.daemonVariant = .takesDependentsOfAdmitted
            var sim = Simulator(config)
            let report = sim.run()
            if !report.failures.isEmpty { failed += 1 }
            print("seed \(seed) with takesDependentsOfAdmitted: \(report.failures.first ?? "passed")")
        }
        #expect(failed == Self.seeds.count)
    }
}
