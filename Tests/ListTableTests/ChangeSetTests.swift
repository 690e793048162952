import Foundation
import Testing
import ListSyncTestSupport
@testable import ListCRDT
import ListTable
import ListSyncSimulation

/// Change sets between snapshots (SEMANTICS §5): named cases, the applier's own rejections, and
/// thousands of seeded random snapshot pairs checked with the batch-update applier.
@Suite("ChangeSet: what a table receives")
struct ChangeSetTests {
    // MARK: Building snapshots by name

    /// A snapshot from a compact description: `[("S0", ["a", "b"]), …]`; identities come from the
    /// names (the same name is the same identity), values are the names unless given as "name=value".
    static func snap(_ sections: [(String, [String])]) -> ListSnapshot {
        func parse(_ s: String) -> (name: String, value: String) {
            let parts = s.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : parts[0])
        }
        func number(_ name: String) -> UInt64 {
            name.unicodeScalars.reduce(UInt64(7)) { $0 &* 131 &+ UInt64($1.value) } % (1 << 40) + 1
        }
        return ListSnapshot(sections: sections.map { section, items in
            let s = parse(section)
            return .init(id: SectionID(OpID(counter: number(s.name), replica: ReplicaID(1))), value: Data(s.value),
                         items: items.map { let i = parse($0); return .init(id: ItemID(OpID(counter: number(i.name), replica: ReplicaID(2))), value: Data(i.value)) })
        })
    }

    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    /// Diffs, applies with UIKit's rules and checks the result is exactly `new`.
    @discardableResult
    private func check(_ old: ListSnapshot, _ new: ListSnapshot, sourceLocation: SourceLocation = #_sourceLocation) throws -> ChangeSet {
        let c = ChangeSet(from: old, to: new)
        let applied = try BatchUpdateApplier.apply(c, to: old, dataSource: new)
        #expect(applied == new, "\(c)", sourceLocation: sourceLocation)
        return c
    }

    // MARK: Named cases

    @Test("a field edit alone reloads its row (or its section), so a view redraws it; the same fields give no change")
    func fieldEditAloneIsAChange() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data("S".utf8))
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8))
        let before = doc.snapshot()
        let item = try #require(before.itemIdentifier(at: IndexPath(item: 0, section: 0)))
        _ = try doc.setField("done", to: .bool(true), ofItem: item)
        let afterItem = doc.snapshot()
        #expect(ChangeSet(from: before, to: afterItem).reloadedItems == [IndexPath(item: 0, section: 0)])
        #expect(ChangeSet(from: afterItem, to: afterItem).isEmpty)
        _ = try doc.writeFields(["color": .set(.string("blue"))], ofSection: try #require(before.sectionIdentifier(at: 0)))
        #expect(ChangeSet(from: afterItem, to: doc.snapshot()).reloadedSections == IndexSet([0]))
    }

    @Test("identical snapshots give an empty change set")
    func identical() throws {
        let a = Self.snap([("S0", ["a", "b"]), ("S1", [])])
        #expect(try check(a, a).isEmpty)
        #expect(try check(ListSnapshot(), ListSnapshot()).isEmpty)
    }

    @Test("moving the first row to the end is one move; the rows that shifted get none")
    func firstToEnd() throws {
        let c = try check(Self.snap([("S", ["a", "b", "c", "d", "e"])]), Self.snap([("S", ["b", "c", "d", "e", "a"])]))
        #expect(c.movedItems == [.init(from: ip(0, 0), to: ip(0, 4))])
        #expect(c.deletedItems.isEmpty && c.insertedItems.isEmpty && c.reloadedItems.isEmpty)
    }

    @Test("moving the last row to the top is one move")
    func lastToTop() throws {
        let c = try check(Self.snap([("S", ["a", "b", "c", "d", "e"])]), Self.snap([("S", ["e", "a", "b", "c", "d"])]))
        #expect(c.movedItems == [.init(from: ip(0, 4), to: ip(0, 0))])
    }

    @Test("swapping the ends takes two moves")
    func swapEnds() throws {
        let c = try check(Self.snap([("S", ["a", "b", "c", "d", "e"])]), Self.snap([("S", ["e", "b", "c", "d", "a"])]))
        #expect(c.movedItems.count == 2)
    }

    @Test("a moved section carries its rows: one section move, no row moves")
    func sectionMoveCarriesRows() throws {
        let c = try check(Self.snap([("A", ["a1", "a2"]), ("B", ["b1"]), ("C", ["c1"])]),
                          Self.snap([("C", ["c1"]), ("A", ["a1", "a2"]), ("B", ["b1"])]))
        #expect(c.movedSections == [.init(from: 2, to: 0)])
        #expect(c.movedItems.isEmpty)
    }

    @Test("a row that changes section is a real move, old path to new path")
    func crossSectionMove() throws {
        let c = try check(Self.snap([("A", ["a", "b"]), ("B", ["c"])]), Self.snap([("A", ["b"]), ("B", ["c", "a"])]))
        #expect(c.movedItems == [.init(from: ip(0, 0), to: ip(1, 1))])
        #expect(c.deletedItems.isEmpty && c.insertedItems.isEmpty)
    }

    @Test("a row moved out of a section moved at the same time")
    func rowOutOfMovedSection() throws {
        let c = try check(Self.snap([("A", ["a", "b"]), ("B", ["c"])]), Self.snap([("B", ["c", "a"]), ("A", ["b"])]))
        #expect(c.movedSections.count == 1)
        #expect(c.movedItems == [.init(from: ip(0, 0), to: ip(0, 1))])
    }

    @Test("rows of deleted and inserted sections are not listed; rows leaving or entering them are deletes and inserts")
    func deletedAndInsertedSections() throws {
        let c = try check(Self.snap([("A", ["a", "b"]), ("B", ["c", "d"])]),
                          Self.snap([("B", ["c", "a"]), ("N", ["d", "x"])]))
        #expect(c.deletedSections == [0])
        #expect(c.insertedSections == [1])
        #expect(c.insertedItems == [ip(0, 1)])     // a, out of the deleted section A
        #expect(c.deletedItems == [ip(1, 1)])      // d, into the inserted section N
        #expect(c.movedItems.isEmpty)
    }

    @Test("a value change is a reload at the old index path")
    func reloadUsesOldPath() throws {
        let c = try check(Self.snap([("S", ["a", "b"])]), Self.snap([("S", ["x", "a", "b=B"])]))
        #expect(c.insertedItems == [ip(0, 0)])
        #expect(c.reloadedItems == [ip(0, 1)])
        #expect(c.reconfiguredItems.isEmpty)
    }

    @Test("a moved row whose value changed is moved, then reconfigured at its new path (never reloaded)")
    func movedAndChanged() throws {
        let c = try check(Self.snap([("S", ["a", "b", "c"])]), Self.snap([("S", ["b", "c", "a=A"])]))
        #expect(c.movedItems == [.init(from: ip(0, 0), to: ip(0, 2))])
        #expect(c.reloadedItems.isEmpty)
        #expect(c.reconfiguredItems == [ip(0, 2)])
    }

    @Test("a section value change is a reload only when nothing else touches the section")
    func sectionValues() throws {
        var c = try check(Self.snap([("A", ["a"]), ("B", ["b"])]), Self.snap([("A=renamed", ["a"]), ("B", ["b"])]))
        #expect(c.reloadedSections == [0] && c.reconfiguredSections.isEmpty)
        c = try check(Self.snap([("A", ["a"]), ("B", ["b"])]), Self.snap([("A=renamed", ["a", "n"]), ("B", ["b"])]))
        #expect(c.reloadedSections.isEmpty && c.reconfiguredSections == [0])
        c = try check(Self.snap([("A", ["a"]), ("B", ["b"])]), Self.snap([("B", ["b"]), ("A=renamed", ["a"])]))
        #expect(c.reloadedSections.isEmpty && c.reconfiguredSections.count == 1)
    }

    @Test("everything at once: a reversed list of sections with shuffled rows")
    func reversal() throws {
        let c = try check(Self.snap([("A", ["a", "b", "c"]), ("B", ["d", "e"]), ("C", ["f"])]),
                          Self.snap([("C", ["f", "a"]), ("B", ["e", "d"]), ("A", ["c", "b"])]))
        #expect(c.movedSections.count == 2)
    }

    // MARK: The applier refuses what UIKit refuses

    @Test("the applier rejects invalid batches")
    func applierRejects() throws {
        let old = Self.snap([("A", ["a", "b", "c"]), ("B", ["d"])])
        let new = Self.snap([("A", ["a", "c"]), ("B", ["d"])])
        var good = ChangeSet()
        good.deletedItems = [ip(0, 1)]
        #expect(try BatchUpdateApplier.apply(good, to: old, dataSource: new) == new)

        func rejects(_ edit: (inout ChangeSet) -> Void, _ dataSource: ListSnapshot? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) {
            var c = ChangeSet()
            edit(&c)
            #expect(throws: BatchUpdateApplier.Rejection.self, sourceLocation: sourceLocation) {
                try BatchUpdateApplier.apply(c, to: old, dataSource: dataSource ?? new)
            }
        }
        rejects { $0.deletedItems = [ip(0, 1), ip(0, 1)] }                           // deleted twice
        rejects { $0.deletedItems = [ip(0, 7)] }                                     // out of range
        rejects { $0.deletedItems = [ip(5, 0)] }                                     // no such section
        rejects { $0.deletedItems = [ip(0, 1)]; $0.reloadedItems = [ip(0, 1)] }       // delete + reload
        rejects { $0.deletedItems = [ip(0, 1)]; $0.movedItems = [.init(from: ip(0, 0), to: ip(0, 1))]; $0.reloadedItems = [ip(0, 0)] }
        rejects { $0.reloadedItems = [ip(0, 0)] }                                    // wrong row count
        rejects({ $0.insertedItems = [ip(0, 9)] }, Self.snap([("A", ["a", "b", "c", "x"]), ("B", ["d"])]))    // out of range
        rejects({ $0.insertedSections = [0]; $0.insertedItems = [ip(0, 0)] },
                Self.snap([("N", ["x"]), ("A", ["a", "b", "c"]), ("B", ["d"])]))       // row into inserted section
        rejects({ $0.deletedSections = [1]; $0.deletedItems = [ip(1, 0)] }, Self.snap([("A", ["a", "b", "c"])]))
        rejects { $0.movedSections = [.init(from: 0, to: 1), .init(from: 1, to: 1)] }
        rejects { $0.movedItems = [.init(from: ip(0, 0), to: ip(0, 5))]; $0.deletedItems = [ip(0, 1)] }
    }

    // MARK: Random snapshot pairs

    /// The length of a longest increasing subsequence, by the quadratic method (an independent
    /// check of the diff's O(n log n) one).
    static func lisLength(_ xs: [Int]) -> Int {
        var best = [Int](repeating: 1, count: xs.count)
        for i in xs.indices {
            for j in 0..<i where xs[j] < xs[i] { best[i] = max(best[i], best[j] + 1) }
        }
        return best.max() ?? 0
    }

    /// The fewest moves that a valid change set needs from `old` to `new` (sections, rows).
    static func minimalMoves(_ old: ListSnapshot, _ new: ListSnapshot) -> (sections: Int, items: Int) {
        let oldS = Dictionary(uniqueKeysWithValues: old.sections.enumerated().map { ($1.id, $0) })
        let newS = Set(new.sections.map(\.id))
        let survivorNew = new.sections.enumerated().filter { oldS[$1.id] != nil }
        let orderInOld = survivorNew.sorted { oldS[$0.element.id]! < oldS[$1.element.id]! }.map(\.offset)
        let sectionMoves = orderInOld.count - lisLength(orderInOld)
        var oldPlace: [ItemID: (SectionID, Int)] = [:]
        for s in old.sections { for (r, i) in s.items.enumerated() { oldPlace[i.id] = (s.id, r) } }
        var itemMoves = 0
        for s in new.sections where oldS[s.id] != nil {
            var stay: [Int] = []
            for i in s.items {
                guard let (from, r) = oldPlace[i.id], newS.contains(from) else { continue }
                if from == s.id { stay.append(r) } else { itemMoves += 1 }
            }
            itemMoves += stay.count - lisLength(stay)
        }
        return (sectionMoves, itemMoves)
    }

    /// A random snapshot and a random edit of it: inserts, deletes, moves within and across
    /// sections, section inserts, deletes and moves, value changes; rows moved into inserted
    /// sections and out of deleted ones.
    static func randomPair(_ rng: inout SplitMix64) -> (ListSnapshot, ListSnapshot) {
        var next: UInt64 = 1
        func newItem() -> ListSnapshot.Item {
            next += 1
            return .init(id: ItemID(OpID(counter: next, replica: ReplicaID(2))), value: Data("i\(next)"))
        }
        func newSection(_ items: [ListSnapshot.Item]) -> ListSnapshot.Section {
            next += 1
            return .init(id: SectionID(OpID(counter: next, replica: ReplicaID(1))), value: Data("s\(next)"), items: items)
        }
        var sections: [ListSnapshot.Section] = []
        for _ in 0..<rng.below(6) { sections.append(newSection((0..<rng.below(8)).map { _ in newItem() })) }
        let old = ListSnapshot(sections: sections)
        for _ in 0..<rng.below(10) {
            let nonEmpty = sections.indices.filter { !sections[$0].items.isEmpty }
            switch rng.below(10) {
            case 0 where !nonEmpty.isEmpty:                       // delete an item
                let s = nonEmpty[rng.below(nonEmpty.count)]
                sections[s].items.remove(at: rng.below(sections[s].items.count))
            case 1 where !sections.isEmpty:                       // insert an item
                let s = rng.below(sections.count)
                sections[s].items.insert(newItem(), at: rng.below(sections[s].items.count + 1))
            case 2, 3:                                            // move an item anywhere
                guard !nonEmpty.isEmpty else { continue }
                let s = nonEmpty[rng.below(nonEmpty.count)]
                let item = sections[s].items.remove(at: rng.below(sections[s].items.count))
                let t = rng.below(sections.count)
                sections[t].items.insert(item, at: rng.below(sections[t].items.count + 1))
            case 4 where !sections.isEmpty:                       // delete a section
                sections.remove(at: rng.below(sections.count))
            case 5:                                               // insert a section, maybe taking rows
                var items = (0..<rng.below(3)).map { _ in newItem() }
                if !nonEmpty.isEmpty && rng.chance(50) {
                    let s = nonEmpty[rng.below(nonEmpty.count)]
                    items.insert(sections[s].items.remove(at: rng.below(sections[s].items.count)), at: rng.below(items.count + 1))
                }
                sections.insert(newSection(items), at: rng.below(sections.count + 1))
            case 6 where !sections.isEmpty:                       // move a section
                let s = sections.remove(at: rng.below(sections.count))
                sections.insert(s, at: rng.below(sections.count + 1))
            case 7, 8:                                            // change an item value
                guard !nonEmpty.isEmpty else { continue }
                let s = nonEmpty[rng.below(nonEmpty.count)]
                sections[s].items[rng.below(sections[s].items.count)].value = Data("v\(rng.below(1000))")
            case 9 where !sections.isEmpty:                       // change a section value
                sections[rng.below(sections.count)].value = Data("w\(rng.below(1000))")
            default: break
            }
        }
        return (old, ListSnapshot(sections: sections))
    }

    @Test("3,000 random snapshot pairs: the applier turns old into exactly new, with minimal moves")
    func randomPairs() throws {
        var rng = SplitMix64(seed: 0x5EED_C4A6_E5E7)
        var totals = (moves: 0, sectionMoves: 0, reloads: 0, reconfigures: 0)
        for round in 0..<3_000 {
            let (old, new) = Self.randomPair(&rng)
            let c = ChangeSet(from: old, to: new)
            let applied: ListSnapshot
            do {
                applied = try BatchUpdateApplier.apply(c, to: old, dataSource: new)
            } catch {
                Issue.record("round \(round): \(error)\nold \(old)\nnew \(new)\nchanges \(c)")
                return
            }
            guard applied == new else {
                Issue.record("round \(round): applied ≠ new\nold \(old)\nnew \(new)\nchanges \(c)")
                return
            }
            let minimal = Self.minimalMoves(old, new)
            #expect(c.movedSections.count == minimal.sections, "round \(round)")
            #expect(c.movedItems.count == minimal.items, "round \(round)")
            // The reverse direction too.
            let back = ChangeSet(from: new, to: old)
            #expect(try BatchUpdateApplier.apply(back, to: new, dataSource: old) == old, "round \(round) reversed")
            totals.moves += c.movedItems.count
            totals.sectionMoves += c.movedSections.count
            totals.reloads += c.reloadedItems.count + c.reloadedSections.count
            totals.reconfigures += c.reconfiguredItems.count + c.reconfiguredSections.count
        }
        // The generator exercises every kind of change.
        #expect(totals.moves > 500 && totals.sectionMoves > 100 && totals.reloads > 100 && totals.reconfigures > 50)
    }

    @Test("random edits of a real document: snapshots before and after each operation")
    func randomDocumentEdits() throws {
        var rng = SplitMix64(seed: 42)
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["d", "e"], []])
        var other = doc.fork(as: 2)
        for step in 0..<400 {
            let before = doc.snapshot()
            let mine = rng.chance(50)
            var edited = mine ? doc : other
            let snap = edited.snapshot()
            let sections = snap.sections.count
            do {
                switch rng.below(6) {
                case 0 where sections > 0:
                    let s = rng.below(sections)
                    try edited.insertItem(at: ip(s, rng.below(snap.sections[s].items.count + 1)), value: Data("n\(step)"))
                case 1 where snap.numberOfItems > 0:
                    let all = snap.sections.enumerated().flatMap { s, sec in sec.items.indices.map { ip(s, $0) } }
                    let from = all[rng.below(all.count)]
                    let t = rng.below(sections)
                    let limit = snap.sections[t].items.count - (t == from.section ? 1 : 0)
                    try edited.moveItem(from: from, to: ip(t, rng.below(limit + 1)))
                case 2 where snap.numberOfItems > 0:
                    let all = snap.itemIdentifiers
                    if rng.chance(50) { try edited.deleteItem(all[rng.below(all.count)]) }
                    else { try edited.setValue(Data("v\(step)"), forItem: all[rng.below(all.count)]) }
                case 3 where sections > 1:
                    try edited.moveSection(from: rng.below(sections), to: rng.below(sections))
                case 4 where sections > 2:
                    try edited.deleteSection(at: rng.below(sections))
                default:
                    try edited.insertSection(at: rng.below(sections + 1), value: Data("S\(step)"))
                }
            } catch {
                Issue.record("step \(step): \(error)")
            }
            if mine { doc = edited } else { other = edited }
            if rng.chance(30) { doc.merge(other); other.merge(doc) }
            try check(before, doc.snapshot())
        }
    }

    // MARK: Snapshot queries

    @Test("snapshot queries: the O(1) lookup agrees with the linear queries and with the document")
    func snapshotQueries() throws {
        var rng = SplitMix64(seed: 99)
        for _ in 0..<200 {
            let (_, snap) = Self.randomPair(&rng)
            let lookup = snap.makeLookup()
            #expect(lookup.numberOfSections == snap.numberOfSections && lookup.numberOfItems == snap.numberOfItems)
            #expect(snap.itemIdentifiers == snap.sections.flatMap { $0.items.map(\.id) })
            for (s, section) in snap.sections.enumerated() {
                #expect(snap.indexOfSection(section.id) == s && lookup.indexOfSection(section.id) == s)
                #expect(snap.sectionIdentifier(at: s) == section.id)
                #expect(snap.itemIdentifiers(inSection: section.id) == lookup.itemIdentifiers(inSection: section.id))
                #expect(snap.itemIdentifiers(inSectionAt: s) == section.items.map(\.id))
                #expect(snap.numberOfItems(inSection: section.id) == section.items.count)
                #expect(lookup.numberOfItems(inSection: section.id) == section.items.count)
                #expect(lookup.section(section.id) == section)
                for (r, item) in section.items.enumerated() {
                    let path = ip(s, r)
                    #expect(snap.indexPath(of: item.id) == path && lookup.indexPath(of: item.id) == path)
                    #expect(snap.indexOfItem(item.id) == lookup.indexOfItem(item.id))
                    #expect(snap.itemIdentifiers[lookup.indexOfItem(item.id)!] == item.id)
                    #expect(snap.sectionIdentifier(containingItem: item.id) == section.id)
                    #expect(lookup.sectionIdentifier(containingItem: item.id) == section.id)
                    #expect(snap.item(at: path) == item && lookup.item(item.id) == item && snap.itemIdentifier(at: path) == item.id)
                }
            }
            let unknown = ItemID(OpID(counter: 1 << 50, replica: ReplicaID(5)))
            #expect(snap.indexOfItem(unknown) == nil && lookup.indexOfItem(unknown) == nil && !lookup.contains(unknown))
            #expect(snap.item(at: ip(snap.numberOfSections, 0)) == nil && snap.item(at: IndexPath(index: 0)) == nil)
            #expect(snap.itemIdentifiers(inSectionAt: -1).isEmpty && snap.numberOfItems(inSectionAt: 99) == 0)
        }
        let doc = try ListDocument.make(1, sections: [["a", "b"], ["c"]])
        let snap = doc.snapshot()
        for id in snap.itemIdentifiers { #expect(snap.indexPath(of: id) == doc.indexPath(of: id)) }
        #expect(snap.sectionIdentifiers == doc.sectionIDs)
    }
}
