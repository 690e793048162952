import Foundation
import ListCRDT

/// What the other replicas are doing with a document, as a pure state machine: the presence
/// messages received, each forgotten ``ttl`` after it arrived unless refreshed (a sender refreshes
/// every second while a drag lasts, so a sender that vanished is forgotten within 3 s), and read
/// against the local document by identity (Docs/DragSessions.md, "Presence").
///
/// Nothing in it is an index path: ``activities(in:)`` maps the items and landing places to the
/// local document's own index paths when it is called, so rows that remote edits moved since the
/// presence arrived are shown where they are now. `now` is in nanoseconds of any monotonic clock.
public struct PresenceBoard: Sendable {
    /// The default time to live of a presence: 3 s.
    public static let defaultTTL: UInt64 = 3_000_000_000

    /// How long a presence is kept without a refresh, in nanoseconds.
    public let ttl: UInt64
    /// This replica: its own presence, if it comes back, is ignored.
    public let localReplica: ReplicaID?
    private var entries: [ReplicaID: Entry] = [:]

    private struct Entry: Sendable {
        var presence: Presence
        var expires: UInt64
    }

    /// An empty board that forgets a presence `ttl` nanoseconds after it arrived, and ignores
    /// `localReplica`'s own.
    public init(ttl: UInt64 = PresenceBoard.defaultTTL, localReplica: ReplicaID? = nil) {
        precondition(ttl > 0, "a presence must live some time")
        self.ttl = ttl
        self.localReplica = localReplica
    }

    /// The presences held, by replica, idle ones left out.
    ///
    /// - Complexity: O(r log r) for r replicas.
    public var presences: [Presence] {
        entries.values.map(\.presence).sorted { $0.replica < $1.replica }
    }

    /// Whether nothing is held.
    public var isEmpty: Bool { entries.isEmpty }

    /// When the next presence expires (nil: none held).
    public var nextExpiry: UInt64? { entries.values.map(\.expires).min() }

    /// A presence arrived at `now`: it replaces the replica's last one (`idle` removes it).
    /// Returns whether what the board holds changed (a refresh of the same activity does not).
    public mutating func receive(_ presence: Presence, now: UInt64) -> Bool {
        guard presence.replica != localReplica else { return false }
        guard presence.activity != .idle else { return entries.removeValue(forKey: presence.replica) != nil }
        let before = entries[presence.replica]?.presence
        entries[presence.replica] = Entry(presence: presence, expires: now &+ ttl)
        assert(entries.values.allSatisfy { $0.presence.activity != .idle }, "an idle presence is never held")
        return before != presence
    }

    /// Forgets every presence not refreshed within ``ttl`` of `now`; returns their replicas.
    ///
    /// - Complexity: O(r) for r replicas.
    public mutating func expire(now: UInt64) -> [ReplicaID] {
        let gone = entries.filter { $0.value.expires <= now }.keys.sorted()
        for r in gone { entries[r] = nil }
        assert(entries.values.allSatisfy { $0.expires > now }, "an expired presence is still held")
        return gone
    }

    /// Forgets everything (the connection to the daemon closed: no refresh can come).
    public mutating func removeAll() { entries = [:] }

    /// What every replica held does, in `document`'s own index paths now, by replica.
    ///
    /// - Complexity: O(r (k + a) log n) for r replicas naming k items each, a of them anchors,
    ///   in a document of n items.
    public func activities(in document: ListDocument) -> [RemoteActivity] {
        presences.map { RemoteActivity($0, in: document) }
    }
}

/// Another replica's activity as the local document shows it now: what it names, in the local
/// document's own index paths (Docs/DragSessions.md, "Presence").
public struct RemoteActivity: Hashable, Sendable {
    /// What the replica does.
    public enum Kind: Hashable, Sendable {
        /// It drags rows.
        case dragging
        /// It has rows selected.
        case selecting
        /// It has a caret or a selection in a text field (``RemoteActivity/caret``).
        case editing
    }

