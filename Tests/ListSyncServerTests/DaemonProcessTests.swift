import Foundation
import ListCRDT
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncFiles
import ListSyncTestSupport
import Synchronization
import Testing
import ListSync
import ListSyncTestTraits

/// The real `listsync` binary as a process: `serve` with a temporary data folder, client
/// commands against it, SIGKILL and restarts.
@Suite("The daemon as a process", .ownThread, .serialized, .hangGuard)
struct DaemonProcessTests {
    @Test("zero flags but the address (from the environment): creates its folder and key (0600), persists across a restart")
    func zeroFlagStart() throws {
        let home = TemporaryFolder()
        defer { home.remove() }
        guard let binary = listsyncBinary() else { throw DaemonTestError("no binary") }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = home.path
        env["LISTSYNC_LISTEN"] = "127.0.0.1:0"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["serve"]
        p.environment = env
        let out = Pipe()
        let output = OutputBuffer()
        PipeDrain.start(out) { output.append($0) }
        p.standardOutput = out
        p.standardError = Pipe()
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() } }
        let data = home.path + "/.listsync"
        #expect(eventually { FileManager.default.fileExists(atPath: data + "/key") })
        let mode = (try FileManager.default.attributesOfItem(atPath: data + "/key")[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        // The key file comes before the listener: wait for the banner's last line before SIGTERM
        // (a daemon stopped between the two never prints it; seen on a loaded machine).
        #expect(eventually(20) { output.text.contains("listsync create groceries --daemon") })
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let printed = output.text
        #expect(printed.contains("data folder: \(data)"))
        #expect(printed.contains("key file:    \(data)/key (created now"))
        #expect(printed.contains("listsync status --daemon"))
    }

    @Test("two clients edit concurrently (moves of the same items, across sections); kill -9; nothing acknowledged is lost")
    func concurrentClientsAndKill9() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path)
        let port = daemon.port
        guard let created = try daemon.json(["create", "board", "--sections", "todo,doing,done"]) as? [String: Any],
              let doc = created["id"] as? String else { throw DaemonTestError("create") }
        for k in 0..<12 {
            let (code, _, err) = try daemon.run(["insert", doc, "0.\(k)", "item\(k)"])
            #expect(code == 0, "\(err)")
        }
        // Two clients at once: each moves items around, some the same ones.
        let d = daemon
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for client in 0..<2 {
            group.enter()
            Thread {
                defer { group.leave() }
                for k in 0..<8 {
                    let from = "\(k % 2).0", to = client == 0 ? "1.\(k % 3)" : "2.0"
                    if let (code, _, err) = try? d.run(["move", doc, from, to]), code != 0, !err.contains("out of range") {
                        failures.withLock { $0.append(err) }
                    }
                }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let before = try table(daemon, doc)
        #expect(Set(before.flatMap { $0 }) == Set((0..<12).map { "item\($0)" }), "each item exactly once: \(before)")
        #expect(before.flatMap { $0 }.count == 12)
        daemon.kill9()
        daemon = try DaemonProcess(data: dir.path, port: port)
        defer { daemon.terminate() }
        let after = try table(daemon, doc)
        #expect(after == before, "after kill -9: \(after) before: \(before)")
    }

    @Test("status counts what the daemon sends: a client's catch-up adds its operations to operations_out and its frames to bytes_out")
    func statusCountsWhatIsSent() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        _ = try daemon.json(["create", "sent"])
        for v in ["a", "b", "c"] { _ = try daemon.json(["insert", "sent", "0.0", v]) }
        func counters() throws -> (operations: Int, bytes: Int) {
            let status = try #require(try daemon.json(["status"]) as? [String: Any])
            return (try #require(status["operations_out"] as? Int), try #require(status["bytes_out"] as? Int))
        }
        let before = try counters()
        #expect(before.bytes > 0, "every command was answered")
        // A client with no copy kept (another --data folder): its catch-up is the section and
        // the three items.
        #expect(try daemon.run(["show", "sent", "--data", dir.path + "/other"]).0 == 0)
        let after = try counters()
        #expect(after.operations - before.operations >= 4, "\(before) -> \(after)")
        #expect(after.bytes > before.bytes)
    }

    @Test("every client command's --json output, and its errors: unknown document, bad path, daemon down, wrong key")
    func clientCommands() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path)
        defer { daemon.terminate() }
        let created = try #require(try daemon.json(["create", "list"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        _ = try daemon.json(["insert", doc, "0.0", "a"])
        _ = try daemon.json(["insert", doc, "0.1", "b"])
        _ = try daemon.json(["insert", doc, "1", "second"])
        _ = try daemon.json(["move", doc, "0.0", "1.0"])
        _ = try daemon.json(["rename", doc, "1.0", "A"])
        _ = try daemon.json(["rename", doc, "1", "Second"])
        #expect(try table(daemon, doc) == [["b"], ["A"]])
        _ = try daemon.json(["delete", doc, "0.0"])
        #expect(try table(daemon, doc) == [[], ["A"]])
        let docs = try #require(try daemon.json(["docs"]) as? [[String: Any]])
        #expect(docs.map { $0["id"] as? String } == [doc])
        let status = try #require(try daemon.json(["status"]) as? [String: Any])
        #expect(status["documents_on_disk"] as? Int == 1)
        #expect((status["limits"] as? [String: Any])?["max_connections"] as? Int == 1024)
        // By name, too.
        #expect(try table(daemon, "list") == [[], ["A"]])
        // Export and import: a new document with the same contents.
        let file = dir.path + "/export.json"
        _ = try daemon.json(["export", doc, file])
        let imported = try #require(try daemon.json(["import", file, "--name", "copy"]) as? [String: Any])
        let copy = try #require(imported["id"] as? String)
        #expect(copy != doc)
        #expect(try table(daemon, copy) == [[], ["A"]])

        // Errors: exit 1 and say what was wrong.
        var (code, out, err) = try daemon.run(["show", "nope"])
        #expect(code == 1 && err.contains("no document \"nope\""))
        (code, out, _) = try daemon.run(["insert", doc, "0.9", "x"], json: true)
        #expect(code == 1)
        let e = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        #expect((e?["error"] as? String)?.contains("out of range") == true)
        (code, _, err) = try daemon.run(["move", doc, "0.0", "1"])
        #expect(code != 0 && err.contains("both be items"))
        (code, _, err) = try runListsync(["docs", "--daemon", "127.0.0.1:1", "--key-file", daemon.keyFile])
        #expect(code == 1 && err.contains("no daemon at 127.0.0.1:1"))
        let wrong = dir.path + "/wrong-key"
        _ = FileManager.default.createFile(atPath: wrong, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o600])
        (code, _, err) = try runListsync(["docs", "--daemon", daemon.address, "--key-file", wrong])
        #expect(code == 1 && err.contains("refused the key"))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: wrong)
        (code, _, err) = try runListsync(["docs", "--daemon", daemon.address, "--key-file", wrong])
        #expect(code == 1 && err.contains("others can read it"))
        // --help everywhere.
        for c in ["serve", "status", "docs", "create", "show", "watch", "insert", "move", "delete", "rename", "export", "import", "restore", "simulate"] {
            let (code, out, _) = try runListsync([c, "--help"])
            #expect(code == 0 && out.contains("USAGE: listsync \(c)"), "\(c) --help")
        }
    }

    // A key file others can read or write: FileModeTests.openKeyFile.

    @Test("watch prints each change made by another client")
    func watch() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path)
        defer { daemon.terminate() }
        let created = try #require(try daemon.json(["create", "w"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        guard let binary = listsyncBinary() else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["watch", doc, "--count", "2", "--daemon", daemon.address, "--key-file", daemon.keyFile]
        let out = Pipe()
        p.standardOutput = out
        let printed = OutputBuffer()
        PipeDrain.start(out) { printed.append($0) }
        try p.run()
        defer { if p.isRunning { p.terminate() } }
        // Bounded waits: a watch that missed a change must fail the test, not hang it.
        #expect(eventually(20) { printed.text.contains("watching") }, "the watch did not start: \(printed.text)")
        _ = try daemon.json(["insert", doc, "0.0", "first"])
        _ = try daemon.json(["insert", doc, "0.1", "second"])
        #expect(eventually(20) { !p.isRunning }, "the watch did not end after 2 changes: \(printed.text)")
        Thread.sleep(forTimeInterval: 0.1)
        let text = printed.text
        #expect(text.contains("inserted 0.0 \"first\""))
        #expect(text.contains("inserted 0.1 \"second\""))
    }
}

