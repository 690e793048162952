import Foundation
import Testing
import ListCRDT
import ListSyncClient
import ListSyncNATS
import ListSyncTCP
import ListSyncTransport
import ListTable
import ListSyncServer
import ListSyncFiles
import ListSyncTestSupport
import ListSyncTestTraits

/// Cluster mode (Docs/Cluster.md) with real processes: a `nats-server -js` and `listsync serve
/// --cluster` nodes on 127.0.0.x, clients (the CLI) on different nodes.
@Suite(.serialized, .ownThread, .enabled(if: NATSServerProcess.available, "nats-server is not installed"))
struct ClusterProcessTests {
    /// A key file shared by the nodes (and their clients).
    func sharedKey(_ folder: TemporaryFolder) throws -> String {
        let path = folder.path + "/cluster-key"
        var g = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(key), attributes: [.posixPermissions: 0o600])
        return path
    }

    /// A NATS server with JetStream on `host`, a temporary folder and a key file in it: where
    /// each test starts (remove the server and the folder after).
    func server(_ host: String) throws -> (NATSServerProcess, TemporaryFolder, String) {
        let nats = try NATSServerProcess(host: host)
        let folder = TemporaryFolder()
        do { return (nats, folder, try sharedKey(folder)) } catch {
            nats.remove()
            folder.remove()
            throw error
        }
    }

    func node(_ folder: TemporaryFolder, _ name: String, nats: NATSServerProcess, key: String, ack: String = "cluster",
              extra: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(data: folder.path + "/" + name, extra: ["--key-file", key, "--cluster", nats.url, "--ack", ack] + extra)
    }

    /// Creates the document "board" (one section, "Todo") on `d`; returns its id.
    func createBoard(on d: DaemonProcess) throws -> String {
        let (code, out, err) = try d.run(["create", "board", "--sections", "Todo"])
        #expect(code == 0, "\(err)")
        return out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aNATSServerKilledInAThreeServerClusterLosesNoAcknowledgedBatch() throws {
        let hosts = ["127.0.0.13", "127.0.0.14", "127.0.0.15"]
        let routes = hosts.map { "nats://\($0):6222" }.joined(separator: ",")
        var servers: [NATSServerProcess] = []
        let folder = TemporaryFolder()
        defer { for s in servers { s.remove() }; folder.remove() }
        for (i, h) in hosts.enumerated() {
            servers.append(try NATSServerProcess(host: h, extra: ["-n", "s\(i)", "--cluster_name", "listsync", "--cluster", "nats://\(h):6222",
                                                                 "--routes", routes]))
        }
        for s in servers { #expect(s.waitFor("metadata leader"), "\(s.output)") }
        let key = try sharedKey(folder)
        let urls = servers.map(\.url)
        // A on server 0 first (killed below), B on server 1 first; the stream has 3 replicas.
        let a = try DaemonProcess(data: folder.path + "/a", extra: ["--key-file", key, "--cluster-replicas", "3",
                                                                    "--cluster", urls.joined(separator: ",")])
        defer { a.kill9() }
        let b = try DaemonProcess(data: folder.path + "/b", extra: ["--key-file", key, "--cluster-replicas", "3",
                                                                    "--cluster", [urls[1], urls[2], urls[0]].joined(separator: ",")])
        defer { b.kill9() }
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        #expect(try a.run(["insert", "board", "0.0", "before-a"]).0 == 0)
        #expect(eventually(30) { items(b, "board").joined().count == 1 }, "B: \(items(b, "board"))")
        servers[0].stop()
        // A reconnects to another server; both keep acknowledging (--ack cluster: 2 of 3 replicas).
        let (code, out, err, killed) = try runListsync(["insert", "board", "0.0", "after-a", "--daemon", a.address, "--key-file", key,
                                                        "--data", a.data], atMost: livenessGuardSeconds)
        #expect(code == 0 && !killed, "\(out) \(err)\n\(a.log)")
        #expect(try b.run(["insert", "board", "0.0", "after-b"]).0 == 0)
        let want: Set<String> = ["before-a", "after-a", "after-b"]
        #expect(eventually(60) { Set(items(a, "board").joined()) == want && Set(items(b, "board").joined()) == want },
                "A: \(items(a, "board")) B: \(items(b, "board"))")
    }

    func items(_ d: DaemonProcess, _ doc: String) -> [[String]] { (try? table(d, doc)) ?? [] }

    @Test func twoNodesConvergeWithClientsOnEach() throws {
        let (nats, folder, key) = try server("127.0.0.8")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        let b = try node(folder, "b", nats: nats, key: key, ack: "local")
        defer { b.kill9() }
        let (created, _, err) = try a.run(["create", "board", "--sections", "Todo,Done"])
        #expect(created == 0, "\(err)")
        // The document list is in the cluster: B makes its copy and lists it.
        #expect(eventually(30) { (try? b.run(["docs"]).1.contains("board")) == true }, "B does not list the document: \(b.log)")
        // and fills it from the stream: B's insert at 1.0 needs both sections there.
        #expect(eventually(30) { items(b, "board").count == 2 }, "B: \(items(b, "board"))")
        #expect(try a.run(["insert", "board", "0.0", "milk"]).0 == 0)
        #expect(try b.run(["insert", "board", "1.0", "bread"]).0 == 0)
        let want = [["milk"], ["bread"]]
        #expect(eventually(30) { items(a, "board") == want && items(b, "board") == want },
                "A: \(items(a, "board")) B: \(items(b, "board"))\n\(a.log)\n\(b.log)")
        // Both orders of concurrent edits converge: a burst on each node at once.
        for i in 0..<5 {
            _ = try a.run(["insert", "board", "0.0", "a\(i)"])
            _ = try b.run(["insert", "board", "1.0", "b\(i)"])
        }
        #expect(eventually(30) { items(a, "board") == items(b, "board") && items(a, "board").joined().count == 12 },
                "A: \(items(a, "board")) B: \(items(b, "board"))")
    }

    @Test func aMessageWithoutTheClusterTagIsRefused() async throws {
        let (nats, folder, key) = try server("127.0.0.9")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        let id = try createBoard(on: a)
        #expect(try a.run(["insert", "board", "0.0", "milk"]).0 == 0)
        // Anyone who can publish to the broker: a valid batch of operations, without a tag, and
        // with a tag made from another key.
        var intruder = ListDocument(replica: ReplicaID(99))
        let op = try intruder.insertSection(at: 0, value: Data("INJECTED".utf8))
        let subject = "listsync.doc.\(id)"
        let c = try await NATSConnection.connect(to: [NATSServerAddress(host: nats.host, port: nats.port)])
        let js = JetStream(c, timeout: .seconds(20))
        _ = try await js.publish(subject, payload: ListOperation.encode([op]))
        let forged = ClusterEnvelope.seal([op], document: DocumentID(hex: id)!, subject: subject,
                                          key: ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 7, count: 32)))
        _ = try await js.publish(subject, payload: forged.payload, headers: forged.headers)
        await c.close()
        #expect(eventually(30) { a.log.components(separatedBy: "cluster message refused").count - 1 == 2 }, "\(a.log)")
        #expect(a.log.contains("no Listsync-Tag header") && a.log.contains("the tag is not the cluster key's"))
        let cluster = (try a.json(["status"]) as? [String: Any])?["cluster"] as? [String: Any]
        #expect(cluster?["refused"] as? Int == 2 && cluster?["connected"] as? Bool == true, "\(String(describing: cluster))")
        // Nothing of either was applied; the node still takes edits.
        #expect(try a.run(["insert", "board", "0.1", "eggs"]).0 == 0)
        #expect(items(a, "board") == [["milk", "eggs"]])
    }

    @Test func ackClusterWaitsForJetStreamAndAckLocalDoesNot() throws {
        let (nats, folder, key) = try server("127.0.0.10")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key, ack: "cluster")
        defer { a.kill9() }
        let b = try node(folder, "b", nats: nats, key: key, ack: "local")
        defer { b.kill9() }
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        // B has the document and its section (listed first, then filled from the stream): the
        // insert at 0.0 below needs the section on B's disk once JetStream is gone.
        #expect(eventually(30) { items(b, "board").count == 1 })
        nats.stop()
        // --ack local: on B's disk is enough.
        #expect(try b.run(["insert", "board", "0.0", "local"]).0 == 0)
        // --ack cluster: not acknowledged while JetStream cannot store it (the client gives up here).
        let (_, out, _, killed) = try runListsync(["insert", "board", "0.0", "cluster", "--daemon", a.address, "--key-file", key,
                                                   "--data", a.data], atMost: 6)
        #expect(killed && !out.contains("acknowledged"), "\(out)")
        try nats.restart()
        // Both batches reach the stream once it is back, and every node has both.
        let both: ([[String]]) -> Bool = { $0.first.map { Set($0) == ["local", "cluster"] } ?? false }
        #expect(eventually(60) { both(items(a, "board")) && both(items(b, "board")) },
                "A: \(items(a, "board")) B: \(items(b, "board"))\n\(a.log)")
    }

    @Test func aNodeKilledWithSIGKILLCatchesUpWhenRestarted() throws {
        let (nats, folder, key) = try server("127.0.0.11")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        var b = try node(folder, "b", nats: nats, key: key)
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        #expect(try a.run(["insert", "board", "0.0", "one"]).0 == 0)
        #expect(eventually(30) { items(b, "board") == [["one"]] })
        b.kill9()
        // The CLI given both nodes, B first: B refuses the connection, the client moves to A.
        let (code, out, err) = try runListsync(["insert", "board", "0.0", "two", "--daemon", "\(b.address),\(a.address)",
                                                "--key-file", a.keyFile, "--data", a.data])
        #expect(code == 0 && out.contains("acknowledged"), "\(out) \(err)")
        #expect(try a.run(["insert", "board", "0.0", "three"]).0 == 0)
        b = try DaemonProcess(data: b.data, port: b.port, extra: b.extra)
        defer { b.kill9() }
        #expect(eventually(30) { items(b, "board") == items(a, "board") && items(a, "board").joined().count == 3 },
                "A: \(items(a, "board")) B: \(items(b, "board"))")
    }

    @Test func aBatchAcknowledgedLocallyByANodeKilledBeforeItsPublishIsPublishedOnRestart() throws {
        let (nats, folder, key) = try server("127.0.0.12")
        defer { nats.remove(); folder.remove() }
        var a = try node(folder, "a", nats: nats, key: key, ack: "local")
        let b = try node(folder, "b", nats: nats, key: key)
        defer { b.kill9() }
        #expect(try a.run(["create", "board", "--sections", "Todo"]).0 == 0)
        #expect(eventually(30) { items(b, "board") == [[]] }, "B: \(items(b, "board"))")
        nats.stop()
        // On A's disk only: the publish cannot succeed, and A dies before it could.
        #expect(try a.run(["insert", "board", "0.0", "orphan"]).0 == 0)
        a.kill9()
        try nats.restart()
        a = try DaemonProcess(data: a.data, port: a.port, extra: a.extra)
        defer { a.kill9() }
        #expect(eventually(60) { items(b, "board") == [["orphan"]] }, "B: \(items(b, "board"))\n\(a.log)")
        #expect(a.log.contains("cluster republishing"))
    }

    @Test func aNodeWithoutANATSServerDoesNotStartAndBadFlagsAreRefused() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let (code, _, err, killed) = try runListsync(["serve", "--data", folder.path + "/a", "--listen", "127.0.0.1:0",
                                                      "--cluster", "nats://127.0.0.1:1"], atMost: livenessGuardSeconds)
        #expect(code == 1 && !killed && err.contains("cannot connect to NATS"), "\(err)")
        for bad in [["--cluster", "nats://h:x"], ["--cluster", "nats://127.0.0.1:1", "--ack", "sometimes"], ["--ack", "local"],
                    ["--cluster", "nats://127.0.0.1:1", "--cluster-replicas", "9"], ["--cluster", "nats://127.0.0.1:1", "--cluster-trim", "-1"],
                    ["--cluster", "nats://127.0.0.1:1", "--cluster-lease", "0"], ["--cluster-grace", "5"]] {
            let (c, _, e, k) = try runListsync(["serve", "--data", folder.path + "/b", "--listen", "127.0.0.1:0"] + bad, atMost: livenessGuardSeconds)
            #expect(c == 2 && !k, "\(bad): \(c) \(e)")
        }
    }

    @Test func theDeviceClientMovesToAnotherNodeWhenItsNodeIsKilled() async throws {
        let (nats, folder, key) = try server("127.0.0.16")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        let b = try node(folder, "b", nats: nats, key: key)
        defer { b.kill9() }
        var server = SyncClient.Server(host: "127.0.0.1", port: a.port, key: try KeyFile.read(key), requestTimeout: .seconds(20),
                                       backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(400)))
        server.alternates = [("127.0.0.1", b.port)]
        let device = try SyncClient(folder: folder.path + "/device", server: server)
        // Made on the device with its own id, uploaded to A, listed in the cluster: B has it too.
        let doc = try await device.create(name: "board", sections: ["todo"])
        _ = try await device.edit(doc) { (d: inout ListDocument) throws(ListError) in _ = try d.insertItem(atRow: 0, inSection: 0, value: Data("one".utf8)) }
        await device.start()
        try await device.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(eventually(30) { items(b, "board") == [["one"]] }, "B: \(items(b, "board"))\n\(b.log)")
        a.kill9()
        _ = try await device.edit(doc) { (d: inout ListDocument) throws(ListError) in _ = try d.insertItem(atRow: 1, inSection: 0, value: Data("two".utf8)) }
        try await device.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        #expect(items(b, "board") == [["one", "two"]])
        await device.close()
    }

    @Test func aDocumentDestroyedOnOneNodeIsDestroyedOnTheOthers() async throws {
        let (nats, folder, key) = try server("127.0.0.17")
        defer { nats.remove(); folder.remove() }
        let a = try node(folder, "a", nats: nats, key: key)
        defer { a.kill9() }
        let b = try node(folder, "b", nats: nats, key: key)
        defer { b.kill9() }
        let id = try createBoard(on: a)
        #expect(try a.run(["create", "kept", "--sections", "Todo"]).0 == 0)
        #expect(eventually(30) { let d = (try? b.run(["docs"]).1) ?? ""; return d.contains("board") && d.contains("kept") })
        #expect(try await subjectMessages(nats, id) == 1)
        let (code, out, err) = try a.run(["destroy", "board", "--yes"])
        #expect(code == 0, "\(out) \(err)")
        // Its operations leave the stream once it is listed as destroyed.
        #expect(try await subjectMessages(nats, id) == 0)
        #expect(eventually(30) { let d = (try? b.run(["docs"]).1) ?? "board"; return !d.contains("board") && d.contains("kept") },
                "\(b.log)")
        // The log line is written just after the list loses the document (an await between):
        // waited for too, not read at once.
        #expect(eventually(10) { b.log.contains("destroyed on another cluster node") }, "\(b.log)")
    }

    @Test func envelopeRoundTripAndRefusals() throws {
        var d = ListDocument(replica: ReplicaID(5))
        let ops = [try d.insertSection(at: 0, value: Data("s".utf8))]
        let key = ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 1, count: 32))
        let id = DocumentID(high: 1, low: 2)
        let sealed = ClusterEnvelope.seal(ops, document: id, subject: "p.x", key: key)
        #expect(try ClusterEnvelope.open(subject: "p.x", headers: sealed.headers, payload: sealed.payload, key: key) == ops)
        #expect(sealed.messageID == ClusterEnvelope.messageID(id, ops))
        #expect(throws: ClusterEnvelope.Refusal.badTag) {
            try ClusterEnvelope.open(subject: "p.y", headers: sealed.headers, payload: sealed.payload, key: key)
        }
        #expect(throws: ClusterEnvelope.Refusal.badTag) {
            try ClusterEnvelope.open(subject: "p.x", headers: sealed.headers, payload: sealed.payload + [0], key: key)
        }
        #expect(throws: ClusterEnvelope.Refusal.untagged) {
            try ClusterEnvelope.open(subject: "p.x", headers: nil, payload: sealed.payload, key: key)
        }
        let garbage: [UInt8] = [1, 2, 3]
        let tagged = NATSHeaders([(ClusterEnvelope.tagHeader, ClusterEnvelope.tagHex(subject: "p.x", payload: garbage, key: key))])
        #expect(throws: ClusterEnvelope.Refusal.self) { try ClusterEnvelope.open(subject: "p.x", headers: tagged, payload: garbage, key: key) }
    }
}

