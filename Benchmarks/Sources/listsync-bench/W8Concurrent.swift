import Foundation
@_spi(Testing) import ListCRDT
import ListSync
import ListSyncTestSupport

// W8.concurrent (Benchmarks/WORKLOADS.md): a concurrent trace replayed on one replica per agent
// (ConcurrentReplay, causal delivery, replica ids 1...n for agents 0...n-1) and merged: the
// clownschool trace (three people typing one document), the trace `--concurrent-trace PATH` names,
// or a generated one: W8.synthetic.AGENTS.OPS, ConcurrentTrace.synthetic(agents:operations:) (many
// agents, a long history that is mostly deleted again), or W8.branches.AGENTS.OPS,
// ConcurrentTrace.branchy(agents:operations:) (the same shaped like a version-control history, with
// long-lived branches). compare/peers.py runs the same on Loro and Yrs.

/// Best of up to this many runs (each on fresh replicas), as W2's loads.
let w8Runs = 5

/// The concurrent trace: `--concurrent-trace PATH` (with `PATH.final.txt` when it exists), else
/// `clownschool.concurrent.jsonl` next to the `--trace` file, else in Benchmarks/Traces.
func loadConcurrentTrace(_ ctx: Context) throws -> ConcurrentTrace {
    if let path = ctx.concurrentTracePath {
        let url = URL(fileURLWithPath: path)
        guard url.pathExtension == "jsonl" else { throw BenchError("--concurrent-trace must name a .jsonl file: \(path)") }
        return try ConcurrentTrace(named: url.deletingPathExtension().lastPathComponent, in: url.deletingLastPathComponent())
    }
    let name = "clownschool.concurrent"
    let dirs = [URL(fileURLWithPath: ctx.tracePath).deletingLastPathComponent(),
                URL(fileURLWithPath: defaultTrace()).deletingLastPathComponent()]
    for dir in dirs where FileManager.default.fileExists(atPath: dir.appendingPathComponent("\(name).jsonl").path) {
        return try ConcurrentTrace(named: name, in: dir)
    }
    throw BenchError("\(name).jsonl not found in \(dirs.map(\.path))")
}

/// The generators W8 replays besides the recorded traces: `W8.synthetic.AGENTS.OPS`
/// (``ConcurrentTrace/synthetic(agents:operations:seed:liveTarget:)``: short rounds of concurrency)
/// and `W8.branches.AGENTS.OPS` (``ConcurrentTrace/branchy(agents:operations:seed:liveTarget:)``:
/// a version-control-like history with long-lived branches).
let traceGenerators: [(prefix: String, minAgents: Int, make: @Sendable (Int, Int) -> ConcurrentTrace)] = [
    ("W8.synthetic.", 1, { ConcurrentTrace.synthetic(agents: $0, operations: $1) }),
    ("W8.branches.", 2, { ConcurrentTrace.branchy(agents: $0, operations: $1) }),
    ("W8.late.", 2, { ConcurrentTrace.branchy(agents: $0, operations: $1, shape: .late) }),
    ("W8.scattered.", 2, { ConcurrentTrace.branchy(agents: $0, operations: $1, shape: .late) }),
]

/// How W8 delivers a workload's operations (issue 47: many replicas' causal buffers full together):
/// `W8.late.AGENTS.OPS` author by author in a shuffled order, `W8.scattered.AGENTS.OPS` (the same
/// trace) transaction by transaction in a shuffled order, every replica at once in the final merge;
/// every other one in causal order. `--deliver` chooses for any W8 workload (a recorded trace
/// delivered author by author: `--workload W8.concurrent --concurrent-trace PATH --deliver authors`).
func w8Delivery(_ workload: String, _ ctx: Context) -> ConcurrentReplay.Delivery {
    if let chosen = ctx.deliver { return chosen.delivery }
    if workload.hasPrefix("W8.late.") { return .authors(seed: 47) }
    if workload.hasPrefix("W8.scattered.") { return .transactions(seed: 47) }
    return .causal
}

/// `--deliver`'s choices: the delivery orders of W8.concurrent, W8.late and W8.scattered.
enum DeliverOption: String, CaseIterable {
    case causal, authors, transactions

    var delivery: ConcurrentReplay.Delivery {
        switch self {
        case .causal: .causal
        case .authors: .authors(seed: 47)
        case .transactions: .transactions(seed: 47)
        }
    }
}

