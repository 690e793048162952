import Foundation
import ListCRDT
import Testing
@testable import ListStore

@Suite("DataFolder: lock, create, list, open")
struct DataFolderTests {
    @Test("a second DataFolder on the same root gets .locked until the first closes")
    func lock() throws {
        let root = temporaryFolder("lock")
        defer { removeFolder(root) }
        let first = try DataFolder(root: root)
        #expect(throws: StoreError.locked(path: root + "/lock")) { try DataFolder(root: root) }
        #expect("\(StoreError.locked(path: root + "/lock"))".contains("in use"))
        first.close()
        let second = try DataFolder(root: root)
        second.close()
    }

    @Test("a root group or others can write to is refused (nothing made in it); a new one is 0700, its lock 0600; count()")
    func permissions() throws {
        let parent = temporaryFolder("modes")
        defer { removeFolder(parent) }
        let root = parent + "/data"
        let folder = try DataFolder(root: root)
        #expect(FileSystem.system.permissions(root) == 0o700)
        #expect(FileSystem.system.permissions(root + "/lock") == 0o600)
        #expect(FileSystem.system.permissions(root + "/documents") == 0o700)
        _ = try folder.create(name: "a")
        _ = try folder.create(name: "b")
        #expect(try folder.count() == 2)
        folder.close()
        let open = parent + "/open"
        try FileSystem.system.mkdir(open)
        for mode in [0o770, 0o707, 0o722] as [mode_t] {
            chmod(open, mode)
            #expect(throws: StoreError.insecureFolder(path: open, mode: UInt32(mode))) { try DataFolder(root: open) }
            #expect(!FileSystem.system.exists(open + "/lock"))
        }
        #expect(StoreError.insecureFolder(path: open, mode: 0o770).description.contains("run `chmod 700 \(open)`"))
        chmod(open, 0o750)
        try DataFolder(root: open).close()
    }

    @Test("documents are created with a name, listed by id, and opened by id")
    func createListOpen() throws {
        let root = temporaryFolder("folder") + "/data"
        defer { removeFolder(root) }
        let folder = try DataFolder(root: root)
        defer { folder.close() }
        let a = try folder.create(name: "groceries")
        let b = try folder.create(name: "todo ✓")
        #expect(try folder.list().map(\.name).sorted() == ["groceries", "todo ✓"])
        #expect(Set(try folder.list().map(\.id)) == [a, b])
        var (store, doc) = try folder.open(a, replica: ReplicaID(1))
        let op = try doc.insertSection(at: 0)
        try store.append([op])
        try store.close()
        (store, doc) = try folder.open(a, replica: ReplicaID(1))
        #expect(doc.sectionCount == 1)
        try store.close()
        let missing = DocumentID(high: 9, low: 9)
        #expect(throws: StoreError.unknownDocument(missing)) { try folder.open(missing, replica: ReplicaID(1)) }
        #expect(DocumentID(hex: a.description) == a)
        #expect(DocumentID(hex: "xyz") == nil)
    }
}
