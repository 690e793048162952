import Foundation
import Testing
import ListSyncTestSupport
@testable import ListCRDT
import ListTable
import ListSyncSimulation

/// SEMANTICS §4: the deferred reorder model, one test per reorder style of the UIKit tutorials it
/// replaces, plus the table helpers and bad input.
@Suite("DragSession: the deferred reorder model")
struct DragSessionTests {
    static func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }
    private func ip(_ s: Int, _ r: Int) -> IndexPath { Self.ip(s, r) }

    /// The rows as the table shows them, asked the way a data source asks: counts per section,
    /// then for each row either the placeholder ("_") or the value at its data-source index path.
    static func shown(_ session: DragSession, _ doc: ListDocument) throws -> [[String]] {
        let snap = doc.snapshot()
        return try (0..<session.numberOfSections()).map { s in
            try (0..<session.numberOfRows(inSection: s)).map { r in
                if session.isPlaceholder(at: ip(s, r)) { return "_" }
                let p = try session.dataSourceIndexPath(forVisible: ip(s, r))
                return snap.sections[p.section].items[p.item].value.string
            }
        }
    }

    /// The array model of a drag: the rows with `item` taken out and a placeholder at `to`.
    static func model(_ rows: [[String]], lifting item: String, at to: IndexPath) -> [[String]] {
        var out = rows.map { $0.filter { $0 != item } }
        out[to.section].insert("_", at: to.item)
        return out
    }

    /// Drags the row at `from` through `hovers` and drops it, checking at each step that nothing
    /// is written and the table shows the model. Returns the dropped document and the op.
    @discardableResult
    func drag(_ doc: ListDocument, from: IndexPath, through hovers: [IndexPath],
              sourceLocation: SourceLocation = #_sourceLocation) throws -> (ListDocument, ListOperation?) {
        var doc = doc
        let state = doc.encodedState(), ops = doc.operationCount, rows = doc.rows
        let value = rows[from.section][from.item]
        var session = DragSession()
        try session.begin(at: from, in: doc)
        #expect(session.takeEvents() == [.willMove(items: [try doc.itemID(at: from)], at: from)], sourceLocation: sourceLocation)
        #expect(try Self.shown(session, doc) == rows.enumerated().map { s, r in r.enumerated().map { s == from.section && $0.offset == from.item ? "_" : $0.element } },
                sourceLocation: sourceLocation)
        var at = from
        for hover in hovers {
            try session.update(to: hover)
            #expect(session.takeEvents() == (hover == at ? [] : [.didMove(from: at, to: hover)]), sourceLocation: sourceLocation)
            at = hover
            #expect(try Self.shown(session, doc) == Self.model(rows, lifting: value, at: hover), sourceLocation: sourceLocation)
            #expect(doc.encodedState() == state && doc.operationCount == ops, "nothing is written before the drop",
                    sourceLocation: sourceLocation)
        }
        let op = try session.drop(into: &doc)
        #expect(doc.operationCount == ops + (op == nil ? 0 : 1), sourceLocation: sourceLocation)
        #expect(session.takeEvents() == [.didEnd(op.map { .moved($0) } ?? .droppedInPlace)], sourceLocation: sourceLocation)
        #expect(!session.isDragging, sourceLocation: sourceLocation)
        try doc.checkInvariants()
        return (doc, op)
    }

    // MARK: Edit mode: tableView(_:moveRowAt:to:)

    @Test("edit-mode moveRowAt within a section, every pair of rows, both directions")
    func editModeWithinSection() throws {
        let doc = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        for from in 0..<5 {
            for to in 0..<5 {
                let (dropped, op) = try drag(doc, from: ip(0, from), through: [ip(0, to)])
                var model = ["a", "b", "c", "d", "e"]
                model.insert(model.remove(at: from), at: to)
                #expect(dropped.rows == [model], "\(from) → \(to)")
                #expect((op == nil) == (from == to))
                var direct = doc
                try direct.moveItem(from: ip(0, from), to: ip(0, to))
                #expect(direct.rows == dropped.rows, "the same as the document's moveItem")
            }
        }
    }

    @Test("moving down inserts after the row that was at the destination")
    func insertAfterWhenMovingDown() throws {
        let doc = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"]])
        #expect(try drag(doc, from: ip(0, 1), through: [ip(0, 3)]).0.rows == [["a", "c", "d", "b", "e"]])   // after d
        #expect(try drag(doc, from: ip(0, 3), through: [ip(0, 1)]).0.rows == [["a", "d", "b", "c", "e"]])   // before b
    }

    @Test("edit-mode moveRowAt across sections, to every row including the end of the other section")
    func editModeAcrossSections() throws {
        let doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x", "y"], []])
        for from in 0..<3 {
            for to in 0...2 {
                let (dropped, op) = try drag(doc, from: ip(0, from), through: [ip(1, to)])
                var model = [["a", "b", "c"], ["x", "y"], []]
                model[1].insert(model[0].remove(at: from), at: to)
                #expect(dropped.rows == model)
                #expect(op != nil)
            }
        }
        // Up into the previous section, at its end; and into an empty section.
        #expect(try drag(doc, from: ip(1, 0), through: [ip(0, 3)]).0.rows == [["a", "b", "c", "x"], ["y"], []])
        #expect(try drag(doc, from: ip(1, 1), through: [ip(2, 0)]).0.rows == [["a", "b", "c"], ["x"], ["y"]])
    }

    // MARK: Long-press live reordering

    @Test("long-press reordering: many hovers, the live-swap model's result, one op instead of one per hover")
    func longPressLiveReorder() throws {
        var rng = SplitMix64(seed: 7)
        let start = [["a", "b", "c", "d", "e", "f"], ["g", "h", "i"], ["j"]]
        let doc = try ListDocument.make(1, sections: start)
        for _ in 0..<60 {
            let s0 = rng.below(3), r0 = rng.below(start[s0].count)
            // The live-swap model: the data source is changed at every hover (one op per hover).
            var live = start
            var liveDoc = doc
            let value = live[s0][r0]
            var at = ip(s0, r0), hovers: [IndexPath] = []
            for _ in 0..<(5 + rng.below(20)) {
                // The finger moves one row up or down (crossing into the next section at the ends),
                // or jumps.
                var next = at
                if rng.chance(80) {
                    let down = rng.chance(50)
                    let n = live[at.section].count
                    if down {
                        next = at.item + 1 < n ? ip(at.section, at.item + 1)
                            : at.section + 1 < live.count ? ip(at.section + 1, 0) : at
                    } else {
                        next = at.item > 0 ? ip(at.section, at.item - 1)
                            : at.section > 0 ? ip(at.section - 1, live[at.section - 1].count) : at
                    }
                } else {
                    let s = rng.below(3)
                    next = ip(s, rng.below(live[s].count + (s == at.section ? 0 : 1)))
                }
                if next.section == at.section && next.item == at.item { continue }
                if next.section == at.section && abs(next.item - at.item) == 1 {
                    live[at.section].swapAt(at.item, next.item)      // the tutorials' swapAt
                } else {
                    live[next.section].insert(live[at.section].remove(at: at.item), at: next.item)
                }
                try liveDoc.moveItem(from: at, to: next)
                #expect(live[next.section][next.item] == value)
                at = next
                hovers.append(next)
            }
            let (dropped, op) = try drag(doc, from: ip(s0, r0), through: hovers)
            #expect(dropped.rows == live)
            #expect(liveDoc.rows == live)
            #expect(dropped.operationCount <= doc.operationCount + 1, "one op, not one per hover")
            #expect((op == nil) == (live == start))
        }
    }

    // MARK: Drag and drop

    @Test("drag and drop to a destination index path (UITableViewDropDelegate)")
    func dragAndDropAtIndexPath() throws {
        let doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["d"]])
        #expect(try drag(doc, from: ip(0, 2), through: [ip(1, 0)]).0.rows == [["a", "b"], ["c", "d"]])
        #expect(try drag(doc, from: ip(1, 0), through: [ip(0, 1)]).0.rows == [["a", "d", "b", "c"], []])
    }

    @Test("a selection lands together, in selection order, with one moveItems op")
    func selectionDrop() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["e", "f"]])
        let before = doc.operationCount
        var session = DragSession()
        try session.begin(at: [ip(0, 3), ip(0, 0), ip(1, 1)], in: doc)       // d (primary), a, f
        #expect(try Self.shown(session, doc) == [["b", "c", "_"], ["e"]])
        #expect(session.adjustedRowCount(4, forSection: 0) == 3 && session.adjustedRowCount(2, forSection: 1) == 1)
        try session.update(to: ip(1, 1))
        #expect(try Self.shown(session, doc) == [["b", "c"], ["e", "_"]])
        let op = try #require(try session.drop(into: &doc))
        guard case .moveItems(let ids, _, _) = op.kind else { Issue.record("not a moveItems: \(op)"); return }
        #expect(ids.count == 3)
        #expect(doc.rows == [["b", "c"], ["e", "d", "a", "f"]])
        #expect(doc.operationCount == before + 1)
        // A selection dropped where it already stands commits nothing.
        var again = DragSession()
        try again.begin(at: [ip(1, 1), ip(1, 2)], in: doc)
        #expect(try again.drop(into: &doc) == nil)
        #expect(again.takeEvents().last == .didEnd(.droppedInPlace))
    }

    // MARK: Table helpers

    @Test("cross-section drag: row counts as the user sees them at each step")
    func rowCountsAtEachStep() throws {
        let doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["d", "e"], ["f"]])
        var session = DragSession()
        let counts = { (s: DragSession) throws -> [Int] in try (0..<3).map { try s.numberOfRows(inSection: $0) } }
        let adjusted = { (s: DragSession) -> [Int] in [3, 2, 1].enumerated().map { s.adjustedRowCount($1, forSection: $0) } }
        try session.begin(at: ip(0, 1), in: doc)
        #expect(try counts(session) == [3, 2, 1] && adjusted(session) == [3, 2, 1])
        try session.update(to: ip(0, 2))
        #expect(try counts(session) == [3, 2, 1])
        try session.update(to: ip(1, 0))                                      // source one less, destination one more
        #expect(try counts(session) == [2, 3, 1] && adjusted(session) == [2, 3, 1])
        #expect(session.isPlaceholder(at: ip(1, 0)) && !session.isPlaceholder(at: ip(0, 1)))
        #expect(try session.dataSourceIndexPath(forVisible: ip(1, 1)) == ip(1, 0))   // d, shifted by the placeholder
        #expect(try session.dataSourceIndexPath(forVisible: ip(0, 1)) == ip(0, 2))   // c, below the lifted b
        #expect(try session.dataSourceIndexPath(forVisible: ip(1, 0)) == ip(0, 1))   // the placeholder: b's own
        try session.update(to: ip(2, 1))                                      // the end of the last section
        #expect(try counts(session) == [2, 2, 2])
        try session.update(to: ip(0, 0))                                      // back home, above a
        #expect(try counts(session) == [3, 2, 1])
        #expect(try session.row(atVisible: ip(0, 0)) == .placeholder([try doc.itemID(at: ip(0, 1))]))
        try session.cancel()
        #expect(session.takeEvents().last == .didEnd(.cancelled(.userCancelled)))
        #expect(session.adjustedRowCount(3, forSection: 0) == 3, "no adjustment once the drag is over")
        #expect(try session.dataSourceIndexPath(forVisible: ip(0, 1)) == ip(0, 1))
    }

    @Test("before the drop the document is unchanged and no op exists; a cancel commits nothing")
    func nothingBeforeDrop() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["d"]])
        let state = doc.encodedState(), log = doc.operations
        var session = DragSession()
        try session.begin(at: ip(0, 0), in: doc)
        for p in [ip(0, 1), ip(0, 2), ip(1, 0), ip(1, 1), ip(0, 0)] { try session.update(to: p) }
        #expect(doc.encodedState() == state && doc.operations == log)
        try session.cancel()
        #expect(doc.encodedState() == state && doc.operations == log)
        #expect(throws: DragError.notDragging) { try session.drop(into: &doc) }
        #expect(doc.encodedState() == state)
    }

    // MARK: Bad input

    @Test("bad input is a typed error and changes nothing")
    func badInput() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"], ["c"]])
        var session = DragSession()
        #expect(throws: DragError.document(.indexPathOutOfRange(ip(0, 2), count: 2))) { try session.begin(at: ip(0, 2), in: doc) }
        #expect(throws: DragError.self) { try session.begin(at: ip(5, 0), in: doc) }
        #expect(throws: DragError.self) { try session.begin(at: IndexPath(index: 0), in: doc) }
        #expect(throws: DragError.invalidSelection("the selection is empty")) { try session.begin(items: [], in: doc) }
        let a = try doc.itemID(at: ip(0, 0))
        #expect(throws: DragError.invalidSelection("an item is selected twice")) { try session.begin(items: [a, a], in: doc) }
        #expect(session.phase == .idle && session.takeEvents().isEmpty)
        #expect(throws: DragError.notDragging) { try session.update(to: ip(0, 0)) }
        #expect(throws: DragError.notDragging) { try session.cancel() }
        #expect(throws: DragError.notDragging) { try session.numberOfRows(inSection: 0) }

        try session.begin(at: ip(0, 0), in: doc)
        _ = session.takeEvents()
        #expect(throws: DragError.alreadyDragging) { try session.begin(at: ip(0, 1), in: doc) }
        #expect(throws: DragError.indexPathOutOfRange(ip(0, 2), count: 2)) { try session.update(to: ip(0, 2)) }
        #expect(throws: DragError.indexPathOutOfRange(ip(1, 2), count: 2)) { try session.update(to: ip(1, 2)) }
        #expect(throws: DragError.sectionOutOfRange(2, count: 2)) { try session.update(to: ip(2, 0)) }
        #expect(throws: DragError.self) { try session.update(to: ip(0, -1)) }
        #expect(throws: DragError.self) { try session.dataSourceIndexPath(forVisible: ip(1, 1)) }
        #expect(throws: DragError.sectionOutOfRange(9, count: 2)) { try session.numberOfRows(inSection: 9) }
        #expect(session.placeholderIndexPath == ip(0, 0) && session.takeEvents().isEmpty)
        // Still usable after the errors.
        try session.update(to: ip(1, 1))
        #expect(try session.drop(into: &doc) != nil)
        #expect(doc.rows == [["b"], ["c", "a"]])
    }
}
