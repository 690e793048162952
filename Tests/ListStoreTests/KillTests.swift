import Foundation
import ListCRDT
import ListSyncSimulation
import Testing
@testable import ListStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
import ListSyncTestTraits
#endif

/// The probe's document id (Sources/listsync-store-probe/main.swift).
let probeDocument = DocumentID(high: 0x4C53_594E_4350_524F, low: 0x4245_0000_0000_0001)

@Suite("kill -9: a child appends and reports each acknowledged batch; killed at random, nothing acknowledged is lost", .ownThread)
struct KillTests {
    /// The probe executable, built with the tests (a dependency of this target): next to the test
    /// bundle in the build products folder.
    static func probePath() -> String? {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<6 {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("listsync-store-probe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    @Test("20 kill -9 cycles")
    func killNine() throws {
        guard let probe = Self.probePath() else {
            Issue.record("listsync-store-probe not found near \(CommandLine.arguments[0]); build it with `swift build --product listsync-store-probe`")
            return
        }
        let folder = temporaryFolder("kill9")
        defer { removeFolder(folder) }
        var rng = SplitMix64(seed: 909)
        var highest: UInt64 = 0, acknowledged = 0
        for cycle in 0..<20 {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: probe)
            child.arguments = ["append", folder, "--seed", "\(rng.next())", "--snapshot-every", "25"]
            let pipe = Pipe()
            child.standardOutput = pipe
            try child.run()
            let collected = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var data = Data()  // written by the reader before the signal, read after the wait
            Thread {
                data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.signal()
            }.start()
            usleep(UInt32.random(in: 5_000...150_000, using: &rng))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            collected.wait()
            let acks = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line -> UInt64? in
                line.hasPrefix("ack ") ? UInt64(line.dropFirst(4)) : nil
            }
            acknowledged += acks.count
            highest = max(highest, acks.max() ?? 0)
            let (store, document) = try DocumentStore.open(at: folder, documentID: probeDocument, replica: ReplicaID(1))
            try store.close()
            let have = document.version[ReplicaID(1)]
            #expect(have >= highest, "cycle \(cycle): acknowledged up to \(highest), recovered \(have)")
            highest = max(highest, have)
        }
        #expect(acknowledged > 0)
        print("kill -9: 20 cycles, \(acknowledged) acknowledged batches, all recovered")
    }
}
