import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncFiles
import ListTable
import Synchronization
import ListSyncRandom

// listsync-load: many clients editing shared lists through one `listsync serve` process.
// Starts the daemon (the `listsync` binary next to this one) on a fresh data folder, connects
// CLIENTS clients over TCP, each making EDITS edits (MOVES% moves, a share of them on the same
// "hot" items, the rest inserts and some deletes) on one of DOCS documents, every edit waiting for
// its acknowledgement (durable on the daemon's disk). Then it waits until every client of a
// document holds the same list with every item once, and prints the figures (Docs/Reliability.md).

let usage = """
    USAGE: listsync-load [--clients N] [--edits N] [--docs N] [--moves PERCENT] [--deletes PERCENT]
                         [--seed S] [--json] [--kill-after] [--binary PATH] [--daemon HOST:PORT… --key-file FILE]
                         [--seconds S] [--progress S] [--rate N]
           listsync-load --kill-cycles K [--clients N] [--json] [--binary PATH]
           listsync-load --idle-clients N [--resident-docs M] [--json] [--binary PATH]
           listsync-load --device N [--json] [--binary PATH]
           listsync-load --recovery-docs N [--json] [--binary PATH]

    --daemon, repeated (cluster nodes, Docs/Cluster.md): the documents are made on the first, the
    clients take the daemons in turn.
    Defaults: 64 clients, 1000 edits each, 8 documents, 40% moves, 10% deletes, seed 1; a daemon
    started here. The rest of the edits are inserts (--moves 0 --deletes 0: inserts only).
    --seconds S: each client stops editing after S seconds (or after its EDITS, whichever is
    first); then convergence is checked as usual.
    --rate N: each client makes at most N edits a second (paced; 0, the default: as fast as its
    acknowledgements come).
    --progress S: every S seconds while the clients edit, one line on stderr: edits acknowledged
    so far and in the last S seconds, edits failed by kind, the first failure.
    --kill-after: once the clients have converged, kill the daemon with SIGKILL, restart it on the
    same data folder, and check with a fresh client that every acknowledged insert is there
    (missing_acknowledged in the result; not with --daemon).
    --kill-cycles K: clients insert (each insert acknowledged) while the daemon is killed with
    SIGKILL K times at random moments and restarted on the same data folder and port; the clients
    reconnect; at the end every acknowledged insert must be in the list, each item once.
    --idle-clients N: N clients connect, subscribe to one document and stay idle; prints the
    daemon's RSS per connection; then M (default 1000) small documents are made resident: RSS per
    resident document. Raise the open-file limit first (ulimit -n) for N near 1000 or more.
    --device N: the device client (SyncClient): cold open of an N-item document from the device's
    store against fetching it from the daemon; bytes on the wire resuming after 1,000 offline edits
    against their encoded size; durable local edits per second against SQLite (WAL, synchronous=FULL).
    --recovery-docs N: N small documents, then SIGKILL and a restart on the same data: seconds to
    the first answer and to every document opened again (LISTSYNC_STORAGE=per-document compares
    with a log per document).
    """

struct Config {
    var clients = 64, edits = 1000, docs = 8, moves = 40, deletes = 10
    var killAfter = false
    var seed: UInt64 = 1
    var json = false
    var binary: String?
    /// `--daemon`, repeatable: the clients are spread over these, in turn (cluster nodes).
    var daemons: [(String, UInt16)] = []
    var daemon: (String, UInt16)? { daemons.first }
    var keyFile: String?
    var killCycles = 0
    var idleClients = 0, residentDocs = 1_000
    var deviceItems = 0
    var recoveryDocs = 0
    /// `--seconds`: the clients stop editing after this long (0: after their edits).
    var seconds = 0.0
    /// `--progress`: a line on stderr every this many seconds while the clients edit (0: none).
    var progress = 0.0
    /// `--rate`: edits a second per client at most (0: no pacing).
    var rate = 0.0
}

