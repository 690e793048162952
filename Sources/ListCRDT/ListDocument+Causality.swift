/// Causality queries on the applied history: who had seen what, and which write wins a position.
extension ListDocument {
    /// Whether the author of the applied operation `later` had seen the applied operation
    /// `earlier` when it made `later` (`earlier` is in the causal past of `later`).
    ///
    /// Either id may be any id inside an operation's range (a multi-item move uses several ids).
    /// An operation counts as having seen itself. Returns false when either operation is not
    /// applied here (unknown, or still waiting in the causal buffer).
    ///
    /// The walk follows `later`'s dependencies backwards through the log. It prunes by Lamport
    /// counter (an operation whose counter is at most `earlier`'s, other than `earlier` itself,
    /// cannot have `earlier` in its past) and stops as soon as it reaches an operation of
    /// `earlier`'s replica made after it (a replica's own operations form a causal chain: each
    /// local operation depends on the one before).
    ///
    /// - Complexity: O(k log m) for the k operations between the two in causal history (those
    ///   with a counter above `earlier`'s that `later` had seen), m operations in the log; O(log m)
    ///   when the two were made by the same replica.
    public func hasSeen(_ earlier: OpID, at later: OpID) -> Bool {
        guard let first = log.operation(containing: earlier),
              let last = log.operation(containing: later) else { return false }
        let target = first.id
        if last.id == target { return true }
        if last.id.counter <= first.lastID.counter { return false }
        if last.id.replica == target.replica { return true }
        var stack = Array(last.deps)
        var visited = Set<OpID>()
        while let dep = stack.popLast() {
            guard let op = log.operation(containing: dep) else { continue }
            if op.id == target { return true }
            if op.id.counter <= target.counter { continue }
            if op.id.replica == target.replica { return true }
            guard visited.insert(op.id).inserted else { continue }
            stack.append(contentsOf: op.deps)
        }
        return false
    }

    /// The id of the operation whose position write currently wins for `item`: its insert, or the
    /// move with the greatest id applied here. Nil if the item is unknown.
    ///
    /// The item may be deleted; the write still names where it was last placed.
    public func winningPositionWrite(of item: ItemID) -> OpID? {
        itemEntity(item).map { items.winnerID[Int($0)] }
    }

    /// The id of the operation whose position write currently wins for `section`: its insert, or
    /// the section move with the greatest id applied here. Nil if the section is unknown.
    public func winningPositionWrite(of section: SectionID) -> OpID? {
        sectionEntity(section).map { sections.winnerID[Int($0)] }
    }
}
