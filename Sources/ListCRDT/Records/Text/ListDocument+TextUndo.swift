import Foundation

// Undo of typing by identity (Docs/Semantics.md §8.8): what a step typed is removed by the ids of
// its characters, and what it removed is typed again where those characters still stand (as
// removed ones), so others' typing in the same field, before, inside or after, stays.

/// One character of a text field, shown or removed (kept as a hidden slot until compaction).
public struct TextCharacter: Hashable, Sendable, CustomStringConvertible {
    /// The character's id (its operation's id plus its offset in that operation's run).
    public var id: OpID
    /// The character.
    public var scalar: Unicode.Scalar
    /// Whether the field shows it now.
    public var isShown: Bool

    /// Makes a character.
    public init(id: OpID, scalar: Unicode.Scalar, isShown: Bool) {
        self.id = id
        self.scalar = scalar
        self.isShown = isShown
    }

    public var description: String { "\(id) \(String(scalar).debugDescription)\(isShown ? "" : " (removed)")" }
}

extension ListDocument {
    /// The characters of `ranges` that text field `name` of `target` still holds, shown or
    /// removed (compaction drops removed ones), in text order. Ids the field does not hold are
    /// left out; an id named twice is listed once.
    ///
    /// - Complexity: O(k log n) for k ids in the ranges and n characters kept.
    public func textCharacters(_ name: String, of target: RecordTarget, in ranges: [TextRange]) -> [TextCharacter] {
        guard let text = records[target.opID]?[name]?.text else { return [] }
        var found: [(all: Int, character: TextCharacter)] = []
        var seen = Set<OpID>()
        for r in ranges {
            for k in 0 ..< r.count {
                let id = r.first.advanced(by: k)
                guard let lv = text.lv(of: id), seen.insert(id).inserted else { continue }
                let c = text.forest.locate(lv)
                found.append((text.forest.position(of: c).all,
                              TextCharacter(id: id, scalar: text.scalars[lv.int], isShown: text.forest.entry(c).isVisible)))
            }
        }
        return found.sorted { $0.all < $1.all }.map(\.character)
    }

    /// The edit that takes back typing and removals of text field `name` of `target` by
    /// identity: it removes the characters of `typed` the field still shows, and types the
    /// characters of `removed` (in that order) again right after the last of them the field
    /// still holds (a removed character). Others' characters are not touched, wherever they are.
    ///
    /// Returns nil for the edit when there is nothing to do; `unplaced` is how many characters of
    /// `removed` could not be typed again because compaction dropped every one of them (then
    /// none are).
    ///
    /// - Complexity: O(k log n) for k characters named.
    public func takeBackEdit(_ name: String, of target: RecordTarget, typed: [TextRange],
                                      removed: [TextCharacter]) -> (edit: TextEdit?, unplaced: Int) {
        guard records[target.opID]?[name]?.text != nil else { return (nil, removed.count) }
        var edit = TextEdit()
        // The shown characters typed, as ranges of consecutive ids.
        edit.deletes = TextRange.runs(of: textCharacters(name, of: target, in: typed).lazy.filter(\.isShown).map(\.id))
        var unplaced = 0
        if !removed.isEmpty {
            // Right after the last removed character the field still holds (a hidden slot), as a
            // keystroke there would go: older removals taken back later land before it, in order.
            let text = records[target.opID]![name]!.text!
            var held: LocalVersion?
            for c in removed.reversed() {
                if let lv = text.lv(of: c.id) { held = lv; break }
            }
            if let lv = held {
                var inserted = String.UnicodeScalarView()
                inserted.append(contentsOf: removed.map(\.scalar))
                edit.insert = String(inserted)
                // A keystroke's origins there (the shown character at or before it, and the one
                // that follows that), not the removed character itself: a device that did not
                // compact would name one its daemon's compaction dropped, and be refused
                // (`TextTakeBackAfterCompactionTests`).
                (edit.after, edit.before) = text.origins(typedAfter: text.slots.id(of: lv))
            } else {
                unplaced = removed.count
            }
        }
        return (edit.insert.isEmpty && edit.deletes.isEmpty ? nil : edit, unplaced)
    }
}
