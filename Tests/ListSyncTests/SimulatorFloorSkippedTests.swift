import Testing
@_spi(Testing) import ListSync
@_spi(Testing) import ListSyncSimulation

/// A floor that counts what it skipped, in the simulator (Docs/Semantics.md §7, "A floor that
/// counts what it skipped"). Seed 11336 of `listsync simulate --daemons 2 --compact-after 10
/// --hide-daemon --roam 30 --crashes 2 --ops 80` found the case on a build before "An edit its
/// author made again": `c1` sent 6@2–10@2 to the hidden `d0`, which acknowledged them waiting
/// for their causes (1@2–5@2, at `d1` only); `c1` re-synced at `d1` from a snapshot whose floor
/// they were made before (not waited for: `d0` makes them again), went on under later counters,
/// and `d1` compacted at a floor that counts 6@2–14@2 it never held. `d0`'s merge back took the
/// waiting ones for held and dropped them: item 5@2's `title`, written by 7@2, was on no copy.
/// Since the `remade` messages the run's timing no longer shows the case, with or without the
/// rule, and no seed of the lines swept with `DocumentCore.Variant.countsSkippedAsHeld` does
/// (Docs/Simulation.md): the tests that fail without the rule are `FloorSkippedTests`
/// (`waitingSkippedMadeAgain`) and `FloorSkippedCoreTests` (`floorTakenForHeldLosesIt`).
@Suite struct SimulatorFloorSkippedTests {
    @Test("seed 11336, where a merge back took a waiting edit its peer's floor skipped for held, passes: copies parted 0, a merge back")
    func waitingEditsTheFloorSkipped() {
        var simulator = Simulator(SimulatorMergeBackTests.refusedInPart(seed: 11336))
        let report = simulator.run()
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.copiesParted == 0 && report.mergesBack >= 1)
    }
}
