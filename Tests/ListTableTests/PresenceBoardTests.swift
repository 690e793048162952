import Foundation
import Testing
import ListSyncTestSupport
import ListCRDT
import ListTable

/// The receiver's model of presence (Docs/DragSessions.md, "Presence"): expiry, and the other
/// replica's drag read by identity against the local document while concurrent edits move rows.
@Suite("Presence: the board, the mapping, DragSession and LiveDocument")
struct PresenceBoardTests {
    static let second: UInt64 = 1_000_000_000
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    /// The local replica (1) and a phone (2) that drags "b" from section 0 to between "f" and "g"
    /// of section 1, as its `DragSession` publishes it.
    func phoneDrag() throws -> (local: ListDocument, phone: ListDocument, session: DragSession, presence: Presence) {
        let local = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"], ["f", "g", "h"]])
        let phone = local.fork(as: 2)
        var session = DragSession()
        try session.begin(at: ip(0, 1), in: phone)
        try session.update(to: ip(1, 1))
        return (local, phone, session, Presence(replica: ReplicaID(2), name: "phone", activity: session.presenceActivity))
    }

    func id(_ value: String, in doc: ListDocument) throws -> ItemID {
        let snapshot = doc.snapshot()
        return try #require(snapshot.sections.flatMap(\.items).first { $0.value == Data(value.utf8) }?.id)
    }

    @Test("a presence lives 3 s after its last refresh; idle ends it at once; the board ignores its own replica")
    func expiry() throws {
        let p = try phoneDrag().presence
        var board = PresenceBoard(localReplica: ReplicaID(1))
        #expect(board.receive(p, now: 0) == true)
        #expect(board.receive(p, now: Self.second) == false, "a refresh changes nothing shown")
        #expect(board.nextExpiry == 4 * Self.second)
        #expect(board.expire(now: 3 * Self.second) == [], "refreshed at 1 s: it lives until 4 s")
        #expect(board.expire(now: 4 * Self.second) == [ReplicaID(2)])
        #expect(board.isEmpty && board.nextExpiry == nil)
        #expect(board.receive(p, now: 5 * Self.second) == true)
        #expect(board.receive(Presence(replica: ReplicaID(2), name: "phone", activity: .idle), now: 5 * Self.second) == true)
        #expect(board.isEmpty, "idle ends it")
        #expect(board.receive(Presence(replica: ReplicaID(1), name: "me", activity: p.activity), now: 0) == false, "its own")
        #expect(board.isEmpty)
    }

    @Test("DragSession publishes its lifted items and the placeholder's neighbours by identity, and idle when it ends")
    func dragSession() throws {
        var (_, phone, session, presence) = try phoneDrag()
        let (b, f, g) = (try id("b", in: phone), try id("f", in: phone), try id("g", in: phone))
        #expect(DragSession().presenceActivity == .idle)
        #expect(presence.activity == .dragging(items: [b], to: PresencePlace(section: phone.sectionIDs[1], after: f, before: g)))
        try session.update(to: ip(0, 0))
        #expect(session.presenceActivity == .dragging(items: [b], to: PresencePlace(section: phone.sectionIDs[0], after: nil,
                                                                                   before: try id("a", in: phone))))
        _ = try session.drop(into: &phone)
        #expect(session.presenceActivity == .idle)
    }

    @Test("read against the local document while it moves rows and inserts concurrently: the receiver's own index paths, and the drop lands there")
    func mappingAcrossConcurrentEdits() throws {
        var (local, phone, session, presence) = try phoneDrag()
        let b = try id("b", in: local)
        var board = PresenceBoard()
        _ = board.receive(presence, now: 0)
        #expect(board.activities(in: local) == [RemoteActivity(presence, in: local)])
        let before = try #require(board.activities(in: local).first)
        #expect(before.items == [b] && before.indexPaths == [ip(0, 1)] && before.destination == ip(1, 1))
        // Concurrently on the local replica: rows inserted above both places, "a" moved below "b".
        _ = try local.insertItem(at: ip(1, 0), value: Data("x".utf8))
        _ = try local.insertItem(at: ip(1, 0), value: Data("y".utf8))
        _ = try local.insertItem(at: ip(0, 0), value: Data("z".utf8))
        _ = try local.moveItem(from: ip(0, 1), to: ip(0, 5))
        #expect(local.snapshot().sections.map { $0.items.map { String(decoding: $0.value, as: UTF8.self) } }
                == [["z", "b", "c", "d", "e", "a"], ["y", "x", "f", "g", "h"]])
        let now = try #require(board.activities(in: local).first)
        #expect(now.indexPaths == [ip(0, 1)] && now.destination == ip(1, 3), "after f, in the local rows")
        // The phone drops there: the row lands exactly where the receiver showed it would.
        let op = try #require(try session.drop(into: &phone))
        _ = local.receive([op])
        #expect(local.indexPath(of: b) == ip(1, 3))
    }

    @Test("anchors that left: the row below, the section's end, no section; dragged rows deleted are left out")
    func fallbacks() throws {
        var (local, _, _, presence) = try phoneDrag()
        let (f, g, h) = (try id("f", in: local), try id("g", in: local), try id("h", in: local))
        _ = try local.deleteItem(f)
        #expect(RemoteActivity(presence, in: local).destination == ip(1, 0), "right above g, which was below")
        _ = try local.deleteItem(g)
        #expect(RemoteActivity(presence, in: local).destination == ip(1, 1), "both gone: the end of the section")
        _ = try local.deleteItem(h)
        _ = try local.deleteItem(try id("b", in: local))
        let gone = RemoteActivity(presence, in: local)
        #expect(gone.items.isEmpty && gone.indexPaths.isEmpty && gone.destination == ip(1, 0))
        _ = try local.deleteSection(at: 1)
        #expect(RemoteActivity(presence, in: local).destination == nil)
        let selection = Presence(replica: ReplicaID(2), name: "phone", activity: .selecting(items: [try id("c", in: local)]))
        let selected = RemoteActivity(selection, in: local)
        #expect(selected.kind == .selecting && selected.indexPaths == [ip(0, 1)] && selected.destination == nil)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("LiveDocument: presence beside the change stream, re-read when rows move, gone when it expires")
    func liveDocument() async throws {
        let (local, phone, _, presence) = try phoneDrag()
        let live = LiveDocument(local)
        var stream = live.presenceChanges().makeAsyncIterator()
        live.receivePresence(Presence(replica: ReplicaID(1), name: "me", activity: presence.activity), now: 0)
        #expect(live.remoteActivities.isEmpty, "its own replica is ignored")
        live.receivePresence(presence, now: 0)
        let first = await stream.next()
        #expect(first?.first?.destination == ip(1, 1))
        // The phone's earlier edit arrives: "f" moved to the top of section 0; the landing place follows it.
        var other = phone
        let move = try #require(try other.moveItem(from: ip(1, 0), to: ip(0, 0)))
        live.receive(move)
        let second = await stream.next()
        let moved = try #require(second?.first)
        #expect(moved.destination == ip(1, 0) && moved.indexPaths == [ip(0, 2)], "f left the section: right above g")
        live.expirePresence(now: PresenceBoard.defaultTTL - 1)
        #expect(live.remoteActivities.count == 1)
        live.expirePresence(now: PresenceBoard.defaultTTL)
        let expired = await stream.next()
        #expect(expired == [])
        #expect(live.remoteActivities.isEmpty)
        live.close()
        let end = await stream.next()
        #expect(end == nil)
    }
}
