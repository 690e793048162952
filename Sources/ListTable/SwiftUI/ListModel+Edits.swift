import Foundation
import ListCRDT

/// Moves by index path or by identity (drag and drop between sections), inserts and value writes.
///
/// Positions count what the model shows and are resolved by identity in the document as it is now
/// (see ``ListModel``); values are encoded with ``ListModel/coder`` before the document is touched.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension ListModel {
    // MARK: Moves

    /// Moves the item at `from` to `to`, with the meaning of UITableView's
    /// `tableView(_:moveRowAt:to:)` (as ``ListDocument/moveItem(from:to:)``): `to` is where the row
    /// is after the move; within a section `to.item` is in `0..<count`, into another section in
    /// `0...count` of that section. Both count the rows the model shows; the row lands between the
    /// neighbours the user saw there.
    ///
    /// - Returns: the operation to send; none when `from == to`, or when the item was deleted by
    ///   another replica meanwhile.
    /// - Throws: ``ListModelError/indexPathOutOfRange(_:count:)``; ``ListModelError/document(_:)``
    ///   when the destination section was deleted meanwhile.
    /// - Complexity: O(k + log n) for k rows in the destination section, plus a refresh.
    @discardableResult
    public func moveItem(from: IndexPath, to: IndexPath) throws(ListModelError) -> [ListOperation] {
        let item = try shownItem(at: from)
        let sections = snapshot.sections
        guard to.count == 2, sections.indices.contains(to[0]) else { throw .indexPathOutOfRange(to, count: 0) }
        let destination = sections[to[0]]
        let sameSection = from[0] == to[0]
        let limit = destination.items.count - (sameSection ? 1 : 0)
        guard to[1] >= 0, to[1] <= limit else { throw .indexPathOutOfRange(to, count: destination.items.count) }
        if from == to { return [] }
        // Where the row is after the move, as an offset in the rows before it.
        let offset = sameSection && to[1] > from[1] ? to[1] + 1 : to[1]
        return try moveShown([item.id], toOffset: offset, inSection: destination.id,
                             shown: destination.items.map(\.id))
    }

    /// Moves shown items, from any sections, so that they stand together in the given order at
    /// `offset` of `section`, counted in the rows the model shows there *before* the move (moved rows
    /// included, as `Array.move(fromOffsets:toOffset:)`'s destination): for a drop destination, or
    /// a multiple selection dragged to another section.
    ///
    /// One operation, whatever the number of items (see ``moveItems(fromOffsets:toOffset:inSection:)``).
    ///
    /// - Returns: the operation to send; none when the items already stand there in that order,
    ///   or when every one was deleted by another replica meanwhile.
    /// - Throws: ``ListModelError/invalidSelection(_:)`` for an empty selection or an item named
    ///   twice, ``ListModelError/itemNotShown(_:)``, ``ListModelError/sectionNotShown(_:)``,
    ///   ``ListModelError/destinationOutOfRange(_:count:)``; ``ListModelError/document(_:)``.
    /// - Complexity: O(k + m log n) for k rows in the section and m items, plus a refresh.
    @discardableResult
    public func moveItems(_ ids: [ItemID], toOffset offset: Int, inSection section: SectionID) throws(ListModelError) -> [ListOperation] {
        guard !ids.isEmpty else { throw .invalidSelection("the selection is empty") }
        guard Set(ids).count == ids.count else { throw .invalidSelection("an item is selected twice") }
        for id in ids where snapshot.indexPath(of: id) == nil { throw .itemNotShown(id) }
        let rows = try shownItemIDs(in: section)
        try Self.checkDestination(offset, count: rows.count)
        if let first = rows.firstIndex(of: ids[0]), first + ids.count <= rows.count,
           rows[first ..< first + ids.count].elementsEqual(ids), first <= offset, offset <= first + ids.count {
            return []
        }
        return try moveShown(ids, toOffset: offset, inSection: section, shown: rows)
    }

    // MARK: Inserts

    /// Inserts an item with `value` at `offset` (`0...count` of the rows the model shows in
    /// `section`), between the neighbours the user saw there, with one field per property in the
    /// insert (``TypedDocument/insertItem(_:at:)``; texts are typed after it, in the same undo
    /// group).
    ///
    /// - Returns: the insert; its id is the new item's (`ItemID(op.id)`).
    /// - Throws: ``ListModelError/encodingFailed(_:)``, ``ListModelError/sectionNotShown(_:)``,
    ///   ``ListModelError/destinationOutOfRange(_:count:)``; ``ListModelError/document(_:)``
    ///   (the section deleted meanwhile, a value over the size limit).
    /// - Complexity: O(k + log n) for k rows in the section, plus a refresh.
    @discardableResult
    public func insertItem(_ value: Item, at offset: Int, inSection section: SectionID) throws(ListModelError) -> ListOperation {
        let insert = try plan(value)
        let rows = try shownItemIDs(in: section)
        try Self.checkDestination(offset, count: rows.count)
        let point = InsertionPoint(offset: offset, in: rows, moving: [])
        return try perform { (doc) throws(ListModelError) -> ListOperation in
            guard let s = doc.index(of: section) else { throw .document(.sectionDeleted(section)) }
            let row = point.position(in: try Self.attempt { () throws(ListError) in try doc.itemIDs(inSection: s) })
            return try Self.attempt { () throws(ListError) in try insert.insertItem(at: IndexPath(item: row, section: s), in: &doc) }
        }.result
    }

    /// Inserts a section with `value` at `offset` (`0...count` of the sections the model shows),
    /// between the neighbours the user saw there, with one field per property in the insert
    /// (``TypedDocument/insertSection(_:at:)``).
    ///
    /// - Returns: the insert; its id is the new section's (`SectionID(op.id)`).
    /// - Throws: ``ListModelError/encodingFailed(_:)``, ``ListModelError/destinationOutOfRange(_:count:)``;
    ///   ``ListModelError/document(_:)``.
    /// - Complexity: O(s + log s) for s sections, plus a refresh.
    @discardableResult
    public func insertSection(_ value: Section, at offset: Int) throws(ListModelError) -> ListOperation {
        let insert = try plan(value)
        let shown = snapshot.sections.map(\.id)
        try Self.checkDestination(offset, count: shown.count)
        let point = InsertionPoint(offset: offset, in: shown, moving: [])
        return try perform { (doc) throws(ListModelError) -> ListOperation in
            let index = point.position(in: doc.sectionIDs)
            return try Self.attempt { () throws(ListError) in try insert.insertSection(at: index, in: &doc) }
        }.result
    }

    // MARK: Values

    /// Writes a visible item's properties that differ from what it shows now, as fields
    /// (``TypedDocument``, "Fields"): two devices that change different properties both keep
    /// their change. An `Item` that is no JSON object is written as a whole value.
    ///
    /// - Returns: the operations to send (none when nothing differs).
    /// - Throws: ``ListModelError/encodingFailed(_:)``; ``ListModelError/document(_:)`` (an unknown
    ///   or deleted item, a value over the size limit).
    /// - Complexity: one encode and one decode, O(f log n) for f fields written, plus a refresh.
    @discardableResult
    public func setValue(_ value: Item, forItem id: ItemID) throws(ListModelError) -> [ListOperation] {
        try write(value, to: .item(id))
    }

    /// Writes a visible section's properties that differ, as ``setValue(_:forItem:)``.
    ///
    /// - Returns: the operations to send.
    /// - Throws: ``ListModelError/encodingFailed(_:)``; ``ListModelError/document(_:)``.
    /// - Complexity: one encode and one decode, O(f log s), plus a refresh.
    @discardableResult
    public func setValue(_ value: Section, forSection id: SectionID) throws(ListModelError) -> [ListOperation] {
        try write(value, to: .section(id))
    }

    /// Writes `value`'s changed properties to `target` in one edit of the live document.
    func write<T: Codable & Sendable>(_ value: T, to target: RecordTarget) throws(ListModelError) -> [ListOperation] {
        let coder = self.coder
        return try perform { (doc) throws(ListModelError) -> [ListOperation] in
            do throws(FieldRecordCoding.WriteError) { return try FieldRecordCoding.write(value, to: target, in: &doc, coder: coder) } catch {
                switch error {
                case .encoding(let e): throw .encodingFailed(e)
                case .list(let e): throw .document(e)
                }
            }
        }.result
    }

    // MARK: Helpers

    /// The item the model shows at `path` (`[section, row]`).
    func shownItem(at path: IndexPath) throws(ListModelError) -> ItemEntry {
        do { return try snapshot.item(at: path) } catch {
            guard case let .indexPathOutOfRange(p, count) = error else { throw .document(error) }
            throw .indexPathOutOfRange(p, count: count)
        }
    }
}
