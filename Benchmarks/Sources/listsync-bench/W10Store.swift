import Foundation
import ListCRDT
import ListSync
import ListStore
import ListSyncTestSupport
import Synchronization

// MARK: W10: the durable store (issue 17)

/// W10.store: durable appends per second of single-operation batches, each `fdatasync`ed before
/// `append` returns (one writer; 16 writer threads sharing group commit), bytes on disk per
/// operation, and the time to open (recover) the automerge-paper history from a log only and from a
/// snapshot plus a short log. Files go to `$LISTSYNC_BENCH_DIR` or the temporary folder, the same
/// disk as compare/sqlite_wal.py's database.
func w10Store(_ ctx: Context) throws -> BenchResult {
    let base = ProcessInfo.processInfo.environment["LISTSYNC_BENCH_DIR"] ?? FileManager.default.temporaryDirectory.path
    let root = base + "/listsync-w10-\(getpid())"
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    var res = BenchResult(workload: "W10.store", ops: 0)
    let id = DocumentID(high: 10, low: 10)

    // 1 writer: single-op batches for 3 s; the log preallocated (the default), then growing by
    // each append (preallocation off), so every run shows what preallocation buys on this disk.
    let one = try w10OneWriter(folder: root + "/one", id: id, options: StoreOptions())
    res.set("appends_per_s_1", one.rate)
    res.set("bytes_per_op", one.bytesPerOp)
    res.set("appends_1", one.appends)
    var growing = StoreOptions()
    growing.preallocation = 0
    let grown = try w10OneWriter(folder: root + "/one-growing", id: id, options: growing)
    res.set("appends_per_s_1_growing", grown.rate)

    // 16 writer threads, each its own replica, single-op batches for 3 s: on one document; then
    // on 16 documents, each with a log of its own and with the data folder's shared log.
    do {
        let (store, _) = try DocumentStore.open(at: root + "/sixteen", documentID: id, replica: ReplicaID(1))
        let r = try w10Writers(Array(repeating: store, count: 16)) { try store.syncCount }
        res.set("appends_per_s_16", r.rate)
        res.set("syncs_per_append_16", r.syncsPerAppend)
        try store.close()
    }
    for shared in [false, true] {
        let folder = try DataFolder(root: root + (shared ? "/docs-shared" : "/docs-own"),
                                    sharedLog: shared ? SharedLogOptions() : nil)
        var stores: [DocumentStore] = []
        for w in 0..<16 {
            let doc = try folder.create(name: "w\(w)", id: DocumentID(high: 16, low: UInt64(w)))
            stores.append(try folder.open(doc, replica: ReplicaID(1)).store)
        }
        let r = try w10Writers(stores) {
            if let log = folder.sharedLog { return try log.syncCount }
            return try stores.reduce(0) { $0 + (try $1.syncCount) }
        }
        res.set(shared ? "appends_per_s_16_docs_shared" : "appends_per_s_16_docs_own", r.rate)
        res.set(shared ? "syncs_per_append_16_docs_shared" : "syncs_per_append_16_docs_own", r.syncsPerAppend)
        for s in stores { try s.close() }
        folder.close()
    }

    // Recovery of the automerge-paper history: log only (batches of 64 operations, as a peer's
    // batches arrive), then a snapshot and 1,000 single-op batches after it.
    let trace = try ctx.loadTrace()
    let (_, finalDoc, _) = try traceOnce(trace.edits)
    let ops = finalDoc.operations
    let live = try finalDoc.itemCount(inSection: 0)
    let folder = root + "/paper"
    do {
        let (store, _) = try DocumentStore.open(at: folder, documentID: id, replica: ReplicaID(1))
        var k = 0
        while k < ops.count {
            try store.append(Array(ops[k..<min(k + 64, ops.count)]))
            k += 64
        }
        res.set("paper_log_bytes", Int(try store.logSize))
        try store.close()
    }
    let logOnly = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
        let t0 = nowNs()
        let (store, doc) = try DocumentStore.open(at: folder, documentID: id, replica: ReplicaID(2))
        let count = try doc.itemCount(inSection: 0)
        let ms = Double(nowNs() - t0) / 1e6
        try store.close()
        return (ms, count)
    }
    do {
        var (store, doc) = try DocumentStore.open(at: folder, documentID: id, replica: ReplicaID(1))
        try store.snapshot(doc)
        for i in 0..<1_000 {
            let op = try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data([UInt8(ascii: "x")]))
            try store.append([op])
        }
        res.set("paper_snapshot_bytes", try FileSystem.system.readFile(folder + "/snapshot-1").count)
        try store.close()
    }
    let withSnapshot = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
        let t0 = nowNs()
        let (store, doc) = try DocumentStore.open(at: folder, documentID: id, replica: ReplicaID(2))
        let count = try doc.itemCount(inSection: 0)
        let ms = Double(nowNs() - t0) / 1e6
        try store.close()
        return (ms, count)
    }
    res.set("recover_log_ms", logOnly.ms)
    res.set("recover_snapshot_ms", withSnapshot.ms)
    res.set("paper_ops", ops.count)
    res.ops = ops.count
    res.ok = logOnly.state == live && withSnapshot.state == live + 1_000
    res.note = "single-op batches fdatasynced before append returns; recovery " + Repeat.note(Repeat.loads, logOnly.runs, "opens")
    return res
}

