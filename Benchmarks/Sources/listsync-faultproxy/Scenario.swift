import Foundation
import ListSyncTestSupport
import ListCRDT
import ListSync
import ListSyncClient
import ListStore
import ListSyncFaults
import ListSyncServer
import ListSyncFiles
import ListTable
import ListSyncTCP
import Synchronization

// `listsync-faultproxy scenario`: three `listsync serve` processes A, B, C peered in a triangle,
// every peer link through a fault proxy of its own (B→A, C→B, C→A), each proxy injecting seeded
// faults all along (delays, stalls, drops, cuts at random bytes). Then:
//   1. a document made on A reaches B and C; A inserts three items; all converge;
//   2. all three take acknowledged edits (inserts and a move) for about a second, with the faults;
//      then the partition: A is cut off from C, and B is either killed (SIGKILL) or partitioned
//      from both; every live daemon takes as many edits again meanwhile;
//   3. heal: every proxy healed (no partition, no fault any more), then B restarted if it was
//      killed;
//   4. the time from the heal until all three hold the same list, with every acknowledged insert
//      there once.
// Every choice (the partition mode, B's fate, the partition's length, the faults) comes from the
// seed; the run prints it.

let scenarioUsage = """
    USAGE: listsync-faultproxy scenario [--seed S] [--runs N] [--edits N] [--binary PATH] [--json]

    Three daemons A, B, C in a triangle, each peer link through a fault proxy; A partitioned from C,
    B killed or partitioned; all edit; heal; measure the time to converge. With --runs N: seeds S,
    S+1, ..., one line each (JSON with --json), then a summary. Exit status 1 if a run did not
    converge with every acknowledged edit there once.
      --seed S       the first seed (default 1)
      --runs N       runs (default 1)
      --edits N      acknowledged inserts per live daemon before and during the partition (default 6)
      --binary PATH  the listsync binary (default: next to this one)
      --timeout S    seconds to wait for convergence after the heal (default 30)
    """

struct ScenarioOptions {
    var seed: UInt64 = 1
    var runs = 1
    var edits = 6
    var binary: String?
    var json = false
    var timeout = 30.0
}

/// Parses the options and runs; `true` if every run converged.
func runScenarioCommand(_ arguments: [String]) async throws -> Bool {
    var o = ScenarioOptions()
    var args = arguments[...]
    func value(_ name: String) -> String {
        guard let v = args.popFirst() else { fail("\(name) needs a value") }
        return v
    }
    while let a = args.popFirst() {
        switch a {
        case "--seed": o.seed = need(UInt64(value(a)), "--seed: a number")
        case "--runs": o.runs = need(Int(value(a)), "--runs: a number")
        case "--edits": o.edits = need(Int(value(a)), "--edits: a number")
        case "--binary": o.binary = value(a)
        case "--timeout": o.timeout = need(Double(value(a)), "--timeout: seconds")
        case "--json": o.json = true
        case "-h", "--help":
            say(scenarioUsage)
            exit(0)
        default: fail("unknown option \(a)\n\(scenarioUsage)")
        }
    }
    let binary = o.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
    var times: [Double] = []
    var converged = 0
    for k in 0..<o.runs {
        let seed = o.seed &+ UInt64(k)
        let r: ScenarioResult
        do {
            r = try await runScenario(seed: seed, edits: o.edits, binary: binary, timeout: o.timeout)
        } catch {
            r = ScenarioResult(seed: seed, error: "\(error)")
        }
        if r.ok {
            converged += 1
            times.append(r.convergeMs)
        }
        if o.json {
            let data = try JSONSerialization.data(withJSONObject: r.dictionary, options: [.sortedKeys])
            say(String(decoding: data, as: UTF8.self))
        } else {
            say(r.line)
        }
            }
    if o.runs > 1 || !o.json {
        times.sort()
        func pct(_ p: Double) -> Double { times.isEmpty ? 0 : times[min(times.count - 1, Int((Double(times.count) * p).rounded(.up)) - 1)] }
        let summary = String(format: "summary: converged %d/%d runs; time to converge after heal p50 %.0f ms, p99 %.0f ms, max %.0f ms",
                             converged, o.runs, pct(0.5), pct(0.99), times.last ?? 0)
        if o.json {
            let s: [String: Any] = ["summary": true, "runs": o.runs, "converged": converged, "converge_p50_ms": pct(0.5),
                                    "converge_p99_ms": pct(0.99), "converge_max_ms": times.last ?? 0]
            say(String(decoding: try JSONSerialization.data(withJSONObject: s, options: [.sortedKeys]), as: UTF8.self))
        } else {
            say(summary)
        }
    }
    return converged == o.runs
}

