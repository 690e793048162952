import Foundation

/// This replica's last local splice of a text field, so that the next splice of the same field
/// takes a short path. Valid while the log has not grown since: then nothing at all changed in
/// the document, so the field is still text, its record's entity still alive or visible, and
/// the text exactly as the last splice left it.
struct LocalTextRun: Sendable {
    /// The log's operation count right after the splice.
    var logCount: Int
    var target: RecordTarget
    var name: String
    /// The last id of the splice (the operation's id plus its characters less one).
    var last: OpID
    /// Where its typing ended, when it inserted.
    var typing: TypingPoint?
    /// Where the field's state is in ``RecordStore/records`` (nil until a splice looked it up):
    /// dictionary indices stay valid while no key is added or removed, which only an applied
    /// operation does (and a copy of the document keeps them: a dictionary's copy keeps its
    /// buckets).
    var place: RecordStore.FieldPlace?
    /// The writes of the operation the last splice returned (one write of this field): the next
    /// splice writes its edit into this array in place when nobody holds that operation any more,
    /// so a keystroke allocates no array (a heap block made and freed per keystroke was a sixth
    /// of its cost).
    var writes: [FieldWrite] = []
    /// The log's text run (an index into `OtherOperations.runs`) the last splice went into, -1
    /// when it went elsewhere: valid with the run (nothing was logged since), so the run is the
    /// log's last record and the next one-character splice extends it without looking up its field.
    var logRun: Int32 = -1
    /// The index of the text's slot run that held the character the last one-character removal
    /// of this run removed (-1: none yet): where the next removal looks first
    /// (``TextSlots/id(of:hint:)``; any value is safe, it is checked). An `Int32` beside
    /// `logRun`, so that the run, and the document, are no larger than without it.
    var removedRun: Int32 = -1
    /// Empty between splices: where a splice that removes more than one character puts its
    /// ranges (``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:removedRun:made:removing:)``).
    var removing: [TextRange] = []

    /// No run (its log count is no log's).
    static let none = LocalTextRun(logCount: -1, target: .item(ItemID(.none)), name: "", last: .none, typing: nil, place: nil)
}

extension ListDocument {
    /// The current splice run's state, nil before the first (for tests).
    var localTextRun: LocalTextRun? { textRun.logCount < 0 ? nil : textRun }
}

/// Local splices of a text field: one right after this replica's previous splice of the same
/// field, with nothing in between.
extension ListDocument {
    /// Called by a local splice of text field `name` of `target`: when it continues the splice run
    /// (``localTextRun`` is current, for the same field) and is valid, applies it and returns the
    /// operation; else returns nil and changes nothing (the general path then applies it, or
    /// throws what is wrong).
    ///
    /// - Complexity: that of ``continueSplice(_:of:at:delete:insert:operation:)``.
    @inline(__always)
    mutating func continueSplice(_ name: String, of target: RecordTarget, at position: Int, delete: Int,
                                 insert: String) -> ListOperation? {
        continueSplice(name, of: target, at: position, delete: delete, insert: insert, operation: true)?.operation
    }

