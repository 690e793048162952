import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListTable
import ListSyncTestSupport
#if canImport(Glibc)
import Glibc
#endif

// W15.biglist.N (issue 47): one list of N items (one section) in a real `listsync serve` process,
// imported from an `export`-format file; then, each measured: `DaemonClient.open` with change sets
// and without, `SyncClient`'s first fetch with and without, and the release `listsync` binary's
// commands as a user runs them: `insert DOC 0.0 x` with no copy kept (cold) and again (warm: the
// command-line copy of `--data`'s `clients/`), `show DOC --json` and `export DOC FILE`, each its
// own process (wall time, and its user + system CPU and peak RSS from wait4).

let bigListSizes = [5_000, 20_000, 80_000, 320_000]

/// A child process's wall time, CPU time and peak RSS.
struct ChildRun {
    var status: Int32
    var wallMs: Double
    var cpuMs: Double
    var maxRSS: Int
}

/// Runs `path args` with stdout and stderr to /dev/null, and waits for it: its CPU time from
/// wait4's rusage, its peak RSS from `/usr/bin/time -f %M` run around it (a child spawned from this
/// large process would report this process's RSS as its own maximum: Linux carries it over).
func runMeasured(_ path: String, _ args: [String]) throws -> ChildRun {
    let timeTool = "/usr/bin/time"
    guard FileManager.default.isExecutableFile(atPath: timeTool) else {
        var run = try spawnMeasured(path, args)
        run.maxRSS = -1
        return run
    }
    let out = NSTemporaryDirectory() + "listsync-w15-time-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: out) }
    var run = try spawnMeasured(timeTool, ["-f", "%M", "-o", out, path] + args)
    let kb = (try? String(contentsOfFile: out, encoding: .utf8))?.split(separator: "\n").last.flatMap { Int($0) }
    run.maxRSS = kb.map { $0 * 1024 } ?? -1
    return run
}

/// Runs `path args` with stdout and stderr to /dev/null; wall time and the user + system CPU of it
/// and what it waited for.
func spawnMeasured(_ path: String, _ args: [String]) throws -> ChildRun {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + args).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var pid: pid_t = 0
    let t0 = nowNs()
    let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard rc == 0 else { throw BenchError("posix_spawn \(path): errno \(rc)") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        guard errno == EINTR else { throw BenchError("wait4: errno \(errno)") }
    }
    let wall = Double(nowNs() - t0) / 1e6
    func ms(_ t: timeval) -> Double { Double(t.tv_sec) * 1000 + Double(t.tv_usec) / 1000 }
    let exited = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return ChildRun(status: exited, wallMs: wall, cpuMs: ms(usage.ru_utime) + ms(usage.ru_stime), maxRSS: Int(usage.ru_maxrss) * 1024)
}

/// This process's CPU time (user + system), in nanoseconds.
func selfCPUNs() -> UInt64 {
    var u = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
    func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1_000 }
    return ns(u.ru_utime) + ns(u.ru_stime)
}

/// Process `pid`'s CPU time, in nanoseconds: the sum of its threads' `/proc/PID/task/*/schedstat`
/// (0 where it cannot be read).
func processCPUNs(_ pid: Int32) -> UInt64 { schedstat(pid, field: 0) }

/// How long process `pid`'s threads waited for a CPU while runnable (the second field of their
/// schedstat), in nanoseconds: what a loaded machine adds to the wall time.
func processRunDelayNs(_ pid: Int32) -> UInt64 { schedstat(pid, field: 1) }

/// The sum of one field of `/proc/PID/task/*/schedstat` (0 where it cannot be read).
func schedstat(_ pid: Int32, field: Int) -> UInt64 {
    let tasks = "/proc/\(pid)/task"
    guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return 0 }
    return threads.reduce(0) { sum, t in
        let text = (try? String(contentsOfFile: "\(tasks)/\(t)/schedstat", encoding: .utf8)) ?? ""
        let fields = text.split(separator: " ")
        return sum + (fields.count > field ? UInt64(fields[field]) ?? 0 : 0)
    }
}

