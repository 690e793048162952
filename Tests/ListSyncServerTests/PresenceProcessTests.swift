import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncServer
import ListSyncFiles
import ListTable
import ListSyncTestSupport
import ListSyncTestTraits
import Testing

/// Presence through a `listsync serve` process (Docs/DragSessions.md, "Presence"): clients over
/// TCP (`DaemonClient`, the device's `SyncClient`) and a `watch` process see a drag as it happens, see it end when its sender vanishes, and
/// the daemon's data folder does not change by one byte.
// Timed: its bounds (a drag seen within 3 s, ended within the time to live and 2 s) were missed
// once in the poll pass of a CI run beside the tests that load the machine.
@Suite("Presence through a daemon process", .ownThread, .serialized, .timed, .hangGuard)
struct PresenceProcessTests {
    /// Every file under `folder` (relative path → contents).
    static func files(_ folder: String) -> [String: Data] {
        var out: [String: Data] = [:]
        let e = FileManager.default.enumerator(atPath: folder)
        while let path = e?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = folder + "/" + path
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            // The client commands' kept replica ids (Docs/Daemon.md): written by `watch`, not the daemon.
            if path.hasPrefix("clients/") { continue }
            // Who counts for compaction (Docs/Daemon.md, "Compaction"): written when a subscriber
            // first reports what it has seen (`seen`, coalesced to once a second, so it may come
            // after the reading before the burst), never by presence.
            if path.hasSuffix("/stability") { continue }
            out[path] = FileManager.default.contents(atPath: full) ?? Data()
        }
        return out
    }

    /// Polls `condition` every 10 ms; returns the time it took (nil: never). `seconds` is the
    /// time expected on a quiet machine; the wait lasts at least ``livenessGuardSeconds``, a guard
    /// against a hang, not the verdict (how soon is the machine's load as much as the daemon's).
    static func within(_ seconds: Double, _ condition: () async -> Bool) async -> Double? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(max(seconds, livenessGuardSeconds)) {
            if await condition() { return Self.seconds(ContinuousClock.now - start) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// A `listsync watch DOC` process and what it prints.
    static func watch(_ doc: DocumentID, _ daemon: DaemonProcess, json: Bool) throws -> (Process, OutputBuffer) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try #require(listsyncBinary()))
        p.arguments = ["watch", doc.description, "--daemon", daemon.address, "--key-file", daemon.keyFile] + (json ? ["--json"] : [])
        let pipe = Pipe()
        let printed = OutputBuffer()
        p.standardOutput = pipe
        PipeDrain.start(pipe) { printed.append($0) }
        try p.run()
        return (p, printed)
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    @Test("a drag on one client is seen on another and by `watch`; when its sender vanishes it ends by the time to live alone; the data folder is byte for byte unchanged")
    func dragSeenAndEnded() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let daemon = try DaemonProcess(data: dir.path + "/data")
        defer { daemon.terminate() }
        let key = try KeyFile.read(daemon.keyFile)
        let phone = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, timeout: .seconds(livenessGuardSeconds))
        let tablet = try await DaemonClient.connect(host: "127.0.0.1", port: daemon.port, key: key, timeout: .seconds(livenessGuardSeconds))
        let doc = try await phone.create(name: "groceries", sections: ["to buy", "done"])
        let phoneLive = try await phone.open(doc)
        for (row, value) in ["milk", "eggs", "bread"].enumerated() {
            _ = try await phone.edit(doc) { (d: inout ListDocument) throws(ListError) in
                try d.insertItem(at: IndexPath(item: row, section: 0), value: Data(value.utf8))
            }
        }
        let tabletLive = try await tablet.open(doc)
        #expect(tabletLive.document.totalItemCount == 3)
        try await tablet.publishPresence(doc, .idle, as: "tablet")   // takes part: hears the others
        // A device client too (offline-first, reconnecting).
        let laptop = try SyncClient(folder: dir.path + "/laptop", server: SyncClientTests.server(daemon))
        let laptopLive = try await laptop.fetch(doc)
        await laptop.start()
        try await laptop.waitUntilSynced(timeout: .seconds(livenessGuardSeconds))
        try await laptop.publishPresence(doc, .idle, as: "laptop")

        // Watch processes, in JSON and in text.
        let (watch, printed) = try Self.watch(doc, daemon, json: true)
        defer { if watch.isRunning { watch.terminate() } }
        let (textWatch, text) = try Self.watch(doc, daemon, json: false)
        defer { if textWatch.isRunning { textWatch.terminate() } }
        #expect(await Self.within(20) { printed.text.contains("\"sections\"") && text.text.contains("watching") } != nil,
                "the watches did not start: \(printed.text) \(text.text)")
        try await Task.sleep(for: .milliseconds(200))   // its announcement reaches the daemon

        let before = Self.files(daemon.data)
        #expect(!before.isEmpty)

        // The phone lifts "milk" and hovers at the top of "done".
        var drag = DragSession()
        try drag.begin(at: IndexPath(item: 0, section: 0), in: phoneLive.document)
        try drag.update(to: IndexPath(item: 0, section: 1))
        try await phone.publishPresence(doc, drag.presenceActivity, as: "phone")
        // Within a second on a quiet machine (the figure is printed, not a verdict).
        let seen = await Self.within(3) {
            tabletLive.remoteActivities == [RemoteActivity(Presence(replica: phoneLive.replica, name: "phone", activity: drag.presenceActivity),
                                                           in: tabletLive.document)]
        }
        #expect(seen != nil, "the tablet did not see the drag: \(tabletLive.remoteActivities)")
        print("presence: the drag seen by the tablet after \(seen.map { String(format: "%.3f", $0) } ?? "never") s")
        let shown = try #require(tabletLive.remoteActivities.first)
        #expect(shown.name == "phone" && shown.indexPaths == [IndexPath(item: 0, section: 0)] && shown.destination == IndexPath(item: 0, section: 1))
        #expect(await Self.within(2) { printed.text.contains("dragging") && printed.text.contains("phone") } != nil,
                "watch did not show the drag: \(printed.text)")
        #expect(await Self.within(2) { text.text.contains("presence: phone drags \"milk\" to 1.0") } != nil,
                "watch did not show the drag: \(text.text)")
        #expect(await Self.within(2) { laptopLive.remoteActivities.first?.destination == IndexPath(item: 0, section: 1) } != nil,
                "the device client did not show the drag: \(laptopLive.remoteActivities)")

        // A burst: a hover every millisecond for half a second, from both.
        for i in 0..<500 {
            try drag.update(to: IndexPath(item: i % 3, section: 0))
            try await phone.publishPresence(doc, drag.presenceActivity, as: "phone")
            try await tablet.publishPresence(doc, .selecting(items: [try tabletLive.document.itemID(at: IndexPath(item: i % 3, section: 0))]),
                                             as: "tablet")
            try await Task.sleep(for: .milliseconds(1))
        }
        try await Task.sleep(for: .milliseconds(1_500))   // refreshes go on meanwhile
        // Polled, not read once: on a loaded machine a stall past the time to live can let an
        // entry lapse between two refreshes; the next refresh shows it again (CI failed here once).
        #expect(await Self.within(3) { !tabletLive.remoteActivities.isEmpty && !phoneLive.remoteActivities.isEmpty } != nil,
                "after the burst: tablet sees \(tabletLive.remoteActivities), phone sees \(phoneLive.remoteActivities)")
        #expect(Self.files(daemon.data) == before, "presence changed the daemon's data folder")
        let status = try #require(try daemon.json(["status"]) as? [String: Any])
        #expect((status["presence_in"] as? Int ?? 0) > 0 && status["presence_dropped"] as? Int == 0,
                "coalescing clients stay within the daemon's limit: \(status["presence_in"] ?? "?"), \(status["presence_dropped"] ?? "?")")

        // The phone vanishes without ending its drag: the others see the drag end within the time to live.
        await phone.close()
        let ended = await Self.within(Double(PresenceBoard.defaultTTL) / 1e9 + 2) { tabletLive.remoteActivities.isEmpty }
        #expect(ended != nil, "the tablet still shows the drag: \(tabletLive.remoteActivities)")
        // The others follow the tablet.
        #expect(await Self.within(5) { !laptopLive.remoteActivities.contains { $0.name == "phone" } } != nil,
                "the device client still shows the drag: \(laptopLive.remoteActivities)")
        #expect(await Self.within(5) { printed.text.contains("ended") } != nil, "watch did not show the end: \(printed.text)")
        #expect(await Self.within(5) { text.text.contains("presence: phone ended") } != nil, "watch did not show the end: \(text.text)")
        await tablet.close()
        await laptop.close()
        #expect(Self.files(daemon.data) == before, "presence changed the daemon's data folder")
    }
}
