import Foundation

/// Encoding the applied history straight from the log: the bytes of
/// `ListOperation.encode(operations(since: version))` (the batch format, Docs/WireFormat.md §2),
/// written a window of operations at a time instead of from the whole `[ListOperation]` (about
/// 136 bytes an operation: 35 MB for a history of 260,000, most of its cost the fresh memory).
extension ListDocument {
    /// Operations rebuilt from the log per window of the encoder (the window's array is reused).
    static let encodingWindow = 4096

    /// Every applied operation, encoded as one batch: `ListOperation.encode(operations)`, byte for
    /// byte, made from the log without materialising the whole history.
    ///
    /// - Complexity: O(m + v) for m operations and v value bytes; memory beyond the bytes returned:
    ///   a window of a few thousand operations (more while one run of operations spans windows).
    public func encodedHistory() -> [UInt8] { encodedOperations(since: VersionVector()) }

    /// The operations `version` has not seen, encoded as one batch:
    /// `ListOperation.encode(operations(since: version))`, byte for byte, made from the log a
    /// window of operations at a time.
    ///
    /// - Complexity: O(r + k + v) for the r records of the log, the k operations encoded and their
    ///   v value bytes; the replica table's pass stops once every replica of ``version`` is in it.
    public func encodedOperations(since version: VersionVector) -> [UInt8] {
        var out = WireWriter()
        appendEncodedOperations(since: version, to: &out)
        return out.bytes
    }

    /// Appends ``encodedOperations(since:)`` to `writer`, rebuilding `window` operations at a time.
    func appendEncodedOperations(since seen: VersionVector, to writer: inout WireWriter, window size: Int = encodingWindow) {
        let end = log.count
        let total = countOperations(since: seen, before: end)
        var window: [ListOperation] = []
        window.reserveCapacity(size)
        // The replica table, in the order the operations refer to replicas: every id an operation
        // refers to is of an applied operation, so once the table holds every replica of the
        // document's version, the operations left cannot add to it.
        var replicas = ReplicaCollector()
        let known = version.count
        var at = 0
        while at < end, replicas.table.count < known {
            window.removeAll(keepingCapacity: true)
            at = appendOperations(since: seen, from: at, before: end, limit: size, into: &window)
            for op in window {
                replicas.note(op)
                if replicas.table.count == known { break }
            }
        }
        window.removeAll(keepingCapacity: true)
        var encoder = BatchEncoder(window)
        window = []
        swap(&encoder.out, &writer)
        encoder.start(replicas, count: total)
        at = 0
        var written = 0
        repeat {
            let before = encoder.ops.count
            at = appendOperations(since: seen, from: at, before: end, limit: size, into: &encoder.ops)
            written += encoder.ops.count - before
            encoder.records(final: at == end)
        } while at < end
        assert(encoder.ops.isEmpty && written == total, "\(written) operations encoded, \(total) counted")
        _ = encoder.finish()
        swap(&encoder.out, &writer)
    }
}
