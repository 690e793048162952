import Foundation
import ListCRDT
import Synchronization
import Testing
@testable import ListStore

@Suite("DataFolder: destroying a document (deletion record first, removal durable, finished at open)")
struct DataFolderDestroyTests {
    /// A folder with one document holding a few operations, closed.
    static func folderWithDocument(_ root: String) throws -> DocumentID {
        let folder = try DataFolder(root: root)
        defer { folder.close() }
        let id = try folder.create(name: "groceries")
        let (store, _) = try folder.open(id, replica: ReplicaID(1))
        var doc = ListDocument(replica: ReplicaID(1))
        let op = try doc.insertSection(at: 0, value: Data("a".utf8))
        try store.append([op])
        try store.close()
        return id
    }

    /// A file system that fails every mutating call (EIO) once a call `crashAt` matches has run:
    /// what a crash right after that call leaves on disk.
    static func crashing(after crashAt: @escaping @Sendable (FileSystem.Call) -> Bool) -> FileSystem {
        let crashed = Mutex(false)
        return FileSystem { call in
            if crashed.withLock({ $0 }), call.isMutating { return EIO }
            if crashAt(call) { crashed.withLock { $0 = true } }
            return nil
        }
    }

    @Test("destroy: the record (epoch, time; mode 0600) is written and synced before the document's folder is touched; then it is gone")
    func recordFirst() throws {
        let root = temporaryFolder("destroy-order")
        defer { removeFolder(root) }
        let id = try Self.folderWithDocument(root)
        let calls = Mutex<[String]>([])
        let fs = FileSystem { call in calls.withLock { $0.append(call.description) }; return nil }
        let folder = try DataFolder(root: root, fileSystem: fs)
        defer { folder.close() }
        calls.withLock { $0 = [] }
        try folder.destroy(id, epoch: 0xabc, time: 1_700_000_000_000)
        let seen = calls.withLock { $0 }
        let record = root + "/destroyed/" + id.description
        let recordRenamed = seen.firstIndex { $0.hasPrefix("rename(\(record).tmp -> \(record))") }
        let recordSynced = seen.firstIndex { $0 == "fsync(\(root)/destroyed)" }
        let documentTouched = seen.firstIndex { $0.contains(folder.folder(of: id)) }
        #expect(recordRenamed != nil && recordSynced != nil && documentTouched != nil, "\(seen)")
        #expect(recordRenamed! < recordSynced! && recordSynced! < documentTouched!, "\(seen)")
        // The folder is renamed to a trash name and the rename synced before anything is unlinked.
        let trash = root + "/documents/.trash-" + id.description
        let renamed = seen.firstIndex { $0 == "rename(\(folder.folder(of: id)) -> \(trash))" }
        let firstUnlink = seen.firstIndex { $0.hasPrefix("unlink(\(trash)/") }
        #expect(renamed != nil && firstUnlink != nil && renamed! < firstUnlink!, "\(seen)")
        #expect(seen[renamed! + 1].hasPrefix("open(\(root)/documents)") && seen[renamed! + 2] == "fsync(\(root)/documents)", "\(seen)")
        #expect(!FileSystem.system.exists(folder.folder(of: id)) && !FileSystem.system.exists(trash))
        #expect(FileSystem.system.permissions(record) == 0o600)
        #expect(try folder.destroyedRecord(id) == DestroyedRecord(id: id, epoch: 0xabc, time: 1_700_000_000_000))
        #expect(try folder.destroyedRecords().map(\.id) == [id])
        #expect(try folder.list().isEmpty && folder.count() == 0)
        #expect(throws: StoreError.destroyed(id)) { try folder.create(name: "again", id: id) }
        #expect(throws: StoreError.destroyed(id)) { try folder.open(id, replica: ReplicaID(1)) }
        // Again: nothing rewritten, nothing left to remove.
        try folder.destroy(id, epoch: 1, time: 2)
        #expect(try folder.destroyedRecord(id)?.epoch == 0xabc)
    }