/// One run's outcome.
struct ScenarioResult {
    var seed: UInt64
    var mode = ""
    var bFate = ""
    var partitionMs = 0
    var acknowledged = 0
    var failedEdits = 0
    var missing = 0
    var itemsOnce = false
    var converged = false
    var convergeMs = 0.0
    var statistics = FaultStatistics()
    var error: String?

    init(seed: UInt64, error: String? = nil) {
        self.seed = seed
        self.error = error
    }

    var ok: Bool { error == nil && converged && missing == 0 && itemsOnce }

    var dictionary: [String: Any] {
        var d: [String: Any] = [
            "seed": seed, "partition_mode": mode, "b": bFate, "partition_ms": partitionMs,
            "acknowledged_inserts": acknowledged, "failed_edits": failedEdits, "missing_acknowledged": missing,
            "items_once": itemsOnce, "converged": converged, "converge_ms": (convergeMs * 10).rounded() / 10,
            "faults": statistics.faults,
        ]
        for (k, v) in statistics.fields { d[k] = v }
        if let error { d["error"] = error }
        return d
    }

    var line: String {
        if let error { return "seed \(seed): error: \(error)" }
        let s = statistics
        return String(format: "seed %llu: %@ partition %d ms, B %@; faults %d (drops %d, cuts %d, stalls %d, partitions %d), %d connections; "
                      + "%d acknowledged inserts, %d missing, each once: %@; converged: %@ in %.0f ms after heal",
                      seed, mode, partitionMs, bFate, s.faults, s.dropped, s.cut, s.stalls, s.partitions, s.connections,
                      acknowledged, missing, itemsOnce ? "yes" : "no", converged ? "yes" : "no", convergeMs)
    }
}

/// A `listsync serve` process with a data folder, printing where it listens.
final class ServeProcess: @unchecked Sendable {
    // @unchecked Sendable: set up in init, then only read.
    let process = Process()
    let port: UInt16

