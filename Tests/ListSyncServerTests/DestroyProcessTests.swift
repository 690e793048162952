import Foundation
import Testing
import ListSyncTestTraits

/// `listsync destroy` as processes: the confirmation, the daemon's folder, a watch, a device copy
/// and a peer daemon that held the document (Docs/Daemon.md, "Destroying a document").
@Suite("Destroying a document (processes)", .ownThread, .serialized, .hangGuard)
struct DestroyProcessTests {
    /// Runs listsync with stdin from /dev/null (never a terminal): (exit status, stdout, stderr).
    static func withoutTerminal(_ args: [String]) throws -> (Int32, String, String) {
        try runListsync(args, stdin: FileHandle.nullDevice)
    }

    /// A daemon in `dir` holding a document "groceries" with one item, its id, and the options
    /// that reach the daemon as its operator and as a device.
    static func daemonWithDocument(_ dir: TemporaryFolder) throws -> (DaemonProcess, String, operator: [String], device: [String]) {
        let daemon = try DaemonProcess(data: dir.path + "/data")
        let doc = try create(daemon, "groceries")
        return (daemon, doc, ["--daemon", daemon.address, "--key-file", daemon.keyFile, "--data", daemon.data],
                ["--daemon", daemon.address, "--key-file", daemon.keyFile, "--timeout", "20"])
    }

    static func ids(_ d: DaemonProcess) -> [String] {
        ((try? d.json(["docs"]) as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    static func create(_ d: DaemonProcess, _ name: String) throws -> String {
        let created = try #require(try d.json(["create", name]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        _ = try d.json(["insert", doc, "0.0", "milk"])
        return doc
    }

    @Test("docs --follow: prints the list, then each document made, renamed and destroyed by others, as JSON lines; an empty name is refused")
    func docsFollow() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (daemon, doc, common, _) = try Self.daemonWithDocument(dir)
        defer { daemon.terminate() }
        let follow = try BackgroundListsync(["docs", "--follow", "--count", "3", "--json"] + common)
        defer { follow.stop() }
        #expect(eventually(10) { follow.stdout.text.contains(doc) }, "\(follow.stdout.text) \(follow.stderr.text)")

        let (empty, _, why) = try Self.withoutTerminal(["create", ""] + common)
        #expect(empty != 0 && why.contains("cannot be empty"), "\(why)")
        let other = try Self.create(daemon, "hardware")
        #expect(try Self.withoutTerminal(["rename", other, "--name", "tools"] + common).0 == 0)
        #expect(try Self.withoutTerminal(["destroy", doc, "--yes"] + common).0 == 0)
        #expect(follow.stop(within: livenessGuardSeconds) == 0, "\(follow.stdout.text) \(follow.stderr.text)")

        let lines = follow.stdout.text.split(separator: "\n").dropFirst()
        let events = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.map { "\($0["event"] ?? "?") \($0["id"] ?? "?") \($0["name"] ?? "")" }
                == ["created \(other) hardware", "renamed \(other) tools", "destroyed \(doc) "], "\(follow.stdout.text)")
        #expect(try runListsync(["docs", "--count", "2"] + common).0 == 2, "--count without --follow is a usage error")
    }

    @Test("destroy: refused without a terminal or --yes (exit 2, nothing done); --yes --json destroys it: not listed, folder gone, record kept; a watch ends saying so")
    func destroyCommand() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (daemon, doc, common, device) = try Self.daemonWithDocument(dir)
        defer { daemon.terminate() }

        let (refused, _, why) = try Self.withoutTerminal(["destroy", doc] + common)
        #expect(refused == 2, "\(why)")
        #expect(why.contains("--yes") && why.contains("nothing was destroyed"), "\(why)")
        #expect(Self.ids(daemon) == [doc])

        // A watch of it, and a device copy of it.
        let watch = try BackgroundListsync(["watch", doc] + common)
        defer { watch.stop() }
        #expect(eventually(10) { watch.stdout.text.contains("watching") }, "\(watch.stdout.text) \(watch.stderr.text)")
        let phone = dir.path + "/phone"
        let fetched = try runListsync(["sync", "--replica", phone, doc] + device)
        #expect(fetched.0 == 0, "\(fetched)")

        let (code, out, err) = try Self.withoutTerminal(["destroy", doc, "--yes", "--json"] + common)
        #expect(code == 0, "\(err) \(out)")
        let answer = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        #expect(answer?["destroyed"] as? Bool == true && answer?["id"] as? String == doc && answer?["name"] as? String == "groceries",
                "\(out)")
        #expect(Self.ids(daemon).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: daemon.data + "/documents/" + doc))
        let record = daemon.data + "/destroyed/" + doc
        #expect(FileManager.default.fileExists(atPath: record))
        #expect(((try? FileManager.default.attributesOfItem(atPath: record)[.posixPermissions]) as? NSNumber)?.intValue == 0o600)
        #expect(daemon.log.contains("document destroyed"))

