import Foundation
import ListCRDT
import Synchronization

/// The other replicas' presence beside the change stream: received through the sync layer
/// (`DaemonClient`, `SyncClient`), read by identity against this document whenever it is read,
/// so a drag shown on this device follows the rows that remote edits move (Docs/DragSessions.md,
/// "Presence").
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension LiveDocument {
    /// Another replica's presence arrived at `now` (nanoseconds of a monotonic clock): it
    /// replaces that replica's last one; `idle` ends it. This replica's own is ignored.
    /// ``presenceChanges()`` subscribers get the new list when it changed.
    ///
    /// - Complexity: O(r (k + 2) log n) to publish, for r replicas naming k items each in a
    ///   document of n items; O(1) without presence subscribers.
    public func receivePresence(_ presence: Presence, now: UInt64) {
        state.withLock { state in
            guard presence.replica != state.document.replica, state.presence.receive(presence, now: now) else { return }
            Self.publishPresence(&state, force: true)
        }
    }

    /// Forgets the presences not refreshed within the time to live (3 s) of `now`: a sender that
    /// vanished. Call it on a timer (the sync clients do, every 250 ms).
    ///
    /// - Complexity: O(r) for r replicas, plus publishing if any expired.
    public func expirePresence(now: UInt64) {
        state.withLock { state in
            guard !state.presence.isEmpty, !state.presence.expire(now: now).isEmpty else { return }
            Self.publishPresence(&state, force: true)
        }
    }

    /// Forgets every presence (the connection to the daemon closed: nothing refreshes them).
    public func clearPresence() {
        state.withLock { state in
            guard !state.presence.isEmpty else { return }
            state.presence.removeAll()
            Self.publishPresence(&state, force: true)
        }
    }

    /// What the other replicas are doing now, in this document's own index paths, by replica.
    ///
    /// - Complexity: O(r (k + 2) log n) for r replicas naming k items each.
    public var remoteActivities: [RemoteActivity] {
        state.withLock { $0.presence.activities(in: $0.document) }
    }

    /// A new subscription to ``remoteActivities``: the whole list again each time it changes (a
    /// presence arrived, ended or expired, or the document changed while someone drags), until
    /// ``close()`` or the end of the `LiveDocument`. Keeps only the latest list unread.
    public func presenceChanges() -> AsyncStream<[RemoteActivity]> {
        makeStream(bufferingPolicy: .bufferingNewest(1), \.presenceSubscribers)
    }

    /// Sends the activities to every presence subscriber: always when `force` (the board
    /// changed), else only while the board holds something (the document changed). Under the lock.
    static func publishPresence(_ state: inout State, force: Bool = false) {
        guard !state.presenceSubscribers.isEmpty, force || !state.presence.isEmpty else { return }
        let list = state.presence.activities(in: state.document)
        for c in state.presenceSubscribers.values { c.yield(list) }
    }
}
