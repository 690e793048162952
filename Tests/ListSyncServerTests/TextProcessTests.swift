import Foundation
import ListSyncServer
import ListSyncTestTraits
import Testing

/// Text fields through the command line, as processes: `listsync text`, `show --json` giving a
/// text field as its string, and issue 45's example with a real daemon and two `--replica`
/// devices typing into one card's notes offline.
@Suite(.ownThread, .serialized)
struct TextProcessTests {
    @Test("issue 45's example: offline, one device appends to the notes and the other types at the start; after both sync, both texts are on both devices and the daemon, in the order each typed")
    func twoDevicesTypeIntoOneField() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/daemon")
        defer { daemon.terminate() }
        let created = try #require(try daemon.json(["create", "groceries"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        let (ci, oi, ei) = try daemon.run(["insert", doc, "0.0", "milk"])
        try #require(ci == 0, "\(ei) \(oi)")
        let (ct, ot, et) = try daemon.run(["text", doc, "0.0", "notes", "--at", "0", "--insert", "milk"])
        try #require(ct == 0, "\(et) \(ot)")
        #expect(try FieldProcessTests.daemonFields(daemon, doc)["notes"] as? String == "milk")

        let phone = dir.path + "/phone", laptop = dir.path + "/laptop"
        let common = ["--daemon", daemon.address, "--key-file", daemon.keyFile, "--timeout", "30"]
        func sync(_ device: String) throws {
            let (code, out, err) = try runListsync(["sync", "--replica", device, doc] + common)
            #expect(code == 0, "\(err) \(out)")
        }
        func text(_ device: String, _ args: [String]) throws {
            let (code, out, err) = try runListsync(["text", "--replica", device, doc, "0.0", "notes"] + args)
            #expect(code == 0 && out.contains("saved on this device"), "\(err) \(out)")
        }
        try sync(phone)
        try sync(laptop)
        try text(phone, ["--at", "4", "--insert", " (2 litres)"])
        try text(laptop, ["--at", "0", "--insert", "organic "])
        try sync(phone)
        try sync(laptop)
        try sync(phone)
        for f in [try FieldProcessTests.deviceFields(phone, doc), try FieldProcessTests.deviceFields(laptop, doc),
                  try FieldProcessTests.daemonFields(daemon, doc)] {
            #expect(f["notes"] as? String == "organic milk (2 litres)", "\(f)")
        }
        // A removal through the daemon reaches the devices.
        let (cd, od, ed) = try daemon.run(["text", doc, "0.0", "notes", "--at", "0", "--delete", "8"])
        #expect(cd == 0, "\(ed) \(od)")
        try sync(phone)
        #expect(try FieldProcessTests.deviceFields(phone, doc)["notes"] as? String == "milk (2 litres)")
    }

    @Test("text: --help, usage errors exit 2 and change nothing, an edit outside the text exits 1 with a typed error")
    func errorsAndHelp() throws {
        let (ch, oh, _) = try runListsync(["text", "--help"])
        #expect(ch == 0 && oh.contains("--at N") && oh.contains("Unicode scalars"), "\(oh)")
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let device = dir.path + "/device"
        let (cc, oc, ec) = try runListsync(["create", "--replica", device, "notes", "--json"])
        try #require(cc == 0, "\(ec) \(oc)")
        let doc = try #require((try JSONSerialization.jsonObject(with: Data(oc.utf8)) as? [String: Any])?["id"] as? String)
        let (ci, oi, ei) = try runListsync(["insert", "--replica", device, doc, "0.0", "milk"])
        try #require(ci == 0, "\(ei) \(oi)")
        for bad in [["--insert", "x"], ["--at", "-1", "--insert", "x"], ["--at", "zero", "--insert", "x"],
                    ["--at", "0"], ["--at", "0", "--delete", "many"]] {
            let (code, out, err) = try runListsync(["text", "--replica", device, doc, "0.0", "notes"] + bad)
            #expect(code == 2, "\(bad): \(code) \(out) \(err)")
            #expect(err.contains("nothing was changed"), "\(bad): \(err)")
        }
        let (co, oo, eo) = try runListsync(["text", "--replica", device, doc, "0.0", "notes", "--at", "3", "--insert", "x"])
        #expect(co == 1, "\(co) \(oo) \(eo)")
        #expect((eo + oo).contains("outside the text"), "\(eo) \(oo)")
        let (cs, os, es) = try runListsync(["show", "--replica", device, doc, "--json"])
        #expect(cs == 0, "\(es)")
        #expect(try FieldProcessTests.fields(os)[0][0]["notes"] == nil, "nothing was written")
        // The same edit at 0 works, and shows as a string.
        let (cg, og, eg) = try runListsync(["text", "--replica", device, doc, "0.0", "notes", "--at", "0", "--insert", "x👍🏽"])
        #expect(cg == 0, "\(eg) \(og)")
        #expect(try FieldProcessTests.deviceFields(device, doc)["notes"] as? String == "x👍🏽")
        let (cd, od, ed) = try runListsync(["text", "--replica", device, doc, "0.0", "notes", "--at", "1", "--delete", "1"])
        #expect(cd == 0, "\(ed) \(od)")
        #expect(try FieldProcessTests.deviceFields(device, doc)["notes"] as? String == "x🏽")
    }
}
