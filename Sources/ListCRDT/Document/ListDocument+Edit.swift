import Foundation

/// Local edits. Each one checks its input, applies one operation, and returns that operation for
/// the caller to send to the other replicas. A thrown ``ListError`` means nothing changed.
extension ListDocument {
    // MARK: Sections

    /// Inserts a new section at `index` (`0...sectionCount`).
    ///
    /// - Complexity: O(log s).
    @discardableResult
    public mutating func insertSection(at index: Int, value: Data = Data()) throws(ListError) -> ListOperation {
        try checkValue(value)
        guard index >= 0, index <= sectionCount else { throw .sectionIndexOutOfRange(index, count: sectionCount) }
        let (left, right, after) = forest.localInsertion(Self.sectionTree, at: index, legacy: variant == .legacyOrigins)
        return try make(.insertSection(origins(left, right), value: value),
                        .insertSection(left: left, right: right, value: value), hint: .after(after))
    }

    /// Deletes the section at `index` and every item in it (SEMANTICS §3.5).
    ///
    /// - Complexity: O(k log n) for k items in the section.
    @discardableResult
    public mutating func deleteSection(at index: Int) throws(ListError) -> ListOperation {
        try deleteSection(SectionID(sections.rows[try sectionIndex(at: index).int].id))
    }

    /// Deletes a visible section and every item in it (SEMANTICS §3.5).
    ///
    /// - Complexity: O(k log n) for k items in the section.
    @discardableResult
    public mutating func deleteSection(_ id: SectionID) throws(ListError) -> ListOperation {
        let s = try visibleSection(id)
        var records: [ListOperation.SeenItem] = []
        var resolved: [(EntityIndex, OpID)] = []
        forEachVisible(in: tree(ofSequence: .items(s))) { lv in
            let i = slots.entity(of: lv)
            records.append(.init(item: ItemID(items.rows[i.int].id), seen: SlotID(slots.id(of: items.rows[i.int].winner))))
            resolved.append((i, items.winnerID(i)))
        }
        let seen = sections.winnerID(s)
        return try make(.deleteSection(id, seen: SlotID(slots.id(of: sections.rows[s.int].winner)), items: records),
                        .deleteSection(s, seen: seen, items: resolved))
    }

    /// Moves the section at `from` so that it ends up at `to` (both `0..<sectionCount`).
    /// Returns nil, and changes nothing, when `from == to`.
    ///
    /// - Complexity: O(log s).
    @discardableResult
    public mutating func moveSection(from: Int, to: Int) throws(ListError) -> ListOperation? {
        let s = try sectionIndex(at: from)
        guard to >= 0, to < sectionCount else { throw .sectionIndexOutOfRange(to, count: sectionCount) }
        if from == to { return nil }
        let (left, right) = forest.insertionOrigins(Self.sectionTree, at: to, skipping: [from],
                                                 legacy: variant == .legacyOrigins)
        return try make(.moveSection(SectionID(sections.rows[s.int].id), origins(left, right)),
                        .moveSection(s, left: left, right: right))
    }

    /// Writes the value of a visible section.
    @discardableResult
    public mutating func setValue(_ value: Data, forSection id: SectionID) throws(ListError) -> ListOperation {
        try checkValue(value)
        let s = try visibleSection(id)
        return try make(.setSectionValue(id, value), .setSectionValue(s, value))
    }

    // MARK: Items

    /// Inserts a new item at `indexPath` (row `0...itemCount(inSection:)`).
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func insertItem(at indexPath: IndexPath, value: Data = Data()) throws(ListError) -> ListOperation {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        return try insertItem(atRow: indexPath[1], inSection: indexPath[0], value: value)
    }

