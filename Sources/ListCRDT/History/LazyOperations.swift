import Foundation

/// Field writes of a loaded state snapshot's history kept as their bytes (version 9 and later,
/// issue 43): the log's operations that write fields without text (``ListOperation/Kind/writeFields(_:_:)``,
/// an item or a section inserted with its fields) are not decoded into operations at the load.
/// Each is an ``Entry``: where its record starts in the batch ahead of the snapshot's log, and the
/// batch decoder's context there (the previous operation's last id, the last section named, the
/// last field clock), which with the batch's replica and field name tables is all that decoding
/// one record needs. The load checked every byte of them (`BatchDecoder.scanFieldWrites(_:)`
/// refuses what the decoder and ``ListDocument/problem(with:maxValueSize:namesChecked:)`` refuse,
/// building nothing), so a later decode cannot fail.
///
/// ``operation(_:)`` decodes one when the history is read (a peer's sync, an undo, a compaction,
/// an encoded snapshot or export); nothing is cached: the operation is what the eager load would
/// have kept, rebuilt each time it is asked for. The batch's bytes stay alive as long as the log
/// keeps one of them (``memoryParts``).
struct LazyOperations: Sendable {
    /// One operation kept as bytes: 64 bytes, where a decoded field write took about 130 bytes
    /// plus a heap block per write list, name and value.
    struct Entry: Sendable {
        /// The previous operation's last id in the batch (``CodingContext/previousLast``).
        var previousLast: OpID
        /// The last section the batch named before it (``OpID/none``: none).
        var lastSection: OpID
        /// The batch's last field clock before it.
        var lastClock: UInt64
        /// Where its record starts in ``Source/bytes``.
        var offset: Int32
        /// Its dependencies (the log's, not the batch's): -1 for none, -2 for exactly
        /// ``depsOnly``, else an index into ``LazyOperations/frontiers``.
        var depsIndex: Int32
        /// Its one dependency, when `depsIndex` is -2.
        var depsOnly: OpID
    }

    /// What decoding any of the operations needs besides its entry: the batch and its tables.
    struct Source: Sendable {
        var bytes: [UInt8]
        var version: UInt8
        var replicas: [ReplicaID]
        var names: [String]
        var maxValueSize: Int
    }

    let source: Source
    private(set) var entries: [Entry] = []
    private var frontiers: [Frontier] = []

    init(_ source: Source) { self.source = source }

    var count: Int { entries.count }

    /// Keeps one operation, checked already, whose record starts at `offset` with the decoder in
    /// `context` and `lastClock`, depending on `deps`.
    ///
    /// - Complexity: O(1) amortized (O(d) for d dependencies, when more than one).
    mutating func append(offset: Int, previousLast: OpID, lastSection: OpID, lastClock: UInt64, deps: Frontier) {
        precondition(entries.count < Int(Int32.max) && frontiers.count < Int(Int32.max) - 1, "the log is full")
        var index: Int32 = -1
        var only = OpID.none
        if deps.count == 1 {
            index = -2
            var ids = deps.makeIterator()
            only = ids.next()!
        } else if deps.count > 1 {
            index = Int32(frontiers.count)
            frontiers.append(deps)
        }
        entries.append(Entry(previousLast: previousLast, lastSection: lastSection, lastClock: lastClock,
                             offset: Int32(offset), depsIndex: index, depsOnly: only))
    }

    /// The dependencies of operation `i`.
    func deps(_ i: Int) -> Frontier {
        let e = entries[i]
        switch e.depsIndex {
        case -1: return Frontier()
        case -2: return Frontier(only: e.depsOnly)
        default: return frontiers[Int(e.depsIndex)]
        }
    }

    /// Operation `i`, decoded from the batch's bytes.
    ///
    /// - Complexity: O(b) for the b bytes of its record.
    func operation(_ i: Int) -> ListOperation {
        let e = entries[i]
        var op = Self.decode(source, at: Int(e.offset), previousLast: e.previousLast, lastSection: e.lastSection,
                             lastClock: e.lastClock)
        op.deps = deps(i)
        return op
    }

    /// The operation whose record starts at `offset` of `source`, the decoder's context there
    /// given; its dependencies the batch's. Its bytes were checked at the load.
    static func decode(_ source: Source, at offset: Int, previousLast: OpID, lastSection: OpID, lastClock: UInt64) -> ListOperation {
        var reader = WireReader(source.bytes)
        reader.rewind(to: offset)
        var d = BatchDecoder(reader: reader, maxValueSize: source.maxValueSize)
        d.version = source.version
        d.replicas = source.replicas
        d.fieldNames.names = source.names
        d.fieldNames.lastClock = lastClock
        d.context.previousLast = previousLast
        d.context.lastSection = lastSection == .none ? nil : SectionID(lastSection)
        do {
            try d.record(left: 1)
        } catch {
            preconditionFailure("a field write checked at the load does not decode: \(error)")
        }
        precondition(d.ops.count == 1, "a field write checked at the load is not one operation")
        return d.ops[0]
    }

    /// Heap bytes, for ``ListDocument/memoryBreakdown``: the entries, and the batch's bytes they
    /// keep alive.
    var memoryParts: [MemoryPart] {
        [memoryPart("log.lazyEntries", entries), memoryPart("log.lazyFrontiers", frontiers),
         memoryPart("log.lazyBytes", source.bytes, extra: source.names.reduce(0) { $0 + $1.utf8.count })]
    }
}
