import ListCRDT

extension LiveDocument {
    /// Compacts the document at `floor` (``ListCRDT/ListDocument/compact(stable:)``; a device's
    /// copy, where its daemon compacted: Docs/Semantics.md §7). What it shows does not change, so
    /// no change set is published; the undo history is kept: undo reads entities by id and
    /// brings a deleted item back from the value it remembers, so an entity compaction collected
    /// reads as deleted, which is what it was.
    ///
    /// - Throws: ``CompactionError`` if `floor` is not the document's version; nothing changes.
    /// - Complexity: that of ``ListCRDT/ListDocument/compact(stable:)``.
    @discardableResult
    public func compact(at floor: VersionVector) throws(CompactionError) -> CompactionReport {
        // In place: a refused compaction changes nothing, and a copy would duplicate the document.
        try state.withLock { (state) throws(CompactionError) -> CompactionReport in
            try state.document.compact(stable: floor)
        }
    }
}
