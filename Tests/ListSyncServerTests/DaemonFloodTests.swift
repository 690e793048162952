#if canImport(Glibc)
import Foundation
import ListSync
@testable import ListSyncTCP
import ListSyncCrypto
import ListSyncTestSupport
import ListSyncTestTraits
import Synchronization
import Testing

/// Strangers cannot lock a real `listsync serve` (default limits): floods of silent,
/// half-open and failing connections from many loopback addresses, the honest client's own
/// included, while honest commands keep being served; the daemon's CPU is measured
/// (Docs/Security.md, "Connection limits").
@Suite("Daemon under connection floods", .ownThread, .timed, .serialized, .hangGuard)
struct DaemonFloodTests {
    /// CPU seconds (user + system) the process has used, from /proc.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // Fields 14 and 15 (utime, stime) are 12 and 13 after the command name.
        guard fields.count > 13, let u = Double(fields[11]), let s = Double(fields[12]) else { return 0 }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The verdict on honest commands during a flood: every one was served (``honest(_:)``
    /// records a failed one as an issue: a client the flood starved fails its command at the 3 s
    /// handshake deadline), and their median time is within three times (plus half a second) the
    /// median of the same command against a `control` daemon no one floods, run right after each
    /// one: a baseline taken in the same moment, so the machine's load is in both. An absolute
    /// bound failed at random: beside the whole suite the median was 1.7 s, alone 0.08 s.
    static func expectServed(_ times: [Double], control: [Double], _ report: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!times.isEmpty && times.count == control.count, "\(report)", sourceLocation: sourceLocation)
        let median = { (t: [Double]) in t.sorted()[t.count / 2] }
        guard !times.isEmpty, !control.isEmpty else { return }
        let bound = 0.5 + 3 * median(control)
        #expect(median(times) < bound, "median \(median(times)) s against a bound of \(bound) s: \(report)", sourceLocation: sourceLocation)
    }

    /// Runs `rounds` honest commands against `daemon`, each followed by one against `control`
    /// (the baseline of the same moment); returns both lists of times.
    static func honestRounds(_ rounds: Int, _ daemon: DaemonProcess, control: DaemonProcess, _ what: String) throws -> ([Double], [Double]) {
        var times: [Double] = [], baseline: [Double] = []
        for _ in 0..<rounds {
            times.append(try #require(try Self.honest(daemon), "an honest command failed during \(what)"))
            baseline.append(try #require(try Self.honest(control), "the control daemon failed a command during \(what)"))
        }
        return (times, baseline)
    }

    /// Seconds an honest `listsync docs` takes, or nil when it failed (its error recorded).
    static func honest(_ daemon: DaemonProcess) throws -> Double? {
        let start = Date()
        let (code, out, err) = try daemon.run(["docs"])
        if code != 0 {
            let status = (try? daemon.run(["status", "--json"]))?.1 ?? ""
            Issue.record("listsync docs exited \(code) after \(String(format: "%.3f", Date().timeIntervalSince(start))) s: \(err) \(out); the daemon's handshakes and refusals: \(status)")
        }
        return code == 0 ? Date().timeIntervalSince(start) : nil
    }

    /// Times, to the millisecond.
    static func format(_ t: [Double]) -> String { t.map { String(format: "%.3f", $0) }.joined(separator: " ") }

    @Test("500 silent and half-open connections from 250 addresses, a reconnecting attacker on the honest address, and failed proofs: every honest command is served (through the silent flood within three times a control daemon's median of the same moment); the daemon's CPU stays low")
    func floods() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let control = try DaemonProcess(data: dir.path + "/control")
        defer { control.terminate() }
        _ = try daemon.json(["create", "groceries"])
        _ = try control.json(["create", "groceries"])
        let pid = daemon.process.processIdentifier
        var held: [RawSocket] = []
        var report: [String] = []

        // 1. Silent connections from 250 addresses.
        var cpu0 = Self.cpuSeconds(pid), t0 = Date()
        for a in 0..<250 { if let s = RawSocket(port: daemon.port, source: "127.0.\(2 + a / 200).\(1 + a % 200)") { held.append(s) } }
        // 2. Half-open: a HELLO, then silence, from the same addresses.
        for a in 0..<250 {
            guard let s = RawSocket(port: daemon.port, source: "127.0.\(4 + a / 200).\(1 + a % 200)") else { continue }
            s.send(ConnectionMachine.frame(Handshake.hello(versions: 1...1, clientID: SecureRandom.bytes(16), nonce: SecureRandom.bytes(32))))
            held.append(s)
        }
        Thread.sleep(forTimeInterval: 0.3)
        var (times, baseline) = try Self.honestRounds(5, daemon, control: control, "the silent and half-open flood")
        report.append("500 silent/half-open held: honest \(Self.format(times)) s, control \(Self.format(baseline)) s, daemon CPU \(String(format: "%.2f", (Self.cpuSeconds(pid) - cpu0) / Date().timeIntervalSince(t0))) core")
        Self.expectServed(times, control: baseline, report.last!)

        // 3. A reconnecting attacker on 127.0.0.1 (every local client's address) plus failed proofs.
        cpu0 = Self.cpuSeconds(pid)
        t0 = Date()
        let port = daemon.port
        let stop = StopFlag()
        let attacker = Thread {
            var mine: [RawSocket] = []
            var n = 0
            while !stop.value.load(ordering: .relaxed) {
                if let s = RawSocket(port: port, source: "127.0.0.1") {
                    if n % 4 == 0 {
                        // A HELLO and a wrong proof: a failed proof from the honest address.
                        s.send(ConnectionMachine.frame(Handshake.hello(versions: 1...1, clientID: SecureRandom.bytes(16), nonce: SecureRandom.bytes(32))))
                        s.send(ConnectionMachine.frame([MessageType.proof.rawValue] + SecureRandom.bytes(32)))
                    }
                    mine.append(s)
                }
                if mine.count > 300 { mine.removeFirst(150) }
                n += 1
                usleep(500)
            }
        }
        attacker.start()
        defer { stop.value.store(true, ordering: .relaxed) }
        (times, baseline) = try Self.honestRounds(7, daemon, control: control, "the reconnecting flood")
        stop.value.store(true, ordering: .relaxed)
        let seconds = Date().timeIntervalSince(t0)
        let cpu = (Self.cpuSeconds(pid) - cpu0) / seconds
        report.append("reconnecting attacker with failed proofs on 127.0.0.1: honest \(Self.format(times)) s, control \(Self.format(baseline)) s, daemon CPU \(String(format: "%.2f", cpu)) core")
        // Every honest command is served (honestRounds requires it). Its time is printed, not
        // checked: the attacker shares the honest address, and how often it takes the honest
        // connection's handshake slot first (the honest command then retries) depends on how fast
        // each side runs, not on the daemon (CI on a loaded machine: 0.1 s or 1.7-3.8 s per command
        // where a control daemon took 0.1-0.2 s).
        #expect(times.count == 7 && baseline.count == 7, "\(report.last!)")
        #expect(cpu < 0.9, "\(report.last!)")
        let status = try #require(try daemon.json(["status"]) as? [String: Any])
        let handshakes = try #require(status["handshakes"] as? [String: Int])
        report.append("status handshakes: \(handshakes.sorted { $0.key < $1.key })")
        #expect((handshakes["evicted"] ?? 0) > 0 && (handshakes["peak"] ?? 999) <= (handshakes["pool"] ?? 0))
        print("floods:\n  " + report.joined(separator: "\n  "))
        held = []
    }
}

/// A flag another thread reads.
final class StopFlag: Sendable {
    let value = Atomic(false)
}
#endif