func parse() -> Config {
    var c = Config()
    var args = Array(CommandLine.arguments.dropFirst())[...]
    func next(_ name: String) -> String {
        guard let v = args.popFirst() else { FileHandle.standardError.write(Data("\(name) needs a value\n".utf8)); exit(2) }
        return v
    }
    while let a = args.popFirst() {
        switch a {
        case "--clients": c.clients = Int(next(a)) ?? c.clients
        case "--edits": c.edits = Int(next(a)) ?? c.edits
        case "--docs": c.docs = Int(next(a)) ?? c.docs
        case "--moves": c.moves = Int(next(a)) ?? c.moves
        case "--deletes": c.deletes = Int(next(a)) ?? c.deletes
        case "--kill-after": c.killAfter = true
        case "--seed": c.seed = UInt64(next(a)) ?? c.seed
        case "--json": c.json = true
        case "--kill-cycles": c.killCycles = Int(next(a)) ?? 0
        case "--idle-clients": c.idleClients = Int(next(a)) ?? 0
        case "--device": c.deviceItems = Int(next(a)) ?? 100_000
        case "--resident-docs": c.residentDocs = Int(next(a)) ?? c.residentDocs
        case "--recovery-docs": c.recoveryDocs = Int(next(a)) ?? 1_000
        case "--seconds": c.seconds = Double(next(a)) ?? 0
        case "--progress": c.progress = Double(next(a)) ?? 0
        case "--rate": c.rate = Double(next(a)) ?? 0
        case "--binary": c.binary = next(a)
        case "--key-file": c.keyFile = next(a)
        case "--daemon":
            let t = next(a).split(separator: ":")
            c.daemons.append((String(t[0]), UInt16(t.count > 1 ? t[1] : "") ?? 7450))
        case "-h", "--help": print(usage); exit(0)
        default: FileHandle.standardError.write(Data("unknown option \(a)\n\(usage)\n".utf8)); exit(2)
        }
    }
    return c
}

/// A started `listsync serve` process.
final class DaemonProcess: @unchecked Sendable {
    // @unchecked Sendable: set up in init, then only read.
    let process = Process()
    let data: String
    var port: UInt16 = 0

