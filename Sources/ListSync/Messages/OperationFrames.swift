import ListCRDT

/// Splitting operations into `operations` messages: the one place that decides how a batch
/// becomes frames (the daemon's forwards and catch-ups, clients' edits, peers' pushes).
public enum OperationFrames {
    /// The most operations in one frame.
    public static let maxOperations = 512

    /// `operations` messages for `ops` in order, each at most `maxFrame` bytes where one operation
    /// allows (a single operation over it is sent alone; the transport refuses it), each with the
    /// batch number `batch(i)` for the i-th frame (0: no acknowledgement asked).
    ///
    /// - Returns: the encoded frames and how many operations each carries.
    /// - Complexity: O(size · log(ops per frame)) in the worst case of halving.
    public static func split(_ document: DocumentID, _ ops: ArraySlice<ListOperation>, maxFrame: Int,
                             batch: (Int) -> UInt64 = { _ in 0 }) -> [(frame: [UInt8], count: Int)] {
        var frames: [(frame: [UInt8], count: Int)] = []
        var start = ops.startIndex
        while start < ops.endIndex {
            let next = first(document, ops[start...], maxFrame: maxFrame, batch: batch(frames.count))
            frames.append(next)
            start += next.count
        }
        return frames
    }

    /// The first frame of ``split(_:_:maxFrame:batch:)``: at most ``maxOperations`` of `ops` from
    /// the start, halved until the frame fits in `maxFrame` (or holds one operation).
    ///
    /// - Precondition: `ops` is not empty.
    /// - Complexity: O(size · log(ops per frame)) in the worst case of halving.
    public static func first(_ document: DocumentID, _ ops: ArraySlice<ListOperation>, maxFrame: Int,
                             batch: UInt64 = 0) -> (frame: [UInt8], count: Int) {
        precondition(!ops.isEmpty, "no operations to frame")
        let start = ops.startIndex
        var end = min(start + maxOperations, ops.endIndex)
        var frame = SyncMessage.operations(document: document, batch: batch, operations: Array(ops[start..<end])).encoded()
        while frame.count > maxFrame, end - start > 1 {
            end = start + (end - start) / 2
            frame = SyncMessage.operations(document: document, batch: batch, operations: Array(ops[start..<end])).encoded()
        }
        return (frame, end - start)
    }
}
