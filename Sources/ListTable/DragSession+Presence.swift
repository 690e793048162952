import ListCRDT

extension DragSession {
    /// This drag as presence, for the other replicas to show (Docs/DragSessions.md, "Presence"):
    /// the lifted items and the placeholder's place by identity (its section and the rows right
    /// above and below it); ``PresenceActivity/idle`` when no drag is live (publish that too: it
    /// ends the drag on the other devices).
    ///
    /// Publish it after every event (`begin`, `update`, `documentDidChange`, the drop or the
    /// cancel) through a coalescing sender (`PresenceOutbox` in `ListSync`).
    ///
    /// - Complexity: O(k) for k lifted items.
    public var presenceActivity: PresenceActivity {
        guard isDragging else { return .idle }
        assert(!liftedItems.isEmpty && placeholder.after.map { !liftedItems.contains($0) } ?? true,
               "the placeholder is anchored to a row that is not lifted")
        return .dragging(items: liftedItems, to: PresencePlace(section: placeholder.section, after: placeholder.after,
                                                             before: placeholder.before))
    }
}
