#if canImport(Glibc)
import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListSyncTestSupport
import ListTable
import Testing
import ListSyncTestTraits

/// What the daemon refused live stays refused after a restart: it validates a batch before
/// logging it, and recovery replays under the daemon's own limits.
@Suite("Refused operations and restarts", .serialized, .hangGuard)
struct DaemonRecoveryLimitTests {
    static func start(_ dir: TemporaryFolder) async throws -> (Daemon, UInt16) {
        var config = DaemonConfiguration(dataFolder: dir.path + "/data")
        config.listenPort = 0
        config.pendingLimits = PendingLimits(maxOperations: 5)
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        return (daemon, try #require(await daemon.address?.port))
    }

    @Test("operations refused for a full causal buffer are not applied after a restart, even once what they wait for arrives")
    func refusedStayRefused() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var (daemon, port) = try await Self.start(dir)
        let key = try KeyFile.read(daemon.keyPath)
        var client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
        let doc = try await client.create(name: "buffer", sections: ["a"])
        let live = try await client.open(doc)

        // Twelve inserts made elsewhere; the first is held back, so the rest wait for it.
        var other = ListDocument(replica: ReplicaID(77))
        _ = other.receive(live.document.operations(since: VersionVector()))
        var ops: [ListOperation] = []
        for i in 0..<12 { ops.append(try other.insertItem(atRow: i, inSection: 0, value: Data("o\(i)".utf8))) }

        try await client.upload(doc, Array(ops[1...4]))   // four waiting: within the limit of five
        var refused = false
        do { try await client.upload(doc, Array(ops[5...11])) } catch { refused = true }
        #expect(refused, "seven more waiting operations pass the limit of five: the six past it refused")
        await client.close()
        await daemon.stop()

        (daemon, port) = try await Self.start(dir)
        client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
        _ = try await client.open(doc)
        try await client.upload(doc, [ops[0]])
        await client.close()
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
        let texts = try await reader.open(doc).snapshot.sections[0].items.map { String(decoding: $0.value, as: UTF8.self) }
        await reader.close()
        // o5 filled the buffer to its limit and was kept; o6…o11 were refused and stay so.
        #expect(texts == ["o0", "o1", "o2", "o3", "o4", "o5"], "only what was accepted: \(texts)")
        await daemon.stop()
    }
}
#endif
