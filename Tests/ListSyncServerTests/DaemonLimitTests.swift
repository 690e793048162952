#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncFiles
import ListSyncTestSupport
import ListSyncTestTraits
import Testing
import ListSync
@testable import ListSyncTCP

/// The daemon in this process (so its limits can be set small), attacked over real sockets.
@Suite("Daemon limits: slow consumers, connection bursts", .serialized, .hangGuard)
struct DaemonLimitTests {
    static func start(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> (Daemon, UInt16, [UInt8], TemporaryFolder) {
        let dir = TemporaryFolder()
        var config = DaemonConfiguration(dataFolder: dir.path + "/data")
        config.listenPort = 0
        configure(&config)
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        let port = try #require(await daemon.address?.port)
        let key = try KeyFile.read(daemon.keyPath)
        return (daemon, port, key, dir)
    }

    /// A new daemon on the data folder of `dir` (made by ``start(_:)``), with the defaults and no
    /// hook: what a restart after a stop or a crash finds on disk. Returns it and its port.
    static func restart(on dir: TemporaryFolder) async throws -> (Daemon, UInt16) {
        var config = DaemonConfiguration(dataFolder: dir.path + "/data")
        config.listenPort = 0
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        return (daemon, try #require(await daemon.address?.port))
    }

    /// A client that completes the handshake, subscribes to `doc`, then never reads again.
    static func mute(port: UInt16, key: [UInt8], subscribeTo doc: DocumentID) async throws -> RawSocket {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.5"))
        var m = ConnectionMachine(role: .client, key: key, id: Array(repeating: 1, count: 16), nonce: Array(repeating: 2, count: 32))
        for case let .write(b) in m.start() { raw.send(b) }
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while !m.isEstablished, !m.isClosed, Date() < deadline {
            for case let .write(b) in m.receive(await raw.readSome(timeout: 0.2)) { raw.send(b) }
        }
        try #require(m.isEstablished)
        raw.send(try m.seal(.data, SyncMessage.subscribe(document: doc, epoch: 0, version: VersionVector()).encoded()))
        return raw
    }

    @Test("a subscriber that never reads is cut off once its send queue is full; the writer is unaffected")
    func slowConsumer() async throws {
        let (daemon, port, key, dir) = try await Self.start { $0.tcp.sendQueueLimit = 128 * 1024 }
        defer { dir.remove() }
        let writer = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await writer.create(name: "firehose")
        _ = try await writer.open(doc)
        let mute = try await Self.mute(port: port, key: key, subscribeTo: doc)
        let value = Data(repeating: 0x61, count: 4_000)
        for batch in 0..<12 {
            try await writer.edit(doc) { d throws(ListError) in
                for k in 0..<400 { _ = try d.insertItem(atRow: 0, inSection: 0, value: value + Data("\(batch)-\(k)".utf8)) }
            }
        }
        // 19 MB pushed at a connection that reads nothing: it is closed, not buffered.
        #expect(await mute.closedByPeer(within: livenessGuardSeconds))
        let status = try await writer.status()
        #expect(status.contains("\"connections\":1"), "\(status)")
        #expect(try await writer.documents().first?.operations == 1 + 12 * 400)
        await writer.close()
        await daemon.stop()
    }

    @Test("an idle document is unloaded (snapshot first) and loaded again on demand, unchanged")
    func idleUnload() async throws {
        let (daemon, port, key, dir) = try await Self.start { $0.idleUnload = .milliseconds(300); $0.snapshotLogBytes = 0 }
        defer { dir.remove() }
        var client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await client.create(name: "idle")
        _ = try await client.open(doc)
        try await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("kept".utf8)) }
        await client.close()
        func resident() async throws -> Int {
            let c = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
            defer { Task { await c.close() } }
            let json = try await c.status()
            let o = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            return o?["documents_resident"] as? Int ?? -1
        }
        var unloaded = false
        // Polled up to the liveness guard: how soon the housekeeping turn comes is the machine's load.
        for _ in 0..<Int(livenessGuardSeconds * 10) where !unloaded {
            try await Task.sleep(for: .milliseconds(100))
            unloaded = try await resident() == 0
        }
        #expect(unloaded, "the idle document stayed resident")
        client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let live = try await client.open(doc)
        #expect(live.snapshot.sections.first?.items.map { String(decoding: $0.value, as: UTF8.self) } == ["kept"])
        #expect(try await resident() == 1)
        await client.close()
        await daemon.stop()
    }

    @Test("a burst of 1,000 connections does not stop an honest client")
    func connectionBurst() async throws {
        let (daemon, port, key, dir) = try await Self.start()
        defer { dir.remove() }
        var burst: [RawSocket] = []
        for _ in 0..<1_000 {
            if let s = RawSocket(port: port, source: "127.0.0.6") { burst.append(s) }
        }
        let honest = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await honest.create(name: "still here")
        #expect(try await honest.documents().map(\.id) == [doc])
        let status = try await honest.status()
        #expect(status.contains("evicted from a full handshake pool"), "evictions are counted by reason: \(status)")
        await honest.close()
        burst = []
        await daemon.stop()
    }
}
#endif