/// `W8.synthetic.AGENTS.OPS`, `W8.branches.AGENTS.OPS`, `W8.late.AGENTS.OPS` (or `AGENTS.OPS`
/// alone, the synthetic one): the generator and its two numbers, if well formed.
func generatedTraceSize(_ name: String) -> (make: @Sendable (Int, Int) -> ConcurrentTrace, agents: Int, operations: Int)? {
    let generator = traceGenerators.first { name.hasPrefix($0.prefix) }
    let rest = generator.map { name.dropFirst($0.prefix.count) } ?? name[...]
    let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
    let g = generator ?? traceGenerators[0]
    guard parts.count == 2, let a = Int(parts[0]), let n = Int(parts[1]),
          (g.minAgents...ConcurrentTrace.maxAgents).contains(a), n >= 1 else { return nil }
    return (g.make, a, n)
}

/// Whether `name` is a W8 workload made by a generator.
func isGeneratedTraceWorkload(_ name: String) -> Bool {
    traceGenerators.contains { name.hasPrefix($0.prefix) } && generatedTraceSize(name) != nil
}

/// `--write-concurrent-trace [W8.synthetic.|W8.branches.|W8.late.]AGENTS.OPS PATH.jsonl`: writes a generated
/// trace for peers.py.
func writeSyntheticTrace(_ size: String, to path: String) throws {
    guard let (make, a, n) = generatedTraceSize(size) else {
        throw BenchError("expected AGENTS.OPS, W8.synthetic.AGENTS.OPS, W8.branches.AGENTS.OPS or W8.late.AGENTS.OPS, got '\(size)'")
    }
    let trace = make(a, n)
    try Data(trace.jsonLines).write(to: URL(fileURLWithPath: path))
    print("\(path): \(trace.transactions.count) transactions, \(trace.elementOperations) element operations, \(a) agents")
}

