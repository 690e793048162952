import Foundation
import ListCRDT
import ListSync
@_spi(Testing) import ListSyncClient
import ListSyncTestTraits
import Testing

/// A peer daemon gone for good, against real `listsync serve` processes (Docs/Daemon.md,
/// "Compaction"; Docs/Semantics.md §7, "Forgetting a daemon"): until the operator forgets it,
/// it holds compaction back on every daemon that knew it; forgotten on one, it is forgotten on
/// the others through the gossip, and they compact.
@Suite("Daemon: forgetting a peer daemon", .ownThread, .serialized, .hangGuard)
struct PeerForgetProcessTests {
    @Test("three peered daemons; C is killed and its data lost: A and B never compact and say C holds them back; B restarted with --forget-peer C: both forget it, compact, and show the same list")
    func forgottenDaemon() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let flags = CompactionProcessTests.flags(retireAfter: "1h")
        let a = try DaemonProcess(data: dir.path + "/a", extra: flags)
        defer { a.terminate() }
        let peerFlags = flags + ["--key-file", a.keyFile, "--peer", a.address]
        var b = try DaemonProcess(data: dir.path + "/b", extra: peerFlags)
        defer { b.terminate() }
        let c = try DaemonProcess(data: dir.path + "/c", extra: peerFlags)
        defer { c.terminate() }

        let values = ["a", "b", "c"]
        let (device, doc) = try await CompactionProcessTests.firstDevice(a, folder: dir.path + "/phone", name: "gone", values: values)
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == [values] && ((try? table(c, doc.description)) ?? []) == [values] },
                "B: \(b.log)\nC: \(c.log)")
        // Every daemon hears of C (its entry goes round) before it goes for good. Its id, as
        // status names it: `DIR/replica` holds it in hex (`replica <16 hex digits>`).
        let hex = try String(contentsOfFile: dir.path + "/c/replica", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").last.map(String.init) ?? ""
        let id = "r\(try #require(UInt64(hex, radix: 16)))"
        try await Task.sleep(for: .seconds(3))
        c.kill9()
        try FileManager.default.removeItem(atPath: dir.path + "/c")

        // A laptop on A churns; C's entry holds both back.
        let (laptop, liveLaptop) = try await CompactionProcessTests.churningLaptop(folder: dir.path + "/laptop",
                                                                                 server: try SyncClientTests.server(a), doc)
        let view = [CompactionProcessTests.laptopView]
        #expect(eventually(30) { ((try? table(b, doc.description)) ?? []) == view })
        #expect(eventually(20) { CompactionProcessTests.waitsFor(a, doc) == "daemon \(id) at another version" && CompactionProcessTests.waitsFor(b, doc) == "daemon \(id) at another version" },
                "A: \(String(describing: CompactionProcessTests.waitsFor(a, doc))) B: \(String(describing: CompactionProcessTests.waitsFor(b, doc)))")
        #expect(PeerCompactionProcessTests.compactions(a) == 0 && PeerCompactionProcessTests.compactions(b) == 0)

        // The operator forgets C on B (restarted with the flag); A learns it from B's entry.
        let bPort = b.port
        #expect(b.terminate() == 0)
        b = try DaemonProcess(data: dir.path + "/b", port: bPort, extra: peerFlags + ["--forget-peer", id])
        #expect(eventually(40) { PeerCompactionProcessTests.compactions(a) > 0 && PeerCompactionProcessTests.compactions(b) > 0 },
                "A: \(String(describing: CompactionProcessTests.waitsFor(a, doc))) B: \(String(describing: CompactionProcessTests.waitsFor(b, doc)))\nA's log:\n\(a.log)\nB's log:\n\(b.log)")
        #expect(b.log.contains("peer daemons forgotten daemons=\(id)"), "\(b.log)")
        #expect(try table(a, doc.description) == view && table(b, doc.description) == view)
        #expect(SyncClientTests.values(liveLaptop) == view)
        #expect(!a.log.contains("peer refused relayed operations") && !b.log.contains("peer refused relayed operations"))
        await laptop.close()
        await device.close()
    }

    @Test("daemon D acknowledges a phone's edit it never relays (A is down), then D is lost and A forgets it: the phone, relaunched with A only, sends that edit again under its id (its record says D acknowledged it), its later edit no longer waits, and A and the phone show both")
    func editOnlyAForgottenDaemonHeld() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let flags = CompactionProcessTests.flags(retireAfter: "1h")
        var a = try DaemonProcess(data: dir.path + "/a", extra: flags)
        defer { a.terminate() }
        let d = try DaemonProcess(data: dir.path + "/d", extra: flags + ["--key-file", a.keyFile, "--peer", a.address])
        defer { d.terminate() }
        let values = ["a", "b", "c"]
        let (phone, doc) = try await CompactionProcessTests.firstDevice(d, folder: dir.path + "/phone", name: "lost", values: values)
        #expect(eventually(30) { ((try? table(a, doc.description)) ?? []) == [values] }, "A: \(a.log)\nD: \(d.log)")
        let hex = try String(contentsOfFile: dir.path + "/d/replica", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").last.map(String.init) ?? ""
        let id = "r\(try #require(UInt64(hex, radix: 16)))"

        // A goes down; D acknowledges the phone's edit and cannot relay it; then D is lost for good.
        let aPort = a.port
        #expect(a.terminate() == 0)
        try await SyncClientTests.insert(phone, doc, "only on D")
        try await phone.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        await phone.close()
        // Its record says which daemon acknowledged it (durably, for the relaunch).
        #expect(Self.acknowledgingDaemons(folder: dir.path + "/phone", doc).contains(d.address),
                "\(Self.acknowledgingDaemons(folder: dir.path + "/phone", doc))")
        d.kill9()
        try FileManager.default.removeItem(atPath: dir.path + "/d")

        // A comes back, told that D is gone; the phone is relaunched with A only and edits again.
        a = try DaemonProcess(data: dir.path + "/a", port: aPort, extra: flags + ["--forget-peer", id])
        let (back, live) = try await CompactionProcessTests.reopened(folder: dir.path + "/phone", server: try SyncClientTests.server(a), doc)
        try await SyncClientTests.insert(back, doc, "later")
        let expected = [values + ["only on D", "later"]]
        #expect(eventually(30) { ((try? table(a, doc.description)) ?? []) == expected },
                "A: \(String(describing: try? table(a, doc.description)))\nA's log:\n\(a.log)")
        #expect(SyncClientTests.values(live) == expected)
        try await back.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        await back.close()
    }

    /// The daemons the device's sync record for `doc` names in `acknowledgedBy`, as written on disk.
    static func acknowledgingDaemons(folder: String, _ doc: DocumentID) -> [String] {
        guard let bytes = FileManager.default.contents(atPath: folder + "/documents/\(doc)/sync"),
              let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any],
              let runs = object["acknowledgedBy"] as? [[String: Any]] else { return [] }
        return runs.compactMap { $0["daemon"] as? String }
    }

    @Test("--forget-peer takes a replica id as status shows it, and refuses anything else")
    func flagChecked() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        for bad in ["x12", "r", "0", "-3"] {
            let (status, _, stderr, killed) = try runListsync(["serve", "--data", dir.path + "/d", "--listen", "127.0.0.1:0", "--forget-peer", bad], atMost: livenessGuardSeconds)
            #expect(!killed && status != 0 && stderr.contains("--forget-peer"), "\(bad): \(status) \(stderr)")
        }
    }
}
