import ListCRDT

/// Which version of one document is causally stable at the replica that keeps this tracker (a
/// daemon's copy), from what the replicas that can still send operations have acknowledged
/// (Docs/Semantics.md §7). No I/O: the daemon feeds it acknowledgements and asks.
///
/// The stable version is the pointwise minimum of the versions the senders acknowledged, once
/// this replica holds every operation each sender had made when it acknowledged (so that every
/// operation still to arrive from a sender was made after it had seen the stable version). A
/// sender that is *retired* (declared gone) no longer holds it back; the daemon must then refuse
/// its operations until it re-syncs from a snapshot (its operations made before the floor are
/// refused by the engine in any case).
///
/// ``DocumentStability`` keeps one per document for ``DocumentCore``, which feeds it what devices
/// report (``SyncMessage/seen(document:replica:version:role:)``) and compacts when
/// ``quiescentVersion(holding:)`` answers.
public struct StabilityTracker: Sendable, Equatable {
    /// What each sender acknowledged (the greatest of its acknowledgements, pointwise).
    public private(set) var acknowledged: [ReplicaID: VersionVector] = [:]
    /// Senders declared gone: they no longer count.
    public private(set) var retired: Set<ReplicaID> = []

    public init() {}

    /// A tracker with these acknowledgements and retired senders (as read back from disk).
    public init(acknowledged: [ReplicaID: VersionVector], retired: Set<ReplicaID>) {
        precondition(Set(acknowledged.keys).isDisjoint(with: retired), "a sender both acknowledged and retired")
        self.acknowledged = acknowledged
        self.retired = retired
    }

    /// Counts `replica` as a sender that can still send (having acknowledged nothing yet, it holds
    /// the stable version at nothing until it acknowledges). A retired replica stays retired.
    public mutating func addSender(_ replica: ReplicaID) {
        guard !retired.contains(replica), acknowledged[replica] == nil else { return }
        acknowledged[replica] = VersionVector()
    }

    /// Records that `replica` has seen every operation of `version`, and holds exactly that: its
    /// latest report replaces the one before, even where it is lower. A replica's reports come in
    /// order (one connection at a time), and what it holds goes down only in a re-sync, which
    /// drops operations no copy will hold as they are: its own edits refused for the floor (a
    /// report from before that re-sync counted them), and others' edits that a daemon left out
    /// of a peer's floor acknowledged and made again in a merge back (Docs/Semantics.md §7, "A
    /// copy left out of a peer's floor": a device that took them there and re-synced elsewhere;
    /// kept, the counters of those originals would hold this daemon's stable version back for
    /// ever, since its copy never holds them). Lower is never less safe: it only holds the
    /// stable version back until the replica reports again. Adds the replica as a sender if it
    /// was not one.
    ///
    /// - Complexity: O(r) for r replicas in `version`.
    public mutating func acknowledge(_ replica: ReplicaID, version: VersionVector) {
        guard !retired.contains(replica) else { return }
        acknowledged[replica] = version
    }

    /// Lowers every sender's acknowledgement to at most `version`, counter by counter: the
    /// document was replaced by one that lacks operations they reported (a merge back,
    /// Docs/Semantics.md §7, "A copy left out of a peer's floor"), which no replica will hold
    /// again. Lower is never less safe: it only holds the stable version back until each
    /// reports again.
    ///
    /// - Complexity: O(s × r log r) for s senders and r replicas.
    public mutating func lower(to version: VersionVector) {
        for (replica, ack) in acknowledged {
            var lowered = ack
            for e in ack.entries where e.counter > version[e.replica] { lowered[e.replica] = version[e.replica] }
            acknowledged[replica] = lowered
        }
    }

    /// Stops counting `replica`, which acknowledged nothing, as a sender here: another daemon
    /// counts it (Docs/Semantics.md §7, "Peers"). Returns whether it was one.
    public mutating func forget(_ replica: ReplicaID) -> Bool {
        guard let ack = acknowledged[replica], ack == VersionVector() else { return false }
        acknowledged[replica] = nil
        return true
    }

    /// Declares `replica` gone: it no longer holds the stable version back.
    public mutating func retire(_ replica: ReplicaID) {
        acknowledged[replica] = nil
        retired.insert(replica)
    }

    /// Counts a retired `replica` as a sender again, having seen `version`: it came back and has
    /// caught up past every compaction made without it (the caller checks that), so what it
    /// sends from now on is after them. A replica that is not retired is acknowledged as usual.
    public mutating func reinstate(_ replica: ReplicaID, version: VersionVector) {
        retired.remove(replica)
        acknowledge(replica, version: version)
        assert(!retired.contains(replica) && acknowledged[replica] != nil)
    }

    /// The stable version at a replica that holds `local`, or nil while there is none: no sender,
    /// or `local` lacks an operation a sender had made when it acknowledged (it may still be in
    /// flight, and operations made before it may not be causally after the minimum).
    ///
    /// - Complexity: O(s × r log r) for s senders and r replicas in the vectors.
    public func stableVersion(holding local: VersionVector) -> VersionVector? {
        guard !acknowledged.isEmpty else { return nil }
        var replicas = Set<ReplicaID>()
        for (sender, ack) in acknowledged {
            guard local[sender] >= ack[sender] else { return nil }
            for e in ack.entries { replicas.insert(e.replica) }
        }
        var minimum: [ReplicaID: UInt64] = [:]
        for r in replicas {
            let c = acknowledged.values.map { $0[r] }.min() ?? 0
            if c > 0 { minimum[r] = c }
        }
        return VersionVector(minimum)
    }

    /// The version at which a replica holding `local` may compact now
    /// (``ListDocument/compact(stable:)``): the stable version, when it is all of `local`.
    public func quiescentVersion(holding local: VersionVector) -> VersionVector? {
        guard let stable = stableVersion(holding: local), stable.includes(local), local.includes(stable) else { return nil }
        return stable
    }
}
