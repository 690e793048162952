import Foundation
import Testing
import ListSyncTestTraits

/// Compaction by dead bytes against a real `listsync serve` with its default compaction flags
/// (issue 48, item 1; Docs/Semantics.md §7, "When it is worth it"): a list of six items of 60 KB,
/// five deleted with `listsync delete`, compacts once it is quiet, though it logged a dozen
/// operations and not `--compact-after`'s 10,000; `status` shows what was reclaimable. Only
/// `--compact-interval` is shortened (see the test).
@Suite("Daemon: compaction by dead bytes", .ownThread, .serialized, .hangGuard)
struct DeadBytesCompactionProcessTests {
    /// The document's entry in `status --json`'s `resident`.
    static func resident(_ d: DaemonProcess, _ name: String) -> [String: Any]? {
        let status = (try? d.json(["status"])) as? [String: Any]
        return (status?["resident"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    static func compactions(_ d: DaemonProcess) -> Int {
        ((try? d.json(["status"])) as? [String: Any])?["compactions"] as? Int ?? 0
    }

    /// The size of `listsync export NAME` now.
    static func exportSize(_ d: DaemonProcess, _ name: String, _ folder: String) throws -> Int {
        let path = folder + "/export-\(UUID().uuidString).json"
        let (code, _, err) = try d.run(["export", name, path])
        guard code == 0 else { throw DaemonTestError("export exited \(code): \(err)") }
        return try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }

    @Test("default compaction flags (the interval shortened to 1 s): six items of 60 KB, five deleted with listsync delete; the daemon compacts once quiet until status counts nothing reclaimable, and the export shrinks below 100 KB")
    func sixLargeItemsFiveDeletedCompact() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // The default compaction flags but for `--compact-interval` (60 s between two compactions
        // of one document): the document compacts once half of it is dead (at the third delete)
        // and again after the fifth, which with the default would come a minute later.
        let d = try DaemonProcess(data: dir.path + "/data", extra: ["--compact-interval", "1"])
        defer { d.terminate() }
        #expect(try d.run(["create", "big", "--sections", "todo"]).0 == 0)
        for k in 0 ..< 6 {
            let file = dir.path + "/value-\(k)"
            try Data(repeating: UInt8(ascii: "a") + UInt8(k), count: 60_000).write(to: URL(fileURLWithPath: file))
            let (code, _, err) = try d.run(["insert", "big", "0.\(k)", "--value-file", file])
            #expect(code == 0, "insert \(k): \(err)")
        }
        let before = try Self.exportSize(d, "big", dir.path)
        #expect(before > 360_000, "six values of 60,000 bytes: \(before) bytes")
        #expect(Self.compactions(d) == 0, "nothing dead yet: \(d.log)")
        for _ in 0 ..< 5 {
            let (code, _, err) = try d.run(["delete", "big", "0.0"])
            #expect(code == 0, "delete: \(err)")
        }
        // Counts, not time: the daemon compacts once quiet, until nothing is left to reclaim;
        // the wait is only a guard against a hang.
        #expect(eventually(60) {
            Self.compactions(d) >= 1 && (Self.resident(d, "big")?["reclaimable_bytes"] as? Int).map { $0 < 1_000 } == true
        }, "no compaction of everything dead: \(String(describing: Self.resident(d, "big")))\n\(d.log)")
        let after = try Self.exportSize(d, "big", dir.path)
        #expect(after < 100_000, "the export kept the deleted values: \(after) bytes (\(before) before)")
        let entry = try #require(Self.resident(d, "big"), "status lists the document")
        let reclaimable = try #require(entry["reclaimable_bytes"] as? Int)
        let total = try #require(entry["document_bytes"] as? Int)
        #expect(reclaimable < 1_000 && total >= 60_000 && total < 100_000, "after the compaction: \(entry)")
        #expect(try table(d, "big") == [[String(repeating: "f", count: 60_000)]])
        // The text status says it too.
        let (code, text, _) = try d.run(["status"])
        #expect(code == 0 && text.contains("bytes reclaimable"), "\(text)")
    }

    @Test("status and /metrics show a document's reclaimable bytes before any compaction: a deleted 2,000-byte item counts, and compaction waits (under the 64 KiB floor)")
    func statusShowsReclaimable() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data", extra: ["--admin", "127.0.0.1:0"])
        defer { d.terminate() }
        #expect(try d.run(["create", "small", "--sections", "todo"]).0 == 0)
        let file = dir.path + "/value"
        try Data(repeating: UInt8(ascii: "z"), count: 2_000).write(to: URL(fileURLWithPath: file))
        #expect(try d.run(["insert", "small", "0.0", "--value-file", file]).0 == 0)
        #expect(try d.run(["insert", "small", "0.1", "kept"]).0 == 0)
        #expect(try d.run(["delete", "small", "0.0"]).0 == 0)
        let entry = try #require(Self.resident(d, "small"))
        let reclaimable = try #require(entry["reclaimable_bytes"] as? Int)
        #expect(reclaimable >= 2_000 && reclaimable < 3_000, "the deleted value and a few logged operations: \(entry)")
        #expect(Self.compactions(d) == 0, "2,000 bytes are under the floor")
        // /metrics: the same count, labelled with the document's id (published by its host).
        let line = try #require(d.log.range(of: "http://127.0.0.1:"))
        let port = try #require(UInt16(d.log[line.upperBound...].prefix { $0.isNumber }))
        let id = try #require(entry["id"] as? String)
        let (status, metrics) = try await AdminHTTPTests.get(port, "/metrics")
        #expect(status == 200)
        #expect(metrics.contains("listsync_document_reclaimable_bytes{document=\"\(id)\"} \(reclaimable)\n"), "\(metrics)")
        #expect(metrics.contains("listsync_document_bytes{document=\"\(id)\"} \(try #require(entry["document_bytes"] as? Int))\n"))
    }

    @Test("--compact-dead-share and --compact-dead-floor: bad values are usage errors (exit 2) that name the flag, nothing started; serve --help describes both")
    func flagsChecked() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let bad = [("--compact-dead-share", "1.5"), ("--compact-dead-share", "-0.1"), ("--compact-dead-share", "half"),
                   ("--compact-dead-share", "150%"), ("--compact-dead-share", "nan"), ("--compact-dead-floor", "-1"),
                   ("--compact-dead-floor", "64X"), ("--compact-dead-floor", "K"), ("--compact-dead-floor", "99999999999999G")]
        for (flag, value) in bad {
            let (code, _, stderr, killed) = try runListsync(["serve", "--data", dir.path + "/d", "--listen", "127.0.0.1:0", flag, value],
                                                            atMost: livenessGuardSeconds)
            #expect(!killed && code == 2 && stderr.contains(flag), "\(flag) \(value): \(code) \(stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/d"), "a usage error makes no data folder")
        let (code, help, _) = try runListsync(["serve", "--help"])
        #expect(code == 0 && help.contains("--compact-dead-share") && help.contains("--compact-dead-floor"), "\(help)")
    }
}
