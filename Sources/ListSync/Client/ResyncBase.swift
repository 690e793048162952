import ListCRDT

extension ListDocument {
    /// Whether this document, the daemon's copy a re-syncing device builds from its catch-up (a
    /// snapshot, or operations from nothing), is ready for the device's unsent edits to be made
    /// again on it (``ListDocument/remake(_:from:)``): it holds all that `synced` said, and every
    /// operation of `replica` (the device) that some daemon acknowledged (`acknowledged`). One
    /// acknowledged by another daemon may reach this one later, relayed; made again on a copy
    /// without it, whatever depends on it would be dropped (Docs/Semantics.md §7, "Roaming").
    /// `SyncClient` and the simulator's clients both ask it.
    ///
    /// - Complexity: O(r) for the r replicas of `synced`.
    public func isReadyForRemake(synced: VersionVector, acknowledged: VersionVector, of replica: ReplicaID) -> Bool {
        version.includes(synced) && version[replica] >= acknowledged[replica]
    }
}