/// Daemons peered in a line, A – B – C.
@Suite("Daemons peered", .ownThread, .serialized, .hangGuard)
struct PeeredDaemonTests {
    @Test("A–B–C: edits on A reach C; B killed, both ends edit, B back: all converge")
    func line() throws {
        let root = TemporaryFolder()
        defer { root.remove() }
        let a = try DaemonProcess(data: root.path + "/a")
        defer { a.terminate() }
        let key = ["--key-file", a.keyFile]
        var b = try DaemonProcess(data: root.path + "/b", extra: key + ["--peer", a.address])
        let c = try DaemonProcess(data: root.path + "/c", extra: key + ["--peer", b.address])
        defer { c.terminate() }
        let created = try #require(try a.json(["create", "shared", "--sections", "x,y"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        _ = try a.json(["insert", doc, "0.0", "from-a"])
        #expect(eventually { ((try? table(c, doc)) ?? []) == [["from-a"], []] },
                "C: \(String(describing: try? table(c, doc)))\nB's log:\n\(b.log)\nC's log:\n\(c.log)")
        // B goes away; both ends edit.
        let bPort = b.port
        b.kill9()
        _ = try a.json(["insert", doc, "1.0", "a-while-b-down"])
        _ = try c.json(["insert", doc, "0.0", "c-while-b-down"])
        _ = try c.json(["move", doc, "0.1", "1.0"])
        b = try DaemonProcess(data: root.path + "/b", port: bPort, extra: key + ["--peer", a.address])
        defer { b.terminate() }
        let converged = eventually(40) {
            guard let ta = try? table(a, doc), let tb = try? table(b, doc), let tc = try? table(c, doc) else { return false }
            return ta == tb && tb == tc && ta.flatMap { $0 }.count == 3
        }
        #expect(converged, "a: \(String(describing: try? table(a, doc))) b: \(String(describing: try? table(b, doc))) c: \(String(describing: try? table(c, doc)))")
        // Documents created on either end appear on all three.
        let onC = try #require(try c.json(["create", "made-on-c"]) as? [String: Any])
        let idC = try #require(onC["id"] as? String)
        #expect(eventually(40) { ((try? a.json(["docs"]) as? [[String: Any]]) ?? []).contains { $0["id"] as? String == idC } })
    }
}

