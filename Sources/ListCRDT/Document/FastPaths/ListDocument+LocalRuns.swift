import Foundation

/// Where this replica's last local item insert went, so that the next insert right after it (the
/// next character typed) takes a short path. Valid while the log has not grown since: then
/// nothing at all changed in the document, so the item is still at `row` of section `section`.
struct LocalInsertRun: Sendable {
    /// The log's operation count right after the insert.
    var logCount: Int
    var section: EntityIndex
    /// The section's visible index (its index path's `section`).
    var sectionIndex: Int
    var row: Int
    /// The id of the insert, which is the id of its item and slot.
    var id: OpID
    /// The cursor of its slot, which ends its tree entry (a new slot always does).
    var cursor: SlotForest.Cursor
    /// The insert's right origin.
    var right: SlotID?
}

/// Local typing: an insert right after this replica's previous insert, with nothing in between.
extension ListDocument {
    /// Called by a local item insert at row `newRow` of visible section `section` once its value is
    /// checked: when it continues the typed run (``localInsertRun`` is current and the row is the one right
    /// after its item, in its section), applies it and returns the operation; else returns nil and
    /// changes nothing. The row needs no other check: the previous insert's row is still there.
    ///
    /// The result is what the general path would do, found without searching: the left origin is
    /// the previous insert's slot, the right origin is the previous insert's right origin (the
    /// previous slot went right before it, and nothing came in between), the new slot extends the
    /// previous slot's tree entry, slot run, log record and id run, and the operation depends on
    /// exactly the previous insert (the frontier is `{previous}`). The section is visible already.
    ///
    /// - Complexity: O(log n) for the counts on the tree path; no search.
    @inline(__always)
    mutating func continueTyping(section: Int, row newRow: Int, value: Data) -> ListOperation? {
        guard let run = localInsertRun, run.logCount == log.count, section == run.sectionIndex, newRow == run.row + 1,
              fastPathsEnabled, clock == run.id.counter, run.id.counter < OpID.maxCounter
        else { return nil }
        let s = run.section, row = run.row + 1
        // The tree entry first: when it is full, the general path takes this insert.
        guard let cursor = forest.extend(run.cursor, with: LocalVersion(slots.count)) else { return nil }
        let id = OpID(counter: run.id.counter + 1, replica: replica)
        let i = EntityIndex(items.count)
        let lv = slots.appendContinuingLast(entity: i)
        _ = items.append(id: id, slot: lv, value: value, section: s)
        advance(from: run.id, to: id)
        log.extendInsertRun(by: 1)
        // In place: the section and the right origin stay.
        localInsertRun!.logCount = log.count
        localInsertRun!.row = row
        localInsertRun!.id = id
        localInsertRun!.cursor = cursor
        return ListOperation(id: id, deps: Frontier(only: run.id),
                             kind: .insertItem(section: SectionID(sections.rows[s.int].id),
                                               .init(after: SlotID(run.id), before: run.right), value: value))
    }

    /// Records the local item insert `op`, just applied at `row` of section `s` (visible index
    /// `sectionIndex`) by the general path, as the start of a typed run.
    ///
    /// - Complexity: O(leafCapacity).
    mutating func startTyping(_ op: ListOperation, section s: EntityIndex, sectionIndex: Int, row: Int) {
        guard fastPathsEnabled,
              case let .insertItem(_, origins, _) = op.kind else { return }
        let lv = LocalVersion(slots.count - 1)
        localInsertRun = LocalInsertRun(logCount: log.count, section: s, sectionIndex: sectionIndex, row: row, id: op.id,
                           cursor: forest.locate(lv), right: origins.before)
    }
}

/// This replica's last local item delete, so that the next delete right after it (a backspace or
/// a forward delete of a run) takes a short path. Valid while the log has not grown since.
struct LocalDeleteRun: Sendable {
    /// The log's operation count right after the delete.
    var logCount: Int
    /// The section of the deleted item, its visible index and its tree.
    var section: EntityIndex
    var sectionIndex: Int
    var tree: Int32
    /// The id of the delete.
    var id: OpID
}

/// Local deleting: an item delete right after this replica's previous item delete, in the same
/// section, with nothing in between.
extension ListDocument {
    /// Called by a local item delete at row `row` of visible section `sectionIndex`: when it
    /// continues the delete run (``localDeleteRun`` is current and the section is the previous delete's),
    /// applies it and returns the operation; else returns nil and changes nothing (also when the
    /// row is out of range: the general path then throws).
    ///
    /// The result is what the general path would do, with less work: the operation depends on
    /// exactly the previous delete (the frontier is `{previous}`), extends its log record, and the
    /// item's slot is its winning slot (it is visible), so the delete saw the item's winning write.
    ///
    /// - Complexity: O(log n) for the search and the counts on the tree path.
    @inline(__always)
    mutating func continueDeleting(section sectionIndex: Int, row: Int) -> ListOperation? {
        guard let run = localDeleteRun, run.logCount == log.count, sectionIndex == run.sectionIndex,
              fastPathsEnabled, clock == run.id.counter, run.id.counter < OpID.maxCounter,
              row >= 0, row < forest.visibleCount(run.tree)
        else { return nil }
        let c = forest.findVisibleNear(run.tree, row)
        let lv = forest.lv(at: c)
        let i = slots.entity(of: lv)
        let item = items.rows[i.int]
        let died = raiseDeleted(i, seen: items.winnerID(i))
        assert(died && item.winner == lv, "a visible slot that does not show a live item")
        forest.flip(at: c, count: 1)
        // This may hide the section (a concurrently deleted one shows while it has items, §3.5);
        // the visible indexes of the sections after it then move down, but the run cannot go on
        // in the hidden section: its tree has no visible slot left, so the row check above fails.
        refreshSection(run.section)
        log.extendDeleteRun(seenOne: lv)
        let id = OpID(counter: run.id.counter + 1, replica: replica)
        advance(from: run.id, to: id)
        localDeleteRun!.logCount = log.count
        localDeleteRun!.id = id
        return ListOperation(id: id, deps: Frontier(only: run.id),
                             kind: .deleteItem(ItemID(item.id), seen: SlotID(slots.id(of: lv))))
    }

    /// Records the local item delete `op`, just applied by the general path to an item of section
    /// `s` (visible index `sectionIndex`), as the start of a delete run.
    mutating func startDeleting(_ op: ListOperation, section s: EntityIndex, sectionIndex: Int) {
        guard fastPathsEnabled else { return }
        localDeleteRun = LocalDeleteRun(logCount: log.count, section: s, sectionIndex: sectionIndex, tree: tree(ofSequence: .items(s)), id: op.id)
    }
}
