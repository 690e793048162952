#if canImport(Glibc)
import Foundation
import ListSyncFaults
import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// The real `listsync` binary run with random, mostly malformed, arguments (commands, index paths,
/// counts, values, paths and file names, flags): it must never die by a signal (a shell's exit
/// code under 128 every time). Each run's arguments come from a seeded generator, so a failure
/// is printed with what to run again.
@Suite("The command line's arguments fuzzed for crashes", .ownThread, .serialized, .hangGuard)
struct CLIFuzzTests {
    static let commands = ["status", "docs", "create", "show", "insert", "move", "delete", "rename", "destroy", "open",
                           "export", "import", "sync", "device", "restore", "simulate", "watch", "nonsense", "", "--help"]
    static let indexPaths = ["abc", "1.2.3", "-1.0", "0.0", "0", "9.9", "0.-1", "99999999999999999999.0", "0.99999999999999999999",
                             ".", "..", "1.", ".1", " ", "", "0x1.0", "١.٠", "0.0.0.0.0", "+1.0", "nan"]
    static let counts = ["abc", "-1", "0", "1", "3", "1e9", "99999999999999999999", "", "0x10", "-0", "2147483648"]
    static let values = ["milk", "", " ", "lístas ✓", String(repeating: "v", count: 20_000), "\u{202E}rtl", "a\nb", "\t", "-", "--", "%s%n"]
    /// Paths under the run's own folder, or ones that exist nowhere or cannot be written to
    /// (never a real folder of this machine).
    static let paths = ["A", "x", "A/", ".", "./A", "two words", "lístas ✓", "", "/nonexistent/x", "/dev/null",
                        "data", "data/key", "data/devices.json", "copy/replica", "f.json", "copy/documents", "missing/deep/er", "copy"]
    static let flags = ["--json", "--replica", "--sections", "--name", "--docs", "--expires", "--read-only", "--count",
                        "--key-file", "--credential", "--data", "--yes", "--web", "--no-browser", "--out", "--follow",
                        "--seed", "--replicas", "--steps", "--daemons", "--ring", "--roam", "--help", "-h", "--", "-x", "---"]

    /// The arguments of run `k` of `seed`: a command, then up to six arguments drawn from the pools.
    static func arguments(seed: UInt64, run k: Int) -> [String] {
        func pick(_ a: [String], _ d: inout FaultRandom) -> String { a[Int(d.next() % UInt64(a.count))] }
        var d = FaultRandom(seed: seed, streams: UInt64(k))   // SplitMix64, a stream per run
        var args = [pick(commands, &d)]
        if args[0] == "device" { args.append(pick(["add", "list", "revoke", "nonsense", ""], &d)) }
        for _ in 0..<Int(d.next() % 7) {
            switch d.next() % 6 {
            case 0: args.append(pick(indexPaths, &d))
            case 1: args.append(pick(counts, &d))
            case 2: args.append(pick(values, &d))
            case 3: args.append(pick(paths, &d))
            case 4: args.append(pick(["board", "missing", "0123456789abcdef0123456789abcdef", "r1"], &d))
            default:
                let flag = pick(flags, &d)
                args.append(flag)
                if d.next() % 3 != 0 { args.append(pick(paths + counts + indexPaths, &d)) }
            }
        }
        return args
    }

    @Test("120 runs of random arguments, and of every command with malformed index paths, counts and paths: never a signal", arguments: [44 as UInt64])
    func neverASignal(seed: UInt64) throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        // Something to find: a device copy with a document in copy/, so that runs reach past lookups.
        let made = try CLIRun.run(["create", "--replica", "copy", "board", "--sections", "a,b"], in: dir.path)
        try #require(made.status == 0, "\(made)")
        // A key in the data folder: client commands get as far as connecting (to port 1, where
        // nothing listens).
        try FileManager.default.createDirectory(atPath: dir.path + "/data", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        _ = try KeyFile.readOrCreate(dir.path + "/data/key")
        var runs: [[String]] = (0..<120).map { Self.arguments(seed: seed, run: $0) }
        // And the known shapes, each on the device copy so that it goes past the daemon lookup.
        for path in Self.indexPaths {
            runs.append(["insert", "--replica", "copy", "board", path, "x"])
            runs.append(["move", "--replica", "copy", "board", path, "0.0"])
        }
        for count in Self.counts { runs.append(["watch", "board", "--count", count]) }
        for path in Self.paths {
            runs.append(["show", "--replica", path, "board"])
            runs.append(["export", "--replica", "copy", "board", path])
            runs.append(["import", path])
        }
        var hangs: [[String]] = []
        for args in runs {
            let r = try CLIRun.run(args, in: dir.path)
            #expect(!r.signaled && r.status < 128, "listsync \(args): \(r.signaled ? "signal" : "exit") \(r.status): \(r.stderr.prefix(400))")
            if r.killed { hangs.append(args) }
        }
        #expect(hangs.isEmpty, "still running after \(livenessGuardSeconds) s: \(hangs)")
        print("CLI fuzz: \(runs.count) runs, seed \(seed)")
    }
}
#endif
