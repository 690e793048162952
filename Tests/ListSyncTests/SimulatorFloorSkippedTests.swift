import Testing
@_spi(Testing) import ListSync
@_spi(Testing) import ListSyncSimulation

/// A floor that counts what it skipped, in the simulator (Docs/Semantics.md §7, "A floor that
/// counts what it skipped"). Seed 11336 of `listsync simulate --daemons 2 --compact-after 10
/// --hide-daemon --roam 30 --crashes 2 --ops 80`: `c1` sent 6@2–10@2 to the hidden `d0`, which
/// acknowledged them waiting for their causes (1@2–5@2, at `d1` only); `c1` re-synced at `d1`
/// from a snapshot whose floor they were made before (not waited for: `d0` makes them again),
/// went on under 15@2 and later, and `d1` compacted at `[2:17, 4:19]`, a floor that counts
/// 6@2–14@2 it never held. `d0`'s merge back took the waiting ones for held and dropped them:
/// item 5@2's `title`, written by 7@2, was on no copy.
@Suite struct SimulatorFloorSkippedTests {
    @Test("the hidden daemon's merge back makes again the waiting edits the peer's floor counts but skipped: 11336 passes, copies parted 0; with the floor taken for held (DocumentCore.Variant.countsSkippedAsHeld) it fails")
    func waitingEditsTheFloorSkipped() {
        let config = SimulatorMergeBackTests.refusedInPart(seed: 11336)
        var fixed = Simulator(config)
        let report = fixed.run()
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.copiesParted == 0 && report.mergesBack >= 1)
        var old = config
        old.coreVariant = .countsSkippedAsHeld
        var broken = Simulator(old)
        let failures = broken.run().failures
        #expect(failures.contains { $0.contains("item(5@2).title is lost") }, "11336 passes with the floor taken for held: \(failures)")
    }
}
