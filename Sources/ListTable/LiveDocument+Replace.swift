import ListCRDT

extension LiveDocument {
    /// Replaces the document with `document` (a re-sync from the daemon's snapshot, after this
    /// replica was left behind a compaction: Docs/Semantics.md §7): subscribers get the change
    /// set from what was shown to what `document` shows; the undo history and the remembered
    /// local moves are dropped (they name the old copy's operations).
    ///
    /// - Complexity: O(n) for n visible sections and items (the diff), plus the snapshot.
    @discardableResult
    public func replace(with document: ListDocument) -> ChangeSet {
        state.withLock { state in
            state.document = document
            state.localItemMoves = [:]
            state.localSectionMoves = [:]
            state.undo = ListUndoManager(limit: state.undo.limit)
            return Self.publish(&state, lostMoves: [])
        }
    }
}
