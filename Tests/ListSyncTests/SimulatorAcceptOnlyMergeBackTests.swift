import Testing
@_spi(Testing) import ListSync
@_spi(Testing) import ListSyncSimulation

/// A left-out daemon that only accepts links, provoked in the simulator
/// (`listsync simulate --hide-accepting-daemon`, Docs/Simulation.md): the hidden daemon is the
/// last one, which every link dials (a link's dialer is the lower number), so no link of its own
/// reads a peer's snapshot. Its peers' links read its operations, refuse them for their floor and
/// offer it their snapshot (`floorSnapshot`, Docs/Semantics.md §7); it merges back onto it. With
/// links of the builds before (`linksOfferFloor` false) the copies stay apart.
@Suite struct SimulatorAcceptOnlyMergeBackTests {
    /// ``SimulatorMergeBackTests/hiding(_:_:)`` (2–3 daemons, a ring on some, 0–2 crashes, 60
    /// edits, compaction after 10), the last daemon hidden.
    static func hidingAccepting(_ config: inout SimulationConfiguration, _ seed: UInt64) {
        SimulatorMergeBackTests.hiding(&config, seed)
        config.hidesAcceptingDaemon = true
    }

    static let seeds: Range<UInt64> = 430_000..<430_040

    @Test("40 seeds: a daemon no peer knows and that only accepts links, whose clients edited while the others compacted without it, merges back onto the snapshot its peer's link offers: copies parted 0, all converge")
    func acceptingDaemonMergedBack() {
        let total = SimulatorRuns.run(Self.seeds, Self.hidingAccepting)
        print("simulator, a hidden daemon that only accepts links: \(total.mergesBack) copies merged back, \(total.mergedBackOperations) operations made again, copies parted: \(total.copiesParted)")
        #expect(total.copiesParted == 0)
        #expect(total.mergesBack >= 30, "the case is provoked in most runs")
    }

    @Test("with links of the builds before (no floorSnapshot offered) the same seeds part: acknowledged operations stay on the hidden daemon's copy only")
    func partsWithoutTheOffer() {
        let (failed, parted, runs) = SimulatorRuns.parted(Self.seeds.prefix(10)) { config, seed in
            Self.hidingAccepting(&config, seed)
            config.linksOfferFloor = false
        }
        print("simulator, a hidden daemon that only accepts links, without the offer: \(failed) of \(runs) runs parted (\(parted) acknowledged operations missing from some copy)")
        #expect(failed >= runs / 2)
    }
}
