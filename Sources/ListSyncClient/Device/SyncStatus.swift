import ListCRDT
import ListSync
import ListTable

/// Why a ``SyncClient`` cannot sync, in words a person can act on.
public enum SyncFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The daemon refused the device's key: the key file is not the daemon's.
    case wrongKey(String)
    /// The daemon's copy of a document was reset or restored (a new epoch). The device's copy is
    /// kept as it was, with its unsent edits, until the app calls ``SyncClient/acceptReset(_:)``.
    case documentReset(DocumentID, unsent: Int)
    /// The device's storage failed (full, or an I/O error): edits cannot be made durable.
    case storage(String)
    /// The daemon refused a document or a batch (a limit, a malformed or refused operation).
    case refused(DocumentID?, SyncErrorCode, String)
    /// The daemon ended this device's access: its credential was revoked or expired
    /// (``SyncErrorCode/revoked``, ``SyncErrorCode/expired``). The client stops connecting; edits
    /// are still saved on the device. A new credential from the operator is needed.
    case accessEnded(SyncErrorCode, String)
    /// The document was destroyed on the daemon while this device had `unsent` edits of it: the
    /// copy was moved to `folder` (nothing of it is lost) and is no longer synced. Export what is
    /// wanted from it; ``SyncClient/dismissDestroyed(_:)`` ends this report.
    case documentDestroyed(DocumentID, unsent: Int, folder: String)

    public var description: String {
        switch self {
        case let .wrongKey(why): return "the daemon refused this device's key (\(why)); check the key file"
        case let .documentReset(id, unsent):
            return "document \(id) was reset on the daemon; this device's copy and its \(unsent) unsent edit(s) are kept aside until the app accepts the reset"
        case let .storage(why): return "this device cannot save edits: \(why)"
        case let .refused(id, code, text): return "the daemon refused \(id.map { "document \($0)" } ?? "a request"): \(code): \(text)"
        case let .accessEnded(code, text): return "the daemon ended this device's access (\(code): \(text)); ask its operator for a new credential"
        case let .documentDestroyed(id, unsent, folder):
            return "document \(id) was destroyed on the daemon; this device's copy with its \(unsent) unsent edit(s) was moved to \(folder) and is no longer synced"
        }
    }
}

/// Where a ``SyncClient`` stands, as an app shows it ("Offline, 3 edits waiting").
///
/// `waiting` counts the device's operations the daemon has not acknowledged as durable.
public enum SyncStatus: Hashable, Sendable, CustomStringConvertible {
    /// No connection. `reason` says why the last attempt failed (nil before the first one, or
    /// when the client runs without a daemon).
    case offline(waiting: Int, reason: String?)
    /// A connection attempt is under way.
    case connecting(waiting: Int)
    /// Connected; documents are catching up or edits wait for their acknowledgement.
    case syncing(waiting: Int)
    /// Connected, every open document caught up, and every edit acknowledged.
    case upToDate
    /// Syncing stopped for a reason the app or the person must act on; edits are still saved.
    case failed(SyncFailure)

    /// The number of edits waiting for the daemon's acknowledgement (0 when not known: failed).
    public var waiting: Int {
        switch self {
        case let .offline(w, _), let .connecting(w), let .syncing(w): return w
        case .upToDate, .failed: return 0
        }
    }

    /// The coarse state a ``ListModel`` shows.
    public var state: SyncState {
        switch self {
        case .offline, .connecting, .failed: return .offline
        case .syncing: return .syncing
        case .upToDate: return .upToDate
        }
    }

    public var description: String {
        switch self {
        case let .offline(w, reason): return "offline, \(w) edit(s) waiting" + (reason.map { " (\($0))" } ?? "")
        case let .connecting(w): return "connecting, \(w) edit(s) waiting"
        case let .syncing(w): return "syncing, \(w) edit(s) waiting"
        case .upToDate: return "up to date"
        case let .failed(f): return "failed: \(f)"
        }
    }
}
