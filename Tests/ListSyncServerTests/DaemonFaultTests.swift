#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSyncClient
import ListStore
import ListSyncServer
import ListSyncTestSupport
import Synchronization
import Testing
import ListSyncTestTraits
import ListSync
import ListSyncTCP

/// The daemon in this process, with faults a user cannot stage on demand: a disk that fills up
/// (the store's file funnel fails writes with ENOSPC), and a client with the key that forges an
/// operation under a known id.
@Suite("Daemon faults: disk full and back, equivocation", .ownThread, .serialized, .hangGuard)
struct DaemonFaultTests {
    /// Events the daemon logged.
    final class Events: Sendable {
        let list = Mutex<[(String, [String: String])]>([])
        func named(_ name: String) -> [[String: String]] { list.withLock { $0.filter { $0.0 == name }.map(\.1) } }
    }

    static func status(_ client: DaemonClient) async throws -> [String: Any] {
        let json = try await client.status()
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("a full disk: edits are refused with the reason, status and log say why; space back: the same session resumes; reopened, every acknowledged edit is there once")
    func diskFull() async throws {
        let full = Mutex(false)
        let events = Events()
        let fs = FileSystem { call in
            full.withLock { $0 } && ["pwrite", "write", "fdatasync", "fsync"].contains(call.name) ? ENOSPC : nil
        }
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.fileSystem = fs
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await client.create(name: "disk")
        let live = try await client.open(doc)
        func insert(_ v: String) async throws {
            try await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: d.itemCount(inSection: 0), inSection: 0, value: Data(v.utf8)) }
        }
        try await insert("a")
        let acknowledged = live.document.version
        let operationsBefore = try await client.documents().first { $0.id == doc }?.operations

        full.withLock { $0 = true }
        for v in ["b", "c"] {
            do {
                try await insert(v)
                Issue.record("an edit was acknowledged while the disk was full")
            } catch let DaemonClientError.refused(code, text) {
                #expect(code == .storage)
                #expect(text.contains("28") || text.lowercased().contains("space"), "\(text)")
            }
        }
        // Nothing was applied: the daemon's copy is as it was.
        #expect(try await client.documents().first { $0.id == doc }?.operations == operationsBefore)
        let failing = try await Self.status(client)
        #expect(failing["storage"] as? String == "failing")
        #expect((failing["store_errors"] as? [String: String])?[doc.description] != nil, "\(failing)")
        #expect(events.named("store failed").first?["document"] == doc.description)
        #expect(await daemon.readiness().0 == false)

        // Space again: the unacknowledged edits are sent again (as a client does) and go in.
        full.withLock { $0 = false }
        try await client.upload(doc, live.operations(since: acknowledged))
        try await insert("d")
        let healthy = try await Self.status(client)
        #expect(healthy["storage"] as? String == "ok")
        #expect(await daemon.readiness().0 == true)
        #expect(!events.named("store reopened").isEmpty)
        await client.close()
        await daemon.stop()

        // A new daemon on the same folder (real files, no hook): every acknowledged edit, once.
        let (again, port2) = try await DaemonLimitTests.restart(on: dir)
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port2, key: key, timeout: .seconds(livenessGuardSeconds))
        let reopened = try await reader.open(doc)
        #expect(reopened.document.rows == [["a", "b", "c", "d"]])
        await reader.close()
        await again.stop()
    }

    @Test("an operation under a known id with other content is refused and recorded (log with the sender, metric, status); the document is unchanged")
    func equivocation() async throws {
        let events = Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let author = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await author.create(name: "forged")
        let live = try await author.open(doc)
        // A fork of the author's copy (same replica, same clock) makes the next id with other content.
        var fork = live.document
        try await author.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("genuine".utf8)) }
        let forged = try fork.insertItem(atRow: 0, inSection: 0, value: Data("forged".utf8))
        #expect(live.document.operations.contains { $0.id == forged.id })

        let forger = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, localHost: "127.0.0.3", timeout: .seconds(livenessGuardSeconds))
        _ = try await forger.open(doc)
        do {
            try await forger.upload(doc, [forged])
            Issue.record("the forged operation was acknowledged")
        } catch let DaemonClientError.refused(code, text) {
            #expect(code == .refused)
            #expect(text.contains("different content"), "\(text)")
        }
        // The refusal reaches the forger from inside the document's host; the connection logs and
        // counts it once the host has answered it: wait for that, a moment at most.
        #expect(eventually(5) { !events.named("equivocation refused").isEmpty })
        let logged = try #require(events.named("equivocation refused").first)
        #expect(logged["document"] == doc.description)
        #expect(logged["operation"] == "\(forged.id)")
        #expect(logged["from"]?.hasPrefix("127.0.0.3") == true, "\(logged)")
        let status = try await Self.status(author)
        let metrics = status["metrics"] as? [String: Any] ?? status
        #expect(metrics["equivocations_refused"] as? Int == 1, "\(status)")
        // Unchanged, for the author and for a fresh reader.
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        #expect(try await reader.open(doc).document.rows == [["genuine"]])
        await reader.close()
        await forger.close()
        await author.close()
        await daemon.stop()
    }
}
#endif

