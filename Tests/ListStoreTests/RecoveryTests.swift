import Foundation
import ListCRDT
import ListSyncSimulation
import Testing
@testable import ListStore
import ListSyncTestTraits

/// A log written through the store, with the log length and the document after each batch.
struct WrittenLog {
    var bytes: [UInt8]
    /// `boundaries[k]`: the log's length after k batches (k = 0: header and epoch record).
    var boundaries: [Int]
    /// `states[k]`: the document's `encodedState()` after k batches.
    var states: [[UInt8]]
    /// The records as scanned from the intact log.
    var records: [LogRecord]

    static func make(seed: UInt64, batches: Int, folder: String) throws -> WrittenLog {
        var stream = EditStream(seed: seed)
        var rng = SplitMix64(seed: seed &+ 99)
        let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        var boundaries = [Int(try store.logSize)]
        var states = [stream.document.encodedState()]
        for _ in 0..<batches {
            try store.append(stream.batch(Int.random(in: 1...5, using: &rng)))
            boundaries.append(Int(try store.logSize))
            states.append(stream.document.encodedState())
        }
        try store.close()
        // The file goes on past the records with preallocated zeros; the log is the records.
        let file = try FileSystem.system.readFile(folder + "/log-0")
        let scan = try LogScan.scan(file, document: testDocument)
        #expect(scan.damage == nil && scan.validLength == boundaries.last!)
        #expect(scan.preallocated == file.count - boundaries.last! && scan.preallocated > 0)
        #expect(file[boundaries.last!...].allSatisfy { $0 == 0 })
        let bytes = Array(file[..<boundaries.last!])
        return WrittenLog(bytes: bytes, boundaries: boundaries, states: states, records: scan.records)
    }

    /// How many batches end at or before `offset`.
    func batchesComplete(at offset: Int) -> Int { boundaries.lastIndex { $0 <= offset }! }
}

