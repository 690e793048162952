import ListCRDT

// The peers' side of compaction at a stable prefix while busy (Docs/Semantics.md §7, "Peers while
// busy"): which daemon proposes, what it may propose, and whether another daemon refused it. What
// each daemon reports is in its entry (``PeerStability/Entry/offer``, ``PeerStability/Entry/refused``,
// and its ``PeerStability/Entry/version``, the prefix it took); ``DocumentCore`` decides.

extension PeerStability {
    /// The daemon that proposes the next stable prefix: the least daemon of the table, when every
    /// entry reports an offer (``Entry/offer``). Nil otherwise (a daemon of an older build in the
    /// table, a placeholder, or stable prefixes off somewhere): then nobody proposes, and the
    /// document keeps the quiescent rule.
    ///
    /// - Complexity: O(e) for e entries.
    public var prefixLeader: ReplicaID? {
        guard !entries.isEmpty, entries.values.allSatisfy({ $0.offer != nil }) else { return nil }
        return entries.keys.min()
    }

    /// The meet (pointwise minimum) of every entry's offer: no daemon vouches for more, so the
    /// leader proposes no more. Nil when there is no leader (``prefixLeader``).
    ///
    /// - Complexity: O(e × r log r) for e entries of r replicas.
    public var offersMeet: VersionVector? {
        guard prefixLeader != nil else { return nil }
        var meet: VersionVector?
        for e in entries.values { meet = meet.map { $0.meet(e.offer!) } ?? e.offer! }
        return meet
    }

    /// Whether a daemon other than `leader` can never take `proposal` as its version: it refused
    /// it (``Entry/refused``), or it vouches already for a version `proposal` does not include
    /// (versions only grow).
    ///
    /// - Complexity: O(e × r) for e entries of r replicas.
    public func isRefused(_ proposal: VersionVector, leader: ReplicaID) -> Bool {
        entries.contains { $0.key != leader && ($0.value.refused == proposal || !proposal.includes($0.value.version)) }
    }

    /// Whether every daemon's entry is at `version`.
    ///
    /// - Complexity: O(e × r) for e entries of r replicas.
    public func agree(on version: VersionVector) -> Bool {
        entries.values.allSatisfy { $0.version == version }
    }
}
