/// Undoing a closure's edits without a copy made beforehand (for ``LiveDocument``-style
/// all-or-nothing edits: keeping a copy to fall back on costs O(n) per edit, since the edit then
/// copies the document's storage; rebuilding costs O(n log n), but only when an edit fails halfway).
extension ListDocument {
    /// The document as it was when its log held `count` operations: the first `count` operations
    /// of the log replayed into a new document with the same replica, limits and diagnostics, and
    /// the operations waiting for their dependencies received again.
    ///
    /// Meant for undoing the local edits made since `count` (a closure that edited, then threw).
    /// Remote operations applied since (received meanwhile, or released from the causal buffer by
    /// a local edit) are left out too: a peer's sync resupplies them, since the version no longer
    /// counts them. With `count == operationCount` it returns the document unchanged.
    ///
    /// - Precondition: `0 <= count <= operationCount`.
    /// - Complexity: O(n log n) for the n operations replayed; O(1) when nothing is undone.
    public func rolledBack(toOperationCount count: Int) -> ListDocument {
        precondition(count >= 0 && count <= operationCount, "log position \(count) out of 0...\(operationCount)")
        guard count < operationCount else { return self }
        var fresh = ListDocument(replica: replica, maxValueSize: maxValueSize)
        fresh.variant = variant
        fresh.pendingLimits = pendingLimits
        fresh.wallClock = wallClock
        fresh.records.reportsConflicts = false   // replayed history, not news
        _ = fresh.receive(Array(operations(fromValid: 0).prefix(count)))
        _ = fresh.receive(pendingOperations)
        fresh.records.reportsConflicts = records.reportsConflicts
        fresh.records.conflicts = records.conflicts
        fresh.rejected = rejected
        fresh.dropped = dropped
        fresh.refusedBeforeFloor = refusedBeforeFloor
        return fresh
    }
}