    init(binary: String, data: String, port: UInt16 = 0, extra: [String]) throws {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data", data, "--listen", "127.0.0.1:\(port)"] + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        var found: UInt16 = 0
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, found == 0, process.isRunning {
            text += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            if let r = text.range(of: "listening on 127.0.0.1:"), text[r.upperBound...].contains("\n") {
                found = UInt16(text[r.upperBound...].prefix { $0.isNumber }) ?? 0
            }
        }
        guard found != 0 else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw ScenarioError("listsync serve did not start: \(text)")
        }
        self.port = found
        // Keep draining its output so that it never blocks on a full pipe.
        PipeDrain.start(out) { _ in }
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

struct ScenarioError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Values acknowledged by the daemons, and edits that failed.
final class Ledger: Sendable {
    let acknowledged = Mutex<Set<String>>([])
    let failed = Mutex(0)
}

/// An observer of one daemon: a client with the shared document open, kept up to date.
struct Observer {
    var client: DaemonClient
    var live: LiveDocument
}

/// The fault plan of peer link `link` in the run of `seed`, all the time until the heal: each
/// segment (1–512 bytes) delayed 0–20 ms, 5% of them stalling 50–500 ms; 15% of the connections
/// dropped at once, 40% cut within their first 3,000 bytes (a peer link's handshake, listing and
/// subscriptions take about 1–2 KB, so cuts fall in all of them).
func linkPlan(seed: UInt64, link: UInt64, mode: PartitionMode) -> FaultPlan {
    var p = FaultPlan(seed: seed &* 1_000 &+ link)
    p.delay = .zero ... .milliseconds(20)
    p.segmentBytes = 1 ... 512
    p.stallProbability = 0.05
    p.stall = .milliseconds(50) ... .milliseconds(500)
    p.dropProbability = 0.15
    p.cutProbability = 0.4
    p.cutBytes = 1 ... 3_000
    p.partitionMode = mode
    return p
}

func runScenario(seed: UInt64, edits: Int, binary: String, timeout: Double) async throws -> ScenarioResult {
    var result = ScenarioResult(seed: seed)
    var rng = FaultRandom(seed: seed, streams: 0x5ce7a210)
    let mode: PartitionMode = rng.next() % 2 == 0 ? .reset : .blackhole
    let killB = rng.next() % 2 == 0
    let partitionMs = 1_000 + Int(rng.next() % 2_001)
    result.mode = mode.rawValue
    result.bFate = killB ? "killed" : "partitioned"
    result.partitionMs = partitionMs

    let root = NSTemporaryDirectory() + "listsync-faults-\(seed)-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: root) }
    let loop = try EventLoop()
    defer { loop.shutdown() }
    var processes: [ServeProcess] = []
    var proxies: [FaultProxy] = []
    var observers: [Observer?] = [nil, nil, nil]
    func cleanUp() async {
        for o in observers { await o?.client.close() }
        for p in proxies { await p.close() }
        for p in processes { p.terminate() }
    }
    do {
        let a = try ServeProcess(binary: binary, data: root + "/a", extra: [])
        processes.append(a)
        let keyPath = root + "/a/key"
        let key = try KeyFile.read(keyPath)
        let shared = ["--key-file", keyPath]
        func proxy(to port: UInt16, link: UInt64) async throws -> FaultProxy {
            let p = try await FaultProxy.start(to: SocketAddress(numeric: "127.0.0.1", port: port)!,
                                               plan: linkPlan(seed: seed, link: link, mode: mode), loop: loop)
            proxies.append(p)
            return p
        }
        let ba = try await proxy(to: a.port, link: 0)
        var b = try ServeProcess(binary: binary, data: root + "/b", extra: shared + ["--peer", "127.0.0.1:\(ba.port)"])
        processes.append(b)
        let cb = try await proxy(to: b.port, link: 1)
        let ca = try await proxy(to: a.port, link: 2)
        let c = try ServeProcess(binary: binary, data: root + "/c", extra: shared + ["--peer", "127.0.0.1:\(cb.port)", "--peer", "127.0.0.1:\(ca.port)"])
        processes.append(c)
        let ports = [a.port, b.port, c.port]

        // 1. A document made on A reaches B and C through the faulty links.
        let ledger = Ledger()
        observers[0] = try await observe(port: a.port, key: key, create: true)
        let doc = try await documentID(observers[0]!.client)
        for k in 1...2 { observers[k] = try await observe(port: ports[k], key: key, document: doc, within: 30) }
        try await observers[0]!.client.edit(doc) { d throws(ListError) in
            for k in 0..<3 { _ = try d.insertItem(atRow: k, inSection: 0, value: Data("a-before-\(k)".utf8)) }
        }
        ledger.acknowledged.withLock { $0.formUnion((0..<3).map { "a-before-\($0)" }) }
        guard try await waitConverged(observers.map { $0! }, acknowledged: ledger.acknowledged.withLock { $0 }, within: 30) != nil else {
            throw ScenarioError("the first edits did not reach every daemon")
        }

        // 2. Every daemon edits while the links suffer faults; then the partition: A | C, and B
        //    killed or cut off from both; every live daemon edits again.
        await edit(doc, observers, phase: "f", count: edits, ledger: ledger)
        await ca.partition()
        if killB {
            await observers[1]!.client.close()
            observers[1] = nil
            b.kill9()
        } else {
            await ba.partition()
            await cb.partition()
        }
        let partitionStart = ContinuousClock.now
        await edit(doc, observers, phase: "p", count: edits, ledger: ledger)
        let left = Duration.milliseconds(partitionMs) - (ContinuousClock.now - partitionStart)
        if left > .zero { try await Task.sleep(for: left) }

        // 3. Heal every link (no partition, no fault any more); B, if it was killed, restarts on
        //    its port (the proxy to it unchanged): its start counts in the time to converge.
        for p in proxies { await p.heal() }
        let healed = ContinuousClock.now
        if killB {
            var restarted: ServeProcess?
            for _ in 0..<50 where restarted == nil {
                restarted = try? ServeProcess(binary: binary, data: root + "/b", port: ports[1], extra: shared + ["--peer", "127.0.0.1:\(ba.port)"])
                if restarted == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            guard let restarted else { throw ScenarioError("B did not restart") }
            b = restarted
            processes.append(b)
            observers[1] = try await observe(port: ports[1], key: key, document: doc, within: 10)
        }

        // 4. Converged: the same list on all three, every acknowledged insert there once.
        let acknowledged = ledger.acknowledged.withLock { $0 }
        let convergedAt = try await waitConverged(observers.map { $0! }, acknowledged: acknowledged, within: timeout)
        result.converged = convergedAt != nil
        result.convergeMs = Double(((convergedAt ?? ContinuousClock.now) - healed).nanoseconds) / 1e6
        result.acknowledged = acknowledged.count
        result.failedEdits = ledger.failed.withLock { $0 }
        let items = observers[0]!.live.snapshot.sections.flatMap(\.items)
        let present = Set(items.map { String(decoding: $0.value, as: UTF8.self) })
        result.missing = acknowledged.subtracting(present).count
        result.itemsOnce = Set(items.map(\.id)).count == items.count
        for p in proxies { result.statistics = result.statistics + (await p.statistics()) }
    } catch {
        await cleanUp()
        throw error
    }
    await cleanUp()
    return result
}

/// Each live daemon's observer makes `count` acknowledged inserts (values like `a-p3`: daemon,
/// phase, number) and one move of the first item of the first section, all three at once.
func edit(_ doc: DocumentID, _ observers: [Observer?], phase: String, count: Int, ledger: Ledger) async {
    let writers: [(Int, Observer)] = observers.enumerated().compactMap { i, o in o.map { (i, $0) } }
    await withTaskGroup(of: Void.self) { group in
        for (i, o) in writers {
            group.addTask {
                let name = ["a", "b", "c"][i]
                for k in 0..<count {
                    let value = "\(name)-\(phase)\(k)"
                    do {
                        try await o.client.edit(doc) { d throws(ListError) in
                            let s = k % 2
                            let n = try d.itemCount(inSection: s)
                            _ = try d.insertItem(atRow: (k * 7) % (n + 1), inSection: s, value: Data(value.utf8))
                        }
                        ledger.acknowledged.withLock { _ = $0.insert(value) }
                    } catch {
                        ledger.failed.withLock { $0 += 1 }
                    }
                    if k == count / 2 {
                        // A move of an item all three had: concurrent moves of the same items.
                        _ = try? await o.client.edit(doc) { d throws(ListError) in
                            if try d.itemCount(inSection: 0) > 1 {
                                _ = try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 0, section: 1))
                            }
                        }
                    }
                    // Spread over about a second, so that the faults meet the traffic.
                    try? await Task.sleep(for: .milliseconds(1_000 / max(1, count)))
                }
            }
        }
    }
}