    /// Called by a local splice of text field `name` of `target`: when it continues the splice run
    /// (``localTextRun`` is current, for the same field) and is valid, applies it and returns its
    /// id, and its operation when `operation` is true; else returns nil and changes nothing (the
    /// general path then applies it, or throws what is wrong). With `operation` false no
    /// ``TextEdit`` is made for a one-character splice (the log takes it as a ``TextRunStep``),
    /// and no operation at all (``ListDocument/typeText(_:ofItem:at:delete:insert:)``).
    ///
    /// The result is what the general path (``writeFields(_:ofItem:)`` with one
    /// ``FieldChange/splice(at:delete:insert:)``) would do, with less work: the entity is still
    /// alive and the field still text (nothing happened since the last splice), so there is no
    /// record to check and no field state to copy; the text is edited in place (a keystroke at
    /// the caret without a search, ``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:removedRun:made:removing:)``);
    /// the field's register takes the write's stamp, which beats every stamp applied (its clock
    /// is past the record store's); the operation depends on the frontier and goes to the log as
    /// the general path puts it there (in parts, `OtherOperations`; a one-character splice that
    /// continues the text run the last splice went into extends it without looking up the run's
    /// field, `OpLog.extendLocalTextRun`).
    ///
    /// - Complexity: O(k) for a keystroke at the caret (k inserted scalars); else O(log n + d log r + k).
    @inline(__always)
    mutating func continueSplice(_ name: String, of target: RecordTarget, at position: Int, delete: Int,
                                 insert: String, operation: Bool) -> (id: OpID, operation: ListOperation?)? {
        // The run is read and written in place (`textRun`); its writes array is held once when
        // the caller dropped the last operation, so the next operation's writes go into it.
        let bytes = insert.utf8.count
        // The frontier is this run's last operation (nothing happened since the last local
        // operation, whose dependencies were the whole frontier): the operation depends on it.
        // (A re-sync that sets ``skipsCounter`` sets the clock past every counter of this replica
        // the document holds, `textRun.last` included, so the run never continues then: only
        // `make` stamps the edit that skips, as for the insert and delete runs.)
        guard fastPathsEnabled, textRun.logCount == log.count, clock == textRun.last.counter, textRun.target == target,
              textRun.name == name, position >= 0, delete >= 0, delete <= TextLimits.maxDeleteRanges, delete > 0 || bytes > 0,
              bytes <= maxValueSize, currentFrontier.isOnly(textRun.last)
        else { return nil }
        // A keystroke is one byte: one scalar, without counting (nor a removal's empty text).
        let k = bytes <= 1 ? bytes : TextEdit.scalarCount(of: insert)
        let span = UInt64(Swift.max(k, 1))
        guard clock <= OpID.maxCounter - span else { return nil }
        let id = OpID(counter: clock + 1, replica: replica)
        let stamp = FieldStamp(clock: nextFieldClock(), id: id)
        var made = LocalSplice()
        // The typing point is edited in place; the ranges of a removal of more than one character
        // go into the run's array (kept empty between splices: no array made and released per
        // keystroke). A splice that fails changes neither.
        guard records.spliceLocally(name, of: target.opID, place: &textRun.place, at: position, delete: delete,
                                    insert: insert, scalars: k, stamp: stamp, typing: &textRun.typing,
                                    removedRun: &textRun.removedRun, made: &made, removing: &textRun.removing)
        else { return nil }
        let previous = textRun.last
        let last = OpID(counter: clock + span, replica: replica)
        advance(from: previous, to: last)   // `advance(to:deps:)` without comparing frontiers
        // `FieldWrites.footprint` of the one write the operation holds, without a pass over its writes.
        let footprint = 40 + name.utf8.count + bytes + (made.removed.count > 0 ? 1 : textRun.removing.count) * 24
        let step = made.runStep(scalars: k, delete: delete)
        var edit: TextEdit? = nil
        if let step {
            // Into the text run the last splice went into, when it is the log's last record (no
            // field look-up); else as the general path logs it.
            if !(textRun.logRun >= 0
                && log.extendLocalTextRun(textRun.logRun, after: previous, clock: stamp.clock, step: step, insert: insert,
                                          byte: made.byte, payloadBytes: footprint)) {
                textRun.logRun = log.append(step: step, id: id, deps: Frontier(only: previous), clock: stamp.clock,
                                            target: target, name: name, insert: insert, payloadBytes: footprint)
            }
        } else {
            let e = made.edit(insert: insert, scalars: k, more: textRun.removing)
            if !textRun.removing.isEmpty { textRun.removing.removeAll(keepingCapacity: true) }
            log.append(splice: id, deps: Frontier(only: previous), span: Int(span), clock: stamp.clock, target: target,
                       name: name, edit: e, step: nil, payloadBytes: footprint)
            textRun.logRun = -1
            edit = e
        }
        // The byte count (Compaction/ListDocument+Reclaimable.swift), as the general path keeps it
        // for a live record: every character typed is held; every one removed is reclaimable.
        byteAccount.records += k * Self.textCharacterBytes
        byteAccount.dead += delete * Self.textCharacterBytes
        textRun.logCount = log.count
        textRun.last = last
        guard operation else { return (id, nil) }
        let opEdit = edit ?? made.edit(insert: insert, scalars: k, more: [])
        if textRun.writes.count == 1 {
            textRun.writes[0].change = .text(opEdit)   // in place when the last operation is gone
        } else {
            textRun.writes = [FieldWrite(name: name, change: .text(opEdit))]
        }
        let writes = FieldWrites(clock: stamp.clock, sortedWrites: textRun.writes)
        assert(writes.footprint == footprint, "the footprint of a splice's writes")
        return (id, ListOperation(id: id, deps: Frontier(only: previous), kind: .writeFields(target, writes)))
    }