/// A `listsync serve` process on a free loopback port, with its own data folder.
final class BenchDaemon {
    let process = Process()
    let data: String
    private(set) var port: UInt16 = 0
    private let output = Pipe()

    init(binary: String, data: String) throws {
        self.data = data
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data", data, "--listen", "127.0.0.1:0"]
        process.standardOutput = output
        process.standardError = output
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let r = text.range(of: "listening on 127.0.0.1:"), text[r.upperBound...].contains("\n"),
               let p = UInt16(text[r.upperBound...].prefix { $0.isNumber }) {
                port = p
                // Keep reading what it prints, so it never blocks on a full pipe.
                PipeDrain.start(output) { _ in }
                return
            }
        }
        process.terminate()
        throw BenchError("the daemon did not say where it listens: \(text)")
    }

    var key: [UInt8] { get throws { [UInt8](try Data(contentsOf: URL(fileURLWithPath: data + "/key"))) } }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// Waits for an async body from synchronous code (the benchmark's workloads are synchronous).
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, any Error>!
    Task {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result.get()
}

/// `ms`, once `live` is checked to show `n` items (read after the timing).
func checkedItems(_ live: LiveDocument, _ n: Int, _ ms: Double, _ what: String) throws -> Double {
    let count = live.snapshot.numberOfItems
    guard count == n else { throw BenchError("\(what) \(count) items, not \(n)") }
    return ms
}

