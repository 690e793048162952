import ListCRDT
import ListSyncSimulation
import Synchronization
import Testing
@testable import ListStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The simulator's file system (``SimulatedFileSystem``): what a crash keeps is what was synced,
/// plus at most a torn prefix of each file's last unsynced write; folder entries are durable only
/// once the folder is synced; a power cut fails every call after it; the real store runs on it.
@Suite("Simulated file system")
struct SimulatedFileSystemTests {
    /// A generator that always draws `value` (the crash keeps `value % (n + 1)` bytes of an
    /// n-byte last write).
    struct Fixed: RandomNumberGenerator {
        var value: UInt64
        mutating func next() -> UInt64 { value }
    }

    /// Creates `path` with `bytes`, the file synced and its folder synced: durable.
    static func durableFile(_ fs: FileSystem, _ path: String, _ bytes: [UInt8]) throws -> Int32 {
        let fd = try fs.open(path, flags: O_RDWR | O_CREAT)
        try fs.pwriteAll(fd, bytes, offset: 0, path: path)
        try fs.fdatasync(fd, path: path)
        try fs.syncFolder("/")
        return fd
    }

    @Test("a crash drops every unsynced byte; a torn prefix of the last write at most")
    func unsyncedBytesLost() throws {
        for keep in [0, 3, 5] {
            let sim = SimulatedFileSystem()
            let fs = sim.fileSystem
            let fd = try Self.durableFile(fs, "/f", [1, 2, 3, 4])
            try fs.pwriteAll(fd, [9, 9], offset: 4, path: "/f")          // unsynced, then overwritten by the last
            try fs.pwriteAll(fd, [5, 6, 7, 8, 9], offset: 2, path: "/f") // the last write: torn at `keep`
            #expect(sim.unsyncedBytes == 5)
            var rng = Fixed(value: UInt64(keep))
            sim.crash(using: &rng)
            let written: [UInt8] = [1, 2, 5, 6, 7, 8, 9], durable: [UInt8] = [1, 2, 3, 4]
            let expected = Array(written.prefix(2 + keep)) + Array(durable.dropFirst(2 + keep))
            #expect(sim.contents(of: "/f") == expected, "kept \(keep) bytes of the last write")
            #expect(try fs.readFile("/f") == expected)
        }
    }

