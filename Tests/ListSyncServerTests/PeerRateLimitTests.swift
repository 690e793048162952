#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSyncClient
import ListSyncServer
import ListSyncTestSupport
import Testing
import ListSync
import ListSyncTestTraits

/// A peer is a connection like any other to the daemon it dials, rate limit included: what the
/// limit refuses must reach the daemon later all the same.
@Suite("Peers over a rate limit", .serialized, .hangGuard)
struct PeerRateLimitTests {
    @Test("batches a peer pushes over the other daemon's rate limit are refused, then sent again: both converge with every edit")
    func refusedBatchesAreResent() async throws {
        // A: a tight limit (5 batches a second, bursts of 5). B dials A with the same key.
        let (a, portA, key, dirA) = try await DaemonLimitTests.start { config in
            config.rateLimit = RateLimit(batchesPerSecond: 5, burst: 5)
        }
        defer { dirA.remove() }
        let (b, portB, _, dirB) = try await DaemonLimitTests.start { config in
            config.keyFile = dirA.path + "/data/key"
            config.peers = [(host: "127.0.0.1", port: portA)]
        }
        defer { dirB.remove() }
        let onB = try await DaemonClient.connect(host: "127.0.0.1", port: portB, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await onB.create(name: "burst")
        _ = try await onB.open(doc)
        // 40 edits, each its own batch, each pushed to A as it is made: far over A's limit.
        for i in 0..<40 {
            try await onB.edit(doc) { d throws(ListError) in
                _ = try d.insertItem(atRow: d.itemCount(inSection: 0), inSection: 0, value: Data("e\(i)".utf8))
            }
        }
        let expected = (0..<40).map { "e\($0)" }
        let onA = try await DaemonClient.connect(host: "127.0.0.1", port: portA, key: key, timeout: .seconds(livenessGuardSeconds))
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while try await !onA.documents().contains(where: { $0.id == doc }), Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let live = try await onA.open(doc)
        while live.document.rows != [expected], Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let rows = live.document.rows
        #expect(rows == [expected])
        await onA.close()
        await onB.close()
        await b.stop()
        await a.stop()
    }
}
#endif
