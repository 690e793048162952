import Foundation

/// The operations the log keeps whole (``OpLog/others``), in the order they were appended: the
/// rare kinds (section deletes, value and field writes), and text splices that are not part of a
/// text run (a pasted text, a removed selection); and the text runs themselves (``runs``,
/// `TextRunLog.swift`: one per run of keystrokes, outside this collection's indices).
///
/// A splice of one text field (one ``FieldWrite`` holding a ``TextEdit``, nothing replaced or
/// seen: every local and remote splice of a field that is text) is kept in parts, ``Splice``:
/// about 90 bytes with no heap block for a short insert, where a ``ListOperation`` whole took
/// about 130 bytes plus a heap block for its writes (about 150 more). The field it writes is an
/// index into a table of (target, name) pairs, its dependencies a flag when they are "my previous
/// id" (as typing makes them). Reading one back rebuilds an equal operation.
struct OtherOperations: RandomAccessCollection, Sendable {
    /// One text splice, in parts.
    struct Splice: Sendable {
        var id: OpID
        var clock: UInt64
        var after: OpID
        var before: OpID
        var insert: String
        /// The removed ranges: `removed[deletes ..< deletes + deleteCount]`.
        var deletes: Int32
        var deleteCount: Int32
        /// The field written: an index into ``OtherOperations/fields``.
        var field: Int32
        /// The dependencies: -1 for exactly `id - 1` of the same replica, else an index into
        /// ``OtherOperations/frontiers``.
        var deps: Int32
    }

    /// A field written by splices.
    struct FieldKey: Hashable, Sendable {
        var target: RecordTarget
        var name: String
    }

    /// Per operation: an index into ``whole`` when at least 0 (and under ``lazyFlag``), `~k` for
    /// splice `k`, `lazyFlag + k` for operation `k` of ``lazy``.
    private var slots: [Int32] = []
    /// Marks an operation kept as bytes in ``slots``.
    private static let lazyFlag: Int32 = 1 << 30
    /// A loaded state snapshot's field writes, kept as bytes (`LazyOperations.swift`).
    private(set) var lazy: LazyOperations?
    private var whole: [ListOperation] = []
    private var splices: [Splice] = []
    private var removed: [TextRange] = []
    private(set) var fields: [FieldKey] = []
    private var frontiers: [Frontier] = []
    /// Runs of one-character splices (``OpLog/Kind/textRun`` records, `TextRunLog.swift`): not
    /// operations of this collection (its indices count the other records' operations only).
    var runs: [TextRun] = []
    /// The text typed by the typing runs, UTF-8 (``TextRun/textStart``).
    var runText: [UInt8] = []
    /// The clocks of the runs whose clocks do not go up by one (``TextRun/clocks``).
    var runClocks: [UInt64] = []

    var startIndex: Int { 0 }
    var endIndex: Int { slots.count }

    /// Operation `i`, rebuilt when it was kept in parts.
    ///
    /// - Complexity: O(r) for a splice removing r ranges, else O(1).
    subscript(i: Int) -> ListOperation {
        let s = slots[i]
        if s >= Self.lazyFlag { return lazy!.operation(Int(s - Self.lazyFlag)) }
        if s >= 0 { return whole[Int(s)] }
        let p = splices[Int(~s)]
        var edit = TextEdit(after: p.after, before: p.before, insert: p.insert)
        if p.deleteCount > 0 { edit.deletes = Array(removed[Int(p.deletes) ..< Int(p.deletes + p.deleteCount)]) }
        let key = fields[Int(p.field)]
        return ListOperation(id: p.id, deps: deps(of: p),
                             kind: .writeFields(key.target, FieldWrites(clock: p.clock,
                                                                        sortedWrites: [FieldWrite(name: key.name, change: .text(edit))])))
    }

    /// Whether operation `i` is kept as bytes (a field write without text, `LazyOperations.swift`).
    func isKeptAsBytes(_ i: Int) -> Bool { slots[i] >= Self.lazyFlag }

    /// The dependencies of operation `i` (without rebuilding a splice).
    func deps(at i: Int) -> Frontier {
        let s = slots[i]
        if s >= Self.lazyFlag { return lazy!.deps(Int(s - Self.lazyFlag)) }
        return s >= 0 ? whole[Int(s)].deps : deps(of: splices[Int(~s)])
    }

    private func deps(of p: Splice) -> Frontier {
        p.deps < 0 ? Frontier(only: OpID(counter: p.id.counter &- 1, replica: p.id.replica)) : frontiers[Int(p.deps)]
    }

    /// Appends `op`, in parts when it is a splice of one text field.
    ///
    /// - Complexity: O(1) amortized, plus O(r) for a splice removing r ranges.
    mutating func append(_ op: consuming ListOperation) {
        precondition(slots.count < Int(Int32.max), "the log is full")
        guard case .writeFields(let target, let writes) = op.kind, writes.writes.count == 1,
              case .text(let edit) = writes.writes[0].change, writes.writes[0].replaces == .none,
              writes.writes[0].seen.isEmpty,
              removed.count + edit.deletes.count < Int(Int32.max), frontiers.count < Int(Int32.max) - 1
        else {
            precondition(whole.count < Int(Self.lazyFlag), "the log is full")
            slots.append(Int32(whole.count))
            whole.append(op)
            return
        }
        append(splice: op.id, deps: op.deps, clock: writes.clock, target: target, name: writes.writes[0].name, edit: edit)
    }

