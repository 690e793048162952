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
    /// A typed run (consecutive operations of one replica, each depending on the one before, one
    /// log record) is crossed in one step rather than one operation at a time.
    ///
    /// - Complexity: O(k log m) for the k operations between the two in causal history (those
    ///   with a counter above `earlier`'s that `later` had seen; a typed run counts once), m
    ///   records in the log; O(log m) when the two were made by the same replica.
    /// After compaction (``compact(stable:)``): an operation applied after the floor had seen every
    /// operation of the floor; between two operations of the floor the answer is false (their
    /// history is gone).
    public func hasSeen(_ earlier: OpID, at later: OpID) -> Bool {
        if let floor = compaction, floor.version.contains(earlier) {
            return versionVector.contains(later) && !floor.version.contains(later)
        }
        guard let first = log.locate(earlier), let last = log.locate(later) else { return false }
        let target = log.id(record: first.record, operation: first.operation)
        let targetLast = log.lastID(record: first.record, operation: first.operation)
        let start = log.id(record: last.record, operation: last.operation)
        if start == target { return true }
        if start.counter <= targetLast.counter { return false }
        if start.replica == target.replica { return true }
        var stack: [OpID] = []
        var visited = Set<OpID>()
        /// Pushes what operation `k` of record `r` (not of `target`'s replica, counter above
        /// `target`'s) depends on, through the run before it: operations 0..<k of a run form a
        /// chain of that replica, so the walk either reaches operation 0's dependencies or is
        /// pruned by counter on the way.
        func expand(_ r: Int, _ k: Int) {
            let head = log.id(record: r, operation: 0)
            if k > 0 && head.counter <= target.counter { return }
            guard visited.insert(head).inserted else { return }
            stack.append(contentsOf: log.deps(record: r, operation: 0))
        }
        expand(last.record, last.operation)
        while let dep = stack.popLast() {
            guard let at = log.locate(dep) else { continue }
            let id = log.id(record: at.record, operation: at.operation)
            if id == target { return true }
            if id.counter <= target.counter { continue }
            if id.replica == target.replica { return true }
            expand(at.record, at.operation)
        }
        return false
    }

    /// The id of the operation whose position write currently wins for `item`: its insert, or the
    /// move with the greatest id applied here. Nil if the item is unknown.
    ///
    /// The item may be deleted; the write still names where it was last placed.
    public func winningPositionWrite(of item: ItemID) -> OpID? {
        itemEntity(item).map { items.winnerID($0) }
    }

    /// The id of the operation whose position write currently wins for `section`: its insert, or
    /// the section move with the greatest id applied here. Nil if the section is unknown.
    public func winningPositionWrite(of section: SectionID) -> OpID? {
        sectionEntity(section).map { sections.winnerID($0) }
    }
}
