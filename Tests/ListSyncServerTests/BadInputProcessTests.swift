#if canImport(Glibc)
import Foundation
import ListCRDT
import ListStore
@testable import ListSyncClient
@testable import ListSyncServer
import ListSyncTestSupport
import ListSyncTestTraits
import Synchronization
import Testing

/// The real `listsync` binary, run in `folder` with `args`, its environment pointed away from any
/// real daemon or data folder (`HOME` and the data folder in `folder`, the daemon on port 1 where
/// nothing listens): how it ended. A process still running after the liveness guard is killed
/// (`killed`), which is a hang, not a crash.
struct CLIRun {
    var signaled: Bool
    var status: Int32
    var stdout: String
    var stderr: String
    var killed: Bool
    /// Exited by itself (not by a signal), as a shell sees it: an exit code under 128.
    var exitedNormally: Bool { !signaled && status < 128 }

    static func run(_ args: [String], in folder: String) throws -> CLIRun {
        let environment = ["HOME": folder, "PATH": "/usr/bin:/bin", "LISTSYNC_DATA": folder + "/data",
                           "LISTSYNC_DAEMON": "127.0.0.1:1", "LISTSYNC_KEY_FILE": folder + "/data/key"]
        let p = try BackgroundListsync(args, environment: environment, currentDirectory: folder)
        let status = p.stop(within: livenessGuardSeconds)
        return CLIRun(signaled: !p.killed && p.process.terminationReason == .uncaughtSignal, status: status,
                      stdout: p.stdout.text, stderr: p.stderr.text, killed: p.killed)
    }
}

/// Bad input to the command line and to `SyncClient` is an error that says what was wrong, never a
/// crash (issue 44): odd folder names, a replica file cut short, damaged data files.
@Suite("Bad input: odd folder names and damaged files are errors, never crashes", .ownThread, .serialized, .hangGuard)
struct BadInputProcessTests {
    /// Folder names a user may type: one character (SIGILL before), relative, with a trailing
    /// slash, spaces, unicode.
    static let oddNames = ["A", "x", "A/", ".", "./A", "./b/", "c//", "two words", "lístas ✓", "ü", "a/b/c"]

