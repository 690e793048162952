import ListCRDT

// Telling devices where the document was compacted (Docs/Protocol.md, "Compaction"): a device that
// keeps a copy (`SyncClient`) would otherwise hold the whole history for ever, the daemon's
// compactions notwithstanding.

extension DocumentCore {
    /// The `stable` messages to send after the document was compacted (``compact(at:)``): its
    /// floor, to every subscriber that said `seen` with ``SeenRole/compactingDevice`` and has
    /// seen exactly it (every subscriber had, or the document would not have compacted; one that
    /// has seen more since keeps the floor for the next compaction). None if never compacted.
    ///
    /// - Complexity: O(n + r) for n subscribers and r replicas in the floor.
    public func floorAnnouncements() -> [Action] {
        guard let floor = document.historyFloor, destroyedReason == nil else { return [] }
        let frame = SyncMessage.stable(document: id, version: floor).encoded()
        return subscribers.filter { $0.value.role == .compactingDevice && $0.value.seen == floor }
            .keys.sorted().map { .send($0, frame) }
    }
}
