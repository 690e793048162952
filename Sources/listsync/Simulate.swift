import Foundation
import ListSync
import ListSyncSimulation

let simulateUsage = """
    USAGE: listsync simulate [options]

    Runs N replicas that make K random edits (inserts, deletes, moves within and across sections,
    section moves and deletes, multi-item moves, field writes) over an in-memory network with delay, reordering,
    duplication, loss and partitions, all on a virtual clock driven by the seed. Then heals the
    network, runs anti-entropy until quiet, and checks convergence and every invariant.
    Exits 0 when every run passes, 1 when any fails, 2 on bad usage.

    OPTIONS:
      --clients N         clients that edit (default 4; --replicas is the same)
      --daemons D         daemons, each peered with the next (default 1)
      --ring              with 3 daemons or more, the last is peered with the first too
      --crashes C         daemon crashes at random points (default 0): each loses what its
                          disk had not synced and tears its last write, then recovers
      --ops K             edits per run (default 200)
      --seed S            seed of the first run (default 1)
      --runs R            number of runs with seeds S, S+1, ... (default 1)
      --loss P            percent of frames lost (default 5)
      --duplicate P       percent of frames duplicated (default 5)
      --latency A-B       frame delay range in virtual ms (default 1-40)
      --partitions N      partition episodes per run (default 2)
      --compact-after N   each daemon compacts once N operations were logged since its last
                          compaction and every sender has seen them, and with several daemons
                          once every daemon's gossiped stability says so (default: never);
                          clients report `seen`, silent ones are retired, and those left
                          behind re-sync from a snapshot
      --retire-after MS   with --compact-after: virtual ms after which a silent client is
                          retired (default 30)
      --compact-dead-share F
                          with --compact-after: also compact once the bytes a compaction would
                          free reach this share of the document's bytes, as `serve` does (a
                          fraction from 0 to 1 or a percentage; default 0.5; off: only after
                          --compact-after operations)
      --compact-dead-floor B
                          with --compact-after: ... and at least this many bytes (default 64K;
                          a number of bytes, or with K, M or G)
      --snapshot-log-bytes B
                          a daemon snapshots the document once its log passes this many
                          bytes, by the policy `serve` runs (default 4K, scaled down from
                          serve's 4M to the simulator's short logs)
      --busy              with --compact-after: clients edit without pause (one edit every
                          virtual ms): the daemons are not quiescent until the edits end, and
                          compact at stable prefixes meanwhile (unless --compact-quiescent-only)
      --compact-quiescent-only
                          with --compact-after: daemons compact only at quiet moments (by
                          default a daemon with no peer also compacts at the stable prefix
                          while clients still edit, as `serve` does; --compact-stable-prefix
                          says the default)
      --sends-ahead       with --compact-after: clients send each edit at once, even ahead of
                          earlier unacknowledged ones (default: as SyncClient, in order once
                          caught up)
      --roam P            with --daemons 2 or more: percent of clients that know every
                          daemon, and move to the next after each lost connection as a
                          device with alternates does (default 0: each keeps its own)
      --lose-daemon       with --compact-after and --daemons 2 or more: once quiet, the last
                          daemon is lost for good, the operator forgets it on another
                          (--forget-peer), and the clients edit on; every other daemon
                          must compact again
      --lose-daemon-early with --compact-after and --daemons 2 or more: the last daemon
                          is lost for good right after a client counts acknowledged an edit
                          of its own that no other daemon holds yet (from the fourth of the
                          edits on; else once quiet), and forgotten as with --lose-daemon;
                          the device sends that edit again (nothing acknowledged lost)
      --hide-daemon       with --compact-after and --daemons 2 or more: no peer knows the
                          first daemon (its first `seen` lost) and its links stay down while
                          its clients edit; the others compact without it, then its links come
                          up and its copy is merged back onto theirs (nothing acknowledged lost)
      --hide-accepting-daemon  as --hide-daemon, but the hidden daemon is the last one, which
                          only accepts links: its peers' links read its operations, refuse them
                          for their floor and offer it their snapshot (floorSnapshot)
      --forget-live       with --compact-after and --daemons 2 or more: the last daemon is
                          forgotten while it still runs (an operator's mistake): in the
                          second quarter of the edits its peer links are cut and kept down,
                          and its operator forgets it on another (--forget-peer); its clients
                          keep editing on it; later (or once quiet) its links come back, and
                          nothing it acknowledged may be missing from a copy
      --lose-stability    with --compact-after and --crashes: every crash of a daemon also
                          loses its stability file (who counts, what each reported, the peers'
                          table): it restarts counting nobody; nothing acknowledged may be lost
      --field-writes P    percent of edits that write fields of a random item or section:
                          value sets and removals, counter increments, set adds and removes
                          (default 20; 0: none, the runs of before fields)
      --drag-field-writes P  with field writes on: percent of a drag's hover steps at which
                          a client (the dragging one or another) writes fields of the dragged
                          item while the drag is in progress (default 0)
      --section-insert-fields P  percent of section inserts that carry their first fields
                          in the insert, one operation (default 0)
      --text-edits P      percent of edits that type into or remove from an item's text field
                          `notes` (default 0); the oracle checks no character is lost or
                          brought back and no run is split by concurrent typing
      --trace             print, before each run's report, a line per frame delivered and per
                          step of the run (edits, crashes, cut connections, a client's
                          re-sync or settling, merges back), with the virtual time
      --quiet             print only failures and the summary
      --json              print one JSON object instead: each run (seed, passed, failures,
                          counts) and the totals
      --cluster N         run N cluster nodes over a simulated JetStream instead
                          (its own options: listsync simulate --cluster 3 --help)
      -h, --help          show this help

    An option given without what it goes with (--ring without 3 daemons, --roam,
    --lose-daemon, --hide-daemon or --forget-live without 2, --sends-ahead, --retire-after,
    --lose-daemon, --hide-daemon, --hide-accepting-daemon, --forget-live, --lose-stability or
    the --compact-dead options without --compact-after, --lose-stability without --crashes,
    --forget-live with --lose-daemon, --lose-daemon-early or a --hide option) is a usage
    error, not ignored.
    """


