import Foundation

/// Text blocks in a batch (wire format 7, Docs/WireFormat.md §2.10): the one-character splices of
/// one text field by one replica, each the next id of its author and depending on exactly the one
/// before, written as one record (kind 15) of several text runs, where wire format 6 wrote a record
/// per run (kind 14: a header, the target, the name, the clock, the count, two origins and the
/// text's length, about 13 bytes a run besides its characters) and a lone splice as a field write
/// (about 15 bytes).
///
/// Record: header (kind 15, for the first operation), flags (varint: 1 the target is a section, 2
/// the clocks do not go up by one), the target (a reference; code 0: the previous text run's or
/// block's), the field's name (§2.7), the first clock (difference from the batch's last field
/// clock), the number of runs, then per run:
///
/// - `control`: varint `(n − 1) << 3 | wide << 2 | descending << 1 | deleting` for a run of `n`
///   operations (typing, or deleting with `deleting`; `descending` a deleting run that goes down the
///   ids; `wide` a typing run whose text is not n bytes of ASCII);
/// - with flag 2, a `signed` clock difference for each operation but the block's first, from the
///   operation before (else each operation's clock is the one before + 1);
/// - typing: with `wide` the text's length in bytes, then `after` and `before` (block references,
///   below), then the text: n bytes of ASCII, or the given length of UTF-8 holding exactly n
///   scalars; deleting: `first`, a block reference (not none).
///
/// A block reference is a varint `v`: 0 none; odd, a character of the block's replica whose counter
/// is a base plus the zigzag difference `v >> 1`; even, `2 + 4i` (`4 + 4i`) and a varint `d`,
/// replica `i` of the table at counter `C − 1 − d` (`C + d`) for the run's first counter `C`. The
/// base is the *cursor* for `after` and `first` (the first operation's counter − 1 at the block's
/// start, then the last character the previous run typed, or removed when it was the block's
/// replica's), and `after`'s counter for `before` when `after` is the block's replica's. Typing
/// resumes right after the characters just removed or typed, and a text typed in one go has
/// consecutive ids, so these differences are mostly a byte.
enum TextBlockCode {
    /// Block flags.
    static let sectionTarget: UInt64 = 1
    static let irregularClocks: UInt64 = 2
    /// Run control bits.
    static let deleting: UInt64 = 1
    static let descending: UInt64 = 2
    static let wide: UInt64 = 4
    static let controlBits: UInt64 = 3
    /// A block ends once it holds this many operations (a run may be cut there): the windowed
    /// history encoder (`HistoryEncoding.swift`) holds a block's operations at once.
    static let maxOperations = 4096
}

extension ListOperation {
    /// Whether `next` continues a text block of field `name` of `target` after `op`: the next id
    /// of `op`'s author, depending on exactly `op`, a run-shaped splice (one scalar typed, or one
    /// character removed) of the same field.
    @inline(__always)
    static func continuesTextBlock(_ op: ListOperation, _ next: ListOperation, target: RecordTarget, name: String) -> Bool {
        next.id.replica == op.id.replica && next.id.counter == op.id.counter &+ 1 && next.deps.isOnly(op.id)
            && next.runSplice(of: target, name: name) != nil
    }

    /// Whether `ops` hold a text block (two consecutive operations that ``encode(_:)`` writes as one
    /// record, kind 15), so that their batch is wire format 7. Every batch that wire format 6 wrote
    /// with a text run holds one.
    ///
    /// - Complexity: O(n) for n operations.
    public static func needsWireFormat7<C: Collection>(_ ops: C) -> Bool where C.Element == ListOperation {
        anySpliceContinued(ops) { continuesTextBlock($0, $1, target: $2.target, name: $2.writes.writes[0].name) }   // TextRunCoding.swift
    }
}