    @Test("a crash between the record and the removal: at the next open the removal is finished and the document is not listed")
    func crashAfterRecord() throws {
        let root = temporaryFolder("destroy-crash")
        defer { removeFolder(root) }
        let id = try Self.folderWithDocument(root)
        // Every mutating call after the record's folder sync fails: the crash.
        let fs = Self.crashing { $0.name == "fsync" && $0.path == root + "/destroyed" }
        let folder = try DataFolder(root: root, fileSystem: fs)
        #expect(throws: StoreError.self) { try folder.destroy(id, epoch: 7, time: 1) }
        folder.close()
        #expect(FileSystem.system.exists(root + "/documents/" + id.description), "the crash left the document's folder")
        #expect(FileSystem.system.exists(root + "/destroyed/" + id.description), "and its record")
        #expect(try DataFolder.entries(root: root).map(\.id) == [id], "both there: the record wins at the next open")
        let reopened = try DataFolder(root: root)
        defer { reopened.close() }
        #expect(try reopened.list().isEmpty)
        #expect(!FileSystem.system.exists(root + "/documents/" + id.description))
        #expect(try reopened.destroyedRecord(id)?.epoch == 7)
    }

    @Test("a crash in the middle of the removal: the half-removed trash folder is removed at the next open")
    func crashInRemoval() throws {
        let root = temporaryFolder("destroy-trash")
        defer { removeFolder(root) }
        let id = try Self.folderWithDocument(root)
        let fs = Self.crashing { $0.name == "unlink" && $0.path?.contains(".trash-") == true }
        let folder = try DataFolder(root: root, fileSystem: fs)
        #expect(throws: StoreError.self) { try folder.destroy(id, epoch: 7, time: 1) }
        folder.close()
        let trash = root + "/documents/.trash-" + id.description
        #expect(FileSystem.system.exists(trash))
        #expect(try DataFolder.entries(root: root).isEmpty, "a trash folder is never listed")
        let reopened = try DataFolder(root: root)
        defer { reopened.close() }
        #expect(try !FileSystem.system.exists(trash) && reopened.count() == 0)
    }

    @Test("a crash before the record is durable leaves the document whole")
    func crashBeforeRecord() throws {
        let root = temporaryFolder("destroy-early")
        defer { removeFolder(root) }
        let id = try Self.folderWithDocument(root)
        let fs = FileSystem { call in call.name == "rename" ? EIO : nil }
        let folder = try DataFolder(root: root, fileSystem: fs)
        #expect(throws: StoreError.self) { try folder.destroy(id, epoch: 7, time: 1) }
        folder.close()
        let reopened = try DataFolder(root: root)
        defer { reopened.close() }
        #expect(try reopened.list().map(\.id) == [id])
        #expect(try reopened.destroyedRecord(id) == nil)
        let (store, doc) = try reopened.open(id, replica: ReplicaID(1))
        #expect(doc.operationCount == 1)
        try store.close()
    }

    @Test("removeTree removes a link inside the folder, never what it points to")
    func linksNotFollowed() throws {
        let root = temporaryFolder("remove-links")
        defer { removeFolder(root) }
        let outside = root + "/outside"
        try FileSystem.system.mkdir(outside)
        #expect(FileManager.default.createFile(atPath: outside + "/keep", contents: Data("x".utf8)))
        try FileSystem.system.mkdir(root + "/tree")
        try FileManager.default.createSymbolicLink(atPath: root + "/tree/link", withDestinationPath: outside)
        try FileSystem.system.removeTree(root + "/tree")
        #expect(!FileSystem.system.exists(root + "/tree") && FileSystem.system.exists(outside + "/keep"))
    }

    @Test("remove (a device dropping its copy) leaves no record: the id may be made again")
    func removeWithoutRecord() throws {
        let root = temporaryFolder("remove")
        defer { removeFolder(root) }
        let id = try Self.folderWithDocument(root)
        let folder = try DataFolder(root: root)
        defer { folder.close() }
        try folder.remove(id)
        #expect(try folder.list().isEmpty && folder.destroyedRecord(id) == nil)
        #expect(try folder.create(name: "back", id: id) == id)
        #expect(DestroyedRecord(id: id, text: "nonsense").epoch == 0, "a record that does not parse still refuses the id")
    }
}
