import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncTCP
import ListSyncTestSupport
import Testing
@testable import ListSyncServer
import ListSyncTestTraits

/// Renaming a document in an in-process daemon over real sockets: the name file, the list, a
/// restart, announcements, and the refusals that change nothing (Docs/Daemon.md, "Renaming a document").
@Suite("Renaming a document (daemon in process)", .ownThread, .serialized, .hangGuard)
struct DaemonRenameTests {
    static func names(_ daemon: Daemon) async -> [String] { await daemon.list().map(\.name).sorted() }

    @Test("rename: answered with the new name, listed, heard by a connection that listed, by a later subscriber, and kept across a restart")
    func renameAndRestart() async throws {
        let (dir, data, daemon, port, key) = try await DaemonDestroyTests.running()
        defer { dir.remove() }
        let (id, epoch) = try await daemon.create(name: "groceries", sections: ["a"], id: nil, epoch: 0)
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let follower = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        #expect(try await follower.documents().map(\.name) == ["groceries"])
        let info = try await client.rename(id, to: "weekend groceries")
        #expect(info.id == id && info.name == "weekend groceries" && info.epoch == epoch)
        #expect(try await client.documents().map(\.name) == ["weekend groceries"])
        let file = try String(contentsOfFile: data + "/documents/\(id)/name", encoding: .utf8)
        #expect(file == "weekend groceries")
        // A later subscriber hears the new name in `subscribed`.
        _ = try await follower.open(id)
        #expect(await follower.info(id)?.name == "weekend groceries")
        await client.close()
        await follower.close()
        await daemon.stop()
        let again = try await DaemonDestroyTests.started(data)
        #expect(await Self.names(again) == ["weekend groceries"])
        let host = try await again.host(id)
        #expect(await host.name == "weekend groceries")
        await again.stop()
    }

    @Test("a connection that listed the documents hears the rename as an announcement (request 0)")
    func announced() async throws {
        let (dir, _, daemon, port, key) = try await DaemonDestroyTests.running()
        defer { dir.remove() }
        let (id, _) = try await daemon.create(name: "groceries", sections: ["a"], id: nil, epoch: 0)
        let raw = try await TCPTransport.connect(host: "127.0.0.1", port: port, key: key, options: patientClientOptions)
        var frames = raw.incoming.makeAsyncIterator()
        try await raw.send(SyncMessage.listDocuments(request: 1, after: nil).encoded())
        let listed = try SyncMessage(decoding: try #require(await frames.next()))
        guard case let .documents(1, list, false) = listed else { Issue.record("listed: \(listed)"); return }
        #expect(list.map(\.name) == ["groceries"])
        let info = try await daemon.rename(id, to: "weekend")
        let heard = try SyncMessage(decoding: try #require(await frames.next()))
        #expect(heard == .documents(request: 0, [info], more: false) && info.name == "weekend")
        await raw.close()
        await daemon.stop()
    }

    @Test("refused, nothing changed: an unknown id, a destroyed id, an empty name, a read-only device, a device out of scope")
    func refusals() async throws {
        let (dir, data, daemon, port, key) = try await DaemonDestroyTests.running()
        defer { dir.remove() }
        let (id, _) = try await daemon.create(name: "groceries", sections: ["a"], id: nil, epoch: 0)
        let (other, _) = try await daemon.create(name: "other", sections: [], id: nil, epoch: 0)
        let (gone, _) = try await daemon.create(name: "gone", sections: [], id: nil, epoch: 0)
        _ = try await daemon.destroy(gone, epoch: 0, reason: "test")
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        func expectRefused(_ c: DaemonClient, _ doc: DocumentID, _ name: String, _ code: SyncErrorCode) async {
            do {
                try await c.rename(doc, to: name)
                Issue.record("renamed \(doc) to \(name)")
            } catch let DaemonClientError.refused(got, _) {
                #expect(got == code, "\(doc) \(name)")
            } catch { Issue.record("\(error)") }
        }
        await expectRefused(client, DocumentID(high: 1, low: 2), "x", .unknownDocument)
        await expectRefused(client, gone, "x", .destroyed)
        await expectRefused(client, id, "", .refused)
        await #expect(throws: DaemonError.self) { try await daemon.rename(id, to: "") }
        for (name, flags) in [("reader", ["--read-only"]), ("scoped", ["--docs", other.description])] {
            let file = dir.path + "/\(name).credential"
            let added = try runListsync(["device", "add", name, "--out", file, "--data", data] + flags)
            try #require(added.0 == 0, "\(added)")
            let credential = try Credential(fileContents: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
            let device = try await DaemonClient.connect(host: "127.0.0.1", port: port, authentication: .credential(credential), timeout: .seconds(livenessGuardSeconds))
            await expectRefused(device, id, "x", name == "reader" ? .forbidden : .unknownDocument)
            await device.close()
        }
        #expect(await Self.names(daemon) == ["groceries", "other"])
        #expect(!FileManager.default.fileExists(atPath: data + "/documents/\(gone)"))
        // A writable device in scope may rename.
        let file = dir.path + "/writer.credential"
        _ = try runListsync(["device", "add", "writer", "--docs", other.description, "--out", file, "--data", data])
        let credential = try Credential(fileContents: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
        let writer = try await DaemonClient.connect(host: "127.0.0.1", port: port, authentication: .credential(credential), timeout: .seconds(livenessGuardSeconds))
        #expect(try await writer.rename(other, to: "renamed by a device").name == "renamed by a device")
        #expect(await Self.names(daemon) == ["groceries", "renamed by a device"])
        await writer.close()
        await client.close()
        await daemon.stop()
    }
}
