import Foundation
import Testing
import ListSync
import ListSyncTestTraits

/// Runs the built `listsync-load` with `args` (and `--json`): its exit status and result.
func runLoad(_ args: [String], seconds: Int = 100) throws -> (Int32, [String: Any]) {
    guard let listsync = listsyncBinary() else { throw DaemonTestError("no listsync binary") }
    let load = URL(fileURLWithPath: listsync).deletingLastPathComponent().appendingPathComponent("listsync-load").path
    let p = Process()
    p.executableURL = URL(fileURLWithPath: load)
    p.arguments = args + ["--json", "--binary", listsync]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    // A hung run must not hang the suite (a time limit does not stop a blocking read): after
    // `seconds`, it and the daemons it started are killed, and the output that came is read.
    let pid = p.processIdentifier
    let watchdog = DispatchWorkItem {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGKILL) }
        kill(pid, SIGKILL)
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds), execute: watchdog)
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    watchdog.cancel()
    if p.terminationReason == .uncaughtSignal, p.terminationStatus == SIGKILL {
        throw DaemonTestError("listsync-load \(args) ran past \(seconds) s and was killed; it printed \(String(decoding: data, as: UTF8.self))")
    }
    guard let r = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw DaemonTestError("listsync-load printed \(String(decoding: data, as: UTF8.self))")
    }
    return (p.terminationStatus, r)
}

/// The load generator (Benchmarks/Sources/listsync-load) in small: a CI smoke of the figures of
/// Docs/Reliability.md. The full run is `bash Benchmarks/load.sh`.
@Suite("Load smoke: clients editing shared lists through a daemon process", .ownThread, .loadsMachine, .hangGuard)
struct LoadSmokeTests {
    @Test("16 clients × 40 edits on 4 documents (40% moves): all acknowledged, converged, every item once")
    func smoke() throws {
        let (status, r) = try runLoad(["--clients", "16", "--edits", "40", "--docs", "4"])
        #expect(status == 0)
        #expect(r["acknowledged_edits"] as? Int == 16 * 40, "\(r)")
        #expect(r["converged"] as? Bool == true)
        #expect(r["items_once"] as? Bool == true)
        #expect((r["fanout_samples"] as? Int ?? 0) > 0)
    }

    @Test("8 clients × 30 inserts on one list, then kill -9 once converged: every acknowledged insert there")
    func killAfter() throws {
        let (status, r) = try runLoad(["--clients", "8", "--edits", "30", "--docs", "1", "--moves", "0",
                                       "--deletes", "0", "--kill-after"])
        #expect(status == 0, "\(r)")
        #expect(r["acknowledged_inserts"] as? Int == 8 * 30, "\(r)")
        #expect(r["missing_acknowledged"] as? Int == 0, "\(r)")
        #expect(r["items_per_document"] as? Int == 20 + 8 * 30, "\(r)")
    }
}

@Suite("Kill -9 under load", .ownThread, .loadsMachine, .hangGuard)
struct KillUnderLoadTests {
    @Test("20 SIGKILLs of the daemon while 8 clients insert: every acknowledged insert survives, each item once")
    func killCycles() throws {
        let (status, r) = try runLoad(["--kill-cycles", "20", "--clients", "8"])
        #expect(status == 0, "\(r)")
        #expect(r["missing_acknowledged"] as? Int == 0, "\(r)")
        #expect((r["acknowledged_inserts"] as? Int ?? 0) > 0)
        #expect(r["items_once"] as? Bool == true)
    }
}