#if canImport(Glibc)
@testable import ListSyncServer

@Suite("Rate limit: a token bucket per connection")
struct RateLimitTests {
    @Test("a full bucket lets a burst through, then one batch per 1/rate seconds; quiet time refills it, up to the burst")
    func bucket() {
        var b = TokenBucket(RateLimit(batchesPerSecond: 10, burst: 3), now: 0)
        func take(_ now: UInt64) -> Bool { b.take(now: now) }
        #expect([take(0), take(0), take(0)] == [true, true, true])
        #expect(take(0) == false)
        #expect(take(50_000_000) == false)           // 0.05 s: half a token
        #expect(take(100_000_000) == true)           // 0.1 s: one
        #expect(take(100_000_000) == false)
        // Ten quiet seconds give the burst back, not a hundred tokens.
        #expect([take(10_100_000_000), take(10_100_000_000), take(10_100_000_000)] == [true, true, true])
        #expect(take(10_100_000_000) == false)
    }

    @Test("a client flooding batches is refused over its limit and told why; another client on the same document is served as usual; nothing refused is applied")
    func flood() async throws {
        let events = DaemonFaultTests.Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            // Slow enough that no daemon, however loaded, takes 1,500 batches in under the limit
            // (at 100 per second, CI's daemon under a full suite once took them all in 52 s and
            // refused none), with a burst that the honest client's 20 edits stay within.
            config.rateLimit = RateLimit(batchesPerSecond: 2, burst: 30)
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let honest = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await honest.create(name: "flooded")
        _ = try await honest.open(doc)
        // The flooder is a raw connection: its 1,500 single-insert batches are sealed up front and
        // handed to the socket in one burst, a real flood whatever the load on this process's pool
        // (as 1,500 awaiting edit tasks, a full suite's load once trickled them in under the limit,
        // and nothing was refused).
        let base = try await honest.open(doc).document
        let raw = try await TCPTransport.connect(host: "127.0.0.1", port: port, key: key, options: patientClientOptions,
                                                 localHost: "127.0.0.4")
        var session = ClientSession(maxFrame: raw.maxFrame, timeout: Duration.seconds(600).nanoseconds)
        var incoming = raw.incoming.makeAsyncIterator()
        /// Feeds the daemon's frames to the session until `done` says enough (nil: the connection ended).
        func readUntil(_ done: ([ClientSession.Action]) -> Bool) async -> Bool {
            while let frame = await incoming.next() {
                if done(session.receive(frame, now: EventLoop.now())) { return true }
            }
            return false
        }
        for case let .send(f) in session.subscribe(doc, epoch: 0, version: base.version, now: EventLoop.now()) { _ = raw.enqueue(f) }
        #expect(await readUntil { $0.contains { if case .subscribed = $0 { return true }; return false } })
        var fork = base.fork(as: 404)
        var burst: [[UInt8]] = []
        for k in 0..<1_500 {
            let op = try fork.insertItem(at: IndexPath(item: 0, section: 0), value: Data("f\(k)".utf8))
            for case let .send(f) in session.send(doc, [op], now: EventLoop.now()).1 { burst.append(f) }
        }
        #expect(burst.count == 1_500)
        let start = ContinuousClock.now
        let flood = testTask {
            for f in burst { _ = raw.enqueue(f) }
            var acked = 0, limited = 0
            _ = await readUntil { actions in
                for case let .editDone(_, result) in actions {
                    switch result {
                    case .success: acked += 1
                    case let .failure(.refused(.limit, text)) where text.hasPrefix("rate limit"): limited += 1
                    case .failure: break
                    }
                }
                return acked + limited == 1_500
            }
            return (acked, limited)
        }
        // Meanwhile the honest client edits one batch at a time, as an app does.
        var slowest = Duration.zero
        for k in 0..<20 {
            let t0 = ContinuousClock.now
            try await honest.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("h\(k)".utf8)) }
            slowest = max(slowest, ContinuousClock.now - t0)
        }
        let (acked, limited) = await flood.value
        let seconds = Double((ContinuousClock.now - start).components.seconds) + 1
        // Served: none of the honest edits refused or timed out (edit throws if one is). How long
        // it waited is the machine's load as much as the flood's (alone well under a second, 3.8 s
        // once under a full suite): printed, not a verdict.
        print("rate limit flood: \(acked) acknowledged, \(limited) refused; the honest client's slowest edit \(slowest)")
        #expect(limited > 0)
        #expect(acked + limited == 1_500)
        #expect(Double(acked) <= 30 + 2 * seconds + 10, "\(acked) acknowledged in \(seconds) s")
        #expect(events.named("rate limited").first?["from"]?.hasPrefix("127.0.0.4") == true)
        // The 20 honest inserts are there; of the flood, at most the acknowledged ones: an
        // acknowledged insert made after a refused one depends on it, and waits (durable) in the
        // causal buffer until the flooder sends the refused one again.
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let copy = try await reader.open(doc).document
        #expect(copy.flat.filter { $0.hasPrefix("h") }.count == 20)
        let flooded = copy.flat.filter { $0.hasPrefix("f") }.count
        #expect(flooded >= 1 && flooded <= acked, "\(flooded) shown, \(acked) acknowledged")
        await reader.close()
        await raw.close(reason: "done")
        await honest.close()
        await daemon.stop()
    }

    @Test("an edit refused for the rate limit is sent again by the client until it is acknowledged: every edit returns, and the daemon holds each one (none waits in its causal buffer for a refused one)")
    func refusedEditSentAgain() async throws {
        let events = DaemonFaultTests.Events()
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            // Six edits at once against a burst of two: four are refused at first whatever the
            // load (the daemon would have to take 2 s per batch for the bucket to refill between them).
            config.rateLimit = RateLimit(batchesPerSecond: 0.5, burst: 2)
            config.log = { e, f in events.list.withLock { $0.append((e, f)) } }
        }
        defer { dir.remove() }
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await client.create(name: "limited")
        _ = try await client.open(doc)
        let values = (0..<6).map { "e\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for v in values {
                group.addTask {
                    try await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data(v.utf8)) }
                }
            }
            try await group.waitForAll()
        }
        #expect(events.named("rate limited").count == 1, "refused at first, and said once for the connection")
        let reader = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds))
        let copy = try await reader.open(doc).document
        #expect(copy.flat.sorted() == values, "\(copy.flat)")
        await reader.close()
        await client.close()
        await daemon.stop()
    }

    @Test("an edit refused for the rate limit until the client's timeout throws the daemon's refusal")
    func refusedEditGivesUp() async throws {
        let (daemon, port, key, dir) = try await DaemonLimitTests.start { config in
            // One batch, then none for 100 s: the second edit is refused at every try.
            config.rateLimit = RateLimit(batchesPerSecond: 0.01, burst: 1)
        }
        defer { dir.remove() }
        // Each try may wait the liveness guard for its answer (a busy machine); the edit is sent
        // again for 1 s of tries, then throws the refusal: a count of tries, not a race with load.
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: port, key: key, timeout: .seconds(livenessGuardSeconds),
                                                    limitPatience: .seconds(1))
        let doc = try await client.create(name: "limited")
        _ = try await client.open(doc)
        // The first takes the bucket's only token (its own answer is not the point here).
        try? await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("first".utf8)) }
        do {
            try await client.edit(doc) { d throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("second".utf8)) }
            Issue.record("the second edit was acknowledged over the limit")
        } catch let DaemonClientError.refused(code, text) {
            #expect(code == .limit && text.hasPrefix("rate limit"), "\(text)")
        }
        await client.close()
        await daemon.stop()
    }
}
#endif

