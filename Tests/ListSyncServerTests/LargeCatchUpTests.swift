#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncFaults
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListSyncTestSupport
import ListTable
import Testing
import ListSyncTestTraits

extension FaultProxySuites {
    /// A document far larger than a connection's 8 MiB send queue: its catch-up must be streamed
    /// with back-pressure, never queued whole (which cut the reader as a slow consumer at 8 MiB).
    @Suite("A large document over a slow link", .serialized, .hangGuard)
    struct LargeCatchUpTests {
        static let items = 1_100
        static let valueBytes = 60_000   // 1,100 × 60 KB: 66 MB of values, 64 MiB and more

        static func value(_ i: Int) -> Data {
            var d = Data("item \(i) ".utf8)
            d.append(Data(repeating: UInt8(ascii: "a") + UInt8(i % 26), count: valueBytes - d.count))
            return d
        }

        /// Every item there once, in order, with its value.
        static func check(_ live: LiveDocument, _ who: String) {
            let got = live.snapshot.sections.first?.items ?? []
            #expect(got.count == items, "\(who): \(got.count) of \(items) items")
            #expect(Set(got.map(\.id)).count == got.count, "\(who): each item once")
            for (i, item) in got.enumerated() where item.value != value(i) {
                Issue.record("\(who): item \(i) has another value")
                break
            }
        }

        @Test("a 66 MB document is opened by a new client and by a new peer daemon, both over a slow link: everything arrives")
        func largeDocumentOverSlowLink() async throws {
            let dir = TemporaryFolder()
            defer { dir.remove() }
            let a = try await offPool { try DaemonProcess(data: dir.path + "/a") }
            defer { a.kill9() }
            let key = try KeyFile.read(a.keyFile)

            // The document, written directly: 11 edits of 100 items (each several frames).
            let author = try await DaemonClient.connect(host: "127.0.0.1", port: a.port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
            let doc = try await author.create(name: "big", sections: ["all"])
            _ = try await author.open(doc)
            for start in stride(from: 0, to: Self.items, by: 100) {
                try await author.edit(doc) { (d: inout ListDocument) throws(ListError) in
                    for i in start..<(start + 100) { try d.insertItem(atRow: i, inSection: 0, value: Self.value(i)) }
                }
            }
            await author.close()

            // The slow link: every 32–64 KiB segment waits 2–4 ms (about 15 MB/s each way).
            var plan = FaultPlan(seed: 7)
            plan.delay = .milliseconds(2) ... .milliseconds(4)
            plan.segmentBytes = 32_768 ... 65_536
            let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: a.port)), plan: plan)
            defer { Task { await proxy.close() } }

            // A new client opens it through the link.
            let started = ContinuousClock.now
            let reader = try await DaemonClient.connect(host: "127.0.0.1", port: proxy.port, key: key, changeSets: false,
                                                        timeout: .seconds(60))
            let live = try await reader.open(doc)
            let clientTime = ContinuousClock.now - started
            Self.check(live, "new client")
            await reader.close()

            // A new peer daemon follows A through the same link and fetches it.
            let peerStart = ContinuousClock.now
            let b = try await offPool {
                try DaemonProcess(data: dir.path + "/b", extra: ["--peer", "127.0.0.1:\(proxy.port)", "--key-file", a.keyFile])
            }
            defer { b.kill9() }
            // Polled from outside (`docs` counts a resident document's operations): a client
            // subscribed to B meanwhile would be cut as a slow consumer by B's live forwarding of
            // the catch-up, which has no back-pressure (it would have to reconnect).
            let complete = await offPool {
                eventually(120) {
                    let list = (try? b.json(["docs"])) as? [[String: Any]] ?? []
                    return list.contains { ($0["id"] as? String) == doc.description && ($0["operations"] as? Int) == Self.items + 1 }
                }
            }
            let peerTime = ContinuousClock.now - peerStart
            #expect(complete, "the peer did not get every operation: \(b.log.suffix(2_000))")
            let onB = try await DaemonClient.connect(host: "127.0.0.1", port: b.port, key: key, changeSets: false, timeout: .seconds(60))
            Self.check(try await onB.open(doc), "new peer")
            await onB.close()
            let stats = await proxy.statistics()
            print("large catch-up: \(Self.items) items of \(Self.valueBytes) bytes; new client \(clientTime), new peer \(peerTime); "
                  + "\(stats.connections) connection(s) through the link, \(stats.cut + stats.dropped) cut")
            #expect(!a.log.contains("slow consumer"), "A cut a reader as a slow consumer: \(a.log.suffix(2_000))")
        }
    }
}
#endif