    /// Inserts a new item at row `row` (`0...itemCount(inSection:)`) of the visible section at
    /// `section`: ``insertItem(at:value:)`` without an `IndexPath` (whose accessors are calls
    /// into Foundation). Errors name the index path `[section, row]`.
    ///
    /// - Complexity: O(log n); O(1) apart from the counts on one tree path when it continues
    ///   this replica's previous insert (typing).
    @discardableResult
    public mutating func insertItem(atRow row: Int, inSection section: Int,
                                    value: Data = Data()) throws(ListError) -> ListOperation {
        try checkValue(value)
        if let op = continueTyping(section: section, row: row, value: value) { return op }
        let s = try sectionOfRow(section, row)
        let count = visibleItemCount(s)
        guard row >= 0, row <= count else { throw .indexPathOutOfRange(IndexPath(item: row, section: section), count: count) }
        let (left, right, after) = forest.localInsertion(tree(ofSequence: .items(s)), at: row, legacy: variant == .legacyOrigins)
        let op = try make(.insertItem(section: SectionID(sections.rows[s.int].id), origins(left, right), value: value),
                          .insertItem(section: s, left: left, right: right, value: value), hint: .after(after))
        startTyping(op, section: s, sectionIndex: section, row: row)
        return op
    }

    /// Deletes the item at `indexPath`.
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func deleteItem(at indexPath: IndexPath) throws(ListError) -> ListOperation {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        return try deleteItem(atRow: indexPath[1], inSection: indexPath[0])
    }

    /// Deletes the item at row `row` of the visible section at `section`: ``deleteItem(at:)``
    /// without an `IndexPath`. Errors name the index path `[section, row]`.
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func deleteItem(atRow row: Int, inSection section: Int) throws(ListError) -> ListOperation {
        if let op = continueDeleting(section: section, row: row) { return op }
        let (s, t) = try itemRow(section, row)
        let c = forest.findVisibleNear(t, row)
        let op = try deleteItem(entity: slots.entity(of: forest.lv(at: c)), at: c)
        startDeleting(op, section: s, sectionIndex: section)
        return op
    }

    /// Deletes a visible item.
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func deleteItem(_ id: ItemID) throws(ListError) -> ListOperation {
        try deleteItem(entity: try liveItem(id))
    }

    /// Deletes the live item with dense index `i` (whose winning slot is at `c`, when known).
    private mutating func deleteItem(entity i: EntityIndex, at c: SlotForest.Cursor? = nil) throws(ListError) -> ListOperation {
        let id = ItemID(items.rows[i.int].id)
        let seen = items.winnerID(i)
        let lv = items.rows[i.int].winner
        return try make(.deleteItem(id, seen: SlotID(slots.id(of: lv))), .deleteItem(i, seen: seen, slot: lv),
                        hint: c.map { .slot($0) })
    }

    /// Moves the item at `from` to `to`, with the meaning of UITableView's
    /// `tableView(_:moveRowAt:to:)`: `to` is where the row is after the move. Within a section,
    /// `to.item` is in `0..<count`; into another section, in `0...count` of that section.
    /// Returns nil, and changes nothing, when `from == to`.
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func moveItem(from: IndexPath, to: IndexPath) throws(ListError) -> ListOperation? {
        let (fromTree, fromRow) = try itemRow(from)
        let fromCursor = forest.findVisibleNear(fromTree, fromRow)
        let i = slots.entity(of: forest.lv(at: fromCursor))
        let (s, row) = try rowAddress(to)
        let t = tree(ofSequence: .items(s))
        let sameSection = t == fromTree
        let limit = visibleItemCount(s) - (sameSection ? 1 : 0)
        guard row >= 0, row <= limit else { throw .indexPathOutOfRange(to, count: limit + (sameSection ? 1 : 0)) }
        if from == to { return nil }
        if variant != .correct { return try moveItems([i], section: s, row: row) }
        // One item whose row is known: the destination counts rows without it, so a row at or after
        // its own is one further on in the tree (and the visible slot before the insertion point,
        // the left origin, is never the item itself). The new slot goes right after its left
        // origin, with no search (as a local insert; see `SlotForest.localInsertion`).
        let (left, right, after) = forest.localInsertion(t, at: sameSection && fromRow <= row ? row + 1 : row)
        return try make(.moveItems(ItemIDList(one: ItemID(items.rows[i.int].id)), section: SectionID(sections.rows[s.int].id),
                                   origins(left, right)),
                        .moveItem(i, section: s, left: left, right: right), hint: .after(after))
    }

    /// Moves a visible item so that it is at `to` afterwards (as ``moveItem(from:to:)``).
    /// Returns nil when it is there already.
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public mutating func moveItem(_ id: ItemID, to: IndexPath) throws(ListError) -> ListOperation? {
        _ = try liveItem(id)
        return try moveItem(from: indexPath(of: id)!, to: to)
    }