extension BatchEncoder {
    /// When `ops[i]` is run shaped: the number of operations of the text block from it, written as
    /// one record when 2 or more (1: nothing written, the operation is written as usual); 0 (and
    /// nothing written) when the block reaches the last operation, short of
    /// ``TextBlockCode/maxOperations``, and `final` is false. Nil when `ops[i]` is not run shaped.
    mutating func textBlock(at i: Int, final: Bool) -> Int? {
        let op = ops[i]
        guard let head = op.runTextEdit else { return nil }
        let name = head.writes.writes[0].name
        var n = 1
        while n < TextBlockCode.maxOperations, i + n < ops.count,
              ListOperation.continuesTextBlock(ops[i + n - 1], ops[i + n], target: head.target, name: name) { n += 1 }
        guard final || n == TextBlockCode.maxOperations || i + n < ops.count else { return 0 }
        guard n >= 2 else { return 1 }
        version = max(version, ListOperation.textBlockWireFormatVersion)
        let (clocks, regular) = fieldClocks(i ..< i + n)   // TextRunCoding.swift
        // The runs, as wire format 6 found them.
        var runs: [(start: Int, count: Int, step: Int64?)] = []
        var k = i
        while k < i + n {
            let h = ops[k].runTextEdit!
            var m = 1
            var step: Int64?
            while k + m < i + n, ListOperation.continuesTextRun(ops[k + m - 1], ops[k + m], head: h, step: &step) { m += 1 }
            runs.append((k, m, step))
            k += m
        }
        var flags: UInt64 = 0
        if case .section = head.target { flags |= TextBlockCode.sectionTarget }
        if !regular { flags |= TextBlockCode.irregularClocks }
        header(op, .textBlock)
        out.varint(flags)
        ref(head.target.opID, op, default: context.lastTextTarget)
        fieldName(name)
        out.signed(Int64(bitPattern: clocks[0] &- fieldNames.lastClock))
        out.count(runs.count)
        let replica = op.id.replica
        var cursor = op.id.counter &- 1
        var text: [UInt8] = []
        for run in runs {
            let first = ops[run.start]
            guard let e = first.runSplice(of: head.target, name: name) else { continue }
            let typing = e.deletes.isEmpty
            var control = UInt64(run.count - 1) << TextBlockCode.controlBits
            text.removeAll(keepingCapacity: true)
            if typing {
                for j in run.start ..< run.start + run.count {
                    if let s = ops[j].runSplice(of: head.target, name: name) { text.append(contentsOf: s.insert.utf8) }
                }
                if text.count != run.count { control |= TextBlockCode.wide }
            } else {
                control |= TextBlockCode.deleting
                if run.step == -1 { control |= TextBlockCode.descending }
            }
            out.varint(control)
            if !regular {
                for j in max(run.start, i + 1) ..< run.start + run.count {
                    out.signed(Int64(bitPattern: clocks[j - i] &- clocks[j - i - 1]))
                }
            }
            if typing {
                if text.count != run.count { out.count(text.count) }
                blockRef(e.after, base: cursor, first)
                blockRef(e.before, base: e.after != .none && e.after.replica == replica ? e.after.counter : cursor, first)
                out.bytes.append(contentsOf: text)
                cursor = first.id.counter &+ UInt64(run.count - 1)
            } else {
                let removed = e.deletes[0].first
                blockRef(removed, base: cursor, first)
                if removed.replica == replica {
                    let span = UInt64(run.count - 1)
                    cursor = run.step == -1 ? removed.counter &- span : removed.counter &+ span
                }
            }
        }
        fieldNames.lastClock = clocks[n - 1]
        context.lastTextTarget = head.target.opID
        for k in i ..< i + n { context.advance(past: ops[k]) }
        return n
    }

