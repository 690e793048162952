import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles

// listsync-load --idle-clients N [--resident-docs M]: what holding connections and documents
// costs the daemon. First one client creates M small documents (two sections, ten items) and
// opens each, so that all are resident: the RSS difference divided by M is the cost of a resident
// document. Then N clients connect (from loopback addresses 127.0.x.y, at most 10 per address),
// each completes the handshake and subscribes to one shared document, then stays idle; the
// daemon's resident set size before and after, divided by N, is the cost of a connection.

func runIdle(_ c: Config) async throws -> [String: Any] {
    let binary = c.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
    let p = try DaemonProcess(binary: binary, extra: ["--max-connections", "\(c.idleClients + 16)"])
    defer { p.stop() }
    let key = try KeyFile.read(p.data + "/key")
    func settle() async throws -> Int {
        try await Task.sleep(for: .milliseconds(500))
        return p.rss
    }

    let admin = try await DaemonClient.connect(host: "127.0.0.1", port: p.port, key: key)
    let shared = try await admin.create(name: "shared", sections: ["a", "b"])
    _ = try await admin.open(shared)
    try await admin.edit(shared) { d throws(ListError) in
        for k in 0..<20 { _ = try d.insertItem(atRow: k / 2, inSection: k % 2, value: Data("item-\(k)".utf8)) }
    }
    let before = try await settle()

    // Resident documents.
    let beforeDocs = before
    for d in 0..<c.residentDocs {
        let id = try await admin.create(name: "small-\(d)", sections: ["a", "b"])
        _ = try await admin.open(id)
        try await admin.edit(id) { doc throws(ListError) in
            for k in 0..<10 { _ = try doc.insertItem(atRow: k / 2, inSection: k % 2, value: Data("v\(k)".utf8)) }
        }
    }
    let withDocs = try await settle()
    FileHandle.standardError.write(Data("listsync-load: \(c.residentDocs) documents resident\n".utf8))
    let beforeClients = withDocs
    var clients: [DaemonClient] = []
    let started = Date()
    for i in 0..<c.idleClients {
        let source = "127.0.\(1 + i / 2_500).\(2 + (i / 10) % 250)"
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: p.port, key: key, localHost: source, changeSets: false)
        _ = try await client.open(shared)
        clients.append(client)
        if (i + 1) % 250 == 0 { FileHandle.standardError.write(Data("listsync-load: \(i + 1) clients\n".utf8)) }
    }
    let connectSeconds = Date().timeIntervalSince(started)
    let held = try await settle()
    let status = try await admin.status()
    let connections = (try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])?["connections"] as? Int ?? -1
    for client in clients { await client.close() }

    await admin.close()
    return [
        "idle_clients": c.idleClients,
        "connections_reported": connections,
        "connect_seconds": (connectSeconds * 100).rounded() / 100,
        "rss_before_bytes": before,
        "rss_with_clients_bytes": held,
        "rss_per_connection_bytes": c.idleClients > 0 ? (held - beforeClients) / c.idleClients : 0,
        "resident_docs": c.residentDocs,
        "rss_per_resident_document_bytes": c.residentDocs > 0 ? (withDocs - beforeDocs) / c.residentDocs : 0,
        "rss_with_docs_bytes": withDocs,
    ]
}
