import Foundation

/// A run of one-character splices of one text field by one replica, each the next id of its
/// author and depending on exactly the one before (issue 45): kept as one log record
/// (``OpLog/Kind/textRun``), as a typed run of items is, where each splice used to be a record
/// of its own and about 90 bytes in ``OtherOperations``.
///
/// Operation `k` of the run (id `first id + k`) writes field ``field`` at clock
/// ``clock`` `+ k` (or `runClocks[clocks + k]` when the clocks do not go up by one: a wall clock
/// moved between keystrokes), one text edit:
/// - typing (``typing``): the run's `k`-th Unicode scalar, inserted after ``first`` for `k = 0`
///   and after the character operation `k - 1` typed for `k > 0`, before ``before`` (typing
///   forward: each character goes right after the one before, with the same right origin);
/// - deleting: removes the character ``first`` `+ step × k` (backspacing over characters typed
///   in one run goes down their ids, deleting forward goes up; ``step`` is 0 while the run holds
///   one operation).
///
/// Rebuilt operations are equal (`==`) to the ones applied (`ListDocument+History.swift`).
struct TextRun: Sendable {
    /// Typing: the left origin of operation 0. Deleting: the character operation 0 removes.
    var first: OpID
    /// Typing: the right origin of every operation. Deleting: ``OpID/none``.
    var before: OpID
    /// The clock of operation 0.
    var clock: UInt64
    /// Typing: the run's text, `runText[textStart ..< textStart + textBytes]`.
    var textStart: Int32
    var textBytes: Int32
    /// -1: operation `k`'s clock is `clock + k`; else where the run's clocks start in ``OtherOperations/runClocks``.
    var clocks: Int32
    /// The field written: an index into ``OtherOperations/fields``.
    var field: Int32
    /// The number of operations.
    var count: Int32
    /// Deleting: +1 or -1 (0 for one operation).
    var step: Int8
    /// Whether the run types (else it deletes).
    var typing: Bool
    /// Typing: whether its text is ASCII (so scalar `k` is byte `k`).
    var ascii: Bool
}

/// One operation of a text run, as plain values: one scalar typed between two characters (the
/// scalar is the operation's inserted text), or one character removed.
enum TextRunStep: Equatable, Sendable {
    case typed(after: OpID, before: OpID)
    case removed(OpID)

    /// The text edit this step is (`insert`: the scalar it types; ignored when it removes).
    func edit(insert: String) -> TextEdit {
        switch self {
        case let .typed(after, before): TextEdit(after: after, before: before, insert: insert, insertedCount: 1)
        case let .removed(d): TextEdit(deletes: [TextRange(first: d, count: 1)])
        }
    }

    /// The step `edit` is, or nil when it cannot be an operation of a text run (``OtherOperations/isRunShaped(_:)``).
    @inline(__always)
    init?(_ edit: TextEdit) {
        if edit.deletes.isEmpty {
            guard edit.insertedCount == 1 else { return nil }
            self = .typed(after: edit.after, before: edit.before)
        } else {
            guard edit.insert.isEmpty, edit.deletes.count == 1, edit.deletes[0].count == 1 else { return nil }
            self = .removed(edit.deletes[0].first)
        }
    }
}

extension OtherOperations {
    /// Whether `edit` can be an operation of a text run: one scalar typed and nothing removed, or
    /// one character removed and nothing typed.
    @inline(__always)
    static func isRunShaped(_ edit: TextEdit) -> Bool { TextRunStep(edit) != nil }

    /// Whether the log holds text runs.
    var hasRuns: Bool { !runs.isEmpty }

