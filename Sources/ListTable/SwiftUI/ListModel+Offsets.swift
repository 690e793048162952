import Foundation
import ListCRDT

/// SwiftUI's conventions: `onMove` and `onDelete` forward their arguments unchanged.
///
/// Offsets count what the model shows (``ListModel/sections`` and their items), which is what
/// SwiftUI showed; they are turned into identities at once, and the edit is applied to the document
/// as it is now (see ``ListModel``). An empty offset set is a no-op, as for `Array`: it returns no
/// operation and changes nothing. Bad offsets throw, changing nothing.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension ListModel {
    // MARK: Items

    /// Moves the items at `source` in the section `section` so that they stand together, in their
    /// order, at `destination`: the meaning of `Array.move(fromOffsets:toOffset:)`, with
    /// `destination` counted in the section's rows *before* the move (`0...count`). For
    /// `ForEach(section.items) { … }.onMove { model.moveItems(fromOffsets: $0, toOffset: $1, inSection: section.id) }`.
    ///
    /// One operation, whatever the number of items (``ListDocument/moveItems(_:to:)``): other
    /// replicas see the items land together, and a concurrent move of one of them is decided
    /// against that one operation. The rows land between the neighbours the user saw, in the
    /// document as it is now; rows deleted by another replica meanwhile are left out (none left:
    /// no operation). A move that leaves the rows where they are returns no operation.
    ///
    /// - Returns: the operation to send (none, or one).
    /// - Throws: ``ListModelError/sectionNotShown(_:)``, ``ListModelError/offsetOutOfRange(_:count:)``,
    ///   ``ListModelError/destinationOutOfRange(_:count:)``; ``ListModelError/document(_:)`` when
    ///   the document refuses (the section was deleted meanwhile by another replica).
    /// - Complexity: O(k + m log n) for k rows in the section, m moved, n in the document, plus a
    ///   refresh (see ``ListModel``).
    @discardableResult
    public func moveItems(fromOffsets source: IndexSet, toOffset destination: Int,
                          inSection section: SectionID) throws(ListModelError) -> [ListOperation] {
        let rows = try shownItemIDs(in: section)
        try Self.check(source, count: rows.count)
        try Self.checkDestination(destination, count: rows.count)
        if Self.leavesInPlace(source, destination) { return [] }
        return try moveShown(source.map { rows[$0] }, toOffset: destination, inSection: section, shown: rows)
    }

    /// Deletes the items at `offsets` of the section `section`: the meaning of
    /// `Array.remove(atOffsets:)`. For `.onDelete { model.deleteItems(atOffsets: $0, inSection: section.id) }`.
    ///
    /// One operation per item (the engine has no multi-item delete), made in one all-or-nothing
    /// edit and sent together. Items deleted by another replica meanwhile are skipped; an item moved
    /// meanwhile is deleted where it is.
    ///
    /// - Returns: the operations to send, one per item still alive.
    /// - Throws: ``ListModelError/sectionNotShown(_:)``, ``ListModelError/offsetOutOfRange(_:count:)``.
    /// - Complexity: O(m log n) for m items, plus a refresh.
    @discardableResult
    public func deleteItems(atOffsets offsets: IndexSet, inSection section: SectionID) throws(ListModelError) -> [ListOperation] {
        let rows = try shownItemIDs(in: section)
        try Self.check(offsets, count: rows.count)
        if offsets.isEmpty { return [] }
        let ids = offsets.map { rows[$0] }
        return try perform { (doc) throws(ListModelError) in
            for id in ids where doc.contains(id) {
                try Self.attempt { () throws(ListError) in _ = try doc.deleteItem(id) }
            }
        }.operations
    }

    // MARK: Sections

    /// Moves the sections at `source` so that they stand together, in their order, at
    /// `destination`: the meaning of `Array.move(fromOffsets:toOffset:)`, with `destination`
    /// counted in the sections shown *before* the move (`0...count`).
    ///
    /// The engine moves one section per operation, so this is one operation per section that is
    /// not already in place, made in one all-or-nothing edit and sent together: the other replicas
    /// receive them in one batch. A concurrent move of one of those sections by another replica is
    /// decided section by section, so it can take that section out of the block (the others stay
    /// together). Sections deleted by another replica meanwhile are left out.
    ///
    /// - Returns: the operations to send (none when the sections stay in place).
    /// - Throws: ``ListModelError/offsetOutOfRange(_:count:)``,
    ///   ``ListModelError/destinationOutOfRange(_:count:)``.
    /// - Complexity: O(m s) for m moved sections and s sections, plus a refresh.
    @discardableResult
    public func moveSections(fromOffsets source: IndexSet, toOffset destination: Int) throws(ListModelError) -> [ListOperation] {
        let shown = snapshot.sections.map(\.id)
        try Self.check(source, count: shown.count)
        try Self.checkDestination(destination, count: shown.count)
        if Self.leavesInPlace(source, destination) { return [] }
        let ids = source.map { shown[$0] }
        let moving = Set(ids)
        let point = InsertionPoint(offset: destination, in: shown, moving: moving)
        return try perform { (doc) throws(ListModelError) in
            let alive = ids.filter { doc.contains($0) }
            if alive.isEmpty { return }
            var order = doc.sectionIDs
            let staying = order.filter { !moving.contains($0) }
            let p = point.position(in: staying)
            // Each section goes right after the one before it in the block; the first right after
            // the section that stays above the block (or at the top). The sections that stay keep
            // their order, and nothing comes between two sections of the block.
            var previous: SectionID? = p == 0 ? nil : staying[p - 1]
            for id in alive {
                guard let from = order.firstIndex(of: id) else { preconditionFailure("\(id) is visible") }
                order.remove(at: from)
                let to = previous.map { order.firstIndex(of: $0)! + 1 } ?? 0
                order.insert(id, at: to)
                try Self.attempt { () throws(ListError) in _ = try doc.moveSection(from: from, to: to) }
                previous = id
            }
            assert(order == Array(staying[..<p]) + alive + Array(staying[p...]) && doc.sectionIDs == order)
        }.operations
    }

    /// Deletes the sections at `offsets`, each with its items: the meaning of
    /// `Array.remove(atOffsets:)`. One operation per section (SEMANTICS §3.5: items another
    /// replica adds to it concurrently survive), made in one all-or-nothing edit.
    ///
    /// - Returns: the operations to send, one per section still visible.
    /// - Throws: ``ListModelError/offsetOutOfRange(_:count:)``.
    /// - Complexity: O(k log n) for k items in those sections, plus a refresh.
    @discardableResult
    public func deleteSections(atOffsets offsets: IndexSet) throws(ListModelError) -> [ListOperation] {
        let shown = snapshot.sections
        try Self.check(offsets, count: shown.count)
        if offsets.isEmpty { return [] }
        let ids = offsets.map { shown[$0].id }
        return try perform { (doc) throws(ListModelError) in
            for id in ids where doc.contains(id) {
                try Self.attempt { () throws(ListError) in _ = try doc.deleteSection(id) }
            }
        }.operations
    }

    // MARK: Helpers

    /// The identities of the items the model shows in `section`, in order.
    func shownItemIDs(in section: SectionID) throws(ListModelError) -> [ItemID] {
        guard let entry = snapshot.section(section) else { throw .sectionNotShown(section) }
        return entry.items.map(\.id)
    }

    /// Moves `ids` (shown by the model, in that order) to the insertion point `offset` of `shown`,
    /// the rows the model shows in `section`; by identity in the document as it is now.
    func moveShown(_ ids: [ItemID], toOffset offset: Int, inSection section: SectionID,
                   shown: [ItemID]) throws(ListModelError) -> [ListOperation] {
        let moving = Set(ids)
        assert(moving.count == ids.count, "a selection names each item once")
        let point = InsertionPoint(offset: offset, in: shown, moving: moving)
        return try perform { (doc) throws(ListModelError) in
            guard let s = doc.index(of: section) else { throw .document(.sectionDeleted(section)) }
            let alive = ids.filter { doc.contains($0) }
            if alive.isEmpty { return }
            let staying = try Self.attempt { () throws(ListError) in try doc.itemIDs(inSection: s) }.filter { !moving.contains($0) }
            let row = point.position(in: staying)
            try Self.attempt { () throws(ListError) in _ = try doc.moveItems(alive, to: IndexPath(item: row, section: s)) }
            assert((try? doc.itemIDs(inSection: s)) == Array(staying[..<row]) + alive + Array(staying[row...]))
        }.operations
    }

    /// Checks that every offset is in `0..<count`.
    static func check(_ offsets: IndexSet, count: Int) throws(ListModelError) {
        if let first = offsets.first, first < 0 { throw .offsetOutOfRange(first, count: count) }
        if let last = offsets.last, last >= count { throw .offsetOutOfRange(last, count: count) }
    }

    /// Checks that a destination is in `0...count`.
    static func checkDestination(_ destination: Int, count: Int) throws(ListModelError) {
        guard destination >= 0, destination <= count else { throw .destinationOutOfRange(destination, count: count) }
    }

    /// Whether `Array.move(fromOffsets: source, toOffset: destination)` leaves the array as it
    /// was: no offsets, or one contiguous run moved to its own start or end.
    static func leavesInPlace(_ source: IndexSet, _ destination: Int) -> Bool {
        guard let first = source.first, let last = source.last else { return true }
        return source.count == last - first + 1 && first <= destination && destination <= last + 1
    }
}