/// A client of the daemon at `port`: creates the document (on A) or waits until the daemon has it
/// (it comes from a peer), then opens it.
func observe(port: UInt16, key: [UInt8], create: Bool = false, document: DocumentID? = nil, within seconds: Double = 30) async throws -> Observer {
    let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false)
    if create {
        let id = try await client.create(name: "shared", sections: ["x", "y"])
        return Observer(client: client, live: try await client.open(id))
    }
    guard let document else { throw ScenarioError("no document") }
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await client.documents().contains(where: { $0.id == document }) {
            return Observer(client: client, live: try await client.open(document))
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    await client.close()
    throw ScenarioError("the document did not reach the daemon at \(port) within \(seconds) s")
}

func documentID(_ client: DaemonClient) async throws -> DocumentID {
    guard let d = try await client.documents().first else { throw ScenarioError("no document on A") }
    return d.id
}

/// Waits until every observer holds the same list, with every acknowledged value in it: when that
/// was seen (polled every 5 ms), or `nil` after `seconds`.
func waitConverged(_ observers: [Observer], acknowledged: Set<String>, within seconds: Double) async throws -> ContinuousClock.Instant? {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < .seconds(seconds) {
        let snapshots = observers.map(\.live.snapshot)
        if snapshots.allSatisfy({ $0 == snapshots[0] }) {
            let values = Set(snapshots[0].sections.flatMap { $0.items.map { String(decoding: $0.value, as: UTF8.self) } })
            if values.isSuperset(of: acknowledged) { return ContinuousClock.now }
        }
        try await Task.sleep(for: .milliseconds(5))
    }
    return nil
}

extension Duration {
    var nanoseconds: Int64 {
        let (s, a) = components
        return s * 1_000_000_000 + a / 1_000_000_000
    }
}