    @Test("a synced file keeps everything; an unsynced truncation is undone")
    func syncedKept() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        let fd = try Self.durableFile(fs, "/f", Array(0..<100))
        try fs.ftruncate(fd, length: 10, path: "/f")
        #expect(try fs.size(fd, path: "/f") == 10)
        var rng = SplitMix64(seed: 7)
        sim.crash(using: &rng)
        #expect(sim.contents(of: "/f") == Array(0..<100))
    }

    @Test("over 200 seeds the torn prefix takes every length from none to all, and nothing else survives")
    func tornLengths() throws {
        var lengths = Set<Int>()
        for seed in UInt64(0)..<200 {
            let sim = SimulatedFileSystem()
            let fs = sim.fileSystem
            let fd = try Self.durableFile(fs, "/log", [7, 7])
            try fs.pwriteAll(fd, Array(repeating: 1, count: 8), offset: 2, path: "/log")
            var rng = SplitMix64(seed: seed)
            sim.crash(using: &rng)
            let bytes = try #require(sim.contents(of: "/log"))
            #expect(Array(bytes.prefix(2)) == [7, 7] && bytes.dropFirst(2).allSatisfy { $0 == 1 })
            lengths.insert(bytes.count - 2)
        }
        #expect(lengths == Set(0...8))
    }

    @Test("a new file, synced, is gone after a crash unless its folder was synced")
    func creationNeedsFolderSync() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        try fs.mkdir("/d")
        try fs.syncFolder("/")
        for (name, syncFolder) in [("b", true), ("a", false)] {
            let fd = try fs.open("/d/" + name, flags: O_RDWR | O_CREAT)
            try fs.pwriteAll(fd, [1, 2, 3], offset: 0, path: name)
            try fs.fsync(fd, path: name)
            if syncFolder { try fs.syncFolder("/d") }
        }
        try fs.mkdir("/e")   // its parent never synced again
        var rng = SplitMix64(seed: 1)
        sim.crash(using: &rng)
        #expect(try fs.list("/d") == ["b"])
        #expect(try fs.readFile("/d/b") == [1, 2, 3])
        #expect(!fs.exists("/e"))
    }

    @Test("a rename is durable only with its folder's sync: before, the old file is back under its name")
    func renameDurability() throws {
        for syncFolder in [false, true] {
            let sim = SimulatedFileSystem()
            let fs = sim.fileSystem
            _ = try Self.durableFile(fs, "/name", Array("old".utf8))
            let tmp = try fs.open("/name.tmp", flags: O_WRONLY | O_CREAT | O_TRUNC)
            try fs.pwriteAll(tmp, Array("new".utf8), offset: 0, path: "/name.tmp")
            try fs.fsync(tmp, path: "/name.tmp")
            try fs.rename("/name.tmp", to: "/name")
            if syncFolder { try fs.syncFolder("/") }
            #expect(try fs.readFile("/name") == Array("new".utf8))
            var rng = SplitMix64(seed: 2)
            sim.crash(using: &rng)
            #expect(try fs.readFile("/name") == Array((syncFolder ? "new" : "old").utf8), "folder synced: \(syncFolder)")
            #expect(fs.exists("/name.tmp") == false, "the tmp's creation was never synced either")
        }
    }

    @Test("an unlink not followed by the folder's sync is undone by a crash, with the file's durable bytes")
    func unlinkUndone() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        let fd = try Self.durableFile(fs, "/f", [4, 5])
        try fs.close(fd, path: "/f")
        try fs.unlink("/f")
        #expect(!fs.exists("/f"))
        var rng = SplitMix64(seed: 3)
        sim.crash(using: &rng)
        #expect(try fs.readFile("/f") == [4, 5])
        try fs.unlink("/f")
        try fs.syncFolder("/")
        sim.crash(using: &rng)
        #expect(!fs.exists("/f"))
    }

    @Test("a power cut fails the next mutating call and everything after it; the crash ends it; old descriptors are dead")
    func powerCut() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        let fd = try Self.durableFile(fs, "/f", [1])
        sim.cutPower(afterMutatingCalls: 1)
        try fs.pwriteAll(fd, [2, 3], offset: 1, path: "/f")
        #expect(throws: StoreError.system(call: "fdatasync", errno: EIO, path: "/f")) { try fs.fdatasync(fd, path: "/f") }
        #expect(throws: StoreError.system(call: "pread", errno: EIO, path: "/f")) { _ = try fs.read(fd, count: 1, at: 0, path: "/f") }
        var rng = Fixed(value: 0)
        sim.crash(using: &rng)
        #expect(try fs.readFile("/f") == [1])
        #expect(throws: StoreError.system(call: "fstat", errno: EBADF, path: "/f")) { _ = try fs.size(fd, path: "/f") }
    }

    @Test("flock: a second holder is refused until the first closes or the machine crashes")
    func locks() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        let a = try fs.open("/lock", flags: O_RDWR | O_CREAT)
        let b = try fs.open("/lock", flags: O_RDWR | O_CREAT)
        try fs.flock(a, LOCK_EX | LOCK_NB, path: "/lock")
        #expect(throws: StoreError.system(call: "flock", errno: EWOULDBLOCK, path: "/lock")) { try fs.flock(b, LOCK_EX | LOCK_NB, path: "/lock") }
        try fs.close(a, path: "/lock")
        try fs.flock(b, LOCK_EX | LOCK_NB, path: "/lock")
        var rng = SplitMix64(seed: 4)
        sim.crash(using: &rng)
        let c = try fs.open("/lock", flags: O_RDWR | O_CREAT)
        try fs.flock(c, LOCK_EX | LOCK_NB, path: "/lock")
    }

    @Test("the hook sees the simulated calls and can fail them")
    func hookSeesCalls() throws {
        let sim = SimulatedFileSystem()
        let syncs = Mutex(0)
        let fs = FileSystem(simulated: sim) { call in
            if call.name == "fdatasync" { syncs.withLock { $0 += 1 } }
            return call.name == "rename" ? EXDEV : nil
        }
        let fd = try Self.durableFile(fs, "/f", [1])
        #expect(syncs.withLock { $0 } == 1)
        #expect(throws: StoreError.system(call: "rename", errno: EXDEV, path: "/f -> /g")) { try fs.rename("/f", to: "/g") }
        try fs.close(fd, path: "/f")
    }

    // MARK: The real store on it

    static let id = DocumentID(high: 0x51F5, low: 1)

    static func openFolder(_ sim: SimulatedFileSystem) throws -> (DataFolder, DocumentStore, ListDocument, ManualCommitExecutor) {
        let executor = ManualCommitExecutor()
        var options = SharedLogOptions()
        options.executor = executor
        let folder = try DataFolder(root: "/data", fileSystem: sim.fileSystem, sharedLog: options)
        if !sim.exists("/data/documents/\(id)/name") { try folder.create(name: "doc", id: id) }
        let (store, doc) = try folder.open(id, replica: ReplicaID(9))
        return (folder, store, doc, executor)
    }


    @Test("the shared log on it: a queued append is lost at a crash, a completed one survives, a torn round is cut off by recovery")
    func sharedLogOnIt() throws {
        let sim = SimulatedFileSystem()
        var (folder, store, doc, executor) = try Self.openFolder(sim)
        var edits = EditStream(replica: 9, seed: 1)
        let durable = edits.batch(3)
        let done = Mutex<[StoreError?]>([])
        store.append(durable) { e in done.withLock { $0.append(e) } }
        #expect(done.withLock { $0.isEmpty }, "nothing runs before the executor runs the round")
        #expect(executor.runPending() == 1)
        #expect(done.withLock { $0.count == 1 && $0[0] == nil })
        let queued = edits.batch(2)
        store.append(queued) { e in done.withLock { $0.append(e) } }
        var rng = SplitMix64(seed: 5)
        sim.crash(using: &rng)          // before its round: never written
        (folder, store, doc, executor) = try Self.openFolder(sim)
        #expect(doc.version.contains(durable.last!.lastID))
        #expect(!doc.version.contains(queued.last!.lastID))

        // A round cut after its write: the records are torn somewhere; recovery keeps what is
        // whole and puts the rest aside, never more than was written.
        let torn = edits.batch(40)
        store.append(torn) { _ in }
        sim.cutPower(afterMutatingCalls: 1)
        executor.runPending()
        var draw = Fixed(value: 37)
        sim.crash(using: &draw)
        (folder, store, doc, executor) = try Self.openFolder(sim)
        #expect(doc.version.contains(durable.last!.lastID))
        #expect(!doc.version.contains(torn.last!.lastID))
        #expect(folder.sharedLog!.recoveryReport.bytesKeptAside > 0, "the torn record was put aside")
        _ = store
    }

    @Test("a disk whose fdatasync does nothing loses an acknowledged append at a crash (the power of the simulator's oracle)")
    func ignoredSyncLosesAcknowledged() throws {
        let sim = SimulatedFileSystem()
        var (folder, store, doc, executor) = try Self.openFolder(sim)
        sim.ignoresFdatasync = true
        var edits = EditStream(replica: 9, seed: 2)
        let ops = edits.batch(2)
        let done = Mutex<[StoreError?]>([])
        store.append(ops) { e in done.withLock { $0.append(e) } }
        executor.runPending()
        #expect(done.withLock { $0 } == [nil], "acknowledged")
        var rng = Fixed(value: 0)
        sim.crash(using: &rng)
        sim.ignoresFdatasync = false
        (folder, store, doc, executor) = try Self.openFolder(sim)
        #expect(!doc.version.contains(ops.last!.lastID), "lost: the sync never made it durable")
        folder.close()
    }

    @Test("a snapshot on it, crashed at every mutating call: the document opens whole every time")
    func snapshotCrashAtEveryCall() throws {
        for k in 0..<40 {
            let sim = SimulatedFileSystem()
            let (folder, store, _, executor) = try Self.openFolder(sim)
            var edits = EditStream(replica: 9, seed: UInt64(k))
            store.append(edits.batch(5)) { _ in }
            executor.runPending()
            let doc = edits.document
            sim.cutPower(afterMutatingCalls: k)
            try? store.compact(doc)
            var rng = SplitMix64(seed: UInt64(k))
            sim.crash(using: &rng)
            let reopened = try Self.openFolder(sim)
            #expect(reopened.2.version == doc.version, "cut after \(k) calls")
            #expect(reopened.2.snapshot() == doc.snapshot())
            folder.close()
        }
    }
}

