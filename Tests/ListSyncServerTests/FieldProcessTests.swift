import Foundation
import ListSyncServer
import ListSyncTestTraits
import Testing

/// Fields through the command line, as processes: `set`, `insert NAME=VALUE`, `show --json`'s
/// `fields`, and issue 43's example with a real daemon and two `--replica` devices.
@Suite(.ownThread, .serialized)
struct FieldProcessTests {
    /// The fields of every item of `doc` in `show --json` output (sections, then rows).
    static func fields(_ out: String) throws -> [[[String: Any]]] {
        guard let o = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any],
              let sections = o["sections"] as? [[String: Any]] else { throw DaemonTestError("not a document: \(out)") }
        return sections.map { s in ((s["items"] as? [[String: Any]]) ?? []).map { $0["fields"] as? [String: Any] ?? [:] } }
    }

    /// The fields of item 0.0 on the device `folder`.
    static func deviceFields(_ folder: String, _ doc: String) throws -> [String: Any] {
        let (code, out, err) = try runListsync(["show", "--replica", folder, doc, "--json"])
        guard code == 0 else { throw DaemonTestError("show --replica: \(code) \(err)") }
        return try fields(out)[0][0]
    }

    /// The fields of item 0.0 on the daemon.
    static func daemonFields(_ d: DaemonProcess, _ doc: String) throws -> [String: Any] {
        let (code, out, err) = try d.run(["show", doc], json: true)
        guard code == 0 else { throw DaemonTestError("show: \(code) \(err)") }
        return try fields(out)[0][0]
    }

    @Test("issue 43's example: offline, the phone renames the item and the laptop ticks it done; after both sync, both edits are on both devices and the daemon; a same-field conflict goes to the later edit and the losing device's sync reports it; concurrent increments all count")
    func twoDevicesKeepBothFieldEdits() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        let created = try #require(try daemon.json(["create", "groceries"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        let (ci, oi, ei) = try daemon.run(["insert", doc, "0.0", "milk", "title=milk", "done=false"])
        try #require(ci == 0, "\(ei) \(oi)")

        let phone = dir.path + "/phone", laptop = dir.path + "/laptop"
        let common = ["--daemon", daemon.address, "--key-file", daemon.keyFile, "--timeout", "30"]
        func sync(_ device: String) throws -> String {
            let (code, out, err) = try runListsync(["sync", "--replica", device, doc] + common)
            #expect(code == 0, "\(err) \(out)")
            return out
        }
        func set(_ device: String, _ args: [String]) throws {
            let (code, out, err) = try runListsync(["set", "--replica", device, doc, "0.0"] + args)
            #expect(code == 0 && out.contains("saved on this device"), "\(err) \(out)")
        }
        _ = try sync(phone)
        _ = try sync(laptop)
        #expect(try Self.deviceFields(phone, doc)["title"] as? String == "milk")
        #expect(try Self.deviceFields(laptop, doc)["done"] as? Bool == false)

        // Offline: different fields.
        try set(phone, ["title=oat milk"])
        try set(laptop, ["done=true"])
        _ = try sync(phone)
        _ = try sync(laptop)
        _ = try sync(phone)
        for f in [try Self.deviceFields(phone, doc), try Self.deviceFields(laptop, doc), try Self.daemonFields(daemon, doc)] {
            #expect(f["title"] as? String == "oat milk", "\(f)")
            #expect(f["done"] as? Bool == true, "\(f)")
        }

        // Offline: the same field, the laptop's edit later. The laptop syncs first and loses
        // nothing; the phone's sync says its edit lost.
        try set(phone, ["title=soy milk"])
        try set(laptop, ["title=almond milk"])
        let laptopOut = try sync(laptop)
        #expect(!laptopOut.contains("lost"), "\(laptopOut)")
        let phoneOut = try sync(phone)
        #expect(phoneOut.contains("your edit of field title of 0.0") && phoneOut.contains("lost to \"almond milk\""), "\(phoneOut)")
        _ = try sync(laptop)
        for f in [try Self.deviceFields(phone, doc), try Self.deviceFields(laptop, doc), try Self.daemonFields(daemon, doc)] {
            #expect(f["title"] as? String == "almond milk", "\(f)")
            #expect(f["done"] as? Bool == true, "\(f)")
        }
        // The report is made once: a further sync has nothing to say.
        #expect(!(try sync(phone)).contains("lost"))

        // Offline: a counter incremented on both, a set added to on both.
        try set(phone, ["--increment", "votes=2", "--add", "tags=dairy"])
        try set(laptop, ["--increment", "votes=3", "--add", "tags=cold"])
        _ = try sync(phone)
        _ = try sync(laptop)
        _ = try sync(phone)
        for f in [try Self.deviceFields(phone, doc), try Self.deviceFields(laptop, doc), try Self.daemonFields(daemon, doc)] {
            #expect((f["votes"] as? [String: Any])?["counter"] as? Int == 5, "\(f)")
            #expect((f["tags"] as? [String: Any])?["set"] as? [String] == ["cold", "dairy"], "\(f)")
        }

        // The sync's JSON names the lost edit too.
        try set(laptop, ["title=rice milk"])
        try set(phone, ["title=hemp milk"])
        _ = try sync(phone)
        let (cj, oj, ej) = try runListsync(["sync", "--replica", laptop, doc, "--json"] + common)
        #expect(cj == 0, "\(ej)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(oj.utf8)) as? [String: Any])
        let rows = try #require(report["documents"] as? [[String: Any]])
        let lost = try #require(rows.first?["lostFields"] as? [[String: Any]], "\(oj)")
        #expect(lost.first?["field"] as? String == "title" && lost.first?["lost"] as? String == "rice milk"
            && lost.first?["won"] as? String == "hemp milk" && lost.first?["path"] as? String == "0.0", "\(lost)")
    }

    @Test("set and insert read VALUE as JSON where it is JSON; show --json gives typed fields, show prints them; bad input exits 2 and changes nothing")
    func valuesAndBadInput() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let device = dir.path + "/device"
        let (c0, out0, err0) = try runListsync(["create", "--replica", device, "board", "--json"])
        try #require(c0 == 0, "\(err0)")
        let doc = try #require((try JSONSerialization.jsonObject(with: Data(out0.utf8)) as? [String: Any])?["id"] as? String)
        func cli(_ args: [String]) throws -> (Int32, String, String) { try runListsync(args + ["--replica", device]) }

        #expect(try cli(["insert", doc, "0.0", "title=milk", "n=3"]).0 == 0)
        let (c1, _, e1) = try cli(["set", doc, "0.0", "d=2.5", "whole=2.0", "b=true", "z=null", #"s="3""#, "plain=oat milk",
                                   #"when={"date": "2026-11-29T10:00:00Z"}"#, #"raw={"bytes": "AAE="}"#,
                                   "--increment", "votes=-2", "--add", "tags=a", "--add", "tags=b"])
        #expect(c1 == 0, "\(e1)")
        #expect(try cli(["set", doc, "0", "color=blue"]).0 == 0)   // a section's field
        let (c2, out2, _) = try cli(["show", doc, "--json"])
        #expect(c2 == 0)
        let f = try Self.fields(out2)[0][0]
        #expect(f["title"] as? String == "milk")
        #expect(f["n"] as? Int == 3 && f["d"] as? Double == 2.5 && f["b"] as? Bool == true && f["z"] is NSNull)
        #expect(f["s"] as? String == "3" && f["plain"] as? String == "oat milk")
        #expect((f["when"] as? [String: Any])?["date"] as? String == "2026-11-29T10:00:00.000Z", "\(f)")
        #expect((f["raw"] as? [String: Any])?["bytes"] as? String == "AAE=")
        #expect((f["votes"] as? [String: Any])?["counter"] as? Int == -2)
        #expect((f["tags"] as? [String: Any])?["set"] as? [String] == ["a", "b"])
        // An int has no point, a double always has one.
        #expect(out2.contains(#""n" : 3"#) && out2.contains(#""whole" : 2.0"#), "\(out2)")
        let section = try #require((try JSONSerialization.jsonObject(with: Data(out2.utf8)) as? [String: Any])?["sections"] as? [[String: Any]])
        #expect((section[0]["fields"] as? [String: Any])?["color"] as? String == "blue")
        let (c3, table, _) = try cli(["show", doc])
        #expect(c3 == 0 && table.contains(#"title="milk""#) && table.contains("votes=counter(-2)") && table.contains(#"tags=set("a", "b")"#), "\(table)")

        // Bad input: a usage error (2) or a failure (1), and nothing changed.
        let (_, before, _) = try cli(["show", doc, "--json"])
        for (args, code, says) in [
            (["set", doc, "0.0", #"title="unterminated"#], Int32(2), "not JSON"),
            (["set", doc, "0.0", "=x"], 2, "empty"),
            (["set", doc, "0.0", "title"], 2, "not NAME=VALUE"),
            (["set", doc, "0.0"], 2, "at least one"),
            (["set", doc, "0.0", "n=99999999999999999999"], 2, "out of range"),
            (["set", doc, "0.0", "n=[1,2]"], 2, "not a field value"),
            (["set", doc, "0.0", "a=1", "a=2"], 2, "twice"),
            (["set", doc, "0.0", "--increment", "votes=x"], 2, "integer"),
            (["set", doc, "0.0", #"when={"date": "yesterday"}"#], 2, "ISO 8601"),
            (["set", doc, "0.x", "a=1"], 2, "not an index path"),
            (["set", doc, "3.0", "a=1"], 1, "section 3 does not exist"),
            (["set", doc, "0.7", "a=1"], 1, "out of range"),
            (["set", doc, "0.0", String(repeating: "k", count: 65) + "=1"], 2, "over 64"),
        ] {
            let (c, out, err) = try cli(args)
            #expect(c == code, "\(args): \(c) \(out) \(err)")
            #expect((out + err).contains(says), "\(args): \(out) \(err)")
        }
        let (_, after, _) = try cli(["show", doc, "--json"])
        #expect(after == before)
    }
}
