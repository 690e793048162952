import ListCRDT
import ListSync
import ListSyncTCP
import ListTable

extension SyncClient {
    /// Publishes what this device does with a document (a drag in progress:
    /// `dragSession.presenceActivity`; `.idle` when it ends) to its other subscribers, shown
    /// with `name` (Docs/DragSessions.md, "Presence"). Offline, nothing is sent: presence is
    /// ephemeral, and a drag still in progress is announced again on the next connection.
    ///
    /// The first call for a document also makes the daemon relay the others' presence to this
    /// device: they arrive in the document's `LiveDocument` (``ListTable/LiveDocument/remoteActivities``,
    /// ``ListTable/LiveDocument/presenceChanges()``). Coalesced to at most 10 messages a second
    /// per document (the latest wins, sent by the 250 ms tick); refreshed every second while it lasts.
    public func publishPresence(_ id: DocumentID, _ activity: PresenceActivity, as name: String) throws(SyncClientError) {
        guard copies[id] != nil else { throw .notOnDevice(id) }
        if let due = presence.publish(id, activity, replica: replica, name: name, now: EventLoop.now()) {
            sendPresence(id, due)
        }
    }

    func sendPresence(_ id: DocumentID, _ p: Presence) {
        guard let c = connection else { return }
        send(c.session.publish(id, p), on: c)
    }

    /// The tick: what the outboxes owe, and the others' presence that expired.
    func tickPresence() {
        let now = EventLoop.now()
        for (id, due) in presence.tick(now: now) { sendPresence(id, due) }
        for copy in copies.values { copy.live.expirePresence(now: now) }
    }
}
