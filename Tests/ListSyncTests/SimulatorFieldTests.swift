import Foundation
import Testing
import ListSyncTestTraits
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSyncSimulation

/// Field writes in the simulator (Docs/Simulation.md, "Field writes"): value sets and removals,
/// counter increments and set changes on random items and sections, alongside the list edits,
/// across every configuration, checked against the oracle's fields and the field intents.
@Suite(.cpuHeavy) struct SimulatorFieldTests {
    static let environment = ProcessInfo.processInfo.environment

    /// A bounded number of seeds (CI time), each a different configuration: 1–3 daemons (a ring
    /// of 3 on some), 0–2 crashes, roaming clients, compaction on every fourth; 40% of edits
    /// write fields. `LISTSYNC_SIM_FIELD_SEEDS` sets the number of seeds.
    @Test("120 seeds with 40% field writes across daemons, ring, crashes, roaming and compaction: converged, no field write lost, every increment counts")
    func acrossConfigurations() {
        let seeds = Self.environment["LISTSYNC_SIM_FIELD_SEEDS"].flatMap(UInt64.init) ?? 120
        let total = SimulatorRuns.run(0..<seeds) { config, seed in
            SimulatorRuns.spread(&config, seed)
            config.ring = config.daemons == 3 && seed % 2 == 0
            config.workload.fieldWrites = 40
        }
        print("simulator fields: \(seeds) seeds, \(total.edits) edits, \(total.fieldWrites) field writes, \(total.fieldChanges) field changes, \(total.increments) increments, \(total.crashes) crashes, \(total.compactions) compactions, \(total.roams) roams")
        #expect(total.fieldWrites > seeds * 20 && total.increments > seeds * 5, "field writes and increments were made")
        #expect(total.crashes > 0 && total.compactions > 0 && total.roams > 0, "the configurations were exercised")
    }

    /// Drags meet field writes of the dragged item (Docs/Simulation.md, "Field writes during a
    /// drag"): while an item is being dragged, its own client or another writes its fields (60%
    /// of hover steps), across daemons, crashes, roaming and compaction; the oracle's field checks
    /// hold for them as for every write.
    @Test("40 seeds with drags on 40% of edits, the dragged item's fields written during the drag by its dragger and by others: converged, no field write lost, every increment counts")
    func dragsWithFieldWrites() {
        let seeds = Self.environment["LISTSYNC_SIM_DRAG_FIELD_SEEDS"].flatMap(UInt64.init) ?? 40
        let total = SimulatorRuns.run(0..<seeds) { config, seed in
            SimulatorRuns.spread(&config, seed)
            config.dragPercent = 40
            config.workload.fieldWrites = 30
            config.workload.dragFieldWrites = 60
        }
        print("simulator drags with field writes: \(seeds) seeds, \(total.drags) drags, \(total.dragFieldWrites) field writes on a dragged item (\(total.dragFieldWritesByDragger) by its dragger), \(total.increments) increments, \(total.crashes) crashes, \(total.compactions) compactions")
        #expect(total.dragFieldWrites > seeds * 5, "field writes were made during drags")
        #expect(total.dragFieldWritesByDragger > 0 && total.dragFieldWritesByDragger < total.dragFieldWrites,
                "both the dragging client and others wrote")
    }

    /// Sections inserted with their first fields, one operation each (wire format 5, sync
    /// protocol version 6), among field writes to them, across daemons, crashes, roaming and
    /// compaction: the oracle's per-field checks hold for the inserts' fields as for writes.
    @Test("30 seeds with every section inserted with its fields: converged, no field write lost, every increment counts")
    func sectionsInsertedWithFields() {
        let seeds = Self.environment["LISTSYNC_SIM_SECTION_FIELD_SEEDS"].flatMap(UInt64.init) ?? 30
        let total = SimulatorRuns.run(0..<seeds) { config, seed in
            SimulatorRuns.spread(&config, seed)
            config.workload.insertSection = 15
            config.workload.deleteSection = 5
            config.workload.fieldWrites = 40
            config.workload.sectionInsertFields = 100
        }
        print("simulator sections with fields: \(seeds) seeds, \(total.sectionFieldInserts) sections inserted with fields, \(total.fieldWrites) field writes, \(total.crashes) crashes, \(total.compactions) compactions, \(total.roams) roams")
        #expect(total.sectionFieldInserts > seeds * 3, "sections were inserted with fields")
    }

    @Test("no field writes (--field-writes 0): none made, and the report says so")
    func noneWhenOff() {
        var config = SimulationConfiguration()
        config.workload.fieldWrites = 0
        config.operations = 100
        var sim = Simulator(config)
        let report = sim.run()
        #expect(report.passed, "\(report)")
        #expect(report.fieldWrites == 0 && report.increments == 0)
        #expect(config.replayArguments.hasSuffix("--field-writes 0"))
    }

    /// The intent checks can fail: a snapshot that drops one replica's increment, loses a field
    /// another replica wrote, or shows a field nobody wrote, is reported.
    @Test("the field-intent check catches a lost increment, a lost field and an invented one")
    func intentCheckHasPower() throws {
        var a = ListDocument(replica: ReplicaID(1))
        _ = try a.insertSection(at: 0)
        let insert = try a.insertItem(at: IndexPath(item: 0, section: 0))
        let item = ItemID(insert.id)
        var b = ListDocument(replica: ReplicaID(2))
        _ = b.receive(a.operations)
        _ = try a.increment("votes", by: 2, ofItem: item)
        _ = try a.setField("title", to: .string("oat milk"), ofItem: item)
        _ = try b.increment("votes", by: 3, ofItem: item)
        _ = try b.setField("done", to: .bool(true), ofItem: item)
        _ = a.receive(b.operations)
        let oracle = SemanticsOracle(a.operations)
        let good = a.snapshot()
        #expect(good.sections[0].items[0].fields["votes"] == .counter(5))
        #expect(oracle.check(good) == nil)
        #expect(oracle.checkFieldIntent(good).isEmpty)

        var lostIncrement = good
        lostIncrement.sections[0].items[0].fields["votes"] = .counter(3)
        #expect(oracle.checkFieldIntent(lostIncrement).contains { $0.contains("increments sum to 5") })
        #expect(oracle.check(lostIncrement) != nil)

        var lostField = good
        lostField.sections[0].items[0].fields["done"] = nil
        #expect(oracle.checkFieldIntent(lostField).contains { $0.contains("done is lost") })

        var invented = good
        invented.sections[0].items[0].fields["colour"] = .value(.string("red"))
        #expect(oracle.checkFieldIntent(invented).contains { $0.contains("nobody wrote") })
    }
}
