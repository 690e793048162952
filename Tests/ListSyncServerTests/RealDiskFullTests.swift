#if canImport(Glibc)
import Foundation
import Testing
import ListSync
import ListSyncTestTraits

/// Mounts a tmpfs of `size` at `path` (or remounts it with that size); whether `mount` succeeded.
private func mountTmpfs(_ path: String, size: String, remount: Bool = false) -> Bool {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/mount")
    p.arguments = remount ? ["-o", "remount,size=\(size)", path] : ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
}

private func unmount(_ path: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/umount")
    p.arguments = [path]
    try? p.run()
    p.waitUntilExit()
}

/// Whether this process may mount a tmpfs (root in a namespace that allows it): the real full
/// disk needs it; `DaemonFaultTests` covers the same behaviour with an injected ENOSPC everywhere.
private let canMountTmpfs: Bool = {
    let probe = TemporaryFolder()
    defer { probe.remove() }
    guard mountTmpfs(probe.path, size: "64k") else { return false }
    unmount(probe.path)
    return true
}()

/// A real full disk: `listsync serve` with its data folder on a 256 KiB tmpfs.
@Suite("A real full disk (tmpfs)", .ownThread, .serialized, .hangGuard,
       .enabled(if: canMountTmpfs, "mounting a tmpfs needs privileges this run lacks; DaemonFaultTests injects ENOSPC instead"))
struct RealDiskFullTests {
    @Test("edits are refused once the disk is full, status says why; the disk grows: edits go in again; kill -9 and restart: every acknowledged edit is there once")
    func fullAndBack() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let mountPoint = dir.path + "/disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try #require(mountTmpfs(mountPoint, size: "256k"))
        defer { unmount(mountPoint) }
        let data = mountPoint + "/data"
        var daemon = try DaemonProcess(data: data)
        defer { if daemon.process.isRunning { daemon.kill9() } }
        guard let created = try daemon.json(["create", "full", "--sections", "s"]) as? [String: Any],
              let doc = created["id"] as? String else { throw DaemonTestError("create") }

        // Fill it: 3 KB values until the daemon refuses one.
        var acknowledged: [String] = []
        var refusal = ""
        for k in 0..<400 {
            let value = "v\(k)-" + String(repeating: "x", count: 3_000)
            let (code, _, err) = try daemon.run(["insert", doc, "0.\(acknowledged.count)", value])
            if code == 0 { acknowledged.append(value) } else { refusal = err; break }
        }
        #expect(!refusal.isEmpty, "the disk never filled")
        #expect(refusal.contains("28") || refusal.lowercased().contains("space"), "\(refusal)")
        #expect(acknowledged.count > 10)
        let failing = try #require(try daemon.json(["status"]) as? [String: Any])
        #expect(failing["storage"] as? String == "failing", "\(failing)")
        // Still refused while full (the daemon reopens the store for it and fails again); nothing
        // refused was applied.
        let (again, _, _) = try daemon.run(["insert", doc, "0.0", "again-" + String(repeating: "y", count: 3_000)])
        #expect(again != 0)
        #expect(try table(daemon, doc) == [acknowledged])

        // More space: the next edit reopens the store and goes in.
        try #require(mountTmpfs(mountPoint, size: "8m", remount: true))
        let (code, _, err) = try daemon.run(["insert", doc, "0.\(acknowledged.count)", "after"])
        #expect(code == 0, "\(err)")
        acknowledged.append("after")
        let healthy = try #require(try daemon.json(["status"]) as? [String: Any])
        #expect(healthy["storage"] as? String == "ok", "\(healthy)")

        // kill -9 and restart on the same folder: exactly what was acknowledged.
        daemon.kill9()
        daemon = try DaemonProcess(data: data)
        #expect(try table(daemon, doc) == [acknowledged])
        #expect(daemon.terminate() == 0)
        print("real full disk: \(acknowledged.count - 1) edits acknowledged before ENOSPC (\(refusal.prefix(120)))")
    }
}
#endif
