import Foundation
import ListCRDT
import ListSync
@_spi(Testing) import ListSyncClient
import ListSyncTestTraits
import ListTable
import Testing

/// Compaction on peered daemons, against two real `listsync serve` processes (Docs/Daemon.md,
/// "Compaction"; the rule in Docs/Semantics.md §7, "Peers"): each daemon gossips its stability
/// over the peer link, both compact once both are quiescent at the same version, and a restart
/// of one loads its compacted snapshot and goes on syncing.
@Suite("Daemon: compaction with peers", .ownThread, .serialized, .hangGuard)
struct PeerCompactionProcessTests {
    /// Daemon A and daemon B peered with it (B names A), data in `dir`, compacting as
    /// ``CompactionProcessTests/flags(retireAfter:)`` says.
    static func peered(_ dir: TemporaryFolder, retireAfter: String) throws -> (DaemonProcess, DaemonProcess) {
        let flags = CompactionProcessTests.flags(retireAfter: retireAfter)
        let a = try DaemonProcess(data: dir.path + "/a", extra: flags)
        do {
            return (a, try DaemonProcess(data: dir.path + "/b", extra: flags + ["--key-file", a.keyFile, "--peer", a.address]))
        } catch {
            a.terminate()
            throw error
        }
    }

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
        // A, which only accepts B's link, noted that it has peers (`DIR/peered`, Docs/Daemon.md "Files").
        #expect(FileManager.default.fileExists(atPath: dir.path + "/a/peered"), "A: \(a.log)")
        // A device on B deletes most of it.
        let deviceB = try SyncClient(folder: dir.path + "/db", server: try SyncClientTests.server(b))
        let liveA = try await deviceA.open(doc)
        let liveB = try await deviceB.fetch(doc)
        await deviceB.start()
        try await deviceB.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        for _ in 0..<25 { try await CompactionProcessTests.delete(deviceB, doc, row: 0) }
        try await deviceB.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
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
        #expect(stability.starts(with: Array("LSSTAB8\n".utf8)), "B's stability file holds the peers' table")

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
        try await deviceA.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let after = expected + ["after restart"]
        #expect(eventually(40) { ((try? table(b, doc.description)) ?? []) == [after] }, "B: \(String(describing: try? table(b, doc.description)))\n\(b.log)")
        #expect(eventually(30) { SyncClientTests.values(liveB) == [after] })
        #expect(!a.log.contains("peer compacted past this copy") && !b.log.contains("peer compacted past this copy"))

        // B took "after restart" from its link to A, and its log says so: restarted again, this
        // time without its stability file, it still knows (Docs/Semantics.md §7, "Relayed
        // operations, kept in the log").
        #expect(b.terminate() == 0)
        try FileManager.default.removeItem(atPath: b.data + "/documents/\(doc)/stability")
        b = try DaemonProcess(data: dir.path + "/b", port: bPort, extra: bFlags)
        #expect(try table(b, doc.description) == [after])
        let again = try #require(try b.json(["status"]) as? [String: Any])
        let residentAgain = (again["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        #expect((residentAgain?["relayed_operations"] as? Int ?? 0) >= 1, "\(String(describing: residentAgain))")

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

    @Test("two peered daemons: a phone on A goes offline for good; past --retire-after A retires it, B acknowledges, both compact and show the same list; the phone comes back with an edit made offline, re-syncs from A's snapshot and keeps it")
    func retiredDeviceWithPeers() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (a, b) = try Self.peered(dir, retireAfter: "2s")
        defer { a.terminate(); b.terminate() }
        let serverA = try SyncClientTests.server(a)
        let (phone, doc) = try await CompactionProcessTests.firstDevice(a, folder: dir.path + "/phone", name: "drawer",
                                                                         values: ["a", "b", "c"])
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == [["a", "b", "c"]] }, "B: \(b.log)")
        await phone.close()
        // Offline for good (never started again until the end): an edit that stays on the phone.
        try await CompactionProcessTests.editOffline(folder: dir.path + "/phone", server: serverA, doc)

