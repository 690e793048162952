import Foundation
import ListCRDT
import ListSyncClient
import Testing

/// `import` holds the list once (issue 47): the loaded list becomes the command's opened copy and
/// is sent from its log a part at a time, then written as the slot's kept copy.
extension DaemonProcessTests {
    /// One section "s" of `n` items "i0", "i1", … made by `replica`.
    static func numberedList(_ n: Int, replica: UInt64) throws -> ListDocument {
        var doc = ListDocument(replica: ReplicaID(replica))
        try doc.insertSection(at: 0, value: Data("s".utf8))
        for i in 0..<n { try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data("i\(i)".utf8)) }
        return doc
    }

    @Test("a list exported and imported again by the same command slot: the import is the kept copy, and the slot's next edits go on after its own imported operations")
    func importBySameSlotKeepsCopy() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        // Made by this slot's replica: the export holds operations of the id that imports it.
        #expect(try d.run(["create", "todo", "--sections", "A"]).0 == 0)
        for (k, text) in ["milk", "eggs", "tea"].enumerated() {
            #expect(try d.run(["insert", "todo", "0.\(k)", text]).0 == 0)
        }
        let file = dir.path + "/todo.json"
        #expect(try d.run(["export", "todo", file]).0 == 0)
        let imported = try #require(try d.json(["import", file, "--name", "copy"]) as? [String: Any])
        let id = try #require((imported["id"] as? String).flatMap(DocumentID.init(hex:)))
        // The kept copy of the new document was written by the import.
        let copy = d.data + "/clients/slot-0.cache/\(id)"
        #expect(try Self.copyFiles(copy).values.reduce(0, +) > 0)
        #expect(try await Self.daemonItems(d, id) == ["milk", "eggs", "tea"])
        // Edits of the copy and of the original, by the same slot, both as the kept id: no
        // operation of one is taken for the other's.
        #expect(try d.run(["insert", id.description, "0.3", "bread"]).0 == 0)
        #expect(try d.run(["delete", id.description, "0.0"]).0 == 0)
        #expect(try d.run(["insert", "todo", "0.0", "jam"]).0 == 0)
        #expect(try Self.shownItems(d, id.description) == ["eggs", "tea", "bread"])
        #expect(try await Self.daemonItems(d, id) == ["eggs", "tea", "bread"])
        let docs = try #require(try d.json(["docs"]) as? [[String: Any]])
        let original = try #require(docs.first { $0["name"] as? String == "todo" }.flatMap { ($0["id"] as? String).flatMap(DocumentID.init(hex:)) })
        #expect(try await Self.daemonItems(d, original) == ["jam", "milk", "eggs", "tea"])
    }

    @Test("import of a file whose snapshot is valid base64 but cut short is an error that creates nothing")
    func importCutSnapshot() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/data")
        defer { d.kill9() }
        let doc = try Self.numberedList(2_000, replica: 9)
        // (A byte flipped inside a value is a different list, not an error: the format has no
        // checksum of its own; the store's files do.)
        let bytes = doc.encodedSnapshot()
        for (k, damaged) in [Array(bytes.prefix(bytes.count / 2)), Array(bytes.prefix(8)), Array(bytes.dropLast())].enumerated() {
            let path = dir.path + "/damaged-\(k).json"
            let text = "{\"format\": \"listsync-export\", \"snapshot\": \"\(Data(damaged).base64EncodedString())\"}"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let (code, _, err) = try d.run(["import", path])
            #expect(code == 1 && !err.isEmpty && !err.contains("Fatal"), "\(k): \(err)")
        }
        let docs = try #require(try d.json(["docs"]) as? [[String: Any]])
        #expect(docs.isEmpty, "\(docs)")
    }
}
