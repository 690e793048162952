import Foundation
import Testing
import ListSyncTestTraits

/// `listsync rename DOC --name NEW-NAME` as processes: the real daemon, the real CLI, a SIGKILL
/// and a restart (Docs/Daemon.md, "Renaming a document").
@Suite("Renaming a document (processes)", .ownThread, .serialized, .hangGuard)
struct RenameProcessTests {
    static func names(_ d: DaemonProcess) -> [String: String] {
        var out: [String: String] = [:]
        for row in (try? d.json(["docs"]) as? [[String: Any]]) ?? [] {
            if let id = row["id"] as? String, let name = row["name"] as? String { out[id] = name }
        }
        return out
    }

    @Test("rename --name --json renames it; docs shows it; it survives a SIGKILL and a restart; usage errors exit 2 and an unknown document 1, nothing renamed; the item form still renames an item")
    func renameCommand() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let doc = try #require((try daemon.json(["create", "groceries"]) as? [String: Any])?["id"] as? String)
        _ = try daemon.json(["insert", doc, "0.0", "milk"])

        let renamed = try #require(try daemon.json(["rename", "groceries", "--name", "weekend groceries"]) as? [String: Any])
        #expect(renamed["renamed"] as? Bool == true && renamed["id"] as? String == doc)
        #expect(renamed["name"] as? String == "weekend groceries" && renamed["was"] as? String == "groceries")
        #expect(Self.names(daemon) == [doc: "weekend groceries"])
        let (code, text, _) = try daemon.run(["docs"])
        #expect(code == 0 && text.contains("weekend groceries"), "\(text)")

        // Refusals: nothing renamed.
        for (args, expected) in [(["rename", doc, "--name", ""], Int32(2)), (["rename", doc, "0.0", "--name", "x"], 2),
                                 (["rename", doc, "x"], 2), (["rename", "no-such-list", "--name", "x"], 1)] {
            let (c, out, err) = try daemon.run(args)
            #expect(c == expected, "\(args): \(out) \(err)")
        }
        #expect(Self.names(daemon) == [doc: "weekend groceries"])
        // The item form is unchanged: it renames an item, not the document.
        _ = try daemon.json(["rename", doc, "0.0", "oat milk"])
        #expect(Self.names(daemon) == [doc: "weekend groceries"])

        daemon.kill9()
        daemon = try DaemonProcess(data: dir.path + "/data")
        #expect(Self.names(daemon) == [doc: "weekend groceries"])
        let shown = try #require(try daemon.json(["show", "weekend groceries"]) as? [String: Any])
        #expect("\(shown)".contains("oat milk"), "\(shown)")
        let help = try runListsync(["rename", "--help"])
        #expect(help.0 == 0 && help.1.contains("--name NEW-NAME"))
    }

    @Test("a read-only device is refused (exit 1, forbidden); a device copy (--replica) cannot rename; nothing renamed")
    func refusedForDevices() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let doc = try #require((try daemon.json(["create", "groceries"]) as? [String: Any])?["id"] as? String)
        let file = dir.path + "/reader.credential"
        let added = try runListsync(["device", "add", "reader", "--read-only", "--out", file, "--data", daemon.data])
        try #require(added.0 == 0, "\(added)")
        let (code, out, err) = try runListsync(["rename", doc, "--name", "x", "--daemon", daemon.address, "--credential", file, "--json"])
        #expect(code == 1 && (out + err).contains("read-only"), "\(out) \(err)")
        let replica = try runListsync(["rename", doc, "--name", "x", "--replica", dir.path + "/phone"])
        #expect(replica.0 == 2 && replica.2.contains("needs the daemon"), "\(replica)")
        #expect(Self.names(daemon) == [doc: "groceries"])
    }
}
