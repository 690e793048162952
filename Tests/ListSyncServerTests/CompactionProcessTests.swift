import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncTCP
import ListTable
import Testing
import ListSyncTestSupport
import ListSyncTestTraits

/// Compaction against a real `listsync serve` process (Docs/Daemon.md, "Compaction"): devices
/// report what they have seen, the daemon compacts when everything is stable, a restart loads
/// the compacted snapshot, late clients catch up from it, and a device retired while offline
/// comes back, re-syncs and keeps its edits.
@Suite("Daemon: compaction", .ownThread, .serialized, .hangGuard)
struct CompactionProcessTests {
    /// A document log per document (so the test can see it trimmed), compaction after 20
    /// operations, no rate limit between compactions.
    static func flags(retireAfter: String) -> [String] {
        ["--storage", "per-document", "--compact-after", "20", "--compact-interval", "0", "--retire-after", retireAfter]
    }

    /// The device of `folder`, offline (never started): inserts "in the drawer" after row 0 of
    /// `doc`, an edit that stays on the device.
    static func editOffline(folder: String, server: SyncClient.Server, _ doc: DocumentID) async throws {
        let offline = try SyncClient(folder: folder, server: server)
        _ = try await offline.open(doc)
        _ = try await offline.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.insertItem(atRow: 1, inSection: 0, value: Data("in the drawer".utf8))   // after "a"
        }
        await offline.close()
    }

    /// The device of `folder` started again with `doc` open, synced.
    static func reopened(folder: String, server: SyncClient.Server, _ doc: DocumentID) async throws -> (SyncClient, LiveDocument) {
        let device = try SyncClient(folder: folder, server: server)
        let live = try await device.open(doc)
        await device.start()
        try await device.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        return (device, live)
    }

    /// What ``churningLaptop(folder:server:_:)`` shows after its churn.
    static let laptopView = ["a", "b", "c", "l10", "l11"]

    /// A laptop in `folder` that fetches `doc` (items "a", "b", "c"), inserts "l0" … "l11" after
    /// them and deletes ten of those, synced: it shows ``laptopView``.
    static func churningLaptop(folder: String, server: SyncClient.Server, _ doc: DocumentID) async throws
        -> (SyncClient, LiveDocument) {
        let laptop = try SyncClient(folder: folder, server: server)
        let live = try await laptop.fetch(doc)
        await laptop.start()
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        for i in 0..<12 { try await SyncClientTests.insert(laptop, doc, "l\(i)") }
        for _ in 0..<10 { try await Self.delete(laptop, doc, row: 3) }
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(SyncClientTests.values(live) == [laptopView])
        return (laptop, live)
    }

    static func delete(_ c: SyncClient, _ doc: DocumentID, row: Int) async throws {
        _ = try await c.edit(doc) { (d: inout ListDocument) throws(ListError) in _ = try d.deleteItem(atRow: row, inSection: 0) }
    }

    /// A started device in `folder` that creates `name` (one section) on `daemon` with items
    /// `values`, synced.
    static func firstDevice(_ daemon: DaemonProcess, folder: String, name: String, values: [String]) async throws
        -> (SyncClient, DocumentID) {
        let device = try SyncClient(folder: folder, server: try SyncClientTests.server(daemon))
        await device.start()
        let doc = try await device.create(name: name, sections: ["todo"])
        for v in values { try await SyncClientTests.insert(device, doc, v) }
        try await device.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        return (device, doc)
    }

    /// What ``churned(_:_:before:)`` leaves in the list.
    static let churnedValues = (25..<30).map { "item \($0)" }

    /// Device a (folder `a`) creates "churn" with 30 items; device b (folder `b`) fetches it and
    /// deletes the first 25, synced.
    static func churned(_ daemon: DaemonProcess, _ dir: TemporaryFolder) async throws
        -> (SyncClient, SyncClient, DocumentID, LiveDocument, LiveDocument) {
        let (a, doc) = try await firstDevice(daemon, folder: dir.path + "/a", name: "churn", values: (0..<30).map { "item \($0)" })
        let b = try SyncClient(folder: dir.path + "/b", server: try SyncClientTests.server(daemon))
        let liveA = try await a.open(doc)
        let liveB = try await b.fetch(doc)
        await b.start()
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        for _ in 0..<25 { try await delete(b, doc, row: 0) }
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        return (a, b, doc, liveA, liveB)
    }

    /// What `daemon`'s `status --json` says holds `doc`'s compaction back (`compaction_waits_for`;
    /// nil when nothing does, or the document is not resident).
    static func waitsFor(_ daemon: DaemonProcess, _ doc: DocumentID) -> String? {
        let status = (try? daemon.json(["status"])) as? [String: Any]
        let resident = (status?["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        return resident?["compaction_waits_for"] as? String
    }

    /// The files of `doc`'s folder in `daemon`'s data folder, with their sizes.
    static func files(_ daemon: DaemonProcess, _ doc: DocumentID) -> [String: Int] {
        let folder = daemon.data + "/documents/\(doc)"
        var out: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let size = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? -1
            out[name] = size
        }
        return out
    }

    @Test("two devices edit and see everything; the daemon compacts, trims the log; a restart loads the compacted snapshot; new clients catch up from it; every client shows the same list")
    func compactsAndRestarts() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1h"))
        defer { daemon.terminate() }
        let (a, b, doc, liveA, liveB) = try await Self.churned(daemon, dir)
        let expected = Self.churnedValues
        #expect(eventually(20) { SyncClientTests.values(liveA) == [expected] })
        #expect(SyncClientTests.values(liveB) == [expected])

        // Both devices report what they have seen (within a second): the daemon compacts (maybe
        // once before the deletes too, on a slow machine), and the last compaction leaves the log
        // trimmed to its header.
        #expect(eventually(20) { daemon.log.contains("document compacted") }, "\(daemon.log)")
        func trimmed() -> Bool {
            let logs = Self.files(daemon, doc).filter { $0.key.hasPrefix("log-") }
            return logs.count == 1 && logs.values.allSatisfy { $0 < 128 }
        }
        #expect(eventually(20, trimmed), "the log is trimmed to its header: \(Self.files(daemon, doc))")
        let files = Self.files(daemon, doc)
        #expect(files.keys.contains { $0.hasPrefix("snapshot-") } && files["stability"] != nil, "\(files)")
        let status = try #require(try daemon.json(["status"]) as? [String: Any])
        let resident = (status["resident"] as? [[String: Any]])?.first { $0["id"] as? String == doc.description }
        #expect(status["compaction"] as? String == "on" && (status["compactions"] as? Int ?? 0) >= 1
                && (status["last_compaction"] as? Int ?? 0) > 0, "\(status)")
        #expect(resident?["floor"] != nil && resident?["senders"] as? Int == 2, "\(String(describing: resident))")
        #expect(try table(daemon, doc.description) == [expected], "a command catches up from the compacted document")

        // Restart: the compacted snapshot loads; the devices reconnect; new clients catch up from it.
        #expect(daemon.terminate() == 0)
        daemon = try DaemonProcess(data: dir.path + "/daemon", port: daemon.port, extra: Self.flags(retireAfter: "1h"))
        #expect(try table(daemon, doc.description) == [expected])
        let c = try SyncClient(folder: dir.path + "/c", server: try SyncClientTests.server(daemon))
        let liveC = try await c.fetch(doc)
        await c.start()
        try await c.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(SyncClientTests.values(liveC) == [expected])
        #expect(liveC.document.historyFloor != nil, "its catch-up was the restarted daemon's compacted snapshot")
        // Edits after the floor flow to everyone.
        try await SyncClientTests.insert(c, doc, "after restart")
        try await c.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        let after = expected + ["after restart"]
        #expect(eventually(20) { SyncClientTests.values(liveA) == [after] && SyncClientTests.values(liveB) == [after] })
        #expect(try table(daemon, doc.description) == [after])
        for client in [a, b, c] { await client.close() }
    }

    @Test("who counts survives a restart: a command's replica, which keeps no copy, does not hold compaction back after the daemon restarts")
    func stabilitySurvivesRestart() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1h"))
        defer { daemon.terminate() }
        let (a, doc) = try await Self.firstDevice(daemon, folder: dir.path + "/a", name: "shared", values: ["from the device"])
        // A command edits as its own kept replica and says it keeps no copy; then it exits.
        let (code, _, err) = try daemon.run(["insert", doc.description, "0.1", "from a command"])
        #expect(code == 0, "\(err)")
        #expect(eventually(20) { Self.files(daemon, doc)["stability"] != nil })
        #expect(daemon.terminate() == 0)
        #expect(!daemon.log.contains("document compacted"), "too few operations before the restart")

        // After the restart the command's replica, an author of the document, is known to keep
        // no copy: once the device has seen everything, the daemon compacts.
        daemon = try DaemonProcess(data: dir.path + "/daemon", port: daemon.port, extra: Self.flags(retireAfter: "1h"))
        let live = try await a.open(doc)
        for i in 0..<25 { try await SyncClientTests.insert(a, doc, "d\(i)") }
        try await a.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(20) { daemon.log.contains("document compacted") }, "\(daemon.log)")
        #expect(try table(daemon, doc.description) == SyncClientTests.values(live))
        await a.close()
    }

    @Test("a stability file lost while the daemon was down: the daemon logs it, does not compact while no peer's table came (status says why), and compacts once --retire-after has passed; with a --peer (DIR/peered) it keeps waiting past --retire-after (Docs/Semantics.md §7, \"A lost stability file\")")
    func lostStabilityFile() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1h"))
        defer { daemon.terminate() }
        let (a, doc) = try await Self.firstDevice(daemon, folder: dir.path + "/a", name: "lost", values: ["from the device"])
        #expect(Self.files(daemon, doc)["stability"] != nil, "written when the document was created")
        await a.close()
        #expect(daemon.terminate() == 0)
        try FileManager.default.removeItem(atPath: daemon.data + "/documents/\(doc)/stability")

        // Restarted without it: the document may have peers the daemon no longer knows of.
        daemon = try DaemonProcess(data: dir.path + "/daemon", port: daemon.port, extra: Self.flags(retireAfter: "1h"))
        let (b, live) = try await Self.reopened(folder: dir.path + "/a", server: try SyncClientTests.server(daemon), doc)
        for i in 0..<25 { try await SyncClientTests.insert(b, doc, "d\(i)") }
        try await b.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(20) { daemon.log.contains("stability lost") }, "\(daemon.log)")
        #expect(eventually(20) { Self.waitsFor(daemon, doc)?.hasPrefix("the stability file was lost") == true },
                "\(String(describing: Self.waitsFor(daemon, doc)))")
        #expect(!daemon.log.contains("document compacted"))
        #expect(Self.files(daemon, doc)["stability"] != nil, "the lost state is written down at once")
        await b.close()

        // The same, restarted with a short retire period: no peer's table came in it, so the
        // daemon takes the document for one without peers and compacts it.
        #expect(daemon.terminate() == 0)
        daemon = try DaemonProcess(data: dir.path + "/daemon", port: daemon.port, extra: Self.flags(retireAfter: "1s"))
        let (c, liveC) = try await Self.reopened(folder: dir.path + "/a", server: try SyncClientTests.server(daemon), doc)
        try await SyncClientTests.insert(c, doc, "after")
        try await c.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(20) { daemon.log.contains("document compacted") }, "\(daemon.log)")
        #expect(try table(daemon, doc.description) == SyncClientTests.values(liveC))
        _ = live
        await c.close()

        // Its file lost again, restarted with a peer (`--peer`, one that never answers) and the
        // short retire period: a daemon with peers (`DIR/peered`) keeps the loss past the period,
        // until a peer's table comes (Docs/Semantics.md §7, "A daemon with peers keeps the loss").
        #expect(daemon.terminate() == 0)
        try FileManager.default.removeItem(atPath: daemon.data + "/documents/\(doc)/stability")
        let silent = try LoopbackPorts.restartable()
        daemon = try DaemonProcess(data: dir.path + "/daemon", port: daemon.port,
                                   extra: Self.flags(retireAfter: "1s") + ["--peer", "127.0.0.1:\(silent)"])
        #expect(FileManager.default.fileExists(atPath: daemon.data + "/peered"))
        let (d, _) = try await Self.reopened(folder: dir.path + "/a", server: try SyncClientTests.server(daemon), doc)
        for i in 0..<25 { try await SyncClientTests.insert(d, doc, "p\(i)") }
        try await d.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(20) { daemon.log.contains("stability lost") }, "\(daemon.log)")
        // Past the retire period the loss is still there (status says why), and nothing was compacted.
        #expect(eventually(20) { Self.waitsFor(daemon, doc)?.contains("the retire period passed; this daemon has peers") == true },
                "\(String(describing: Self.waitsFor(daemon, doc)))")
        #expect(!daemon.log.contains("document compacted"), "\(daemon.log)")
        await d.close()
    }

    @Test("a device offline past --retire-after no longer holds compaction back; it comes back with an unsent edit, re-syncs from the snapshot and keeps it")
    func retiredDeviceComesBack() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1s"))
        defer { daemon.terminate() }
        let server = try SyncClientTests.server(daemon)
        let (phone, doc) = try await Self.firstDevice(daemon, folder: dir.path + "/phone", name: "drawer", values: ["a", "b", "c"])
        await phone.close()
        try await Self.editOffline(folder: dir.path + "/phone", server: server, doc)
        try await Task.sleep(for: .milliseconds(2_100))

        // The laptop churns: the phone is retired, the document compacted without it.
        let (laptop, liveLaptop) = try await Self.churningLaptop(folder: dir.path + "/laptop", server: server, doc)
        #expect(eventually(20) { daemon.log.contains("senders retired") && daemon.log.contains("document compacted") }, "\(daemon.log)")

        // The phone comes back: its catch-up is the snapshot; its edit is made again and kept.
        let (back, livePhone) = try await Self.reopened(folder: dir.path + "/phone", server: server, doc)
        let merged = ["a", "in the drawer", "b", "c", "l10", "l11"]
        #expect(SyncClientTests.values(livePhone) == [merged])
        // The daemon runs the default rule (quiescent points only; stable prefixes are
        // `--compact-stable-prefix`, Docs/Semantics.md §7): the phone re-synced from its snapshot.
        #expect(livePhone.document.historyFloor != nil, "it re-synced from the daemon's snapshot")
        #expect(eventually(20) { SyncClientTests.values(liveLaptop) == [merged] })
        #expect(try table(daemon, doc.description) == [merged])
        #expect(await back.status.waiting == 0)
        await back.close()
        await laptop.close()
    }

    @Test("status says what holds compaction back: a device offline (not retired yet) is named as a sender behind; once it is back and caught up, nothing is")
    func statusSaysWhatWaits() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1h"))
        defer { daemon.terminate() }
        let server = try SyncClientTests.server(daemon)
        let (phone, doc) = try await Self.firstDevice(daemon, folder: dir.path + "/phone", name: "waits", values: ["a", "b", "c"])
        let phoneReplica = phone.replica
        await phone.close()
        let (laptop, _) = try await Self.churningLaptop(folder: dir.path + "/laptop", server: server, doc)
        func waitsFor() -> String? { Self.waitsFor(daemon, doc) }
        #expect(eventually(20) { waitsFor()?.contains("senders behind") == true && waitsFor()?.contains("\(phoneReplica)") == true },
                "\(String(describing: waitsFor()))")
        // The default rule (no stable prefixes): nothing compacts while the phone is behind.
        #expect(!daemon.log.contains("document compacted"), "compacted while the phone was behind")
        // The phone comes back and catches up: the document compacts, and nothing holds it back.
        let (back, _) = try await Self.reopened(folder: dir.path + "/phone", server: server, doc)
        #expect(eventually(20) { daemon.log.contains("document compacted") && waitsFor() == nil }, "\(String(describing: waitsFor()))\n\(daemon.log)")
        await back.close()
        await laptop.close()
    }

    @Test("a to-do list: five items of 60 KB deleted with commands; once the last command has gone, the daemon compacts with no other connection, and the export shrinks to the one item left")
    func quietDocumentCompacts() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // 1 section + 6 inserts + 5 deletes = 12 operations: only the last delete makes the document
        // worth compacting (by operations: the bytes trigger, off here, would compact at the third
        // delete already; DeadBytesCompactionProcessTests).
        let daemon = try DaemonProcess(data: dir.path + "/daemon",
                                       extra: ["--compact-after", "12", "--compact-interval", "0", "--retire-after", "1h",
                                              "--compact-dead-share", "off"])
        defer { daemon.terminate() }
        #expect(try daemon.run(["create", "todo"]).0 == 0)
        let big = String(repeating: "x", count: 60_000)
        for i in 0..<6 {
            let (code, _, err) = try daemon.run(["insert", "todo", "0.0", big + "\(i)"])
            #expect(code == 0, "\(err)")
        }
        func exportSize() throws -> Int {
            let file = dir.path + "/export-\(UUID().uuidString)"
            let (code, _, err) = try daemon.run(["export", "todo", file])
            #expect(code == 0, "\(err)")
            return (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1
        }
        let before = try exportSize()
        // The export is JSON with the snapshot in base64 (4/3 of its bytes).
        #expect(before > 6 * 80_000)
        #expect(!daemon.log.contains("document compacted"), "7 operations are under --compact-after 12")
        for _ in 0..<5 {
            let (code, _, err) = try daemon.run(["delete", "todo", "0.0"])
            #expect(code == 0, "\(err)")
        }
        // No connection from here on: the daemon's housekeeping finds the document quiet.
        #expect(eventually(20) { daemon.log.contains("document compacted") }, "\(daemon.log)")
        let after = try exportSize()
        #expect(after < 90_000, "the deleted values are collected: \(before) -> \(after) bytes")
        #expect(try table(daemon, "todo") == [[big + "0"]])
    }

    @Test("a device learns the floor: where the daemon compacted, both devices' copies compact too, in memory and in their stores, showing the same; reopened, a copy loads compacted and keeps syncing")
    func devicesCompactTheirCopies() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // Quiescent points only: a floor at a stable prefix taken while the devices churn (when
        // the machine's timing gives one) leaves fewer than --compact-after operations for a
        // last compaction at the version everyone holds, which this test waits for.
        let daemon = try DaemonProcess(data: dir.path + "/daemon", extra: Self.flags(retireAfter: "1h") + ["--compact-quiescent-only"])
        defer { daemon.terminate() }
        // (The 31 operations before the deletes may be compacted already, and so a's copy.)
        let (a, b, doc, liveA, liveB) = try await Self.churned(daemon, dir)
        let expected = Self.churnedValues
        #expect(eventually(20) { daemon.log.contains("document compacted") }, "\(daemon.log)")
        // The last compaction's floor is the version everyone holds: both copies compact there.
        #expect(eventually(20) {
            let v = liveA.document.version
            return liveA.document.historyFloor == v && liveB.document.historyFloor == v && liveB.document.version == v
        }, "a: \(String(describing: liveA.document.historyFloor)) / \(liveA.document.version), b: \(String(describing: liveB.document.historyFloor))")
        #expect(SyncClientTests.values(liveA) == [expected] && SyncClientTests.values(liveB) == [expected])
        #expect(liveB.document.operationCount == 0, "its history was collected")
        #expect(liveB.canUndo, "b's undo history is kept across the compaction")

        // Reopened from its folder, b's copy is the compacted one; edits still flow both ways.
        await b.close()
        let b2 = try SyncClient(folder: dir.path + "/b", server: try SyncClientTests.server(daemon))
        let liveB2 = try await b2.open(doc)
        #expect(liveB2.document.historyFloor != nil && SyncClientTests.values(liveB2) == [expected])
        await b2.start()
        try await SyncClientTests.insert(b2, doc, "after")
        try await b2.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(20) { SyncClientTests.values(liveA) == [expected + ["after"]] })
        #expect(try table(daemon, doc.description) == [expected + ["after"]])
        await a.close()
        await b2.close()
    }
}
