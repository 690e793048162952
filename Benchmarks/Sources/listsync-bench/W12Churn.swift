import Foundation
import ListCRDT
import ListSync

// W12.churn.N (Benchmarks/WORKLOADS.md; issue 29 item 3, the "before compaction" yardstick):
// 1,000 live items in one list, N inserts and deletes made in turns of 1,000 by 3 replicas that
// exchange each turn's operations. Reports the full-state snapshot, the history, the memory held
// per replica (an RSS delta) and the time per op. compare/peers.py runs the same on Loro and Yrs.

/// The churn sizes (N operations) and the shape of the workload.
let churnSizes = [100_000, 1_000_000]
let churnLive = 1_000, churnTurn = 1_000, churnReplicas = 3

func w12Churn(n: Int) throws -> BenchResult {
    // Untimed: the operations and the expected final list.
    let ops = genChurn(count: n, live: churnLive)
    let values = ops.map { intValue($0.value) }
    var model = Array(0..<churnLive)
    applyFlat(&model, ops)

    // Untimed: replica 1 builds the 1,000 items, replicas 2 and 3 receive them. The RSS delta
    // from here to the end of the run is the memory the three replicas hold.
    let before = Memory.rssNow()
    var docs = [try buildList(replica: 1, n: churnLive)]
    for id in 2...UInt64(churnReplicas) {
        var d = ListDocument(replica: ReplicaID(id))
        let refused = d.receive(docs[0].operations).refused
        guard refused.isEmpty else { throw BenchError("replica \(id) refused the initial items: \(refused[0])") }
        docs.append(d)
    }

    // Timed: turn t (ops t*1000 ..< t*1000+1000) is made by replica t % 3; its operations are
    // encoded once (ListOperation.encode) and the two other replicas receive the bytes.
    var exchangeBytes = 0, refused = 0
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
    }
    let ns = nowNs() - t0
    let held = Memory.rssNow() - before

    // Untimed: the sizes and the checks.
    let snapshot = docs[0].encodedSnapshot()          // the state snapshot (format v2), as W2
    let history = ListOperation.encode(docs[0].operations)
    let lists = docs.map { intValues($0) }
    let converged = lists.allSatisfy { $0 == lists[0] }

    var res = BenchResult(workload: "W12.churn.\(n)", ops: n)
    res.set("ns_per_op", Double(ns) / Double(n))
    res.set("ms", Double(ns) / 1e6)
    res.set("snapshot_bytes", snapshot.count)
    res.set("history_bytes", history.count)
    res.set("memory_bytes", held / churnReplicas)
    res.set("replicas_rss_bytes", held)
    res.set("live_items", lists[0].count)
    res.set("operations", docs[0].operationCount)
    res.set("exchange_bytes", exchangeBytes)
    res.ok = converged && lists[0] == model && refused == 0
    res.note = "3 replicas (ids 1, 2, 3), turns of \(churnTurn) ops (turn t by replica t % 3), each turn "
        + "ListOperation.encode'd once and receive(encoded:) by the 2 others (timed, single run); "
        + "snapshot = encodedSnapshot() (state, v2), history = ListOperation.encode(doc.operations), both of replica 1; "
        + "memory_bytes = RSS delta (before building the replicas -> after the run, all 3 alive) / 3, a proxy "
        + "(includes allocator slack; ListDocument has no internal byte estimate); "
        + "converged=\(converged), equals model=\(lists[0] == model)"
    if refused > 0 { res.note += "; receive refused \(refused) operations" }
    return res
}
