import Foundation

/// A batch (Docs/WireFormat.md §2) decoded and validated for loading into a document, in a compact
/// form: its insert runs and delete runs (record kinds 9 and 10) are kept as one descriptor each
/// (``InsertRun``, ``DeleteRun``) instead of one ``ListOperation`` per typed character or deleted
/// item, and the values of an insert run stay where they are in the input bytes. A single item
/// insert is kept as an insert run of one, and a single item delete that saw the item's insert
/// slot as a delete run of one. The other records are decoded to operations as
/// ``ListOperation/decode(_:maxValueSize:maxOperations:)`` does.
///
/// Decoding checks exactly what ``ListOperation/decode(_:maxValueSize:maxOperations:)`` checks and
/// throws exactly the same ``WireError`` for the same input (the same code reads both); expanding
/// every part with ``operations`` gives exactly the operations that function returns.
/// ``ListDocument/receive(encoded:maxOperations:)`` applies it (ListDocument+Load.swift).
struct DecodedBatch {
    /// A piece of the batch, in order.
    enum Part {
        /// Operations decoded one by one (every record but insert and delete runs).
        case operations([ListOperation])
        /// ``insertRuns``\[i\].
        case insertRun(Int)
        /// ``deleteRuns``\[i\].
        case deleteRun(Int)
        /// ``textRuns``\[i\] (`Records/Text/DecodedTextRuns.swift`).
        case textRun(Int)
        /// ``lazyFields``\[r\]: field writes checked and kept as bytes (only when decoded with
        /// `lazyFields`, `OperationScanning.swift`).
        case lazyFields(Range<Int>)
    }

    /// An insert run: `count` item inserts by one replica, typed left to right. Operation `k` has
    /// id `id + k`; it depends on `deps` (k = 0) or on operation `k - 1`; it goes in `section`,
    /// after `origins.after` (k = 0) or after operation `k - 1`'s slot, and before `origins.before`.
    struct InsertRun {
        var id: OpID
        var deps: RunDeps
        var section: SectionID
        var origins: ListOperation.Origins
        var count: Int
        /// Whether every value is one byte: then operation `k`'s value is `bytes[values + k]`;
        /// else it is `bytes[valueRanges[values + k]]`.
        var oneByte: Bool
        var values: Int
    }

    /// A delete run: `count` item deletes by one replica. Operation `k` has id `id + k`; it depends
    /// on `deps` (k = 0) or on operation `k - 1`; it deletes the item `firstItem + k` (or `- k`
    /// when `descending`), as seen at its insert slot.
    struct DeleteRun {
        var id: OpID
        var deps: RunDeps
        var firstItem: OpID
        var count: Int
        var descending: Bool

        /// The item operation `k` deletes.
        @inline(__always) func item(_ k: Int) -> OpID {
            OpID(counter: descending ? firstItem.counter &- UInt64(k) : firstItem.counter &+ UInt64(k),
                 replica: firstItem.replica)
        }
    }

    /// The dependencies of a run's first operation, held without a reference, so that the runs
    /// are plain values (copying one retains nothing): none or one id inline, more in
    /// ``DecodedBatch/frontiers``.
    struct RunDeps {
        /// The one dependency (``OpID/none`` for none) when `index` is -1.
        var only: OpID
        /// Else the index of the dependencies in ``DecodedBatch/frontiers``.
        var index: Int32

        /// Whether the dependencies are exactly `{id}` (``Frontier/isOnly(_:)``).
        @inline(__always) func isOnly(_ id: OpID) -> Bool { index < 0 && only == id }
    }

