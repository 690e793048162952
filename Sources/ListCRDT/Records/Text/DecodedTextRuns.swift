import Foundation

/// Text run records of a decoded batch kept whole (issue 45): a run of n keystrokes (or
/// backspaces, or forward deletes) of one text field is one descriptor, ``DecodedBatch/SpliceRun``,
/// where it was n ``ListOperation``s, each with a `FieldWrites` array, a `TextEdit` and a
/// one-character `String`, built by the decoder and released once applied (four fifths of a
/// typed text's history load). ``ListDocument/apply(_:strict:)`` reads one in place
/// (``DecodedTextRun``) and applies it in one step (``ListDocument/applyDecodedTextRun(_:from:)``);
/// the general path builds the operations it takes one at a time, equal to the ones
/// ``ListOperation/decode(_:maxValueSize:maxOperations:)`` gives.
extension DecodedBatch {
    /// A text run record: operation `k` (of ``count``) has id `id + k`, depends on ``deps``
    /// (k = 0) or on operation `k - 1`, and writes field ``textNames``[``name``] of ``target``
    /// at clock ``clock`` `+ k` (or ``textClocks``[``clocks`` `+ k`]) one text edit:
    /// - typing: character `k` of the UTF-8 at ``text`` in ``bytes`` (byte `k` when ``ascii``,
    ///   else from ``textScalarStarts``[``scalars`` `+ k`]), after ``after`` (k = 0) or after
    ///   operation `k - 1`, before ``before``;
    /// - deleting: removes the character ``after`` `± k` (``descending``: minus).
    struct SpliceRun {
        var id: OpID
        var deps: RunDeps
        var target: RecordTarget
        var name: Int32
        var clock: UInt64
        /// -1: the clocks go up by one.
        var clocks: Int32
        var count: Int
        var typing: Bool
        var ascii: Bool
        var descending: Bool
        /// Typing: the left origin of operation 0. Deleting: the character operation 0 removes.
        var after: OpID
        var before: OpID
        var text: Range<Int>
        var scalars: Int

        /// The character operation `k` of a deleting run removes.
        @inline(__always) func removed(_ k: Int) -> OpID {
            OpID(counter: descending ? after.counter &- UInt64(k) : after.counter &+ UInt64(k), replica: after.replica)
        }
    }

    /// The clock of operation `k` of `run`.
    @inline(__always) func clock(_ run: SpliceRun, _ k: Int) -> UInt64 {
        run.clocks < 0 ? run.clock &+ UInt64(k) : textClocks[Int(run.clocks) + k]
    }

    /// Where character `k` of typing run `run` is in the input.
    @inline(__always) func characterRange(_ run: SpliceRun, _ k: Int) -> Range<Int> {
        if run.ascii { return run.text.lowerBound + k ..< run.text.lowerBound + k + 1 }
        let start = textScalarStarts[run.scalars + k]
        return start ..< (k + 1 < run.count ? textScalarStarts[run.scalars + k + 1] : run.text.upperBound)
    }

