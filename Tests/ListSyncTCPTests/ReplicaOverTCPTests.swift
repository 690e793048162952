#if canImport(Glibc)
import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport
import ListSyncSimulation
@testable import ListSyncTCP

/// `Replica`, unchanged, over real TCP connections on 127.0.0.1.
extension SocketTests {
    @Suite("Replicas over TCP converge", .serialized, .timeLimit(.minutes(2)))
    struct ReplicaOverTCPTests {
        /// Hands every accepted connection to `replica`.
        static func serve(_ replica: Replica, _ listener: TCPListener) -> Task<Void, Never> {
            Task {
                while let t = try? await listener.acceptTCP() { await replica.connect(t) }
            }
        }

        /// Makes `count` random edits on `replica` (seeded).
        static func edit(_ replica: Replica, count: Int, seed: UInt64) async throws {
            var rng = SplitMix64(seed: seed)
            for k in 0..<count {
                try await replica.edit { doc throws(ListError) in
                    let e = RandomEdit.random(for: doc, using: &rng) { "r\(doc.replica.rawValue)-\(k)" }
                    try e.apply(to: &doc)
                }
            }
        }

        /// The made operations of every replica are in every replica, all agree, each item once.
        static func converged(_ replicas: [Replica]) -> Bool {
            let docs = replicas.map { $0.live.document }
            var all = VersionVector()
            for d in docs where d.version[d.replica] > 0 { all.formUnion(VersionVector([d.replica: d.version[d.replica]])) }
            guard let first = docs.first else { return true }
            let state = first.encodedState()
            return docs.allSatisfy { $0.version.includes(all) && $0.encodedState() == state && $0.pendingCount == 0 }
        }

        static func itemsOnce(_ replica: Replica) -> Bool {
            let ids = replica.snapshot.sections.flatMap { $0.items.map(\.id) }
            return Set(ids).count == ids.count
        }

        @Test("two replicas edit apart, connect over TCP and converge; later edits stream live")
        func twoReplicas() async throws {
            try await withServer { loop, listener in
                let a = Replica(document: ListDocument(replica: ReplicaID(1)))
                let b = Replica(document: ListDocument(replica: ReplicaID(2)))
                try await Self.edit(a, count: 60, seed: 1)
                try await Self.edit(b, count: 60, seed: 2)
                let server = Self.serve(a, listener)
                let t = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: testKey, options: testOptions, loop: loop)
                await b.connect(t)
                #expect(await eventually { Self.converged([a, b]) })
                try await Self.edit(a, count: 30, seed: 3)
                try await Self.edit(b, count: 30, seed: 4)
                #expect(await eventually { Self.converged([a, b]) })
                #expect(Self.itemsOnce(a))
                await a.close(); await b.close()
                server.cancel()
            }
        }

        @Test("16 replicas in a star converge through the hub")
        func star() async throws {
            try await withServer { loop, listener in
                let hub = Replica(document: ListDocument(replica: ReplicaID(100)))
                let server = Self.serve(hub, listener)
                var leaves: [Replica] = []
                for i in 1...15 {
                    let r = Replica(document: ListDocument(replica: ReplicaID(UInt64(i))))
                    let t = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: testKey, options: testOptions, loop: loop)
                    await r.connect(t)
                    leaves.append(r)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (i, r) in ([hub] + leaves).enumerated() {
                        group.addTask { try await Self.edit(r, count: 20, seed: UInt64(10 + i)) }
                    }
                    try await group.waitForAll()
                }
                let all = [hub] + leaves
                if !(await eventually(20) { Self.converged(all) }) {
                    for r in all { await r.tick() }   // anti-entropy, as an app would on its timer
                }
                #expect(await eventually(20) { Self.converged(all) })
                #expect(Self.itemsOnce(hub))
                for r in all { await r.close() }
                server.cancel()
            }
        }

        @Test("16 replicas in a chain converge, each relaying to the next")
        func chain() async throws {
            let loop = try EventLoop()
            var replicas: [Replica] = []
            var listeners: [TCPListener] = []
            var servers: [Task<Void, Never>] = []
            for i in 0..<16 {
                let r = Replica(document: ListDocument(replica: ReplicaID(UInt64(i + 1))))
                if let previous = listeners.last {
                    let t = try await TCPTransport.connect(host: "127.0.0.1", port: previous.port, key: testKey, options: testOptions, loop: loop)
                    await r.connect(t)
                }
                let l = try await TCPListener.listen(host: "127.0.0.1", port: 0, key: testKey, options: testOptions, loop: loop)
                servers.append(Self.serve(r, l))
                listeners.append(l)
                replicas.append(r)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, r) in replicas.enumerated() {
                    group.addTask { try await Self.edit(r, count: 15, seed: UInt64(50 + i)) }
                }
                try await group.waitForAll()
            }
            let all = replicas
            #expect(await eventually(30) { Self.converged(all) })
            for r in replicas { await r.close() }
            for l in listeners { await l.close() }
            for s in servers { s.cancel() }
            #expect(await eventually(3) { await loop.registeredDescriptors() == 0 })
            loop.shutdown()
        }

        @Test("connections cut at random bytes (mid-handshake, mid-frame, mid-sync) reconnect and converge; nothing twice, nothing lost",
              arguments: [1, 2, 3] as [UInt64])
        func cutConnections(seed: UInt64) async throws {
            try await withServer { loop, listener in
                let a = Replica(document: ListDocument(replica: ReplicaID(1)))
                let b = Replica(document: ListDocument(replica: ReplicaID(2)))
                try await Self.edit(a, count: 300, seed: seed * 10)
                try await Self.edit(b, count: 300, seed: seed * 10 + 1)
                let server = Self.serve(a, listener)
                // The first 8 connections die after 1...6000 bytes; the 9th passes.
                let proxy = try #require(CuttingProxy(to: listener.port, cuts: 8, maxBytes: 6000, seed: seed))
                let client = ReconnectingClient(replica: b, host: "127.0.0.1", port: proxy.port, key: testKey,
                                                options: testOptions, backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200)),
                                                loop: loop)
                await client.start()
                let editing = Task { try await Self.edit(b, count: 100, seed: seed * 10 + 2) }
                try await editing.value
                #expect(await eventually(30) { Self.converged([a, b]) }, "cuts at \(proxy.cutPoints)")
                // Sync may finish before every planned cut is reached; at least one connection was cut.
                #expect(await client.connections >= 2)
                #expect(Self.itemsOnce(a) && Self.itemsOnce(b))
                let refusedA = await a.refusedOperations, refusedB = await b.refusedOperations
                #expect(refusedA.isEmpty && refusedB.isEmpty)
                await client.stop()
                proxy.stop()
                await a.close(); await b.close()
                server.cancel()
            }
        }
    }
}
#endif
