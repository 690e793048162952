#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSyncClient
import ListStore
import ListSyncFaults
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListSyncTestSupport
import ListSyncTestTraits
import ListTable
import Synchronization
import Testing
import ListSync

/// Every suite that runs daemons behind fault proxies, one at a time (each starts processes and
/// loops; together they would starve a 2-core machine and each other's deadlines).
@Suite("Fault proxy (one suite at a time)", .serialized) struct FaultProxySuites {}

/// Values the daemon acknowledged, and a flag.
final class AckLedger: Sendable {
    let values = Mutex<Set<String>>([])
    let healed = Mutex(false)
    func add(_ v: String) { values.withLock { _ = $0.insert(v) } }
    /// How many acknowledged values start with `prefix`.
    func count(_ prefix: String) -> Int { values.withLock { $0.filter { $0.hasPrefix(prefix) }.count } }
    var all: Set<String> { values.withLock { $0 } }
}

/// A document's item texts, section by section.
func texts(_ live: LiveDocument) -> [[String]] {
    live.snapshot.sections.map { $0.items.map { String(decoding: $0.value, as: UTF8.self) } }
}

extension FaultPlan {
    /// The faults between clients and a daemon in the client suites: short delays, small segments,
    /// some stalls, 15 % drops, and a cut at a random byte on half the connections (below what
    /// each direction carries before the heal, so a decided cut happens).
    static func clientFaults(seed: UInt64) -> FaultPlan {
        var plan = FaultPlan(seed: seed)
        plan.delay = .zero ... .milliseconds(5)
        plan.segmentBytes = 1 ... 512
        plan.stallProbability = 0.03
        plan.stall = .milliseconds(50) ... .milliseconds(300)
        plan.dropProbability = 0.15
        plan.cutProbability = 0.5
        plan.cutBytes = 1 ... 800
        return plan
    }
}

