import Foundation
import Testing
import ListSyncSimulation
@testable import ListCRDT
import ListTable

/// `ListModel`'s SwiftUI conventions against the plain array model: `moveItems(fromOffsets:toOffset:)`
/// is `Array.move(fromOffsets:toOffset:)`, `deleteItems(atOffsets:)` is `Array.remove(atOffsets:)`,
/// the same for sections; bad input throws and changes nothing. Each seeded case prints its seed
/// when it fails; replay one with `LISTSYNC_SWIFTUI_SEED=n`.
@Suite("ListModel: onMove and onDelete against the array model")
@MainActor
struct ListModelTests {
    typealias F = ListModelFixtures

    /// The seeds to run: `0..<count`, or the one in `LISTSYNC_SWIFTUI_SEED`.
    static func seeds(_ count: Int) -> [UInt64] {
        if let s = ProcessInfo.processInfo.environment["LISTSYNC_SWIFTUI_SEED"], let seed = UInt64(s) { return [seed] }
        return (0..<UInt64(count)).map { $0 }
    }

    /// The edges a set of cases must cover, counted.
    struct Edges {
        var empty = 0, all = 0, single = 0, atStart = 0, atEnd = 0, insideMoved = 0, inPlace = 0, emptyList = 0

        mutating func count(_ offsets: IndexSet, _ destination: Int, of n: Int) {
            if n == 0 { emptyList += 1 }
            if offsets.isEmpty { empty += 1 }
            if n > 0 && offsets.count == n { all += 1 }
            if offsets.count == 1 { single += 1 }
            if destination == 0 { atStart += 1 }
            if destination == n { atEnd += 1 }
            if let first = offsets.first, let last = offsets.last, first < destination, destination <= last { insideMoved += 1 }
            if Array(0..<n).moved(fromOffsets: offsets, toOffset: destination) == Array(0..<n) { inPlace += 1 }
        }

        var allCovered: Bool { [empty, all, single, atStart, atEnd, insideMoved, inPlace, emptyList].allSatisfy { $0 > 0 } }
    }

    /// A random gesture over `n` rows: offsets and a destination, biased to the edges.
    static func gesture(_ n: Int, _ rng: inout SplitMix64) -> (IndexSet, Int) {
        let all = IndexSet(integersIn: 0..<n)
        switch rng.below(9) {
        case 0: return (IndexSet(), rng.below(n + 1))
        case 1: return (all, rng.below(n + 1))
        case 2: return (n == 0 ? IndexSet() : IndexSet(integer: rng.below(n)), rng.below(n + 1))
        case 3:
            // A contiguous run moved inside itself or to either side of it.
            guard n > 0 else { return (IndexSet(), 0) }
            let a = rng.below(n), b = a + rng.below(n - a)
            return (IndexSet(integersIn: a...b), a + rng.below(b - a + 2))
        case 4: return (F.subset(n, 40, &rng), 0)
        case 5: return (F.subset(n, 40, &rng), n)
        case 6:
            // The destination inside the moved set.
            let set = F.subset(n, 50, &rng)
            guard let first = set.first, let last = set.last, first < last else { return (set, rng.below(n + 1)) }
            return (set, first + 1 + rng.below(last - first))
        default: return (F.subset(n, 30, &rng), rng.below(n + 1))
        }
    }

    // MARK: Items

