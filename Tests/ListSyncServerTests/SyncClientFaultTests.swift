#if canImport(Glibc)
import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncFaults
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListTable
import ListSyncTestSupport
import ListSyncTestTraits
import Testing

extension FaultProxySuites {
    /// Device clients through a fault proxy: drops, cuts mid-frame, stalls.
    @Suite("Device clients through a fault proxy", .serialized, .hangGuard)
    struct SyncClientFaultTests {
        @Test("3 devices edit through a proxy that drops, cuts mid-frame and stalls: edits keep flowing; after the heal all converge, every edit once",
              arguments: [7, 8] as [UInt64])
        func devicesConverge(seed: UInt64) async throws {
            let dir = TemporaryFolder()
            defer { dir.remove() }
            let daemon = try await offPool { try DaemonProcess(data: dir.path + "/daemon") }
            let key = try KeyFile.read(daemon.keyFile)
            let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: daemon.port)),
                                                   plan: .clientFaults(seed: seed))
            let direct = SyncClient.Server(host: "127.0.0.1", port: daemon.port, key: key)
            let server = SyncClient.Server(host: "127.0.0.1", port: proxy.port, key: key, requestTimeout: .seconds(2),
                                           backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200)))
            var devices: [SyncClient] = []
            do {
                try await Self.run(dir: dir, daemon: daemon, proxy: proxy, direct: direct, server: server, seed: seed, devices: &devices)
            } catch {
                Issue.record(error)
            }
            for d in devices { await d.close() }
            await proxy.close()
            _ = await offPool { daemon.terminate() }
        }

        static func run(dir: TemporaryFolder, daemon: DaemonProcess, proxy: FaultProxy, direct: SyncClient.Server,
                        server: SyncClient.Server, seed: UInt64, devices: inout [SyncClient]) async throws {
            // The document reaches every device directly first (a fetched copy is empty until then).
            let first = try SyncClient(folder: dir.path + "/d0", server: direct, changeSets: false)
            let doc = try await first.create(name: "faulty", sections: ["a", "b"])
            var setup = [first]
            await first.start()
            try await first.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
            for i in 1..<3 {
                let d = try SyncClient(folder: dir.path + "/d\(i)", server: direct, changeSets: false)
                _ = try await d.fetch(doc)
                await d.start()
                try await d.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
                setup.append(d)
            }
            for d in setup { await d.close() }
            // Then every device goes through the proxy.
            for i in 0..<3 {
                let d = try SyncClient(folder: dir.path + "/d\(i)", server: server, changeSets: false)
                _ = try await d.open(doc)
                devices.append(d)
            }
            for d in devices { await d.start() }
            // Edits under faults, every one returned at once (saved on the device): for three
            // seconds, and on until the proxy has dropped or cut a connection. The end is an event,
            // not a time: a loaded machine may pass too few bytes in three seconds to reach the
            // seed's first cut (seed 101 of the client suite cut nothing once). The guard only
            // ends a run in which no fault ever comes.
            var written: [String] = []
            let end = ContinuousClock.now + .seconds(3)
            let guardUntil = ContinuousClock.now + .seconds(Int64(4 * livenessGuardSeconds))
            var k = 0
            var faulted = false
            while ContinuousClock.now < end || (!faulted && ContinuousClock.now < guardUntil) {
                for (i, d) in devices.enumerated() {
                    let value = "d\(i)-\(k)"
                    _ = try await d.edit(doc) { (x: inout ListDocument) throws(ListError) in
                        let s = k % 2
                        _ = try x.insertItem(atRow: x.itemCount(inSection: s) / 2, inSection: s, value: Data(value.utf8))
                    }
                    written.append(value)
                }
                k += 1
                let sofar = await proxy.statistics()
                faulted = sofar.cut + sofar.dropped > 0
                try await Task.sleep(for: .milliseconds(30))
            }
            await proxy.heal()
            for d in devices { await d.reconnectNow() }
            for d in devices { try await d.waitUntilSynced(timeout: .seconds(livenessGuardSeconds)) }
            for d in devices { try await d.waitUntilSynced(timeout: .seconds(livenessGuardSeconds)) }
            let stats = await proxy.statistics()
            // Every device's edits are on the daemon now; the others' arrive by push: wait for them (bounded).
            let onDaemon = try await offPool { try table(daemon, doc.description) }
            var views: [[[String]]] = []
            let deadline = ContinuousClock.now + .seconds(livenessGuardSeconds)
            repeat {
                views = []
                for d in devices { views.append(texts(try #require(await d.live(doc)))) }
                if views.allSatisfy({ $0 == onDaemon }) { break }
                try await Task.sleep(for: .milliseconds(20))
            } while ContinuousClock.now < deadline
            print("seed \(seed): \(stats.faults) faults (\(stats.dropped) drops, \(stats.cut) cuts, \(stats.stalls) stalls) in \(stats.connections) connections; \(written.count) edits")
            #expect(views.allSatisfy { $0 == onDaemon }, "daemon \(onDaemon) devices \(views)")
            let all = onDaemon.flatMap { $0 }
            #expect(all.count == written.count && Set(all) == Set(written), "every edit once: \(all.count) of \(written.count)")
            #expect(stats.cut + stats.dropped > 0, "the seed injected drops or cuts: \(stats)")
        }
    }
}
#endif
