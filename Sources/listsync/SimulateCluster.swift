import Foundation
import ListSyncSimulation

let simulateClusterUsage = """
    USAGE: listsync simulate --cluster N [options]

    Runs N cluster nodes, each the daemon's cluster state machine (ClusterMachine) over its own
    copy of the document, sharing a simulated JetStream stream and key-value bucket on a virtual
    clock driven by the seed: answers lost (half of the requests done, half not), publish
    acknowledgements and messages delivered twice, a short trim lease that lapses and is
    contended, nodes killed and restarted with their disk, the NATS server killed (the stream and
    the bucket keep what they acknowledged). Then the faults end, every node runs and reads the
    document, and the oracle checks: nothing acknowledged lost, every copy the same, each
    operation and each value once. Exits 0 when every run passes, 1 when any fails, 2 on bad usage.

    OPTIONS:
      --cluster N         cluster nodes (1 to 16)
      --ops K             edits per run, each on a random live node (default 200)
      --seed S            seed of the first run (default 1)
      --runs R            number of runs with seeds S, S+1, ... (default 1)
      --loss P            percent of requests to the server whose answer is lost (default 10)
      --duplicate P       percent of publish acknowledgements delivered twice (default 10)
      --crashes C         node kills per run, each restarted later (default 3)
      --server-kills C    NATS server kills per run (default 2)
      --trim-after M      messages read after which the lease holder snapshots and trims (default 8)
      --quiet             print only failures and the summary
      --json              print one JSON object instead
      -h, --help          show this help
    """

/// `listsync simulate --cluster N …`: seeded runs of the cluster's state machines.
func runSimulateCluster(_ args: [String]) throws -> Int32 {
    var config = ClusterSimulationConfiguration()
    var runs: UInt64 = 1
    var quiet = false, json = false
    var cursor = ArgumentCursor(args)
    while let arg = cursor.current {
        switch arg {
        case "-h", "--help": print(simulateClusterUsage); return 0
        case "--cluster": config.nodes = try cursor.number("--cluster", 1...16)
        case "--ops": config.operations = try cursor.number("--ops", 0...1_000_000)
        case "--seed": config.seed = try cursor.number("--seed", 0...UInt64.max)
        case "--runs": runs = try cursor.number("--runs", 1...10_000_000)
        case "--loss": config.lossPercent = try cursor.number("--loss", 0...99)
        case "--duplicate": config.duplicatePercent = try cursor.number("--duplicate", 0...100)
        case "--crashes": config.nodeKills = try cursor.number("--crashes", 0...10_000)
        case "--server-kills": config.serverKills = try cursor.number("--server-kills", 0...10_000)
        case "--trim-after": config.trimMessages = try cursor.number("--trim-after", 0...1_000_000)
        case "--quiet": quiet = true
        case "--json": json = true
        default: throw UsageError(message: "unknown option '\(arg)' with --cluster (see listsync simulate --cluster 1 --help)")
        }
        cursor.advance()
    }
    let first = config.seed
    var failed: [UInt64] = []
    var reports: [[String: Any]] = []
    var total = ClusterSimulationReport()
    let start = Date()
    for k in 0..<runs {
        config.seed = first &+ k
        var simulator = ClusterSimulator(config)
        let report = simulator.run()
        if !report.passed { failed.append(config.seed) }
        total.edits += report.edits
        total.acknowledged += report.acknowledged
        total.trims += report.trims
        total.snapshotsLoaded += report.snapshotsLoaded
        total.nodeKills += report.nodeKills
        total.serverKills += report.serverKills
        if json {
            reports.append(["seed": String(report.seed), "passed": report.passed, "failures": report.failures, "edits": report.edits,
                            "acknowledged": report.acknowledged, "trims": report.trims, "snapshotsLoaded": report.snapshotsLoaded,
                            "replay": "listsync simulate \(config.replayArguments)"])
        } else if !quiet || !report.passed {
            print(report)
            if !report.passed { print("replay: listsync simulate \(config.replayArguments)") }
        }
    }
    let seconds = Date().timeIntervalSince(start)
    if json {
        printJSON(["runs": reports, "passed": Int(runs) - failed.count, "failed": failed.count, "failedSeeds": failed.map(String.init),
                   "seconds": seconds])
    } else if runs > 1 || quiet {
        print("summary: \(runs) runs × \(config.nodes) nodes × \(config.operations) edits: \(total.edits) edits, \(total.acknowledged) acknowledged, \(total.nodeKills) node kills, \(total.serverKills) server kills, \(total.trims) trims, \(total.snapshotsLoaded) snapshots loaded, \(runs - UInt64(failed.count)) passed, \(failed.count) failed, \(String(format: "%.1f", seconds)) s (\(String(format: "%.1f", Double(runs) / max(seconds, 1e-9))) seeds/s)")
        if !failed.isEmpty { print("failed seeds: \(failed.prefix(20).map(String.init).joined(separator: " "))") }
    }
    return failed.isEmpty ? 0 : 1
}
