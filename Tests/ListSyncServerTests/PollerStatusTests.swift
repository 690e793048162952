import Foundation
import Testing
import ListSyncTestTraits

/// The daemon names its event loop's poller in `listsync status` (`"poller"` in `--json`), and a
/// `LISTSYNC_POLLER` it cannot use stops it at once with the choices.
@Suite("The daemon's poller, as status reports it", .ownThread, .serialized, .hangGuard)
struct PollerStatusTests {
    /// This process's environment with `LISTSYNC_POLLER` set to `value` (removed for `nil`).
    static func environment(poller value: String?) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["LISTSYNC_POLLER"] = value
        return env
    }

    @Test("status --json and status name the poller: forced poll, forced epoll, and the default (epoll on Linux)",
          arguments: [("poll", "poll"), ("epoll", "epoll"), (nil, "epoll")] as [(String?, String)])
    func statusNamesThePoller(forced: String?, expected: String) throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path, environment: Self.environment(poller: forced))
        defer { daemon.terminate() }
        let status = try #require(try daemon.json(["status"]) as? [String: Any])
        #expect(status["poller"] as? String == expected)
        let (code, out, err) = try daemon.run(["status"])
        #expect(code == 0, "\(err)")
        #expect(out.split(separator: "\n").contains("poller: \(expected)"), "\(out)")
    }

    @Test("an unknown or unavailable LISTSYNC_POLLER stops serve with a message naming the choices",
          arguments: ["select", "kqueue"])
    func badPoller(value: String) throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let (code, _, err) = try runListsync(["serve", "--data", dir.path, "--listen", "127.0.0.1:0"],
                                             environment: Self.environment(poller: value))
        #expect(code != 0)
        #expect(err.contains("epoll, poll"), "\(err)")
        #expect(err.contains(value), "\(err)")
    }
}