    /// The parts, in the order of the batch.
    var parts: [Part] = []
    var insertRuns: [InsertRun] = []
    var deleteRuns: [DeleteRun] = []
    /// The dependencies of runs that have more than one (``RunDeps/index``).
    var frontiers: [Frontier] = []
    /// Where the values of insert runs that are not one byte each are in ``bytes``.
    var valueRanges: [Range<Int>] = []
    /// Text run records (kind 14), kept as descriptors, and what they refer to: the clocks of
    /// runs whose clocks do not go up by one, where each character of a typing run that is not
    /// ASCII starts in ``bytes``, the fields' names.
    var textRuns: [SpliceRun] = []
    var textClocks: [UInt64] = []
    var textScalarStarts: [Int] = []
    var textNames: [String] = []
    /// Field writes kept as bytes (`OperationScanning.swift`), and what decoding them needs.
    var lazyFields: [LazyField] = []
    var lazyTables: LazyTables?
    /// The input.
    var bytes: [UInt8] = []
    /// Number of operations in the batch.
    var operationCount = 0

    /// Makes room for `n` parts, insert runs and delete runs (a guess from the batch's size, which
    /// bounds it: the decoder never reserves more than its input can hold).
    ///
    /// - Complexity: O(n).
    mutating func reserveCapacity(records n: Int) {
        parts.reserveCapacity(n)
        insertRuns.reserveCapacity(n)
        deleteRuns.reserveCapacity(n)
    }

    /// Decodes and validates a whole batch (nothing may follow it).
    ///
    /// - Throws: the ``WireError`` ``ListOperation/decode(_:maxValueSize:maxOperations:)`` throws.
    /// - Complexity: O(b + m) for b bytes and m operations outside insert and delete runs (a run
    ///   costs O(1), plus O(n) for a run of n values that are not one byte each).
    ///
    /// `lazyFields`: field writes without text are checked and kept as ``LazyField``s
    /// (`OperationScanning.swift`; a state snapshot's load).
    static func decode(_ bytes: some Collection<UInt8>, maxValueSize: Int,
                       maxOperations: Int, lazyFields: Bool = false) throws(WireError) -> DecodedBatch {
        var reader = WireReader(bytes)
        let batch = try decode(from: &reader, maxValueSize: maxValueSize, maxOperations: maxOperations, lazyFields: lazyFields)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        return batch
    }

    /// Decodes one batch from the reader's position; leaves the reader after it.
    static func decode(from reader: inout WireReader, maxValueSize: Int,
                       maxOperations: Int, lazyFields: Bool = false) throws(WireError) -> DecodedBatch {
        var d = BatchDecoder(reader: reader, maxValueSize: maxValueSize)
        d.keepsRuns = true
        d.lazyFields = lazyFields
        try d.decodeBatch(maxOperations: maxOperations)
        reader = d.reader
        d.flushOperations()
        var batch = d.runs
        if !batch.lazyFields.isEmpty { batch.lazyTables = LazyTables(version: d.version, replicas: d.replicas, names: d.fieldNames.names, maxValueSize: maxValueSize) }
        batch.bytes = reader.bytes
        batch.operationCount = d.count
        return batch
    }

    /// The 256 one-byte values (small `Data` values are stored inline: copying one is cheap).
    static let oneByteValues: [Data] = (0...255).map { Data([UInt8($0)]) }

    /// The batch and its value bytes as buffers, for the run fast paths
    /// (Document/FastPaths/RunSource.swift), valid inside ``withView(_:)``: a source holding
    /// them copies no array (a copy of the batch would retain each of its six).
    struct View {
        let batch: UnsafePointer<DecodedBatch>
        let bytes: UnsafeBufferPointer<UInt8>
        let valueRanges: UnsafeBufferPointer<Range<Int>>
        /// ``oneByteValues``.
        let table: UnsafePointer<Data>

        /// The values of the one-byte insert-run operations whose bytes are at `range` of the input.
        @inline(__always) func oneByteValues(_ range: Range<Int>) -> OneByteValues {
            precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "values out of the input")
            return OneByteValues(bytes: UnsafeBufferPointer(rebasing: bytes[range]), table: table)
        }

