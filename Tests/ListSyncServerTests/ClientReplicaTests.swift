import Foundation
import ListCRDT
import ListStore
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// The command line's kept replica id (`ClientReplica`): one id per client folder and slot, reused
/// only while the daemon holds everything it may have sent.
@Suite("A stable replica id per client folder", .ownThread, .serialized, .hangGuard)
struct ClientReplicaTests {
    /// Slot 0 of `folder`, waiting up to 5 s while it is held: a slot just released may live on
    /// for a moment in a process another test is spawning (between its fork and its exec).
    static func firstSlot(_ folder: String) throws -> ClientReplica? {
        expectOwnThread("ClientReplicaTests.firstSlot (waiting for a slot)")
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while true {
            if let slot = try ClientReplica.acquire(folder: folder, slots: 1) { return slot }
            if Date() > deadline { return nil }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    @Test("the id is kept across uses; a second holder gets another slot and id; all slots held: nil")
    func slots() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let clients = folder.path + "/a/clients"   // missing parents are made
        var first: ReplicaID?
        do {
            let a = try #require(try ClientReplica.acquire(folder: clients, slots: 2))
            first = a.replica
            let b = try #require(try ClientReplica.acquire(folder: clients, slots: 2))
            #expect(b.replica != a.replica)
            #expect(b.path != a.path)
            let third = try ClientReplica.acquire(folder: clients, slots: 2)
            #expect(third == nil)
            withExtendedLifetime((a, b)) {}
        }
        // Released with the objects: slot 0 again, with its id.
        let kept = try #require(try Self.firstSlot(clients))
        #expect(kept.replica == first)
        let mode = (try FileManager.default.attributesOfItem(atPath: kept.path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
    }

    @Test("reuse only when the daemon's version holds what the id may have sent; renew forgets it; both survive a reopen")
    func reuseRule() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        var rng = SystemRandomNumberGenerator()
        let doc = DocumentID.random(using: &rng), other = DocumentID.random(using: &rng)
        let (id, renewedID): (ReplicaID, ReplicaID)
        do {
            let slot = try #require(try Self.firstSlot(folder.path))
            id = slot.replica
            #expect(slot.mayReuse(in: doc, version: VersionVector()))
            try slot.willSend(doc, upTo: 7)
            try slot.willSend(doc, upTo: 5)   // never lowered
            #expect(!slot.mayReuse(in: doc, version: VersionVector([id: 6])))
            #expect(slot.mayReuse(in: doc, version: VersionVector([id: 7])))
            #expect(slot.mayReuse(in: other, version: VersionVector()))
        }
        do {
            let slot = try #require(try Self.firstSlot(folder.path))
            #expect(slot.replica == id)
            #expect(!slot.mayReuse(in: doc, version: VersionVector([id: 6])), "the record is durable")
            try slot.renew()
            renewedID = slot.replica
            #expect(renewedID != id)
            #expect(slot.mayReuse(in: doc, version: VersionVector()))
        }
        let slot = try #require(try Self.firstSlot(folder.path))
        #expect(slot.replica == renewedID)
    }

    @Test("a slot file cut at any byte, or with any byte flipped, is renewed: never trusted with a wrong record")
    func tornFile() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/slot-0"
        var rng = SystemRandomNumberGenerator()
        let doc = DocumentID.random(using: &rng)
        let id: ReplicaID
        do {
            let slot = try #require(try Self.firstSlot(folder.path))
            try slot.willSend(doc, upTo: 41)
            try slot.willSend(DocumentID.random(using: &rng), upTo: 3)
            id = slot.replica
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        var damaged: [Data] = (0..<whole.count).map { whole.prefix($0) }
        for i in 0..<whole.count {
            var d = whole
            d[i] ^= 0x01
            damaged.append(d)
        }
        for bytes in damaged {
            try bytes.write(to: URL(fileURLWithPath: path))
            let slot = try #require(try Self.firstSlot(folder.path))
            if slot.replica == id {
                // Only a file that still says exactly what was written may keep the id.
                #expect(!slot.mayReuse(in: doc, version: VersionVector([id: 40])), "kept the id but lost its record")
            } else {
                #expect(slot.mayReuse(in: doc, version: VersionVector()))
            }
        }
    }
}

extension DaemonProcessTests {
    @Test("commands run one after another edit as one replica; one run at once as another; a daemon that lacks a sent edit gets a fresh id")
    func stableCommandReplica() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let created = try #require(try d.json(["create", "list", "--sections", "A"]) as? [String: Any])
        let docText = try #require(created["id"] as? String)
        let doc = try #require(DocumentID(hex: docText))
        for i in 0..<6 {
            let (code, _, err) = try d.run(["insert", "list", "0.0", "item \(i)"])
            #expect(code == 0, "\(err)")
        }
        #expect(try d.run(["move", "list", "0.0", "0.5"]).0 == 0)
        // A command that holds its slot (watch) while others run: they take the next slot. It
        // takes its slot before it opens the document, and says "watching" once it has: waited
        // for, not guessed (a 500 ms sleep lost the race on a loaded machine and the inserts took
        // slot 0 before the watch did).
        let watch = try BackgroundListsync(["watch", "list", "--daemon", d.address, "--key-file", d.keyFile, "--data", d.data])
        defer { watch.stop() }
        #expect(eventually(10) { watch.stdout.text.contains("watching") }, "\(watch.stderr.text)")
        for i in 0..<3 { #expect(try d.run(["insert", "list", "0.0", "while watching \(i)"]).0 == 0) }

        let key = try KeyFile.read(d.keyFile)
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: key, timeout: .seconds(livenessGuardSeconds))
        let version = try await client.open(doc).document.version
        await client.close()
        // The daemon's own replica (the section), slot 0 and slot 1: not one per command (11).
        #expect(version.entries.count == 3, "\(version)")

        // The record says slot 0 sent more than the daemon holds (an edit that never became
        // durable there): the next command must not reuse the id.
        watch.stop()
        let before: ReplicaID
        do {
            let slot = try #require(try ClientReplicaTests.firstSlot(d.data + "/clients"))
            before = slot.replica
            try slot.willSend(doc, upTo: 1_000)
        }
        #expect(try d.run(["insert", "list", "0.0", "after a lost edit"]).0 == 0)
        let slot = try #require(try ClientReplicaTests.firstSlot(d.data + "/clients"))
        #expect(slot.replica != before)
        let after = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: key, timeout: .seconds(livenessGuardSeconds))
        let items = try await after.open(doc).document.snapshot().sections[0].items
        await after.close()
        #expect(items.count == 10)
        #expect(Set(items.map(\.id)).count == 10)
    }
}
