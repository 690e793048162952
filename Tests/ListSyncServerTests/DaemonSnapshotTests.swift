#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncTestSupport
import ListSyncTestTraits
import Synchronization
import Testing
import ListSync

/// A document in constant use is snapshotted while it stays resident: recovery after a crash then
/// replays only the log written since, however long the document has been open.
@Suite("Daemon: snapshots of resident documents", .serialized, .hangGuard)
struct DaemonSnapshotTests {
    @Test("a subscribed document whose log passes the threshold is snapshotted while in use; every acknowledged edit survives, and a restart loads the snapshot")
    func snapshotWhileResident() async throws {
        let events = DaemonFaultTests.Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.snapshotLogBytes = 2_048
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await client.create(name: "busy")
        let live = try await client.open(doc)   // subscribed: the document stays resident
        let folder = dir.path + "/data/documents/\(doc)"
        var generations: Set<String> = []
        for i in 0..<300 {
            try await client.edit(doc) { d throws(ListError) in
                _ = try d.insertItem(atRow: d.itemCount(inSection: 0), inSection: 0, value: Data("item \(i)".utf8))
            }
            let names = try FileSystem.system.list(folder)
            // One generation at a time: its snapshot from generation 1 on, and no log of its own
            // (the batches are in the data folder's shared log).
            #expect(names.filter { $0.hasPrefix("log-") }.isEmpty && names.filter { $0.hasPrefix("snapshot-") }.count <= 1,
                    "\(names)")
            if let snapshot = names.first(where: { $0.hasPrefix("snapshot-") }) { generations.insert(snapshot) }
        }
        let snapshotted = events.named("document snapshotted")
        #expect(snapshotted.count >= 2, "\(snapshotted)")
        #expect(generations.count == snapshotted.count, "\(generations)")
        #expect(snapshotted.allSatisfy { $0["document"] == doc.description })
        // The threshold follows the snapshot's size: snapshots stay a fraction of the batches.
        #expect(snapshotted.count < 40, "\(snapshotted.count) snapshots for 300 edits")
        let expected = (0..<300).map { "item \($0)" }
        #expect(live.document.rows == [expected])
        await client.close()
        await daemon.stop()

        // A new daemon on the folder loads the latest snapshot and the log after it.
        let (again, port2) = try await DaemonLimitTests.restart(on: dir)
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port2, key: key, timeout: .seconds(livenessGuardSeconds))
        let reopened = try await reader.open(doc)
        #expect(reopened.document.rows == [expected])
        await reader.close()
        await again.stop()
    }

    @Test("4 clients editing one document at once with snapshots every 2 KiB (batches arrive while snapshots are written off the pool): every acknowledged edit is there, live and after a restart")
    func batchesDuringSnapshots() async throws {
        let events = DaemonFaultTests.Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.snapshotLogBytes = 2_048
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let admin = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await admin.create(name: "contended")
        let watcher = try await admin.open(doc)
        var clients: [DaemonClient] = []
        for _ in 0..<4 {
            let c = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
            _ = try await c.open(doc)
            clients.append(c)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, c) in clients.enumerated() {
                group.addTask {
                    for i in 0..<60 {
                        try await c.edit(doc) { d throws(ListError) in
                            _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("c\(n) \(i)".utf8))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let expected = Set((0..<4).flatMap { n in (0..<60).map { "c\(n) \($0)" } })
        let deadline = ContinuousClock.now + .seconds(livenessGuardSeconds)
        while Set(watcher.document.rows.flatMap { $0 }) != expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(Set(watcher.document.rows.flatMap { $0 }) == expected)
        #expect(events.named("document snapshotted").count >= 2)
        for c in clients { await c.close() }
        await admin.close()
        await daemon.stop()

        let (again, port2) = try await DaemonLimitTests.restart(on: dir)
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port2, key: key, timeout: .seconds(livenessGuardSeconds))
        let reopened = try await reader.open(doc)
        #expect(Set(reopened.document.rows.flatMap { $0 }) == expected)
        #expect(reopened.document.rows.flatMap { $0 }.count == 240)
        await reader.close()
        await again.stop()
    }

    @Test("the shared log stays a few segments long: the daemon snapshots the documents holding its oldest segment, resident or not, and every acknowledged edit survives a restart")
    func checkpointsKeepTheLogShort() async throws {
        let events = DaemonFaultTests.Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            var log = SharedLogOptions()
            log.segmentBytes = 4_096
            log.preallocation = 0
            config.sharedLog = log
            config.checkpointSegments = 2
            config.snapshotLogBytes = 1 << 30   // no snapshot but the checkpoints'
            config.idleUnload = .seconds(1)      // the quiet document is unloaded, unsnapshotted
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let wal = dir.path + "/data/wal"
        func segments() -> Int { ((try? FileSystem.system.list(wal)) ?? []).filter { $0.hasPrefix("segment-") }.count }
        let writer = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        // One document written once, then left alone (its records sit in the oldest segments),
        // and one written all along.
        let other = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let quiet = try await other.create(name: "quiet")
        _ = try await other.open(quiet)
        try await other.edit(quiet) { d throws(ListError) in
            _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("once".utf8))
        }
        await other.close()   // nobody holds it: unloaded after a second, its records in the log
        let busy = try await writer.create(name: "busy")
        let live = try await writer.open(busy)
        var most = 0
        for i in 0..<400 {
            try await writer.edit(busy) { d throws(ListError) in
                _ = try d.insertItem(atRow: d.itemCount(inSection: 0), inSection: 0, value: Data("item \(i) \(String(repeating: "x", count: 40))".utf8))
            }
            most = max(most, segments())
            // Every 50 edits (about a segment), a housekeeping turn: waited for by its effect, the
            // log back to a few segments, not for a time (a loaded machine's turn comes later).
            if i % 50 == 49 { _ = await Self.until { segments() <= 4 } }
        }
        // 400 edits of about 80 bytes are some 8 segments of 4 KiB: without checkpoints all stay.
        #expect(await Self.until { segments() <= 4 }, "\(segments()) segments (at most \(most) during the run)")
        #expect(most < 8, "at most \(most) segments during the run")
        // The quiet document was loaded again to be snapshotted, the busy one snapshotted in use.
        let both: Set = [quiet.description, busy.description]
        func checkpointed() -> Set<String> { Set(events.named("document checkpointed").compactMap { $0["document"] }) }
        #expect(await Self.until { checkpointed().isSuperset(of: both) }, "\(checkpointed())")
        let expected = live.document.rows
        await writer.close()
        await daemon.stop()

        let (again, port2) = try await DaemonLimitTests.restart(on: dir)
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port2, key: key, timeout: .seconds(livenessGuardSeconds))
        #expect(try await reader.open(busy).document.rows == expected)
        #expect(try await reader.open(quiet).document.rows == [["once"]])
        await reader.close()
        await again.stop()
    }

    /// Polls `condition` every 20 ms until it holds (true) or the liveness guard passes (false).
    static func until(_ condition: () -> Bool) async -> Bool {
        let guardUntil = ContinuousClock.now + .seconds(livenessGuardSeconds)
        while ContinuousClock.now < guardUntil {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}
#endif
