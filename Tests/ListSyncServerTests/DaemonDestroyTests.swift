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
import ListSyncFiles

/// Destroying a document in an in-process daemon: the subscribers told, the record before the
/// removal, the id refused afterwards, a crash between the steps finished at the next start
/// (Docs/Daemon.md, "Destroying a document").
@Suite("Destroying a document (daemon in process)", .ownThread, .serialized, .hangGuard)
struct DaemonDestroyTests {
    static func started(_ folder: String) async throws -> Daemon {
        var config = DaemonConfiguration(dataFolder: folder)
        config.listenPort = 0
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        return daemon
    }

    /// A daemon in a new folder, with its port and key (remove `dir`, stop the daemon).
    static func running() async throws -> (dir: TemporaryFolder, data: String, daemon: Daemon, port: UInt16, key: [UInt8]) {
        let dir = TemporaryFolder()
        let data = dir.path + "/data"
        let daemon = try await started(data)
        let port = try #require(await daemon.address?.port)
        return (dir, data, daemon, port, try KeyFile.read(data + "/key"))
    }

    /// A data folder with one document "groceries", its daemon stopped: the id and epoch.
    static func stoppedWithDocument(_ data: String) async throws -> (DocumentID, UInt64) {
        let daemon = try await started(data)
        let made = try await daemon.create(name: "groceries", sections: ["a"], id: nil, epoch: 0)
        await daemon.stop()
        return made
    }

    @Test("edits racing a destroy, 8 rounds: each is answered (acknowledged or refused), none waits for its timeout")
    func editsRacingDestroy() async throws {
        for round in 0..<8 {
            let (dir, _, daemon, port, key) = try await Self.running()
            defer { dir.remove() }
            let admin = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
            let editor = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
            let id = try await admin.create(name: "raced", sections: ["a"])
            _ = try await editor.open(id)
            let answered = await withTaskGroup(of: Bool.self) { group in
                for i in 0..<40 {
                    group.addTask {
                        do {
                            try await editor.edit(id) { (d: inout ListDocument) throws(ListError) in
                                _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("e\(i)".utf8))
                            }
                        } catch {
                            if "\(error)".contains("no answer") || "\(error)".contains("timeout") { return false }
                        }
                        return true
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int64(round)))
                    _ = try? await admin.destroy(id)
                    return true
                }
                var all = true
                for await ok in group { all = all && ok }
                return all
            }
            #expect(answered, "round \(round): an edit waited for its timeout")
            await editor.close()
            await admin.close()
            await daemon.stop()
        }
    }

    @Test("destroy: a subscriber hears destroyed and its subscription ends; create with the id, subscribe and destroy again are answered after")
    func destroyThenRefused() async throws {
        let (dir, data, daemon, port, key) = try await Self.running()
        defer { dir.remove() }
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let watcher = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let id = try await client.create(name: "groceries", sections: ["a"])
        _ = try await watcher.open(id)
        let epoch = try #require(await watcher.info(id)?.epoch)

        // Another epoch than the document's: refused, nothing done.
        await #expect(throws: DaemonClientError.self) { try await client.destroy(id, epoch: epoch &+ 1) }
        #expect(await daemon.list().map(\.id) == [id])

        #expect(try await client.destroy(id) == epoch)
        let ended = await watcher.waitUntilEnded(id)
        #expect(ended?.contains("destroyed") == true, "\(String(describing: ended))")
        #expect(await daemon.list().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: data + "/documents/" + id.description))
        #expect(FileManager.default.fileExists(atPath: data + "/destroyed/" + id.description))
        #expect(await daemon.destroyedIDs() == [id])

        // The id is refused from now on: a peer's or a device's copy cannot bring it back.
        await #expect(throws: DaemonError.self) { try await daemon.create(name: "copy", sections: [], id: id, epoch: epoch) }
        await #expect(throws: DaemonError.self) { try await daemon.create(name: "copy", sections: [], id: id, epoch: 0) }
        do {
            _ = try await watcher.open(id, epoch: epoch)
            Issue.record("a subscribe to a destroyed document was accepted")
        } catch let DaemonClientError.refused(code, _) {
            #expect(code == .destroyed)
        }
        #expect(await daemon.list().isEmpty)
        #expect(try await client.destroy(id) == epoch, "destroying again answers the record's epoch")
        await #expect(throws: DaemonClientError.self) { try await client.destroy(DocumentID(high: 9, low: 9)) }
        await client.close()
        await watcher.close()
        await daemon.stop()
    }

    @Test("a crash after the record, before the removal: at the next start the removal is finished, the document not listed, its id refused")
    func crashBetweenSteps() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let (id, epoch) = try await Self.stoppedWithDocument(data)
        // What a crash between the two steps leaves: the record written, the folder still there.
        try FileSystem.system.mkdir(data + "/destroyed")
        try FileSystem.system.writeAtomically(Array("epoch \(String(epoch, radix: 16))\ntime 1\n".utf8),
                                              to: data + "/destroyed/" + id.description, folder: data + "/destroyed")
        #expect(FileManager.default.fileExists(atPath: data + "/documents/" + id.description))
        let daemon = try await Self.started(data)
        #expect(await daemon.list().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: data + "/documents/" + id.description))
        await #expect(throws: DaemonError.self) { try await daemon.host(id) }
        await #expect(throws: DaemonError.self) { try await daemon.create(name: "copy", sections: [], id: id, epoch: epoch) }
        await daemon.stop()
    }

    @Test("a document whose store does not load (a snapshot that is not one) can still be destroyed, at epoch 0 only")
    func damagedDocument() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let (id, epoch) = try await Self.stoppedWithDocument(data)
        let folder = data + "/documents/" + id.description
        // Its newest generation made unreadable: a snapshot file that is not one (its batches are
        // in the shared log; a log of its own, from before it, would be refused the same way).
        try Data(repeating: 0x41, count: 64).write(to: URL(fileURLWithPath: folder + "/snapshot-99"))
        let daemon = try await Self.started(data)
        await #expect(throws: DaemonError.self) { try await daemon.host(id) }
        await #expect(throws: DaemonError.self) { try await daemon.destroy(id, epoch: epoch, reason: "test") }
        #expect(try await daemon.destroy(id, epoch: 0, reason: "test") == 0)
        #expect(await daemon.list().isEmpty && !FileManager.default.fileExists(atPath: folder))
        await daemon.stop()
    }

    @Test("a device credential may not destroy: forbidden for a document in its scope, unknown document out of it; nothing destroyed")
    func deviceRefused() async throws {
        let (dir, data, daemon, port, _) = try await Self.running()
        defer { dir.remove() }
        let (id, _) = try await daemon.create(name: "groceries", sections: ["a"], id: nil, epoch: 0)
        let (other, _) = try await daemon.create(name: "other", sections: [], id: nil, epoch: 0)
        let file = dir.path + "/phone.credential"
        let added = try runListsync(["device", "add", "phone", "--docs", id.description, "--out", file, "--data", data])
        try #require(added.0 == 0, "\(added)")
        let credential = try Credential(fileContents: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
        let phone = try await DaemonClient.connect(host: "127.0.0.1", port: port, authentication: .credential(credential), timeout: .seconds(livenessGuardSeconds))
        for (doc, code) in [(id, SyncErrorCode.forbidden), (other, .unknownDocument)] {
            do {
                try await phone.destroy(doc)
                Issue.record("a device destroyed \(doc)")
            } catch let DaemonClientError.refused(c, _) {
                #expect(c == code)
            }
        }
        #expect(await daemon.list().count == 2)
        await phone.close()
        await daemon.stop()
    }
}
