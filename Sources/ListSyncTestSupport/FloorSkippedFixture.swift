import Foundation
import ListCRDT

/// A peer's floor that counts an edit it never held (Docs/Semantics.md §7, "A floor that counts
/// what it skipped"), for the tests of ListCRDT and of the daemon's core.
public enum FloorSkippedFixture {
    /// The hub (replica 1, the peer with a floor), the left-out copy `parted` (replica 9)
    /// keeping device 3's field write `w` (`title` of item `p`) waiting: it lacks `p`, which only
    /// the hub took. The device then re-synced at the hub, compacted after a delete it never saw
    /// (so `w` is made before that floor, and not waited for), and made its unsent `y` again under
    /// a counter after `w`; the hub took it and compacted again: its floor counts `w` without
    /// holding it. With `hubGoesOn`, the hub first makes that many inserts, so that its clock is
    /// past the device's when the device re-syncs there. `made`: `y` made again.
    public static func scene(hubGoesOn: Int = 0) throws
        -> (hub: ListDocument, parted: ListDocument, p: ListOperation, w: ListOperation, made: [ListOperation]) {
        var hub = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var parted = hub.fork(as: 9)
        var device = hub.fork(as: 3)
        let p = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("p".utf8))
        precondition(hub.receive([p]).refused.isEmpty)
        let w = try device.setField("title", to: .string("T"), ofItem: ItemID(p.id))
        precondition(w.deps.contains(p.id))
        precondition(parted.receive([w]).refused.isEmpty && parted.pendingCount == 1, "w waits for p")
        let y = try device.insertItem(at: IndexPath(item: 4, section: 0), value: Data("y".utf8))
        _ = try hub.deleteItem(at: IndexPath(item: 2, section: 0))   // "b", which the device never saw deleted
        for k in 0..<hubGoesOn { _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("h\(k)".utf8)) }
        try hub.compact(stable: hub.version)
        precondition(hub.isBeforeFloor(w), "w is made before that floor")
        var resynced = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = resynced.remake([y], from: device, refused: true)
        precondition(made.count == 1 && made[0].id.counter > y.lastID.counter, "y made again as \(made)")
        precondition(hub.receive(made).refused.isEmpty)
        try hub.compact(stable: hub.version)
        return (hub, parted, p, w, made)
    }
}