func runSimulate(_ args: [String]) throws -> Int32 {
    if args.contains("--cluster") { return try runSimulateCluster(args) }
    var config = SimulationConfiguration()
    var runs: UInt64 = 1
    var quiet = false, json = false
    var given: Set<String> = []
    var cursor = ArgumentCursor(args)
    while let arg = cursor.current {
        given.insert(arg)
        switch arg {
        case "-h", "--help": print(simulateUsage); return 0
        case "--replicas", "--clients": config.replicas = try cursor.number("--clients", 1...64)
        case "--daemons": config.daemons = try cursor.number("--daemons", 1...16)
        case "--ring": config.ring = true
        case "--crashes": config.crashes = try cursor.number("--crashes", 0...10_000)
        case "--ops": config.operations = try cursor.number("--ops", 0...10_000_000)
        case "--seed": config.seed = try cursor.number("--seed", 0...UInt64.max)
        case "--runs": runs = try cursor.number("--runs", 1...10_000_000)
        case "--loss": config.faults.lossPercent = try cursor.number("--loss", 0...99)
        case "--duplicate": config.faults.duplicatePercent = try cursor.number("--duplicate", 0...100)
        case "--partitions": config.partitions = try cursor.number("--partitions", 0...1000)
        case "--latency":
            let text = try cursor.value("--latency")
            let parts = text.split(separator: "-").compactMap { UInt64($0) }
            guard parts.count == 2, parts[0] <= parts[1] else { throw UsageError(message: "--latency must look like 1-40, not '\(text)'") }
            config.faults.latency = parts[0]...parts[1]
        case "--compact-after": config.compactAfter = try cursor.number("--compact-after", 1...10_000_000)
        case "--retire-after": config.retireAfter = try cursor.number("--retire-after", 0...10_000_000)
        case "--compact-dead-share":
            if let share = try parseShare(try cursor.value("--compact-dead-share")) {
                config.reclaimableShare = share
                if config.reclaimableFloor == nil { config.reclaimableFloor = CompactionTrigger.defaultFloor }
            } else {
                config.reclaimableFloor = nil
            }
        case "--compact-dead-floor":
            let text = try cursor.value("--compact-dead-floor")
            guard let floor = parseByteCount(text) else {
                throw UsageError(message: "--compact-dead-floor must be a number of bytes (or 64K, 1M, 1G), not '\(text)'")
            }
            config.reclaimableFloor = floor
        case "--snapshot-log-bytes":
            let text = try cursor.value("--snapshot-log-bytes")
            guard let bytes = parseByteCount(text), bytes >= 1 else {
                throw UsageError(message: "--snapshot-log-bytes must be a number of bytes, 1 or more (or 4K, 1M), not '\(text)'")
            }
            config.snapshotLogBytes = Int64(bytes)
        case "--sends-ahead": config.sendsAhead = true
        case "--busy": config.editInterval = 1
        case "--compact-stable-prefix": config.compactsStablePrefixes = true
        case "--compact-quiescent-only": config.compactsStablePrefixes = false
        case "--lose-daemon": config.losesDaemon = true
        case "--lose-daemon-early": config.losesDaemonEarly = true
        case "--hide-daemon": config.hidesDaemon = true
        case "--hide-accepting-daemon": config.hidesDaemon = true; config.hidesAcceptingDaemon = true
        case "--lose-stability": config.losesStability = true
        case "--forget-live": config.forgetsLiveDaemon = true
        case "--roam": config.roamPercent = try cursor.number("--roam", 0...100)
        case "--field-writes": config.workload.fieldWrites = try cursor.number("--field-writes", 0...100)
        case "--text-edits": config.workload.textEdits = try cursor.number("--text-edits", 0...100)
        case "--section-insert-fields": config.workload.sectionInsertFields = try cursor.number("--section-insert-fields", 0...100)
        case "--drag-field-writes": config.workload.dragFieldWrites = try cursor.number("--drag-field-writes", 0...100)
        case "--quiet": quiet = true
        case "--trace": config.trace = true
        case "--json": json = true
        default: throw UsageError(message: "unknown option '\(arg)'")
        }
        cursor.advance()
    }
    try checkPrerequisites(given, config)
    let first = config.seed
    var failed: [UInt64] = []
    var total = SimulationReport()
    var reports: [[String: Any]] = []
    let start = Date()
    for k in 0..<runs {
        config.seed = first &+ k
        var simulator = Simulator(config)
        let report = simulator.run()
        if !json { for line in simulator.traceLines { print(line) } }
        total.addCounts(of: report)
        if !report.passed { failed.append(config.seed) }
        if json {
            reports.append(["seed": String(report.seed), "passed": report.passed, "failures": report.failures,
                            "edits": report.edits, "fieldWrites": report.fieldWrites, "dragFieldWrites": report.dragFieldWrites, "increments": report.increments, "operations": report.operations, "frames": report.framesSent,
                            "bytes": report.bytesSent, "compactions": report.compactions, "prefixCompactions": report.prefixCompactions, "daemonsLost": report.daemonsLost,
                            "copiesParted": report.copiesParted, "mergesBack": report.mergesBack,
                            "logSnapshots": report.logSnapshots,
                            "replay": "listsync simulate \(config.replayArguments)"])
        } else if !quiet || !report.passed {
            print(report)
            if !report.passed {
                print("replay: listsync simulate \(config.replayArguments)")
            }
            if runs > 1 { print("") }
        }
    }
    if json {
        printJSON(["runs": reports, "passed": Int(runs) - failed.count, "failed": failed.count,
                   "failedSeeds": failed.map(String.init), "edits": total.edits, "frames": total.framesSent,
                   "bytes": total.bytesSent])
    } else if runs > 1 || quiet {
        let seconds = Date().timeIntervalSince(start)
        print("summary: \(runs) runs × \(config.replicas) replicas × \(config.operations) edits: \(total.edits) edits (\(total.fieldWrites) field writes\(total.dragFieldWrites > 0 ? ", \(total.dragFieldWrites) on a dragged item" : ""), \(total.increments) increments), \(total.framesSent) frames, \(total.bytesSent) bytes, \(runs - UInt64(failed.count)) passed, \(failed.count) failed, \(String(format: "%.1f", seconds)) s")
        print("store: \(total.logSnapshots) snapshots written by the daemons' policy as their logs grew")
        if config.crashes > 0 {
            print("crashes: \(total.crashes), the store on the simulated file system: \(total.crashBytesLost) bytes changed back, \(total.crashTornBytesKept) bytes of torn writes kept, \(total.crashTailsKeptAside) log tails put aside by recovery")
        }
        if config.compactAfter != nil {
            print("compaction: \(total.compactions) compactions (\(total.prefixCompactions) at a stable prefix), \(total.retired) senders retired, \(total.snapshots) snapshot catch-ups, \(total.remade) operations remade, \(total.refusedCompacted) batches refused as compacted, \(total.clientCompactions) client compactions")
            if config.forgetsLiveDaemon { print(total.forgottenLiveLine) }
            if config.losesDaemon || config.losesDaemonEarly {
                print("lost daemons: \(total.daemonsLost) lost for good (\(total.daemonsLostEarly) right after acknowledging an edit no other daemon held), \(total.daemonsForgotten) forgotten on the operator's word (the others forget through the gossip), \(total.givenUpResends) times a device sent again edits only a lost daemon acknowledged, \(total.givenUpCausesResends) times others' edits the daemon it caught up with lacked, \(total.lostWithoutACopy) operations it alone acknowledged to a client that keeps no copy (lost with it)")
            }
        }
        if config.daemons > 1 {
            print("clients: \(total.reconnects) reconnects, \(total.roams) to another daemon, \(total.settles) back to settle a refusal")
            print("copies parted: \(total.copiesParted), \(total.mergesBack) copies merged back (\(total.mergedBackOperations) operations made again)")
        }
        if !failed.isEmpty { print("failed seeds: \(failed.prefix(20).map(String.init).joined(separator: " "))") }
    }
    return failed.isEmpty ? 0 : 1
}


