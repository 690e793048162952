import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles

// listsync-load --recovery-docs N: how long a daemon holding N documents takes to come back after
// SIGKILL. One client creates N small documents (two sections, ten items, one batch each), the
// daemon is killed with SIGKILL and started again on the same data folder and port; reported:
// the time from the restart to the first answered request (startup: opening the data folder and,
// with the shared log, scanning it), and to every document opened again by a fresh client with
// its ten items (each open loads and recovers that document). The storage is the daemon's default
// unless LISTSYNC_STORAGE says otherwise (the daemon inherits the environment).

func runRecovery(_ c: Config) async throws -> [String: Any] {
    let binary = c.binary ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("listsync").path
    let first = try DaemonProcess(binary: binary)
    let key = try KeyFile.read(first.data + "/key")
    let port = first.port
    var ids: [DocumentID] = []
    do {
        let writer = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false)
        for d in 0..<c.recoveryDocs {
            let id = try await writer.create(name: "doc-\(d)", sections: ["a", "b"])
            _ = try await writer.open(id)
            try await writer.edit(id) { doc throws(ListError) in
                for k in 0..<10 { _ = try doc.insertItem(atRow: k / 2, inSection: k % 2, value: Data("v\(k)".utf8)) }
            }
            ids.append(id)
            if (d + 1) % 250 == 0 { FileHandle.standardError.write(Data("listsync-load: \(d + 1) documents\n".utf8)) }
        }
        await writer.close()
    }
    let bytes = first.bytesOnDisk
    first.kill9()
    let restart = Date()
    let second = try DaemonProcess(binary: binary, data: first.data, port: port)
    defer { second.stop() }
    let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false)
    _ = try await reader.status()
    let startup = Date().timeIntervalSince(restart)
    var wrong = 0
    for id in ids {
        let doc = try await reader.open(id).document
        let items = ((try? doc.itemCount(inSection: 0)) ?? 0) + ((try? doc.itemCount(inSection: 1)) ?? 0)
        if items != 10 { wrong += 1 }
    }
    let all = Date().timeIntervalSince(restart)
    await reader.close()
    return [
        "recovery_docs": c.recoveryDocs,
        "storage": ProcessInfo.processInfo.environment["LISTSYNC_STORAGE"] ?? "shared",
        "bytes_on_disk": bytes,
        "startup_seconds": (startup * 1000).rounded() / 1000,
        "all_documents_open_seconds": (all * 1000).rounded() / 1000,
        "documents_wrong": wrong,
        "converged": wrong == 0,
    ]
}
