import Foundation
import Synchronization
import Testing
import ListSyncTestSupport

/// Cluster mode with more moving parts (Docs/Cluster.md): three nodes, a node killed while clients
/// write, the whole cluster (the NATS server and every node) killed and started again, renames.
extension ClusterProcessTests {
    @Test func threeNodesConvergeWithClientsOnEach() throws {
        let (nats, folder, key) = try server("127.0.0.16")
        defer { nats.remove(); folder.remove() }
        let nodes = try ["a", "b", "c"].map { try node(folder, $0, nats: nats, key: key, ack: $0 == "b" ? "local" : "cluster") }
        defer { for n in nodes { n.kill9() } }
        #expect(try nodes[0].run(["create", "board", "--sections", "Todo,Done"]).0 == 0)
        for n in nodes.dropFirst() {
            #expect(eventually(30) { items(n, "board").count == 2 }, "\(n.data): \(items(n, "board"))\n\(n.log)")
        }
        // Each node's client writes at once; every node ends with every item, in one order.
        let written = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: nodes.count) { i in
            for k in 0..<4 {
                let text = "\(["a", "b", "c"][i])\(k)"
                if (try? nodes[i].run(["insert", "board", "\(k % 2).0", text]).0) == 0 { written.withLock { $0.append(text) } }
            }
        }
        let want = Set(written.withLock { $0 })
        #expect(want.count == 12, "every insert was acknowledged: \(want.sorted())")
        #expect(eventually(60) {
            let tables = nodes.map { items($0, "board") }
            return Set(tables[0].joined()) == want && tables.allSatisfy { $0 == tables[0] }
        }, "\(nodes.map { items($0, "board") })")
    }

    @Test func aNodeKilledWhileClientsWriteLosesNoAcknowledgedInsert() throws {
        let (nats, folder, key) = try server("127.0.0.17")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        var b = try node(folder, "b", nats: nats, key: key)
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        #expect(eventually(30) { items(b, "board") == [[]] }, "B: \(items(b, "board"))")
        // A client that writes to B first, A when B is gone; B is killed under it.
        let acknowledged = Mutex<[String]>([]), lastError = Mutex("")
        let done = Atomic<Bool>(false), finished = Atomic<Bool>(false)
        let addresses = "\(b.address),\(a.address)", dataFolder = a.data
        let writer = Thread {
            var k = 0
            while !done.load(ordering: .acquiring), k < 200 {
                let text = "w\(k)"
                let r = try? runListsync(["insert", "board", "0.0", text, "--daemon", addresses,
                                          "--key-file", key, "--data", dataFolder])
                if r?.0 == 0 { acknowledged.withLock { $0.append(text) } } else { lastError.withLock { $0 = "\(String(describing: r))" } }
                k += 1
            }
            finished.store(true, ordering: .releasing)
        }
        writer.start()
        #expect(eventually(30) { acknowledged.withLock { $0.count } >= 5 }, "\(lastError.withLock { $0 })")
        b.kill9()
        let before = acknowledged.withLock { $0.count }
        #expect(eventually(30) { acknowledged.withLock { $0.count } >= before + 5 }, "the client did not move to A: \(lastError.withLock { $0 })")
        done.store(true, ordering: .releasing)
        #expect(eventually(60) { finished.load(ordering: .acquiring) })
        let want = Set(acknowledged.withLock { $0 })
        b = try DaemonProcess(data: b.data, port: b.port, extra: b.extra)
        defer { b.kill9() }
        #expect(eventually(60) { Set(items(a, "board").joined()).isSuperset(of: want) && items(b, "board") == items(a, "board") },
                "lost on A: \(want.subtracting(items(a, "board").joined()).sorted()); B: \(items(b, "board").joined().count) items")
    }

    @Test func theWholeClusterKilledAndStartedAgainKeepsEverything() throws {
        let (nats, folder, key) = try server("127.0.0.18")
        defer { nats.remove(); folder.remove() }
        var a = try node(folder, "a", nats: nats, key: key)
        var b = try node(folder, "b", nats: nats, key: key, ack: "local")
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        #expect(eventually(30) { items(b, "board") == [[]] }, "B: \(items(b, "board"))")
        #expect(try a.run(["insert", "board", "0.0", "from-a"]).0 == 0)
        #expect(try b.run(["insert", "board", "0.0", "from-b"]).0 == 0)
        #expect(eventually(30) { items(a, "board").joined().count == 2 && items(b, "board") == items(a, "board") })
        let before = items(a, "board")
        // Everything dies at once, the broker last.
        a.kill9()
        b.kill9()
        nats.stop()
        try nats.restart()
        a = try DaemonProcess(data: a.data, port: a.port, extra: a.extra)
        defer { a.kill9() }
        b = try DaemonProcess(data: b.data, port: b.port, extra: b.extra)
        defer { b.kill9() }
        #expect(items(a, "board") == before && items(b, "board") == before, "A: \(items(a, "board")) B: \(items(b, "board"))")
        // And the cluster still carries new writes both ways.
        #expect(try b.run(["insert", "board", "0.0", "after-b"]).0 == 0)
        #expect(try a.run(["insert", "board", "0.0", "after-a"]).0 == 0)
        #expect(eventually(30) { items(a, "board").joined().count == 4 && items(b, "board") == items(a, "board") },
                "A: \(items(a, "board")) B: \(items(b, "board"))\n\(a.log)\n\(b.log)")
    }

    @Test func aRenameOnOneNodeShowsOnEveryNode() throws {
        let (nats, folder, key) = try server("127.0.0.24")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        let b = try node(folder, "b", nats: nats, key: key)
        defer { b.kill9() }
        let doc = try createBoard(on: a)
        func name(_ d: DaemonProcess) -> String? {
            ((try? d.json(["docs"]) as? [[String: Any]]) ?? []).first { $0["id"] as? String == doc }?["name"] as? String
        }
        #expect(eventually(30) { name(b) == "board" }, "B: \(String(describing: name(b)))")
        #expect(try a.run(["rename", doc, "--name", "weekend board"]).0 == 0)
        #expect(eventually(30) { name(b) == "weekend board" }, "B: \(String(describing: name(b)))\n\(b.log)")
        #expect(try b.run(["rename", doc, "--name", "tools"]).0 == 0)
        #expect(eventually(30) { name(a) == "tools" && name(b) == "tools" },
                "A: \(String(describing: name(a))) B: \(String(describing: name(b)))")
        // A node started later takes the list's name, not the one the document was made with.
        let c = try node(folder, "c", nats: nats, key: key)
        defer { c.kill9() }
        #expect(eventually(30) { name(c) == "tools" }, "C: \(String(describing: name(c)))")
    }
}
