import Foundation
@testable import ListCRDT
import ListTable

/// Applies a ``ChangeSet`` to the snapshot a table shows, the way `UITableView.performBatchUpdates`
/// does, and refuses what UIKit refuses (it raises `NSInternalInconsistencyException`).
///
/// The rules modelled (UIKit's, as documented in "Batch Insertion, Deletion, and Reloading of Rows
/// and Sections" of the Table View Programming Guide and observed behaviour):
/// - section deletes, reloads and move sources are old indexes; inserts and move destinations new;
/// - row deletes, reloads and move sources are old index paths; inserts and move destinations new;
/// - no old position is deleted, moved or reloaded twice, or by two of these at once; no new
///   position receives two inserts or moves;
/// - rows of deleted or reloaded sections are not touched individually; nothing is inserted or
///   moved into an inserted or reloaded section;
/// - after the update, each section's row count must equal the old count − deletes − moves out +
///   inserts + moves in, and the section count old − deletes + inserts; both must equal what the
///   data source (`dataSource`, the new snapshot) reports ("invalid number of rows in section");
/// - positions not named by an insert or a move destination are filled by the surviving rows
///   (or sections) in their old order;
/// - inserted and reloaded rows and sections are drawn from the data source at their new position;
///   everything else keeps what it showed (its identity and old value).
/// After the batch, ``ChangeSet/reconfiguredItems`` and ``ChangeSet/reconfiguredSections`` are
/// refreshed from the data source at their (new) positions.
struct BatchUpdateApplier {
    struct Rejection: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    private enum SectionSource { case old(Int), fromDataSource(Int?) }   // Int?: reloaded old index
    private enum RowSource { case old(section: Int, row: Int), inserted }

