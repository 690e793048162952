/// Where a block of rows (or sections) goes, remembered by identity: an offset in the rows as the
/// user saw them, kept as the neighbours there, so that the block lands between the same
/// neighbours in the document as it is when the edit is applied.
///
/// The offset has the meaning of `Array.move(fromOffsets:toOffset:)`'s destination: it counts
/// the rows shown *before* the move, moving rows included; the block goes right before the row at
/// that offset. The rules when the document changed meanwhile are those of ``DragSession``'s
/// placeholder (`Docs/DragSessions.md`): at the top if it was at the top; otherwise right below the
/// row that was above it; if that row is gone, at the bottom if it was at the bottom, else right
/// above the row that was below it; if both are gone, at the same position (counted in the rows
/// that stay), clamped.
struct InsertionPoint<ID: Hashable>: Hashable {
    /// The last row before the offset that does not move, or nil at the top.
    var above: ID?
    /// The first row at or after the offset that does not move, or nil at the bottom.
    var below: ID?
    /// The offset counted in the rows that do not move.
    var position: Int

    /// The insertion point at `offset` (`0...shown.count`) of `shown`, for a block made of
    /// `moving` (which may hold identities that are not in `shown`, from other sections).
    ///
    /// - Complexity: O(k) for k rows shown.
    init(offset: Int, in shown: [ID], moving: Set<ID>) {
        precondition(offset >= 0 && offset <= shown.count, "offset \(offset) not in 0...\(shown.count)")
        above = shown[..<offset].last { !moving.contains($0) }
        below = shown[offset...].first { !moving.contains($0) }
        position = shown[..<offset].reduce(0) { $0 + (moving.contains($1) ? 0 : 1) }
        assert(above == nil || position > 0, "a row above means a position after it")
    }

    /// The position of the block in `staying`, the rows that do not move as they are now:
    /// `0...staying.count`.
    ///
    /// - Complexity: O(k) for k rows.
    func position(in staying: [ID]) -> Int {
        let result: Int
        if let above {
            if let i = staying.firstIndex(of: above) {
                result = i + 1
            } else if let below {
                result = staying.firstIndex(of: below) ?? min(position, staying.count)
            } else {
                result = staying.count
            }
        } else {
            result = 0
        }
        assert(result >= 0 && result <= staying.count)
        return result
    }
}
