import Foundation
import Testing
import ListSyncTestTraits
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSyncSimulation

/// Text edits in the simulator (Docs/Semantics.md §8.5): clients splice items' `notes` while they
/// edit the list and fields, across daemons, crashes, roaming and compaction; the oracle checks
/// that the replicas converged, no typed character is lost or brought back, and no run typed at
/// one spot is split by concurrent typing.
@Suite(.cpuHeavy) struct SimulatorTextTests {
    static let environment = ProcessInfo.processInfo.environment

    /// `LISTSYNC_SIM_TEXT_SEEDS` sets the number of seeds.
    @Test("60 seeds with 40% text edits across daemons, crashes, roaming and compaction: converged, no character lost, no run split")
    func concurrentTyping() {
        let seeds = Self.environment["LISTSYNC_SIM_TEXT_SEEDS"].flatMap(UInt64.init) ?? 60
        let total = SimulatorRuns.run(0 ..< seeds) { config, seed in
            SimulatorRuns.spread(&config, seed)
            config.workload.textEdits = 40
        }
        print("simulator text: \(seeds) seeds, \(total.edits) edits, \(total.textEdits) text edits, \(total.compactions) compactions")
        #expect(total.textEdits > Int(seeds) * 20, "text edits were made")
    }

    /// One daemon, compacting at stable prefixes too (`--compact-stable-prefix`), devices that
    /// re-sync from snapshots and make their typing again: seed 15 parted a client's copy for
    /// good while a text edit made again kept its first origins (Docs/Semantics.md §7, "Edits made
    /// again are made here").
    @Test("40 seeds of typing at one daemon that compacts at stable prefixes, seed 15 among them: converged, no character lost")
    func typingWithStablePrefixes() {
        var prefixes = 0
        let total = SimulatorRuns.run(0 ..< 40) { config, seed in
            config.replicas = 3
            config.crashes = 2
            config.compactAfter = 10
            config.operations = 100
            config.workload.textEdits = 40
            config.compactsStablePrefixes = true
        } each: { prefixes += $0.prefixCompactions }
        #expect(total.textEdits > 40 * 20, "text edits were made")
        #expect(prefixes > 0, "no compaction at a stable prefix in 40 seeds")
    }

    @Test("the text oracle catches a lost character and a split run")
    func oracleCatchesLoss() throws {
        var a = ListDocument(replica: ReplicaID(1))
        try a.insertSection(at: 0, value: Data())
        let item = ItemID(try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        try a.splice("notes", ofItem: item, at: 0, insert: "<abc>")
        try a.splice("notes", ofItem: item, at: 5, insert: "<de>")
        let oracle = SemanticsOracle(a.operations)
        #expect(oracle.checkText(a.snapshot()).isEmpty)
        // The same operations, shown with a character missing, or a run split by one typed elsewhere.
        var lost = a
        try lost.splice("notes", ofItem: item, at: 1, delete: 1)
        #expect(!oracle.checkText(lost.snapshot()).isEmpty)
        var split = ListDocument(replica: ReplicaID(1))
        try split.insertSection(at: 0, value: Data())
        let other = ItemID(try split.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        try split.splice("notes", ofItem: other, at: 0, insert: "<ab<de>c>")
        var shown = a.snapshot()
        shown.sections[0].items[0].fields = split.snapshot().sections[0].items[0].fields
        #expect(oracle.checkText(shown).contains { $0.contains("split") })
    }
}
