import Foundation
import Synchronization
import ListSyncTestTraits
import Testing
import ListSync
import ListSyncTestSupport

/// The built `listsync` binary, next to the test bundle (the test target depends on it), or the
/// one `LISTSYNC_TEST_BINARY` names (to measure another build with the same tests).
func listsyncBinary() -> String? {
    if let other = ProcessInfo.processInfo.environment["LISTSYNC_TEST_BINARY"], !other.isEmpty { return other }
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    for _ in 0..<6 {
        url.deleteLastPathComponent()
        let candidate = url.appendingPathComponent("listsync").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A temporary folder (mode 0700 whatever the umask: a data folder others can write to is
/// refused), removed by `remove()`.
struct TemporaryFolder {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "listsync-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o700)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A `listsync serve` process: started with a data folder on a port from `LoopbackPorts` (below the
/// ephemeral range, so a restart on the same port never finds it taken by a client's connection).
final class DaemonProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` and the pipes are set in init; `output` is behind a Mutex.
    private(set) var process = Process()
    let data: String
    let extra: [String]
    private let output = OutputBuffer()
    private(set) var port: UInt16 = 0

    /// Starts `listsync serve --data DATA --listen 127.0.0.1:PORT EXTRA` and waits for its address.
    /// Without a `port`, one from `LoopbackPorts.restartable()` (another one if something else
    /// listens there meanwhile, 5 tries); with one (a restart), that port, tried again for a while
    /// if it is still in use. It inherits this process's environment (`LISTSYNC_POLLER` included:
    /// the CI's second pass runs the daemons on poll too), or runs with `environment` instead when
    /// one is given; with `umask` (octal digits), through `/bin/sh` with that umask.
    init(data: String, port: UInt16 = 0, extra: [String] = [], environment: [String: String]? = nil, umask: String? = nil) throws {
        expectOwnThread("DaemonProcess (waiting for the daemon's address)")
        self.data = data
        self.extra = extra
        guard let binary = listsyncBinary() else { throw DaemonTestError("the listsync binary was not built next to the tests") }
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        var tries = 0
        while true {
            tries += 1
            let chosen = port == 0 ? try LoopbackPorts.restartable() : port
            do {
                try start(binary: binary, port: chosen, environment: environment, umask: umask)
                return
            } catch let error as DaemonTestError where error.description.contains("is already in use") {
                if port == 0 ? tries >= 5 : Date() >= deadline { throw error }
            }
            if port != 0 { Thread.sleep(forTimeInterval: 0.25) }
        }
    }

    private func start(binary: String, port: UInt16, environment: [String: String]?, umask: String?) throws {
        process = Process()
        output.clear()
        let arguments = ["serve", "--data", data, "--listen", "127.0.0.1:\(port)"] + extra
        if let umask {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let sink = output
        PipeDrain.start(out) { sink.append($0) }
        PipeDrain.start(err) { sink.append($0) }
        try process.run()
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while Date() < deadline {
            let text = output.text
            if let r = text.range(of: "listening on 127.0.0.1:"), text[r.upperBound...].contains("\n") {
                let digits = text[r.upperBound...].prefix { $0.isNumber }
                if let p = UInt16(digits) { self.port = p; return }
            }
            if !process.isRunning {
                process.waitUntilExit()
                throw DaemonTestError("the daemon exited: \(output.text)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw DaemonTestError("the daemon did not say where it listens: \(output.text)")
    }

    var log: String { output.text }
    var address: String { "127.0.0.1:\(port)" }
    var keyFile: String {
        if let i = extra.firstIndex(of: "--key-file"), i + 1 < extra.count { return extra[i + 1] }
        return data + "/key"
    }

    /// SIGKILL, and wait for the process to end.
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM; returns the exit status.
    @discardableResult
    func terminate() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Runs a client command against this daemon: (exit status, stdout, stderr).
    func run(_ args: [String], json: Bool = false) throws -> (Int32, String, String) {
        // `--data`: the client's kept replica id lives in the daemon's folder, not the runner's home.
        let data = args.contains("--data") ? [] : ["--data", self.data]
        return try runListsync(args + ["--daemon", address, "--key-file", keyFile] + data + (json ? ["--json"] : []))
    }

    /// Parses a client command's `--json` output.
    func json(_ args: [String]) throws -> Any {
        let (code, out, err) = try run(args, json: true)
        guard code == 0 else { throw DaemonTestError("\(args) exited \(code): \(err) \(out)") }
        do { return try JSONSerialization.jsonObject(with: Data(out.utf8)) } catch {
            throw DaemonTestError("\(args) printed no JSON (\(out.utf8.count) bytes): \(out) stderr: \(err)")
        }
    }
}

/// Runs the listsync binary with `args`: (exit status, stdout, stderr). `stdin` nil: this
/// process's (perhaps a terminal); `FileHandle.nullDevice`: never a terminal.
/// `currentDirectory`: where it runs (nil: this process's).
func runListsync(_ args: [String], environment: [String: String]? = nil, stdin: FileHandle? = nil,
                 currentDirectory: String? = nil) throws -> (Int32, String, String) {
    expectOwnThread("runListsync (waiting for `listsync \(args.first ?? "")`)")
    guard let binary = listsyncBinary() else { throw DaemonTestError("the listsync binary was not built next to the tests") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: binary)
    p.arguments = args
    if let environment { p.environment = environment }
    if let currentDirectory { p.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    if let stdin { p.standardInput = stdin }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
}

/// Runs the listsync binary with `args` for at most `seconds` (then SIGKILL: a `serve` that should
/// have refused to start is stopped, not left running): (exit status, stdout, stderr, killed).
/// Where the run should end by itself, `seconds` is a guard, ``livenessGuardSeconds``: a loaded
/// machine may take many seconds to start a debug binary, and that must not become `killed`.
/// A short `seconds` is only for runs expected to be killed (a command that must not finish).
func runListsync(_ args: [String], atMost seconds: Double, environment: [String: String]? = nil,
                 currentDirectory: String? = nil) throws -> (Int32, String, String, killed: Bool) {
    let p = try BackgroundListsync(args, environment: environment, currentDirectory: currentDirectory)
    let code = p.stop(within: seconds)
    return (code, p.stdout.text, p.stderr.text, p.killed)
}

/// The listsync binary running in the background (a `watch`, a `docs --follow`), its output
/// collected as it comes; ``stop()`` (or the deinit) ends it with SIGKILL if it still runs.
final class BackgroundListsync: @unchecked Sendable {
    let process = Process()
    let stdout = OutputBuffer(), stderr = OutputBuffer()
    private let out = Pipe(), err = Pipe()

    init(_ args: [String], environment: [String: String]? = nil, currentDirectory: String? = nil) throws {
        guard let binary = listsyncBinary() else { throw DaemonTestError("the listsync binary was not built next to the tests") }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = args
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        PipeDrain.start(out) { [stdout] in stdout.append($0) }
        PipeDrain.start(err) { [stderr] in stderr.append($0) }
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// Whether ``stop(within:)`` had to kill it.
    private(set) var killed = false

    /// Waits at most `seconds` for it to exit by itself, then kills it; returns its exit status.
    @discardableResult
    func stop(within seconds: Double = 0) -> Int32 {
        if seconds > 0 { expectOwnThread("BackgroundListsync.stop(within:)") }
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            killed = true
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        stdout.append(out.fileHandleForReading.readDataToEndOfFile())
        stderr.append(err.fileHandleForReading.readDataToEndOfFile())
        return process.terminationStatus
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

struct DaemonTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Waits until `condition` holds: `seconds` is the time expected, but the wait lasts at least
/// ``livenessGuardSeconds``, a guard against a hang and never the verdict (Docs/Reliability.md,
/// "Tests on a busy machine").
func eventually(_ seconds: Double = 15, _ condition: () throws -> Bool) rethrows -> Bool {
    expectOwnThread("eventually (polling for up to \(Int(max(seconds, livenessGuardSeconds))) s)")
    let deadline = Date().addingTimeInterval(max(seconds, livenessGuardSeconds))
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}

/// A document's sections and item texts, from `show --json`.
func table(_ d: DaemonProcess, _ doc: String) throws -> [[String]] {
    guard let o = try d.json(["show", doc]) as? [String: Any], let sections = o["sections"] as? [[String: Any]] else {
        throw DaemonTestError("show \(doc): not a document")
    }
    return sections.map { s in ((s["items"] as? [[String: Any]]) ?? []).map { $0["text"] as? String ?? "?" } }
}

/// Text collected from a process's pipes.
final class OutputBuffer: Sendable {
    private let state = Mutex("")
    func append(_ d: Data) { state.withLock { $0 += String(decoding: d, as: UTF8.self) } }
    func clear() { state.withLock { $0 = "" } }
    var text: String { state.withLock { $0 } }
}