@Suite("Recovery: torn writes at every byte, bit flips and zero-filled tails, a crash at every step", .cpuHeavy)
struct RecoveryTests {
    @Test("a log cut at every byte offset of its last records recovers exactly the records before the cut, tail kept aside")
    func tornWrites() throws {
        let source = temporaryFolder("torn-source")
        defer { removeFolder(source) }
        let log = try WrittenLog.make(seed: 21, batches: 14, folder: source)
        let first = log.boundaries[log.boundaries.count - 6]
        var tried = 0
        // Each cut twice: the file ends at the cut (a log that grew by each write), or zeros follow
        // it (a write torn inside preallocated space: the rest of the record never reached the disk).
        for cut in first..<log.bytes.count {
            for padding in [0, 4096] {
                var k = log.batchesComplete(at: cut)
                // A record that ends in zero bytes (a field write's empty `seen`, say), cut among
                // them with zeros after: every byte of it is on the disk, so it is whole.
                if padding > 0, k + 1 < log.boundaries.count, log.bytes[cut..<log.boundaries[k + 1]].allSatisfy({ $0 == 0 }) { k += 1 }
                let boundary = log.boundaries[k]
                let file = Array(log.bytes[..<cut]) + [UInt8](repeating: 0, count: padding)
                // A torn record whose bytes so far are all zero (none, or a length's low zero byte)
                // reads as preallocated space: no record was there, nothing is kept aside.
                let clean = boundary >= cut || log.bytes[boundary..<cut].allSatisfy { $0 == 0 }
                // In memory: the scan.
                let scan = try LogScan.scan(file, document: testDocument)
                #expect(scan.validLength == boundary, "cut \(cut)")
                #expect(scan.records == Array(log.records[..<(k + 1)]), "cut \(cut)")
                #expect((scan.damage == nil) == clean, "cut \(cut)")
                #expect(scan.preallocated == (clean ? file.count - boundary : 0), "cut \(cut)")
                // On disk: open repairs, keeps the tail aside, and loads the document of k batches.
                let folder = temporaryFolder("torn")
                defer { removeFolder(folder) }
                _ = FileManager.default.createFile(atPath: folder + "/log-0", contents: Data(file))
                let (store, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
                #expect(try store.logSize == Int64(boundary), "cut \(cut)")
                try store.close()
                #expect(doc.encodedState() == log.states[k], "cut \(cut)")
                let report = store.recoveryReport
                #expect(report.bytesKeptAside == (clean ? 0 : file.count - boundary), "cut \(cut)")
                // A damaged log is cut at its last record; preallocated space is left for appends.
                #expect(try FileSystem.system.readFile(folder + "/log-0") == (clean ? file : Array(log.bytes[..<boundary])))
                if clean {
                    #expect(report.tailPath == nil)
                } else {
                    #expect(report.tailPath == folder + "/log-0.tail-1")
                    #expect(try FileSystem.system.readFile(folder + "/log-0.tail-1") == Array(file[boundary...]))
                }
                tried += 1
            }
        }
        #expect(tried > 200)
        print("torn writes: \(tried) cuts over the last 5 records (\(log.bytes.count - first) bytes), with and without zeros after")
    }

    @Test("14,000 single-bit flips and zero-filled tails over a log: a prefix of what was written, or refused")
    func logFlipsInMemory() throws {
        let source = temporaryFolder("flips-source")
        defer { removeFolder(source) }
        let log = try WrittenLog.make(seed: 31, batches: 16, folder: source)
        var rng = SplitMix64(seed: 2024)
        var refused = 0, prefixes = 0
        for trial in 0..<14_000 {
            var bytes = log.bytes
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            let zeroFill = trial % 4 == 3
            if zeroFill {
                for i in at..<bytes.count { bytes[i] = 0 }
            } else {
                bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            }
            do {
                let scan = try LogScan.scan(bytes, document: testDocument)
                let n = scan.records.count
                #expect(n <= log.records.count && scan.records == Array(log.records[..<n]), "trial \(trial)")
                // Every batch ending before the damage is kept; a flipped record never is.
                // Records (epoch record included) that end at or before the damaged byte.
                let intact = log.boundaries.lastIndex { $0 <= at }.map { $0 + 1 } ?? 0
                if zeroFill { #expect(n >= intact, "trial \(trial)") } else { #expect(n == intact, "trial \(trial) at \(at)") }
                prefixes += 1
            } catch {
                guard case .notOurs = error else { Issue.record("trial \(trial): \(error)"); continue }
                #expect(at < LogFormat.logHeaderSize, "trial \(trial)")
                refused += 1
            }
        }
        #expect(prefixes + refused == 14_000)
        print("log flips: \(prefixes) recovered a prefix, \(refused) refused (header)")
    }

    @Test("6,000 single-bit flips and zero-filled tails over a snapshot file: refused, or exactly the document")
    func snapshotFlipsInMemory() throws {
        var stream = EditStream(seed: 41)
        _ = stream.batch(60)
        let file = LogFormat.snapshotFile(stream.document.encodedSnapshot(), document: testDocument, epoch: 5)
        let state = stream.document.encodedState()
        var rng = SplitMix64(seed: 4040)
        var refused = 0, loaded = 0
        for trial in 0..<6_000 {
            var bytes = file
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            if trial % 4 == 3 {
                for i in at..<bytes.count { bytes[i] = 0 }
            } else {
                bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            }
            do {
                let (epoch, payload, _) = try LogFormat.readSnapshotFile(bytes, document: testDocument, path: "s")
                let doc = try ListDocument(snapshot: payload, replica: ReplicaID(1))
                #expect(bytes == file || (epoch == 5 && doc.encodedState() == state), "trial \(trial)")
                loaded += 1
            } catch let error as StoreError {
                switch error {
                case .corruptSnapshot, .notOurs: refused += 1
                default: Issue.record("trial \(trial): \(error)")
                }
            }
        }
        #expect(refused + loaded == 6_000)
        #expect(refused > 5_000)
        print("snapshot flips: \(refused) refused, \(loaded) unchanged bytes loaded")
    }

    @Test("200 bit flips and zero-filled tails in real files (snapshot and log): open recovers a prefix or refuses")
    func flipsOnDisk() throws {
        let source = temporaryFolder("disk-flips")
        defer { removeFolder(source) }
        var stream = EditStream(seed: 51)
        var (store, _) = try DocumentStore.open(at: source, documentID: testDocument, replica: ReplicaID(1))
        try store.append(stream.batch(20))
        try store.snapshot(stream.document)
        var states = [stream.document.encodedState()]
        for _ in 0..<8 {
            try store.append(stream.batch(2))
            states.append(stream.document.encodedState())
        }
        try store.close()
        let files = ["snapshot-1", "log-1"].map { (name: $0, bytes: try! FileSystem.system.readFile(source + "/" + $0)) }
        var rng = SplitMix64(seed: 5150)
        var refused = 0, recovered = 0
        for trial in 0..<200 {
            let folder = temporaryFolder("disk-flip")
            defer { removeFolder(folder) }
            let target = trial % 2
            for (i, file) in files.enumerated() {
                var bytes = file.bytes
                if i == target {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    if trial % 8 >= 6 { for j in at..<bytes.count { bytes[j] = 0 } } else { bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng) }
                }
                _ = FileManager.default.createFile(atPath: folder + "/" + file.name, contents: Data(bytes))
            }
            do {
                (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
                let doc = try reopenAfterClose(store, folder)
                #expect(states.contains(doc.encodedState()), "trial \(trial)")
                recovered += 1
            } catch is StoreError {
                refused += 1
            }
        }
        print("disk flips: \(recovered) recovered a prefix, \(refused) refused")
        #expect(recovered + refused == 200 && recovered > 0 && refused > 0)
    }

    /// Closes `store` and opens the folder again: the repaired folder opens cleanly the second time.
    func reopenAfterClose(_ store: DocumentStore, _ folder: String) throws -> ListDocument {
        try store.close()
        let (again, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
        #expect(again.recoveryReport.bytesKeptAside == 0)
        try again.close()
        return doc
    }

    @Test("a crash after every file call of append, snapshot, append, compact, append: nothing acknowledged lost")
    func crashAtEveryStep() throws {
        let base = temporaryFolder("crash-base")
        defer { removeFolder(base) }
        var baseStream = EditStream(seed: 61)
        let (seedStore, _) = try DocumentStore.open(at: base, documentID: testDocument, replica: ReplicaID(1))
        for _ in 0..<3 { try seedStore.append(baseStream.batch(3)) }
        try seedStore.close()

        /// Runs the scenario on `folder` until the first error; returns the acknowledged state and
        /// the state including the batch in flight when it stopped.
        func scenario(_ folder: String, _ fs: FileSystem) -> (acked: [UInt8], inFlight: [UInt8], finished: Bool) {
            var stream = baseStream
            var acked = stream.document.encodedState()
            var inFlight = acked
            do {
                let (store, _) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1), fileSystem: fs)
                defer { try? store.close() }
                func append(_ n: Int) throws {
                    let batch = stream.batch(n)
                    inFlight = stream.document.encodedState()
                    try store.append(batch)
                    acked = inFlight
                }
                try append(2)
                try store.snapshot(stream.document)
                try append(1)
                try store.compact(stream.document)
                try append(2)
                try store.snapshot(stream.document)
                try store.close()
                return (acked, inFlight, true)
            } catch {
                return (acked, inFlight, false)
            }
        }

        let counting = FaultyDisk()
        let full = temporaryFolder("crash-count")
        defer { removeFolder(full) }
        try FileManager.default.removeItem(atPath: full)
        try FileManager.default.copyItem(atPath: base, toPath: full)
        #expect(scenario(full, counting.fileSystem).finished)
        let total = counting.mutatingCount
        #expect(total > 20)
        for k in 0...total {
            let folder = temporaryFolder("crash")
            defer { removeFolder(folder) }
            try FileManager.default.removeItem(atPath: folder)
            try FileManager.default.copyItem(atPath: base, toPath: folder)
            let disk = FaultyDisk(crashAfter: k)
            let run = scenario(folder, disk.fileSystem)
            #expect(run.finished == (k == total), "k = \(k)")
            let (store, doc) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
            try store.close()
            let state = doc.encodedState()
            #expect(state == run.acked || state == run.inFlight, "k = \(k): lost an acknowledged batch")
            let names = try FileSystem.system.list(folder).filter { !$0.contains("tail") }
            #expect(names.filter { $0.hasPrefix("log-") }.count == 1 && !names.contains { $0.hasSuffix(".tmp") },
                    "k = \(k): \(names)")
            let (again, second) = try DocumentStore.open(at: folder, documentID: testDocument, replica: ReplicaID(1))
            try again.close()
            #expect(second.encodedState() == state && !again.recoveryReport.finishedSnapshot, "k = \(k)")
        }
        print("crash steps: \(total + 1) crash points over \(total) mutating file calls")
    }
}