        /// The values of the insert-run operations (not one byte each) whose byte ranges are
        /// `valueRanges[range]`.
        @inline(__always) func rangeValues(_ range: Range<Int>) -> RangeValues {
            precondition(range.lowerBound >= 0 && range.upperBound <= valueRanges.count, "no such values")
            return RangeValues(bytes: bytes, ranges: UnsafeBufferPointer(rebasing: valueRanges[range]))
        }
    }

    /// Calls `body` with a ``View`` of this batch.
    func withView<R, E: Error>(_ body: (View) throws(E) -> R) throws(E) -> R {
        var result: Result<R, E>?
        withUnsafePointer(to: self) { batch in
            bytes.withUnsafeBufferPointer { bytes in
                valueRanges.withUnsafeBufferPointer { ranges in
                    Self.oneByteValues.withUnsafeBufferPointer { table in
                        let view = View(batch: batch, bytes: bytes, valueRanges: ranges, table: table.baseAddress!)
                        do throws(E) { result = .success(try body(view)) } catch { result = .failure(error) }
                    }
                }
            }
        }
        return try result!.get()
    }

    /// The values of one-byte insert-run operations: input bytes, each standing for its entry of
    /// ``oneByteValues``. A collection with a plain (inlinable) subscript: appending it to an
    /// array reserves room once and writes the elements through a pointer.
    struct OneByteValues: RandomAccessCollection {
        let bytes: UnsafeBufferPointer<UInt8>
        /// ``oneByteValues``.
        let table: UnsafePointer<Data>

        var startIndex: Int { 0 }
        var endIndex: Int { bytes.count }
        subscript(i: Int) -> Data { table[Int(bytes[i])] }
    }

    /// The values at byte ranges of the input (which the decoder checked), as
    /// ``OneByteValues`` are: each made from the bytes directly (a short value is stored inline).
    struct RangeValues: RandomAccessCollection {
        let bytes: UnsafeBufferPointer<UInt8>
        let ranges: UnsafeBufferPointer<Range<Int>>

        var startIndex: Int { 0 }
        var endIndex: Int { ranges.count }
        subscript(i: Int) -> Data { Data(buffer: UnsafeBufferPointer(rebasing: bytes[ranges[i]])) }
    }

    // MARK: Operations

    /// The dependencies `deps` stand for.
    @inline(__always) func frontier(_ deps: RunDeps) -> Frontier {
        if deps.index >= 0 { return frontiers[Int(deps.index)] }
        return deps.only == .none ? Frontier() : Frontier(only: deps.only)
    }

    /// Operation `k` of insert run `r`, as ``ListOperation/decode(_:maxValueSize:maxOperations:)``
    /// gives it.
    func operation(insertRun r: Int, _ k: Int) -> ListOperation {
        let run = insertRuns[r]
        let id = run.id.advanced(by: k)
        let value = run.oneByte ? Data(repeating: bytes[run.values + k], count: 1)
                                : Data(bytes[valueRanges[run.values + k]])
        if k == 0 {
            return ListOperation(id: id, deps: frontier(run.deps),
                                 kind: .insertItem(section: run.section, run.origins, value: value))
        }
        let previous = run.id.advanced(by: k - 1)
        return ListOperation(id: id, deps: Frontier(only: previous),
                             kind: .insertItem(section: run.section,
                                               .init(after: SlotID(previous), before: run.origins.before),
                                               value: value))
    }

    /// Operation `k` of delete run `r`, as ``ListOperation/decode(_:maxValueSize:maxOperations:)``
    /// gives it.
    func operation(deleteRun r: Int, _ k: Int) -> ListOperation {
        let run = deleteRuns[r]
        let item = run.item(k)
        return ListOperation(id: run.id.advanced(by: k),
                             deps: k == 0 ? frontier(run.deps) : Frontier(only: run.id.advanced(by: k - 1)),
                             kind: .deleteItem(ItemID(item), seen: SlotID(item)))
    }

    /// Every operation of the batch, in order: what
    /// ``ListOperation/decode(_:maxValueSize:maxOperations:)`` returns.
    ///
    /// - Complexity: O(n) for n operations.
    var operations: [ListOperation] {
        var out: [ListOperation] = []
        out.reserveCapacity(operationCount)
        for part in parts {
            switch part {
            case .operations(let ops): out += ops
            case .insertRun(let r): for k in 0..<insertRuns[r].count { out.append(operation(insertRun: r, k)) }
            case .deleteRun(let r): for k in 0..<deleteRuns[r].count { out.append(operation(deleteRun: r, k)) }
            case .textRun(let r): appendOperations(of: textRuns[r], in: bytes, to: &out)
            case .lazyFields(let r): for k in r { out.append(operation(lazy: k)) }
            }
        }
        return out
    }

    /// What decoding a ``LazyField`` needs: the input and its tables.
    ///
    /// - Complexity: O(1) (the arrays are shared, not copied).
    var lazySource: LazyOperations.Source? {
        lazyTables.map { LazyOperations.Source(bytes: bytes, version: $0.version, replicas: $0.replicas, names: $0.names,
                                                maxValueSize: $0.maxValueSize) }
    }

    /// ``lazyFields``\[k\] decoded, as the decoder would have given it.
    func operation(lazy k: Int) -> ListOperation {
        let f = lazyFields[k]
        return LazyOperations.decode(lazySource!, at: f.offset, previousLast: f.previousLast,
                                     lastSection: f.lastSection, lastClock: f.lastClock)
    }
}

