import Foundation
import Testing
import ListSyncTestTraits
@_spi(Testing) import ListSync
@_spi(Testing) import ListSyncSimulation

/// Peered daemons compacting at stable prefixes while their clients keep editing, in the
/// simulator (`--busy`: an edit every virtual millisecond; Docs/Semantics.md §7, "Peers while
/// busy"): the oracle's checks hold, no copy parts, and the daemons compact at prefixes.
@Suite(.cpuHeavy) struct SimulatorPeerBusyTests {
    /// 2–3 daemons in a chain (or a ring of 3), 3–5 clients, 0–2 crashes, 80 busy edits,
    /// compaction every 10 operations.
    static func busy(_ config: inout SimulationConfiguration, _ seed: UInt64) {
        config.daemons = 2 + Int(seed % 2)
        config.ring = seed % 4 == 3
        if config.ring { config.daemons = 3 }
        config.replicas = 3 + Int(seed % 3)
        config.crashes = Int(seed / 2 % 3)
        config.operations = 80
        config.compactAfter = 10
        config.editInterval = 1
    }

    @Test("60 seeds of 2–3 peered daemons whose clients edit without pause: every run converges with nothing lost and no copy parted, and the daemons compact at stable prefixes while busy")
    func peersCompactAtPrefixesWhileBusy() {
        let total = SimulatorRuns.run(7_000..<7_060, Self.busy)
        print("simulator, peered daemons while busy: \(total.compactions) compactions, \(total.prefixCompactions) at a stable prefix, copies parted \(total.copiesParted)")
        #expect(total.copiesParted == 0)
        #expect(total.prefixCompactions > 0, "no peered daemon compacted at a prefix")
    }

    /// Seed 3094 of `listsync simulate --daemons 3 --compact-after 10 --hide-daemon --roam 30
    /// --crashes 1 --ops 80`: `d1` counted a daemon as vouching for its proposal through that
    /// daemon's later version, holding it whole (Docs/Semantics.md §7, "An agreement not
    /// missed"), but had checked the proposal before it held that version's operations, and
    /// kept the answer: its policy asked to compact at [2:22] with 1@1, not after it, held.
    @Test("an agreement counted through a version past it checks the prefix again, with that version's operations: seed 3094 passes; with the check kept (DocumentCore.Variant.keepsPrefixCheckOnVouchers, which keeps to stable prefixes, where the answer can change) the policy asks for a compaction the engine refuses")
    func vouchersCheckedAgain() {
        func run(_ variant: DocumentCore.Variant) -> SimulationReport {
            var config = SimulationConfiguration()
            config.seed = 3_094
            config.daemons = 3
            config.compactAfter = 10
            config.hidesDaemon = true
            config.roamPercent = 30
            config.crashes = 1
            config.operations = 80
            config.coreVariant = variant
            var sim = Simulator(config)
            return sim.run()
        }
        let report = run(.correct)
        #expect(report.passed && report.copiesParted == 0, "\(report.failures)")
        let kept = run(.keepsPrefixCheckOnVouchers)
        #expect(kept.failures.contains { $0.contains("compaction at its own compaction point refused") }, "\(kept.failures)")
    }

    @Test("test power: daemons that compact at their own prefix without every daemon's agreement (DocumentCore.Variant.peerPrefixWithoutAgreement) fail some of the same seeds")
    func withoutAgreementFails() {
        var failed = 0
        for seed in UInt64(7_000)..<7_060 where failed == 0 {
            var config = SimulationConfiguration()
            config.seed = seed
            Self.busy(&config, seed)
            config.coreVariant = .peerPrefixWithoutAgreement
            var sim = Simulator(config)
            if !sim.run().passed { failed += 1 }
        }
        #expect(failed > 0, "the broken daemons were not caught")
    }
}
