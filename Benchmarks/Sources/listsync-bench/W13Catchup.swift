import Foundation
import ListCRDT
import ListSync

// W13.catchup.N (a daemon's memory while devices catch up): a DocumentCore holding an
// uncompacted document of N operations (W12's churn by one replica: 1,000 live items, N inserts
// and deletes), 10 subscribers attaching at once from nothing, then pumped round robin
// (roomAvailable after each awaitRoom, as a driver with fast links would) until every one has its
// `synced`. Reports the growth of the peak RSS over the catch-ups: what the subscribers' queues
// and the frames in flight cost (the document itself is built before the reading starts).

let catchUpSizes = [1_000_000]
let catchUpSubscribers = 10

func w13CatchUp(n: Int) throws -> BenchResult {
    // Untimed: the document, by one replica.
    var doc = try buildList(replica: 1, n: churnLive)
    for op in genChurn(count: n - doc.operationCount, live: churnLive) {
        if op.insert { try doc.insertItem(atRow: op.pos, inSection: 0, value: intValue(op.value)) } else { try doc.deleteItem(atRow: op.pos, inSection: 0) }
    }
    let operations = doc.operationCount
    var core = DocumentCore(id: DocumentID(high: 1, low: 13), name: "W13", epoch: 1, document: doc)
    doc = ListDocument(replica: ReplicaID(2))   // the core holds the only copy

    let before = Memory.rssNow()
    Memory.resetPeak()
    let t0 = nowNs()
    var frames = 0, bytes = 0, synced = 0
    var due: [SubscriberID] = []
    var firstOps = 0   // operations the first subscriber received (decoded), checked against N
    func take(_ actions: [DocumentCore.Action]) throws {
        for a in actions {
            switch a {
            case let .send(s, frame):
                frames += 1
                bytes += frame.count
                switch try SyncMessage(decoding: frame) {
                case let .operations(_, _, ops) where s.raw == 0: firstOps += ops.count
                case .synced: synced += 1
                default: break
                }
            case let .awaitRoom(s): due.append(s)
            case let .close(s, reason): throw BenchError("\(s) closed: \(reason)")
            case .append: throw BenchError("an append while catching up")
            }
        }
    }
    for s in 0..<catchUpSubscribers {
        try take(core.subscribe(SubscriberID(s), epoch: 0, version: VersionVector()))
    }
    while !due.isEmpty {
        let round = due
        due = []
        for s in round { try take(core.roomAvailable(s)) }
    }
    let ms = Double(nowNs() - t0) / 1e6
    let peak = Memory.rssPeak() - before
    withExtendedLifetime(core) {}

    var res = BenchResult(workload: "W13.catchup.\(n)", ops: operations)
    res.set("catchup_peak_rss_bytes", peak)
    res.set("catchup_peak_rss_bytes_per_subscriber", peak / catchUpSubscribers)
    res.set("ms", ms)
    res.set("frames", frames)
    res.set("frame_bytes", bytes)
    res.set("operations", operations)
    res.ok = synced == catchUpSubscribers && firstOps == operations
    res.note = "DocumentCore with an uncompacted document of \(operations) operations (1 replica, \(churnLive) live items, "
        + "W12's churn), \(catchUpSubscribers) subscribers from nothing, pumped round robin with roomAvailable to their synced "
        + "(default stepBytes 1 MiB, maxFrame 1 MiB); catchup_peak_rss_bytes = peak RSS (VmHWM, reset just before) minus "
        + "the RSS before the subscribes; ms = subscribes + pumping + decoding every frame (single run); "
        + "subscriber 0 received \(firstOps) operations, \(synced) synced"
    return res
}
