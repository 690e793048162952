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

    /// ``isReadyForRemake(synced:acknowledged:of:)`` for `local`'s replica, but for the edits of
    /// it a daemon acknowledged that were made before this document's floor (or on such an edit)
    /// and that it lacks: no copy compacted there ever takes them, so they are not waited for.
    /// Only a daemon left out of a peer's floor took such edits, and it made them again on the
    /// peer's copy (Docs/Semantics.md §7, "A copy left out of a peer's floor"): the edits are in
    /// this document, or come to it, under other ids; the copy drops the originals. Nor are those
    /// that `parted` names (originals a daemon parted in a merge back and made again under its
    /// own ids, as the device learned them: ``PartedRanges``), or that were made on one of them,
    /// whether this document has a floor or not (Docs/Semantics.md §7, "A device learns what was
    /// parted"): no copy takes them as they are any more, their edits were made again.
    ///
    /// - Complexity: O(r + k × d) for r records of `local`'s log and k operations of d
    ///   dependencies that this document lacks (only when an acknowledged edit is missing).
    public func isReadyForRemake(synced: VersionVector, acknowledged: VersionVector, local: ListDocument,
                                 parted: PartedRanges = PartedRanges()) -> Bool {
        let replica = local.replica
        guard version.includes(synced) else { return false }
        guard version[replica] < acknowledged[replica] else { return true }
        guard historyFloor != nil || !parted.isEmpty, local.hasHistory(since: version) else { return false }
        // Missing and acknowledged, after the floor and not parted: it comes (relayed by a peer).
        let (after, _) = splitAtFloor(local.operations(since: version))
        let (_, waited) = parted.split(after)
        return !waited.contains { $0.id.replica == replica && acknowledged.contains($0.lastID) }
    }
}