/// W15.biglist.N; with `openOnly` (W15.open.N, for profiling the open), only the import and
/// `DaemonClient.open`, with change sets and without, `rounds` times each.
func w15BigList(n: Int, _ ctx: Context, openOnly: Bool = false) throws -> BenchResult {
    // The listsync next to this benchmark (`swift build -c release` builds both), or another
    // build's (`LISTSYNC_BENCH_BINARY`, to measure it with the same steps).
    let other = ProcessInfo.processInfo.environment["LISTSYNC_BENCH_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
    let binary = other ?? (ctx.executable as NSString).deletingLastPathComponent + "/listsync"
    guard FileManager.default.isExecutableFile(atPath: binary) else { throw BenchError("no listsync binary next to the benchmark: \(binary)") }
    let dir = NSTemporaryDirectory() + "listsync-w15-\(getpid())-\(n)"
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(atPath: dir) }

    // Untimed: the list, as an export file, imported into a fresh daemon.
    var doc = ListDocument(replica: ReplicaID(15))
    try doc.insertSection(at: 0, value: Data("big".utf8))
    for i in 0..<n { try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data("item \(i)".utf8)) }
    let file = dir + "/list.json"
    let object: [String: Any] = ["format": "listsync-export", "version": 1, "name": "w15", "id": "0",
                                 "snapshot": Data(doc.encodedSnapshot()).base64EncodedString()]
    try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(to: URL(fileURLWithPath: file))
    let daemon = try BenchDaemon(binary: binary, data: dir + "/daemon")
    defer { daemon.stop() }
    let client = ["--daemon", "127.0.0.1:\(daemon.port)", "--data", daemon.data]
    let imported = try runMeasured(binary, ["import", file, "--name", "w15"] + client)
    guard imported.status == 0 else { throw BenchError("import exited \(imported.status)") }
    let key = try daemon.key
    let port = daemon.port

    var res = BenchResult(workload: openOnly ? "W15.open.\(n)" : "W15.biglist.\(n)", ops: n)
    res.set("import_ms", imported.wallMs)
    res.set("import_cpu_ms", imported.cpuMs)
    res.set("import_peak_rss_bytes", imported.maxRSS)
    res.set("import_file_bytes", (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1)

    // DaemonClient.open, with change sets and without (a fresh connection and replica each):
    // the first open after the import, and the best of three more.
    // With each open's CPU time: this process's and the daemon's (on a shared machine the wall
    // time is mostly the others' load; the CPU time is what the open costs).
    let daemonPid = daemon.process.processIdentifier
    for changeSets in [true, false] {
        var runs: [(ms: Double, cpu: Double, waited: Double)] = []
        for _ in 0..<(openOnly ? 8 : 4) {
            runs.append(try blockingAwait {
            let c = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: changeSets)
            let info = try await c.resolve("w15")
            let me = getpid()
            let (self0, daemon0) = (selfCPUNs(), processCPUNs(daemonPid))
            let delay0 = processRunDelayNs(me) + processRunDelayNs(daemonPid)
            let t0 = nowNs()
            let live = try await c.open(info.id)
            let ms = Double(nowNs() - t0) / 1e6
            let cpu = Double(selfCPUNs() - self0 + processCPUNs(daemonPid) - daemon0) / 1e6
            let waited = Double(processRunDelayNs(me) + processRunDelayNs(daemonPid) - delay0) / 1e6
            await c.close()
            return (try checkedItems(live, n, ms, "opened"), cpu, waited)
            })
        }
        let name = changeSets ? "open" : "open_nochangesets"
        res.set(name + "_first_ms", runs[0].ms)
        res.set(name + "_ms", runs.dropFirst().map(\.ms).min()!)
        res.set(name + "_cpu_ms", runs.dropFirst().map(\.cpu).min()!)
        // The fastest open's time waiting for a CPU (both processes' threads, summed).
        res.set(name + "_cpu_wait_ms", runs.dropFirst().min { $0.ms < $1.ms }!.waited)
    }
    if openOnly {
        res.ok = true
        res.note = "W15.biglist's import and DaemonClient.open only (first, then the best of seven more)"
        return res
    }

    // SyncClient's first fetch into an empty device folder, with change sets and without.
    for changeSets in [true, false] {
        let folder = dir + "/device-\(changeSets)"
        let (ms, cpu) = try blockingAwait {
            let probe = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false)
            let id = try await probe.resolve("w15").id
            await probe.close()
            let (self0, daemon0) = (selfCPUNs(), processCPUNs(daemonPid))
            let t0 = nowNs()
            let sync = try SyncClient(folder: folder, server: SyncClient.Server(host: "127.0.0.1", port: port, key: key),
                                      changeSets: changeSets)
            let live = try await sync.fetch(id, name: "w15")
            await sync.start()
            try await sync.waitUntilSynced(timeout: .seconds(600))
            let ms = Double(nowNs() - t0) / 1e6
            let cpu = Double(selfCPUNs() - self0 + processCPUNs(daemonPid) - daemon0) / 1e6
            await sync.close()
            return (try checkedItems(live, n, ms, "fetched"), cpu)
        }
        res.set(changeSets ? "fetch_ms" : "fetch_nochangesets_ms", ms)
        res.set(changeSets ? "fetch_cpu_ms" : "fetch_nochangesets_cpu_ms", cpu)
    }

    // The command line: an edit with no copy kept, then with the copy warm; show; export.
    try? FileManager.default.removeItem(atPath: daemon.data + "/clients")
    let cold = try runMeasured(binary, ["insert", "w15", "0.0", "x"] + client)
    let warm = try runMeasured(binary, ["insert", "w15", "0.0", "y"] + client)
    let show = try runMeasured(binary, ["show", "w15", "--json"] + client)
    let export = try runMeasured(binary, ["export", "w15", dir + "/out.json"] + client)
    for (name, run) in [("cli_insert_cold", cold), ("cli_insert", warm), ("cli_show_json", show), ("cli_export", export)] {
        guard run.status == 0 else { throw BenchError("\(name) exited \(run.status)") }
        res.set(name + "_ms", run.wallMs)
        res.set(name + "_cpu_ms", run.cpuMs)
        res.set(name + "_peak_rss_bytes", run.maxRSS)
    }
    res.ok = true
    res.note = "one section of \(n) items imported from an export file into a listsync serve process; open/fetch: "
        + "DaemonClient.open and SyncClient fetch to synced (in this process, a fresh connection each); cli_*: the "
        + "release listsync binary, each its own process (wall ms; cpu = its user + system; peak RSS), insert cold = "
        + "no command-line copy kept, then warm"
    return res
}
