import Foundation
import ListSyncTestTraits
import Testing

/// A left-out daemon that only accepts links, against two real `listsync serve` processes
/// (Docs/Semantics.md §7, "A left-out daemon that only accepts links"): daemon A holds a copy of
/// Y's document that Y never heard of (Y's data folder copied before Y's next edit, A's own
/// replica and client slots made afresh) and compacts it alone; then A is started with `--peer`
/// Y, which has no `--peer` of its own. A's link offers Y its snapshot (`floorSnapshot`); Y merges
/// back onto it, and both daemons show every edit, Y's made again.
@Suite("Daemon: a left-out peer that only accepts links", .ownThread, .serialized, .hangGuard)
struct PeerFloorOfferProcessTests {
    @Test("A compacted a copy of Y's list without Y while Y took an edit; A dials Y: Y is offered A's snapshot, merges back, and both show both edits")
    func acceptOnlyMergesBack() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let files = FileManager.default
        // Y never compacts (its copy keeps its history), and never dials.
        let yFlags = ["--storage", "per-document", "--compact-after", "0"]
        var y = try DaemonProcess(data: dir.path + "/y", extra: yFlags)
        defer { y.terminate() }
        #expect(try y.run(["create", "list", "--sections", "s"]).0 == 0)
        #expect(try y.run(["insert", "list", "0.0", "one"]).0 == 0)
        let yPort = y.port
        #expect(y.terminate() == 0)
        // A: the same document (id and epoch), no peer known, its own replica and client slots.
        try files.copyItem(atPath: dir.path + "/y", toPath: dir.path + "/a")
        for name in ["replica", "clients", "lock"] { try? files.removeItem(atPath: dir.path + "/a/" + name) }
        y = try DaemonProcess(data: dir.path + "/y", port: yPort, extra: yFlags)
        #expect(try y.run(["insert", "list", "0.1", "from Y"]).0 == 0)

        // Y's command slot made the list and holds A's compaction back until it is retired.
        let aFlags = ["--storage", "per-document", "--compact-after", "2", "--compact-interval", "0", "--retire-after", "2s"]
        var a = try DaemonProcess(data: dir.path + "/a", extra: aFlags)
        defer { a.terminate() }
        for value in ["from A", "more from A", "and more from A"] { #expect(try a.run(["insert", "list", "0.1", value]).0 == 0) }
        #expect(eventually(30) { PeerCompactionProcessTests.compactions(a) > 0 }, "A compacts alone: \(a.log)")
        let aPort = a.port
        #expect(a.terminate() == 0)

        // A dials Y (the same key: A's folder is a copy of Y's); Y has no --peer.
        a = try DaemonProcess(data: dir.path + "/a", port: aPort, extra: aFlags + ["--peer", y.address])
        #expect(eventually(40) { y.log.contains("peer snapshot merged back") }, "Y's log:\n\(y.log)\nA's log:\n\(a.log)")
        #expect(y.log.contains("offered"), "\(y.log)")
        let both = Set(["one", "from Y", "from A", "more from A", "and more from A"])
        #expect(eventually(40) {
            let (ta, ty) = ((try? table(a, "list")) ?? [], (try? table(y, "list")) ?? [])
            return ta == ty && Set(ta.flatMap { $0 }) == both && ta.flatMap { $0 }.count == both.count
        }, "A: \(String(describing: try? table(a, "list"))) Y: \(String(describing: try? table(y, "list")))\nY's log:\n\(y.log)\nA's log:\n\(a.log)")
        #expect(!a.log.contains("peer compacted past this copy") && !y.log.contains("offered snapshot not taken"))
    }
}
