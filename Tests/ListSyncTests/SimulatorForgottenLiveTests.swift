import Testing
@_spi(Testing) import ListSync
@_spi(Testing) import ListSyncSimulation

/// `listsync simulate --forget-live` (Docs/Simulation.md, "A daemon forgotten while it runs"):
/// the last daemon is cut off from its peers and forgotten on another by its operator while its
/// clients edit on; the others compact without it; then its links come back. Seeds of
/// `--daemons 3 --compact-after 10 --crashes 1 --ops 80` where, when the cut healed, it alone held
/// operations it had acknowledged and the others had compacted without it: every copy converges,
/// nothing acknowledged is missing (`copies parted: 0`), and every daemon compacts again once
/// quiet, since the daemons that forgot it take it back (Docs/Semantics.md §7, "A daemon forgotten
/// while it runs"). Without that rule (``DocumentCore/Variant/keepsForgottenForGood``) they
/// never compact again.
@Suite struct SimulatorForgottenLiveTests {
    static let provokedSeeds: [UInt64] = [700_000, 700_003, 700_005, 700_015]

    static func run(_ seed: UInt64, _ variant: DocumentCore.Variant = .correct, daemons: Int = 3) -> SimulationReport {
        var config = SimulationConfiguration()
        config.seed = seed
        config.daemons = daemons
        config.compactAfter = 10
        config.crashes = 1
        config.operations = 80
        config.forgetsLiveDaemon = true
        config.coreVariant = variant
        var sim = Simulator(config)
        return sim.run()
    }

    @Test("a daemon forgotten while it runs, holding acknowledged operations past the others' floor when its links come back: the run converges, copies parted 0, and every daemon compacts again", arguments: provokedSeeds)
    func forgottenWhileRunning(seed: UInt64) {
        let report = Self.run(seed)
        #expect(report.daemonsForgottenLive == 1 && report.forgottenLiveProvoked == 1, "the case is provoked")
        #expect(report.forgottenLiveAlone > 0 && report.forgottenLiveCompactions > 0)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.copiesParted == 0)
    }

    @Test("test power: without taking the forgotten daemon back (DocumentCore.Variant.keepsForgottenForGood), the daemons never compact again once quiet")
    func withoutTakingBack() {
        let reports = Self.provokedSeeds.map { Self.run($0, .keepsForgottenForGood) }
        print("simulator, --forget-live without taking back: \(reports.filter { !$0.passed }.count) of \(reports.count) runs failed")
        #expect(reports.allSatisfy { report in report.failures.contains { $0.contains("did not compact once quiet") } })
    }

    /// Seed 700047 of `--daemons 2` (same options): the forgotten daemon took the other's snapshot
    /// whole after it published, and, before both rules below, refused its own clients' edits made
    /// on it for ever, as not after that version (Docs/Semantics.md §7, "A published version below
    /// the floor"). Either rule alone repairs it: the published version is not checked below the
    /// floor (``DocumentCore/Variant/publishesOnlyAfterAnOperation`` leaves that one alone), or the
    /// daemon publishes the floor's version at once (``DocumentCore/Variant/checksPublishedBelowFloor``
    /// leaves that one alone). The power of the first is shown by `PublishedBelowFloorTests`.
    @Test("a forgotten daemon that took a snapshot whole after it published takes its clients' edits made on it (seed 700047), with both rules and with either alone")
    func publishedBelowTheFloor() {
        for variant in [DocumentCore.Variant.correct, .checksPublishedBelowFloor, .publishesOnlyAfterAnOperation] {
            let report = Self.run(700_047, variant, daemons: 2)
            #expect(report.failures.isEmpty, "\(variant): \(report.failures)")
        }
    }

    /// Seed 700175 (the first line's options): the forgotten daemon took the other's snapshot
    /// whole and, with no edit coming after, never published again; its entry stayed below the
    /// others' floor, so they never took it back, and `d0` waited for ever for a daemon to claim
    /// its client (Docs/Semantics.md §7, "A daemon forgotten while it runs").
    @Test("a forgotten daemon that took a snapshot whole publishes its version at the floor and is taken back (seed 700175); with DocumentCore.Variant.publishesOnlyAfterAnOperation a relay author stays unclaimed for ever")
    func publishesAtTheFloor() {
        let report = Self.run(700_175)
        #expect(report.failures.isEmpty, "\(report.failures)")
        let old = Self.run(700_175, .publishesOnlyAfterAnOperation)
        #expect(old.failures.contains { $0.contains("claimed by no daemon") }, "\(old.failures)")
    }
}

