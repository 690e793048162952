import ListCRDT

/// What a device decides about its copy of a document, as pure functions of what it holds: the
/// device client (`SyncClient`), the command line's kept copy (`DaemonClient`) and the simulator's
/// clients all call these, so that what the simulator checks is what a device does
/// (Docs/Semantics.md §7; Docs/Simulation.md, "One policy").
public enum DeviceCopyPolicy {
    /// Whether a copy compacts at `floor`, the daemon's floor told by `stable` (Docs/Semantics.md
    /// §7, "A device learns the floor"): it holds all of that version (the daemon holds all of
    /// it, durably, so whatever of the device's own is in it and not yet acknowledged is
    /// acknowledged by the floor; what the copy holds beyond it stays in its log, its unsent
    /// edits included, and the engine refuses the floor, changing nothing, unless every such
    /// operation is after it: ``ListCRDT/ListDocument/compact(stable:)``), its history does not
    /// already start at or past it, the floor is not the empty version (a daemon that never
    /// compacted), and it is not re-syncing (its history is what its unsent edits are made again
    /// from).
    ///
    /// - Complexity: O(r) for r replicas in the versions.
    public static func compactsAtFloor(_ floor: VersionVector, version: VersionVector, historyFloor: VersionVector?,
                                       resyncing: Bool) -> Bool {
        !resyncing && floor != VersionVector() && version.includes(floor) && !(historyFloor?.includes(floor) ?? false)
    }

    /// What receiving `operations` from the daemon acknowledges: the daemon holds each of them
    /// whole, up to its last id (an operation may span several ids: a typed run of text), so
    /// that none of them is ever sent back.
    ///
    /// - Complexity: O(k) for k operations.
    public static func acknowledgedByReceipt(_ operations: [ListOperation]) -> VersionVector {
        var seen = VersionVector()
        for op in operations { seen.observe(op.lastID) }
        return seen
    }

    /// What the acknowledgement of an edit acknowledges: `version`, the daemon's (it holds all of
    /// it), and then the device's own operations that the edit carried (`sent`), oldest first, as
    /// long as every earlier one of the device's is acknowledged too. A daemon acknowledges a batch
    /// once all of it is durable, applied or kept waiting for its causes (Docs/Semantics.md §7,
    /// "Waiting operations"), but its version counts only what it applied: an edit made on
    /// operations it lacks (the device took them at another daemon) is held there and not
    /// counted. Counted here, the device never makes it again in a re-sync (the daemon that holds
    /// it merges it back if it must; made by both, it would show twice). Only a prefix of the
    /// device's unacknowledged operations is counted, since a version counts every counter of a
    /// replica up to its greatest: an earlier edit lost on the way (a client that sends ahead)
    /// stops the count, so that it is sent again.
    ///
    /// - Complexity: O(r + k) for r log records and the k operations after `acknowledged`.
    public static func acknowledgedByEdit(_ sent: [ListOperation], version: VersionVector,
                                          acknowledged: VersionVector, local: ListDocument) -> VersionVector {
        var held = acknowledged
        held.formUnion(version)
        let own = local.replica
        // The operations themselves, not their ids: a re-sync since may have made others under them.
        let carried = Set(sent.lazy.filter { $0.id.replica == own })
        guard !carried.isEmpty, local.hasHistory(since: held) else { return held }
        for op in local.operations(since: held) where op.id.replica == own {
            guard carried.contains(op) else { break }
            held.observe(op.lastID)
        }
        return held
    }

    /// What a refusal of an edit in part acknowledges when it says what the daemon took
    /// (``TakenInPart``, Docs/Semantics.md §7, "A batch refused in part"): as an acknowledgement
    /// does (``acknowledgedByEdit(_:version:acknowledged:local:)``), with the daemon's version
    /// and the device's own operations the edit carried that the daemon did not refuse, oldest
    /// first, stopping at the first it refused. The daemon holds those durably (applied, or kept
    /// waiting for their causes), and makes them again itself if it must merge back: made again
    /// by the device too, they would exist twice.
    ///
    /// - Complexity: O(r + k) for r log records and the k operations after `acknowledged`.
    public static func acknowledgedByRefusal(_ sent: [ListOperation], taken: TakenInPart,
                                             acknowledged: VersionVector, local: ListDocument) -> VersionVector {
        acknowledgedByEdit(sent.filter { !taken.refuses($0) }, version: taken.version, acknowledged: acknowledged,
                           local: local)
    }

    /// The version a copy subscribes from: its own, or nothing while it re-syncs (the catch-up
    /// is then the daemon's whole copy, a snapshot behind a floor).
    public static func subscribeVersion(_ version: VersionVector, resyncing: Bool) -> VersionVector {
        resyncing ? VersionVector() : version
    }

    /// What a caught-up copy sends: every operation the daemon has not acknowledged, in the
    /// order it applied them (an edit never reaches the daemon ahead of one it depends on).
    /// Nil when the copy's history no longer goes back to `acknowledged` (it compacted past
    /// what the daemon acknowledged, which ``compactsAtFloor(_:version:historyFloor:resyncing:)``
    /// never lets happen).
    ///
    /// - Complexity: O(r + k) for r log records and the k operations returned.
    public static func toSend(_ document: ListDocument, acknowledged: VersionVector) -> [ListOperation]? {
        guard document.hasHistory(since: acknowledged) else { return nil }
        return document.operations(since: acknowledged)
    }

    /// The edits a re-syncing copy makes again on `base`, the daemon's copy
    /// (``ListCRDT/ListDocument/remake(_:from:refused:)``): those of the device (`local`'s
    /// replica) after what a daemon acknowledged, or after the copy's floor (a daemon held it
    /// when it compacted there), that `base` lacks. What it holds of others' came from a daemon
    /// and comes to `base` too.
    ///
    /// - Complexity: O(r + k) for r log records and k operations after `acknowledged`.
    public static func unsent(_ local: ListDocument, acknowledged: VersionVector, base: ListDocument) -> [ListOperation] {
        var since = acknowledged
        if let floor = local.historyFloor { since.formUnion(floor) }
        guard local.hasHistory(since: since) else { return [] }
        return local.operations(since: since).filter { $0.id.replica == local.replica && !base.version.contains($0.lastID) }
    }
}
