import Foundation

/// Received text runs in one step: another replica's keystrokes (or backspaces, or forward
/// deletes) of one text field, each the next id of its author depending on exactly the one
/// before, as the encoder writes a text run record (`Records/Text/TextRunCoding.swift`) and the
/// decoder gives it back, one operation per keystroke (README.md in this folder).
extension ListDocument {
    /// Applies the text splice `k` of `source` and the splices after it that continue it as a
    /// text run (``ListOperation/continuesTextRun(_:_:head:step:)``), in one step with the
    /// general path's effect operation by operation; declines (changing nothing) when operation
    /// `k + 1` does not continue it, or when operation `k` would not apply at once.
    ///
    /// Operation `k` passes the general path's checks (``screen(_:)`` for a new operation with
    /// applied dependencies, ``resolve(_:)``); each later one continues it by construction (the
    /// next id of the same author, depending on exactly the one before, the same field, typing
    /// right after the character the one before typed with the same right origin, or removing
    /// the character next to the one the one before removed), so what is left to check is that a
    /// removed character is one of the field's and that the last id is within the counter's
    /// range: the run stops before an operation that fails it, and the general path refuses
    /// that operation. Then:
    /// - the text takes the run as one edit of operation `k` (typing: its characters in one slot
    ///   run after operation `k`'s left origin, which is how the Fugue rule places a run typed
    ///   left to right, each character right after the one before; deleting: the characters
    ///   hidden, as each splice hides its own);
    /// - the field takes the greatest stamp of the run, as it takes each in turn, and the record
    ///   store's clock the greatest clock; the bytes counted change by what the field counts for
    ///   after less before (the sum of each splice's difference);
    /// - each operation advances the version and frontier and goes to the log as the general
    ///   path puts it there (`OpLog.append(other:)`, which extends the log's text run record).
    ///
    /// - Complexity: O(n + log N + d log r) for a run of n operations in a text of N characters,
    ///   d of them removing (r the id runs of the removed characters' author), plus what the
    ///   general path's checks of operation `k` cost.
    mutating func applyTextRun<S: RunSource>(_ source: S, from k: Int) -> FastPath {
        guard k + 1 < source.count else { return .declined }
        let first = source.operation(k)
        guard let head = first.runTextEdit else { return .declined }
        // A run of two at least: the next operation continues this one (checked before anything
        // costlier, so that a splice alone costs one look at its neighbour).
        var step: Int64?
        var current = source.operation(k + 1)
        guard ListOperation.continuesTextRun(first, current, head: head, step: &step) else { return .declined }
        guard let (target, alive) = textRunHead(first) else { return .declined }
        let name = head.writes.writes[0].name
        let typing = head.edit.deletes.isEmpty
        // The run's operations, each checked for what the general path would refuse after
        // operation k (the run ends before one that fails), and gathered into one edit.
        let text = typing ? nil : records[target.opID]?[name]?.text
        var stamp = FieldStamp(clock: head.writes.clock, id: first.id)
        var inserted: [UInt8] = head.edit.insert.utf8.count <= maxValueSize ? Array(head.edit.insert.utf8) : []
        var removed = (low: head.edit.deletes.first?.first ?? .none, high: head.edit.deletes.first?.first ?? .none)
        var applies = 1
        while true {
            guard current.id.counter <= OpID.maxCounter, case let .writeFields(_, writes) = current.kind,
                  case let .text(e) = writes.writes[0].change else { break }
            if typing {
                guard e.insert.utf8.count <= maxValueSize else { break }
                inserted.append(contentsOf: e.insert.utf8)
            } else {
                let gone = e.deletes[0].first
                guard let text, text.lv(of: gone) != nil else { break }
                removed = (Swift.min(removed.low, gone), Swift.max(removed.high, gone))
            }
            stamp = Swift.max(stamp, FieldStamp(clock: writes.clock, id: current.id))
            applies += 1
            guard k + applies < source.count else { break }
            let next = source.operation(k + applies)
            guard ListOperation.continuesTextRun(current, next, head: head, step: &step) else { break }
            current = next
        }
        let edit = typing
            ? TextEdit(after: head.edit.after, before: head.edit.before, insert: String(decoding: inserted, as: UTF8.self),
                       insertedCount: applies)
            : TextEdit(deletes: [TextRange(first: removed.low, count: Int(removed.high.counter - removed.low.counter) + 1)])
        applyTextRunEdit(edit, first: first.id, stamp: stamp, name: name, to: target, alive: alive)
        for j in 0 ..< applies {
            let op = source.operation(k + j)
            advance(to: op.lastID, deps: op.deps)
            log.append(other: op)   // as `appendToLog` logs a field write
        }
        return .applied(applies)
    }
}

