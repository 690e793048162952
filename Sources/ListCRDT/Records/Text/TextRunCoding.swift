import Foundation

/// Text runs in a batch (wire format 6, Docs/WireFormat.md §2.9): two or more consecutive
/// one-character splices of one text field by one replica, each the next id of its author and
/// depending on exactly the one before, written as one record (kind 14) as a typed run of items
/// is (kind 9), where each splice took a record of its own (about 18 bytes a keystroke).
///
/// A typing run: each splice types one Unicode scalar, the first after `after`, each later one
/// right after the character the one before typed, all before `before`. A deleting run (the
/// variant flag): each splice removes one character, the first `first`, each later one the next
/// or the previous id (deleting forward, or backspacing over text typed in one run).
///
/// Record: header (kind 14), flags (varint: 1 the target is a section, 2 the clocks do not go up
/// by one, 4 a deleting run goes down the ids), the target (a reference; code 0: the previous
/// text run's), the field's name (as field writes name it, §2.7), the first clock (difference
/// from the batch's last field clock), the count (at least 2), with flag 2 the count − 1 clock
/// differences, then for typing the two origins (references, code 0: none) and the text
/// (length-prefixed UTF-8 of exactly count scalars), for deleting the first removed character
/// (a reference).
enum TextRunCode {
    static let sectionTarget: UInt64 = 1
    static let irregularClocks: UInt64 = 2
    static let descending: UInt64 = 4
}

extension ListOperation {
    /// The one text edit of an operation that writes one text field and nothing else, run shaped
    /// (one scalar typed, or one character removed): what a text run holds.
    var runTextEdit: (target: RecordTarget, writes: FieldWrites, edit: TextEdit)? {
        guard case .writeFields(let target, let writes) = kind, writes.writes.count == 1,
              case .text(let e) = writes.writes[0].change, writes.writes[0].replaces == .none,
              writes.writes[0].seen.isEmpty, OtherOperations.isRunShaped(e) else { return nil }
        return (target, writes, e)
    }

    /// ``runTextEdit``'s edit when the operation writes field `name` of `target`, read in place:
    /// the tuple ``runTextEdit`` builds was copied through generic value witnesses, a fifth of a
    /// received text run's cost.
    @inline(__always)
    func runSplice(of target: RecordTarget, name: String) -> TextEdit? {
        guard case .writeFields(let t, let writes) = kind, t == target, writes.writes.count == 1 else { return nil }
        return writes.writes.withUnsafeBufferPointer { ws -> TextEdit? in
            guard ws[0].replaces == .none, ws[0].seen.isEmpty, ws[0].name == name, case .text(let e) = ws[0].change,
                  OtherOperations.isRunShaped(e) else { return nil }
            return e
        }
    }

    /// Whether `ops` hold a text run (two consecutive operations that ``encode(_:)`` writes as one
    /// record), so that their batch is wire format 6.
    ///
    /// - Complexity: O(n) for n operations.
    public static func needsWireFormat6<C: Collection>(_ ops: C) -> Bool where C.Element == ListOperation {
        anySpliceContinued(ops) { p, op, head in
            var step: Int64?
            return continuesTextRun(p, op, head: head, step: &step)
        }
    }

    /// Whether some operation of `ops` is run shaped (``runTextEdit``, `head`) and the one after it
    /// `continues` it.
    ///
    /// - Complexity: O(n) for n operations.
    static func anySpliceContinued<C: Collection>(
        _ ops: C, _ continues: (ListOperation, ListOperation, (target: RecordTarget, writes: FieldWrites, edit: TextEdit)) -> Bool
    ) -> Bool where C.Element == ListOperation {
        var previous: ListOperation?
        for op in ops {
            if let p = previous, let head = p.runTextEdit, continues(p, op, head) { return true }
            previous = op
        }
        return false
    }

