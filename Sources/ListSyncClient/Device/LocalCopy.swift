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
    /// Local appends under way (their operations are applied, not yet durable: not to be sent).
    var appending = 0
    /// `synced` came while appends ran: send what the daemon lacks once they are durable.
    var resendAfterAppends = false
    /// Whether `record` changed since it was written.
    var recordDirty = false
    var failure: SyncFailure?
    /// The device client's decisions for this copy (``ListSync/DeviceClientMachine``, which the
    /// simulator's clients run too): what the daemons acknowledged, which of them owe an answer,
    /// a refusal waiting for later batches, a re-sync. `record` keeps what of it is durable.
    var machine: DeviceClientMachine
    /// Whether the copy re-syncs: it subscribes from nothing next.
    var resync: Bool { machine.isResyncing }
    /// Edits sent on the current connection and not yet answered.
    var inFlight: Int { machine.inFlightCount }

    init(id: DocumentID, name: String, live: LiveDocument, store: DocumentStore, record: SyncRecord, replica: ReplicaID) {
        self.id = id
        self.name = name
        self.live = live
        self.store = store
        self.record = record
        machine = DeviceClientMachine(replica: replica, acknowledged: record.version, unanswered: Set(record.unanswered ?? []),
                                      acknowledgedBy: record.acknowledgedBy)
        recount(replica: replica)
    }

    /// Rebuilds ``unacked`` from the document and the record.
    ///
    /// - Complexity: O(r + k) for the r log records and the k operations the daemon lacks.
    func recount(replica: ReplicaID) {
        unacked = live.operations(since: record.version).filter { $0.id.replica == replica }.map(\.id.counter).sorted()
    }

    /// Takes what the machine knows of the daemons into the record (what they acknowledged, which
    /// owe an answer), and drops what is acknowledged from ``unacked``; after each event.
    func noteMachine(replica: ReplicaID) {
        var updated = record
        updated.acknowledge(machine.acknowledged)
        // Edits only a daemon given up acknowledged count as unacknowledged again: the record
        // follows the machine down (it only ever goes down so).
        let own = machine.acknowledged[replica]
        let lowered = own < updated.acknowledged[replica.rawValue, default: 0]
        if lowered { updated.acknowledged[replica.rawValue] = own == 0 ? nil : own }
        let owing = machine.unanswered.daemons.sorted()
        if owing != (record.unanswered ?? []) { updated.unanswered = owing }
        let runs = machine.acknowledgedBy.runs
        if runs != (record.acknowledgedBy ?? []) { updated.acknowledgedBy = runs }
        if updated != record {
            record = updated
            recordDirty = true
        }
        if lowered { recount(replica: replica) }
        let upTo = machine.acknowledged[replica]
        if let first = unacked.first, first <= upTo {
            unacked.removeFirst(unacked.prefix { $0 <= upTo }.count)
        }
    }

    /// Whether this copy is caught up with nothing of its own waiting.
    var isUpToDate: Bool { phase == .live && unacked.isEmpty && inFlight == 0 && appending == 0 && failure == nil }
}