    /// Starts a run with the splice `step` of field `name` of `target` at `clock` (its first
    /// operation; `insert` the text it types); returns its index, or nil (nothing changed) when
    /// the log cannot hold another run.
    ///
    /// - Complexity: O(1) amortized for the field written last.
    mutating func startRun(clock: UInt64, target: RecordTarget, name: String, step: TextRunStep, insert: String) -> Int32? {
        guard runs.count < Int(Int32.max) - 1, runText.count < Int(Int32.max) - 8 else { return nil }
        let field = Int32(fieldIndex(target, name))
        switch step {
        case let .typed(after, before):
            let start = runText.count
            let ascii = appendText(insert)
            runs.append(TextRun(first: after, before: before, clock: clock, textStart: Int32(start),
                                textBytes: Int32(runText.count - start), clocks: -1, field: field, count: 1, step: 0,
                                typing: true, ascii: ascii))
        case let .removed(first):
            runs.append(TextRun(first: first, before: .none, clock: clock, textStart: 0, textBytes: 0,
                                clocks: -1, field: field, count: 1, step: 0, typing: false, ascii: true))
        }
        return Int32(runs.count - 1)
    }

    /// Extends run `r`, the last one and the log's last record, by the splice `step` of field
    /// `name` of `target` at `clock` (`insert` the text it types), whose id `id` is the run's next
    /// (the caller checked the id and that it depends on exactly the one before). Returns false,
    /// changing nothing, when the step does not continue the run.
    ///
    /// - Complexity: O(1) amortized (O(count) once when the clocks stop going up by one).
    @inline(__always)
    mutating func extendRun(_ r: Int, id: OpID, clock: UInt64, target: RecordTarget, name: String, step: TextRunStep,
                            insert: String) -> Bool {
        let field = fields[Int(runs[r].field)]
        guard field.target == target, field.name == name else { return false }
        return extendLocalRun(r, after: OpID(counter: id.counter &- 1, replica: id.replica), clock: clock, step: step, insert: insert)
    }

    /// Extends run `r`, the last one and the log's last record, by the next local splice of its
    /// field, `step` at `clock` (`insert` the text it types; `byte` its byte when it is one ASCII
    /// character, else 0), whose id is the next after `previous`, the run's last operation (the caller
    /// checked the field, the id and that the splice depends on exactly `previous`):
    /// ``extendRun(_:id:clock:target:name:step:insert:)`` without comparing the field. Returns
    /// false, changing nothing, when the step does not continue the run.
    ///
    /// - Complexity: O(1) amortized (O(count) once when the clocks stop going up by one).
    @inline(__always)
    mutating func extendLocalRun(_ r: Int, after previous: OpID, clock: UInt64, step: TextRunStep, insert: String,
                                 byte: UInt8 = 0) -> Bool {
        assert(r == runs.count - 1, "only the last run grows")
        // The run edited in place (the array's one access), with the run's text and clocks beside.
        return Self.extend(&runs[r], after: previous, clock: clock, step: step, insert: insert, byte: byte, text: &runText,
                           clocks: &runClocks)
    }

    /// ``extendLocalRun(_:after:clock:step:insert:byte:)`` on `run`, whose text and clocks are in
    /// `text` and `clocks`.
    @inline(__always)
    private static func extend(_ run: inout TextRun, after previous: OpID, clock: UInt64, step: TextRunStep, insert: String,
                               byte: UInt8, text: inout [UInt8], clocks: inout [UInt64]) -> Bool {
        guard run.count < Int32.max - 1 else { return false }
        switch step {
        case let .typed(after, before):
            guard run.typing, before == run.before, after == previous, text.count < Int(Int32.max) - 8 else { return false }
            if byte != 0 {   // an ASCII keystroke, without reading the string
                text.append(byte)
                run.textBytes += 1
            } else {
                let start = text.count
                if !appendText(insert, to: &text) { run.ascii = false }
                run.textBytes += Int32(text.count - start)
            }
        case let .removed(d):
            guard !run.typing, let step = direction(of: run, to: d) else { return false }
            run.step = step
        }
        appendClock(clock, to: &run, clocks: &clocks)
        return true
    }

    /// Whether the first operation of run `b`, appended right after run `a` (whose last
    /// operation is `lastID`; `b`'s first has the next id and depends on exactly it), would
    /// extend `a` (``extendRun(_:id:clock:target:name:step:insert:)``'s rule): state snapshot
    /// version 11 writes the two as one log record only where it would not, so that the loader's
    /// log cuts them where this one did.
    ///
    /// - Complexity: O(1).
    func continues(_ a: Int, lastID: OpID, with b: Int) -> Bool {
        let x = runs[a], y = runs[b]
        guard fields[Int(x.field)] == fields[Int(y.field)], x.typing == y.typing else { return false }
        if x.count >= Int32.max - 2 { return true }   // the limits: not joined
        return x.typing ? y.before == x.before && y.first == lastID : Self.direction(of: x, to: y.first) != nil
    }