    /// Starts keeping operations as bytes of `source` (a state snapshot's load, before the log's
    /// first operation).
    mutating func keepLazily(_ source: LazyOperations.Source) {
        precondition(lazy == nil && slots.isEmpty, "operations kept as bytes come first")
        lazy = LazyOperations(source)
    }

    /// Appends an operation kept as bytes (``LazyOperations/append(offset:previousLast:lastSection:lastClock:deps:)``),
    /// after ``keepLazily(_:)``.
    ///
    /// - Complexity: O(1) amortized.
    mutating func appendLazy(offset: Int, previousLast: OpID, lastSection: OpID, lastClock: UInt64, deps: Frontier) {
        precondition(lazy != nil && lazy!.count < Int(Int32.max - Self.lazyFlag), "the log is full")
        slots.append(Self.lazyFlag + Int32(lazy!.count))
        lazy!.append(offset: offset, previousLast: previousLast, lastSection: lastSection, lastClock: lastClock, deps: deps)
    }

    /// Whether any operation writes fields (``ListOperation/carriesFields``), without decoding
    /// those kept as bytes (every one of them does).
    ///
    /// - Complexity: O(n) for n operations kept whole.
    var anyCarriesFields: Bool {
        (lazy.map { $0.count > 0 } ?? false) || whole.contains(where: \.carriesFields)
            || !splices.isEmpty
    }

    /// Appends the splice `id` (dependencies `deps`) of field `name` of `target` at `clock`, in parts.
    ///
    /// - Complexity: O(1) amortized, plus O(r) for r removed ranges.
    mutating func append(splice id: OpID, deps: Frontier, clock: UInt64, target: RecordTarget, name: String, edit: TextEdit) {
        precondition(slots.count < Int(Int32.max) && splices.count < Int(Int32.max) - 1, "the log is full")
        let field = fieldIndex(target, name)
        var depsIndex: Int32 = -1
        if id.counter == 0 || !deps.isOnly(OpID(counter: id.counter - 1, replica: id.replica)) {
            depsIndex = Int32(frontiers.count)
            frontiers.append(deps)
        }
        slots.append(~Int32(splices.count))
        splices.append(Splice(id: id, clock: clock, after: edit.after, before: edit.before, insert: edit.insert,
                              deletes: Int32(removed.count), deleteCount: Int32(edit.deletes.count),
                              field: Int32(field), deps: depsIndex))
        if !edit.deletes.isEmpty { removed.append(contentsOf: edit.deletes) }
    }

    /// The index of field `name` of `target` in ``fields``, added when new.
    ///
    /// - Complexity: O(1) for the field written last, else O(f) for up to 64 fields f.
    mutating func fieldIndex(_ target: RecordTarget, _ name: String) -> Int {
        if let last = fields.indices.last, fields[last].target == target, fields[last].name == name { return last }
        if fields.count <= 64, let k = fields.firstIndex(of: FieldKey(target: target, name: name)) { return k }
        fields.append(FieldKey(target: target, name: name))
        return fields.count - 1
    }

    /// Calls `body` with the record of every text edit kept (once per field an operation types
    /// into), without rebuilding any operation.
    ///
    /// - Complexity: O(n) for n operations kept.
    func forEachTextEditRecord(_ body: (OpID) -> Void) {
        for run in runs {
            let target = fields[Int(run.field)].target.opID
            for _ in 0 ..< run.count { body(target) }
        }
        for s in slots where s < Self.lazyFlag {   // one kept as bytes holds no text
            if s < 0 {
                body(fields[Int(splices[Int(~s)].field)].target.opID)
                continue
            }
            let op = whole[Int(s)]
            switch op.kind {
            case let .writeFields(target, writes):
                for w in writes.writes { if case .text = w.change { body(target.opID) } }
            case let .insertItemWithFields(_, _, _, writes), let .insertSectionWithFields(_, _, writes):
                for w in writes.writes { if case .text = w.change { body(op.id) } }
            default: continue
            }
        }
    }

    /// Heap bytes, for ``ListDocument/memoryBreakdown``.
    var memoryParts: [MemoryPart] {
        [memoryPart("log.others", whole), memoryPart("log.otherSlots", slots),
         memoryPart("log.splices", splices, extra: splices.reduce(0) { $0 + ($1.insert.utf8.count > 15 ? $1.insert.utf8.count : 0) }),
         memoryPart("log.spliceDeletes", removed), memoryPart("log.spliceFields", fields), memoryPart("log.spliceDeps", frontiers),
         memoryPart("log.textRuns", runs), memoryPart("log.textRunText", runText), memoryPart("log.textRunClocks", runClocks)]
            + (lazy?.memoryParts ?? [])
    }
}