    /// A block reference (``TextBlockCode``): 0 for none; a character of `op`'s replica as its
    /// counter's zigzag difference from `base`, shifted left once and odd; another replica's (or one
    /// too far from `base`) as `2 + 4i` (`4 + 4i`) and its distance below (from) `op`'s counter.
    mutating func blockRef(_ id: OpID, base: UInt64, _ op: ListOperation) {
        guard id != .none else { out.varint(0); return }
        let d = Int64(bitPattern: id.counter &- base)
        if id.replica == op.id.replica, d.magnitude < 1 << 61 {
            let z = UInt64(bitPattern: (d << 1) ^ (d >> 63))
            out.varint(z << 1 | 1)
            return
        }
        let index = UInt64(replicaIndex.index(of: id.replica)!)
        if id.counter < op.id.counter {
            out.varint(2 + 4 * index)
            out.varint(op.id.counter - 1 - id.counter)
        } else {
            out.varint(4 + 4 * index)
            out.varint(id.counter - op.id.counter)
        }
    }
}

extension BatchDecoder {
    /// A text block record (kind 15, version 7) from after its header: each of its runs kept as a
    /// text run descriptor (``keep(_:tables:)``, `DecodedTextRuns.swift`), as wire format 6's
    /// text run records are.
    mutating func textBlock(id: OpID, deps: Frontier, left: Int, at: Int) throws(WireError) {
        let flagsAt = reader.offset
        let flags = try reader.varint()
        guard flags < 4 else { throw .invalidValue("text block flags \(flags)", offset: flagsAt) }
        let target = try ref(id, default: context.lastTextTarget)
        let recordTarget: RecordTarget = flags & TextBlockCode.sectionTarget != 0 ? .section(SectionID(target)) : .item(ItemID(target))
        let name = try fieldName()
        let irregular = flags & TextBlockCode.irregularClocks != 0
        var clock = fieldNames.lastClock &+ UInt64(bitPattern: try reader.signed())
        let runsAt = reader.offset
        let m = try reader.count(minBytes: 2)   // a run takes a control and a reference at least
        guard m >= 1 else { throw .invalidValue("a text block of no runs", offset: runsAt) }
        let replica = id.replica
        var cursor = id.counter &- 1
        var runID = id
        var runDeps = deps
        var total = 0
        for r in 0 ..< m {
            let controlAt = reader.offset
            let control = try reader.varint()
            let deleting = control & TextBlockCode.deleting != 0
            let descending = control & TextBlockCode.descending != 0
            let wide = control & TextBlockCode.wide != 0
            let more = control >> TextBlockCode.controlBits
            guard more < UInt64(left - total) else { throw .countTooLarge(Int(clamping: more), offset: controlAt) }
            guard deleting ? !wide : !descending else { throw .invalidValue("text block run control \(control)", offset: controlAt) }
            let n = Int(more) + 1
            guard runID.counter <= OpID.maxCounter, more <= OpID.maxCounter - runID.counter else {
                throw .invalidValue("a run passes the largest counter", offset: controlAt)
            }
            let tables = (clocks: runs.textClocks.count, scalars: runs.textScalarStarts.count, names: runs.textNames.count,
                          frontiers: runs.frontiers.count)
            if runs.textNames.last != name { runs.textNames.append(name) }
            var run = DecodedBatch.SpliceRun(id: runID, deps: keep(runDeps), target: recordTarget,
                                             name: Int32(runs.textNames.count - 1), clock: clock, clocks: -1,
                                             count: n, typing: !deleting, ascii: true, descending: descending,
                                             after: .none, before: .none, text: 0 ..< 0, scalars: 0)
            if irregular {
                if r > 0 { clock = clock &+ UInt64(bitPattern: try reader.signed()) }
                run.clock = clock
                run.clocks = Int32(runs.textClocks.count)
                runs.textClocks.reserveCapacity(more: n)
                runs.textClocks.append(clock)
                for _ in 1 ..< n {
                    clock = clock &+ UInt64(bitPattern: try reader.signed())
                    runs.textClocks.append(clock)
                }
            } else {
                if r > 0 { clock = clock &+ 1 }
                run.clock = clock
                clock = clock &+ UInt64(n - 1)
            }
            if !deleting {
                var length = n
                if wide {
                    let lengthAt = reader.offset
                    length = try reader.count(minBytes: 1)
                    guard (length + 3) / 4 <= n, length >= n else {
                        throw .invalidValue("a text run of \(n) characters in \(length) bytes", offset: lengthAt)
                    }
                }
                run.after = try blockRef(runID, base: cursor)
                run.before = try blockRef(runID, base: run.after != .none && run.after.replica == replica ? run.after.counter : cursor)
                let textAt = reader.offset
                if wide {
                    run.text = try reader.utf8Range(length)
                    try characters(of: &run, count: n, at: textAt)
                } else {
                    _ = try reader.raw(n)
                    run.text = textAt ..< textAt + n
                    guard reader.bytes[run.text].allSatisfy({ $0 < 0x80 }) else {
                        throw .invalidValue("a text run of \(n) operations whose text is not \(n) characters", offset: textAt)
                    }
                    guard maxValueSize >= 1 else { throw .invalidValue("a character over the value size", offset: textAt) }
                }
                cursor = runID.counter &+ UInt64(n - 1)
            } else {
                let firstAt = reader.offset
                let first = try blockRef(runID, base: cursor)
                try Self.checkRemoved(first, count: n, descending: descending, at: firstAt)   // TextRunCoding.swift
                run.after = first
                let span = UInt64(n - 1)
                if first.replica == replica { cursor = descending ? first.counter &- span : first.counter &+ span }
            }
            keep(run, tables: tables)
            total += n
            let last = runID.advanced(by: n - 1)
            runID = last.advanced(by: 1)
            runDeps = Frontier(only: last)
        }
        guard total >= 2 else { throw .invalidValue("a text block of \(total) operations", offset: runsAt) }
        fieldNames.lastClock = clock
    }

