import ListCRDT

/// The sender's side of one document's presence, as a pure state machine: it coalesces what the
/// app publishes to at most one message every ``minInterval`` (the latest wins) and refreshes a
/// drag or selection in progress every ``refreshInterval``, so that receivers, which forget a
/// presence not refreshed within ``PresenceBoard``'s time to live (3 s), keep showing it while
/// it lasts (Docs/DragSessions.md, "Presence").
///
/// The driver calls ``publish(_:now:)`` whenever the activity changes (every hover of a drag is
/// fine) and ``tick(now:)`` on its timer; each returns the activity to send now, if any. `now` is
/// in nanoseconds of any monotonic clock.
///
/// A new outbox first sends `idle`, the announcement that makes the daemon relay the others'
/// presence to this connection; call ``announce()`` after each new subscription for the same.
public struct PresenceOutbox: Sendable {
    /// The shortest time between two messages: 100 ms (at most 10 a second).
    public let minInterval: UInt64
    /// How often an activity in progress is sent again: 1 s.
    public let refreshInterval: UInt64
    /// The activity the app published last.
    public private(set) var current: PresenceActivity = .idle
    /// Whether ``current`` was sent. A new outbox owes its first message, the announcement.
    private var sent = false
    /// When the last message went out (nil: never).
    private var lastSent: UInt64?
    /// Messages sent, for tests and metrics.
    public private(set) var sentCount = 0

    /// An outbox that sends at most one message every `minInterval` and refreshes every
    /// `refreshInterval` (nanoseconds).
    public init(minInterval: UInt64 = 100_000_000, refreshInterval: UInt64 = 1_000_000_000) {
        precondition(minInterval > 0 && refreshInterval >= minInterval, "intervals: \(minInterval) ns, \(refreshInterval) ns")
        (self.minInterval, self.refreshInterval) = (minInterval, refreshInterval)
    }

    /// The app's activity is now `activity`: returns it when it may go out now, else nil (it
    /// goes out from a later ``tick(now:)``, unless replaced before). The same activity again
    /// sends nothing.
    public mutating func publish(_ activity: PresenceActivity, now: UInt64) -> PresenceActivity? {
        if activity == current, sent { return nil }
        current = activity
        sent = false
        return due(now) ? send(now) : nil
    }

    /// A new subscription (a reconnection): the current activity is owed again, as the
    /// announcement the daemon relays the others' presence after.
    public mutating func announce() { sent = false }

    /// The clock moved: returns the activity to send now, if any (a coalesced one whose turn
    /// came, or the refresh of one in progress).
    public mutating func tick(now: UInt64) -> PresenceActivity? {
        if !sent { return due(now) ? send(now) : nil }
        guard current != .idle, let lastSent, now &- lastSent >= refreshInterval else { return nil }
        return send(now)
    }

    /// When ``tick(now:)`` next has something to send (nil: nothing until the next publish).
    public var nextDeadline: UInt64? {
        guard let lastSent else { return sent ? nil : 0 }
        if !sent { return lastSent &+ minInterval }
        return current == .idle ? nil : lastSent &+ refreshInterval
    }

    private func due(_ now: UInt64) -> Bool {
        guard let lastSent else { return true }
        return now &- lastSent >= minInterval
    }

    private mutating func send(_ now: UInt64) -> PresenceActivity {
        assert(lastSent.map { now &- $0 >= minInterval } ?? true, "two presence messages within \(minInterval) ns")
        lastSent = now
        sent = true
        sentCount += 1
        return current
    }
}

/// A client's presence in every document it takes part in: one ``PresenceOutbox`` per document
/// and the name shown with it; what the drivers (`DaemonClient`, `SyncClient`, the simulator)
/// keep, pure like the outbox.
public struct PresencePublisher: Sendable {
    private var outboxes: [DocumentID: PresenceOutbox] = [:]
    /// Per document, who the presence is of: the replica that edits it here, the name shown.
    private var senders: [DocumentID: (replica: ReplicaID, name: String)] = [:]

    /// A publisher taking part in no document yet.
    public init() {}

    /// The documents it takes part in, in order.
    public var documents: [DocumentID] { outboxes.keys.sorted() }

    /// The activity of `replica` in `document` is now `activity`, shown as `name`: the presence
    /// to send now, if any (the first call for a document takes part in it, and sends at once).
    public mutating func publish(_ document: DocumentID, _ activity: PresenceActivity, replica: ReplicaID, name: String,
                                 now: UInt64) -> Presence? {
        senders[document] = (replica, name)
        let due = outboxes[document, default: PresenceOutbox()].publish(activity, now: now)
        return due.map { Presence(replica: replica, name: name, activity: $0) }
    }

    /// The clock moved: the presences to send now, by document.
    ///
    /// - Complexity: O(d log d) for d documents.
    public mutating func tick(now: UInt64) -> [(DocumentID, Presence)] {
        var out: [(DocumentID, Presence)] = []
        for doc in documents {
            guard let due = outboxes[doc]!.tick(now: now), let sender = senders[doc] else { continue }
            out.append((doc, Presence(replica: sender.replica, name: sender.name, activity: due)))
        }
        return out
    }

    /// `document` was subscribed again (a reconnection): its current activity is owed again.
    public mutating func announce(_ document: DocumentID) { outboxes[document]?.announce() }

    /// When ``tick(now:)`` next has something to send (nil: nothing until the next publish).
    public var nextDeadline: UInt64? { outboxes.values.compactMap(\.nextDeadline).min() }
}