// MARK: - Decoding runs as descriptors

extension BatchDecoder {
    /// Reads the values of an insert run of `n` operations (the fields before them are read; one
    /// operation for an item insert record) and keeps the run as a descriptor.
    mutating func keepInsertRun(id: OpID, deps: Frontier, section: SectionID, origins: ListOperation.Origins,
                                count n: Int, oneByte: Bool) throws(WireError) {
        let values: Int
        if oneByte {
            // `runCount` checked that the n bytes are there.
            values = reader.offset
            _ = try reader.raw(n)
        } else {
            values = runs.valueRanges.count
            runs.valueRanges.reserveCapacity(more: n)
            for _ in 0..<n { runs.valueRanges.append(try reader.dataRange(limit: maxValueSize)) }
        }
        flushOperations()
        runs.parts.append(.insertRun(runs.insertRuns.count))
        runs.insertRuns.append(.init(id: id, deps: keep(deps), section: section, origins: origins, count: n,
                                         oneByte: oneByte, values: values))
        // What `append` of each operation would leave.
        context.previousLast = id.advanced(by: n - 1)
        context.lastSection = section
        count += n
    }

    /// Keeps a delete run of `n` operations (validated; one for an item delete record that saw the
    /// item's own slot) as a descriptor.
    mutating func keepDeleteRun(id: OpID, deps: Frontier, firstItem: OpID, count n: Int, descending: Bool) {
        flushOperations()
        runs.parts.append(.deleteRun(runs.deleteRuns.count))
        runs.deleteRuns.append(.init(id: id, deps: keep(deps), firstItem: firstItem, count: n, descending: descending))
        context.previousLast = id.advanced(by: n - 1)
        count += n
    }

    /// A run's dependencies as the batch keeps them (more than one in ``DecodedBatch/frontiers``).
    mutating func keep(_ deps: Frontier) -> DecodedBatch.RunDeps {
        if deps.count <= 1 {
            var ids = deps.makeIterator()
            return .init(only: ids.next() ?? .none, index: -1)
        }
        runs.frontiers.append(deps)
        return .init(only: .none, index: Int32(runs.frontiers.count - 1))
    }

    /// Moves the operations decoded since the last run into a part of their own.
    mutating func flushOperations() {
        guard !ops.isEmpty else { return }
        runs.parts.append(.operations(ops))
        ops = []
    }
}