    /// Moves a selection of visible items so that they stand together, in the given order,
    /// starting at `to`. `to.item` counts rows of the destination section without the selection
    /// (`0...count - selected items in it`). One operation, whatever the number of items.
    ///
    /// - Complexity: O(k log n) for k items.
    @discardableResult
    public mutating func moveItems(_ ids: [ItemID], to: IndexPath) throws(ListError) -> ListOperation {
        guard !ids.isEmpty else { throw .invalidSelection("the selection is empty") }
        guard Set(ids).count == ids.count else { throw .invalidSelection("an item is selected twice") }
        var list: [EntityIndex] = []
        for id in ids { list.append(try liveItem(id)) }
        let (s, row) = try rowAddress(to)
        let inside = list.filter { items.rows[$0.int].section == s }.count
        let limit = visibleItemCount(s) - inside
        guard row >= 0, row <= limit else { throw .indexPathOutOfRange(to, count: limit) }
        return try moveItems(list, section: s, row: row)
    }

    /// Writes the value of a visible item.
    @discardableResult
    public mutating func setValue(_ value: Data, forItem id: ItemID) throws(ListError) -> ListOperation {
        try checkValue(value)
        let i = try liveItem(id)
        return try make(.setItemValue(id, value), .setItemValue(i, value))
    }

    // MARK: Helpers

    private mutating func moveItems(_ list: [EntityIndex], section s: EntityIndex, row: Int) throws(ListError) -> ListOperation {
        if variant == .moveAsDeleteAndInsert {
            // Broken on purpose: delete every item, then insert copies with new identities.
            let values = list.map { items.value($0) }
            for i in list { try deleteItem(ItemID(items.rows[i.int].id)) }
            let sectionIndex = visiblePosition(ofSlot: sections.rows[s.int].winner)
            var last: ListOperation?
            for (k, v) in values.enumerated() { last = try insertItem(at: IndexPath(item: row + k, section: sectionIndex), value: v) }
            return last!
        }
        var skipped: [Int] = []
        for i in list where items.rows[i.int].section == s {
            skipped.append(visiblePosition(ofSlot: items.rows[i.int].winner))
        }
        let (left, right) = forest.insertionOrigins(tree(ofSequence: .items(s)), at: row, skipping: skipped,
                                                 legacy: variant == .legacyOrigins)
        let ids = ItemIDList(list.map { ItemID(items.rows[$0.int].id) })
        return try make(.moveItems(ids, section: SectionID(sections.rows[s.int].id), origins(left, right)),
                        .moveItems(list, section: s, left: left, right: right))
    }

    @inline(__always)
    func origins(_ left: LocalVersion, _ right: LocalVersion) -> ListOperation.Origins {
        ListOperation.Origins(after: left.exists ? SlotID(slots.id(of: left)) : nil,
                          before: right.exists ? SlotID(slots.id(of: right)) : nil)
    }

    /// Stamps and applies a local operation.
    mutating func make(_ kind: ListOperation.Kind, _ resolved: ResolvedOperation,
                               hint: EditHint? = nil) throws(ListError) -> ListOperation {
        let op = ListOperation(id: OpID(counter: clock + (skipsCounter ? 2 : 1), replica: replica), deps: currentFrontier, kind: kind)
        guard op.lastID.counter <= OpID.maxCounter else { throw .counterOverflow }
        commit(op, resolved, hint: hint)
        skipsCounter = false
        return op
    }

    @inline(__always)
    private func checkValue(_ value: Data) throws(ListError) {
        if value.count > maxValueSize { throw .valueTooLarge(size: value.count, limit: maxValueSize) }
    }

    @inline(__always)
    private func liveItem(_ id: ItemID) throws(ListError) -> EntityIndex {
        guard let i = itemEntity(id) else { throw .unknownItem(id) }
        guard items.isAlive(i) else { throw .itemDeleted(id) }
        return i
    }

    @inline(__always)
    private func visibleSection(_ id: SectionID) throws(ListError) -> EntityIndex {
        guard let s = sectionEntity(id) else { throw .unknownSection(id) }
        guard isSectionVisible(s) else { throw .sectionDeleted(id) }
        return s
    }
}
