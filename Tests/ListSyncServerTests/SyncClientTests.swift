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

/// The device client (`SyncClient`) against a real `listsync serve` process on 127.0.0.1.
@Suite(.ownThread, .serialized)
struct SyncClientTests {
    static func values(_ live: LiveDocument) -> [[String]] {
        live.snapshot.sections.map { $0.items.map { String(decoding: $0.value, as: UTF8.self) } }
    }

    static func server(_ d: DaemonProcess) throws -> SyncClient.Server {
        SyncClient.Server(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile),
                          requestTimeout: .seconds(10), backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(400)))
    }

    /// The error `body` throws, nil when it returns.
    static func error(_ body: () async throws -> Void) async -> SyncClientError? {
        do { try await body(); return nil } catch { return (error as? SyncClientError) ?? .closed }
    }

    static func insert(_ c: SyncClient, _ doc: DocumentID, _ v: String, section: Int = 0) async throws {
        _ = try await c.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.insertItem(atRow: d.itemCount(inSection: section), inSection: section, value: Data(v.utf8))
        }
    }

    @Test("offline: every edit is durable on the device, the client reopens it with its waiting count, and a second client on the folder is refused")
    func offlineDurable() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let a = try SyncClient(folder: dir.path, server: nil)
        let doc = try await a.create(name: "groceries", sections: ["to buy"])
        for v in ["milk", "eggs", "bread"] { try await Self.insert(a, doc, v) }
        #expect(await a.status == .offline(waiting: 4, reason: nil))
        let second = Result { () throws(SyncClientError) in try SyncClient(folder: dir.path, server: nil) }
        guard case .failure(.store(.locked)) = second else { Issue.record("a second client on the folder: \(second)"); return }
        let replica = a.replica
        // A refused edit changes nothing and saves nothing.
        let refused = await Self.error { _ = try await a.edit(doc) { (d: inout ListDocument) throws(ListError) in try d.deleteItem(atRow: 9, inSection: 0) } }
        guard case .edit? = refused else { Issue.record("an out-of-range delete: \(String(describing: refused))"); return }
        #expect(await a.status == .offline(waiting: 4, reason: nil))
        await a.close()

        let b = try SyncClient(folder: dir.path, server: nil)
        #expect(b.replica == replica, "the replica id is the folder's")
        #expect(try await b.documents().map(\.name) == ["groceries"])
        let live = try await b.open(doc)
        #expect(Self.values(live) == [["milk", "eggs", "bread"]])
        #expect(await b.status.waiting == 4)
        var rng = SystemRandomNumberGenerator()
        let unknown = DocumentID.random(using: &rng)
        let missing = await Self.error { _ = try await b.open(unknown) }
        guard case .notOnDevice? = missing else { Issue.record("an unknown document: \(String(describing: missing))"); return }
        await b.close()
    }

    @Test("edits made offline reach the daemon and a second device once it runs; each identity once")
    func offlineThenOnline() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let phone = try SyncClient(folder: dir.path + "/phone", server: nil)
        let doc = try await phone.create(name: "board", sections: ["todo", "done"])
        for v in ["a", "b", "c"] { try await Self.insert(phone, doc, v) }
        _ = try await phone.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 0, section: 1))
        }
        await phone.close()

        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        let server = try Self.server(daemon)
        let online = try SyncClient(folder: dir.path + "/phone", server: server)
        _ = try await online.open(doc)
        await online.start()
        try await online.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(try table(daemon, doc.description) == [["b", "c"], ["a"]])

        let laptop = try SyncClient(folder: dir.path + "/laptop", server: server)
        let live = try await laptop.fetch(doc)
        await laptop.start()
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(Self.values(live) == [["b", "c"], ["a"]])
        #expect(await laptop.info(doc)?.name == "board")

        // Live: an edit on the laptop reaches the phone.
        try await Self.insert(laptop, doc, "d", section: 1)
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let phoneLive = try await online.open(doc)
        #expect(eventually { Self.values(phoneLive) == [["b", "c"], ["a", "d"]] })
        await laptop.close()
        await online.close()

        // The laptop reopens its copy with no daemon at all.
        daemon.terminate()
        let again = try SyncClient(folder: dir.path + "/laptop", server: server)
        #expect(Self.values(try await again.open(doc)) == [["b", "c"], ["a", "d"]])
        #expect(await again.status.waiting == 0)
        await again.close()
    }

    @Test("two devices offline move the same items and delete others; after reconnecting all three agree, every item once")
    func concurrentOffline() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        let server = try Self.server(daemon)
        let a = try SyncClient(folder: dir.path + "/a", server: server)
        await a.start()
        let doc = try await a.create(name: "shared", sections: ["one", "two"])
        for v in ["1", "2", "3", "4", "5", "6"] { try await Self.insert(a, doc, v) }
        try await a.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let b = try SyncClient(folder: dir.path + "/b", server: server)
        let bLive = try await b.fetch(doc)
        await b.start()
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        await a.close()
        await b.close()

        // Offline: both move item "1" (to different places) and each deletes another item.
        let aOff = try SyncClient(folder: dir.path + "/a", server: server)
        let bOff = try SyncClient(folder: dir.path + "/b", server: server)
        _ = try await aOff.open(doc)
        _ = try await bOff.open(doc)
        _ = try await aOff.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 0, section: 1))
            _ = try d.deleteItem(atRow: 1, inSection: 0)      // "3"
        }
        _ = try await bOff.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 4, section: 0))
            _ = try d.deleteItem(atRow: 5, inSection: 0)      // "6" (after the move: 2 3 4 5 1 6)
        }
        #expect(await aOff.status.waiting == 2)
        await aOff.start()
        await bOff.start()
        try await aOff.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        try await bOff.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        try await aOff.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let aLive = try await aOff.open(doc)
        let bLive2 = try await bOff.open(doc)
        #expect(eventually { Self.values(aLive) == Self.values(bLive2) })
        let final = Self.values(aLive)
        let all = final.flatMap { $0 }
        #expect(Set(all) == ["1", "2", "4", "5"] && all.count == 4, "\(final)")
        // "1" moved concurrently to two places: one move wins, the same on every replica (Docs/Semantics.md).
        #expect(final[1] == ["1"] || final[0].last == "1", "\(final)")
        #expect(try table(daemon, doc.description) == final)
        _ = bLive
        await aOff.close()
        await bOff.close()
    }

    @Test("the status goes offline → connecting → up to date; a wrong key is a failure a person can act on")
    func statusAndWrongKey() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        var bad = try Self.server(daemon)
        bad.authentication = .key([UInt8](repeating: 7, count: 32))
        let c = try SyncClient(folder: dir.path + "/dev", server: bad)
        let doc = try await c.create(name: "x")
        try await Self.insert(c, doc, "a")
        await c.start()
        let failure = await Self.error { try await c.waitUntilSynced(timeout: .seconds(livenessGuardSeconds)) }
        guard case let .failed(f)? = failure, case .wrongKey = f else { Issue.record("a wrong key: \(String(describing: failure))"); return }
        #expect(f.description.contains("key"))
        await c.close()

        let good = try SyncClient(folder: dir.path + "/dev", server: try Self.server(daemon))
        _ = try await good.open(doc)
        let updates = await good.statusUpdates()
        await good.start()
        var seen: [SyncStatus] = []
        for await s in updates {
            seen.append(s)
            if s == .upToDate { break }
        }
        // Two operations wait: the untitled section `create` makes, and the item.
        #expect(seen.first == .offline(waiting: 2, reason: nil), "\(seen)")
        #expect(seen.contains(.connecting(waiting: 2)), "\(seen)")
        #expect(seen.last == .upToDate)
        await good.close()
    }

    @Test("a document restored on the daemon (a new epoch) is not merged blind: the device reports the reset, keeps its unsent edits, and acceptReset sets them aside")
    func epochReset() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/daemon"
        var daemon = try DaemonProcess(data: data)
        let device = dir.path + "/device"
        let a = try SyncClient(folder: device, server: try Self.server(daemon))
        await a.start()
        let doc = try await a.create(name: "plan", sections: ["s"])
        for v in ["x", "y"] { try await Self.insert(a, doc, v) }
        try await a.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        await a.close()
        let export = dir.path + "/plan.json"
        #expect(try daemon.run(["export", doc.description, export]).0 == 0)
        daemon.terminate()
        let (code, _, err) = try runListsync(["restore", doc.description, export, "--data", data])
        try #require(code == 0, "\(err)")
        daemon = try DaemonProcess(data: data)
        defer { daemon.terminate() }

        // Offline edits on the device, then the reconnect finds the new epoch.
        let b = try SyncClient(folder: device, server: try Self.server(daemon))
        _ = try await b.open(doc)
        for v in ["unsent-1", "unsent-2"] { try await Self.insert(b, doc, v) }
        await b.start()
        let failure = await Self.error { try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds)) }
        guard case let .failed(.documentReset(id, unsent))? = failure else { Issue.record("\(String(describing: failure))"); return }
        #expect(id == doc && unsent == 2)
        // The copy is kept as it was, still editable; nothing of it went to the daemon.
        #expect(Self.values(try await b.open(doc)) == [["x", "y", "unsent-1", "unsent-2"]])
        #expect(try table(daemon, doc.description) == [["x", "y"]])

        let aside = try await b.acceptReset(doc)
        #expect(aside.unsent.count == 2)
        #expect(FileManager.default.fileExists(atPath: aside.folder))
        #expect(aside.previous.snapshot().sections.flatMap(\.items).count == 4)
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(Self.values(aside.live) == [["x", "y"]])
        // Re-applying by value, as Docs/Client.md shows: the unsent inserts' values, inserted anew.
        for v in ["unsent-1", "unsent-2"] { try await Self.insert(b, doc, v) }
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(try table(daemon, doc.description) == [["x", "y", "unsent-1", "unsent-2"]])
        await b.close()
    }

    @Test("60 concurrent edits (appends that may finish out of order) are all counted, sent and acknowledged")
    func concurrentEdits() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let c = try SyncClient(folder: dir.path + "/dev", server: nil, changeSets: false)
        let doc = try await c.create(name: "burst", sections: [])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<60 {
                group.addTask {
                    _ = try await c.edit(doc) { (d: inout ListDocument) throws(ListError) in _ = try d.insertSection(at: 0, value: Data("s\(i)".utf8)) }
                }
            }
            try await group.waitForAll()
        }
        #expect(await c.status.waiting == 60)
        await c.close()
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        let online = try SyncClient(folder: dir.path + "/dev", server: try Self.server(daemon), changeSets: false)
        _ = try await online.open(doc)
        await online.start()
        try await online.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(await online.status == .upToDate)
        await online.close()
    }

    @Test("a relaunch opens a 100,000-item document from the device's store, with the daemon unreachable")
    func largeRelaunch() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let unreachable = SyncClient.Server(host: "127.0.0.1", port: 1, key: [UInt8](repeating: 1, count: 32))
        let a = try SyncClient(folder: dir.path, server: unreachable, changeSets: false)
        let doc = try await a.create(name: "big", sections: ["all"])
        for chunk in 0..<10 {
            _ = try await a.edit(doc) { (d: inout ListDocument) throws(ListError) in
                for i in 0..<10_000 { _ = try d.insertItem(atRow: chunk * 10_000 + i, inSection: 0, value: Data("item \(chunk * 10_000 + i)".utf8)) }
            }
        }
        await a.close()
        let b = try SyncClient(folder: dir.path, server: unreachable, changeSets: false)
        let live = try await b.open(doc)
        #expect(live.snapshot.numberOfItems(inSectionAt: 0) == 100_000)
        #expect(String(decoding: live.snapshot.sections[0].items[99_999].value, as: UTF8.self) == "item 99999")
        #expect(await b.status == .offline(waiting: 100_001, reason: nil))
        await b.close()
    }
}