    /// The direction from the character deleting run `run` removed last to `d`, when `d` is next
    /// to it (+1: the next id, -1: the previous) and the run goes that way or has no direction yet.
    @inline(__always)
    private static func direction(of run: TextRun, to d: OpID) -> Int8? {
        let last = deleted(run, Int(run.count) - 1)
        guard d.replica == last.replica else { return nil }
        let step: Int8
        if d.counter == last.counter &+ 1 { step = 1 } else if d.counter == last.counter &- 1 { step = -1 } else { return nil }
        return run.step == 0 || run.step == step ? step : nil
    }

    /// Counts one more operation of `run`, at `clock`: the run's clocks are kept apart
    /// (``runClocks``) from the first that does not go up by one.
    ///
    /// - Complexity: O(1) amortized (O(count) once when the clocks stop going up by one).
    @inline(__always)
    private static func appendClock(_ clock: UInt64, to run: inout TextRun, clocks: inout [UInt64]) {
        if run.clocks < 0, clock != run.clock &+ UInt64(run.count) {
            run.clocks = Int32(clocks.count)
            for k in 0 ..< UInt64(run.count) { clocks.append(run.clock &+ k) }
        }
        if run.clocks >= 0 { clocks.append(clock) }
        run.count += 1
    }

    /// One-character splices that continue a text run (``extendRun(_:by:_:)``), described
    /// without an operation each: those of a decoded text run record (`DecodedTextRuns.swift`).
    struct RunExtension {
        /// The field written.
        let target: RecordTarget
        let name: String
        /// Typing: the right origin of every splice, and the UTF-8 of the characters typed, one
        /// each; nil when deleting.
        let typed: (before: OpID, text: UnsafeBufferPointer<UInt8>, ascii: Bool)?
        /// Deleting: the character the first splice removes, and the direction of the rest
        /// (+1 or -1; any for one splice).
        let removed: (first: OpID, step: Int8)
        /// The clock of splice `k`: `clock + k`, or `clocks[k]` when given.
        let clock: UInt64
        let clocks: UnsafeBufferPointer<UInt64>?

        @inline(__always) func clock(_ k: Int) -> UInt64 { clocks.map { $0[k] } ?? clock &+ UInt64(k) }
    }

    /// Extends run `r`, the last one and the log's last record, by `n` splices, the first of
    /// which has the run's next id (the caller checked the ids and that each depends on exactly
    /// the one before): what ``extendRun(_:id:clock:target:name:edit:)`` of each does. Returns
    /// false, changing nothing, when they do not continue the run.
    ///
    /// - Complexity: O(n + b) for b bytes typed (O(1) plus the bytes when the clocks go up by one).
    mutating func extendRun(_ r: Int, by n: Int, _ splices: RunExtension) -> Bool {
        assert(r == runs.count - 1, "only the last run grows")
        var run = runs[r]
        guard n >= 1, fields[Int(run.field)].target == splices.target, fields[Int(run.field)].name == splices.name,
              Int(run.count) < Int(Int32.max) - 1 - n else { return false }
        if run.typing {
            guard let typed = splices.typed, typed.before == run.before,
                  runText.count < Int(Int32.max) - 8 - typed.text.count else { return false }
            runText.append(contentsOf: typed.text)
            if !typed.ascii { run.ascii = false }
            run.textBytes += Int32(typed.text.count)
        } else {
            guard splices.typed == nil, let step = Self.direction(of: run, to: splices.removed.first),
                  n == 1 || splices.removed.step == step else { return false }
            run.step = step
        }
        if splices.clocks == nil, run.clocks < 0, splices.clock == run.clock &+ UInt64(run.count) {
            run.count += Int32(n)   // every clock goes up by one
        } else {
            for k in 0 ..< n { Self.appendClock(splices.clock(k), to: &run, clocks: &runClocks) }
        }
        runs[r] = run
        return true
    }

