import Foundation
import ListCRDT
import ListStore
import ListSyncClient
@testable import ListSyncServer
import ListSyncFiles
import ListSyncHTTP
import ListSyncTCP
import ListSyncTestSupport
import ListSyncTestTraits
import Testing

/// The admin port of a daemon process: the bearer token, and `/metrics` that costs the daemon
/// nothing per document (Docs/Security.md, "Admin port").
@Suite("Admin port: token and cheap metrics", .ownThread, .serialized, .hangGuard)
struct AdminAccessTests {
    /// Sends `requests` (raw HTTP) on one connection from 127.0.0.1 and reads until the server
    /// closes or `timeout` seconds pass with nothing: the whole answer as text.
    static func exchange(_ port: UInt16, _ requests: String, timeout: Double = 5) async throws -> String {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.1"))
        raw.send(Array(requests.utf8))
        var bytes: [UInt8] = []
        while true {
            let got = await raw.read(65_536, timeout: timeout)
            if got.isEmpty { break }
            bytes += got
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One GET with `headers`: (status, the response's head, body).
    static func get(_ port: UInt16, _ path: String, _ headers: String = "", timeout: Double = 5) async throws -> (Int, String, String) {
        let text = try await exchange(port, "GET \(path) HTTP/1.1\r\nHost: x\r\n\(headers)Connection: close\r\n\r\n", timeout: timeout)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, parts.first ?? "", parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// The admin port a daemon printed.
    static func adminPort(_ d: DaemonProcess) throws -> UInt16 {
        let line = try #require(d.log.range(of: "http://127.0.0.1:"))
        return try #require(UInt16(d.log[line.upperBound...].prefix { $0.isNumber }))
    }

    @Test("--admin-token-file: 401 with WWW-Authenticate without the token or with a wrong one, 200 with it; /healthz open")
    func token() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let tokenFile = dir.path + "/token"
        let token = "s3cret-token-0123456789abcdef"
        _ = FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let d = try DaemonProcess(data: dir.path + "/data", extra: ["--admin", "127.0.0.1:0", "--admin-token-file", tokenFile])
        defer { d.terminate() }
        let port = try Self.adminPort(d)
        #expect(d.log.contains("admin token: \(tokenFile)"), "the banner says where the token is: \(d.log)")
        #expect(try await Self.get(port, "/healthz").0 == 200)
        for path in ["/metrics", "/readyz", "/nope"] {
            let (status, head, _) = try await Self.get(port, path)
            #expect(status == 401, "\(path) without a token")
            #expect(head.contains("WWW-Authenticate: Bearer realm=\"listsync\""), "\(head)")
            #expect(!head.contains("invalid_token"))
        }
        for wrong in ["Bearer s3cret-token-0123456789abcdeX", "Bearer s3cret", "Basic \(token)", "Bearer", "Bearer \(token)x"] {
            let (status, head, body) = try await Self.get(port, "/metrics", "Authorization: \(wrong)\r\n")
            #expect(status == 401, "\(wrong)")
            #expect(!body.contains("listsync_"), "nothing of the metrics leaks")
            if wrong.hasPrefix("Bearer ") { #expect(head.contains("error=\"invalid_token\"")) }
        }
        let (status, _, metrics) = try await Self.get(port, "/metrics", "Authorization: bearer  \(token)\r\n")
        #expect(status == 200)
        #expect(metrics.contains("listsync_admin_unauthorized_total 8"), "\(metrics)")
        #expect(try await Self.get(port, "/readyz", "Authorization: Bearer \(token)\r\n").0 == 200)
        #expect(try await Self.get(port, "/nope", "Authorization: Bearer \(token)\r\n").0 == 404)
    }

    @Test("a token file others can read, or one without a token, stops the daemon with the fix")
    func badTokenFile() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let open = dir.path + "/open", short = dir.path + "/short"
        _ = FileManager.default.createFile(atPath: open, contents: Data("0123456789abcdef0123".utf8), attributes: [.posixPermissions: 0o640])
        _ = FileManager.default.createFile(atPath: short, contents: Data("abc".utf8), attributes: [.posixPermissions: 0o600])
        for (file, says) in [(open, "chmod 600 \(open)"), (short, "does not hold a token"), (dir.path + "/none", "does not exist")] {
            let (code, _, err, killed) = try runListsync(["serve", "--data", dir.path + "/data", "--listen", "127.0.0.1:0",
                                                         "--admin", "127.0.0.1:0", "--admin-token-file", file], atMost: livenessGuardSeconds)
            #expect(code == 1 && !killed && err.contains(says), "\(file): \(err)")
        }
    }

    /// Makes `count` documents, each with its store, in a new data folder at `root` (as a daemon
    /// would have; faster than `count` CREATEs through a daemon).
    static func folder(_ root: String, documents count: Int) throws {
        let folder = try DataFolder(root: root)
        defer { folder.close() }
        for i in 0..<count {
            let id = try folder.create(name: "doc \(i)")
            let (store, _) = try folder.open(id, replica: ReplicaID(1))
            try store.close()
        }
    }

    /// One burst of `connections` × `pipelined` pipelined `/metrics` against the admin port
    /// `port`, with one CREATE through `client` 50 ms into it: (answers, the burst's time, the
    /// CREATE's time). The burst's clients run on the pool, not on this test's thread.
    static func burst(_ port: UInt16, _ client: DaemonClient, connections: Int, pipelined: Int, name: String) async throws
        -> (answered: Int, burst: Duration, create: Duration) {
        let request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        let last = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let start = ContinuousClock.now
        let burst = Task.detached {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<connections {
                    group.addTask {
                        let text = try await Self.exchange(port, String(repeating: request, count: pipelined - 1) + last, timeout: 30)
                        return text.components(separatedBy: "HTTP/1.1 200 OK").count - 1
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        let t = ContinuousClock.now
        _ = try await client.create(name: name)
        let create = ContinuousClock.now - t
        let answered = try await burst.value
        return (answered, ContinuousClock.now - start, create)
    }

    @Test("a burst of pipelined /metrics costs a daemon with 400 documents about what it costs one with 1, and so does a CREATE during it (both measured in the same moment)", .timed)
    func metricsBurst() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let documents = 400, connections = 60, pipelined = 4
        try Self.folder(dir.path + "/many", documents: documents)
        try Self.folder(dir.path + "/few", documents: 1)
        let many = try DaemonProcess(data: dir.path + "/many", extra: ["--admin", "127.0.0.1:0"])
        defer { many.terminate() }
        let few = try DaemonProcess(data: dir.path + "/few", extra: ["--admin", "127.0.0.1:0"])
        defer { few.terminate() }
        let ports = (many: try Self.adminPort(many), few: try Self.adminPort(few))
        let (status, _, metrics) = try await Self.get(ports.many, "/metrics")
        #expect(status == 200 && metrics.contains("listsync_documents_on_disk \(documents)"), "\(metrics)")
        let clients = (many: try await DaemonClient.connect(host: "127.0.0.1", port: many.port, key: KeyFile.read(many.keyFile), timeout: .seconds(livenessGuardSeconds)),
                       few: try await DaemonClient.connect(host: "127.0.0.1", port: few.port, key: KeyFile.read(few.keyFile), timeout: .seconds(livenessGuardSeconds)))
        // The two daemons take turns, twice each, so a machine that is busy at one moment is busy
        // for both: the test compares them, never a time with a constant.
        var onMany: [(answered: Int, burst: Duration, create: Duration)] = []
        var onFew: [(answered: Int, burst: Duration, create: Duration)] = []
        for round in 0..<2 {
            onMany.append(try await Self.burst(ports.many, clients.many, connections: connections, pipelined: pipelined, name: "during \(round)"))
            onFew.append(try await Self.burst(ports.few, clients.few, connections: connections, pipelined: pipelined, name: "during \(round)"))
        }
        await clients.many.close()
        await clients.few.close()
        print("metrics burst of \(connections)×\(pipelined) pipelined scrapes: \(documents) documents \(onMany.map(\.burst)), "
              + "CREATE during it \(onMany.map(\.create)); 1 document \(onFew.map(\.burst)), CREATE during it \(onFew.map(\.create))")
        #expect((onMany + onFew).allSatisfy { $0.answered == connections * pipelined }, "every scrape answered")
        // 240 answers that each walked 400 documents took 23.6 s before (100 ms each, one at a
        // time on the daemon's actor), against well under a second with 1 document, and a CREATE
        // behind them waited seconds. From counters a scrape costs the same whatever the number
        // of documents. The best of each daemon's two turns is compared, with room for a factor
        // 3 of noise; the old cost was a factor of 20 and more.
        let burstMany = onMany.map(\.burst).min()!, burstFew = onFew.map(\.burst).min()!
        #expect(burstMany < burstFew * 3, "the burst took \(burstMany) with \(documents) documents, \(burstFew) with 1")
        let createMany = onMany.map(\.create).min()!, createFew = onFew.map(\.create).max()!
        #expect(createMany < createFew * 3 + burstFew,
                "a CREATE during the burst took \(createMany) with \(documents) documents, \(createFew) with 1 (burst \(burstFew))")
    }
}

/// Which admin token applies, and the token file (no sockets).
@Suite("Admin token file and policy")
struct AdminTokenTests {
    @Test("loopback stays open unless a token file is given; any other address needs one (DIR/admin-token by default)")
    func policy() {
        var c = DaemonConfiguration(dataFolder: "/d")
        #expect(AdminToken.file(loopback: true, configuration: c) == nil)
        #expect(AdminToken.file(loopback: false, configuration: c)! == ("/d/admin-token", false))
        c.adminTokenFile = "/t"
        #expect(AdminToken.file(loopback: true, configuration: c)! == ("/t", true))
        #expect(AdminToken.file(loopback: false, configuration: c)! == ("/t", true))
        let loopback = ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"]
        let beyond = ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "128.0.0.1"]
        for h in loopback { #expect(SocketAddress(numeric: h, port: 1)!.isLoopback, "\(h)") }
        for h in beyond { #expect(!SocketAddress(numeric: h, port: 1)!.isLoopback, "\(h)") }
    }
}

extension AdminTokenTests {
    @Test("a token is 16 to 512 b64token characters; a request presents it as `Bearer` (any case) with spaces around")
    func syntax() {
        #expect(HTTPBearerToken("0123456789abcdef") != nil)
        #expect(HTTPBearerToken("  A-Z.a_z~0+9/xyzw==\n") != nil)
        #expect(HTTPBearerToken(String(repeating: "a", count: 512)) != nil)
        for bad in ["0123456789abcde", String(repeating: "a", count: 513), "0123456789 abcdef", "0123456789abcdef\u{1B}",
                    "0123456789abcdéf", "==0123456789abcdef", "0123456789=abcdef", ""] {
            #expect(HTTPBearerToken(bad) == nil, "\(bad.debugDescription)")
        }
        let token = HTTPBearerToken("0123456789abcdef")!
        func request(_ value: String?) -> HTTPRequest {
            HTTPRequest(method: "GET", path: "/metrics", headers: value.map { [("Authorization", $0)] } ?? [])
        }
        for good in ["Bearer 0123456789abcdef", "bearer 0123456789abcdef", "BEARER   0123456789abcdef  "] {
            #expect(token.authorizes(request(good)), "\(good)")
        }
        for bad in [nil, "Bearer", "Bearer ", "Bearer 0123456789abcde", "Bearer 0123456789abcdefg", "Basic 0123456789abcdef",
                    "Bearer0123456789abcdef", "Bearer\t0123456789abcdef", "X Bearer 0123456789abcdef"] as [String?] {
            #expect(!token.authorizes(request(bad)), "\(String(describing: bad))")
        }
        #expect(token.challenge(request(nil)).header("WWW-Authenticate") == "Bearer realm=\"listsync\"")
        #expect(token.challenge(request("Bearer nope")).header("WWW-Authenticate") == "Bearer realm=\"listsync\", error=\"invalid_token\"")
        #expect(token.challenge(request(nil)).status == 401)
    }
}

/// A file system that records the mode of `path` each time bytes are written to it.
final class ModeWatch: @unchecked Sendable {
    // @unchecked Sendable: `modes` is behind `lock`.
    let path: String
    private let lock = NSLock()
    private var modes: [UInt32] = []
    init(_ path: String) { self.path = path }

    var seen: [UInt32] { lock.lock(); defer { lock.unlock() }; return modes }

    var fileSystem: FileSystem {
        FileSystem { [self] call in
            if call.name == "pwrite", call.path == path, let mode = FileSystem.system.permissions(path) {
                lock.lock()
                modes.append(mode)
                lock.unlock()
            }
            return nil
        }
    }
}
