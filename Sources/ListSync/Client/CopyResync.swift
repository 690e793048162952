import ListCRDT

/// A device copy's re-sync (Docs/Semantics.md §7, "A device left behind"): after the daemon
/// refused its edits for the compaction floor, or sent a snapshot for its catch-up, the copy
/// builds the daemon's copy (the snapshot, or its catch-up from nothing), and once that holds
/// all `synced` said and every edit of the device a daemon acknowledged, it becomes the copy
/// with the device's unsent edits made again on it. A pure state machine: SyncClient's copies
/// and the simulator's clients both keep one, and their drivers do only the I/O (the store's
/// replacement, the sends).
public struct CopyResync: Sendable {
    /// The daemon's copy being built; nil while not re-syncing.
    public private(set) var base: ListDocument?
    /// What `synced` said the catch-up holds (nil: not said yet).
    public private(set) var synced: VersionVector?
    /// Re-syncing after the daemon refused edits (not only left behind its floor): none of them
    /// is kept as it is (``ListCRDT/ListDocument/remake(_:from:refused:)``).
    public private(set) var afterRefusal = false

    /// Not re-syncing.
    public init() {}

    /// Whether the copy re-syncs: it subscribes from nothing
    /// (``DeviceCopyPolicy/subscribeVersion(_:resyncing:)``) and holds back its sends.
    public var isActive: Bool { base != nil }

    /// The copy re-syncs from nothing. `afterRefusal`: the daemon refused edits of `replica` for
    /// its floor, finally (every daemon that owed an answer refused: ``UnansweredSends``), and
    /// its unsent edits are made again whatever happens. Otherwise (a copy that shows parted
    /// originals re-syncs to drop them: Docs/Semantics.md §7, "A device that shows parted
    /// originals") no daemon refused them: those after the floor are kept as they are, and a
    /// re-sync that would make some again is a refusal only as a snapshot catch-up is
    /// (``DeviceClientMachine``, `caughtUp`).
    public mutating func begin(replica: ReplicaID, afterRefusal: Bool) {
        base = ListDocument(replica: replica)
        synced = nil
        self.afterRefusal = afterRefusal
    }

    /// The catch-up is a snapshot (its parts joined): it is the daemon's copy.
    ///
    /// - Throws: ``ListCRDT/WireError`` for a snapshot that does not load; nothing changes then.
    /// - Complexity: that of loading the snapshot.
    public mutating func snapshot(_ bytes: [UInt8], replica: ReplicaID) throws(WireError) {
        base = try ListDocument(snapshot: bytes, replica: replica)
        synced = nil
    }

    /// Operations of the catch-up while re-syncing: they build the daemon's copy. Returns false
    /// (nothing taken) when not re-syncing: they are the copy's.
    public mutating func receive(_ operations: [ListOperation]) -> Bool {
        guard base != nil else { return false }
        _ = base!.receive(operations)
        return true
    }

    /// `synced` came: the catch-up holds `version`.
    public mutating func synced(_ version: VersionVector) {
        if base != nil { synced = version }
    }

    /// What a re-sync that is ready makes: the new copy, the edits made again on it, and what
    /// the daemon holds of it (acknowledged).
    public struct Outcome: Sendable {
        public var document: ListDocument
        public var made: [ListOperation]
        public var held: VersionVector
        /// The device's edits the daemon lacked (``DeviceCopyPolicy/unsent(_:acknowledged:base:)``).
        public var unsent: [ListOperation]
    }

    /// The re-sync of `local` if it is ready (the daemon's copy holds all `synced` said and every
    /// edit of `local`'s replica in `acknowledged` that it can still take, not waiting for those
    /// `parted` names:
    /// ``ListCRDT/ListDocument/isReadyForRemake(synced:acknowledged:local:parted:)``),
    /// else nil. Changes nothing: the driver stores the outcome, then calls ``finish()``.
    /// `prepare` adjusts the daemon's copy before the edits are made again on it.
    ///
    /// An unsent edit of the device's own that `parted` names is not made again: a daemon took
    /// it (its acknowledgement lost with a connection the merge back cut) and parted it, and the
    /// daemon that took it from the device made it again; made again here too, it would exist
    /// twice (Docs/Semantics.md §7, "An edit its author made again"). `remakesParted`: a
    /// deliberately broken client, for the simulator's power tests, makes them again.
    ///
    /// - Complexity: that of ``ListCRDT/ListDocument/remake(_:from:refused:)``.
    public func outcome(local: ListDocument, acknowledged: VersionVector, parted: PartedRanges = PartedRanges(),
                        remakesParted: Bool = false, prepare: (inout ListDocument) -> Void = { _ in }) -> Outcome? {
        guard var base, let synced,
              base.isReadyForRemake(synced: synced, acknowledged: acknowledged, local: local, parted: parted) else { return nil }
        prepare(&base)
        var unsent = DeviceCopyPolicy.unsent(local, acknowledged: acknowledged, base: base)
        if !remakesParted, !parted.isEmpty { unsent.removeAll { parted.contains($0.id) } }
        let held = base.version
        let made = base.remake(unsent, from: local, refused: afterRefusal)
        return Outcome(document: base, made: made, held: held, unsent: unsent)
    }

    /// The outcome is the copy now: no longer re-syncing.
    public mutating func finish() { self = CopyResync() }
}