#if canImport(Glibc)
@Suite("Status of a daemon with many resident documents")
struct LargeStatusTests {
    @Test("a status report of 200 KB (1,000 resident documents and more) crosses in parts, fed to the client one frame at a time; a name or error text is still capped at 64 KiB")
    func largeStatus() throws {
        let json = "{\"resident\":[" + String(repeating: "{\"id\":\"00112233445566778899aabbccddeeff\",\"name\":\"small\"},", count: 3_500) + "{}]}"
        #expect(json.utf8.count > 150_000)
        let server = ServerSession(maxFrame: 65_536, rateLimit: nil, now: 0)
        var client = ClientSession(maxFrame: 65_536)
        let (n, _) = client.request(.status, now: 0)
        let frames = server.status(request: n, json: json).compactMap { a -> [UInt8]? in if case let .send(f) = a { f } else { nil } }
        #expect(frames.count > 2)
        #expect(frames.allSatisfy { $0.count <= 65_536 })
        var answer: String?
        for f in frames {
            for case let .answered(r, .success(.status(s))) in client.receive(f, now: 1) where r == n { answer = s }
        }
        #expect(answer == json)
        let text = String(repeating: "x", count: 70_000)
        #expect(throws: (any Error).self) { try SyncMessage(decoding: SyncMessage.error(request: 1, document: nil, code: .limit, text: text).encoded()) }
    }
}
#endif
