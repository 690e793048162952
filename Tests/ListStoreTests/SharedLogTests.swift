import Foundation
import ListCRDT
import ListSyncSimulation
import Synchronization
import Testing
@testable import ListStore

/// The shared write-ahead log (Docs/Storage.md, "The shared log"): many documents, one log.
@Suite("Shared log")
struct SharedLogTests {
    static func id(_ n: UInt64) -> DocumentID { DocumentID(high: 0xABCD, low: n) }

    /// Small segments, so that a few batches start new ones and checkpoints delete old ones.
    static var small: SharedLogOptions {
        var o = SharedLogOptions()
        o.segmentBytes = 2048
        o.preallocation = 4096
        return o
    }

    /// Opens `root` with a shared log and `count` documents (created if missing).
    static func openFolder(_ root: String, count: Int, fs: FileSystem = .system,
                           options: SharedLogOptions = small) throws -> (DataFolder, [DocumentStore], [ListDocument]) {
        let folder = try DataFolder(root: root, fileSystem: fs, sharedLog: options)
        var stores: [DocumentStore] = [], docs: [ListDocument] = []
        for n in 0..<count {
            let id = id(UInt64(n))
            if !FileManager.default.fileExists(atPath: folder.folder(of: id) + "/name") {
                try folder.create(name: "doc \(n)", id: id)
            }
            let (s, d) = try folder.open(id, replica: ReplicaID(UInt64(100 + n)))
            stores.append(s)
            docs.append(d)
        }
        return (folder, stores, docs)
    }

    static func close(_ folder: DataFolder, _ stores: [DocumentStore]) {
        for s in stores { try? s.close() }
        folder.close()
    }

