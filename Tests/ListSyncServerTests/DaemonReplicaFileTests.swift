#if canImport(Glibc)
import Foundation
import ListCRDT
import ListStore
@testable import ListSyncServer
import ListSyncTestSupport
import ListSyncTestTraits
import Testing

/// The daemon's own `DIR/replica` (Docs/Daemon.md, "Files"): a file cut short is refused naming
/// the file, never taken as another replica id (issue 44); an earlier build's file still loads.
@Suite("The daemon's replica file: a cut file is refused, an earlier build's is read and rewritten", .ownThread, .hangGuard)
struct DaemonReplicaFileTests {
    @Test("every cut of a written file is damaged; the whole file is the id; so is the file without its line end only when nothing is lost")
    func everyCut() {
        for raw: UInt64 in [1, 0xabc, 0x0123_4567_89ab_cdef, .max] {
            let bytes = DaemonReplicaFile.encode(ReplicaID(raw))
            #expect(bytes.count == 25)
            #expect(DaemonReplicaFile.parse(bytes) == .current(ReplicaID(raw)))
            for n in 0 ..< bytes.count {
                let parsed = DaemonReplicaFile.parse(Array(bytes.prefix(n)))
                guard case .damaged = parsed else {
                    Issue.record("a file cut to \(n) of \(bytes.count) bytes was read as \(parsed)")
                    continue
                }
            }
        }
    }

    @Test("an earlier build's bare hex id (any length 1-16, no padding, no line end) is read")
    func earlierForm() {
        #expect(DaemonReplicaFile.parse(Array("abc".utf8)) == .earlier(ReplicaID(0xabc)))
        #expect(DaemonReplicaFile.parse(Array("fedcba9876543210".utf8)) == .earlier(ReplicaID(0xfedc_ba98_7654_3210)))
        for bad in ["", "0", "xyz", "abc\n", "12345678901234567", "replica", "replica abc\n", "replica 0000000000000000\n"] {
            guard case .damaged = DaemonReplicaFile.parse(Array(bad.utf8)) else {
                Issue.record("\(bad.debugDescription) was taken as an id")
                continue
            }
        }
    }

    @Test("a daemon whose replica file is cut refuses to start naming the file and leaves it as it was; an earlier build's file keeps its id and is rewritten")
    func daemonStart() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let data = dir.path + "/data"
        var config = DaemonConfiguration(dataFolder: data)
        config.listenPort = 0
        let first = Daemon(configuration: config)
        try await first.start()
        await first.stop()
        let path = data + "/replica"
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        guard case .current(let id) = DaemonReplicaFile.parse(written) else {
            Issue.record("the daemon wrote \(written)")
            return
        }
        // Cut to 5 hex digits: refused (before: taken silently as replica 0x?????).
        let cut = Array(written.prefix(DaemonReplicaFile.prefix.utf8.count + 5))
        try Data(cut).write(to: URL(fileURLWithPath: path))
        let second = Daemon(configuration: config)
        do {
            try await second.start()
            Issue.record("the daemon started with a cut replica file")
            await second.stop()
        } catch {
            #expect("\(error)".contains(path), "\(error)")
        }
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == cut, "the refused file was changed")
        let serve = try CLIRun.run(["serve", "--data", data, "--listen", "127.0.0.1:0"], in: dir.path)
        #expect(!serve.killed && serve.exitedNormally && serve.status != 0, "\(serve)")
        #expect((serve.stderr + serve.stdout).contains("replica"), "\(serve)")
        // An earlier build's file: the same id, rewritten in this build's form.
        try Data(String(id.rawValue, radix: 16).utf8).write(to: URL(fileURLWithPath: path))
        let third = Daemon(configuration: config)
        try await third.start()
        await third.stop()
        #expect(DaemonReplicaFile.parse(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) == .current(id))
    }
}
#endif