/// What the strict folder rules of the simulated file system found in the store.
@Suite("Simulated file system: the store's folder syncs")
struct SimulatedFolderSyncTests {
    @Test("a data folder without a shared log: a document created and appended to survives a crash (its documents folder's entry synced)")
    func documentsFolderDurable() throws {
        let sim = SimulatedFileSystem()
        let fs = sim.fileSystem
        let id = DocumentID(high: 0x51F5, low: 2)
        var edits = EditStream(replica: 9, seed: 3)
        let ops = edits.batch(4)
        do {
            let folder = try DataFolder(root: "/data", fileSystem: fs)
            try folder.create(name: "doc", id: id)
            let (store, _) = try folder.open(id, replica: ReplicaID(9))
            try store.append(ops)
            folder.close()
        }
        var rng = SplitMix64(seed: 1)
        sim.crash(using: &rng)
        let folder = try DataFolder(root: "/data", fileSystem: fs)
        #expect(try folder.list().map(\.id) == [id])
        let (_, doc) = try folder.open(id, replica: ReplicaID(9))
        #expect(doc.version.contains(ops.last!.lastID))
        folder.close()
    }

    /// One session of a daemon's store, in either log mode: create two documents, append,
    /// compact one, rename it, append again. Returns what returned successfully before the first
    /// failure: the documents created and each document's operations whose append returned.
    static func session(_ fs: FileSystem, shared: Bool, edits: inout [EditStream]) -> (created: [DocumentID], acknowledged: [DocumentID: [ListOperation]]) {
        var created: [DocumentID] = [], acknowledged: [DocumentID: [ListOperation]] = [:]
        do {
            let folder = try DataFolder(root: "/data", fileSystem: fs, sharedLog: shared ? SharedLogOptions() : nil)
            defer { folder.close() }
            var stores: [DocumentStore] = []
            for d in 0..<2 {
                let id = DocumentID(high: 0x51F5, low: UInt64(10 + d))
                try folder.create(name: "doc \(d)", id: id)
                created.append(id)
                stores.append(try folder.open(id, replica: ReplicaID(9)).store)
            }
            for round in 0..<3 {
                for (d, store) in stores.enumerated() {
                    let ops = edits[d].batch(3)
                    try store.append(ops)
                    acknowledged[created[d], default: []] += ops
                }
                if round == 1 {
                    try stores[0].compact(edits[0].document)
                    try folder.rename(created[0], to: "renamed")
                }
            }
        } catch {}
        return (created, acknowledged)
    }

