import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncTestTraits
import Testing

/// Compaction on peered daemons, against two real `listsync serve` processes (Docs/Daemon.md,
/// "Compaction"; the rule in Docs/Semantics.md §7, "Peers"): each daemon gossips its stability
/// over the peer link, both compact once both are quiescent at the same version, and a restart
/// of one loads its compacted snapshot and goes on syncing.
@Suite("Daemon: compaction with peers", .ownThread, .serialized, .timeLimit(.minutes(3)))
struct PeerCompactionProcessTests {
    static func compactions(_ daemon: DaemonProcess) -> Int {
        ((try? daemon.json(["status"])) as? [String: Any])?["compactions"] as? Int ?? 0
    }

    @Test("two peered daemons, a device on each churns: both compact, both show the same list; a restart of one loads its snapshot and converges; a daemon peered later copies the compacted document from the snapshot")
    func peersCompact() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let flags = CompactionProcessTests.flags(retireAfter: "1h")
        let a = try DaemonProcess(data: dir.path + "/a", extra: flags)
        defer { a.terminate() }
        let bFlags = flags + ["--key-file", a.keyFile, "--peer", a.address]
        var b = try DaemonProcess(data: dir.path + "/b", extra: bFlags)
        defer { b.terminate() }

        // A device on A makes the list; B copies it through its link.
        let values = (0..<30).map { "item \($0)" }
        let (deviceA, doc) = try await CompactionProcessTests.firstDevice(a, folder: dir.path + "/da", name: "churn", values: values)
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == [values] }, "B: \(b.log)")
        // A device on B deletes most of it.
        let deviceB = try SyncClient(folder: dir.path + "/db", server: try SyncClientTests.server(b))
        let liveA = try await deviceA.open(doc)
        let liveB = try await deviceB.fetch(doc)
        await deviceB.start()
        try await deviceB.waitUntilSynced(timeout: .seconds(20))
        for _ in 0..<25 { try await CompactionProcessTests.delete(deviceB, doc, row: 0) }
        try await deviceB.waitUntilSynced(timeout: .seconds(20))
        let expected = (25..<30).map { "item \($0)" }
        #expect(eventually(30) { SyncClientTests.values(liveA) == [expected] && SyncClientTests.values(liveB) == [expected] })

        // Quiet: each daemon is locally quiescent, the tables cross the link, both compact.
        #expect(eventually(40) { Self.compactions(a) > 0 && Self.compactions(b) > 0 },
                "A: \(Self.compactions(a)) B: \(Self.compactions(b))\nA's log:\n\(a.log)\nB's log:\n\(b.log)")
        #expect(a.log.contains("document compacted") && b.log.contains("document compacted"))
        #expect(try table(a, doc.description) == [expected] && table(b, doc.description) == [expected])
        let files = CompactionProcessTests.files(b, doc)
        #expect(files.keys.contains { $0.hasPrefix("snapshot-") } && files["stability"] != nil, "\(files)")
        let stability = try Data(contentsOf: URL(fileURLWithPath: b.data + "/documents/\(doc)/stability"))
        #expect(stability.starts(with: Array("LSSTAB2\n".utf8)), "B's stability file holds the peers' table")

        // B restarts: it loads its compacted snapshot, its link comes back, and edits flow both ways.
        let bPort = b.port
        #expect(b.terminate() == 0)
        b = try DaemonProcess(data: dir.path + "/b", port: bPort, extra: bFlags)
        #expect(try table(b, doc.description) == [expected])
        let status = try #require(try b.json(["status"]) as? [String: Any])
        let resident = (status["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        #expect(resident?["floor"] != nil, "the restarted daemon loaded a compacted document: \(String(describing: resident))")
        #expect(resident?["peers"] as? Int == 1, "its stability file remembers A: \(String(describing: resident))")
        try await SyncClientTests.insert(deviceA, doc, "after restart")
        try await deviceA.waitUntilSynced(timeout: .seconds(20))
        let after = expected + ["after restart"]
        #expect(eventually(40) { ((try? table(b, doc.description)) ?? []) == [after] }, "B: \(String(describing: try? table(b, doc.description)))\n\(b.log)")
        #expect(eventually(30) { SyncClientTests.values(liveB) == [after] })
        #expect(!a.log.contains("peer compacted past this copy") && !b.log.contains("peer compacted past this copy"))

        // A new daemon peered with A after the compaction: its empty copy takes A's snapshot.
        let c = try DaemonProcess(data: dir.path + "/c", extra: flags + ["--key-file", a.keyFile, "--peer", a.address])
        defer { c.terminate() }
        #expect(eventually(40) { ((try? table(c, doc.description)) ?? []) == [after] },
                "C: \(String(describing: try? table(c, doc.description)))\n\(c.log)")
        #expect(c.log.contains("peer snapshot loaded"), "\(c.log)")
        try await SyncClientTests.insert(deviceB, doc, "from B to C")
        #expect(eventually(40) { ((try? table(c, doc.description)) ?? []) == [after + ["from B to C"]] }, "\(c.log)")
        for client in [deviceA, deviceB] { await client.close() }
    }
}
