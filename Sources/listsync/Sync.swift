import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncTCP
import ListTable

let syncUsage = """
    USAGE: listsync sync --replica DIR [DOC] [options]

    Connects to the daemon, exchanges what either side lacks for every document of this device's
    copy in DIR (and for DOC, fetched from the daemon when the device does not have it yet), and
    exits 0 once everything is up to date: every edit made with --replica acknowledged as durable
    by the daemon, and every change of the daemon's copy saved in DIR. A field edit made on this
    device that lost to a later concurrent edit of the same field is printed, one line each
    ("groceries: your edit of field title of 0.0 ("soy milk") lost to "almond milk" by replica
    …"; with --json, a "lostFields" list per document).

    OPTIONS:
      --replica DIR        this device's copy (LISTSYNC_REPLICA); created if missing
      --timeout SECONDS    give up after this long (default 30)
      --daemon HOST:PORT   the daemon (LISTSYNC_DAEMON; default 127.0.0.1:\(defaultPort))
      --key-file FILE      the key (LISTSYNC_KEY_FILE; default DIR/key of --data)
      --data DIR           the daemon's data folder, for its key (LISTSYNC_DATA; default ~/.listsync)
      --credential FILE    this device's credential instead of the key (LISTSYNC_CREDENTIAL)
      --json               print JSON instead of text
      -h, --help           show this help
    """

/// `listsync sync --replica DIR [DOC]`: one exchange with the daemon, then exit.
func runSync(_ args: [String]) throws -> Int32 {
    let o = try Options(args, values: ["--replica", "--timeout", "--daemon", "--key-file", "--data", "--credential"], flags: ["--help", "--json"])
    if o.has("--help") { print(syncUsage); return 0 }
    guard o.positional.count <= 1 else { throw UsageError(message: "sync takes at most one DOC, not \(o.positional.count)") }
    guard let folder = o.value("--replica", env: "LISTSYNC_REPLICA") else {
        throw UsageError(message: "sync needs --replica DIR (the device's copy)")
    }
    let seconds = try o.value("--timeout").map { t -> Double in
        guard let s = Double(t), s > 0 else { throw UsageError(message: "--timeout must be a positive number of seconds, not '\(t)'") }
        return s
    } ?? 30
    let (host, port) = try parseAddress(o.value("--daemon", env: "LISTSYNC_DAEMON") ?? "127.0.0.1:\(defaultPort)", what: "--daemon")
    let json = o.has("--json")
    let key: ClientAuthentication
    do { key = try clientAuthentication(o) } catch { return fail("sync", "\(error)", json: json) }
    let doc = o.positional.first
    return blockOn("sync", json: json) {
        let server = SyncClient.Server(host: host, port: port, authentication: key, requestTimeout: .seconds(Int64(max(1, seconds))),
                                       backoff: Backoff(initial: .milliseconds(200), maximum: .seconds(2)))
        // With change sets (the client holds them through a catch-up: one diff per document):
        // they carry the field edits of this device that lost to concurrent ones, which the
        // sync reports.
        let client = try SyncClient(folder: folder, server: server, changeSets: true)
        do {
            let code = try await exchange(client, doc: doc, host: host, port: port, key: key, timeout: seconds, json: json)
            await client.close()
            return code
        } catch {
            await client.close()
            throw error
        }
    }
}