    @Test("moveItems(fromOffsets:toOffset:inSection:) is Array.move: 2,000 seeded cases, every edge")
    func moveItemsIsArrayMove() throws {
        var edges = Edges()
        for seed in Self.seeds(2_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0001)
            let counts = (0..<(1 + rng.below(3))).map { _ in rng.chance(15) ? rng.below(3) : rng.below(13) }
            let model = try F.model(counts: counts, coder: F.fast)
            let s = rng.below(counts.count)
            let section = model.sections[s]
            let before = F.rows(model)
            let ids = section.items.map(\.id)
            let (offsets, destination) = Self.gesture(ids.count, &rng)
            edges.count(offsets, destination, of: ids.count)
            var expected = before
            expected[s] = before[s].moved(fromOffsets: offsets, toOffset: destination)
            do {
                let ops = try model.moveItems(fromOffsets: offsets, toOffset: destination, inSection: section.id)
                #expect(F.rows(model) == expected, "seed \(seed): \(before[s]) move \(Array(offsets)) → \(destination)")
                #expect(model.snapshot == (try F.decoded(model)), "seed \(seed): the model shows the document")
                if expected == before {
                    #expect(ops.isEmpty, "seed \(seed): a move in place sends nothing")
                } else if ops.count == 1, case let .moveItems(moved, section: target, _) = ops[0].kind {
                    #expect(Array(moved) == offsets.map { ids[$0] } && target == section.id, "seed \(seed): one operation, the items in order")
                } else {
                    Issue.record("seed \(seed): expected one moveItems operation, got \(ops)")
                }
                if seed % 10 == 0 { try model.live.document.checkInvariants() }   // the engine's own tests check every step
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
        #expect(Self.seeds(2_000).count == 1 || edges.allCovered, "\(edges)")
    }

    @Test("deleteItems(atOffsets:inSection:) is Array.remove(atOffsets:): 2,000 seeded cases")
    func deleteItemsIsArrayRemove() throws {
        var empty = 0, all = 0
        for seed in Self.seeds(2_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0002)
            let counts = (0..<(1 + rng.below(3))).map { _ in rng.below(10) }
            let model = try F.model(counts: counts, coder: F.fast)
            let s = rng.below(counts.count)
            let section = model.sections[s]
            let n = section.items.count
            let offsets = rng.chance(10) ? IndexSet() : rng.chance(10) ? IndexSet(integersIn: 0..<n) : F.subset(n, 35, &rng)
            if offsets.isEmpty { empty += 1 } else if offsets.count == n { all += 1 }
            var expected = F.rows(model)
            expected[s] = expected[s].removed(atOffsets: offsets)
            do {
                let ops = try model.deleteItems(atOffsets: offsets, inSection: section.id)
                #expect(F.rows(model) == expected, "seed \(seed): delete \(Array(offsets))")
                #expect(model.snapshot == (try F.decoded(model)), "seed \(seed)")
                #expect(ops.count == offsets.count && ops.allSatisfy {
                    if case .deleteItem = $0.kind { return true } else { return false }
                }, "seed \(seed): one delete per item")
                #expect(model.sections.map(\.id) == model.live.document.sectionIDs, "seed \(seed): a section emptied stays")
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
        #expect(Self.seeds(2_000).count == 1 || (empty > 0 && all > 0))
    }

    // MARK: Sections

