import ListCRDT
import ListSync
import ListStore
import ListTable

/// One document on the device: its live copy, its store, and where it stands with the daemon.
/// Owned by a ``SyncClient`` (isolated to it).
final class LocalCopy {
    enum Phase: Equatable {
        /// Not attached to the daemon (offline, or not yet asked).
        case idle
        /// A `create` for a document made on this device is on its way.
        case creating(request: UInt64)
        /// `subscribe` sent; `subscribed` not yet back.
        case subscribing
        /// `subscribed` came; the catch-up runs until `synced`.
        case catchingUp
        /// Caught up: edits are sent as they are made.
        case live
    }

    let id: DocumentID
    var name: String
    var live: LiveDocument
    var store: DocumentStore
    var record: SyncRecord
    var phase: Phase = .idle
    /// The counters of this device's operations the daemon has not acknowledged, increasing.
    var unacked: [UInt64] = []
    /// Edits sent on the current connection and not yet answered.
    var inFlight = 0
    /// Local appends under way (their operations are applied, not yet durable: not to be sent).
    var appending = 0
    /// `synced` came while appends ran: send what the daemon lacks once they are durable.
    var resendAfterAppends = false
    /// Whether `record` changed since it was written.
    var recordDirty = false
    var failure: SyncFailure?
    /// Its re-sync after the daemon refused an edit for its compaction floor
    /// (``SyncErrorCode/compacted``) or sent a snapshot for its catch-up (``ListSync/CopyResync``,
    /// which the simulator's clients keep too).
    var resyncing = CopyResync()
    /// A refusal for the floor waiting for the answers of the edits sent after it (``ListSync/RefusalWait``).
    var refusal = RefusalWait()
    /// Whether the copy re-syncs: it subscribes from nothing next.
    var resync: Bool { resyncing.isActive }

    init(id: DocumentID, name: String, live: LiveDocument, store: DocumentStore, record: SyncRecord, replica: ReplicaID) {
        self.id = id
        self.name = name
        self.live = live
        self.store = store
        self.record = record
        recount(replica: replica)
    }

    /// Rebuilds ``unacked`` from the document and the record.
    ///
    /// - Complexity: O(r + k) for the r log records and the k operations the daemon lacks.
    func recount(replica: ReplicaID) {
        unacked = live.operations(since: record.version).filter { $0.id.replica == replica }.map(\.id.counter).sorted()
    }

    /// Records that the daemon holds `version` durably. Once nothing of this device's is
    /// unacknowledged, no daemon owes an answer for any of it.
    func acknowledge(_ version: VersionVector, replica: ReplicaID) {
        record.acknowledge(version)
        recordDirty = true
        let upTo = version[replica]
        if let first = unacked.first, first <= upTo {
            unacked.removeFirst(unacked.prefix { $0 <= upTo }.count)
        }
        if unacked.isEmpty, appending == 0, record.unanswered?.isEmpty == false { record.unanswered = [] }
    }

    /// The daemons that owe an answer for edits of this device (``ListSync/UnansweredSends``).
    var unanswered: UnansweredSends<String> {
        get { UnansweredSends(Set(record.unanswered ?? [])) }
        set { record.unanswered = newValue.daemons.sorted(); recordDirty = true }
    }

    /// Whether this copy is caught up with nothing of its own waiting.
    var isUpToDate: Bool { phase == .live && unacked.isEmpty && inFlight == 0 && appending == 0 && failure == nil }
}
