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

extension LiveDocument {
    /// Drops the waiting operations that `isParted` names or that wait on one it names that the
    /// document does not hold (``ListCRDT/ListDocument/dropWaiting(onParted:)``: a device told
    /// what the daemons parted, Docs/Semantics.md §7, "A device drops what waits on parted
    /// originals"), in place, and returns them. Waiting operations show nothing, so nothing is
    /// published; the undo history is kept.
    ///
    /// - Complexity: that of ``ListCRDT/ListDocument/dropWaiting(onParted:)``.
    @discardableResult
    public func dropWaiting(onParted isParted: (OpID) -> Bool) -> [ListOperation] {
        state.withLock { state in state.document.dropWaiting(onParted: isParted) }
    }
}
