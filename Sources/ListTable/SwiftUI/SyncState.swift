/// How a document stands with its sync peers, as a ``ListModel`` shows it: the hook where a
/// sync client reports, for a status line or an "offline" badge.
///
/// The model never sets it itself: ``ListModel/syncState`` stays ``unknown`` until whoever syncs
/// the document (the device client of the daemon, a `Replica`, an app's own transport) sets it,
/// on the main actor. The cases are the few every client can tell apart; the client that sets
/// them documents exactly when it does.
public enum SyncState: Hashable, Sendable {
    /// Nothing reports (the default): the model does not know whether the document is synced.
    case unknown
    /// No connection to a peer or a server: local edits are kept and sent later.
    case offline
    /// Connected, and operations are being sent or received.
    case syncing
    /// Connected, and nothing is waiting to be sent or received as far as the client knows.
    case upToDate
}
