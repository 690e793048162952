import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListTable
import ListSyncTestTraits
import Testing

/// The device client when a document is destroyed on the daemon, and when the device drops its
/// own copy (Docs/Client.md, "When a document is destroyed").
@Suite(.ownThread, .serialized, .hangGuard)
struct SyncClientDestroyTests {
    /// Polls `condition` for up to `seconds`.
    static func within(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(max(seconds, livenessGuardSeconds))
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    /// Opens the device folder again, offline. A process another test spawns at that moment may
    /// hold the folder's lock for an instant (its copy of the descriptor lives from fork to exec,
    /// and a flock goes with the open file): that wait is bounded, anything else thrown.
    static func reopen(_ folder: String) async throws -> SyncClient {
        let deadline = Date().addingTimeInterval(5)
        while true {
            do { return try SyncClient(folder: folder, server: nil) } catch {
                guard case .store(.locked) = error, Date() < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// A daemon process, and a device client in `dir` that made "groceries" and synced it.
    static func syncedDevice(_ dir: TemporaryFolder) async throws -> (DaemonProcess, SyncClient, DocumentID) {
        let daemon = try DaemonProcess(data: dir.path + "/data")
        let client = try SyncClient(folder: dir.path + "/device", server: try SyncClientTests.server(daemon))
        let id = try await client.create(name: "groceries", sections: ["a"])
        await client.start()
        try await client.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        return (daemon, client, id)
    }

    @Test("destroyed on the daemon: a synced copy is removed from the device, the status stays up to date, and the id cannot be fetched again")
    func destroyedCopyRemoved() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (daemon, client, id) = try await Self.syncedDevice(dir)
        defer { daemon.terminate() }
        let admin = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: try KeyFile.read(daemon.keyFile), timeout: .seconds(livenessGuardSeconds))
        try await admin.destroy(id)
        await admin.close()
        #expect(await Self.within(10) { await client.destroyedCopies.map(\.id) == [id] })
        let gone = try #require(await client.destroyedCopies.first)
        #expect(gone.unsent == 0 && gone.setAside == nil && gone.name == "groceries" && gone.reason.contains("destroyed"))
        #expect(try await client.documents().isEmpty)
        #expect(await client.status == .upToDate)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/device/documents/" + id.description))
        let refused = await SyncClientTests.error { _ = try await client.fetch(id, name: "again") }
        #expect("\(String(describing: refused))".contains("was destroyed"), "\(String(describing: refused))")
        await client.close()
        #expect(daemon.log.components(separatedBy: "document created").count == 2, "made once, never again: \(daemon.log)")
    }

    @Test("drop: the device's copy goes (set aside with unsent edits); the daemon keeps its own, and fetch brings it back")
    func drop() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (daemon, client, id) = try await Self.syncedDevice(dir)
        defer { daemon.terminate() }
        #expect(try await client.drop(id) == nil, "nothing unsent: removed, not set aside")
        #expect(try await client.documents().isEmpty)
        _ = try await client.fetch(id, name: "groceries")
        try await client.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(await client.live(id)?.snapshot.sections.count == 1)
        await client.close()
        // Offline, with an edit the daemon never had: set aside.
        let offline = try await Self.reopen(dir.path + "/device")
        _ = try await offline.open(id)
        _ = try await offline.edit(id) { (d: inout ListDocument) throws(ListError) in
            try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("eggs".utf8))
        }
        let dropped = try await offline.drop(id)
        let aside = try #require(dropped)
        #expect(aside.contains("/aside/") && FileManager.default.fileExists(atPath: aside))
        #expect(try await offline.documents().isEmpty)
        await offline.close()
    }
}
