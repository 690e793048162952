/// When a device acts on a refusal of its edits for the compaction floor (``SyncErrorCode/compacted``):
/// only once every batch it has in flight is answered. A later batch may still be taken (it holds
/// the refused edits too, or brings causes an earlier one lacked); if the later ones took every
/// edit of the device, there is nothing to re-sync for. SyncClient's copies and the simulator's
/// clients both keep one.
public struct RefusalWait: Sendable, Equatable {
    /// A refusal waits for the answers of the batches after it.
    public private(set) var isWaiting = false

    /// Nothing waits.
    public init() {}

    /// A batch was refused for the floor, with `inFlight` other batches still unanswered: true
    /// to act on it now (none); false, it waits for their answers (``answered(inFlight:unacknowledged:)``).
    public mutating func refused(inFlight: Int) -> Bool {
        isWaiting = inFlight > 0
        return !isWaiting
    }

    /// A batch was answered, `inFlight` still unanswered: true when a refusal that waited is to
    /// be acted on now: every batch is answered and edits of the device are still
    /// unacknowledged (`unacknowledged`; otherwise the later batches took them all).
    public mutating func answered(inFlight: Int, unacknowledged: Bool) -> Bool {
        guard isWaiting, inFlight == 0 else { return false }
        isWaiting = false
        return unacknowledged
    }

    /// The connection ended: its batches are never answered, and the refusal that waited is
    /// dropped (the next connection sends the edits again, and hears again).
    public mutating func reset() { isWaiting = false }
}
