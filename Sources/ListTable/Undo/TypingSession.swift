import Foundation
import ListCRDT

// Typing grouped the way text views group it (U12, Docs/Semantics.md "Undo and redo"): the
// keystrokes typed one after the other into one text field are one undo group, until the caret
// goes somewhere else, another edit is recorded, or undo or redo runs.

/// One keystroke: an operation that only types characters into one text field (a key or a
/// paste), or only removes one character of it (a backspace).
struct Keystroke: Sendable {
    var target: RecordTarget
    var name: String
    /// The characters typed (empty for a backspace).
    var typed: TextRange?
    /// The character they went right after (typing), or the one removed (a backspace).
    var at: OpID

    /// The keystroke `operations` make, or nil when they are anything else (a splice that
    /// removes and types, two fields, a list edit).
    static func of(_ operations: [ListOperation]) -> Keystroke? {
        guard operations.count == 1, case let .writeFields(target, writes) = operations[0].kind,
              writes.writes.count == 1, case .text(let edit) = writes.writes[0].change else { return nil }
        let name = writes.writes[0].name
        if !edit.insert.isEmpty, edit.deletes.isEmpty {
            return Keystroke(target: target, name: name, typed: TextRange(first: operations[0].id, count: edit.insertedCount),
                             at: edit.after)
        }
        if edit.insert.isEmpty, edit.deletes.count == 1, edit.deletes[0].count == 1 {
            return Keystroke(target: target, name: name, typed: nil, at: edit.deletes[0].first)
        }
        return nil
    }
}

/// The typing the top undo group is growing by: its field, and the characters it typed that are
/// still there, in typing order (a backspace removes the last).
struct TypingSession: Sendable {
    var target: RecordTarget
    var name: String
    var typed: [OpID]

    /// A session started by `k` (a backspace starts none: it removes text typed before).
    init?(_ k: Keystroke) {
        guard let r = k.typed else { return nil }
        target = k.target
        name = k.name
        typed = (0 ..< r.count).map { r.first.advanced(by: $0) }
    }

    /// Whether `k` continues this typing: more characters right after the last one typed, or a
    /// backspace over it.
    func continues(with k: Keystroke) -> Bool {
        guard k.target == target, k.name == name, let last = typed.last else { return false }
        return k.at == last
    }

    /// The session once `k` (which continues it) is part of it.
    func extended(by k: Keystroke) -> TypingSession {
        var next = self
        if let r = k.typed {
            next.typed += (0 ..< r.count).map { r.first.advanced(by: $0) }
        } else {
            next.typed.removeLast()
        }
        return next
    }
}

extension TypingSession {
    /// The keystroke of a step about to be recorded, when the step is nothing else.
    static func keystroke(_ operations: [ListOperation], step: UndoStep) -> Keystroke? {
        guard let k = Keystroke.of(operations), step.sections.count + step.items.count == 1 else { return nil }
        let texts = step.items.first?.texts ?? step.sections.first?.texts ?? [:]
        return texts.count == 1 && texts[k.name] != nil ? k : nil
    }
}

extension UndoStep {
    /// Takes `next`, a keystroke continuing this step's typing (``TypingSession``), into this
    /// step: one undo then takes both back. False, and nothing changed, when the two steps are not
    /// one change of the same entity and text field.
    mutating func absorb(_ next: UndoStep, typing k: Keystroke) -> Bool {
        switch k.target {
        case .item(let i):
            guard items.count == 1, sections.isEmpty, next.items.count == 1, items[0].id == i, next.items[0].id == i,
                  let merged = items[0].absorbing(next.items[0], field: k.name) else { return false }
            items[0] = merged
        case .section(let s):
            guard sections.count == 1, items.isEmpty, next.sections.count == 1, sections[0].id == s, next.sections[0].id == s,
                  let merged = sections[0].absorbing(next.sections[0], field: k.name) else { return false }
            sections[0] = merged
        }
        return true
    }
}

extension Change {
    /// This change followed by `next` (same entity): the state before this one to bring back, the
    /// state after `next` expected, and the typing of both; nil unless both typed into `field`.
    func absorbing(_ next: Change, field: String) -> Change? {
        guard var mine = texts[field], let theirs = next.texts[field], texts.count == 1, next.texts.count == 1 else { return nil }
        let typedHere = Set(mine.typed.flatMap { r in (0 ..< r.count).map { r.first.advanced(by: $0) } })
        mine.typed += theirs.typed
        // A backspace over this typing removes a character typed here: nothing to type back.
        mine.removed += theirs.removed.filter { !typedHere.contains($0.id) }
        var out = self
        out.expected = next.expected
        out.texts[field] = mine
        return out
    }
}
