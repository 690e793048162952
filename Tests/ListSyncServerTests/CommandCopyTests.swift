import Foundation
import ListCRDT
import ListStore
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// The command line's kept copy (`ClientCache`, issue 47): a command catches up from the copy of
/// the last run instead of downloading the whole list; a damaged copy is fetched again; commands
/// run at once keep their own copies; a destroyed document's copy goes with it.
extension DaemonProcessTests {
    /// The files of a kept copy, with their sizes.
    static func copyFiles(_ path: String) throws -> [String: Int] {
        var out: [String: Int] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            out[name] = (try FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? Int) ?? -1
        }
        return out
    }

    /// The list's item texts as `show --json` prints them.
    static func shownItems(_ d: DaemonProcess, _ doc: String) throws -> [String] {
        let shown = try #require(try d.json(["show", doc]) as? [String: Any])
        let sections = try #require(shown["sections"] as? [[String: Any]])
        return sections.flatMap { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String } }
    }

    /// The items of the daemon's copy, read by a fresh client that keeps nothing.
    static func daemonItems(_ d: DaemonProcess, _ doc: DocumentID) async throws -> [String] {
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false, timeout: .seconds(livenessGuardSeconds))
        let snapshot = try await client.open(doc).snapshot
        await client.close()
        return snapshot.sections.flatMap { $0.items.map { String(decoding: $0.value, as: UTF8.self) } }
    }

    /// A list of `n` items made by another writer (one upload), and its id.
    static func bigList(_ d: DaemonProcess, items n: Int) async throws -> DocumentID {
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false, timeout: .seconds(livenessGuardSeconds))
        let id = try await client.create(name: "big", sections: ["A"])
        _ = try await client.open(id)
        _ = try await client.edit(id) { (doc: inout ListDocument) throws(ListError) in
            for i in 0..<n { try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data("item \(i)".utf8)) }
        }
        await client.close()
        return id
    }

    @Test("a command catches up from the copy of the last run (appended to, not fetched again); it shows the daemon's list")
    func commandCopyCatchesUp() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let n = 500
        let doc = try await Self.bigList(d, items: n)
        // Cold: no copy kept yet; the whole list comes and is written as the copy's snapshot.
        #expect(try d.run(["insert", "big", "0.0", "first"]).0 == 0)
        let copy = d.data + "/clients/slot-0.cache/\(doc)"
        let cold = try Self.copyFiles(copy)
        #expect(Set(cold.keys) == ["snapshot-1", "log-1"], "\(cold)")
        // Another writer adds 3 items; the next command receives those (and no more).
        let other = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false, timeout: .seconds(livenessGuardSeconds))
        _ = try await other.open(doc)
        for i in 0..<3 {
            _ = try await other.edit(doc) { (doc: inout ListDocument) throws(ListError) in
                try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("other \(i)".utf8))
            }
        }
        await other.close()
        // Warm: the command resumed from the copy (had it fetched the list again, the copy would
        // have been written whole, as a new generation); what came, and its edit, were appended.
        #expect(try d.run(["insert", "big", "0.0", "second"]).0 == 0)
        let warm = try Self.copyFiles(copy)
        #expect(Set(warm.keys) == ["snapshot-1", "log-1"], "\(warm)")
        #expect(warm["snapshot-1"] == cold["snapshot-1"])
        #expect(try #require(warm["log-1"]) > (try #require(cold["log-1"])))
        // What it shows, from its copy caught up, is the daemon's list.
        let daemonItems = try await Self.daemonItems(d, doc)
        #expect(daemonItems.count == n + 5)
        #expect(try Self.shownItems(d, "big") == daemonItems)
        #expect(daemonItems.prefix(2) == ["second", "first"])
        // An app's open with change sets: the catch-up's change set is published at `synced`.
        let app = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), timeout: .seconds(livenessGuardSeconds))
        let live = try await app.open(doc)
        #expect(!live.holdsChanges)
        #expect(live.snapshot.sections.flatMap { $0.items.map { String(decoding: $0.value, as: UTF8.self) } } == daemonItems)
        await app.close()
    }

    @Test("a damaged copy (cut, bytes flipped, a stray file) is fetched again: the command succeeds and sends nothing wrong")
    func damagedCommandCopy() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let doc = try await Self.bigList(d, items: 200)
        #expect(try d.run(["insert", "big", "0.0", "a"]).0 == 0)
        let copy = d.data + "/clients/slot-0.cache/\(doc)"
        let damages: [(String, (String) throws -> Void)] = [
            ("every file cut in half", { path in
                for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                    let file = path + "/" + name
                    let data = try Data(contentsOf: URL(fileURLWithPath: file))
                    try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: file))
                }
            }),
            ("bytes flipped in every file", { path in
                for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                    let file = path + "/" + name
                    var data = try Data(contentsOf: URL(fileURLWithPath: file))
                    for i in stride(from: data.count / 3, to: data.count, by: max(1, data.count / 7)) { data[i] ^= 0x5A }
                    try data.write(to: URL(fileURLWithPath: file))
                }
            }),
            ("the folder replaced by a file", { path in
                try FileManager.default.removeItem(atPath: path)
                try Data("not a store".utf8).write(to: URL(fileURLWithPath: path))
            }),
        ]
        for (i, (what, damage)) in damages.enumerated() {
            try damage(copy)
            let (code, _, err) = try d.run(["insert", "big", "0.0", "after \(i)"])
            #expect(code == 0, "\(what): \(err)")
            let items = try await Self.daemonItems(d, doc)
            #expect(items.count == 202 + i, "\(what)")
            #expect(items.first == "after \(i)", "\(what)")
            #expect(try Self.shownItems(d, "big") == items, "\(what)")
        }
    }

    @Test("commands run at once keep their own copies (each slot's, under its lock); a destroyed document's copy is removed")
    func concurrentCommandCopies() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let doc = try await Self.bigList(d, items: 300)
        #expect(try d.run(["insert", "big", "0.0", "warm"]).0 == 0)
        // Eight commands at once, twice.
        for round in 0..<2 {
            let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
                for i in 0..<8 { group.addTask { try d.run(["insert", "big", "0.0", "r\(round) c\(i)"]).0 } }
                return try await group.reduce(into: [Int32]()) { $0.append($1) }
            }
            #expect(codes == [Int32](repeating: 0, count: 8))
        }
        let items = try await Self.daemonItems(d, doc)
        #expect(items.count == 301 + 16)
        #expect(Set(items).count == items.count)
        #expect(try Self.shownItems(d, "big") == items)
        #expect(try d.run(["destroy", "big", "--yes"]).0 == 0)
        #expect(!FileManager.default.fileExists(atPath: d.data + "/clients/slot-0.cache/\(doc)"))
    }

    @Test("a copy of an older epoch (the list was restored since) is dropped: the command fetches the restored list and sends nothing of the old one")
    func restoredListDropsTheCopy() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var d = try DaemonProcess(data: dir.path + "/data")
        let doc = try await Self.bigList(d, items: 100)
        #expect(try d.run(["insert", "big", "0.0", "a"]).0 == 0)
        let backup = dir.path + "/backup.json"
        #expect(try d.run(["export", "big", backup]).0 == 0)
        #expect(try d.run(["insert", "big", "0.0", "b"]).0 == 0)   // kept in the copy, then lost by the restore
        let port = d.port
        #expect(d.terminate() == 0)
        let (code, _, err) = try runListsync(["restore", doc.description, backup, "--data", d.data])
        #expect(code == 0, "\(err)")
        d = try DaemonProcess(data: dir.path + "/data", port: port)
        defer { d.terminate() }
        let (edited, _, editError) = try d.run(["insert", "big", "0.0", "c"])
        #expect(edited == 0, "\(editError)")
        let items = try await Self.daemonItems(d, doc)
        #expect(items.count == 102)
        #expect(items.prefix(2) == ["c", "a"])
        #expect(!items.contains("b"), "the old epoch's edit came back from the copy")
        #expect(try Self.shownItems(d, "big") == items)
    }

    @Test("the kept copy follows the daemon's compaction: after a quiet compaction, the next command's copy compacts at the daemon's floor (on disk too), and export writes it from the copy")
    func commandCopyFollowsTheFloor() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // Compaction by operations only, after the last delete (the bytes trigger would compact
        // at the third delete, while the commands still run).
        let d = try DaemonProcess(data: dir.path + "/data", extra: ["--compact-after", "12", "--compact-interval", "0", "--retire-after", "1h",
                                              "--compact-dead-share", "off"])
        defer { d.kill9() }
        #expect(try d.run(["create", "todo"]).0 == 0)
        let big = String(repeating: "x", count: 60_000)
        for i in 0..<6 { #expect(try d.run(["insert", "todo", "0.0", big + "\(i)"]).0 == 0) }
        for _ in 0..<5 { #expect(try d.run(["delete", "todo", "0.0"]).0 == 0) }
        let info = try #require(try d.json(["docs"]) as? [[String: Any]])
        let doc = try #require(info.first?["id"] as? String)
        let copy = d.data + "/clients/slot-0.cache/\(doc)"
        func copyBytes() throws -> Int { try Self.copyFiles(copy).values.reduce(0, +) }
        // The copy was written by the commands, before the daemon compacted: every value in it.
        #expect(try copyBytes() > 6 * 60_000)
        #expect(eventually(20) { d.log.contains("document compacted") }, "\(d.log)")
        // Export: the copy catches up (nothing new), hears the floor, compacts there, and is
        // written compacted; the export is the compacted copy.
        let file = dir.path + "/export.json"
        #expect(try d.run(["export", "todo", file]).0 == 0)
        let exported = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1
        #expect(exported > 0 && exported < 90_000, "\(exported) bytes")
        let files = try Self.copyFiles(copy)
        #expect(files.values.reduce(0, +) < 90_000, "the kept copy still holds the collected values: \(files)")
        // It keeps working from the compacted copy.
        #expect(try d.run(["insert", "todo", "0.1", "after"]).0 == 0)
        #expect(try Self.shownItems(d, "todo") == [big + "0", "after"])
    }

    @Test("a held copy behind the daemon's floor re-syncs onto its snapshot without making again its edits a daemon acknowledged (that daemon brings them back), and its next edit takes a new id; an unacknowledged edit is made again, once")
    func resyncLeavesAcknowledgedEdits() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data", extra: ["--compact-after", "12", "--compact-interval", "0", "--retire-after", "1h",
                                              "--compact-dead-share", "off"])
        defer { d.kill9() }
        let key = try KeyFile.read(d.keyFile)
        func connect() async throws -> DaemonClient {
            try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: key, changeSets: false, timeout: .seconds(livenessGuardSeconds))
        }
        let maker = try await connect()
        let id = try await maker.create(name: "todo", sections: ["A"])
        await maker.close()
        // Two copies, each with an edit the daemon acknowledged, then one made on the copy and
        // never sent here: for `roamed`, another daemon acknowledged it (the copy roamed); for
        // `offline`, nobody did.
        func copy(_ text: String) async throws -> (ListDocument, UInt64, ListOperation) {
            let writer = try await connect()
            _ = try await writer.open(id, replica: ReplicaID.random())
            _ = try await writer.edit(id) { (doc: inout ListDocument) throws(ListError) in
                try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("first \(text)".utf8))
            }
            var held = try await writer.open(id).document
            let epoch = try #require(await writer.info(id)).epoch
            await writer.close()
            let made = try held.insertItem(at: IndexPath(item: 1, section: 0), value: Data(text.utf8))
            return (held, epoch, made)
        }
        let (roamed, epoch, elsewhere) = try await copy("roamed")
        let (offline, _, _) = try await copy("offline")
        // Others edit past both copies, and the daemon compacts.
        for i in 0..<6 { #expect(try d.run(["insert", "todo", "0.0", "x\(i)"]).0 == 0) }
        for _ in 0..<5 { #expect(try d.run(["delete", "todo", "0.0"]).0 == 0) }
        #expect(eventually(20) { d.log.contains("document compacted") }, "\(d.log)")

        // Resumed with its edit acknowledged: the daemon's snapshot replaces the copy, and the
        // edit is not made again here.
        let resumed = try await connect()
        let live = try await resumed.open(id, resuming: roamed, epoch: epoch, acknowledged: roamed.version)
        #expect(await resumed.wasReplaced(id))
        #expect(!live.snapshot.sections.flatMap(\.items).contains { $0.value == Data("roamed".utf8) })
        // Its next edit takes an id after every one the copy used: the held edit's id names it alone.
        let next = try await resumed.edit(id) { (doc: inout ListDocument) throws(ListError) in
            try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("next".utf8))
        }
        #expect(next.id.counter > elsewhere.lastID.counter, "\(next.id) reuses a counter of \(elsewhere.id)")
        await resumed.close()

        // Resumed without (nothing acknowledged of it): the edit is made again and sent, once.
        let fresh = try await connect()
        _ = try await fresh.open(id, resuming: offline, epoch: epoch)
        #expect(await fresh.wasReplaced(id))
        await fresh.close()
        let items = try await Self.daemonItems(d, id)
        #expect(!items.contains("roamed"), "\(items)")
        #expect(items.filter { $0 == "offline" }.count == 1, "\(items)")
        #expect(items.contains("next"), "\(items)")
    }

    @Test("import reads any JSON of the export format (keys in any order, spaces, escapes, values it skips) and sends a large list in parts; a bad file is an error that creates nothing")
    func importReadsTheExportFormat() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        // 70,000 items: more than one part of the import (65,536 operations).
        let doc = try Self.numberedList(70_000, replica: 7)
        let b64 = Data(doc.encodedSnapshot()).base64EncodedString()
        let file = dir.path + "/any.json"
        let text = "\n { \"extra\" : {\"a\": [1, 2.5e3, \"}\", null]}, \"snapshot\" :\t\"\(b64)\",\r\n"
            + " \"name\": \"caf\\u00e9 \\\"list\\\"\", \"version\": 1, \"format\": \"listsync-export\", \"flag\": true } \n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let imported = try #require(try d.json(["import", file]) as? [String: Any])
        #expect(imported["name"] as? String == "café \"list\"")
        let id = try #require((imported["id"] as? String).flatMap(DocumentID.init(hex:)))
        let items = try await Self.daemonItems(d, id)
        #expect(items.count == 70_000 && items.first == "i0" && items.last == "i69999")

        // Bad files: said, and nothing created.
        let bad = [
            "{\"format\": \"listsync-export\", \"snapshot\": \"\(b64.dropLast(1))\"}",   // not base64 (a cut group)
            "{\"format\": \"other\", \"snapshot\": \"\(b64)\"}",
            "{\"format\": \"listsync-export\"}",
            "[\"listsync-export\"]",
            "{\"format\": \"listsync-export\", \"snapshot\": \"\(b64)\"} trailing",
            "{\"format\": \"listsync-export\", \"snapshot\": \"QUJD\"",
            "",
        ]
        for (k, content) in bad.enumerated() {
            let path = dir.path + "/bad-\(k).json"
            try Data(content.utf8).write(to: URL(fileURLWithPath: path))
            let (code, _, err) = try d.run(["import", path])
            #expect(code == 1 && err.contains("is not a file written by `listsync export`"), "\(k): \(err)")
        }
        let (code, _, err) = try d.run(["import", dir.path + "/missing.json"])
        #expect(code == 1 && err.contains("cannot read"), "\(err)")
        let docs = try #require(try d.json(["docs"]) as? [[String: Any]])
        #expect(docs.count == 1, "\(docs)")
    }
}
