import Foundation

// A person's caret or selection in a text field, by identity, to publish as presence
// (`PresenceActivity.editing`, Docs/Text.md "Carets").
extension ListDocument {
    /// The caret or selection `selection` (positions in Unicode scalars, `lowerBound` the fixed
    /// end unless `headFirst`) in text field `name` of an item, held by identity: each end by the
    /// character on its left, so text others type at an end goes after it, as theirs.
    /// Nil when the field is not text or the range is outside it.
    ///
    /// - Complexity: O(log n) for n characters kept.
    public func caret(_ name: String, ofItem item: ItemID, selection: Range<Int>, headFirst: Bool = false) -> TextCaret? {
        caret(name, target: .item(item), selection: selection, headFirst: headFirst) { anchor(name, ofItem: item, at: $0, side: .after) }
    }

    /// ``caret(_:ofItem:selection:headFirst:)`` for a text field of a section.
    public func caret(_ name: String, ofSection section: SectionID, selection: Range<Int>, headFirst: Bool = false) -> TextCaret? {
        caret(name, target: .section(section), selection: selection, headFirst: headFirst) { anchor(name, ofSection: section, at: $0, side: .after) }
    }

    /// ``caret(_:ofItem:selection:headFirst:)`` or ``caret(_:ofSection:selection:headFirst:)``,
    /// as `target` names.
    public func caret(_ name: String, of target: RecordTarget, selection: Range<Int>, headFirst: Bool = false) -> TextCaret? {
        switch target {
        case .item(let id): caret(name, ofItem: id, selection: selection, headFirst: headFirst)
        case .section(let id): caret(name, ofSection: id, selection: selection, headFirst: headFirst)
        }
    }

    private func caret(_ name: String, target: RecordTarget, selection: Range<Int>, headFirst: Bool,
                       anchor: (Int) -> TextAnchor?) -> TextCaret? {
        guard let low = anchor(selection.lowerBound), let high = selection.isEmpty ? low : anchor(selection.upperBound) else { return nil }
        return headFirst ? TextCaret(target: target, field: name, anchor: high, head: low)
                         : TextCaret(target: target, field: name, anchor: low, head: high)
    }
}