    /// Operation `k` of `run`, as ``ListOperation/decode(_:maxValueSize:maxOperations:)`` gives it
    /// (`bytes`: the input).
    func operation(of run: SpliceRun, _ k: Int, in bytes: [UInt8]) -> ListOperation {
        let id = run.id.advanced(by: k)
        let edit: TextEdit
        if run.typing {
            let insert = bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[characterRange(run, k)]), as: UTF8.self) }
            edit = TextEdit(after: k == 0 ? run.after : run.id.advanced(by: k - 1), before: run.before, insert: insert, insertedCount: 1)
        } else {
            edit = TextEdit(deletes: [TextRange(first: run.removed(k), count: 1)])
        }
        let writes = FieldWrites(clock: clock(run, k), sortedWrites: [FieldWrite(name: textNames[Int(run.name)], change: .text(edit))])
        return ListOperation(id: id, deps: k == 0 ? frontier(run.deps) : Frontier(only: run.id.advanced(by: k - 1)),
                             kind: .writeFields(run.target, writes))
    }

    /// Where the characters `from ..< from + count` of typing run `run` are in the input.
    @inline(__always) func characterBytes(_ run: SpliceRun, from: Int, count: Int) -> Range<Int> {
        characterRange(run, from).lowerBound ..< (from + count < run.count ? characterRange(run, from + count).lowerBound : run.text.upperBound)
    }

    /// Calls `body` with operations `from ..< from + count` of `run` (count ≥ 1) as splices
    /// that extend a text run of the log (``OpLog/extendTextRun(after:by:payloadBytes:_:)``), and
    /// the sum of their ``FieldWrites/footprint``s: 16, the name, 24, and what each types or 24
    /// for the one character each removes.
    ///
    /// - Complexity: O(b) for b bytes typed.
    func withSplices<R>(of run: SpliceRun, from: Int, count: Int, _ body: (OtherOperations.RunExtension, Int) -> R) -> R {
        let name = textNames[Int(run.name)]
        let typed = run.typing ? characterBytes(run, from: from, count: count) : 0 ..< 0
        return bytes.withUnsafeBufferPointer { all in
            textClocks.withUnsafeBufferPointer { clocks in
                let text = UnsafeBufferPointer(rebasing: all[typed])
                let splices = OtherOperations.RunExtension(
                    target: run.target, name: name,
                    typed: run.typing ? (run.before, text, run.ascii || text.allSatisfy { $0 < 0x80 }) : nil,
                    removed: (run.typing ? .none : run.removed(from), run.descending ? -1 : 1),
                    clock: clock(run, from),
                    clocks: run.clocks < 0 ? nil : UnsafeBufferPointer(rebasing: clocks[Int(run.clocks) + from ..< Int(run.clocks) + from + count]))
                return body(splices, count * (40 + name.utf8.count + (run.typing ? 0 : 24)) + typed.count)
            }
        }
    }

    /// Appends every operation of `run` to `out`.
    ///
    /// - Complexity: O(n) for n operations.
    func appendOperations(of run: SpliceRun, in bytes: [UInt8], to out: inout [ListOperation]) {
        for k in 0 ..< run.count { out.append(operation(of: run, k, in: bytes)) }
    }
}

extension BatchDecoder {
    /// Keeps a text run record read by ``textRun(id:deps:deleting:left:at:)``: as a descriptor
    /// in ``runs`` (``keepsRuns``), else as its operations, built from the descriptor (whose
    /// tables are then dropped again).
    mutating func keep(_ run: DecodedBatch.SpliceRun, tables: (clocks: Int, scalars: Int, names: Int, frontiers: Int)) {
        context.lastTextTarget = run.target.opID
        context.previousLast = run.id.advanced(by: run.count - 1)
        if case .section(let s) = run.target { context.lastSection = s }
        if keepsRuns {
            flushOperations()
            runs.parts.append(.textRun(runs.textRuns.count))
            runs.textRuns.append(run)
            count += run.count
            return
        }
        for k in 0 ..< run.count { ops.append(runs.operation(of: run, k, in: reader.bytes)) }
        count += run.count
        runs.textClocks.removeSubrange(tables.clocks...)
        runs.textScalarStarts.removeSubrange(tables.scalars...)
        runs.textNames.removeSubrange(tables.names...)
        runs.frontiers.removeSubrange(tables.frontiers...)
    }
}

/// Text run `r` of a decoded batch, read in place: its operations continue each other by
/// construction (``DecodedBatch/SpliceRun``).
struct DecodedTextRun: RunSource, MakesNoItems {
    /// The batch, valid while the source is (``ListDocument/apply(_:strict:)`` makes both).
    let view: DecodedBatch.View
    let run: DecodedBatch.SpliceRun

    init(_ view: DecodedBatch.View, _ r: Int) { (self.view, run) = (view, view.batch.pointee.textRuns[r]) }