extension ListDocument {
    /// The first operation of a received text run as the general path checks it: the field it
    /// writes and whether its entity is alive, or nil (the route declines). A new id (not in the
    /// version) with the buffer empty never reaches `screen`'s equivocation branches, the only
    /// ones that change anything; a refusal declines, and the general path refuses it the same way.
    mutating func textRunHead(_ first: ListOperation) -> (target: RecordTarget, alive: Bool)? {
        guard buffer.count == 0, !versionVector.contains(first.id), (try? screen(first)) == .some(nil),
              firstMissingDependency(of: first) == nil,
              let resolved = try? resolve(first), case let .writeFields(target, _, alive) = resolved
        else { return nil }
        return (target, alive)
    }

    /// A received text run's one edit applied to field `name` of `target` as operation `first`'s,
    /// with the run's greatest stamp, and the bytes counted as the general path counts them.
    mutating func applyTextRunEdit(_ edit: TextEdit, first: OpID, stamp: FieldStamp, name: String,
                                   to target: RecordTarget, alive: Bool) {
        let delta = records.applyTextRun(edit, first: first, stamp: stamp, name: name, to: target)
        byteAccount.records += delta.held
        byteAccount.dead += alive ? delta.reclaimable : delta.held
    }
}

extension RecordStore {
    /// Applies a received text run (``ListDocument/applyTextRun(_:from:)``) to field `name` of
    /// `target`: `edit` as operation `first`'s, the field's stamp raised to `stamp` (the run's
    /// greatest), the clock to its clock. Returns what the field counts for after less before,
    /// as ``apply(_:of:to:local:)`` does.
    ///
    /// - Complexity: that of ``TextSequence/apply(_:id:)``.
    mutating func applyTextRun(_ edit: TextEdit, first: OpID, stamp: FieldStamp, name: String,
                               to target: RecordTarget) -> (held: Int, reclaimable: Int) {
        clock = Swift.max(clock, stamp.clock)
        var delta = (held: 0, reclaimable: 0)
        self[target.opID, default: 1][name, default: FieldState()].applyTextRun(edit, first: first, stamp: stamp,
                                                                                name: name, delta: &delta)
        return delta
    }
}

extension FieldState {
    /// A received text run's effect on this field: `edit` applied as operation `first`'s (a
    /// run's splices carry no `seen`, so nothing is reset), and the greatest of the run's stamps
    /// taken as each would be; `delta` gets what the field counts for after less before.
    mutating func applyTextRun(_ edit: TextEdit, first: OpID, stamp: FieldStamp, name: String,
                               delta: inout (held: Int, reclaimable: Int)) {
        let before = latest == .zero ? (held: 0, reclaimable: 0) : accountedBytes(name: name)
        if text == nil { text = TextSequence() }
        text!.apply(edit, id: first)
        if stamp > latest {
            latest = stamp
            kind = .text
        }
        let after = accountedBytes(name: name)
        delta.held += after.held - before.held
        delta.reclaimable += after.reclaimable - before.reclaimable
    }
}
