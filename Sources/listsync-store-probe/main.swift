import Foundation
import ListCRDT
import ListStore
import ListSyncRandom
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// listsync-store-probe: the child of the kill -9 tests (Tests/ListStoreTests/KillTests.swift) and of
// Benchmarks/store-kill9.sh.
//
//   listsync-store-probe append FOLDER [--seed S] [--snapshot-every N]
//       opens (recovers) the store in FOLDER as replica 1, then appends batches of 1-3 edits for
//       ever, printing "ack C" (C: replica 1's highest counter in the batch) after each append
//       returns; a snapshot every N appends (default 40).
//   listsync-store-probe kill9 FOLDER [--cycles N] [--seed S]
//       the parent: N times, runs `append` as a child, SIGKILLs it at a random moment, reopens the
//       store and checks that every acknowledged batch is there. Exits 1 on a loss.

let probeDocument = DocumentID(high: 0x4C53_594E_4350_524F, low: 0x4245_0000_0000_0001)
let replica = ReplicaID(1)

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("listsync-store-probe: \(message)\n".utf8))
    exit(2)
}

func option(_ name: String, _ args: [String], default value: UInt64) -> UInt64 {
    guard let i = args.firstIndex(of: name) else { return value }
    guard i + 1 < args.count, let v = UInt64(args[i + 1]) else { fail("\(name) needs a number") }
    return v
}

/// The child: append until killed.
func appendForever(folder: String, seed: UInt64, snapshotEvery: UInt64) throws {
    var (store, document) = try DocumentStore.open(at: folder, documentID: probeDocument, replica: replica)
    var rng = SplitMix64(seed: seed ^ document.version[replica])
    if document.sectionCount == 0 {
        let op = try document.insertSection(at: 0)
        try store.append([op])
    }
    var appends: UInt64 = 0
    while true {
        var batch: [ListOperation] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let count = try document.itemCount(inSection: 0)
            if count > 20, Int.random(in: 0..<3, using: &rng) == 0 {
                batch.append(try document.deleteItem(at: IndexPath(item: Int.random(in: 0..<count, using: &rng), section: 0)))
            } else {
                let at = IndexPath(item: Int.random(in: 0...count, using: &rng), section: 0)
                batch.append(try document.insertItem(at: at, value: Data("v\(appends)".utf8)))
            }
        }
        try store.append(batch)
        // One write(2) per line, unbuffered: the parent sees each ack as soon as append returns.
        FileHandle.standardOutput.write(Data("ack \(batch.map(\.id.counter).max()!)\n".utf8))
        appends += 1
        if appends % snapshotEvery == 0 {
            try store.snapshot(document)
            if appends % (snapshotEvery * 4) == 0 {
                try store.close()
                (store, document) = try DocumentStore.open(at: folder, documentID: probeDocument, replica: replica)
            }
        }
    }
}

/// The parent: kill the child at random moments and check every acknowledged batch.
func killCycles(folder: String, cycles: Int, seed: UInt64) -> Int32 {
    var rng = SplitMix64(seed: seed)
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).path
    var acknowledged = 0, highest: UInt64 = 0, tails = 0
    for cycle in 0..<cycles {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["append", folder, "--seed", "\(rng.next())"]
        let pipe = Pipe()
        child.standardOutput = pipe
        let output = OutputCollector()
        do { try child.run() } catch { fail("cannot run \(executable): \(error)") }
        let reader = Thread { output.set(pipe.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        usleep(UInt32.random(in: 1_000...120_000, using: &rng))
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let data = output.wait()
        let acks = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line -> UInt64? in
            line.hasPrefix("ack ") ? UInt64(line.dropFirst(4)) : nil
        }
        acknowledged += acks.count
        let lastAck = acks.max() ?? 0
        highest = max(highest, lastAck)
        do {
            let (store, document) = try DocumentStore.open(at: folder, documentID: probeDocument, replica: replica)
            if store.recoveryReport.bytesKeptAside > 0 { tails += 1 }
            try store.close()
            let have = document.version[replica]
            guard have >= highest else {
                print("LOST cycle \(cycle): acknowledged up to \(highest), recovered \(have)")
                return 1
            }
            highest = have
        } catch {
            print("cycle \(cycle): reopening failed: \(error)")
            return 1
        }
    }
    print("kill9: \(cycles) cycles, \(acknowledged) acknowledged batches, all present; \(tails) recoveries kept a torn tail aside; final counter \(highest)")
    return 0
}

/// Bytes handed from the reading thread to the parent.
final class OutputCollector: @unchecked Sendable {
    // Safe: `data` is written once by the reading thread before `done` is signalled, and read only
    // after waiting for that signal.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)
    func set(_ d: Data) { data = d; done.signal() }
    func wait() -> Data { done.wait(); return data }
}

let args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else { fail("usage: listsync-store-probe append|kill9 FOLDER [options]") }
let seed = option("--seed", args, default: 1)
switch args[0] {
case "append":
    do { try appendForever(folder: args[1], seed: seed, snapshotEvery: max(1, option("--snapshot-every", args, default: 40))) } catch {
        fail("\(error)")
    }
case "kill9":
    exit(killCycles(folder: args[1], cycles: Int(option("--cycles", args, default: 200)), seed: seed))
default:
    fail("unknown mode '\(args[0])'")
}