    /// Appends `text`'s UTF-8 to ``runText``; returns whether it is ASCII.
    @inline(__always)
    private mutating func appendText(_ text: String) -> Bool {
        Self.appendText(text, to: &runText)
    }

    /// Appends `text`'s UTF-8 to `bytes`; returns whether it is ASCII.
    @inline(__always)
    private static func appendText(_ text: String, to bytes: inout [UInt8]) -> Bool {
        if text.utf8.count == 1 {   // a keystroke (its iterator reads a small string's byte in place)
            var i = text.utf8.makeIterator()
            let b = i.next()!
            bytes.append(b)
            return b < 0x80
        }
        var ascii = true
        for b in text.utf8 {
            bytes.append(b)
            if b >= 0x80 { ascii = false }
        }
        return ascii
    }

    /// The character operation `k` of deleting run `run` removes.
    @inline(__always)
    private static func deleted(_ run: TextRun, _ k: Int) -> OpID {
        OpID(counter: run.first.counter &+ UInt64(bitPattern: Int64(k) &* Int64(run.step)), replica: run.first.replica)
    }

    /// The clock of operation `k` of `run`.
    @inline(__always)
    func clock(_ run: TextRun, _ k: Int) -> UInt64 {
        run.clocks < 0 ? run.clock &+ UInt64(k) : runClocks[Int(run.clocks) + k]
    }

    /// The field run `r` writes.
    func field(ofRun r: Int) -> FieldKey { fields[Int(runs[r].field)] }

    /// The byte ranges in ``runText`` of the scalars of typing run `run`, from scalar `from` on,
    /// `count` of them.
    ///
    /// - Complexity: O(count) for an ASCII run, else O(from + count).
    func scalarRanges(_ run: TextRun, from: Int, count: Int) -> [Range<Int>] {
        let start = Int(run.textStart), end = start + Int(run.textBytes)
        if run.ascii { return (start + from ..< start + from + count).map { $0 ..< $0 + 1 } }
        var out: [Range<Int>] = []
        out.reserveCapacity(count)
        var k = 0, at = start
        while at < end, out.count < count {
            var next = at + 1
            while next < end, runText[next] & 0xC0 == 0x80 { next += 1 }
            if k >= from { out.append(at ..< next) }
            k += 1
            at = next
        }
        return out
    }

    /// Appends operations `from ..< to` of run `r` to `out`, rebuilt: operation `k` has id
    /// `id + k`; operation `from` depends on `deps`, each later one on exactly the one before.
    ///
    /// - Complexity: O(to - from), plus O(from) for a run that is not ASCII.
    func appendOperations(ofRun r: Int, from: Int, to: Int, firstID id: OpID, deps: Frontier, into out: inout [ListOperation]) {
        let run = runs[r]
        let key = fields[Int(run.field)]
        let ranges = run.typing ? scalarRanges(run, from: from, count: to - from) : []
        var deps = deps
        for k in from ..< to {
            let opID = id.advanced(by: k)
            var edit = TextEdit()
            if run.typing {
                edit = TextEdit(after: k == 0 ? run.first : OpID(counter: opID.counter &- 1, replica: opID.replica),
                                before: run.before, insert: String(decoding: runText[ranges[k - from]], as: UTF8.self), insertedCount: 1)
            } else {
                edit.deletes = [TextRange(first: Self.deleted(run, k), count: 1)]
            }
            let writes = FieldWrites(clock: clock(run, k), sortedWrites: [FieldWrite(name: key.name, change: .text(edit))])
            out.append(ListOperation(id: opID, deps: deps, kind: .writeFields(key.target, writes)))
            deps = Frontier(only: opID)
        }
    }

    /// Operation `k` of run `r`, rebuilt (``appendOperations(ofRun:from:to:firstID:deps:into:)``).
    func operation(ofRun r: Int, _ k: Int, firstID id: OpID, deps: Frontier) -> ListOperation {
        var out: [ListOperation] = []
        appendOperations(ofRun: r, from: k, to: k + 1, firstID: id, deps: deps, into: &out)
        return out[0]
    }
}