    /// Whether `next` continues a text run whose first operation's edit is `head` and whose
    /// operation before `next` is `op`: the next id of `op`'s author, depending on exactly `op`,
    /// a run-shaped edit of the same field; typing: one scalar right after `op`'s, before the
    /// same character; deleting: the character after or before the one `op` removed, in the
    /// run's direction `step` (nil: either, not set yet). Sets `step` when it was nil.
    static func continuesTextRun(_ op: ListOperation, _ next: ListOperation,
                                 head: (target: RecordTarget, writes: FieldWrites, edit: TextEdit), step: inout Int64?) -> Bool {
        guard next.id.replica == op.id.replica, next.id.counter == op.id.counter &+ 1, next.deps.isOnly(op.id),
              let e = next.runSplice(of: head.target, name: head.writes.writes[0].name)
        else { return false }
        if head.edit.deletes.isEmpty {
            return e.deletes.isEmpty && e.after == op.id && e.before == head.edit.before
        }
        guard e.insert.isEmpty, let p = op.runSplice(of: head.target, name: head.writes.writes[0].name),
              !p.deletes.isEmpty else { return false }
        let a = p.deletes[0].first, b = e.deletes[0].first
        guard a.replica == b.replica else { return false }
        let s: Int64 = b.counter == a.counter &+ 1 ? 1 : b.counter == a.counter &- 1 ? -1 : 0
        guard s != 0, step == nil || step == s else { return false }
        step = s
        return true
    }
}

extension BatchEncoder {
    /// Version 6, as builds before wire format 7 wrote typed text (``ListOperation/encodeWithTextRuns(_:)``,
    /// for tests; ``textBlock(at:final:)`` writes version 7). When `ops[i]` is run shaped: the number of operations of the text run from it, written as
    /// one record when 2 or more (1: nothing written, the operation is written as usual); 0 (and
    /// nothing written) when the run reaches the last operation and `final` is false. Nil when
    /// `ops[i]` is not run shaped.
    mutating func textRun(at i: Int, final: Bool) -> Int? {
        let op = ops[i]
        guard let head = op.runTextEdit else { return nil }
        var n = 1
        var step: Int64?
        while i + n < ops.count, ListOperation.continuesTextRun(ops[i + n - 1], ops[i + n], head: head, step: &step) {
            n += 1
        }
        guard final || i + n < ops.count else { return 0 }
        guard n >= 2 else { return 1 }
        version = max(version, ListOperation.textRunWireFormatVersion)
        let typing = head.edit.deletes.isEmpty
        let (clocks, regular) = fieldClocks(i ..< i + n)
        var flags: UInt64 = 0
        if case .section = head.target { flags |= TextRunCode.sectionTarget }
        if !regular { flags |= TextRunCode.irregularClocks }
        if step == -1 { flags |= TextRunCode.descending }
        header(op, .textRun, variant: !typing)
        out.varint(flags)
        ref(head.target.opID, op, default: context.lastTextTarget)
        fieldName(head.writes.writes[0].name)
        out.signed(Int64(bitPattern: clocks[0] &- fieldNames.lastClock))
        out.count(n)
        if !regular {
            for k in 1 ..< n { out.signed(Int64(bitPattern: clocks[k] &- clocks[k - 1])) }
        }
        fieldNames.lastClock = clocks[n - 1]
        if typing {
            ref(head.edit.after, op, default: OpID.none)
            ref(head.edit.before, op, default: OpID.none)
            var text: [UInt8] = []
            for k in i ..< i + n {
                if case .writeFields(_, let w) = ops[k].kind, case .text(let e) = w.writes[0].change { text.append(contentsOf: e.insert.utf8) }
            }
            out.count(text.count)
            out.bytes.append(contentsOf: text)
        } else {
            ref(head.edit.deletes[0].first, op, default: nil)
        }
        context.lastTextTarget = head.target.opID
        for k in i ..< i + n { context.advance(past: ops[k]) }
        return n
    }
}