    /// A block reference (``BatchEncoder/blockRef(_:base:_:)``) of the run whose first operation is `op`.
    private mutating func blockRef(_ op: OpID, base: UInt64) throws(WireError) -> OpID {
        let at = reader.offset
        let v = try reader.varint()
        if v == 0 { return .none }
        if v & 1 == 1 {
            let z = v >> 1
            let d = Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
            let (c, overflow) = Int64(bitPattern: base).addingReportingOverflow(d)
            guard !overflow, c >= 1, UInt64(c) <= OpID.maxCounter else {
                throw .invalidValue("referenced counter out of range", offset: at)
            }
            return OpID(counter: UInt64(c), replica: op.replica)
        }
        let code = v / 2 - 1
        let replica = try replicaAt(code >> 1)
        let deltaAt = reader.offset
        let delta = try reader.varint()
        if code & 1 == 1 {
            guard delta <= OpID.maxCounter - op.counter else { throw .invalidValue("referenced counter over \(OpID.maxCounter)", offset: deltaAt) }
            return OpID(counter: op.counter + delta, replica: replica)
        }
        guard delta < op.counter - 1 else { throw .invalidValue("referenced counter below 1", offset: deltaAt) }
        return OpID(counter: op.counter - 1 - delta, replica: replica)
    }
}

extension WireReader {
    /// The next `n` bytes, valid UTF-8, as where they are in the input (not copied).
    mutating func utf8Range(_ n: Int) throws(WireError) -> Range<Int> {
        let at = offset
        _ = try raw(n)
        let range = at ..< at + n
        let valid = bytes.withUnsafeBufferPointer { all -> Bool in
            let part = UnsafeBufferPointer(rebasing: all[range])
            var s = String(decoding: part, as: UTF8.self)
            return s.utf8.count == n && (n == 0 || s.withUTF8 { memcmp($0.baseAddress!, part.baseAddress!, n) == 0 })
        }
        guard valid else { throw .invalidValue("a string that is not UTF-8", offset: at) }
        return range
    }
}
