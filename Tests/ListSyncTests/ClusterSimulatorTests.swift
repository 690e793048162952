import ListCRDT
@_spi(Testing) import ListSyncSimulation
import ListSyncTestTraits
import Testing
@_spi(Testing) import ListSync

/// The cluster mode of the simulator (`listsync simulate --cluster N`): the production
/// ``ClusterMachine`` of every node over a simulated JetStream, with answers lost and duplicated,
/// contended leases, nodes and the server killed.
@Suite(.cpuHeavy) struct ClusterSimulatorTests {
    /// The run of `seed`: 2 to 5 nodes, by the seed.
    static func run(seed: UInt64, _ change: (inout ClusterSimulationConfiguration) -> Void = { _ in }) -> ClusterSimulationReport {
        var config = ClusterSimulationConfiguration()
        config.seed = seed
        config.nodes = 2 + Int(seed % 4)
        config.operations = 120
        change(&config)
        var sim = ClusterSimulator(config)
        return sim.run()
    }

    @Test("300 seeds of clusters of 2 to 5 nodes: nothing acknowledged lost, every copy the same, each identity once")
    func threeHundredSeeds() {
        var failed: [String] = []
        var trims = 0, loaded = 0, kills = 0, serverKills = 0, republishes = 0
        for seed in UInt64(1)...300 {
            let r = Self.run(seed: seed)
            if !r.passed { failed.append("\(r)") }
            trims += r.trims
            loaded += r.snapshotsLoaded
            kills += r.nodeKills
            serverKills += r.serverKills
            republishes += r.republishes
        }
        #expect(failed.isEmpty, "\(failed.prefix(3).joined(separator: "\n"))")
        // The faults the runs claim were injected, and the paths they claim were taken.
        #expect(trims > 300 && loaded > 100 && kills > 600 && serverKills > 300 && republishes > 300,
                "trims \(trims), snapshots loaded \(loaded), node kills \(kills), server kills \(serverKills), republishes \(republishes)")
    }

    @Test("a machine that trims before the snapshot's head is acknowledged is caught as operations lost")
    func trimBeforeSnapshotAcknowledgedCaught() {
        var caught: UInt64?
        for seed in UInt64(1)...30 {
            let r = Self.run(seed: seed) { $0.variant = .trimsBeforeSnapshotAcknowledged }
            if !r.passed {
                caught = seed
                break
            }
        }
        print("trim before the snapshot is acknowledged: caught after \(caught.map(String.init) ?? "no") seeds")
        #expect(caught != nil)
    }

    @Test("a seed replays exactly")
    func replays() {
        let a = Self.run(seed: 42), b = Self.run(seed: 42)
        #expect(a.description == b.description)
    }
}