    @Test("a store session (two documents, appends, a compaction, a rename) crashed after every mutating call, in both log modes: every document created is there and every acknowledged append survives")
    func crashAfterEveryCall() throws {
        for shared in [false, true] {
            var k = 0
            while true {
                let sim = SimulatedFileSystem()
                sim.cutPower(afterMutatingCalls: k)
                var edits = [EditStream(replica: 9, seed: 1), EditStream(replica: 9, seed: 2)]
                let (created, acknowledged) = Self.session(sim.fileSystem, shared: shared, edits: &edits)
                let finished = sim.stats.writes > 0 && acknowledged.values.reduce(0) { $0 + $1.count } == 18
                var rng = SplitMix64(seed: UInt64(k))
                sim.crash(using: &rng)
                let folder = try DataFolder(root: "/data", fileSystem: sim.fileSystem, sharedLog: shared ? SharedLogOptions() : nil)
                let listed = Set(try folder.list().map(\.id))
                #expect(Set(created).isSubset(of: listed), "shared \(shared), cut after \(k): documents lost")
                for id in listed {
                    let (_, doc) = try folder.open(id, replica: ReplicaID(9))
                    for op in acknowledged[id] ?? [] where !doc.version.contains(op.lastID) {
                        Issue.record("shared \(shared), cut after \(k): acknowledged \(op.lastID) of \(id) lost")
                        break
                    }
                }
                folder.close()
                if finished { break }
                k += 1
            }
            #expect(k > 20, "the session made enough calls to cut")
        }
    }
}
