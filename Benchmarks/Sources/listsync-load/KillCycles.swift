import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncFiles
import Synchronization
import ListSyncRandom

/// Values of inserts the daemon acknowledged.
final class Acknowledged: Sendable {
    let values = Mutex<Set<String>>([])
    func add(_ v: String) { values.withLock { _ = $0.insert(v) } }
    var all: Set<String> { values.withLock { $0 } }
}

/// A flag the clients watch.
final class StopFlag: Sendable {
    let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Kill -9 under load: clients insert while the daemon is killed and restarted `cycles` times;
/// then every acknowledged insert must be there (Docs/Storage.md: acknowledged means durable; a crash at any byte loses nothing acknowledged).
func runKillCycles(_ c: Config) async throws -> [String: Any] {
    let binary = c.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
    var daemon = try DaemonProcess(binary: binary)
    let port = daemon.port, data = daemon.data
    defer { daemon.stop() }
    let key = try KeyFile.read(data + "/key")
    let admin = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key)
    let doc = try await admin.create(name: "kill")
    await admin.close()

    let acknowledged = Acknowledged(), stop = StopFlag()
    let clients = min(c.clients, 16)
    let start = now()
    let reconnects = Failures()
    let workers = (0..<clients).map { i in
        Task {
            var seq = 0
            while !stop.isSet {
                guard let client = try? await DaemonClient.connect(host: "127.0.0.1", port: port, key: key,
                                                                    localHost: "127.0.1.\(2 + i)", changeSets: false, timeout: .seconds(5)) else {
                    try? await Task.sleep(for: .milliseconds(20))
                    continue
                }
                do {
                    _ = try await client.open(doc)
                    while !stop.isSet {
                        let value = "c\(i)-\(seq)"
                        try await client.edit(doc) { d throws(ListError) in
                            let n = try d.itemCount(inSection: 0)
                            _ = try d.insertItem(atRow: (seq &* 7919) % (n + 1), inSection: 0,
                                                 value: Data(value.utf8))
                        }
                        acknowledged.add(value)
                        seq += 1
                    }
                } catch {
                    reconnects.add("\(error)")
                }
                await client.close()
            }
        }
    }
    var rng = SplitMix64(seed: c.seed)
    for _ in 0..<c.killCycles {
        try await Task.sleep(for: .milliseconds(100 + Int(rng.next() % 400)))
        daemon.kill9()
        // Restart on the same folder and port (the data folder's lock died with the process).
        var restarted: DaemonProcess?
        for _ in 0..<50 where restarted == nil {
            restarted = try? DaemonProcess(binary: binary, data: data, port: port)
            if restarted == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        guard let r = restarted else { throw LoadError("the daemon did not restart") }
        daemon = r
    }
    try await Task.sleep(for: .milliseconds(300))
    stop.set()
    for w in workers { await w.value }
    let seconds = Double(now() - start) / 1e9

    // Every acknowledged insert is there, each item once.
    let checker = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false)
    let live = try await checker.open(doc)
    let items = live.snapshot.sections.flatMap(\.items)
    await checker.close()
    let present = Set(items.map { String(decoding: $0.value, as: UTF8.self) })
    let acked = acknowledged.all
    let missing = acked.subtracting(present)
    return [
        "kill_cycles": c.killCycles, "clients": clients, "seconds": seconds,
        "acknowledged_inserts": acked.count, "missing_acknowledged": missing.count,
        "items": items.count, "items_once": Set(items.map(\.id)).count == items.count,
        "reconnects": reconnects.count, "first_reconnect_reason": reconnects.first, "missing_examples": Array(missing.prefix(5)),
    ]
}