        // A laptop on B churns. The phone holds compaction back on both daemons until A retires it.
        let (laptop, liveLaptop) = try await CompactionProcessTests.churningLaptop(folder: dir.path + "/laptop",
                                                                                 server: try SyncClientTests.server(b), doc)
        let laptopView = CompactionProcessTests.laptopView
        #expect(eventually(40) { a.log.contains("senders retired") && Self.compactions(a) > 0 && Self.compactions(b) > 0 },
                "A: \(Self.compactions(a)) B: \(Self.compactions(b))\nA's log:\n\(a.log)\nB's log:\n\(b.log)")
        #expect(try table(a, doc.description) == [laptopView] && table(b, doc.description) == [laptopView])
        #expect(!a.log.contains("peer refused relayed operations") && !b.log.contains("peer refused relayed operations"))

        // The phone comes back to A: refused for the floor, it re-syncs and makes its edit again.
        let (back, livePhone) = try await CompactionProcessTests.reopened(folder: dir.path + "/phone", server: serverA, doc)
        let merged = ["a", "in the drawer", "b", "c", "l10", "l11"]
        #expect(SyncClientTests.values(livePhone) == [merged])
        #expect(eventually(30) { SyncClientTests.values(liveLaptop) == [merged] })
        #expect(eventually(30) { ((try? table(a, doc.description)) ?? []) == [merged] && ((try? table(b, doc.description)) ?? []) == [merged] },
                "A: \(String(describing: try? table(a, doc.description))) B: \(String(describing: try? table(b, doc.description)))")
        #expect(!a.log.contains("peer refused relayed operations") && !b.log.contains("peer refused relayed operations"))
        await back.close()
        await laptop.close()
    }

    /// A device in `folder` talking to `server` as a client of an older build would: it never says
    /// seen, so no daemon counts it.
    static func olderBuildDevice(_ folder: String, _ server: SyncClient.Server) async throws -> SyncClient {
        let device = try SyncClient(folder: folder, server: server)
        await device.sayNothingSeen()
        return device
    }

    /// An older build's device in `folder` copies `doc` from `daemon`, syncs, and goes offline.
    static func copyAsOlderBuild(_ doc: DocumentID, from daemon: DaemonProcess, folder: String) async throws {
        let device = try await olderBuildDevice(folder, try SyncClientTests.server(daemon))
        _ = try await device.fetch(doc)
        await device.start()
        try await device.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        await device.close()
    }

    /// Daemons A (compacting at every quiet version) and B (peered with it, never compacting)
    /// share a list of 25 items made by A's device; device D (folder `dd`) copied it from B as a
    /// client of an older build would (it never says seen) and went offline; then A's device
    /// inserted "from A" and A compacted there. Returns the daemons, A's device, the document,
    /// the 25 values, and D's folder. The caller terminates the daemons.
    static func unaccountedDevice(_ dir: TemporaryFolder) async throws
        -> (a: DaemonProcess, b: DaemonProcess, deviceA: SyncClient, doc: DocumentID, values: [String], folderD: String) {
        // A compacts whenever both daemons are quiet at a version past its floor (an operation
        // since its floor is enough: it may have compacted before D copied the list).
        let flags = ["--storage", "per-document", "--compact-after", "1", "--compact-interval", "0", "--retire-after", "1h"]
        let a = try DaemonProcess(data: dir.path + "/a", extra: flags)
        // B reports its version to A but compacts only past a million operations: never here.
        let bFlags = ["--storage", "per-document", "--compact-after", "1000000", "--compact-interval", "0",
                      "--retire-after", "1h", "--key-file", a.keyFile, "--peer", a.address]
        let b: DaemonProcess
        do { b = try DaemonProcess(data: dir.path + "/b", extra: bFlags) } catch {
            a.terminate()
            throw error
        }
        let values = (0..<25).map { "item \($0)" }
        let (deviceA, doc) = try await CompactionProcessTests.firstDevice(a, folder: dir.path + "/da", name: "split", values: values)
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == [values] }, "B: \(b.log)")

        // D copies the list from B as a client of an older build would: it never says seen.
        try await Self.copyAsOlderBuild(doc, from: b, folder: dir.path + "/dd")

        // A's device edits; both daemons become quiet at that version and A compacts there.
        let before = Self.compactions(a)
        try await SyncClientTests.insert(deviceA, doc, "from A")
        try await deviceA.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(40) { Self.compactions(a) > before }, "A: \(a.log)\nB: \(b.log)")
        #expect(Self.compactions(b) == 0)
        return (a, b, deviceA, doc, values, dir.path + "/dd")
    }

    /// Both daemons and D's copy (`liveD`) end with `expected` (in some order, the same on both
    /// daemons), and B refused an edit of D's with `compacted`.
    static func keptOnce(_ a: DaemonProcess, _ b: DaemonProcess, _ doc: DocumentID, _ liveD: LiveDocument, _ expected: [String]) throws {
        func sorted(_ d: DaemonProcess) -> [String] { ((try? table(d, doc.description)) ?? []).flatMap { $0 }.sorted() }
        #expect(eventually(40) { sorted(a) == expected.sorted() && sorted(b) == expected.sorted() },
                "A: \(sorted(a))\nB: \(sorted(b))\nA's log:\n\(a.log)\nB's log:\n\(b.log)")
        #expect(try table(a, doc.description) == table(b, doc.description))
        #expect(eventually(20) { SyncClientTests.values(liveD).flatMap { $0 }.sorted() == expected.sorted() })
        let status = try #require(try b.json(["status"]) as? [String: Any])
        let resident = (status["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        #expect((resident?["refused_compacted"] as? Int ?? 0) > 0, "B refused D's edit: \(String(describing: resident))")
    }

    @Test("a device no daemon counts (it never said seen) edits offline, before the version both daemons reported; A compacted there, B did not: B refuses the edit too, the device re-syncs from B's catch-up and makes it again, and both daemons keep the same list")
    func unaccountedDeviceNoSplit() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (a, b, deviceA, doc, values, _) = try await Self.unaccountedDevice(dir)
        defer { a.terminate(); b.terminate() }

        // D, offline, edits the copy it had (before A's edit), then reconnects to B.
        let deviceD = try await Self.olderBuildDevice(dir.path + "/dd", try SyncClientTests.server(b))
        let liveD = try await deviceD.open(doc)
        try await SyncClientTests.insert(deviceD, doc, "offline on D")
        await deviceD.start()
        try Self.keptOnce(a, b, doc, liveD, ["from A"] + values + ["offline on D"])
        #expect(!a.log.contains("peer refused relayed operations as compacted") && !b.log.contains("peer refused relayed operations as compacted"),
                "the copies split:\n\(a.log)\n\(b.log)")
        for client in [deviceA, deviceD] { await client.close() }
    }

    /// A's status for `doc`: its floor, and how many peers reported exactly its version.
    static func floorAndPeers(_ a: DaemonProcess, _ doc: DocumentID) -> (floor: String?, atVersion: Int, refused: Int) {
        let status = (try? a.json(["status"])) as? [String: Any]
        let entry = (status?["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        return (entry?["floor"] as? String, entry?["peers_at_version"] as? Int ?? 0, entry?["refused_compacted"] as? Int ?? 0)
    }

    /// The operations a version's description (`[replica:counter, ...]`) counts: the sum of its
    /// counters.
    static func counted(_ version: String) -> Int {
        version.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { Int($0.filter(\.isNumber)) } }.reduce(0, +)
    }

    @Test("a device no daemon counts edits offline after A's floor but before the version A published since: A refuses the edit, the device re-syncs and makes it again under a new id (kept as it was, it was refused again for ever), and both daemons keep it once")
    func refusedAfterFloorMadeAgain() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // A compacts at a quiet version once 11 operations were logged since its floor (the
        // list's creation below makes exactly 11, a section and ten items: one compaction, at
        // its end, however the inserts arrive; with 5, A could compact at a quiet moment among
        // them, at 7, and then again at the edit below, the fifth since: CI failed so); B never.
        let a = try DaemonProcess(data: dir.path + "/a", extra: ["--storage", "per-document", "--compact-after", "11",
                                                                 "--compact-interval", "0", "--retire-after", "1h"])
        defer { a.terminate() }
        let b = try DaemonProcess(data: dir.path + "/b", extra: ["--storage", "per-document", "--compact-after", "1000000",
                                                                 "--compact-interval", "0", "--retire-after", "1h",
                                                                 "--key-file", a.keyFile, "--peer", a.address])
        defer { b.terminate() }
        let values = (0..<10).map { "item \($0)" }
        let (deviceA, doc) = try await CompactionProcessTests.firstDevice(a, folder: dir.path + "/da", name: "window", values: values)
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == [values] }, "B: \(b.log)")
        let made = try await deviceA.open(doc).document.version
        #expect(Self.counted(made.description) == 11, "the list's creation makes 11 operations: \(made)")
        #expect(eventually(livenessGuardSeconds) { Self.floorAndPeers(a, doc).floor == made.description }, "A compacts the list: \(a.log)")
        let floor = Self.floorAndPeers(a, doc).floor

        // D copies the list at A's floor as a client of an older build would (it never says seen)
        // and goes offline.
        try await Self.copyAsOlderBuild(doc, from: a, folder: dir.path + "/dd")

        // One edit on A's device: both daemons quiet there, A publishes that version, and does
        // not compact (one operation since its floor).
        try await SyncClientTests.insert(deviceA, doc, "from A")
        try await deviceA.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []).flatMap { $0 }.contains("from A") })
        #expect(eventually(30) { Self.floorAndPeers(a, doc).atVersion == 1 }, "B reports A's version: \(a.log)")
        try await Task.sleep(for: .seconds(2))   // A's own entry goes out with its next table
        #expect(Self.floorAndPeers(a, doc).floor == floor, "A did not compact again")

        // D, offline, edits its copy (after A's floor, before what A published), then reconnects.
        let deviceD2 = try await Self.olderBuildDevice(dir.path + "/dd", try SyncClientTests.server(a))
        let liveD = try await deviceD2.open(doc)
        try await SyncClientTests.insert(deviceD2, doc, "offline on D")
        await deviceD2.start()
        let expected = (["from A"] + values + ["offline on D"]).sorted()
        func sorted(_ d: DaemonProcess) -> [String] { ((try? table(d, doc.description)) ?? []).flatMap { $0 }.sorted() }
        #expect(eventually(40) { sorted(a) == expected && sorted(b) == expected }, "A: \(sorted(a))\nB: \(sorted(b))\nA's log:\n\(a.log)")
        #expect(eventually(20) { SyncClientTests.values(liveD).flatMap { $0 }.sorted() == expected })
        #expect(Self.floorAndPeers(a, doc).refused > 0, "A refused D's edit first (the case this test is for): \(a.log)")
        for client in [deviceA, deviceD2] { await client.close() }
    }
}