    @Test("three documents interleaved in one log, with snapshots, new segments and checkpoints: every document reopens as written")
    func roundTrip() throws {
        let root = temporaryFolder("wal-roundtrip")
        defer { removeFolder(root) }
        var streams = (0..<3).map { EditStream(replica: UInt64(1 + $0), seed: 70 + UInt64($0)) }
        var (folder, stores, _) = try Self.openFolder(root, count: 3)
        var rng = SplitMix64(seed: 5)
        var maxSegments = 0
        for step in 0..<150 {
            let d = Int(rng.next() % 3)
            try stores[d].append(streams[d].batch(1 + Int(rng.next() % 4)))
            if rng.next() % 10 == 0 { try stores[d].snapshot(streams[d].document) }
            maxSegments = max(maxSegments, folder.sharedLog!.segments.count)
            if step % 50 == 49 {
                Self.close(folder, stores)
                var docs: [ListDocument]
                (folder, stores, docs) = try Self.openFolder(root, count: 3)
                for i in 0..<3 { #expect(docs[i].encodedState() == streams[i].document.encodedState(), "step \(step), doc \(i)") }
            }
        }
        // Every document snapshotted now: only the active segment and the one before stay.
        for i in 0..<3 { try stores[i].snapshot(streams[i].document) }
        #expect(folder.sharedLog!.segments.count <= 2)
        #expect(maxSegments > 2, "the run should have started several segments")
        #expect(folder.sharedLog!.recoveryReport.records > 0)
        Self.close(folder, stores)
        let (f2, s2, docs) = try Self.openFolder(root, count: 3)
        defer { Self.close(f2, s2) }
        for i in 0..<3 { #expect(docs[i].encodedState() == streams[i].document.encodedState()) }
        // No document keeps a log of its own.
        for i in 0..<3 {
            let names = try FileSystem.system.list(f2.folder(of: Self.id(UInt64(i))))
            #expect(!names.contains { $0.hasPrefix("log-") }, "\(names)")
        }
    }

    @Test("appends of 8 documents from 16 tasks share fdatasyncs, and all of them are there after reopening")
    func groupCommitAcrossDocuments() async throws {
        let root = temporaryFolder("wal-group")
        defer { removeFolder(root) }
        var options = SharedLogOptions()
        options.segmentBytes = 1 << 20
        let (folder, stores, _) = try Self.openFolder(root, count: 8, options: options)
        let streams = (0..<16).map { EditStream(replica: UInt64(1 + $0), seed: 200 + UInt64($0)) }
        let before = try folder.sharedLog!.syncCount
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<16 {
                var stream = streams[t]
                let store = stores[t % 8]
                group.addTask {
                    for _ in 0..<20 { try! await store.append(stream.batch(1)) }
                }
            }
        }
        let syncs = try folder.sharedLog!.syncCount - before
        #expect(syncs < 320, "\(syncs) fdatasyncs for 320 appends")
        Self.close(folder, stores)
        let (f2, s2, docs) = try Self.openFolder(root, count: 8, options: options)
        defer { Self.close(f2, s2) }
        #expect(docs.map(\.operationCount).reduce(0, +) == 320)
    }

    @Test("a document loads by reading its own records only")
    func loadReadsOwnRecords() throws {
        let root = temporaryFolder("wal-own")
        defer { removeFolder(root) }
        var options = SharedLogOptions()
        options.segmentBytes = 1 << 20
        var streams = (0..<4).map { EditStream(replica: UInt64(1 + $0), seed: 300 + UInt64($0)) }
        let (folder, stores, _) = try Self.openFolder(root, count: 4, options: options)
        for round in 0..<40 { try stores[round % 4].append(streams[round % 4].batch(2)) }
        Self.close(folder, stores)

        let reads = Mutex<[(String, Int)]>([])
        let fs = FileSystem { call in
            if call.name == "pread", let p = call.path, p.contains("/wal/") { reads.withLock { $0.append((p, 0)) } }
            return nil
        }
        let f2 = try DataFolder(root: root, fileSystem: fs, sharedLog: options)
        defer { f2.close() }
        let opening = reads.withLock { $0.count }   // the scan of the whole log at open
        let (store, doc) = try f2.open(Self.id(1), replica: ReplicaID(101))
        defer { try? store.close() }
        #expect(doc.encodedState() == streams[1].document.encodedState())
        let loading = reads.withLock { $0.count } - opening
        // One read per record of this document (10 batches and its epoch record), none of the others'.
        #expect(loading == 11, "\(loading) reads to load one document of 11 records")
    }

    @Test("the last segment cut at every byte of its last records: each document recovers exactly what was whole, the tail kept aside")
    func tornTail() throws {
        let base = temporaryFolder("wal-torn-base")
        defer { removeFolder(base) }
        var options = SharedLogOptions()
        options.segmentBytes = 1 << 20
        options.preallocation = 0
        var streams = (0..<2).map { EditStream(replica: UInt64(1 + $0), seed: 400 + UInt64($0)) }
        let (folder, stores, _) = try Self.openFolder(base, count: 2, options: options)
        // The states after each append, in log order, and where each append ended.
        var states: [[[UInt8]]] = [[streams[0].document.encodedState(), streams[1].document.encodedState()]]
        var ends: [UInt64] = [try folder.sharedLog!.end]
        for k in 0..<8 {
            let d = k % 2
            try stores[d].append(streams[d].batch(2))
            states.append([streams[0].document.encodedState(), streams[1].document.encodedState()])
            ends.append(try folder.sharedLog!.end)
        }
        Self.close(folder, stores)
        let segment = base + "/wal/" + SharedLogFormat.segmentName(0)
        let bytes = try FileSystem.system.readFile(segment)
        let from = Int(ends[3])
        var cases = 0
        for cut in from..<bytes.count {
            let root = temporaryFolder("wal-torn")
            defer { removeFolder(root) }
            try FileManager.default.removeItem(atPath: root)
            try FileManager.default.copyItem(atPath: base, toPath: root)
            // Torn: the bytes up to the cut, then garbage where the rest of the write was.
            var torn = Array(bytes[..<cut])
            torn += [UInt8](repeating: 0xA5, count: 16)
            try Data(torn).write(to: URL(fileURLWithPath: root + "/wal/" + SharedLogFormat.segmentName(0)))
            let (f, s, docs) = try Self.openFolder(root, count: 2, options: options)
            let whole = ends.lastIndex { $0 <= UInt64(cut) }!
            #expect(docs[0].encodedState() == states[whole][0] && docs[1].encodedState() == states[whole][1], "cut \(cut)")
            #expect(f.sharedLog!.recoveryReport.bytesKeptAside == torn.count - Int(ends[whole]), "cut \(cut)")
            Self.close(f, s)
            cases += 1
        }
        #expect(cases > 100)
    }

    @Test("4,000 single-bit flips over a segment: the scan keeps a prefix of the records, or refuses the header")
    func flipsInMemory() throws {
        let root = temporaryFolder("wal-flips")
        defer { removeFolder(root) }
        var options = SharedLogOptions()
        options.preallocation = 0
        var streams = (0..<2).map { EditStream(replica: UInt64(1 + $0), seed: 500 + UInt64($0)) }
        let (folder, stores, _) = try Self.openFolder(root, count: 2, options: options)
        for k in 0..<10 { try stores[k % 2].append(streams[k % 2].batch(2)) }
        Self.close(folder, stores)
        let bytes = try FileSystem.system.readFile(root + "/wal/" + SharedLogFormat.segmentName(0))
        let intact = try SharedLogScan.scan(bytes, base: 0)
        #expect(intact.damage == nil && intact.entries.count == 12)
        var rng = SplitMix64(seed: 9)
        for _ in 0..<4000 {
            var flipped = bytes
            let at = Int(rng.next() % UInt64(bytes.count))
            flipped[at] ^= UInt8(1 << (rng.next() % 8))
            guard let scan = try? SharedLogScan.scan(flipped, base: 0) else {
                #expect(at < SharedLogFormat.headerSize)
                continue
            }
            let hit = intact.entries.firstIndex { $0.position + UInt64($0.length) > UInt64(at) }!
            #expect(Array(scan.entries.prefix(hit)) == Array(intact.entries.prefix(hit)))
            #expect(scan.entries.count == hit, "flip at \(at): \(scan.entries.count) records kept, \(hit) before it")
        }
    }

    @Test("2,000 single-bit flips over a format 2 snapshot file: refused, or read back exactly (epoch, payload, covered position)")
    func snapshotFlips() throws {
        var stream = EditStream(seed: 550)
        _ = stream.batch(20)
        let payload = stream.document.encodedSnapshot()
        let file = LogFormat.snapshotFile(payload, document: testDocument, epoch: 77, covering: 123_456)
        let read = try LogFormat.readSnapshotFile(file, document: testDocument, path: "s")
        #expect(read.epoch == 77 && Array(read.payload) == payload && read.covering == 123_456)
        var rng = SplitMix64(seed: 11)
        var refused = 0
        for _ in 0..<2000 {
            var flipped = file
            flipped[Int(rng.next() % UInt64(file.count))] ^= UInt8(1 << (rng.next() % 8))
            guard let r = try? LogFormat.readSnapshotFile(flipped, document: testDocument, path: "s") else {
                refused += 1
                continue
            }
            #expect(r.epoch == 77 && Array(r.payload) == payload && r.covering == 123_456)
        }
        #expect(refused == 2000, "every flip is caught by a checksum")
    }

    @Test("a crash after every file call of appends, snapshots, new segments, a removal and checkpoints: nothing acknowledged lost")
    func crashAtEveryStep() throws {
        let base = temporaryFolder("wal-crash-base")
        defer { removeFolder(base) }
        var seedStreams = (0..<3).map { EditStream(replica: UInt64(1 + $0), seed: 600 + UInt64($0)) }
        do {
            let (folder, stores, _) = try Self.openFolder(base, count: 3)
            for k in 0..<6 { try stores[k % 3].append(seedStreams[k % 3].batch(3)) }
            Self.close(folder, stores)
        }

        struct Run { var acked: [[UInt8]]; var inFlight: [[UInt8]]; var removed = false; var finished = false }
        func scenario(_ root: String, _ fs: FileSystem) -> Run {
            var streams = seedStreams
            var run = Run(acked: streams.map { $0.document.encodedState() }, inFlight: streams.map { $0.document.encodedState() })
            do {
                let (folder, stores, _) = try Self.openFolder(root, count: 3, fs: fs)
                defer { Self.close(folder, stores) }
                func append(_ d: Int, _ n: Int) throws {
                    let batch = streams[d].batch(n)
                    run.inFlight[d] = streams[d].document.encodedState()
                    try stores[d].append(batch)
                    run.acked[d] = run.inFlight[d]
                }
                for k in 0..<6 { try append(k % 3, 4) }
                try stores[0].snapshot(streams[0].document)
                for k in 0..<6 { try append(k % 2, 4) }
                try stores[2].close()
                run.removed = true
                try folder.remove(Self.id(2))
                try stores[1].compact(streams[1].document)
                try append(0, 3)
                try stores[0].snapshot(streams[0].document)
                try append(1, 2)
                run.finished = true
                return run
            } catch {
                return run
            }
        }

        let counting = FaultyDisk()
        let full = temporaryFolder("wal-crash-count")
        defer { removeFolder(full) }
        try FileManager.default.removeItem(atPath: full)
        try FileManager.default.copyItem(atPath: base, toPath: full)
        #expect(scenario(full, counting.fileSystem).finished)
        let total = counting.mutatingCount
        #expect(total > 30)
        for k in 0...total {
            let root = temporaryFolder("wal-crash")
            defer { removeFolder(root) }
            try FileManager.default.removeItem(atPath: root)
            try FileManager.default.copyItem(atPath: base, toPath: root)
            let run = scenario(root, FaultyDisk(crashAfter: k).fileSystem)
            #expect(run.finished == (k >= total), "k = \(k)")
            let folder = try DataFolder(root: root, sharedLog: Self.small)
            defer { folder.close() }
            for d in 0..<3 {
                let id = Self.id(UInt64(d))
                guard FileManager.default.fileExists(atPath: folder.folder(of: id) + "/name") else {
                    #expect(d == 2 && run.removed, "k = \(k): document \(d) is gone")
                    continue
                }
                let (store, doc) = try folder.open(id, replica: ReplicaID(UInt64(100 + d)))
                try store.close()
                let state = doc.encodedState()
                #expect(state == run.acked[d] || state == run.inFlight[d], "k = \(k), document \(d): an acknowledged batch lost")
            }
            let names = try FileSystem.system.list(root + "/wal")
            #expect(!names.contains { $0.hasSuffix(".tmp") }, "k = \(k): \(names)")
        }
        print("shared log crash steps: \(total + 1) crash points over \(total) mutating file calls")
    }

    @Test("documents with logs of their own move to the shared log when opened, and a crash at any step of the move loses nothing")
    func moveFromOwnLogs() throws {
        let base = temporaryFolder("wal-move-base")
        defer { removeFolder(base) }
        var streams = (0..<2).map { EditStream(replica: UInt64(1 + $0), seed: 700 + UInt64($0)) }
        do {
            let folder = try DataFolder(root: base)
            for d in 0..<2 {
                let id = try folder.create(name: "old \(d)", id: Self.id(UInt64(d)))
                let (store, _) = try folder.open(id, replica: ReplicaID(UInt64(100 + d)))
                try store.append(streams[d].batch(5))
                if d == 0 { try store.snapshot(streams[d].document) }
                try store.append(streams[d].batch(3))
                try store.close()
            }
            folder.close()
        }
        let expected = streams.map { $0.document.encodedState() }
        func move(_ root: String, _ fs: FileSystem) -> Bool {
            do {
                let (folder, stores, _) = try Self.openFolder(root, count: 2, fs: fs)
                Self.close(folder, stores)
                return true
            } catch { return false }
        }
        let counting = FaultyDisk()
        let full = temporaryFolder("wal-move-count")
        defer { removeFolder(full) }
        try FileManager.default.removeItem(atPath: full)
        try FileManager.default.copyItem(atPath: base, toPath: full)
        #expect(move(full, counting.fileSystem))
        let total = counting.mutatingCount
        for k in 0...total {
            let root = temporaryFolder("wal-move")
            defer { removeFolder(root) }
            try FileManager.default.removeItem(atPath: root)
            try FileManager.default.copyItem(atPath: base, toPath: root)
            _ = move(root, FaultyDisk(crashAfter: k).fileSystem)
            let (folder, stores, docs) = try Self.openFolder(root, count: 2)
            for d in 0..<2 { #expect(docs[d].encodedState() == expected[d], "k = \(k), document \(d)") }
            for d in 0..<2 {
                let names = try FileSystem.system.list(folder.folder(of: Self.id(UInt64(d))))
                #expect(!names.contains { $0.hasPrefix("log-") } && names.filter { $0.hasPrefix("snapshot-") }.count == 1,
                        "k = \(k): \(names)")
                #expect(stores[d].usesSharedLog)
            }
            Self.close(folder, stores)
        }
    }

    @Test("a document's bytes in the log and its last write: counted while uncovered, zero after a snapshot, found again after reopening")
    func usage() throws {
        let root = temporaryFolder("wal-usage")
        defer { removeFolder(root) }
        var stream = EditStream(seed: 850)
        var (folder, stores, _) = try Self.openFolder(root, count: 2)
        let log = folder.sharedLog!
        let before = FileSystem.nowMillis()
        try stores[0].append(stream.batch(3))
        let written = log.uncoveredBytes(of: Self.id(0))
        #expect(written > 0 && log.lastWrite(of: Self.id(0)).map { $0 >= before } == true)
        #expect(try stores[0].logSize == written)
        Self.close(folder, stores)
        (folder, stores, _) = try Self.openFolder(root, count: 2)
        #expect(folder.sharedLog!.uncoveredBytes(of: Self.id(0)) == written)
        #expect(folder.sharedLog!.lastWrite(of: Self.id(0)) != nil, "the segment's modification time")
        try stores[0].snapshot(stream.document)
        #expect(folder.sharedLog!.uncoveredBytes(of: Self.id(0)) == 0)
        Self.close(folder, stores)
    }

    @Test("a removed document's records stay unread after reopening, even when a document of the same id comes back")
    func removalRecord() throws {
        let root = temporaryFolder("wal-remove")
        defer { removeFolder(root) }
        var stream = EditStream(seed: 800)
        var (folder, stores, _) = try Self.openFolder(root, count: 1)
        try stores[0].append(stream.batch(4))
        try stores[0].close()
        try folder.remove(Self.id(0))
        folder.close()
        var docs: [ListDocument]
        (folder, stores, docs) = try Self.openFolder(root, count: 1)
        #expect(docs[0].operationCount == 0)
        Self.close(folder, stores)
    }

    @Test("a failed fdatasync fails every append; reopening a document cuts the failed round off and keeps what was acknowledged")
    func failedSyncRecovers() throws {
        let root = temporaryFolder("wal-eio")
        defer { removeFolder(root) }
        var stream = EditStream(seed: 900)
        let failing = Mutex(false)
        let fs = FileSystem { call in
            call.name == "fdatasync" && failing.withLock { $0 } ? EIO : nil
        }
        let (folder, stores, _) = try Self.openFolder(root, count: 1, fs: fs)
        defer { Self.close(folder, stores) }
        try stores[0].append(stream.batch(3))
        let acked = stream.document.encodedState()
        let ackedCount = stream.document.operationCount
        failing.withLock { $0 = true }
        #expect(throws: StoreError.self) { try stores[0].append(stream.batch(1)) }
        failing.withLock { $0 = false }
        #expect(throws: StoreError.self) { try stores[0].append(stream.batch(1)) }
        #expect(folder.sharedLog!.hasFailed)
        try stores[0].close()
        let (again, doc) = try folder.open(Self.id(0), replica: ReplicaID(100))
        #expect(doc.encodedState() == acked)
        #expect(!folder.sharedLog!.hasFailed)
        var more = EditStream(replica: 9, seed: 901)
        try again.append(more.batch(2))
        try again.close()
        Self.close(folder, [])
        let (f2, s2, docs) = try Self.openFolder(root, count: 1)
        defer { Self.close(f2, s2) }
        #expect(docs[0].operationCount == ackedCount + 2, "the acknowledged batches, not the refused ones")
    }
}