func w8Concurrent(_ ctx: Context, workload: String = "W8.concurrent") throws -> BenchResult {
    // Untimed: parsing or generating, and the version vectors.
    let trace = try (isGeneratedTraceWorkload(workload) ? generatedTraceSize(workload) : nil)
        .map { $0.make($0.agents, $0.operations) } ?? loadConcurrentTrace(ctx)
    let expected = trace.finalText
    guard expected != nil || ctx.concurrentTracePath != nil || workload != "W8.concurrent" else {
        throw BenchError("clownschool.concurrent.final.txt is missing")
    }
    let n = trace.agentCount
    let ids = (1...n).map { ReplicaID(UInt64($0)) }
    /// Every replica shows the final text, or, without one, the same text as replica 1.
    func converged(_ docs: [ListDocument]) -> Bool {
        let want = expected ?? ConcurrentTrace.text(of: docs[0])
        return docs.allSatisfy { ConcurrentTrace.text(of: $0) == want }
    }
    // Memory: the RSS delta of the first run (before its replicas exist -> after the merge, all
    // alive, with the replay's operations), divided by the number of replicas: a proxy for the
    // memory one replica holds.
    // Only the first run's operations are kept (for the wire figures), not its replicas: a long
    // history on many replicas (issue 29's 204 authors) must not be held twice at the peak.
    let delivery = w8Delivery(workload, ctx)
    var allOK = true, firstOperations: [[ListOperation]]?, held = 0, peak = (operations: 0, bytes: 0, resent: 0)
    let r = try Repeat.fastest(reps: w8Runs, time: { Double($0) }) { () throws -> UInt64 in
        let before = Memory.rssNow()
        let t0 = nowNs()
        var replay = try ConcurrentReplay(trace, replicas: ids, delivery: delivery)
        try replay.mergeAll()
        let ns = nowNs() - t0
        peak = (replay.peakPending, replay.peakPendingBytes, replay.resent)
        if firstOperations == nil { held = Memory.rssNow() - before }
        allOK = allOK && converged(replay.documents)
        if firstOperations == nil { firstOperations = replay.operations }
        return ns
    }
    let elementOps = trace.elementOperations

    // What sending the operations as bytes would add (measured apart, on the first run's
    // operations): each transaction encoded once, and decoded once by each of the other replicas.
    let others = n - 1
    let wire = try Repeat.bestMs(reps: w8Runs) { () throws -> (Double, Int) in
        let t0 = nowNs()
        var bytes = 0
        for ops in firstOperations! {
            let encoded = ListOperation.encode(ops)
            bytes += encoded.count
            for _ in 0..<others {
                _ = try ListOperation.decode(encoded, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max)
            }
        }
        return (Double(nowNs() - t0) / 1e6, bytes)
    }
    firstOperations = nil

    // Untimed: the documents alone. One more replay whose operations (ConcurrentReplay keeps every
    // transaction's ListOperation values) are freed before the second reading; glibc malloc_trim
    // before both readings. `documents_memory_bytes` = that delta / n.
    let before = Memory.trimmedRSS()
    let docs = try { () throws -> [ListDocument] in
        var replay = try ConcurrentReplay(trace, replicas: ids, delivery: delivery)
        try replay.mergeAll()
        return replay.documents
    }()
    let documentsHeld = Memory.trimmedRSS() - before
    allOK = allOK && converged(docs)

    var res = BenchResult(workload: workload, ops: elementOps)
    res.set("ms", Double(r.best) / 1e6)
    res.set("ns_per_op", Double(r.best) / Double(elementOps))
    res.set("transactions", trace.transactions.count)
    res.set("replicas", n)
    // The causal buffers (ConcurrentReplay.Delivery.authors; 0 in causal order): the most
    // operations and bytes (ListDocument.pendingBytes) waiting in all replicas together, and the
    // operations a full buffer refused and the replay sent again.
    res.set("peak_pending_operations", peak.operations)
    res.set("peak_pending_bytes", peak.bytes)
    res.set("resent_operations", peak.resent)
    res.set("wire_ms", wire.ms)
    res.set("wire_bytes", wire.state)
    res.set("memory_bytes", held / n)
    res.set("replicas_rss_bytes", held)
    res.set("documents_memory_bytes", documentsHeld / n)
    res.set("documents_bytes_per_op", Double(documentsHeld) / Double(n) / Double(elementOps))
    let live = ConcurrentTrace.text(of: docs[0]).count
    res.set("live_items", live)
    // Replica 1's tables (ListDocument.memoryBreakdown: capacity × stride, no allocator slack).
    let parts = docs[0].memoryBreakdown
    res.set("tables_bytes", parts.reduce(0) { $0 + $1.bytes })
    for p in parts where p.bytes > 0 { res.set("tables.\(p.name)", p.bytes) }

    // Untimed (issue 29): one replica's document alone, before and after compaction at the
    // merged version (every replica holds every operation): its snapshot, and the memory of 3
    // documents loaded from that snapshot (RSS delta with malloc_trim before each reading, / 3).
    var compacted = docs[0]
    let full = compacted.encodedSnapshot()
    try compacted.compact(stable: compacted.version)
    let small = compacted.encodedSnapshot()
    func loadedMemory(_ bytes: [UInt8]) throws -> Int {
        let before = Memory.trimmedRSS()
        let docs = try (0..<3).map { _ in try ListDocument(snapshot: bytes, replica: ReplicaID(99)) }
        let after = Memory.trimmedRSS()
        withExtendedLifetime(docs) {}
        return (after - before) / 3
    }
    res.set("snapshot_bytes", full.count)
    res.set("compacted_snapshot_bytes", small.count)
    res.set("loaded_memory_bytes", try loadedMemory(full))
    res.set("compacted_loaded_memory_bytes", try loadedMemory(small))
    allOK = allOK && ConcurrentTrace.text(of: compacted) == ConcurrentTrace.text(of: docs[0])
    res.ok = allOK
    withExtendedLifetime(docs) {}
    res.note = "\(trace.transactions.count) transactions, \(elementOps) element edits (ops), \(n) replicas (ids 1...\(n)); "
        + "timed: ConcurrentReplay, delivery \(delivery) (before each transaction its agent's replica receives the other agents' "
        + "transactions in its past as ListOperation values, one receive(_:) per transaction, then one "
        + "insertItem/deleteItem call per element) + mergeAll; ms \(Repeat.note(w8Runs, r.runs)) on fresh replicas, "
        + "every run checked (all replicas == \(expected == nil ? "replica 1's text, no final.txt" : "final.txt")); "
        + "wire_ms (not in ms): encoding each transaction once "
        + "and decoding it once per other replica, \(Repeat.note(w8Runs, wire.runs)); memory_bytes = RSS delta of "
        + "the first run (before the replicas -> after the merge, all alive, the replay's operations included) / \(n), "
        + "a proxy; documents_memory_bytes = the same for the documents alone (one more replay, its operations "
        + "freed, malloc_trim before both readings) / \(n)"
    return res
}