    @Test("--replica with odd folder names (one character, ., ./A, A/, spaces, unicode): create, insert and show work, and the folder is where the name says", arguments: oddNames)
    func replicaFolderNames(name: String) throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let create = try CLIRun.run(["create", "--replica", name, "board", "--sections", "a,b"], in: dir.path)
        #expect(create.exitedNormally && create.status == 0, "create: \(create)")
        let insert = try CLIRun.run(["insert", "--replica", name, "board", "0.0", "milk"], in: dir.path)
        #expect(insert.status == 0 && !insert.signaled, "insert: \(insert)")
        let show = try CLIRun.run(["show", "--replica", name, "board"], in: dir.path)
        #expect(show.status == 0 && !show.signaled && show.stdout.contains("milk"), "show: \(show)")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/" + name + "/replica"), "no replica file in \(name)")
    }

    @Test("the folder above a path, from its text: one character, trailing and doubled slashes, the root")
    func parentOfPath() {
        let cases: [(String, String)] = [("A", ""), ("A/", ""), (".", ""), ("./A", "."), ("a/b/c", "a/b"), ("a/b/", "a"),
                                         ("c//", ""), ("/A", "/"), ("/", "/"), ("//x", "/"), ("/a//b", "/a"), ("", ""),
                                         ("lístas ✓/ü", "lístas ✓")]
        for (path, parent) in cases { #expect(DeviceFolder.parent(of: path) == parent, "\(path)") }
    }

    @Test("SyncClient(folder:) with odd folder names (trailing slash, spaces, unicode, one character, missing parents): made, used, opened again", arguments: ["A", "A/", "two words/", "lístas ✓", "x/y/ü//"])
    func syncClientFolderNames(name: String) async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let folder = dir.path + "/" + name
        let server = SyncClient.Server(host: "127.0.0.1", port: 1, key: Array(repeating: 7, count: 32))
        let client = try SyncClient(folder: folder, server: server)
        let doc = try await client.create(name: "board", sections: ["a"])
        _ = try await client.edit(doc) { (d: inout ListDocument) throws(ListError) in
            _ = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8))
        }
        await client.close()
        let again = try SyncClient(folder: folder, server: server)
        #expect(try await again.documents().map(\.id) == [doc])
        #expect(try await again.open(doc).document.totalItemCount == 1)
        await again.close()
    }

    @Test("a replica file cut to 5 hex digits is an error naming the file, through the binary and SyncClient; the file is left as it is")
    func truncatedReplicaFile() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let made = try CLIRun.run(["create", "--replica", "phone", "board"], in: dir.path)
        try #require(made.status == 0, "\(made)")
        let path = dir.path + "/phone/replica"
        let whole = try String(contentsOfFile: path, encoding: .utf8)
        let cut = String(whole.prefix(5))
        try Data(cut.utf8).write(to: URL(fileURLWithPath: path))
        let show = try CLIRun.run(["show", "--replica", "phone", "board"], in: dir.path)
        #expect(show.exitedNormally && show.status != 0, "\(show)")
        #expect(show.stderr.contains("phone/replica") && show.stderr.contains("16 hex digits"), "\(show.stderr)")
        let server = SyncClient.Server(host: "127.0.0.1", port: 1, key: Array(repeating: 7, count: 32))
        #expect { _ = try SyncClient(folder: dir.path + "/phone", server: server) } throws: { "\($0)".contains("phone/replica") }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == cut, "the file was changed")
    }

    /// A data folder with one device issued (its daemon stopped): the folder's path.
    static func folderWithDevice(_ dir: TemporaryFolder) throws -> String {
        let data = dir.path + "/data"
        let daemon = try DaemonProcess(data: data)
        let added = try runListsync(["device", "add", "phone", "--out", dir.path + "/phone.credential", "--data", data])
        daemon.terminate()
        try #require(added.0 == 0, "\(added)")
        return data
    }

    @Test("a devices file that does not parse: the daemon refuses to start, naming the file (it told every device its credential was revoked)")
    func damagedDevicesFile() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = try Self.folderWithDevice(dir)
        let path = data + "/devices.json"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        var config = DaemonConfiguration(dataFolder: data)
        config.listenPort = 0
        let daemon = Daemon(configuration: config)
        do {
            try await daemon.start()
            Issue.record("the daemon started with a damaged devices file")
            await daemon.stop()
        } catch {
            #expect("\(error)".contains(path), "\(error)")
        }
        let serve = try CLIRun.run(["serve", "--data", data, "--listen", "127.0.0.1:0"], in: dir.path)
        #expect(!serve.killed && serve.exitedNormally && serve.status != 0, "\(serve)")
        #expect((serve.stderr + serve.stdout).contains("devices.json"), "\(serve)")
    }

    @Test("a document whose snapshot is damaged: the daemon's log says so, once, naming the document")
    func damagedSnapshotLogged() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/data"
        let (id, _) = try await DaemonDestroyTests.stoppedWithDocument(data)
        try Data(repeating: 0x41, count: 64).write(to: URL(fileURLWithPath: data + "/documents/\(id)/snapshot-99"))
        let events = DaemonFaultTests.Events()
        var config = DaemonConfiguration(dataFolder: data)
        config.listenPort = 0
        config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        for _ in 0..<3 { await #expect(throws: DaemonError.self) { try await daemon.host(id) } }
        await daemon.stop()
        let logged = events.named("document could not be loaded")
        #expect(logged.count == 1 && logged.first?["document"] == id.description, "\(logged)")
        #expect(logged.first?["reason"]?.contains("snapshot-99") == true, "\(logged)")
    }

    @Test("DIR/web-address is written mode 0600, as every file of the data folder")
    func webAddressMode() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data", extra: ["--web", "127.0.0.1:0"])
        defer { daemon.terminate() }
        let path = dir.path + "/data/web-address"
        #expect(eventually(10) { FileManager.default.fileExists(atPath: path) })
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600, "mode \(String(mode, radix: 8))")
    }

    /// `rounds` honest GETs of `path` on `port`, each on a new connection: how many got an answer
    /// (any status; 0 when the connection was closed unanswered).
    static func answered(_ port: UInt16, _ path: String, rounds: Int) async throws -> Int {
        var n = 0
        for _ in 0..<rounds where try await AdminAccessTests.get(port, path, timeout: livenessGuardSeconds).0 != 0 { n += 1 }
        return n
    }

    /// Idle connections to `port` from `count` addresses of 127.0.`block`.x, held by the caller.
    static func idle(_ port: UInt16, block: Int, count: Int) -> [RawSocket] {
        (0..<count).compactMap { RawSocket(port: port, source: "127.0.\(block).\($0 + 1)") }
    }

    @Test("the admin port and the web view's port keep serving while 100 idle connections from 100 addresses are open (they stopped at 64): honest requests 14 of 14, counts not times")
    func httpPortsNotLocked() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let admin = try DaemonProcess(data: dir.path + "/admin", extra: ["--admin", "127.0.0.1:0"])
        defer { admin.terminate() }
        let adminPort = try AdminAccessTests.adminPort(admin)
        let web = try DaemonProcess(data: dir.path + "/web", extra: ["--web", "127.0.0.1:0"])
        defer { web.terminate() }
        let r = try #require(web.log.range(of: "web view:    http://127.0.0.1:"), "\(web.log)")
        let webPort = try #require(UInt16(web.log[r.upperBound...].prefix { $0.isNumber }))
        var held = Self.idle(adminPort, block: 7, count: 100)
        held += Self.idle(webPort, block: 8, count: 100)
        #expect(held.count == 200)
        let healthz = try await Self.answered(adminPort, "/healthz", rounds: 14)
        let page = try await Self.answered(webPort, "/", rounds: 14)
        #expect(healthz == 14 && page == 14, "/healthz \(healthz) of 14, the web page \(page) of 14")
        held = []
    }
}
#endif
