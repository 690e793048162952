import Foundation
import ListCRDT
import ListSyncSimulation
import Synchronization
import Testing
@testable import ListStore

@Suite("DocumentStore: reference, durability before return, group commit, failures, epoch")
struct DocumentStoreTests {
    @Test("edited through the store with snapshots, compactions and reopens: equals the in-memory document",
          arguments: 0..<6)
    func reference(seed: UInt64) throws {
        let folder = temporaryFolder("reference")
        defer { removeFolder(folder) }
        var rng = SplitMix64(seed: 1000 + seed)
        var stream = EditStream(seed: seed)
        var (store, recovered) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(store.recoveryReport.created)
        #expect(recovered.operationCount == 0)
        let epoch = try store.epoch
        for step in 0..<120 {
            try store.append(stream.batch(Int.random(in: 1...4, using: &rng)))
            switch Int.random(in: 0..<20, using: &rng) {
            case 0: try store.snapshot(stream.document)
            case 1: try store.compact(stream.document)
            case 2:
                try store.close()
                (store, recovered) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
                #expect(recovered.encodedState() == stream.document.encodedState(), "seed \(seed) step \(step)")
                #expect(try store.epoch == epoch)
                // Go on editing the recovered document: its clock continues after the logged operations.
                stream.document = recovered
            default: break
            }
        }
        try store.close()
        let (again, final) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? again.close() }
        #expect(final.encodedState() == stream.document.encodedState())
        #expect(final.version == stream.document.version)
        #expect(try again.epoch == epoch)
        let names = try FileSystem.system.list(folder)
        #expect(names.filter { $0.hasPrefix("log-") }.count == 1, "\(names)")
        #expect(names.filter { $0.hasPrefix("snapshot-") }.count <= 1, "\(names)")
    }

    @Test("append returns only after a pwrite and an fdatasync of its records")
    func fdatasyncBeforeReturn() throws {
        let folder = temporaryFolder("fsync")
        defer { removeFolder(folder) }
        let disk = FaultyDisk()
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1),
                                                fileSystem: disk.fileSystem)
        defer { try? store.close() }
        var stream = EditStream(seed: 3)
        for _ in 0..<5 {
            let before = disk.calls.count
            try store.append(stream.batch(2))
            let during = disk.calls[before...].map(\.name)
            #expect(during == ["pwrite", "fdatasync"], "\(during)")
        }
        #expect(try store.syncCount == 5)
    }

    @Test("preallocation: the log grows by chunks of zeros (as long as the log, 4 KiB to the cap), appends overwrite them, reopening continues after the last record")
    func preallocation() throws {
        let folder = temporaryFolder("prealloc")
        defer { removeFolder(folder) }
        var options = StoreOptions()
        options.preallocation = 8 * 1024
        var stream = EditStream(seed: 7)
        var (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1), options: options)
        var fileSizes: Set<Int> = []
        for round in 0..<3 {
            for _ in 0..<150 {
                let end = try store.logSize
                try store.append(stream.batch(3))
                let file = try FileSystem.system.readFile(folder + "/log-0")
                // The chunk written when the records reached the end: max(4 KiB, the log) up to the cap.
                if !fileSizes.contains(file.count) {
                    let chunk = file.count - Int(try store.logSize)
                    #expect(chunk == min(8 * 1024, max(4096, Int(try store.logSize))), "round \(round): \(chunk) after \(end)")
                }
                fileSizes.insert(file.count)
                #expect(file.count >= Int(try store.logSize))
                #expect(file[Int(try store.logSize)...].allSatisfy { $0 == 0 })
            }
            let end = try store.logSize
            try store.close()
            let document: ListDocument
            (store, document) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1), options: options)
            #expect(store.recoveryReport.bytesKeptAside == 0 && store.recoveryReport.damage == nil)
            #expect(try store.logSize == end)
            #expect(document.encodedState() == stream.document.encodedState())
            stream.document = document
        }
        try store.close()
        #expect(fileSizes.count >= 4 && fileSizes.max()! > 3 * 8 * 1024, "the file grew \(fileSizes.count) times, to \(fileSizes.max()!) bytes")
        #expect(try FileSystem.system.list(folder) == ["log-0"])

        // Off: the file is exactly the records.
        let plain = temporaryFolder("prealloc-off")
        defer { removeFolder(plain) }
        options.preallocation = 0
        let (off, _) = try DocumentStore.open(at: plain, documentID: testDocument, replica: ReplicaID(1), options: options)
        for _ in 0..<20 {
            try off.append(stream.batch(1))
            #expect(try FileSystem.system.readFile(plain + "/log-0").count == Int(try off.logSize))
        }
        try off.close()
    }

    @Test("16 threads appending concurrently share fdatasyncs, and every batch is there after reopening")
    func groupCommitThreads() throws {
        let folder = temporaryFolder("group")
        defer { removeFolder(folder) }
        let disk = FaultyDisk()
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1),
                                                fileSystem: disk.fileSystem)
        var base = ListDocument(replica: ReplicaID(1))
        let section = try base.insertSection(at: 0)
        try store.append([section])
        let writers = 16, each = 25
        let failures = Mutex<[String]>([])
        let counters = Mutex<[ReplicaID: UInt64]>([:])
        let group = DispatchGroup()
        for w in 0..<writers {
            group.enter()
            Thread {
                defer { group.leave() }
                var doc = ListDocument(replica: ReplicaID(UInt64(100 + w)))
                doc.receive([section])
                do {
                    for _ in 0..<each {
                        let op = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("w\(w)".utf8))
                        try store.append([op])
                    }
                    counters.withLock { $0[doc.replica] = doc.version[doc.replica] }
                } catch { failures.withLock { $0.append("\(error)") } }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        let syncs = disk.names("fdatasync")
        #expect(syncs < writers * each + 1, "\(syncs) fdatasyncs for \(writers * each + 1) appends")
        try store.close()
        let (again, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? again.close() }
        #expect(doc.totalItemCount == writers * each)
        let written = counters.withLock { $0 }
        #expect(written.count == writers)
        for (replica, counter) in written { #expect(doc.version[replica] == counter) }
    }

    @Test("16 tasks appending with the async form share fdatasyncs, and every batch is there")
    func groupCommitAsync() async throws {
        let folder = temporaryFolder("group-async")
        defer { removeFolder(folder) }
        let disk = FaultyDisk()
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1),
                                                fileSystem: disk.fileSystem)
        var base = ListDocument(replica: ReplicaID(1))
        let section = try base.insertSection(at: 0)
        try await store.append([section])
        let writers = 16, each = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    var doc = ListDocument(replica: ReplicaID(UInt64(100 + w)))
                    doc.receive([section])
                    for _ in 0..<each {
                        let op = try doc.insertItem(at: IndexPath(item: 0, section: 0))
                        try await store.append([op])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(disk.names("fdatasync") < writers * each + 1)
        try store.close()
        let (again, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? again.close() }
        #expect(doc.totalItemCount == writers * each)
    }

    @Test("a failed write (ENOSPC) or sync (EIO) fails that append and every later one; reopening keeps what was acknowledged",
          arguments: [("pwrite", ENOSPC), ("fdatasync", EIO)])
    func failureIsSticky(call: String, code: Int32) throws {
        let folder = temporaryFolder("sticky")
        defer { removeFolder(folder) }
        var stream = EditStream(seed: 9)
        let (first, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        try first.append(stream.batch(3))
        try first.close()
        let acknowledged = stream.document.encodedState()
        // Mutating calls of an open with nothing to repair: open(log) is not mutating; the first
        // append's pwrite is mutating call 0 and its fdatasync call 1.
        let disk = FaultyDisk(failAt: call == "pwrite" ? 0 : 1, errno: code)
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1),
                                                fileSystem: disk.fileSystem)
        #expect(throws: StoreError.system(call: call, errno: code, path: folder + "/log-0")) {
            try store.append(stream.batch(1))
        }
        #expect { try store.append(stream.batch(1)) } throws: { error in
            guard case .failed = error as? StoreError else { return false }
            return "\(error)".contains("reopen")
        }
        try store.close()
        let (again, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? again.close() }
        // Nothing acknowledged is lost; the failed batch may or may not be there (it reached the
        // page cache when only the sync failed), never a part of it.
        let counts = doc.operationCount
        #expect(doc.encodedState() == acknowledged || counts == 4, "\(counts)")
    }

    @Test("a snapshot of a document that lacks logged operations is refused and writes nothing")
    func snapshotBehindLog() throws {
        let folder = temporaryFolder("behind")
        defer { removeFolder(folder) }
        var stream = EditStream(seed: 4)
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? store.close() }
        try store.append(stream.batch(3))
        let old = ListDocument(replica: ReplicaID(1))
        #expect(throws: StoreError.snapshotBehindLog(replica: ReplicaID(1), logged: 3, inDocument: 0)) {
            try store.snapshot(old)
        }
        #expect(try FileSystem.system.list(folder) == ["log-0"])
        try store.snapshot(stream.document)
        #expect(try FileSystem.system.list(folder) == ["log-1", "snapshot-1"])
    }

    @Test("pending operations (waiting for dependencies) survive a snapshot: carried into the new log")
    func pendingCarried() throws {
        let folder = temporaryFolder("pending")
        defer { removeFolder(folder) }
        var other = ListDocument(replica: ReplicaID(2))
        let section = try other.insertSection(at: 0)
        let item = try other.insertItem(at: IndexPath(item: 0, section: 0))
        var doc = ListDocument(replica: ReplicaID(1))
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        try store.append([item])  // before its section: waits
        doc.receive([item])
        #expect(doc.pendingCount == 1)
        try store.snapshot(doc)
        try store.close()
        var (again, recovered) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(recovered.pendingCount == 1)
        try again.append([section])
        recovered.receive([section])
        try again.close()
        let (third, final) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        defer { try? third.close() }
        #expect(final.totalItemCount == 1)
        #expect(final.encodedState() == recovered.encodedState())
    }

    @Test("a device's copy that dropped what it kept waiting on a parted original (Docs/Semantics.md §7, \"A device drops what waits on parted originals\") is written with replace(with:): a snapshot refuses it (its log holds the dropped operation), and reopened it waits for nothing")
    func droppedWaitingWrittenByReplace() throws {
        let folder = temporaryFolder("dropped-waiting")
        defer { removeFolder(folder) }
        let a = try ListDocument.make(1, sections: [["a", "b"]])
        var left = a.fork(as: 3)
        let original = try left.insertItem(at: IndexPath(item: 2, section: 0), value: Data("original".utf8))
        var other = left.fork(as: 4)
        let edit = try other.insertItem(at: IndexPath(item: 3, section: 0), value: Data("on it".utf8))
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(5))
        var doc = a.fork(as: 5)
        try store.append(a.operations(since: VersionVector()))
        try store.append([edit])
        doc.receive([edit])
        #expect(doc.pendingCount == 1)
        #expect(doc.dropWaiting(onParted: { $0 == original.id }).map(\.id) == [edit.id])
        #expect(throws: StoreError.self) { try store.snapshot(doc) }
        try store.replace(with: doc)
        try store.close()
        let (again, reopened) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(5))
        defer { try? again.close() }
        #expect(reopened.pendingCount == 0)
        #expect(reopened.snapshot() == doc.snapshot())
    }

    @Test("the epoch is random at creation, kept across snapshots and reopens, and reset durably")
    func epoch() throws {
        let folder = temporaryFolder("epoch")
        defer { removeFolder(folder) }
        var options = StoreOptions()
        options.newEpoch = { 42 }
        var stream = EditStream(seed: 5)
        var (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1), options: options)
        #expect(try store.epoch == 42)
        try store.append(stream.batch(2))
        try store.snapshot(stream.document)
        try store.resetEpoch(to: 7)
        try store.close()
        (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(try store.epoch == 7)
        try store.snapshot(stream.document)
        try store.close()
        (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(try store.epoch == 7)
        try store.close()
        #expect(throws: StoreError.closed) { try store.append(stream.batch(1)) }
    }

    @Test("a log of another document or not a log at all is refused, and left untouched")
    func notOurs() throws {
        let folder = temporaryFolder("notours")
        defer { removeFolder(folder) }
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        try store.close()
        let other = DocumentID(high: 1, low: 2)
        #expect { try DocumentStore.open(at: folder, documentID: other, replica: ReplicaID(1)) } throws: { error in
            guard case .notOurs(let path, _) = error as? StoreError else { return false }
            return path.hasSuffix("log-0")
        }
        let junk = Array("hello, this is not a ListSync log at all".utf8)
        _ = FileManager.default.createFile(atPath: folder + "/log-0", contents: Data(junk))
        #expect { try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1)) } throws: { error in
            guard case .notOurs = error as? StoreError else { return false }
            return "\(error)".contains("LSYNCLOG")
        }
        #expect(try FileSystem.system.readFile(folder + "/log-0") == junk)
        #expect(try FileSystem.system.list(folder) == ["log-0"])
    }
}