/// Epochs: a restored document refuses a client that holds the old one.
@Suite("Document epochs", .ownThread, .serialized, .hangGuard)
struct EpochTests {
    @Test("after a restore, a client resuming the old epoch is refused; merging blind would resurrect what the restore removed")
    func restoreChangesEpoch() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path)
        let created = try #require(try daemon.json(["create", "e"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        _ = try daemon.json(["insert", doc, "0.0", "a"])
        _ = try daemon.json(["insert", doc, "0.1", "b"])
        let backup = dir.path + "/backup.json"
        _ = try daemon.json(["export", doc, backup])
        // A client that keeps its copy across sessions adds "c" after the backup was made.
        let key = try KeyFile.read(daemon.keyFile)
        let id = try #require(DocumentID(hex: doc))
        var client = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, timeout: .seconds(livenessGuardSeconds))
        _ = try await client.open(id)
        let oldEpoch = try #require(await client.info(id)?.epoch)
        try await client.edit(id) { d throws(ListError) in _ = try d.insertItem(at: IndexPath(item: 2, section: 0), value: Data("c".utf8)) }
        let held = try await client.open(id).document
        await client.close()
        // The operator restores the backup (daemon stopped), then starts the daemon again.
        let port = daemon.port
        #expect(daemon.terminate() == 0)
        let (code, _, err) = try runListsync(["restore", doc, backup, "--data", dir.path])
        #expect(code == 0, "\(err)")
        daemon = try DaemonProcess(data: dir.path, port: port)
        defer { daemon.terminate() }
        #expect(try table(daemon, doc) == [["a", "b"]])
        // Resuming the old epoch: refused, nothing merged.
        client = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, timeout: .seconds(livenessGuardSeconds))
        do {
            _ = try await client.open(id, resuming: held, epoch: oldEpoch)
            Issue.record("a client holding the old epoch was let in")
        } catch let DaemonClientError.refused(code, text) {
            #expect(code == .epochMismatch, "\(text)")
        }
        await client.close()
        #expect(try table(daemon, doc) == [["a", "b"]], "the refused client changed nothing")
        // What epochs prevent: the same copy merged blind brings back "c", which the restore removed.
        client = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, timeout: .seconds(livenessGuardSeconds))
        _ = try await client.open(id, resuming: held, epoch: 0)
        await client.close()
        #expect(try table(daemon, doc) == [["a", "b", "c"]])
    }
}