    /// Records the local splice `op` of text field `name` of `target`, just applied by the general
    /// path, as the start of a splice run (its typing point is found by the next splice, which
    /// takes the short path's search).
    mutating func startSplice(_ op: ListOperation, _ name: String, of target: RecordTarget) {
        guard fastPathsEnabled else { return }
        textRun = LocalTextRun(logCount: log.count, target: target, name: name, last: op.lastID, typing: nil, place: nil)
    }
}

extension RecordStore {
    /// Where a field's state is in ``records``: the index of its record, and of the field in it.
    struct FieldPlace: Sendable {
        var record: Dictionary<OpID, [String: FieldState]>.Index
        var field: Dictionary<String, FieldState>.Index
    }

    /// ``TextSequence/spliceLocally(at:delete:insert:scalars:id:typing:removedRun:made:removing:)`` on text field `name` of
    /// entity `key`, in place, and the field's register raised to `stamp`; nil, with nothing
    /// changed, when the field is not text or the splice is out of range. `place` is where the
    /// field is (looked up when nil, and kept there).
    ///
    /// - Complexity: that of the splice, plus two hash look-ups when `place` is nil.
    mutating func spliceLocally(_ name: String, of key: OpID, place: inout FieldPlace?, at position: Int, delete: Int,
                                insert: String, scalars k: Int, stamp: FieldStamp, typing: inout TypingPoint?,
                                removedRun: inout Int32, made: inout LocalSplice, removing more: inout [TextRange]) -> Bool {
        if place == nil {
            guard let i = materialized.index(forKey: key), let j = materialized.values[i].index(forKey: name) else { return false }
            place = FieldPlace(record: i, field: j)
        }
        // Through the dictionaries' values by index: `records[key]?[name]?` would move the field
        // state out and back (a copy and a destroy of every array it holds, per keystroke).
        let p = place!
        assert(materialized.keys[p.record] == key && materialized.values[p.record].keys[p.field] == name, "a stale field place")
        guard materialized.values[p.record].values[p.field].spliceLocally(
            at: position, delete: delete, insert: insert, scalars: k, stamp: stamp, typing: &typing, removedRun: &removedRun,
            made: &made, removing: &more)
        else { return false }
        clock = Swift.max(clock, stamp.clock)
        return true
    }
}

extension FieldState {
    /// A local splice of this text field, stamped `stamp` (see ``RecordStore/spliceLocally``):
    /// what ``apply(_:stamp:local:)`` does with the edit it makes.
    mutating func spliceLocally(at position: Int, delete: Int, insert: String, scalars k: Int, stamp: FieldStamp,
                                typing: inout TypingPoint?, removedRun: inout Int32, made: inout LocalSplice,
                                removing more: inout [TextRange]) -> Bool {
        // Optional chaining edits the text in place (`text != nil` would copy it).
        guard kind == .text,
              text?.spliceLocally(at: position, delete: delete, insert: insert, scalars: k, id: stamp.id,
                                  typing: &typing, removedRun: &removedRun, made: &made, removing: &more) == true
        else { return false }
        if stamp > latest {
            latest = stamp
            kind = .text
        }
        return true
    }
}
