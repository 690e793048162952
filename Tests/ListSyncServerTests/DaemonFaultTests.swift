#if canImport(Glibc)
import Foundation
import ListCRDT
import ListStore
import ListSyncServer
import ListSyncTestSupport
import Synchronization
import Testing

/// The daemon in this process, with faults a user cannot stage on demand: a disk that fills up
/// (the store's file funnel fails writes with ENOSPC), and a client with the key that forges an
/// operation under a known id.
@Suite("Daemon faults: disk full and back, equivocation", .serialized, .timeLimit(.minutes(2)))
struct DaemonFaultTests {
    /// Events the daemon logged.
    final class Events: Sendable {
        let list = Mutex<[(String, [String: String])]>([])
        func named(_ name: String) -> [[String: String]] { list.withLock { $0.filter { $0.0 == name }.map(\.1) } }
    }

    static func status(_ client: DaemonClient) async throws -> [String: Any] {
        let json = try await client.status()
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("a full disk: edits are refused with the reason, status and log say why; space back: the same session resumes; reopened, every acknowledged edit is there once")
    func diskFull() async throws {
        let full = Mutex(false)
        let events = Events()
        let fs = FileSystem { call in
            full.withLock { $0 } && ["pwrite", "write", "fdatasync", "fsync"].contains(call.name) ? ENOSPC : nil
        }
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.fileSystem = fs
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key)
        let doc = try await client.create(name: "disk")
        let live = try await client.open(doc)
        func insert(_ v: String) async throws {
            try await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: d.itemCount(inSection: 0), inSection: 0, value: Data(v.utf8)) }
        }
        try await insert("a")
        let acknowledged = live.document.version
        let operationsBefore = try await client.documents().first { $0.id == doc }?.operations

        full.withLock { $0 = true }
        for v in ["b", "c"] {
            do {
                try await insert(v)
                Issue.record("an edit was acknowledged while the disk was full")
            } catch let DaemonClientError.refused(code, text) {
                #expect(code == .storage)
                #expect(text.contains("28") || text.lowercased().contains("space"), "\(text)")
            }
        }
        // Nothing was applied: the daemon's copy is as it was.
        #expect(try await client.documents().first { $0.id == doc }?.operations == operationsBefore)
        let failing = try await Self.status(client)
        #expect(failing["storage"] as? String == "failing")
        #expect((failing["store_errors"] as? [String: String])?[doc.description] != nil, "\(failing)")
        #expect(events.named("store failed").first?["document"] == doc.description)

        // Space again: the unacknowledged edits are sent again (as a client does) and go in.
        full.withLock { $0 = false }
        try await client.upload(doc, live.operations(since: acknowledged))
        try await insert("d")
        let healthy = try await Self.status(client)
        #expect(healthy["storage"] as? String == "ok")
        #expect(!events.named("store reopened").isEmpty)
        await client.close()
        await daemon.stop()

        // A new daemon on the same folder (real files, no hook): every acknowledged edit, once.
        var config = DaemonConfiguration(dataFolder: dir.path + "/data")
        config.listenPort = 0
        let again = Daemon(configuration: config)
        try await again.start()
        let port2 = try #require(await again.address?.port)
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port2, key: key)
        let reopened = try await reader.open(doc)
        #expect(reopened.document.rows == [["a", "b", "c", "d"]])
        await reader.close()
        await again.stop()
    }

    @Test("an operation under a known id with other content is refused and recorded (log with the sender, metric, status); the document is unchanged")
    func equivocation() async throws {
        let events = Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let author = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key)
        let doc = try await author.create(name: "forged")
        let live = try await author.open(doc)
        // A fork of the author's copy (same replica, same clock) makes the next id with other content.
        var fork = live.document
        try await author.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("genuine".utf8)) }
        let forged = try fork.insertItem(atRow: 0, inSection: 0, value: Data("forged".utf8))
        #expect(live.document.operations.contains { $0.id == forged.id })

        let forger = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, localHost: "127.0.0.3")
        _ = try await forger.open(doc)
        do {
            try await forger.upload(doc, [forged])
            Issue.record("the forged operation was acknowledged")
        } catch let DaemonClientError.refused(code, text) {
            #expect(code == .refused)
            #expect(text.contains("different content"), "\(text)")
        }
        let logged = try #require(events.named("equivocation refused").first)
        #expect(logged["document"] == doc.description)
        #expect(logged["operation"] == "\(forged.id)")
        #expect(logged["from"]?.hasPrefix("127.0.0.3") == true, "\(logged)")
        let status = try await Self.status(author)
        let metrics = status["metrics"] as? [String: Any] ?? status
        #expect(metrics["equivocations_refused"] as? Int == 1, "\(status)")
        // Unchanged, for the author and for a fresh reader.
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key)
        #expect(try await reader.open(doc).document.rows == [["genuine"]])
        await reader.close()
        await forger.close()
        await author.close()
        await daemon.stop()
    }
}
#endif