/// One writer appending single-operation batches for 3 s: appends per second, log bytes per
/// operation (the records; preallocated zeros not counted), appends made.
func w10OneWriter(folder: String, id: DocumentID, options: StoreOptions) throws -> (rate: Double, bytesPerOp: Double, appends: Int) {
    let (store, _) = try DocumentStore.open(at: folder, documentID: id, replica: ReplicaID(1), options: options)
    defer { try? store.close() }
    var doc = ListDocument(replica: ReplicaID(1))
    let section = try doc.insertSection(at: 0)
    try store.append([section])
    let before = try store.logSize
    var n = 0
    let t0 = nowNs()
    while nowNs() - t0 < 3_000_000_000 {
        let op = try doc.insertItem(at: IndexPath(item: n, section: 0), value: Data("item \(n)".utf8))
        try store.append([op])
        n += 1
    }
    let seconds = Double(nowNs() - t0) / 1e9
    return (Double(n) / seconds, Double(try store.logSize - before) / Double(n), n)
}

/// `stores.count` writer threads, writer w appending single-operation batches to `stores[w]` for
/// 3 s (each its own replica, on a section made first): appends per second, and `fdatasync`s per
/// append (`syncs` read before and after).
func w10Writers(_ stores: [DocumentStore], syncs: () throws -> Int) throws -> (rate: Double, syncsPerAppend: Double) {
    var doc = ListDocument(replica: ReplicaID(1))
    let section = try doc.insertSection(at: 0)
    for s in Set(stores.map { ObjectIdentifier($0) }) {
        try stores.first { ObjectIdentifier($0) == s }!.append([section])
    }
    let syncsBefore = try syncs()
    let total = Mutex(0)
    let failure = Mutex<String?>(nil)
    let group = DispatchGroup()
    let t0 = nowNs()
    for (w, store) in stores.enumerated() {
        group.enter()
        Thread {
            defer { group.leave() }
            var mine = ListDocument(replica: ReplicaID(UInt64(100 + w)))
            mine.receive([section])
            var n = 0
            do {
                while nowNs() - t0 < 3_000_000_000 {
                    let op = try mine.insertItem(at: IndexPath(item: n, section: 0), value: Data("w\(w) \(n)".utf8))
                    try store.append([op])
                    n += 1
                }
            } catch { failure.withLock { $0 = "\(error)" } }
            total.withLock { $0 += n }
        }.start()
    }
    group.wait()
    let seconds = Double(nowNs() - t0) / 1e9
    if let f = failure.withLock({ $0 }) { throw BenchError("\(stores.count) writers: \(f)") }
    let n = total.withLock { $0 }
    return (Double(n) / seconds, Double(try syncs() - syncsBefore) / Double(n))
}
