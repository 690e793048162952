import Foundation
import ListSyncServer
import ListSyncTestTraits
import Testing

/// The command line's rough edges (issue 44): usage errors exit 2 before anything connects,
/// messages name the real problem, edits that change nothing say so, values come from a file or
/// standard input. Each runs the built `listsync` binary as a process; the client commands work
/// on a device copy (`--replica DIR`) where they need a document, so no daemon is started but for
/// the busy-port case.
@Suite("The command line: exit codes, messages, values from files", .ownThread, .serialized, .hangGuard)
struct CommandLineEdgeTests {
    /// A device copy in a fresh folder with the document "board" (sections "A" and "B"; "milk" at 0.0).
    final class Board {
        let folder = TemporaryFolder()
        var replica: String { folder.path + "/copy" }

        init() throws {
            try expectOK(["create", "--replica", replica, "board", "--sections", "A,B"])
            try expectOK(["insert", "--replica", replica, "board", "0.0", "milk"])
        }

        /// Runs a client command on the copy: (exit status, stdout, stderr).
        func run(_ args: [String], stdin: FileHandle? = FileHandle.nullDevice) throws -> (Int32, String, String) {
            try runListsync([args[0], "--replica", replica] + args.dropFirst(), stdin: stdin)
        }

        /// The rows of section `s`, from `show --json`.
        func rows(_ s: Int) throws -> [String] {
            let (code, out, err) = try run(["show", "board", "--json"])
            guard code == 0 else { throw DaemonTestError("show exited \(code): \(err)") }
            let object = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
            let sections = object?["sections"] as? [[String: Any]] ?? []
            return (sections[s]["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        }

        deinit { folder.remove() }
    }

    static func expectOK(_ args: [String]) throws {
        let (code, out, err) = try runListsync(args, stdin: FileHandle.nullDevice)
        guard code == 0 else { throw DaemonTestError("\(args) exited \(code): \(out) \(err)") }
    }

    /// A key file (32 bytes, 0600) in `folder`, for commands that must get past reading the key.
    static func keyFile(in folder: TemporaryFolder) -> String {
        let path = folder.path + "/key"
        FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o600])
        return path
    }

    @Test("malformed index paths (abc, 1.2.3, -1.0, 1.) are usage errors: exit 2, nothing done")
    func malformedPathsExit2() throws {
        let board = try Board()
        for bad in ["abc", "1.2.3", "-1.0", "1.", ""] {
            for args in [["insert", "board", bad, "x"], ["delete", "board", bad], ["rename", "board", bad, "x"],
                         ["move", "board", bad, "0.0"], ["move", "board", "0.0", bad]] {
                let (code, _, err) = try board.run(args)
                #expect(code == 2, "\(args): \(err)")
                #expect(err.contains("is not an index path"), "\(args): \(err)")
            }
        }
        #expect(try board.rows(0) == ["milk"])
    }

    @Test("watch --count abc is a usage error (exit 2) before connecting")
    func watchCountExit2() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let key = Self.keyFile(in: folder)
        for bad in ["abc", "0", "-3"] {
            // Port 1: nothing listens; a usage error must come before any attempt to connect.
            let (code, _, err) = try runListsync(["watch", "board", "--count", bad, "--daemon", "127.0.0.1:1", "--key-file", key],
                                                 stdin: FileHandle.nullDevice)
            #expect(code == 2, "--count \(bad): \(err)")
            #expect(err.contains("--count must be a positive number"), "\(err)")
        }
    }

