import Foundation
import ListCRDT
import ListSync
import ListSyncTestSupport

// W8.concurrent (Benchmarks/WORKLOADS.md): the clownschool trace, three people typing one
// document concurrently, replayed on three replicas (ConcurrentReplay, causal delivery, replica
// ids 1, 2, 3 for agents 0, 1, 2) and merged. compare/peers.py runs the same on Loro and Yrs.

/// Best of up to this many runs (each on fresh replicas), as W2's loads.
let w8Runs = 5

/// The concurrent trace: `clownschool.concurrent.jsonl` next to the `--trace` file, else in
/// Benchmarks/Traces.
func loadConcurrentTrace(_ ctx: Context) throws -> ConcurrentTrace {
    let name = "clownschool.concurrent"
    let dirs = [URL(fileURLWithPath: ctx.tracePath).deletingLastPathComponent(),
                URL(fileURLWithPath: defaultTrace()).deletingLastPathComponent()]
    for dir in dirs where FileManager.default.fileExists(atPath: dir.appendingPathComponent("\(name).jsonl").path) {
        return try ConcurrentTrace(named: name, in: dir)
    }
    throw BenchError("\(name).jsonl not found in \(dirs.map(\.path))")
}

func w8Concurrent(_ ctx: Context) throws -> BenchResult {
    let trace = try loadConcurrentTrace(ctx)  // untimed: parsing and the version vectors
    guard let expected = trace.finalText else { throw BenchError("clownschool.concurrent.final.txt is missing") }
    let ids = [1, 2, 3].map(ReplicaID.init)
    // Every run is checked: all three replicas show the final text after the merge.
    // Memory: the RSS delta of the first run (before its replicas exist -> after the merge, all
    // alive), divided by the number of replicas: a proxy for the memory one replica holds.
    var allOK = true, first: ConcurrentReplay?, held = 0
    let r = try Repeat.fastest(reps: w8Runs, time: { Double($0) }) { () throws -> UInt64 in
        let before = Memory.rssNow()
        let t0 = nowNs()
        var replay = try ConcurrentReplay(trace, replicas: ids, delivery: .causal)
        try replay.mergeAll()
        let ns = nowNs() - t0
        if first == nil { held = Memory.rssNow() - before }
        allOK = allOK && replay.documents.allSatisfy { ConcurrentTrace.text(of: $0) == expected }
        if first == nil { first = replay }
        return ns
    }
    let replay = first!
    let elementOps = trace.elementOperations

    // What sending the operations as bytes would add (measured apart, on the first run's
    // operations): each transaction encoded once, and decoded once by each of the other replicas.
    let others = trace.agentCount - 1
    let wire = try Repeat.bestMs(reps: w8Runs) { () throws -> (Double, Int) in
        let t0 = nowNs()
        var bytes = 0
        for ops in replay.operations {
            let encoded = ListOperation.encode(ops)
            bytes += encoded.count
            for _ in 0..<others {
                _ = try ListOperation.decode(encoded, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max)
            }
        }
        return (Double(nowNs() - t0) / 1e6, bytes)
    }

    var res = BenchResult(workload: "W8.concurrent", ops: elementOps)
    res.set("ms", Double(r.best) / 1e6)
    res.set("ns_per_op", Double(r.best) / Double(elementOps))
    res.set("transactions", trace.transactions.count)
    res.set("wire_ms", wire.ms)
    res.set("wire_bytes", wire.state)
    res.set("memory_bytes", held / ids.count)
    res.set("replicas_rss_bytes", held)

    // Untimed (issue 29): one replica's document alone, before and after compaction at the
    // merged version (every replica holds every operation): its snapshot, and the memory of 3
    // documents loaded from that snapshot (RSS delta with malloc_trim before each reading, / 3).
    var compacted = replay.documents[0]
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
    allOK = allOK && ConcurrentTrace.text(of: compacted) == expected
    res.ok = allOK
    res.note = "\(trace.transactions.count) transactions, \(elementOps) element edits (ops), 3 replicas (ids 1, 2, 3); "
        + "timed: ConcurrentReplay (before each transaction its agent's replica receives the other agents' "
        + "transactions in its past as ListOperation values, one receive(_:) per transaction, then one "
        + "insertItem/deleteItem call per element) + mergeAll; ms \(Repeat.note(w8Runs, r.runs)) on fresh replicas, "
        + "every run checked (all replicas == final.txt); wire_ms (not in ms): encoding each transaction once "
        + "and decoding it once per other replica, \(Repeat.note(w8Runs, wire.runs)); memory_bytes = RSS delta of "
        + "the first run (before the replicas -> after the merge, all alive) / 3, a proxy"
    return res
}
