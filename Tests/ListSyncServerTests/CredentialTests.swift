import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncCrypto
import ListSyncServer
import ListSyncTCP
import ListSyncTestTraits
import Testing

/// Credentials per device against the real `listsync serve`, through the real CLI
/// (Docs/Security.md, "Credentials").
@Suite("Credentials: a credential per device, scoped, read-only, expiring, revocable", .ownThread, .serialized, .hangGuard)
struct CredentialTests {
    /// `listsync device ARGS --data DATA`.
    static func device(_ daemon: DaemonProcess, _ args: [String]) throws -> (Int32, String, String) {
        try runListsync(["device"] + args + ["--data", daemon.data])
    }

    /// Adds a device; returns its credential file.
    static func add(_ daemon: DaemonProcess, _ name: String, _ extra: [String] = [], in dir: TemporaryFolder) throws -> String {
        let file = dir.path + "/\(name).credential"
        let (code, out, err) = try device(daemon, ["add", name, "--out", file] + extra)
        guard code == 0 else { throw DaemonTestError("device add \(name): \(err) \(out)") }
        return file
    }

    /// A client command with a credential: (exit status, stdout, stderr).
    static func with(_ credential: String, _ daemon: DaemonProcess, _ args: [String]) throws -> (Int32, String, String) {
        try runListsync(args + ["--daemon", daemon.address, "--credential", credential])
    }