    /// The replica.
    public var replica: ReplicaID
    /// Its display name.
    public var name: String
    /// What it does.
    public var kind: Kind
    /// The items it names that the local document shows, in the order it named them (the
    /// dragged primary item first); items the local document does not show (deleted, or not
    /// received yet) are left out.
    public var items: [ItemID]
    /// Where those items are in the local document now, in the same order.
    public var indexPaths: [IndexPath]
    /// For a drag: where the rows would land, as `[section, row]` in the local document's
    /// current rows (the dragged ones still counted where they are): the gap before row `row`
    /// (`row` = the section's count: its end). Nil when the local document does not show the
    /// section, and for a selection.
    public var destination: IndexPath?
    /// For a caret: where it is in the local document's copy of the text now. Nil for other
    /// activities, and when the local document does not show that field as text.
    public var caret: RemoteCaret?

    /// `presence` read against `document` by identity.
    ///
    /// The landing place is found as a `DragSession` finds its placeholder after remote edits:
    /// right below the row that was above it (at the top if there was none), else right above
    /// the row that was below it (at the end if there was none), else at the section's end.
    ///
    /// - Complexity: O((k + 2) log n) for k items in a document of n items.
    public init(_ presence: Presence, in document: ListDocument) {
        replica = presence.replica
        name = presence.name
        var items: [ItemID] = [], paths: [IndexPath] = []
        for item in presence.activity.items {
            guard let path = document.indexPath(of: item) else { continue }
            items.append(item)
            paths.append(path)
        }
        (self.items, indexPaths) = (items, paths)
        switch presence.activity {
        case let .dragging(_, place):
            kind = .dragging
            destination = Self.destination(place, in: document)
        case .selecting, .idle:
            kind = .selecting
            destination = nil
        case .editing(let c):
            kind = .editing
            destination = nil
            caret = RemoteCaret(c, in: document)
        }
        assert(self.items.count == indexPaths.count)
    }

    /// The gap where `place` is in `document` now.
    static func destination(_ place: PresencePlace, in document: ListDocument) -> IndexPath? {
        guard let s = document.index(of: place.section), let count = try? document.itemCount(inSection: s) else { return nil }
        func row(of item: ItemID?) -> Int? {
            guard let item, let path = document.indexPath(of: item), path.section == s else { return nil }
            return path.item
        }
        let r: Int
        if place.after == nil { r = 0 }
        else if let a = row(of: place.after) { r = a + 1 }
        else if place.before == nil { r = count }
        else if let b = row(of: place.before) { r = b }
        else { r = count }
        assert(r >= 0 && r <= count, "a landing row \(r) outside 0...\(count)")
        return IndexPath(item: r, section: s)
    }
}

/// Another person's caret or selection in a text field, in the local copy of the text now
/// (positions in Unicode scalars, as splices count them; `TextPositions` converts them for a text
/// view). Each end is found by the identity of its neighbouring character, so it stays where the
/// person put it whatever was typed or removed around it since (Docs/Text.md, "Carets").
public struct RemoteCaret: Hashable, Sendable {
    /// The item or section whose field it is in.
    public var target: RecordTarget
    /// The text field.
    public var field: String
    /// Where the selection started, `0...count`.
    public var anchor: Int
    /// Where it ends (where the caret blinks), `0...count`; equal to `anchor` for a caret.
    public var head: Int

    /// The selected range, lower end first (empty for a caret).
    public var range: Range<Int> { min(anchor, head) ..< max(anchor, head) }

    /// `caret` found in `document`'s text, or nil when the field is not text there or an end's
    /// character is not in it (compaction dropped a removed one, or it has not arrived).
    ///
    /// - Complexity: O(log n) for n characters kept.
    public init?(_ caret: TextCaret, in document: ListDocument) {
        let ends: (Int?, Int?)
        switch caret.target {
        case .item(let i):
            ends = (document.position(of: caret.anchor, caret.field, ofItem: i), document.position(of: caret.head, caret.field, ofItem: i))
        case .section(let s):
            ends = (document.position(of: caret.anchor, caret.field, ofSection: s),
                    document.position(of: caret.head, caret.field, ofSection: s))
        }
        guard let a = ends.0, let h = ends.1 else { return nil }
        (target, field, anchor, head) = (caret.target, caret.field, a, h)
    }
}
