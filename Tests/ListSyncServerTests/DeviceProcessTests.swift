import Foundation
import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// The command line as a device (`--replica DIR`, `listsync sync`), as processes, with SIGKILL.
@Suite(.ownThread, .serialized)
struct DeviceProcessTests {
    /// The items of `doc` in the device copy `folder`, from `show --replica --json`.
    static func items(_ folder: String, _ doc: String) throws -> [[String]] {
        let (code, out, err) = try runListsync(["show", "--replica", folder, doc, "--json"])
        guard code == 0, let o = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any],
              let sections = o["sections"] as? [[String: Any]] else { throw DaemonTestError("show --replica: \(code) \(err) \(out)") }
        return sections.map { s in ((s["items"] as? [[String: Any]]) ?? []).map { $0["text"] as? String ?? "?" } }
    }

    @Test("offline edits from processes killed with SIGKILL: every saved edit reaches the daemon and a second device, none twice")
    func killedDeviceThenSync() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let keyFile = dir.path + "/key"
        _ = try KeyFile.readOrCreate(keyFile)
        let phone = dir.path + "/phone"
        let (c0, out0, err0) = try runListsync(["create", "--replica", phone, "board", "--json"])
        try #require(c0 == 0, "\(err0)")
        let created = try #require(try JSONSerialization.jsonObject(with: Data(out0.utf8)) as? [String: Any])
        let doc = try #require(created["id"] as? String)

        // The daemon is down: 24 edits, every fourth process killed at a random moment.
        var saved: [String] = []
        var killed: [String] = []
        var rng = SystemRandomNumberGenerator()
        guard let binary = listsyncBinary() else { throw DaemonTestError("no listsync binary") }
        for i in 0..<24 {
            let value = "v\(i)"
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = ["insert", "--replica", phone, doc, "0.0", value]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = Pipe()
            try p.run()
            if i % 4 == 3 {
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.03, using: &rng))
                kill(p.processIdentifier, SIGKILL)
            }
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if p.terminationReason == .exit && p.terminationStatus == 0 {
                #expect(text.contains("saved on this device"), "\(text)")
                saved.append(value)
            } else {
                killed.append(value)
            }
        }
        #expect(saved.count >= 18)
        let offline = try Self.items(phone, doc).flatMap { $0 }
        for v in saved { #expect(offline.filter { $0 == v }.count == 1, "\(v) in \(offline)") }

        // Syncing with no daemon fails with a clear message, and keeps everything.
        let (cDown, _, errDown) = try runListsync(["sync", "--replica", phone, "--daemon", "127.0.0.1:1", "--key-file", keyFile, "--timeout", "10"])
        #expect(cDown != 0)
        #expect(errDown.contains("cannot reach") && errDown.contains("saved on this device"), "\(errDown)")

        let daemon = try DaemonProcess(data: dir.path + "/daemon", extra: ["--key-file", keyFile])
        defer { daemon.terminate() }
        let common = ["--daemon", daemon.address, "--key-file", keyFile, "--timeout", "30"]
        let (c1, out1, err1) = try runListsync(["sync", "--replica", phone] + common)
        #expect(c1 == 0, "\(err1) \(out1)")
        #expect(out1.contains("up to date"), "\(out1)")
        let laptop = dir.path + "/laptop"
        let (c2, out2, err2) = try runListsync(["sync", "--replica", laptop, doc] + common)
        #expect(c2 == 0, "\(err2) \(out2)")

        let onPhone = try Self.items(phone, doc)
        let onLaptop = try Self.items(laptop, doc)
        let onDaemon = try table(daemon, doc)
        #expect(onLaptop == onPhone)
        #expect(onDaemon == onPhone)
        let all = onDaemon.flatMap { $0 }
        for v in saved { #expect(all.filter { $0 == v }.count == 1, "\(v) in \(all)") }
        for v in killed { #expect(all.filter { $0 == v }.count <= 1, "\(v) in \(all)") }
        #expect(Set(all).isSubset(of: Set(saved + killed)))

        // A second sync has nothing to do; the laptop's edit reaches the phone.
        let (c3, out3, _) = try runListsync(["insert", "--replica", laptop, doc, "0.0", "from-laptop"])
        #expect(c3 == 0 && out3.contains("1 edit(s) wait"), "\(out3)")
        #expect(try runListsync(["sync", "--replica", laptop] + common).0 == 0)
        #expect(try runListsync(["sync", "--replica", phone] + common).0 == 0)
        #expect(try Self.items(phone, doc).flatMap { $0 }.first == "from-laptop")
    }

    @Test("--replica with a relative folder (a bare name, or one under missing folders) works from the working folder, no crash")
    func relativeReplicaFolder() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let binary = try #require(listsyncBinary())
        // A one-letter name crashed Foundation's deletingLastPathComponent on Linux.
        for folder in ["p", "phone", "lists/more/laptop"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = ["create", "--replica", folder, "board"]
            p.currentDirectoryURL = URL(fileURLWithPath: dir.path)
            let out = Pipe(), err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let problem = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationReason == .exit && p.terminationStatus == 0, "\(folder): \(text) \(problem.prefix(300))")
            #expect(FileManager.default.fileExists(atPath: dir.path + "/" + folder), "\(folder)")
        }
    }
}