private func exchange(_ client: SyncClient, doc: String?, host: String, port: UInt16, key: ClientAuthentication,
                      timeout: Double, json: Bool) async throws -> Int32 {
    let started = Date()
    var local = try await client.documents()
    if let doc {
        let onDevice = local.map { DocumentInfo(id: $0.id, name: $0.name, epoch: 0, operations: 0) }
        if (try? DocumentInfo.resolve(doc, in: onDevice)) == nil {
            // Not on this device: find it on the daemon.
            let daemon = try await DaemonClient.connect(host: host, port: port, authentication: key, timeout: .seconds(Int64(max(1, timeout))))
            let info: DocumentInfo
            do { info = try await daemon.resolve(doc) } catch {
                await daemon.close()
                throw error
            }
            await daemon.close()
            _ = try await client.fetch(info.id, name: info.name)
            local = try await client.documents()
        }
    }
    var before: [DocumentID: Int] = [:]
    // Each document's change sets, collected until the document is closed below: the field
    // edits of this device that lost.
    var lostFields: [DocumentID: Task<[FieldConflict], Never>] = [:]
    for (id, _) in local {
        let live = try await client.open(id)
        before[id] = live.document.operationCount
        let changes = live.changes()
        lostFields[id] = Task {
            var lost: [FieldConflict] = []
            for await c in changes { lost += c.lostFields }
            return lost
        }
    }
    let waiting = await client.status.waiting
    await client.start()
    if let problem = await syncOrFailFast(client, timeout: timeout) { return fail("sync", problem, json: json) }
    var received = 0
    var rows: [[String: Any]] = []
    var lost: [String] = []
    let destroyed = Dictionary(uniqueKeysWithValues: await client.destroyedCopies.map { ($0.id, $0) })
    for (id, name) in local {
        if let gone = destroyed[id] {
            rows.append(["id": id.description, "name": name, "destroyed": true, "reason": gone.reason])
            continue
        }
        let live = try await client.open(id)
        let got = live.document.operationCount - (before[id] ?? 0)
        received += got
        var row: [String: Any] = ["id": id.description, "name": name, "received": got]
        // Closing ends the subscription once what was published is read (nothing more is edited).
        live.close()
        let conflicts = await lostFields[id]?.value ?? []
        if !conflicts.isEmpty {
            let snapshot = live.snapshot
            row["lostFields"] = conflicts.map { lostFieldObject($0, snapshot) }
            lost += conflicts.map { "\(shown(name)): \(describeLostField($0, snapshot))" }
        }
        rows.append(row)
    }
    let seconds = Date().timeIntervalSince(started)
    if json {
        printJSON(["documents": rows, "sent": waiting, "received": received, "upToDate": true, "seconds": seconds])
    } else {
        for gone in destroyed.values.sorted(by: { $0.id < $1.id }) {
            print("destroyed on the daemon: \(shown(gone.name)) (\(gone.id)); removed from this device")
        }
        for line in lost { print(line) }
        print("up to date: \(local.count - destroyed.count) document(s); sent \(waiting) edit(s), received \(received) operation(s) in \(String(format: "%.2f", seconds)) s")
    }
    return 0
}

/// Waits until `client` is up to date (nil), or says why not: a failure, the daemon unreachable
/// (the first connection attempt failed: no waiting for the backoff), or the timeout.
private func syncOrFailFast(_ client: SyncClient, timeout: Double) async -> String? {
    /// How one of the two waits ended.
    enum Outcome: Sendable {
        case synced
        case failed(String)
        /// The wait for the sync ended because the other wait closed the client: its reason
        /// comes next.
        case closedHere
    }
    let updates = await client.statusUpdates()
    return await withTaskGroup(of: Outcome.self) { group in
        group.addTask {
            do {
                try await client.waitUntilSynced(timeout: .milliseconds(Int64(timeout * 1000)))
                return .synced
            } catch SyncClientError.timeout(let status) {
                return .failed("not up to date after \(Int(timeout)) s: \(status)")
            } catch SyncClientError.closed {
                return .closedHere
            } catch {
                return .failed("\(error)")
            }
        }
        group.addTask {
            for await status in updates {
                if case let .offline(_, reason?) = status {
                    // Ends the wait above too (it throws `closed`).
                    await client.close()
                    return .failed("\(reason) (is `listsync serve` running there?); the edits stay saved on this device")
                }
            }
            return .closedHere
        }
        // The first outcome that says something: a `closed` from the first wait is only the
        // echo of the second wait's close, which may finish after it.
        var answer: String?? = nil
        for await outcome in group {
            switch outcome {
            case .synced: answer = .some(nil)
            case let .failed(why): answer = .some(why)
            case .closedHere: continue
            }
            break
        }
        group.cancelAll()
        return answer ?? "the sync client closed before it was up to date"
    }
}
