import Foundation
import Testing

/// The load generator (Benchmarks/Sources/listsync-load) in small: a CI smoke of the figures of
/// Docs/Reliability.md. The full run is `bash Benchmarks/load.sh`.
@Suite("Load smoke: clients editing shared lists through a daemon process", .timeLimit(.minutes(2)))
struct LoadSmokeTests {
    @Test("16 clients × 40 edits on 4 documents (40% moves): all acknowledged, converged, every item once")
    func smoke() throws {
        guard let listsync = listsyncBinary() else { throw DaemonTestError("no listsync binary") }
        let load = URL(fileURLWithPath: listsync).deletingLastPathComponent().appendingPathComponent("listsync-load").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: load)
        p.arguments = ["--clients", "16", "--edits", "40", "--docs", "4", "--json", "--binary", listsync]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let r = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        #expect(p.terminationStatus == 0)
        #expect(r["acknowledged_edits"] as? Int == 16 * 40, "\(r)")
        #expect(r["converged"] as? Bool == true)
        #expect(r["items_once"] as? Bool == true)
        #expect((r["fanout_samples"] as? Int ?? 0) > 0)
    }
}

@Suite("Kill -9 under load", .timeLimit(.minutes(2)))
struct KillUnderLoadTests {
    @Test("20 SIGKILLs of the daemon while 8 clients insert: every acknowledged insert survives, each item once")
    func killCycles() throws {
        guard let listsync = listsyncBinary() else { throw DaemonTestError("no listsync binary") }
        let load = URL(fileURLWithPath: listsync).deletingLastPathComponent().appendingPathComponent("listsync-load").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: load)
        p.arguments = ["--kill-cycles", "20", "--clients", "8", "--json", "--binary", listsync]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let r = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        #expect(p.terminationStatus == 0, "\(r)")
        #expect(r["missing_acknowledged"] as? Int == 0, "\(r)")
        #expect((r["acknowledged_inserts"] as? Int ?? 0) > 0)
        #expect(r["items_once"] as? Bool == true)
    }
}
