import Foundation
import ListCRDT
import Synchronization
import Testing
@testable import ListStore

@Suite("DataFolder: renaming a document (the name file replaced atomically; refusals write nothing)")
struct DataFolderRenameTests {
    @Test("rename: list and a reopened folder show the new name; the old name stays when a write fails; unknown, destroyed and closed refused")
    func rename() throws {
        let root = temporaryFolder("rename")
        defer { removeFolder(root) }
        let id = try DataFolderDestroyTests.folderWithDocument(root)
        do {
            let folder = try DataFolder(root: root)
            defer { folder.close() }
            try folder.rename(id, to: "weekend groceries")
            #expect(try folder.list().map(\.name) == ["weekend groceries"])
            #expect(throws: StoreError.unknownDocument(DocumentID(high: 1, low: 2))) { try folder.rename(DocumentID(high: 1, low: 2), to: "x") }
            let gone = try folder.create(name: "gone")
            try folder.destroy(gone, epoch: 1, time: 0)
            #expect(throws: StoreError.destroyed(gone)) { try folder.rename(gone, to: "x") }
            #expect(try folder.list().map(\.name) == ["weekend groceries"])
        }
        // A failing disk (every mutating call EIO): the error is typed, the old name stays.
        let calls = Mutex(0)
        let failing = FileSystem { call in
            guard call.isMutating, call.path?.contains(id.description) == true else { return nil }
            calls.withLock { $0 += 1 }
            return EIO
        }
        do {
            let folder = try DataFolder(root: root, fileSystem: failing)
            defer { folder.close() }
            #expect(throws: StoreError.self) { try folder.rename(id, to: "lost") }
            #expect(calls.withLock { $0 } > 0)
        }
        let reopened = try DataFolder(root: root)
        #expect(try reopened.list().map(\.name) == ["weekend groceries"])
        reopened.close()
        #expect(throws: StoreError.self) { try reopened.rename(id, to: "x") }
    }
}