/// Refuses an option given without what it goes with (it would change nothing: a run that
/// ignores it says less than the command line claims).
///
/// - Throws: ``UsageError`` naming the option and its prerequisite.
private func checkPrerequisites(_ given: Set<String>, _ config: SimulationConfiguration) throws {
    let compacting = config.compactAfter != nil
    if given.contains("--ring"), config.daemons < 3 {
        throw UsageError(message: "--ring needs --daemons 3 or more (the last daemon is peered with the first), not \(config.daemons)")
    }
    if given.contains("--roam"), config.daemons < 2 {
        throw UsageError(message: "--roam needs --daemons 2 or more (a client roams to another daemon), not \(config.daemons)")
    }
    for option in ["--sends-ahead", "--busy", "--compact-stable-prefix", "--compact-quiescent-only", "--retire-after", "--lose-daemon", "--lose-daemon-early", "--hide-daemon", "--hide-accepting-daemon", "--forget-live", "--lose-stability", "--compact-dead-share", "--compact-dead-floor"]
    where given.contains(option) && !compacting {
        throw UsageError(message: "\(option) needs --compact-after N (it only matters when daemons compact)")
    }
    for option in ["--lose-daemon", "--lose-daemon-early", "--forget-live"] where given.contains(option) && config.daemons < 2 {
        throw UsageError(message: "\(option) needs --daemons 2 or more (another daemon forgets the lost one), not \(config.daemons)")
    }
    // Both cut the last daemon off (or the first, hidden): one provoked case at a time.
    for option in ["--lose-daemon", "--lose-daemon-early", "--hide-daemon", "--hide-accepting-daemon"]
    where given.contains("--forget-live") && given.contains(option) {
        throw UsageError(message: "--forget-live cannot go with \(option) (one provoked case of a daemon cut off at a time)")
    }
    if given.contains("--lose-stability"), config.crashes < 1 {
        throw UsageError(message: "--lose-stability needs --crashes 1 or more (a daemon loses its stability file when it crashes)")
    }
    for option in ["--hide-daemon", "--hide-accepting-daemon"] where given.contains(option) && config.daemons < 2 {
        throw UsageError(message: "\(option) needs --daemons 2 or more (the others compact without the hidden one), not \(config.daemons)")
    }
}