extension BatchEncoder {
    /// The field clocks of `ops[range]` (field writes), and whether each is the one before + 1.
    func fieldClocks(_ range: Range<Int>) -> (clocks: [UInt64], regular: Bool) {
        var clocks: [UInt64] = []
        clocks.reserveCapacity(range.count)
        for k in range { if case .writeFields(_, let w) = ops[k].kind { clocks.append(w.clock) } }
        return (clocks, zip(clocks, clocks.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
    }
}

extension BatchDecoder {
    /// Checks that a deleting run of `n` operations whose first removes `first` (read at `at`)
    /// removes characters within `1 ... OpID.maxCounter − 1`, going down the counters when
    /// `descending`.
    static func checkRemoved(_ first: OpID, count n: Int, descending: Bool, at: Int) throws(WireError) {
        let span = UInt64(n - 1)
        guard first != .none, first.counter < OpID.maxCounter,
              descending ? first.counter > span : first.counter < OpID.maxCounter - span else {
            throw .invalidValue("a text run removes a character out of range", offset: at)
        }
    }

    /// A text run record (kind 14, version 6) from after its header: its operations, kept as one
    /// descriptor (``keep(_:tables:)``, `DecodedTextRuns.swift`).
    mutating func textRun(id: OpID, deps: Frontier, deleting: Bool, left: Int, at: Int) throws(WireError) {
        let flagsAt = reader.offset
        let flags = try reader.varint()
        guard flags < 8, deleting || flags & TextRunCode.descending == 0 else {
            throw .invalidValue("text run flags \(flags)", offset: flagsAt)
        }
        let target = try ref(id, default: context.lastTextTarget)
        let recordTarget: RecordTarget = flags & TextRunCode.sectionTarget != 0 ? .section(SectionID(target)) : .item(ItemID(target))
        let name = try fieldName()
        let clock0 = fieldNames.lastClock &+ UInt64(bitPattern: try reader.signed())
        let n = try runCount(left: left, bytesEach: deleting ? 0 : 1, id: id)
        let tables = (clocks: runs.textClocks.count, scalars: runs.textScalarStarts.count, names: runs.textNames.count,
                      frontiers: runs.frontiers.count)
        var run = DecodedBatch.SpliceRun(id: id, deps: keep(deps), target: recordTarget, name: 0, clock: clock0, clocks: -1,
                                         count: n, typing: !deleting, ascii: true, descending: false,
                                         after: .none, before: .none, text: 0 ..< 0, scalars: 0)
        if runs.textNames.last != name { runs.textNames.append(name) }
        run.name = Int32(runs.textNames.count - 1)
        if flags & TextRunCode.irregularClocks != 0 {
            run.clocks = Int32(runs.textClocks.count)
            runs.textClocks.reserveCapacity(more: n)
            var clock = clock0
            runs.textClocks.append(clock)
            for _ in 1 ..< n {
                clock = clock &+ UInt64(bitPattern: try reader.signed())
                runs.textClocks.append(clock)
            }
            fieldNames.lastClock = clock
        } else {
            fieldNames.lastClock = clock0 &+ UInt64(n - 1)
        }
        if !deleting {
            run.after = try ref(id, default: OpID.none)
            run.before = try ref(id, default: OpID.none)
            let textAt = reader.offset
            let text = try reader.utf8(limit: 4 * n)
            let bytes = text.utf8.count
            run.text = reader.offset - bytes ..< reader.offset
            try characters(of: &run, count: n, at: textAt)
        } else {
            let firstAt = reader.offset
            let first = try ref(id, default: nil)
            run.descending = flags & TextRunCode.descending != 0
            try Self.checkRemoved(first, count: n, descending: run.descending, at: firstAt)
            run.after = first
        }
        keep(run, tables: tables)
    }

    /// Checks that the UTF-8 at `run.text` (valid) holds exactly `n` characters (Unicode
    /// scalars), none over the value size, and notes where each starts unless all are ASCII.
    mutating func characters(of run: inout DecodedBatch.SpliceRun, count n: Int, at textAt: Int) throws(WireError) {
        let range = run.text
        if range.count == n {   // n bytes for n characters: ASCII (a scalar takes a byte at least)
            guard maxValueSize >= 1 else { throw .invalidValue("a character over the value size", offset: textAt) }
            return
        }
        run.ascii = false
        run.scalars = runs.textScalarStarts.count
        runs.textScalarStarts.reserveCapacity(more: min(n, range.count))
        let bytes = reader.bytes
        var k = 0
        var at = range.lowerBound
        while at < range.upperBound {
            var next = at + 1
            while next < range.upperBound, bytes[next] & 0xC0 == 0x80 { next += 1 }
            if k < n {
                guard next - at <= maxValueSize else { throw .invalidValue("a character over the value size", offset: textAt) }
                runs.textScalarStarts.append(at)
            }
            k += 1
            at = next
        }
        guard k == n else {
            throw .invalidValue("a text run of \(n) operations whose text is not \(n) characters", offset: textAt)
        }
    }
}