    /// Creates a document with the daemon's key; returns its id.
    static func create(_ daemon: DaemonProcess, _ name: String) throws -> String {
        guard let created = try daemon.json(["create", name]) as? [String: Any], let id = created["id"] as? String else {
            throw DaemonTestError("create \(name) printed no id")
        }
        return id
    }

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
    }

    @Test("a scoped device sees only its documents; another one is answered exactly as one that does not exist; it cannot create")
    func scoped() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        _ = try daemon.json(["create", "shared"])
        let secretID = try Self.create(daemon, "secret")
        _ = try daemon.json(["insert", "shared", "0.0", "milk"])
        let cred = try Self.add(daemon, "phone", ["--docs", "shared"], in: dir)
        #expect(Self.mode(cred) == 0o600)
        let (code, out, err) = try Self.with(cred, daemon, ["docs", "--json"])
        #expect(code == 0, "\(err)")
        #expect(out.contains("shared") && !out.contains("secret"), "\(out)")
        #expect(try Self.with(cred, daemon, ["show", "shared"]).1.contains("milk"))
        // Out of scope, and absent: the same answer (by id, so no name lookup differs).
        let hidden = try Self.with(cred, daemon, ["show", secretID])
        let absent = try Self.with(cred, daemon, ["show", "00112233445566778899aabbccddeeff"])
        #expect(hidden.0 != 0 && absent.0 != 0)
        #expect(hidden.2.replacingOccurrences(of: secretID, with: "ID") == absent.2.replacingOccurrences(of: "00112233445566778899aabbccddeeff", with: "ID"),
                "\(hidden.2) vs \(absent.2)")
        let create = try Self.with(cred, daemon, ["create", "mine"])
        #expect(create.0 != 0 && create.2.contains("forbidden"), "\(create)")
        #expect(try Self.with(cred, daemon, ["insert", "shared", "0.1", "eggs"]).0 == 0)
        #expect(try table(daemon, "shared") == [["milk", "eggs"]])
        // Status is the operator's.
        #expect(try Self.with(cred, daemon, ["status"]).0 != 0)
        // A credential others can read is refused before it is used.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: cred)
        let open = try Self.with(cred, daemon, ["docs"])
        #expect(open.0 != 0 && open.2.contains("chmod 600"), "\(open)")
    }

    @Test("a read-only device reads and is refused every edit; nothing changes")
    func readOnly() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        _ = try daemon.json(["create", "board"])
        _ = try daemon.json(["insert", "board", "0.0", "a"])
        let cred = try Self.add(daemon, "tv", ["--read-only"], in: dir)
        #expect(try Self.with(cred, daemon, ["show", "board"]).1.contains("a"))
        let insert = try Self.with(cred, daemon, ["insert", "board", "0.1", "b"])
        #expect(insert.0 != 0 && insert.2.contains("read-only"), "\(insert)")
        #expect(try Self.with(cred, daemon, ["create", "x"]).0 != 0)
        #expect(try table(daemon, "board") == [["a"]])
    }

    @Test("an expired credential is refused, and a connection open at expiry is closed")
    func expiry() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let doc = try Self.create(daemon, "w")
        let cred = try Self.add(daemon, "temp", ["--expires", "3s"], in: dir)
        let watch = try Self.startWatch(cred, daemon, doc)
        defer { if watch.isRunning { watch.terminate() } }
        #expect(eventually(8) { !watch.isRunning }, "the watch outlived its credential")
        let after = try Self.with(cred, daemon, ["docs"])
        #expect(after.0 != 0 && after.2.contains("expired"), "\(after)")
    }

    @Test("revoked during a watch: the watch ends with the reason, and the device is refused afterwards")
    func revokedMidWatch() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let doc = try Self.create(daemon, "w")
        let cred = try Self.add(daemon, "lost-phone", in: dir)
        let keep = try Self.add(daemon, "laptop", in: dir)
        let watch = try Self.startWatch(cred, daemon, doc)
        defer { if watch.isRunning { watch.terminate() } }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(watch.isRunning)
        let (code, out, _) = try Self.device(daemon, ["revoke", "lost-phone"])
        #expect(code == 0, "\(out)")
        // The watch ends by itself (it never would without the revocation); how soon is the
        // machine's load as much as the daemon's (within a second alone), so not the verdict.
        let revokedAt = Date()
        #expect(eventually(60) { !watch.isRunning })
        print("revokedMidWatch: the watch ended \(Date().timeIntervalSince(revokedAt)) s after the revocation")
        let after = try Self.with(cred, daemon, ["docs"])
        #expect(after.0 != 0 && after.2.contains("revoked"), "\(after)")
        // Another device is untouched.
        #expect(try Self.with(keep, daemon, ["docs"]).0 == 0)
        let list = try Self.device(daemon, ["list"]).1
        #expect(list.contains("lost-phone") && list.contains("revoked") && list.contains("laptop"), "\(list)")
    }

    @Test("a forged claim and a credential of another daemon fail the handshake")
    func forgedAndForeign() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/a")
        defer { daemon.terminate() }
        let other = try DaemonProcess(data: dir.path + "/b")
        defer { other.terminate() }
        _ = try daemon.json(["create", "a1"])
        // A read-only credential turned writable: the claims change, the secret does not.
        let cred = try Self.add(daemon, "tv", ["--read-only"], in: dir)
        let original = try Credential(fileContents: [UInt8](try Data(contentsOf: URL(fileURLWithPath: cred))))
        var claims = original.claims
        claims.readOnly = false
        let forged = Credential(claims: claims, masterKey: [UInt8](repeating: 0, count: 32))
        let forgedFile = dir.path + "/forged.credential"
        var bytes = forged.fileContents()
        // Keep the original secret with the changed claims.
        let text = String(decoding: bytes, as: UTF8.self)
            .replacingOccurrences(of: Hex.encode(forged.secret), with: Hex.encode(original.secret))
        bytes = Array(text.utf8)
        #expect(FileManager.default.createFile(atPath: forgedFile, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        let f = try Self.with(forgedFile, daemon, ["insert", "a1", "0.0", "x"])
        #expect(f.0 != 0 && f.2.contains("authentication failed"), "\(f)")
        // A credential issued by daemon B, used on A.
        let foreign = dir.path + "/foreign.credential"
        #expect(try runListsync(["device", "add", "stranger", "--out", foreign, "--data", other.data]).0 == 0)
        let g = try Self.with(foreign, daemon, ["docs"])
        #expect(g.0 != 0 && g.2.contains("authentication failed"), "\(g)")
        #expect(try table(daemon, "a1") == [[]])
    }

    @Test("a device client whose credential is revoked stops with accessEnded and keeps its edits")
    func syncClientRevoked() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let file = try Self.add(daemon, "tablet", in: dir)
        let credential = try Credential(fileContents: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
        let server = SyncClient.Server(host: "127.0.0.1", port: daemon.port, credential: credential,
                                       backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(200)))
        let client = try SyncClient(folder: dir.path + "/device", server: server)
        let doc = try await client.create(name: "notes")
        _ = try await client.edit(doc) { (d: inout ListDocument) throws(ListError) in try d.insertSection(at: 0, string: "s") }
        await client.start()
        try await client.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(try Self.device(daemon, ["revoke", "tablet"]).0 == 0)
        var ended = false
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while Date() < deadline {
            if case .failed(.accessEnded(.revoked, _)) = await client.status { ended = true; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let status = await client.status
        #expect(ended, "\(status)")
        // Edits are still saved on the device.
        _ = try await client.edit(doc) { (d: inout ListDocument) throws(ListError) in try d.insertSection(at: 1, string: "t") }
        let after = await client.status
        #expect(after.description.contains("revoked"), "\(after)")
        await client.close()
    }

    static func startWatch(_ credential: String, _ daemon: DaemonProcess, _ doc: String) throws -> Process {
        guard let binary = listsyncBinary() else { throw DaemonTestError("no listsync binary") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["watch", doc, "--daemon", daemon.address, "--credential", credential]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }
}
