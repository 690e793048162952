import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListTable

// listsync-load --device N: the device client's figures (issue 26), against a `listsync serve`
// process started here, in one run:
// 1. cold open of an N-item document from the device's store, against fetching it from the daemon
//    (a new device's SyncClient, and DaemonClient.open);
// 2. resuming after 1,000 offline edits while another device made 100: bytes on the wire against
//    the encoded size of those edits;
// 3. durable local edits per second on one document (one insert per edit, each fdatasync'ed),
//    with SQLite in WAL mode and synchronous=FULL (Benchmarks/compare/sqlite_wal.py) beside it.

func runDevice(_ c: Config, items: Int) async throws -> [String: Any] {
    let binary = c.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
    let p = try DaemonProcess(binary: binary)
    defer { p.stop() }
    let key = try KeyFile.read(p.data + "/key")
    let root = NSTemporaryDirectory() + "listsync-device-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: root) }
    let server = SyncClient.Server(host: "127.0.0.1", port: p.port, key: key)
    var result: [String: Any] = ["items": items]

    // The document, made on device A and synced.
    let a = try SyncClient(folder: root + "/a", server: server, changeSets: false)
    let doc = try await a.create(name: "big", sections: ["all"])
    var made = 0
    while made < items {
        let n = min(10_000, items - made)
        let base = made
        _ = try await a.edit(doc) { (d: inout ListDocument) throws(ListError) in
            for i in 0..<n { _ = try d.insertItem(atRow: base + i, inSection: 0, value: Data("item \(base + i)".utf8)) }
        }
        made += n
    }
    await a.start()
    try await a.waitUntilSynced(timeout: .seconds(300))
    await a.close()

    // 1. Cold open from the device's store, then fetches from the daemon.
    var clock = ContinuousClock.now
    let reopened = try SyncClient(folder: root + "/a", server: nil, changeSets: false)
    let live = try await reopened.open(doc)
    let local = ContinuousClock.now - clock
    precondition(live.snapshot.numberOfItems(inSectionAt: 0) == items)
    await reopened.close()
    clock = ContinuousClock.now
    let fresh = try SyncClient(folder: root + "/fresh", server: server, changeSets: false)
    let fetched = try await fresh.fetch(doc)
    await fresh.start()
    try await fresh.waitUntilSynced(timeout: .seconds(300))
    let fetch = ContinuousClock.now - clock
    precondition(fetched.snapshot.numberOfItems(inSectionAt: 0) == items)
    await fresh.close()
    clock = ContinuousClock.now
    let dc = try await DaemonClient.connect(host: "127.0.0.1", port: p.port, key: key, changeSets: false)
    _ = try await dc.open(doc)
    let daemonOpen = ContinuousClock.now - clock
    await dc.close()
    result["cold_open_local_ms"] = ms(local)
    result["fetch_sync_client_ms"] = ms(fetch)
    result["fetch_daemon_client_ms"] = ms(daemonOpen)
    result["cold_open_ratio"] = seconds(local) / seconds(min(fetch, daemonOpen))

    // 2. Resume after 1,000 offline edits while another device made 100.
    let offline = try SyncClient(folder: root + "/a", server: server, changeSets: false)
    _ = try await offline.open(doc)
    let before = await offline.live(doc)!.document.version
    for i in 0..<1_000 {
        _ = try await offline.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.insertItem(atRow: (i * 7919) % items, inSection: 0, value: Data("offline \(i)".utf8))
        }
    }
    let mine = ListOperation.encode(await offline.live(doc)!.operations(since: before))
    let other = try SyncClient(folder: root + "/fresh", server: server, changeSets: false)
    _ = try await other.open(doc)
    let otherBefore = await other.live(doc)!.document.version
    await other.start()
    try await other.waitUntilSynced(timeout: .seconds(60))
    for i in 0..<100 {
        _ = try await other.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.insertItem(atRow: (i * 104_729) % items, inSection: 0, value: Data("other \(i)".utf8))
        }
    }
    try await other.waitUntilSynced(timeout: .seconds(60))
    let theirs = ListOperation.encode(await other.live(doc)!.operations(since: otherBefore))
    await other.close()
    await offline.start()
    try await offline.waitUntilSynced(timeout: .seconds(60))
    let wire = await offline.traffic
    await offline.close()
    result["resume_wire_bytes"] = wire.sent + wire.received
    result["resume_encoded_bytes"] = mine.count + theirs.count
    result["resume_ratio"] = Double(wire.sent + wire.received) / Double(mine.count + theirs.count)

    // 3. Durable local edits per second, one insert per edit.
    let d = try SyncClient(folder: root + "/rate", server: nil, changeSets: false)
    let rateDoc = try await d.create(name: "rate", sections: ["s"])
    var edits = 0
    let start = ContinuousClock.now
    while ContinuousClock.now - start < .seconds(3) {
        let k = edits
        _ = try await d.edit(rateDoc) { (x: inout ListDocument) throws(ListError) in
            _ = try x.insertItem(atRow: k, inSection: 0, value: Data("payload-\(k)".utf8))
        }
        edits += 1
    }
    let elapsed = ContinuousClock.now - start
    await d.close()
    result["durable_edits_per_s"] = Double(edits) / seconds(elapsed)
    result["sqlite_wal_full_inserts_per_s"] = sqliteRate()
    return result
}

private func ms(_ d: Duration) -> Double { seconds(d) * 1000 }
private func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

/// One writer's inserts per second from Benchmarks/compare/sqlite_wal.py (nil when it cannot run).
private func sqliteRate() -> Double? {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../compare/sqlite_wal.py").standardized.path
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", script, "--seconds", "3"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let metrics = o["metrics"] as? [String: Any] else { return nil }
    return metrics["appends_per_s_1"] as? Double
}