    static var firstMayContinue: Bool { false }
    static var deletesConsecutiveItems: Bool { false }
    @inline(__always) var count: Int { run.count }
    func operation(_ k: Int) -> ListOperation { view.batch.pointee.operation(of: run, k, in: view.batch.pointee.bytes) }
    @inline(__always) func runKind(_ k: Int) -> RunKind { .fieldWrite }
    @inline(__always) func id(_ k: Int) -> OpID { run.id.advanced(by: k) }
    @inline(__always) func dependsOnlyOn(_ k: Int, _ id: OpID) -> Bool {
        k == 0 ? run.deps.isOnly(id) : id == self.id(k - 1)
    }
    func deletedItem(_ k: Int) -> OpID? { nil }
    func continuesDeletes(_ k: Int) -> Bool { false }
    func deleteStep(from k: Int) -> Int32 { 1 }
}

extension ListDocument {
    /// Applies operations `k ..< n` of a decoded text run (n ≥ k + 2) in one step: what
    /// ``applyTextRun(_:from:)`` does with the same operations built one by one, without building
    /// any but operation `k` (which passes the general path's checks; the later ones continue it
    /// by construction, ``DecodedBatch/SpliceRun``). The run stops before a deleting operation
    /// whose character is not the field's (the general path refuses it). Declines, changing
    /// nothing, where ``applyTextRun(_:from:)`` would.
    ///
    /// - Complexity: O(n + b + log N) for n operations typing b bytes into a text of N characters,
    ///   or O(n log r) for n deleting (r: the id runs of the removed characters' author), plus the
    ///   general path's checks of operation `k`.
    mutating func applyDecodedTextRun(_ source: DecodedTextRun, from k: Int) -> FastPath {
        let run = source.run
        guard k + 1 < run.count else { return .declined }
        let first = source.operation(k)
        guard first.runTextEdit != nil, let (target, alive) = textRunHead(first) else { return .declined }
        let batch = source.view.batch
        let name = batch.pointee.textNames[Int(run.name)]
        // Where the run stops: at its end, or (deleting) before a character the field lacks.
        var end = run.count
        var removed = (low: OpID.none, high: OpID.none)
        if !run.typing {
            guard let text = records[target.opID]?[name]?.text else { return .declined }
            for j in k ..< run.count {
                let gone = run.removed(j)
                guard text.lv(of: gone) != nil else { end = j; break }
                removed = j == k ? (gone, gone) : (Swift.min(removed.low, gone), Swift.max(removed.high, gone))
            }
            guard end >= k + 2 else { return .declined }
        }
        var stamp = FieldStamp(clock: batch.pointee.clock(run, k), id: first.id)
        if run.clocks < 0, batch.pointee.clock(run, k) <= batch.pointee.clock(run, end - 1) {
            // Going up by one (and not wrapping): the last operation's stamp is the greatest.
            stamp = Swift.max(stamp, FieldStamp(clock: batch.pointee.clock(run, end - 1), id: run.id.advanced(by: end - 1)))
        } else {
            for j in k + 1 ..< end { stamp = Swift.max(stamp, FieldStamp(clock: batch.pointee.clock(run, j), id: run.id.advanced(by: j))) }
        }
        let typedBytes = run.typing ? batch.pointee.characterBytes(run, from: k, count: end - k) : 0 ..< 0
        let edit = run.typing
            ? TextEdit(after: k == 0 ? run.after : run.id.advanced(by: k - 1), before: run.before,
                       insert: String(decoding: UnsafeBufferPointer(rebasing: source.view.bytes[typedBytes]), as: UTF8.self),
                       insertedCount: end - k)
            : TextEdit(deletes: [TextRange(first: removed.low, count: Int(removed.high.counter - removed.low.counter) + 1)])
        applyTextRunEdit(edit, first: first.id, stamp: stamp, name: name, to: target, alive: alive)
        // The version and frontier as each operation in turn leaves them; the log as each
        // operation appended in turn leaves it.
        advance(to: first.lastID, deps: first.deps)
        advance(to: run.id.advanced(by: end - 1), deps: Frontier(only: first.id))
        log.append(other: first)
        let rest = end - k - 1
        let extended = batch.pointee.withSplices(of: run, from: k + 1, count: rest) { splices, bytes in
            log.extendTextRun(after: first.id, by: rest, payloadBytes: bytes, splices)
        }
        if !extended {
            for j in k + 1 ..< end { log.append(other: source.operation(j)) }
        }
        return .applied(end - k)
    }
}