    @Test("moveSections(fromOffsets:toOffset:) is Array.move: 2,000 seeded cases, every edge")
    func moveSectionsIsArrayMove() throws {
        var edges = Edges()
        for seed in Self.seeds(2_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0003)
            let counts = (0..<rng.below(9)).map { _ in rng.below(4) }
            let model = try F.model(counts: counts, coder: F.fast)
            let names = model.sections.map(\.value)
            let items = Dictionary(uniqueKeysWithValues: model.sections.map { ($0.value, $0.items.map(\.value)) })
            let (offsets, destination) = Self.gesture(names.count, &rng)
            edges.count(offsets, destination, of: names.count)
            let expected = names.moved(fromOffsets: offsets, toOffset: destination)
            do {
                let ops = try model.moveSections(fromOffsets: offsets, toOffset: destination)
                #expect(model.sections.map(\.value) == expected, "seed \(seed): \(names) move \(Array(offsets)) → \(destination)")
                #expect(model.sections.allSatisfy { items[$0.value] == $0.items.map(\.value) }, "seed \(seed): items travel with their section")
                #expect(model.snapshot == (try F.decoded(model)), "seed \(seed)")
                #expect(expected == names ? ops.isEmpty : (1...offsets.count).contains(ops.count), "seed \(seed): \(ops.count) operations")
                #expect(ops.allSatisfy { if case .moveSection = $0.kind { return true } else { return false } })
                if seed % 10 == 0 { try model.live.document.checkInvariants() }
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
        #expect(Self.seeds(2_000).count == 1 || edges.allCovered, "\(edges)")
    }

    @Test("deleteSections(atOffsets:) is Array.remove(atOffsets:): 2,000 seeded cases")
    func deleteSectionsIsArrayRemove() throws {
        for seed in Self.seeds(2_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0004)
            let counts = (0..<rng.below(8)).map { _ in rng.below(4) }
            let model = try F.model(counts: counts, coder: F.fast)
            let offsets = rng.chance(10) ? IndexSet(integersIn: 0..<counts.count) : F.subset(counts.count, 35, &rng)
            let expected = model.sections.map(\.value).removed(atOffsets: offsets)
            do {
                let ops = try model.deleteSections(atOffsets: offsets)
                #expect(model.sections.map(\.value) == expected, "seed \(seed): delete \(Array(offsets))")
                #expect(model.snapshot == (try F.decoded(model)), "seed \(seed)")
                #expect(ops.count == offsets.count, "seed \(seed)")
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    // MARK: Bad input

    /// Runs `body`, expects it to throw `expected`, and checks that neither the document nor the
    /// model changed.
    func expectRefused(_ model: F.Model, _ expected: ListModelError, _ comment: String = "",
                       _ body: () throws(ListModelError) -> Void) {
        let state = model.live.document.encodedState()
        let shown = model.snapshot
        let counter = ObservationCounter { _ = model.snapshot }
        do {
            try body()
            Issue.record("expected \(expected) \(comment)")
        } catch {
            #expect(error == expected, "\(comment)")
        }
        #expect(model.live.document.encodedState() == state, "nothing changed \(comment)")
        #expect(model.snapshot == shown && counter.count == 0, "the model did not change \(comment)")
    }

    @Test("out-of-range offsets and destinations, unknown sections and items: a typed error, nothing changes")
    func badInput() throws {
        let model = try F.model(counts: [3, 0])
        let a = model.sections[0].id, b = model.sections[1].id
        let unknown = SectionID(OpID(counter: 999, replica: ReplicaID(9)))
        expectRefused(model, .offsetOutOfRange(3, count: 3)) { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [1, 3], toOffset: 0, inSection: a)
        }
        expectRefused(model, .offsetOutOfRange(-1, count: 3)) { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [-1], toOffset: 0, inSection: a)
        }
        expectRefused(model, .destinationOutOfRange(4, count: 3)) { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [0], toOffset: 4, inSection: a)
        }
        expectRefused(model, .destinationOutOfRange(-1, count: 3), "even with no offsets") { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [], toOffset: -1, inSection: a)
        }
        expectRefused(model, .offsetOutOfRange(0, count: 0)) { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [0], toOffset: 0, inSection: b)
        }
        expectRefused(model, .sectionNotShown(unknown)) { () throws(ListModelError) in
            try model.moveItems(fromOffsets: [0], toOffset: 0, inSection: unknown)
        }
        expectRefused(model, .offsetOutOfRange(5, count: 3)) { () throws(ListModelError) in
            try model.deleteItems(atOffsets: [0, 5], inSection: a)
        }
        expectRefused(model, .offsetOutOfRange(2, count: 2)) { () throws(ListModelError) in
            try model.moveSections(fromOffsets: [2], toOffset: 0)
        }
        expectRefused(model, .destinationOutOfRange(3, count: 2)) { () throws(ListModelError) in
            try model.moveSections(fromOffsets: [0], toOffset: 3)
        }
        expectRefused(model, .offsetOutOfRange(2, count: 2)) { () throws(ListModelError) in
            try model.deleteSections(atOffsets: [0, 2])
        }
        expectRefused(model, .invalidSelection("the selection is empty")) { () throws(ListModelError) in
            try model.moveItems([], toOffset: 0, inSection: a)
        }
        let first = model.sections[0].items[0].id
        expectRefused(model, .invalidSelection("an item is selected twice")) { () throws(ListModelError) in
            try model.moveItems([first, first], toOffset: 0, inSection: b)
        }
        expectRefused(model, .itemNotShown(ItemID(OpID(counter: 999, replica: ReplicaID(9))))) { () throws(ListModelError) in
            try model.moveItems([ItemID(OpID(counter: 999, replica: ReplicaID(9)))], toOffset: 0, inSection: b)
        }
        expectRefused(model, .indexPathOutOfRange(IndexPath(item: 3, section: 0), count: 3)) { () throws(ListModelError) in
            try model.moveItem(from: IndexPath(item: 3, section: 0), to: IndexPath(item: 0, section: 0))
        }
        expectRefused(model, .indexPathOutOfRange(IndexPath(item: 3, section: 0), count: 3), "within a section, 0..<count") { () throws(ListModelError) in
            try model.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 3, section: 0))
        }
        expectRefused(model, .indexPathOutOfRange(IndexPath(item: 1, section: 1), count: 0)) { () throws(ListModelError) in
            try model.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 1, section: 1))
        }
        expectRefused(model, .indexPathOutOfRange(IndexPath(item: 0, section: 2), count: 0)) { () throws(ListModelError) in
            try model.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 0, section: 2))
        }
        expectRefused(model, .destinationOutOfRange(4, count: 3)) { () throws(ListModelError) in
            try model.insertItem("x", at: 4, inSection: a)
        }
    }

    @Test("an edit the document refuses, resolved by identity, is .document(ListError) and changes nothing")
    func documentRefuses() throws {
        let model = try F.model(counts: [2, 1])
        let first = model.sections[0].items[0].id
        let second = model.sections[1].id
        // Another writer of the same LiveDocument deletes them; the model has not refreshed.
        try model.live.edit { (doc) throws(ListError) in
            _ = try doc.deleteItem(first)
            _ = try doc.deleteSection(second)
        }
        expectRefused(model, .document(.itemDeleted(first))) { () throws(ListModelError) in
            _ = try model.setValue("y", forItem: first)
        }
        expectRefused(model, .document(.sectionDeleted(second))) { () throws(ListModelError) in
            _ = try model.insertItem("y", at: 0, inSection: second)
        }
        expectRefused(model, .document(.sectionDeleted(second)), "a move into it") { () throws(ListModelError) in
            try model.moveItem(from: IndexPath(item: 1, section: 0), to: IndexPath(item: 0, section: 1))
        }
    }

    @Test("an empty offset set is a no-op, as for Array: no operation, nothing changes")
    func emptyOffsetsAreNoOps() throws {
        let model = try F.model(counts: [3, 2])
        let state = model.live.document.encodedState()
        let a = model.sections[0].id
        #expect(try model.moveItems(fromOffsets: [], toOffset: 2, inSection: a).isEmpty)
        #expect(try model.deleteItems(atOffsets: [], inSection: a).isEmpty)
        #expect(try model.moveSections(fromOffsets: [], toOffset: 0).isEmpty)
        #expect(try model.deleteSections(atOffsets: []).isEmpty)
        #expect(try model.moveItems(fromOffsets: [0, 1], toOffset: 1, inSection: a).isEmpty, "in place")
        #expect(model.live.document.encodedState() == state)
    }

    // MARK: Moves by index path and by identity

    @Test("moveItem(from:to:) is the document's moveItem(from:to:) (UITableView's meaning), every pair")
    func moveItemByIndexPathExhaustive() throws {
        let counts = [3, 0, 2]
        let board = try F.board(counts: counts)
        var paths: [IndexPath] = []
        for (s, n) in counts.enumerated() { for r in 0..<n { paths.append(IndexPath(item: r, section: s)) } }
        var checked = 0
        for from in paths {
            for (s, n) in counts.enumerated() {
                let limit = n - (s == from[0] ? 1 : 0)
                for r in 0...limit {
                    let to = IndexPath(item: r, section: s)
                    var reference = board.document
                    let refOp = try reference.moveItem(from: from, to: to)
                    let model = F.Model(LiveDocument(board.document))
                    let ops = try model.moveItem(from: from, to: to)
                    #expect(model.snapshot == (try TypedSnapshot(reference.snapshot())), "\(from) → \(to)")
                    #expect(ops.count == (refOp == nil ? 0 : 1), "\(from) → \(to)")
                    checked += 1
                }
            }
        }
        #expect(checked == 3 * (3 + 1 + 3) + 2 * (4 + 1 + 2))
    }

    @Test("moveItems(_:toOffset:inSection:) from several sections: one operation, the block at the offset, 500 seeds")
    func moveSelectionAcrossSections() throws {
        for seed in Self.seeds(500) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0005)
            let counts = (0..<(1 + rng.below(3))).map { _ in rng.below(7) }
            let model = try F.model(counts: counts, coder: F.fast)
            let all = model.sections.flatMap(\.items).map(\.id)
            guard !all.isEmpty else { continue }
            var selection = all.filter { _ in rng.chance(30) }
            if selection.isEmpty { selection = [all[rng.below(all.count)]] }
            selection.shuffle(using: &rng)
            let s = rng.below(counts.count)
            let target = model.sections[s]
            let shown = target.items.map(\.id)
            let offset = rng.below(shown.count + 1)
            let moving = Set(selection)
            let staying = shown.filter { !moving.contains($0) }
            let p = shown[..<offset].filter { !moving.contains($0) }.count
            var expected = model.sections.map { $0.items.map(\.id).filter { !moving.contains($0) } }
            expected[s] = Array(staying[..<p]) + selection + Array(staying[p...])
            let inPlace = expected == model.sections.map { $0.items.map(\.id) }
            do {
                let ops = try model.moveItems(selection, toOffset: offset, inSection: target.id)
                #expect(model.sections.map { $0.items.map(\.id) } == expected, "seed \(seed)")
                #expect(ops.count == (inPlace ? 0 : 1), "seed \(seed): \(ops.count) operations")
                #expect(model.snapshot == (try F.decoded(model)), "seed \(seed)")
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    // MARK: Inserts and values

    @Test("inserts and value writes go through the coder and show at once")
    func insertsAndValues() throws {
        let model = try F.model(counts: [2])
        let a = model.sections[0].id
        let op = try model.insertItem("new", at: 1, inSection: a)
        #expect(F.rows(model) == [["s0r0", "new", "s0r1"]])
        #expect(model.sections[0].items[1].id == ItemID(op.id))
        let sectionOp = try model.insertSection("S1", at: 1)
        #expect(model.sections.map(\.id) == [a, SectionID(sectionOp.id)])
        _ = try model.insertItem("first", at: 0, inSection: SectionID(sectionOp.id))
        _ = try model.setValue("renamed", forItem: ItemID(op.id))
        _ = try model.setValue("Top", forSection: a)
        #expect(model.sections.map(\.value) == ["Top", "S1"])
        #expect(F.rows(model) == [["s0r0", "renamed", "s0r1"], ["first"]])
        #expect(model.snapshot == (try F.decoded(model)))
    }

    @Test("a value that does not encode is refused before the document is touched")
    func encodingFailure() throws {
        let model = ListModel<String, Double>(LiveDocument(ListDocument(replica: ReplicaID(1))))
        _ = try model.insertSection("S", at: 0)
        let state = model.live.document.encodedState()
        let error = #expect(throws: ListModelError.self) {
            try model.insertItem(.nan, at: 0, inSection: model.sections[0].id)
        }
        guard case .encodingFailed? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(model.live.document.encodedState() == state)
    }
}