    @Test("a --key-file that names a folder (a shared one, 1777) says it is a folder, not 'chmod 600'")
    func keyFileIsAFolder() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let shared = folder.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        chmod(shared, 0o1777)
        let (code, _, err) = try runListsync(["status", "--daemon", "127.0.0.1:1", "--key-file", shared], stdin: FileHandle.nullDevice)
        #expect(code == 1)
        #expect(err.contains("is a folder, not a file"), "\(err)")
        #expect(!err.contains("chmod"), "\(err)")
        let (credCode, _, credErr) = try runListsync(["status", "--daemon", "127.0.0.1:1", "--credential", shared], stdin: FileHandle.nullDevice)
        #expect(credCode == 1 && credErr.contains("credential file \(shared) is a folder, not a file") && !credErr.contains("chmod"), "\(credErr)")
        let (serveCode, _, serveErr, killed) = try runListsync(["serve", "--data", folder.path + "/data", "--listen", "127.0.0.1:0",
                                                                 "--key-file", shared], atMost: livenessGuardSeconds)
        #expect(!killed && serveCode == 1, "\(serveErr)")
        #expect(serveErr.contains("is a folder, not a file") && !serveErr.contains("chmod"), "\(serveErr)")
    }

    @Test("an unknown command points to `listsync --help`, not to its own help")
    func unknownCommandHelp() throws {
        let (code, _, err) = try runListsync(["frobnicate", "x"], stdin: FileHandle.nullDevice)
        #expect(code == 2)
        #expect(err.contains("unknown command 'frobnicate'"), "\(err)")
        #expect(err.contains("Run `listsync --help`"), "\(err)")
        #expect(!err.contains("frobnicate --help"), "\(err)")
        // A known command's usage error still points to that command's help.
        let (known, _, knownErr) = try runListsync(["insert", "--no-such-option"], stdin: FileHandle.nullDevice)
        #expect(known == 2 && knownErr.contains("listsync insert --help"), "\(knownErr)")
    }

    @Test("export to a path that cannot be written says why in words, not NSCocoaErrorDomain")
    func exportToBadPath() throws {
        let board = try Board()
        let missing = board.folder.path + "/no/such/folder/board.json"
        let (code, _, err) = try board.run(["export", "board", missing])
        #expect(code == 1)
        #expect(err.contains("cannot write \(missing): the folder \(board.folder.path)/no/such/folder does not exist"), "\(err)")
        #expect(!err.contains("NSCocoaErrorDomain") && !err.contains("Error Domain"), "\(err)")
        let (folderCode, _, folderErr) = try board.run(["export", "board", board.folder.path])
        #expect(folderCode == 1)
        #expect(folderErr.contains("it is a folder"), "\(folderErr)")
        // A good path still works.
        let (ok, _, okErr) = try board.run(["export", "board", board.folder.path + "/board.json"])
        #expect(ok == 0, "\(okErr)")
    }

    @Test("insert into a section that does not exist says so, with how many there are (not '0 rows')")
    func missingSection() throws {
        let board = try Board()
        let (code, _, err) = try board.run(["insert", "board", "9.9", "x"])
        #expect(code == 1)
        #expect(err.contains("section 9 does not exist: the document has 2 sections (0 to 1)"), "\(err)")
        #expect(!err.contains("0 rows"), "\(err)")
        for args in [["delete", "board", "5.0"], ["rename", "board", "2", "x"], ["move", "board", "0.0", "7.0"]] {
            let (c, _, e) = try board.run(args)
            #expect(c == 1 && e.contains("does not exist: the document has 2 sections"), "\(args): \(e)")
        }
        let (sectionCode, _, sectionErr) = try board.run(["insert", "board", "5", "C"])
        #expect(sectionCode == 1 && sectionErr.contains("a section can be inserted at 0 to 2, not 5"), "\(sectionErr)")
        #expect(try board.rows(0) == ["milk"])
    }

    @Test("move to where it already is says nothing changed, and sends nothing")
    func moveToItself() throws {
        let board = try Board()
        let before = try waiting(board)
        let (code, out, err) = try board.run(["move", "board", "0.0", "0.0"])
        #expect(code == 0, "\(err)")
        #expect(out.contains("nothing changed") && out.contains("0.0 is already at 0.0"), "\(out)")
        #expect(!out.hasPrefix("moved"), "\(out)")
        #expect(try waiting(board) == before, "no edit is made")
        // A row that does not exist is still refused.
        let (missing, _, missingErr) = try board.run(["move", "board", "0.5", "0.5"])
        #expect(missing == 1, "\(missingErr)")
        #expect(try board.rows(0) == ["milk"])
    }

    /// Edits of the copy that wait for the daemon (`status --replica --json`).
    private func waiting(_ board: Board) throws -> Int {
        let (code, out, err) = try board.run(["status", "--json"])
        guard code == 0 else { throw DaemonTestError("status exited \(code): \(err)") }
        let object = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        return object?["waiting"] as? Int ?? -1
    }

    @Test("status --replica does not claim 'offline': it says it does not connect, and what waits")
    func statusOnReplica() throws {
        let board = try Board()
        let (code, out, err) = try board.run(["status"])
        #expect(code == 0, "\(err)")
        #expect(!out.contains("offline"), "\(out)")
        #expect(out.contains("not connected (status --replica reads this device's copy only"), "\(out)")
        #expect(out.contains("edit(s) made here wait for the daemon"), "\(out)")
        let (_, json, _) = try board.run(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(object?["connected"] as? Bool == false, "\(json)")
    }

    @Test("simulate refuses --ring, --roam, --lose-daemon, --hide-daemon, --sends-ahead, --retire-after without their prerequisite")
    func simulatePrerequisites() throws {
        let cases: [([String], String)] = [
            (["--ring"], "--ring needs --daemons 3"),
            (["--daemons", "2", "--ring"], "--ring needs --daemons 3"),
            (["--roam", "20"], "--roam needs --daemons 2"),
            (["--lose-daemon"], "--lose-daemon needs --compact-after"),
            (["--compact-after", "10", "--lose-daemon"], "--lose-daemon needs --daemons 2"),
            (["--hide-daemon"], "--hide-daemon needs --compact-after"),
            (["--compact-after", "10", "--hide-daemon"], "--hide-daemon needs --daemons 2"),
            (["--sends-ahead"], "--sends-ahead needs --compact-after"),
            (["--retire-after", "5"], "--retire-after needs --compact-after"),
            (["--compact-dead-share", "0.2"], "--compact-dead-share needs --compact-after"),
            (["--compact-dead-floor", "1K"], "--compact-dead-floor needs --compact-after"),
            (["--compact-after", "10", "--compact-dead-share", "2"], "--compact-dead-share must be from 0 to 1"),
            (["--compact-after", "10", "--compact-dead-floor", "12Q"], "--compact-dead-floor must be a number of bytes"),
        ]
        for (args, message) in cases {
            let (code, out, err) = try runListsync(["simulate", "--ops", "5"] + args, stdin: FileHandle.nullDevice)
            #expect(code == 2, "\(args): \(out) \(err)")
            #expect(err.contains(message), "\(args): \(err)")
        }
        // With the prerequisite, the same options run.
        let (ok, _, okErr) = try runListsync(["simulate", "--ops", "20", "--daemons", "3", "--ring", "--roam", "20", "--quiet"],
                                             stdin: FileHandle.nullDevice)
        #expect(ok == 0, "\(okErr)")
        // A hidden daemon merged back: the peer modes print the copies parted (none).
        let (hid, hidOut, hidErr) = try runListsync(["simulate", "--ops", "60", "--daemons", "2", "--compact-after", "10", "--hide-daemon",
                                                     "--seed", "420000"], stdin: FileHandle.nullDevice)
        #expect(hid == 0, "\(hidErr)")
        #expect(hidOut.contains("copies parted: 0, 1 copies merged back"), "\(hidOut)")
    }

    @Test("simulate --cluster N runs the cluster's machines, its runs replay from their command, and its bad options are usage errors")
    func simulateCluster() throws {
        let (code, out, err) = try runListsync(["simulate", "--cluster", "3", "--ops", "60", "--runs", "3", "--json"], stdin: FileHandle.nullDevice)
        #expect(code == 0, "\(err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        let runs = try #require(object["runs"] as? [[String: Any]])
        #expect(runs.count == 3 && runs.allSatisfy { $0["passed"] as? Bool == true }, "\(out)")
        #expect(runs.reduce(0) { $0 + ($1["acknowledged"] as? Int ?? 0) } > 0, "\(out)")
        let replay = try #require(runs.first?["replay"] as? String)
        let (again, againOut, againErr) = try runListsync(Array(replay.split(separator: " ").dropFirst().map(String.init)), stdin: FileHandle.nullDevice)
        #expect(again == 0 && againOut.contains("seed 1: passed"), "\(replay): \(againOut) \(againErr)")
        for (args, message) in [(["--cluster", "0"], "--cluster must be a whole number in 1...16"),
                                (["--cluster", "3", "--ring"], "unknown option '--ring' with --cluster"),
                                (["--cluster", "3", "--loss", "100"], "--loss must be a whole number in 0...99")] {
            let (bad, badOut, badErr) = try runListsync(["simulate"] + args, stdin: FileHandle.nullDevice)
            #expect(bad == 2, "\(args): \(badOut) \(badErr)")
            #expect(badErr.contains(message), "\(args): \(badErr)")
        }
    }

    @Test("simulate --compact-dead-share/--compact-dead-floor: daemons compact by dead bytes long before the operation count, and a run replays with the same flags")
    func simulateDeadBytes() throws {
        func compactions(_ extra: [String]) throws -> (Int, [String]) {
            let (code, out, err) = try runListsync(["simulate", "--ops", "150", "--runs", "3", "--json", "--field-writes", "40",
                                                    "--compact-after", "1000000"] + extra, stdin: FileHandle.nullDevice)
            #expect(code == 0, "\(extra): \(err)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
            let runs = try #require(object["runs"] as? [[String: Any]])
            #expect(runs.allSatisfy { $0["passed"] as? Bool == true }, "\(extra)")
            return (runs.reduce(0) { $0 + ($1["compactions"] as? Int ?? 0) }, runs.compactMap { $0["replay"] as? String })
        }
        let (byBytes, replays) = try compactions(["--compact-dead-share", "10%", "--compact-dead-floor", "1K"])
        #expect(byBytes > 0, "a tenth of the document dead and 1 KiB: daemons compact")
        #expect(replays.allSatisfy { $0.contains("--compact-dead-share 0.1") && $0.contains("--compact-dead-floor 1024") }, "\(replays)")
        let (off, offReplays) = try compactions(["--compact-dead-share", "off"])
        #expect(off == 0, "only after a million operations: none")
        #expect(offReplays.allSatisfy { $0.contains("--compact-dead-share off") }, "\(offReplays)")
    }

    @Test("simulate --snapshot-log-bytes: the daemons snapshot their logs past it by the host's policy (none past a size no log reaches), a run replays with it; 0 is a usage error")
    func simulateSnapshotLogBytes() throws {
        func snapshots(_ bytes: String) throws -> (Int, [String]) {
            let (code, out, err) = try runListsync(["simulate", "--ops", "100", "--runs", "3", "--json", "--crashes", "1",
                                                    "--snapshot-log-bytes", bytes], stdin: FileHandle.nullDevice)
            #expect(code == 0, "\(bytes): \(err)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
            let runs = try #require(object["runs"] as? [[String: Any]])
            #expect(runs.allSatisfy { $0["passed"] as? Bool == true }, "\(bytes)")
            return (runs.reduce(0) { $0 + ($1["logSnapshots"] as? Int ?? 0) }, runs.compactMap { $0["replay"] as? String })
        }
        let (small, replays) = try snapshots("512")
        #expect(small >= 3, "512-byte threshold: every run's daemon snapshots (\(small))")
        #expect(replays.allSatisfy { $0.contains("--snapshot-log-bytes 512") }, "\(replays)")
        let (none, _) = try snapshots("1G")
        #expect(none == 0, "no log of 100 edits reaches 1 GiB")
        let (code, _, err) = try runListsync(["simulate", "--snapshot-log-bytes", "0"], stdin: FileHandle.nullDevice)
        #expect(code == 2 && err.contains("--snapshot-log-bytes"), "\(code): \(err)")
    }

    @Test("simulate --json prints one JSON object: each run and the totals")
    func simulateJSON() throws {
        let (code, out, err) = try runListsync(["simulate", "--ops", "20", "--runs", "2", "--json"], stdin: FileHandle.nullDevice)
        #expect(code == 0, "\(err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        let runs = try #require(object["runs"] as? [[String: Any]])
        #expect(runs.map { $0["seed"] as? String } == ["1", "2"])
        #expect(runs.allSatisfy { $0["passed"] as? Bool == true })
        #expect(object["passed"] as? Int == 2 && object["failed"] as? Int == 0)
    }

    @Test("serve on a port in use says 'already in use' and creates nothing (no errno 98, no folder)")
    func servePortInUse() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let first = try DaemonProcess(data: folder.path + "/first")
        defer { first.terminate() }
        let second = folder.path + "/second"
        let (code, _, err, killed) = try runListsync(["serve", "--data", second, "--listen", first.address], atMost: livenessGuardSeconds)
        #expect(!killed && code == 1, "\(err)")
        #expect(err.contains("\(first.address) is already in use"), "\(err)")
        #expect(!err.contains("errno"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: second), "the data folder is not created")
    }

    @Test("a daemon started in the library on a port in use says 'already in use', not errno 98")
    func daemonStartPortInUse() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let first = try DaemonProcess(data: folder.path + "/first")
        defer { first.terminate() }
        var config = DaemonConfiguration(dataFolder: folder.path + "/second")
        config.listenPort = first.port
        let daemon = Daemon(configuration: config)
        do {
            try await daemon.start()
            await daemon.stop()
            Issue.record("the second daemon started on a port in use")
        } catch {
            #expect(error.description.contains("127.0.0.1:\(first.port): the address is already in use"), "\(error)")
            #expect(!error.description.contains("errno"), "\(error)")
        }
    }

    @Test("--value-file FILE and --value-file - (standard input) give insert and rename their value")
    func valueFromFileOrStdin() throws {
        let board = try Board()
        let file = board.folder.path + "/value.txt"
        let text = "eggs, 12\n\"free range\" ✓\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let (code, _, err) = try board.run(["insert", "board", "0.1", "--value-file", file])
        #expect(code == 0, "\(err)")
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(Data("bread\n".utf8))
        try pipe.fileHandleForWriting.close()
        let (stdinCode, _, stdinErr) = try board.run(["insert", "board", "0.2", "--value-file", "-"], stdin: pipe.fileHandleForReading)
        #expect(stdinCode == 0, "\(stdinErr)")
        let rename = Pipe()
        rename.fileHandleForWriting.write(Data("oat milk".utf8))
        try rename.fileHandleForWriting.close()
        let (renameCode, _, renameErr) = try board.run(["rename", "board", "0.0", "--value-file", "-"], stdin: rename.fileHandleForReading)
        #expect(renameCode == 0, "\(renameErr)")
        // One trailing newline dropped; the rest kept as it is.
        #expect(try board.rows(0) == ["oat milk", "eggs, 12\n\"free range\" ✓", "bread"])

        // Both TEXT and a file, neither, or a file that is not there: usage errors, nothing done.
        for args in [["insert", "board", "0.0", "x", "--value-file", file], ["insert", "board", "0.0"],
                     ["insert", "board", "0.0", "--value-file", board.folder.path + "/none"],
                     ["insert", "board", "0.0", "--value-file", board.folder.path],
                     ["rename", "board", "0.0", "x", "--value-file", file]] {
            let (c, _, e) = try board.run(args)
            #expect(c == 2, "\(args): \(e)")
        }
        #expect(try board.rows(0).count == 3)
    }

    @Test("the sync command `device add` prints for the device, run as printed, fetches the document")
    func deviceHintFetches() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let daemon = try DaemonProcess(data: folder.path + "/data")
        defer { daemon.terminate() }
        let (made, _, madeErr) = try daemon.run(["create", "board", "--sections", "A"])
        #expect(made == 0, "\(madeErr)")
        let credential = folder.path + "/phone.credential"
        let (code, out, err) = try runListsync(["device", "add", "phone", "--docs", "board", "--data", daemon.data, "--out", credential],
                                               stdin: FileHandle.nullDevice)
        #expect(code == 0, "\(err)")
        let line = try #require(out.split(separator: "\n").first { $0.contains("listsync sync --replica DIR") }, "\(out)")
        let replica = folder.path + "/lists"
        let printed = line.split(separator: " ").map(String.init).drop { $0 != "listsync" }.dropFirst()
        let args = printed.map { $0 == "DIR" ? replica : $0 == "HOST:PORT" ? daemon.address : $0 }
        let (synced, syncOut, syncErr) = try runListsync(Array(args), stdin: FileHandle.nullDevice)
        #expect(synced == 0, "\(args): \(syncOut) \(syncErr)")
        let (shown, showOut, showErr) = try runListsync(["show", "--replica", replica, "board"], stdin: FileHandle.nullDevice)
        #expect(shown == 0 && showOut.contains("[0] A"), "the document was fetched: \(showOut) \(showErr)")
    }
}
