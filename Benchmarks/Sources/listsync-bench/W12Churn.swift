import Foundation
import ListCRDT
import ListSync

// W12.churn.N (Benchmarks/WORKLOADS.md; issue 29 item 3): 1,000 live items in one list, N inserts
// and deletes made in turns of 1,000 by 3 replicas that exchange each turn's operations; after
// every round of 3 turns (and after the last turn), when all 3 replicas hold every operation, each
// compacts at that stable version, as a daemon that saw every replica acknowledge it would.
// W12.uncompacted.N is the same without compaction (the "before" yardstick). Reports the snapshot,
// the history, the memory held per replica (an RSS delta) and the time per op. compare/peers.py
// runs the same on Loro and Yrs (which do not compact).

/// The churn sizes (N operations) and the shape of the workload.
let churnSizes = [100_000, 1_000_000]
let churnLive = 1_000, churnTurn = 1_000, churnReplicas = 3

func w12Churn(n: Int, compact: Bool = true) throws -> BenchResult {
    // Untimed: the operations and the expected final list.
    let ops = genChurn(count: n, live: churnLive)
    let values = ops.map { intValue($0.value) }
    var model = Array(0..<churnLive)
    applyFlat(&model, ops)

    // Untimed: replica 1 builds the 1,000 items, replicas 2 and 3 receive them. The RSS delta
    // from here to the end of the run is the memory the three replicas hold.
    let before = Memory.rssNow()
    let trimmedBefore = Memory.trimmedRSS()
    var docs = [try buildList(replica: 1, n: churnLive)]
    for id in 2...UInt64(churnReplicas) {
        var d = ListDocument(replica: ReplicaID(id))
        let refused = d.receive(docs[0].operations).refused
        guard refused.isEmpty else { throw BenchError("replica \(id) refused the initial items: \(refused[0])") }
        docs.append(d)
    }

    // Timed: turn t (ops t*1000 ..< t*1000+1000) is made by replica t % 3; its operations are
    // encoded once (ListOperation.encode) and the two other replicas receive the bytes.
    var exchangeBytes = 0, refused = 0, compactions = 0, compactNs: UInt64 = 0, slotsAfter = 0
    var turn: [ListOperation] = []
    turn.reserveCapacity(churnTurn)
    let t0 = nowNs()
    var lo = 0
    while lo < ops.count {
        let hi = min(ops.count, lo + churnTurn)
        let maker = (lo / churnTurn) % churnReplicas
        for k in lo..<hi {
            let op = ops[k]
            turn.append(op.insert
                ? try docs[maker].insertItem(atRow: op.pos, inSection: 0, value: values[k])
                : try docs[maker].deleteItem(atRow: op.pos, inSection: 0))
        }
        let update = ListOperation.encode(turn)
        turn.removeAll(keepingCapacity: true)
        exchangeBytes += update.count
        for r in 0..<churnReplicas where r != maker {
            refused += try docs[r].receive(encoded: update, maxOperations: Int.max).refused.count
        }
        lo = hi
        // A stable point: every replica holds every operation (each turn reached the two others).
        if compact && (maker == churnReplicas - 1 || lo == ops.count) {
            let c0 = nowNs()
            let stable = docs[0].version
            for r in 0..<churnReplicas { slotsAfter = try docs[r].compact(stable: stable).slotsAfter }
            compactNs += nowNs() - c0
            compactions += 1
        }
    }
    let ns = nowNs() - t0
    let held = Memory.rssNow() - before
    let trimmedHeld = Memory.trimmedRSS() - trimmedBefore
    // The inputs stay alive up to here, so that the readings after the run do not see them freed
    // (Swift may end an array's life at its last use, which was the loop).
    withExtendedLifetime((ops, values, model)) {}

    // Untimed: the sizes and the checks.
    let snapshot = docs[0].encodedSnapshot()          // v3 after compaction, else the state snapshot (v2), as W2
    let history = docs[0].encodedHistory()   // the bytes of ListOperation.encode(docs[0].operations)
    let lists = docs.map { intValues($0) }
    let converged = lists.allSatisfy { $0 == lists[0] }

    var res = BenchResult(workload: compact ? "W12.churn.\(n)" : "W12.uncompacted.\(n)", ops: n)
    res.set("ns_per_op", Double(ns) / Double(n))
    res.set("ms", Double(ns) / 1e6)
    res.set("snapshot_bytes", snapshot.count)
    res.set("history_bytes", history.count)
    // Compacting frees memory, which the plain RSS does not show (the allocator keeps the freed
    // pages): there memory_bytes is the RSS delta with the allocator's free pages given back.
    res.set("memory_bytes", (compact ? trimmedHeld : held) / churnReplicas)
    res.set("replicas_rss_bytes", held)
    res.set("trimmed_memory_bytes", trimmedHeld / churnReplicas)
    res.set("live_items", lists[0].count)
    res.set("operations", docs[0].operationCount)   // since the last compaction
    res.set("exchange_bytes", exchangeBytes)
    if compact {
        res.set("compactions", compactions)
        res.set("compact_ms", Double(compactNs) / 1e6)
        res.set("slots_after", slotsAfter)
    }
    res.ok = converged && lists[0] == model && refused == 0
    res.note = "3 replicas (ids 1, 2, 3), turns of \(churnTurn) ops (turn t by replica t % 3), each turn "
        + "ListOperation.encode'd once and receive(encoded:) by the 2 others (timed, single run); "
        + (compact ? "after every round of 3 turns and after the last turn all 3 replicas compact(stable:) at their common version "
            + "(timed, \(compactions) times; compact_ms of the total); " : "never compacted; ")
        + "snapshot = encodedSnapshot() (v3 once compacted, else the state v2), history = doc.encodedHistory() (the bytes of ListOperation.encode(doc.operations)), both of replica 1; "
        + (compact ? "memory_bytes = RSS delta with glibc malloc_trim(0) called before each reading (before building the replicas -> after the run) / 3 "
            + "(the plain RSS delta, replicas_rss_bytes, does not fall when compaction frees memory); "
            : "memory_bytes = RSS delta (before building the replicas -> after the run, all 3 alive) / 3, a proxy "
            + "(includes allocator slack; ListDocument has no internal byte estimate); ")
        + "trimmed_memory_bytes = the RSS delta with malloc_trim(0) before each reading, / 3; "
        + "converged=\(converged), equals model=\(lists[0] == model)"
    if refused > 0 { res.note += "; receive refused \(refused) operations" }
    return res
}