        // The watch ends with a clear message.
        #expect(watch.stop(within: livenessGuardSeconds) == 1, "the watch: \(watch.stdout.text) \(watch.stderr.text)")
        #expect(watch.stderr.text.contains("destroyed"), "\(watch.stderr.text)")

        // The device copy: sync says it was destroyed and removes it; nothing comes back on the daemon.
        let (synced, said, syncErr) = try runListsync(["sync", "--replica", phone] + device)
        #expect(synced == 0, "\(said) \(syncErr)")
        #expect(said.contains("destroyed on the daemon") && said.contains("groceries"), "\(said)")
        let onDevice = try runListsync(["docs", "--replica", phone, "--json"])
        #expect(onDevice.0 == 0 && !onDevice.1.contains(doc), "\(onDevice)")
        #expect(Self.ids(daemon).isEmpty)
        #expect(try runListsync(["show", doc] + common).0 != 0)
    }

    @Test("a device with unsent edits of a destroyed document: they are set aside, sync says where, the document does not come back")
    func deviceWithUnsentEdits() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (daemon, doc, common, device) = try Self.daemonWithDocument(dir)
        defer { daemon.terminate() }
        let phone = dir.path + "/phone"
        #expect(try runListsync(["sync", "--replica", phone, doc] + device).0 == 0)
        let edited = try runListsync(["insert", "--replica", phone, doc, "0.0", "eggs"])
        #expect(edited.0 == 0, "\(edited)")
        #expect(try Self.withoutTerminal(["destroy", doc, "--yes"] + common).0 == 0)
        let (code, out, err) = try runListsync(["sync", "--replica", phone] + device)
        #expect(code != 0, "\(out)")
        #expect(err.contains("destroyed on the daemon") && err.contains("1 unsent edit") && err.contains("/aside/"), "\(err)")
        #expect(Self.ids(daemon).isEmpty)
        let again = try runListsync(["sync", "--replica", phone] + device)
        #expect(again.0 == 0, "\(again)")
        #expect(Self.ids(daemon).isEmpty, "the set-aside copy is not synced")
    }

    @Test("peers: a document destroyed on A is destroyed on B, and comes back on neither after B restarts; B down during the destroy destroys it when it is back")
    func peers() throws {
        let root = TemporaryFolder()
        defer { root.remove() }
        let a = try DaemonProcess(data: root.path + "/a")
        defer { a.terminate() }
        let key = ["--key-file", a.keyFile]
        var b = try DaemonProcess(data: root.path + "/b", extra: key + ["--peer", a.address])
        let doc = try Self.create(a, "shared")
        let later = try Self.create(a, "later")
        #expect(eventually(20) { Set(Self.ids(b)) == [doc, later] }, "B: \(Self.ids(b))\n\(b.log)")
        #expect(eventually(20) { ((try? table(b, doc)) ?? []) == [["milk"]] })

        // Destroyed on A while B is connected: B destroys its copy.
        let aCommon = ["--daemon", a.address, "--key-file", a.keyFile, "--data", a.data]
        #expect(try Self.withoutTerminal(["destroy", doc, "--yes"] + aCommon).0 == 0)
        #expect(eventually(20) { !Self.ids(b).contains(doc) }, "B still lists it:\n\(b.log)")
        #expect(eventually(5) { !FileManager.default.fileExists(atPath: b.data + "/documents/" + doc) })
        #expect(FileManager.default.fileExists(atPath: b.data + "/destroyed/" + doc))

        // B down while A destroys the other: B, back, destroys its copy and does not bring it back to A.
        let port = b.port
        b.kill9()
        #expect(try Self.withoutTerminal(["destroy", later, "--yes"] + aCommon).0 == 0)
        b = try DaemonProcess(data: root.path + "/b", port: port, extra: key + ["--peer", a.address])
        defer { b.terminate() }
        #expect(eventually(20) { !Self.ids(b).contains(later) }, "B still lists it:\n\(b.log)")
        Thread.sleep(forTimeInterval: 1)
        #expect(Self.ids(a).isEmpty && Self.ids(b).isEmpty, "A: \(Self.ids(a)) B: \(Self.ids(b))")
        #expect(a.log.components(separatedBy: "document created").count == 3, "A made a destroyed document again:\n\(a.log)")
    }
}
