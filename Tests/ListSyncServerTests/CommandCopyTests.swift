import Foundation
import ListCRDT
import ListStore
import ListSyncClient
import ListSyncServer
import Testing

/// The command line's kept copy (`ClientCache`, issue 47): a command catches up from the copy of
/// the last run instead of downloading the whole list; a damaged copy is fetched again; commands
/// run at once keep their own copies; a destroyed document's copy goes with it.
extension DaemonProcessTests {
    /// The daemon's count of operations sent to subscribers (`status --json`).
    static func operationsOut(_ d: DaemonProcess) throws -> Int {
        let status = try #require(try d.json(["status"]) as? [String: Any])
        return try #require(status["operations_out"] as? Int)
    }

    /// The list's item texts as `show --json` prints them.
    static func shownItems(_ d: DaemonProcess, _ doc: String) throws -> [String] {
        let shown = try #require(try d.json(["show", doc]) as? [String: Any])
        let sections = try #require(shown["sections"] as? [[String: Any]])
        return sections.flatMap { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String } }
    }

    /// The items of the daemon's copy, read by a fresh client that keeps nothing.
    static func daemonItems(_ d: DaemonProcess, _ doc: DocumentID) async throws -> [String] {
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false)
        let snapshot = try await client.open(doc).snapshot
        await client.close()
        return snapshot.sections.flatMap { $0.items.map { String(decoding: $0.value, as: UTF8.self) } }
    }

    /// A list of `n` items made by another writer (one upload), and its id.
    static func bigList(_ d: DaemonProcess, items n: Int) async throws -> DocumentID {
        let client = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false)
        let id = try await client.create(name: "big", sections: ["A"])
        _ = try await client.edit(id) { (doc: inout ListDocument) throws(ListError) in
            for i in 0..<n { try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data("item \(i)".utf8)) }
        }
        await client.close()
        return id
    }

    @Test("a command catches up from the copy of the last run: the daemon sends it what changed since, not the list")
    func commandCopyCatchesUp() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let n = 500
        let doc = try await Self.bigList(d, items: n)
        // Cold: no copy kept yet, the whole list comes.
        var before = try Self.operationsOut(d)
        #expect(try d.run(["insert", "big", "0.0", "first"]).0 == 0)
        #expect(try Self.operationsOut(d) - before > n)
        #expect(FileManager.default.fileExists(atPath: d.data + "/clients/slot-0.cache/\(doc)"))
        // Another writer adds 3 items; the next command receives those (and no more).
        let other = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile), changeSets: false)
        _ = try await other.open(doc)
        for i in 0..<3 {
            _ = try await other.edit(doc) { (doc: inout ListDocument) throws(ListError) in
                try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("other \(i)".utf8))
            }
        }
        await other.close()
        before = try Self.operationsOut(d)
        #expect(try d.run(["insert", "big", "0.0", "second"]).0 == 0)
        let sent = try Self.operationsOut(d) - before
        #expect(sent >= 3 && sent <= 10, "the warm command was sent \(sent) operations")
        // What it shows, from its copy caught up, is the daemon's list.
        let daemonItems = try await Self.daemonItems(d, doc)
        #expect(daemonItems.count == n + 5)
        #expect(try Self.shownItems(d, "big") == daemonItems)
        #expect(daemonItems.prefix(2) == ["second", "first"])
        // An app's open with change sets: the catch-up's change set is published at `synced`.
        let app = try await DaemonClient.connect(host: "127.0.0.1", port: d.port, key: try KeyFile.read(d.keyFile))
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
}