    init(binary: String, data: String? = nil, port: UInt16 = 0, extra: [String] = []) throws {
        self.data = data ?? NSTemporaryDirectory() + "listsync-load-" + UUID().uuidString
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data", self.data, "--listen", "127.0.0.1:\(port)"] + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, self.port == 0 {
            text += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            // The whole line: a chunk may end in the middle of the port.
            if let r = text.range(of: "listening on 127.0.0.1:"), text[r.upperBound...].contains("\n") {
                self.port = UInt16(text[r.upperBound...].prefix { $0.isNumber }) ?? 0
            }
        }
        guard self.port != 0 else { throw LoadError("the daemon did not start: \(text)") }
    }

    var rss: Int {
        guard let s = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    /// User + system CPU seconds the daemon has used (/proc/PID/stat, fields 14 and 15).
    var cpuSeconds: Double {
        guard let s = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = s.lastIndex(of: ")") else { return 0 }
        let fields = s[s.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let u = Double(fields[11]), let k = Double(fields[12]) else { return 0 }
        return (u + k) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    var bytesOnDisk: Int {
        guard let e = FileManager.default.enumerator(atPath: data) else { return 0 }
        var total = 0
        while let f = e.nextObject() as? String {
            total += ((try? FileManager.default.attributesOfItem(atPath: data + "/" + f)[.size]) as? NSNumber)?.intValue ?? 0
        }
        return total
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: data)
    }

    /// SIGKILL, and wait for the process to end (the data folder stays).
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// User + system CPU seconds of this process (all its clients).
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(usage.ru_utime) + s(usage.ru_stime)
}

/// Edits that failed: how many, by kind (the error's words before its first colon, numbers as
/// N), and the first.
final class Failures: Sendable {
    let values = Mutex<(count: Int, kinds: [String: Int], first: String)>((0, [:], ""))
    func add(_ v: String) {
        let kind = v.prefix { $0 != ":" }.split(separator: " ").map { $0.allSatisfy(\.isNumber) ? "N" : String($0) }.joined(separator: " ")
        values.withLock {
            if $0.count == 0 { $0.first = v }
            $0.count += 1
            $0.kinds[kind, default: 0] += 1
        }
    }
    var count: Int { values.withLock { $0.count } }
    var first: String { values.withLock { $0.first } }
    var kinds: [String: Int] { values.withLock { $0.kinds } }
}

/// Edits acknowledged so far, across the clients.
final class Counter: Sendable {
    let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Arrival latencies (ns), from the edit's start at its author to the operation's arrival at another client.
final class Latencies: Sendable {
    let values = Mutex<[UInt64]>([])
    func add(_ v: UInt64) { values.withLock { $0.append(v) } }
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func run(_ c: Config) async throws -> [String: Any] {
    var daemonProcess: DaemonProcess?
    let host: String, port: UInt16, key: [UInt8]
    if let d = c.daemon, let keyFile = c.keyFile {
        (host, port) = d
        key = try KeyFile.read(keyFile)
    } else {
        let binary = c.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
        let p = try DaemonProcess(binary: binary)
        daemonProcess = p
        (host, port) = ("127.0.0.1", p.port)
        key = try KeyFile.read(p.data + "/key")
    }
    defer { daemonProcess?.stop() }
    if c.killAfter, daemonProcess == nil { throw LoadError("--kill-after needs a daemon started here (no --daemon)") }

    // Untimed: the documents, each with two sections and 20 items.
    let admin = try await DaemonClient.connect(host: host, port: port, key: key)
    var docs: [DocumentID] = []
    for d in 0..<c.docs {
        let id = try await admin.create(name: "load-\(d)", sections: ["a", "b"])
        _ = try await admin.open(id)
        try await admin.edit(id) { doc throws(ListError) in
            for k in 0..<20 { _ = try doc.insertItem(atRow: k / 2, inSection: k % 2, value: Data("seed-\(k)".utf8)) }
        }
        docs.append(id)
    }
    await admin.close()

    // The clients, connected and caught up (untimed).
    let latencies = Latencies()
    var clients: [(DaemonClient, DocumentID, LiveDocument)] = []
    for i in 0..<c.clients {
        // Several --daemon (cluster nodes): the clients take them in turn.
        let (h, p) = c.daemons.count > 1 ? c.daemons[i % c.daemons.count] : (host, port)
        // Each client from its own loopback address, as clients on a LAN would be (the daemon
        // admits 16 connections per address).
        let source = h == "127.0.0.1" ? "127.0.\(1 + i / 250).\(2 + i % 250)" : nil
        let client = try await DaemonClient.connect(host: h, port: p, key: key, localHost: source, changeSets: false)
        let doc = docs[i % c.docs]
        await client.observeOperations { _, ops in
            let t = now()
            for op in ops {
                if case let .insertItem(_, _, value) = op.kind, value.count == 16 {
                    let sent = value.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    if sent <= t { latencies.add(t - sent) }
                }
            }
        }
        // Another cluster node makes its copy of a new document within a second or so.
        var opened: LiveDocument?
        let deadline = now() + 60_000_000_000
        while opened == nil {
            do { opened = try await client.open(doc) } catch {
                if now() > deadline { throw error }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        // A node that made its copy just now fills it from the stream: wait for the seeded list
        // (two sections, 20 items), or the first edits would find no section to edit.
        while opened!.snapshot.sections.count < 2 || opened!.snapshot.sections.reduce(0, { $0 + $1.items.count }) < 20 {
            if now() > deadline { throw LoadError("document \(doc) not caught up on \(h):\(p) in 60 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        clients.append((client, doc, opened!))
    }

    // Timed: every client edits at once, each edit acknowledged before the next.
    let failures = Failures()
    let acknowledgedInserts = Acknowledged()
    let acknowledgedEdits = Counter()
    let daemonCPU0 = daemonProcess?.cpuSeconds ?? 0, ownCPU0 = ownCPUSeconds()
    let start = now()
    let stopAt = c.seconds > 0 ? start + UInt64(c.seconds * 1e9) : UInt64.max
    let progress = c.progress > 0 ? Task { await reportProgress(every: c.progress, start: start, acknowledgedEdits, failures) } : nil
    defer { progress?.cancel() }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (i, (client, doc, _)) in clients.enumerated() {
            let edits = c.edits, moves = c.moves, deletes = c.deletes, seed = c.seed, rate = c.rate
            group.addTask {
                var rng = SplitMix64(seed: seed &* 1_000_003 &+ UInt64(i))
                for e in 0..<edits {
                    guard now() < stopAt else { break }
                    if rate > 0 {
                        // Paced: edit e is due e / rate seconds after the start (no catching up in a burst).
                        let due = start + UInt64(Double(e) / rate * 1e9), t = now()
                        if due > t { try? await Task.sleep(nanoseconds: due - t) }
                    }
                    let roll = Int(rng.next() % 100)
                    // An insert's value: its send time (for the fan-out latency), then its author and number.
                    var inserted: Data?
                    do {
                        try await client.edit(doc) { d throws(ListError) in
                            // The counts of the document as it is now (remote operations keep arriving).
                            let counts = [try d.itemCount(inSection: 0), try d.itemCount(inSection: 1)]
                            let total = counts[0] + counts[1]
                            if roll < moves, total > 0 {
                                // Half the moves take one of the first items: several clients move the same ones.
                                var from = IndexPath(item: 0, section: counts[0] > 0 ? 0 : 1)
                                if rng.next() % 2 == 1 {
                                    let k = Int(rng.next() % UInt64(total))
                                    from = k < counts[0] ? IndexPath(item: k, section: 0) : IndexPath(item: k - counts[0], section: 1)
                                }
                                let to = Int(rng.next() % 2)
                                let limit = counts[to] - (to == from.section ? 1 : 0)
                                _ = try d.moveItem(from: from, to: IndexPath(item: Int(rng.next() % UInt64(limit + 1)), section: to))
                            } else if roll < moves + deletes, total > 10 {
                                let s = counts[0] > 0 ? 0 : 1
                                _ = try d.deleteItem(at: IndexPath(item: Int(rng.next() % UInt64(counts[s])), section: s))
                            } else {
                                var stamp = now(), tag = UInt64(i) << 32 | UInt64(e)
                                let value = withUnsafeBytes(of: &stamp) { Data($0) } + withUnsafeBytes(of: &tag) { Data($0) }
                                let s = Int(rng.next() % 2)
                                _ = try d.insertItem(at: IndexPath(item: Int(rng.next() % UInt64(counts[s] + 1)), section: s), value: value)
                                inserted = value.suffix(8)
                            }
                        }
                        if let v = inserted { acknowledgedInserts.add(v.base64EncodedString()) }
                        acknowledgedEdits.add()
                    } catch {
                        failures.add("\(error)")
                    }
                }
            }
        }
        try await group.waitForAll()
    }
    progress?.cancel()
    let editSeconds = Double(now() - start) / 1e9

    // Convergence: every client of a document holds the same list, each item once.
    let convergeStart = now()
    var converged = false
    while Double(now() - convergeStart) / 1e9 < 120 {
        var ok = true
        for d in docs {
            let states = clients.filter { $0.1 == d }.map { $0.2.snapshot }
            if !states.allSatisfy({ $0 == states[0] }) { ok = false; break }
        }
        if ok { converged = true; break }
        try await Task.sleep(for: .milliseconds(20))
    }
    let convergeSeconds = Double(now() - start) / 1e9
    let daemonCPU = (daemonProcess?.cpuSeconds ?? 0) - daemonCPU0, clientsCPU = ownCPUSeconds() - ownCPU0
    var itemsOnce = true
    for (_, _, live) in clients {
        let ids = live.snapshot.sections.flatMap { $0.items.map(\.id) }
        if Set(ids).count != ids.count { itemsOnce = false }
    }
    // The daemon's own view: its durable-append latency (write + fdatasync, group commit).
    var daemonStatus: [String: Any] = [:]
    if let probe = try? await DaemonClient.connect(host: host, port: port, key: key, localHost: host == "127.0.0.1" ? "127.0.9.1" : nil),
       let json = try? await probe.status(),
       let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] {
        daemonStatus = object
        await probe.close()
    }
    var lat = latencies.values.withLock { $0 }
    lat.sort()
    func pct(_ p: Double) -> Double { lat.isEmpty ? 0 : Double(lat[min(lat.count - 1, Int(Double(lat.count) * p))]) / 1e6 }
    let acknowledged = acknowledgedEdits.count
    let rss = daemonProcess?.rss ?? 0, bytesOnDisk = daemonProcess?.bytesOnDisk ?? 0
    for (client, _, _) in clients { await client.close() }
    var result: [String: Any] = [
        "clients": c.clients, "daemons": max(1, c.daemons.count), "edits_per_client": c.edits, "documents": c.docs, "moves_percent": c.moves, "deletes_percent": c.deletes,
        "acknowledged_edits": acknowledged, "failed_edits": failures.count,
        "first_failure": failures.first, "failures_by_kind": failures.kinds,
        "edit_seconds": editSeconds, "acknowledged_ops_per_s": Double(acknowledged) / editSeconds,
        "converge_seconds": convergeSeconds, "converged": converged, "items_once": itemsOnce,
        "fanout_p50_ms": pct(0.5), "fanout_p99_ms": pct(0.99), "fanout_samples": lat.count,
        "daemon_append_p50_ms": daemonStatus["fsync_p50_ms"] ?? 0, "daemon_append_p99_ms": daemonStatus["fsync_p99_ms"] ?? 0,
        "daemon_rss_bytes": rss, "bytes_on_disk": bytesOnDisk,
        "daemon_cpu_seconds": daemonCPU, "clients_cpu_seconds": clientsCPU,
        "items_per_document": clients.first.map { $0.2.snapshot.sections.reduce(0) { $0 + $1.items.count } } ?? 0,
    ]
    if c.killAfter, let p = daemonProcess {
        // Kill -9 right after convergence, restart on the same folder, and look for every acknowledged insert.
        p.kill9()
        let restarted = try DaemonProcess(binary: p.process.executableURL!.path, data: p.data)
        daemonProcess = restarted
        let checker = try await DaemonClient.connect(host: "127.0.0.1", port: restarted.port, key: key, changeSets: false)
        var present = Set<String>()
        for d in docs {
            let live = try await checker.open(d)
            for item in live.snapshot.sections.flatMap(\.items) where item.value.count == 16 {
                present.insert(item.value.suffix(8).base64EncodedString())
            }
        }
        await checker.close()
        let acked = acknowledgedInserts.all
        result["acknowledged_inserts"] = acked.count
        result["missing_acknowledged"] = acked.subtracting(present).count
    }
    return result
}

/// Writes a line on stderr every `seconds` until cancelled: edits acknowledged (in all, and in the
/// last period), failed by kind, and the first failure.
func reportProgress(every seconds: Double, start: UInt64, _ acknowledged: Counter, _ failures: Failures) async {
    var last = 0
    while (try? await Task.sleep(for: .seconds(seconds))) != nil {
        let n = acknowledged.count, t = Double(now() - start) / 1e9
        var line = "listsync-load: \(Int(t)) s: \(n) edits acknowledged (\(Int(Double(n - last) / seconds))/s)"
        if failures.count > 0 {
            let kinds = failures.kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            line += ", \(failures.count) failed (\(kinds)); first: \(failures.first)"
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
        last = n
    }
}

let config = parse()
let done = DispatchSemaphore(value: 0)
let code = Mutex<Int32>(0)
Task.detached {
    do {
        let r = config.recoveryDocs > 0 ? try await runRecovery(config)
            : config.deviceItems > 0 ? try await runDevice(config, items: config.deviceItems)
            : config.idleClients > 0 ? try await runIdle(config)
            : config.killCycles > 0 ? try await runKillCycles(config) : try await run(config)
        if config.json {
            let data = try JSONSerialization.data(withJSONObject: r, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            for k in r.keys.sorted() { print("\(k): \(r[k]!)") }
        }
        if (r["converged"] as? Bool) == false || (r["items_once"] as? Bool) == false || (r["missing_acknowledged"] as? Int ?? 0) > 0 {
            code.withLock { $0 = 1 }
        }
    } catch {
        FileHandle.standardError.write(Data("listsync-load: \(error)\n".utf8))
        code.withLock { $0 = 1 }
    }
    done.signal()
}
done.wait()
exit(code.withLock { $0 })
