import Foundation
import ListCRDT
import ListSync
@_spi(Testing) import ListSyncClient
import ListSyncTestTraits
import Testing

/// A device that roams between peered daemons (Docs/Client.md, "Roaming between daemons";
/// Docs/Semantics.md §7, "Roaming"), against real `listsync serve` processes: it writes which
/// daemon may hold its edits before sending them, and a refusal is final only once every such
/// daemon has answered.
@Suite("Device: roaming between daemons", .ownThread, .serialized, .hangGuard)
struct RoamingProcessTests {
    /// The `unanswered` field of the device's sync record for `doc`, as written on disk.
    static func unanswered(folder: String, _ doc: DocumentID) -> [String]? {
        guard let bytes = FileManager.default.contents(atPath: folder + "/documents/\(doc)/sync"),
              let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any] else { return nil }
        return object["unanswered"] as? [String]
    }

    @Test("an edit sent to a daemon that does not answer (stopped) is recorded on disk as possibly held there before it leaves; once acknowledged, nothing is")
    func recordedBeforeSent() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { kill(daemon.process.processIdentifier, SIGCONT); daemon.terminate() }
        let folder = dir.path + "/phone"
        let (phone, doc) = try await CompactionProcessTests.firstDevice(daemon, folder: folder, name: "roam", values: ["a"])
        #expect(eventually(10) { Self.unanswered(folder: folder, doc) == [] }, "acknowledged: \(String(describing: Self.unanswered(folder: folder, doc)))")

        kill(daemon.process.processIdentifier, SIGSTOP)
        try await SyncClientTests.insert(phone, doc, "b")
        let address = "127.0.0.1:\(daemon.port)"
        #expect(eventually(10) { Self.unanswered(folder: folder, doc) == [address] },
                "\(String(describing: Self.unanswered(folder: folder, doc)))")
        kill(daemon.process.processIdentifier, SIGCONT)
        try await phone.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(10) { Self.unanswered(folder: folder, doc) == [] })
        #expect(try table(daemon, doc.description) == [["a", "b"]])
        await phone.close()
    }

    @Test("a device no daemon counts edits offline before the version both peers reported, and may also have sent that edit to A (its record says so): refused by B, it asks A before making the edit again; A has compacted past it, and the edit is made again once, on both daemons")
    func refusalWaitsForTheOtherDaemon() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (a, b, deviceA, doc, values, folderD) = try await PeerCompactionProcessTests.unaccountedDevice(dir)
        defer { a.terminate(); b.terminate() }

        // D, offline, edits the copy it had (before A's edit). Its record says A may hold that
        // edit (sent there, the connection lost before the answer), as D writes it before sending.
        var server = try SyncClientTests.server(b)
        server.alternates = [(host: "127.0.0.1", port: a.port)]
        let deviceD = try await PeerCompactionProcessTests.olderBuildDevice(folderD, server)
        _ = try await deviceD.open(doc)
        try await SyncClientTests.insert(deviceD, doc, "offline on D")
        await deviceD.close()
        let path = folderD + "/documents/\(doc)/sync"
        var record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let addressA = "127.0.0.1:\(a.port)"
        record["unanswered"] = [addressA]
        try JSONSerialization.data(withJSONObject: record).write(to: URL(fileURLWithPath: path))

        // D reconnects to B, which refuses the edit; D asks A, whose catch-up is its snapshot
        // (D is behind its floor): the edit is made again there, once.
        let back = try await PeerCompactionProcessTests.olderBuildDevice(folderD, server)
        let live = try await back.open(doc)
        await back.start()
        try PeerCompactionProcessTests.keptOnce(a, b, doc, live, ["from A"] + values + ["offline on D"])
        #expect(await back.connectedAddress == addressA, "D asked A before making its edit again")
        #expect(eventually(10) { Self.unanswered(folder: folderD, doc) == [] })
        for client in [deviceA, back] { await client.close() }
    }

    @Test("a phone with two peered daemons keeps editing while its daemon is killed (SIGKILL) and comes back: it fails over to the other, every edit shows once on both daemons and on a laptop, and both daemons compact once it is quiet")
    func failsOverAndConverges() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (a0, b) = try PeerCompactionProcessTests.peered(dir, retireAfter: "2s")
        var a = a0
        defer { a.terminate(); b.terminate() }
        var server = try SyncClientTests.server(a)
        server.alternates = [(host: "127.0.0.1", port: b.port)]
        let phone = try SyncClient(folder: dir.path + "/phone", server: server)
        await phone.start()
        let doc = try await phone.create(name: "failover", sections: ["todo"])
        let live = try await phone.open(doc)
        try await phone.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let laptop = try SyncClient(folder: dir.path + "/laptop", server: try SyncClientTests.server(b))
        let liveLaptop = try await laptop.fetch(doc)
        await laptop.start()
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))

        for i in 0..<10 { try await SyncClientTests.insert(phone, doc, "p\(i)") }
        let aPort = a.port
        a.kill9()
        for i in 10..<25 { try await SyncClientTests.insert(phone, doc, "p\(i)") }
        try await phone.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(await phone.connectedAddress == "127.0.0.1:\(b.port)", "the phone failed over to B")
        a = try DaemonProcess(data: dir.path + "/a", port: aPort, extra: CompactionProcessTests.flags(retireAfter: "2s"))

        let expected = [(0..<25).map { "p\($0)" }]
        #expect(SyncClientTests.values(live) == expected)
        #expect(eventually(30) { SyncClientTests.values(liveLaptop) == expected })
        #expect(eventually(30) { ((try? table(a, doc.description)) ?? []) == expected && ((try? table(b, doc.description)) ?? []) == expected },
                "A: \(String(describing: try? table(a, doc.description))) B: \(String(describing: try? table(b, doc.description)))")
        #expect(eventually(40) { PeerCompactionProcessTests.compactions(a) > 0 && PeerCompactionProcessTests.compactions(b) > 0 },
                "A: \(String(describing: CompactionProcessTests.waitsFor(a, doc))) B: \(String(describing: CompactionProcessTests.waitsFor(b, doc)))")
        #expect(!a.log.contains("peer refused relayed operations") && !b.log.contains("peer refused relayed operations"))
        #expect(Self.unanswered(folder: dir.path + "/phone", doc) == [])
        await phone.close()
        await laptop.close()
    }
}