extension FaultProxySuites {
    /// Clients of one daemon (a `listsync serve` process), each through a fault proxy of seeded
    /// drops, cuts at random bytes, stalls and delays; clients reconnect and resume their copy.
    @Suite("Clients through a fault proxy", .serialized, .hangGuard)
    struct ClientFaultTests {
        @Test("4 clients through a proxy that drops, cuts at random bytes and stalls: after the heal all converge, every acknowledged edit there once",
              arguments: [101, 202] as [UInt64])
        func clientsConverge(seed: UInt64) async throws {
            let dir = TemporaryFolder()
            defer { dir.remove() }
            let daemon = try await offPool { try DaemonProcess(data: dir.path) }
            let key = try KeyFile.read(daemon.keyFile)
            let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: daemon.port)),
                                                   plan: .clientFaults(seed: seed))

            // The document, made and watched directly.
            let admin = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
            let doc = try await admin.create(name: "faulty", sections: ["a", "b"])
            let reference = try await admin.open(doc)
            let ledger = AckLedger()
            let editsBeforeHeal = 12
            let port = proxy.port
            let clients = 4

            let finished = testTask {
                try await withThrowingTaskGroup(of: (DaemonClient, LiveDocument, Int).self) { group in
                    for i in 0..<clients {
                        group.addTask {
                            try await Self.client(i, doc: doc, port: port, key: key, edits: editsBeforeHeal, ledger: ledger)
                        }
                    }
                    var out: [(DaemonClient, LiveDocument, Int)] = []
                    for try await r in group { out.append(r) }
                    return out
                }
            }
            // Faults until every client has its edits before the heal acknowledged, then the heal.
            // An event, not a time: after three seconds, a loaded machine had made so few bytes pass
            // that seed 101 cut and dropped nothing. The faults a seed decides fall on the first
            // connections, whoever makes them, and all of those are made before the heal.
            let guardUntil = ContinuousClock.now + .seconds(Int64(4 * livenessGuardSeconds))
            while ledger.count("c") < clients * editsBeforeHeal, ContinuousClock.now < guardUntil {
                try await Task.sleep(for: .milliseconds(20))
            }
            let beforeHeal = await proxy.statistics()
            await proxy.heal()
            ledger.healed.withLock { $0 = true }
            let healed = ContinuousClock.now
            let results = try await finished.value
            let stats = await proxy.statistics()

            // Converged: every client holds what the daemon holds; every acknowledged insert, once.
            let acknowledged = ledger.all
            var converged = false
            while ContinuousClock.now - healed < .seconds(livenessGuardSeconds), !converged {
                let ref = reference.snapshot
                converged = results.allSatisfy { $0.1.snapshot == ref }
                    && Set(texts(reference).flatMap { $0 }).isSuperset(of: acknowledged)
                if !converged { try await Task.sleep(for: .milliseconds(10)) }
            }
            let items = reference.snapshot.sections.flatMap(\.items)
            print("seed \(seed): \(stats.faults) faults (\(stats.dropped) drops, \(stats.cut) cuts, \(stats.stalls) stalls) in "
                  + "\(stats.connections) connections; \(results.map(\.2).reduce(0, +)) reconnects; \(acknowledged.count) acknowledged; "
                  + "converged in \(ContinuousClock.now - healed) after the heal")
            #expect(converged, "reference \(texts(reference)) clients \(results.map { texts($0.1) })")
            #expect(Set(items.map(\.id)).count == items.count, "each item once")
            #expect(acknowledged.subtracting(Set(texts(reference).flatMap { $0 })).isEmpty)
            #expect(acknowledged.count >= clients, "every client's final edit at least")
            #expect(beforeHeal.cut + beforeHeal.dropped > 0, "the seed injected drops or cuts: \(beforeHeal)")

            for r in results { await r.0.close() }
            await admin.close()
            await proxy.close()
            _ = await offPool { daemon.terminate() }
        }

        /// One client: inserts through the proxy until `edits` are acknowledged, reconnecting and
        /// resuming its copy after every cut; after the heal, one last insert. Returns its client
        /// (still connected), its document and how many times it reconnected.
        static func client(_ i: Int, doc: DocumentID, port: UInt16, key: [UInt8], edits: Int,
                           ledger: AckLedger) async throws -> (DaemonClient, LiveDocument, Int) {
            var held: ListDocument?
            var epoch: UInt64 = 0
            var k = 0
            var reconnects = 0
            var finalDone = false
            let deadline = ContinuousClock.now + .seconds(Int64(4 * livenessGuardSeconds))
            while ContinuousClock.now < deadline {
                let healed = ledger.healed.withLock { $0 }
                if k >= edits && !healed {
                    try await Task.sleep(for: .milliseconds(20))
                    continue
                }
                guard let client = try? await DaemonClient.connect(host: "127.0.0.1", port: port, key: key,
                                                                    localHost: "127.0.4.\(2 + i)", changeSets: false, timeout: .seconds(livenessGuardSeconds)) else {
                    reconnects += 1
                    try await Task.sleep(for: .milliseconds(20))
                    continue
                }
                var live: LiveDocument?
                do {
                    let l = try await client.open(doc, resuming: held, epoch: epoch)
                    live = l
                    epoch = await client.info(doc)?.epoch ?? epoch
                    while k < edits || (healed && !finalDone) {
                        let value = k < edits ? "c\(i)-\(k)" : "c\(i)-final"
                        try await client.edit(doc) { d throws(ListError) in
                            let s = k % 2
                            let n = try d.itemCount(inSection: s)
                            _ = try d.insertItem(atRow: (k * 5) % (n + 1), inSection: s, value: Data(value.utf8))
                        }
                        ledger.add(value)
                        if k < edits { k += 1 } else { finalDone = true }
                        held = l.document
                    }
                    if healed { return (client, l, reconnects) }
                } catch {
                    // Cut: keep what this copy holds (the unacknowledged edit too) and resume.
                    if let live { held = live.document }
                }
                reconnects += 1
                await client.close()
            }
            throw DaemonTestError("client \(i) did not finish")
        }
    }

    /// Three `listsync serve` processes in a triangle, each peer link through a fault proxy.
    @Suite("Daemons peered through fault proxies", .ownThread, .serialized, .hangGuard)
    struct PeerFaultTests {
        @Test("A, B, C through proxies with faults: A partitioned from C, B killed or partitioned, all edit, heal: all converge",
              arguments: [(PartitionMode.reset, true, 7 as UInt64), (PartitionMode.blackhole, false, 8 as UInt64)])
        func partitionAndHeal(mode: PartitionMode, killB: Bool, seed: UInt64) async throws {
            let root = TemporaryFolder()
            defer { root.remove() }
            func plan(_ link: UInt64) -> FaultPlan {
                var p = FaultPlan(seed: seed &* 10 &+ link)
                p.delay = .zero ... .milliseconds(10)
                p.segmentBytes = 1 ... 512
                p.stallProbability = 0.03
                p.stall = .milliseconds(50) ... .milliseconds(300)
                p.dropProbability = 0.1
                p.cutProbability = 0.3
                p.cutBytes = 1 ... 3_000
                p.partitionMode = mode
                return p
            }
            let loop = try EventLoop()
            defer { loop.shutdown() }
            func proxy(to port: UInt16, _ link: UInt64) async throws -> FaultProxy {
                try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: port)), plan: plan(link), loop: loop)
            }
            let a = try DaemonProcess(data: root.path + "/a")
            defer { a.terminate() }
            let key = ["--key-file", a.keyFile]
            let ba = try await proxy(to: a.port, 0)
            var b = try DaemonProcess(data: root.path + "/b", extra: key + ["--peer", "127.0.0.1:\(ba.port)"])
            defer { b.terminate() }
            let cb = try await proxy(to: b.port, 1)
            let ca = try await proxy(to: a.port, 2)
            let c = try DaemonProcess(data: root.path + "/c", extra: key + ["--peer", "127.0.0.1:\(cb.port)", "--peer", "127.0.0.1:\(ca.port)"])
            defer { c.terminate() }
            let proxies = [ba, cb, ca]

            let created = try #require(try a.json(["create", "shared", "--sections", "x,y"]) as? [String: Any])
            let doc = try #require(created["id"] as? String)
            var acknowledged: [String] = []
            func insert(_ d: DaemonProcess, _ path: String, _ text: String) throws {
                let (code, _, err) = try d.run(["insert", doc, path, text])
                #expect(code == 0, "\(err)")
                if code == 0 { acknowledged.append(text) }
            }
            try insert(a, "0.0", "a-first")
            #expect(eventually(20) { ((try? table(c, doc)) ?? []) == [["a-first"], []] && ((try? table(b, doc)) ?? []) == [["a-first"], []] },
                    "the first edit did not reach B and C through the faulty links")

            // Partition: A | C, and B killed or cut off from both; everyone edits.
            await ca.partition()
            if killB {
                b.kill9()
            } else {
                await ba.partition()
                await cb.partition()
            }
            try insert(a, "1.0", "a-during")
            try insert(a, "0.0", "a-during-2")
            try insert(c, "0.0", "c-during")
            _ = try c.run(["move", doc, "0.0", "1.0"])
            try insert(c, "1.0", "c-during-2")
            if !killB {
                try insert(b, "0.0", "b-during")
            }
            try await Task.sleep(for: .milliseconds(500))

            // Heal; B back on its port if it was killed.
            for p in proxies { await p.heal() }
            let healed = Date()
            if killB {
                b = try DaemonProcess(data: root.path + "/b", port: b.port, extra: key + ["--peer", "127.0.0.1:\(ba.port)"])
            }
            var last: [[[String]]] = []
            let converged = eventually(20) {
                guard let ta = try? table(a, doc), let tb = try? table(b, doc), let tc = try? table(c, doc) else { return false }
                last = [ta, tb, tc]
                let items = ta.flatMap { $0 }
                return ta == tb && tb == tc && items.count == acknowledged.count && Set(items) == Set(acknowledged)
            }
            let seconds = Date().timeIntervalSince(healed)
            var stats = FaultStatistics()
            for p in proxies { stats = stats + (await p.statistics()) }
            print("\(mode) partition, B \(killB ? "killed" : "partitioned"), seed \(seed): \(stats.faults) faults "
                  + "(\(stats.dropped) drops, \(stats.cut) cuts, \(stats.stalls) stalls, \(stats.partitions) partitions); "
                  + "converged \(converged) \(String(format: "%.2f", seconds)) s after the heal (polled through the CLI)")
            #expect(converged, "a, b, c: \(last), acknowledged \(acknowledged)")
            for p in proxies { await p.close() }
        }
    }
}
#endif
