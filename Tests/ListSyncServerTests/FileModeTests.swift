import Foundation
import ListStore
import ListSyncHTTP
import ListSyncTCP
@testable import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// The data folder and the key file on disk: modes whatever the umask, and refusals of folders and
/// keys others can write to (Docs/Security.md, "Files").
@Suite("Files: modes and refusals", .ownThread, .serialized, .hangGuard)
struct FileModeTests {
    /// Every folder and file under `root`, with its permission bits (`lstat`: links as links).
    static func modes(under root: String) -> [(path: String, mode: UInt32, folder: Bool)] {
        var out: [(String, UInt32, Bool)] = []
        let items = [""] + ((FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? [])
        for rel in items {
            let path = rel.isEmpty ? root : root + "/" + rel
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            out.append((path, UInt32(st.st_mode) & 0o7777, (st.st_mode & S_IFMT) == S_IFDIR))
        }
        return out
    }

    @Test("under umask 000 and 277 the data folder and everything the daemon makes in it are 0700 / 0600")
    func modesWhateverTheUmask() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        for umask in ["000", "277"] {
            let data = dir.path + "/umask-\(umask)/data"
            let d = try DaemonProcess(data: data, umask: umask)
            let created = try #require(try d.json(["create", "modes", "--sections", "a,b"]) as? [String: Any])
            let doc = try #require(created["id"] as? String)
            _ = try d.json(["insert", doc, "0.0", "x"])
            #expect(d.terminate() == 0)
            let found = Self.modes(under: data)
            let names = Set(found.map { ($0.path as NSString).lastPathComponent })
            for expected in ["data", "key", "lock", "replica", "documents", doc, "name", "wal", "segment-0000000000000000"] {
                #expect(names.contains(expected), "umask \(umask): \(expected) in \(names.sorted())")
            }
            for f in found {
                #expect(f.mode == (f.folder ? 0o700 : 0o600), "umask \(umask): \(f.path) has mode \(String(f.mode, radix: 8))")
            }
            // What was made under umask 277 still works: the daemon starts again and reads it.
            let again = try DaemonProcess(data: data, umask: umask)
            #expect(try table(again, doc) == [["x"], []])
            again.terminate()
        }
    }

    @Test("a data folder group or others can write to is refused, with the chmod that fixes it; 0755 is accepted")
    func openDataFolder() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        for mode in [0o775, 0o757, 0o777, 0o720] as [mode_t] {
            chmod(data, mode)
            let (code, _, err, killed) = try runListsync(["serve", "--data", data, "--listen", "127.0.0.1:0"], atMost: livenessGuardSeconds)
            #expect(code == 1 && !killed, "mode \(String(mode, radix: 8))")
            #expect(err.contains("has mode \(String(mode, radix: 8))") && err.contains("run `chmod 700 \(data)`"), "\(err)")
            #expect(!FileManager.default.fileExists(atPath: data + "/key"), "nothing was made in it")
        }
        chmod(data, 0o755)
        let d = try DaemonProcess(data: data)
        #expect(d.terminate() == 0)
    }

    @Test("a key file group or others can write to (or read) is refused, by the daemon and by clients")
    func openKeyFile() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let key = dir.path + "/key"
        _ = FileManager.default.createFile(atPath: key, contents: Data(repeating: 3, count: 32), attributes: [.posixPermissions: 0o600])
        for mode in [0o620, 0o602, 0o640] as [mode_t] {
            chmod(key, mode)
            let (code, _, err, killed) = try runListsync(["serve", "--data", dir.path + "/data", "--listen", "127.0.0.1:0", "--key-file", key],
                                                         atMost: livenessGuardSeconds)
            #expect(code == 1 && !killed && err.contains("run `chmod 600 \(key)`"), "mode \(String(mode, radix: 8)): \(err)")
            let (clientCode, _, clientErr) = try runListsync(["docs", "--key-file", key, "--daemon", "127.0.0.1:9"])
            #expect(clientCode == 1 && clientErr.contains("chmod 600"), "\(clientErr)")
        }
    }

    @Test("a new key file and a new admin token file are 0600 when their secret is written (O_EXCL); an existing one is never replaced")
    func secretCreation() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let keyPath = dir.path + "/key", tokenPath = dir.path + "/admin-token"
        let keyModes = ModeWatch(keyPath), tokenModes = ModeWatch(tokenPath)
        let (key, created) = try KeyFile.readOrCreate(keyPath, fileSystem: keyModes.fileSystem)
        let (token, tokenCreated) = try AdminToken.readOrCreate(tokenPath, fileSystem: tokenModes.fileSystem)
        #expect(created && key.count == 32 && tokenCreated)
        #expect(keyModes.seen == [0o600] && tokenModes.seen == [0o600], "the modes at each write: \(keyModes.seen) \(tokenModes.seen)")
        #expect(try SecretFile.create(keyPath, bytes: [1, 2, 3], fileSystem: .system) == false)
        let (again, createdAgain) = try KeyFile.readOrCreate(keyPath)
        #expect(!createdAgain && again == key)
        // The token: 64 hex digits and a newline, the same when read back; refused once others can read it.
        let text = try String(contentsOfFile: tokenPath, encoding: .utf8)
        #expect(text.count == 65 && text.hasSuffix("\n") && text.dropLast().allSatisfy(\.isHexDigit))
        let request = HTTPRequest(method: "GET", path: "/metrics", headers: [("Authorization", "Bearer " + text.dropLast())])
        let (tokenAgain, tokenCreatedAgain) = try AdminToken.readOrCreate(tokenPath, fileSystem: .system)
        #expect(token.authorizes(request) && tokenAgain.authorizes(request) && !tokenCreatedAgain)
        chmod(tokenPath, 0o604)
        #expect(throws: DaemonError.self) { try AdminToken.readOrCreate(tokenPath, fileSystem: .system) }
    }
}