/// LAN discovery, on loopback: each daemon announces to the other's UDP port.
@Suite("Discovery", .ownThread, .serialized, .hangGuard)
struct DiscoveryTests {
    /// A UDP port free now, below the ephemeral range (`LoopbackPorts`): a port the kernel picked
    /// could go to another socket before the daemon binds it.
    static func freeUDPPort() throws -> UInt16 { try LoopbackPorts.restartable() }

    @Test("two daemons that hear each other's announcements peer and sync; one with another key is ignored")
    func discover() throws {
        let root = TemporaryFolder()
        defer { root.remove() }
        let pa = try Self.freeUDPPort(), pb = try Self.freeUDPPort(), pc = try Self.freeUDPPort()
        let fast = ["--discover", "--announce-interval", "0.3"]
        let a = try DaemonProcess(data: root.path + "/a", extra: fast + ["--discover-port", "\(pa)", "--announce-to", "127.0.0.1:\(pb)"])
        defer { a.terminate() }
        let b = try DaemonProcess(data: root.path + "/b", extra: fast + ["--key-file", a.keyFile, "--discover-port", "\(pb)",
                                                                          "--announce-to", "127.0.0.1:\(pa)"])
        defer { b.terminate() }
        // C has its own key and announces to both: it must be ignored.
        let c = try DaemonProcess(data: root.path + "/c", extra: fast + ["--discover-port", "\(pc)",
                                                                          "--announce-to", "127.0.0.1:\(pa)", "--announce-to", "127.0.0.1:\(pb)"])
        defer { c.terminate() }
        let created = try #require(try a.json(["create", "found"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        _ = try a.json(["insert", doc, "0.0", "hello"])
        #expect(eventually(20) { ((try? table(b, doc)) ?? []) == [["hello"]] }, "A: \(a.log)\nB: \(b.log)")
        #expect(a.log.contains("peer discovered") || b.log.contains("peer discovered"))
        #expect(!a.log.contains("127.0.0.1:\(c.port)") && !b.log.contains("127.0.0.1:\(c.port)"), "C (another key) was ignored")
        let docsOnC = try #require(try c.json(["docs"]) as? [[String: Any]])
        #expect(docsOnC.isEmpty)
    }
}

/// The admin HTTP port of a daemon process.
@Suite("Admin HTTP", .ownThread, .serialized, .hangGuard)
struct AdminHTTPTests {
    /// GETs `path` with a raw HTTP/1.0 request: (status, body).
    static func get(_ port: UInt16, _ path: String) async throws -> (Int, String) {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.1"))
        raw.send(Array("GET \(path) HTTP/1.0\r\nHost: x\r\n\r\n".utf8))
        var bytes: [UInt8] = []
        while true {
            let got = await raw.read(65_536, timeout: 2)
            if got.isEmpty { break }
            bytes += got
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    @Test("/healthz, /readyz and Prometheus /metrics, with the counters moving after edits")
    func endpoints() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path, extra: ["--admin", "127.0.0.1:0"])
        defer { d.terminate() }
        let line = try #require(d.log.range(of: "http://127.0.0.1:"))
        let port = try #require(UInt16(d.log[line.upperBound...].prefix { $0.isNumber }))
        #expect(try await Self.get(port, "/healthz") == (200, "ok\n"))
        #expect(try await Self.get(port, "/readyz") == (200, "ready\n"))
        let created = try #require(try d.json(["create", "m"]) as? [String: Any])
        _ = try d.json(["insert", try #require(created["id"] as? String), "0.0", "x"])
        let (status, metrics) = try await Self.get(port, "/metrics")
        #expect(status == 200)
        #expect(metrics.contains("# TYPE listsync_append_seconds histogram"))
        #expect(metrics.contains("listsync_documents_on_disk 1"))
        #expect(metrics.contains("listsync_batches_acknowledged_total 1"), "\(metrics)")
        #expect(try await Self.get(port, "/nope").0 == 404)
    }
}