    static func apply(_ c: ChangeSet, to old: ListSnapshot, dataSource new: ListSnapshot) throws -> ListSnapshot {
        if c.reloadsData {
            // `reloadData()`: the table shows the data source; nothing else may come with it.
            var rest = c
            rest.reloadsData = false
            rest.lostMoves = []
            if !rest.isEmpty { throw Rejection("a reload with row or section changes besides") }
            return new
        }
        let oldCount = old.sections.count
        func checkUnique<T: Hashable>(_ xs: [T], _ what: String) throws {
            if Set(xs).count != xs.count { throw Rejection("\(what) names a position twice") }
        }
        // Sections.
        for i in c.deletedSections where i >= oldCount { throw Rejection("delete of section \(i) of \(oldCount)") }
        for i in c.reloadedSections where i >= oldCount { throw Rejection("reload of section \(i) of \(oldCount)") }
        try checkUnique(c.movedSections.map(\.from), "section moves")
        try checkUnique(c.movedSections.map(\.to), "section moves")
        var movedFrom = Set<Int>()
        for m in c.movedSections {
            if m.from < 0 || m.from >= oldCount { throw Rejection("move of section \(m.from) of \(oldCount)") }
            if c.deletedSections.contains(m.from) { throw Rejection("section \(m.from) deleted and moved") }
            if c.reloadedSections.contains(m.from) { throw Rejection("section \(m.from) reloaded and moved") }
            movedFrom.insert(m.from)
        }
        if !c.reloadedSections.intersection(c.deletedSections).isEmpty { throw Rejection("section deleted and reloaded") }
        let newCount = oldCount - c.deletedSections.count + c.insertedSections.count
        if newCount != new.sections.count {
            throw Rejection("invalid number of sections: \(newCount) after the update, data source has \(new.sections.count)")
        }
        var sectionSlots = [SectionSource?](repeating: nil, count: newCount)
        for j in c.insertedSections {
            if j >= newCount { throw Rejection("insert of section \(j) of \(newCount)") }
            sectionSlots[j] = .fromDataSource(nil)
        }
        for m in c.movedSections {
            if m.to < 0 || m.to >= newCount { throw Rejection("move to section \(m.to) of \(newCount)") }
            if sectionSlots[m.to] != nil { throw Rejection("section \(m.to) inserted and moved to") }
            sectionSlots[m.to] = .old(m.from)
        }
        var fill = 0
        for i in 0..<oldCount where !c.deletedSections.contains(i) && !movedFrom.contains(i) {
            while sectionSlots[fill] != nil { fill += 1 }
            sectionSlots[fill] = c.reloadedSections.contains(i) ? .fromDataSource(i) : .old(i)
        }
        var newIndexOfOld = [Int?](repeating: nil, count: oldCount)
        var rowsFrozen = Set<Int>()   // new indexes whose rows come from the data source
        for (j, slot) in sectionSlots.enumerated() {
            switch slot! {
            case .old(let i): newIndexOfOld[i] = j
            case .fromDataSource(let i):
                rowsFrozen.insert(j)
                if let i { newIndexOfOld[i] = j }
            }
        }

        // Rows: validate old positions.
        func checkOld(_ p: IndexPath, _ what: String) throws {
            guard p.count == 2, p.section >= 0, p.section < oldCount, p.item >= 0,
                  p.item < old.sections[p.section].items.count else { throw Rejection("\(what) at old \(Array(p)) out of range") }
            if c.deletedSections.contains(p.section) { throw Rejection("\(what) of a row of deleted section \(p.section)") }
            if c.reloadedSections.contains(p.section) { throw Rejection("\(what) of a row of reloaded section \(p.section)") }
        }
        let oldTouched = c.deletedItems + c.reloadedItems + c.movedItems.map(\.from)
        try checkUnique(oldTouched, "row deletes, reloads and move sources")
        for p in c.deletedItems { try checkOld(p, "delete") }
        for p in c.reloadedItems { try checkOld(p, "reload") }
        for m in c.movedItems { try checkOld(m.from, "move") }
        let newTouched = c.insertedItems + c.movedItems.map(\.to)
        try checkUnique(newTouched, "row inserts and move destinations")
        for p in newTouched {
            guard p.count == 2, p.section >= 0, p.section < newCount else { throw Rejection("new \(Array(p)) out of range") }
            if rowsFrozen.contains(p.section) { throw Rejection("row change into inserted or reloaded section \(p.section)") }
        }

        // Rows: build each section.
        let deleted = Set(c.deletedItems), reloaded = Set(c.reloadedItems)
        let movedOut = Set(c.movedItems.map(\.from))
        var explicit: [Int: [Int: RowSource]] = [:]
        for p in c.insertedItems { explicit[p.section, default: [:]][p.item] = .inserted }
        for m in c.movedItems { explicit[m.to.section, default: [:]][m.to.item] = .old(section: m.from.section, row: m.from.item) }
        var result: [ListSnapshot.Section] = []
        for (j, slot) in sectionSlots.enumerated() {
            guard case .old(let i) = slot! else {
                // Inserted or reloaded: drawn from the data source (a reload keeps its identity).
                var s = new.sections[j]
                if case .fromDataSource(let r?) = slot! { s.id = old.sections[r].id }
                result.append(s)
                continue
            }
            let oldItems = old.sections[i].items
            let survivors = oldItems.indices.filter { !deleted.contains(IndexPath(item: $0, section: i)) && !movedOut.contains(IndexPath(item: $0, section: i)) }
            let named = explicit[j] ?? [:]
            let count = survivors.count + named.count
            if count != new.sections[j].items.count {
                throw Rejection("invalid number of rows in section \(j): \(count) after the update, data source has \(new.sections[j].items.count)")
            }
            var rows = [ListSnapshot.Item?](repeating: nil, count: count)
            for (r, source) in named {
                if r < 0 || r >= count { throw Rejection("row \(r) of section \(j) out of range \(count)") }
                switch source {
                case .inserted: rows[r] = new.sections[j].items[r]
                case .old(let si, let sr): rows[r] = old.sections[si].items[sr]
                }
            }
            var k = 0
            for row in survivors {
                while rows[k] != nil { k += 1 }
                var item = oldItems[row]
                if reloaded.contains(IndexPath(item: row, section: i)) { item.value = new.sections[j].items[k].value }
                rows[k] = item
            }
            result.append(ListSnapshot.Section(id: old.sections[i].id, value: old.sections[i].value, items: rows.map { $0! }))
        }

        // After the batch: reconfigure in place (new positions).
        try checkUnique(c.reconfiguredItems, "reconfigured rows")
        for p in c.reconfiguredItems {
            guard p.count == 2, p.section < result.count, p.item < result[p.section].items.count else {
                throw Rejection("reconfigure of \(Array(p)) out of range")
            }
            result[p.section].items[p.item].value = new.sections[p.section].items[p.item].value
        }
        for j in c.reconfiguredSections {
            guard j < result.count else { throw Rejection("reconfigure of section \(j) out of range") }
            result[j].value = new.sections[j].value
        }
        return ListSnapshot(sections: result)
    }
}
