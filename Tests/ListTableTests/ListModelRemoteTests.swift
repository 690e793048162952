import Foundation
import Testing
import ListSyncSimulation
import ListSyncTestSupport
@testable import ListCRDT
import ListTable

/// Remote changes and `ListModel`'s SwiftUI edits. The offsets SwiftUI passes count the rows the
/// user saw; the model turns them into identities at once and applies the edit to the document as
/// it is then. Two cases, each seeded (the seed of a failure is printed; replay one with
/// `LISTSYNC_SWIFTUI_SEED=n`):
/// - *between the gesture and the call*: another replica's operations reach the `LiveDocument`
///   (from the sync layer's thread) before the call, the model has not shown them yet;
/// - *concurrent*: the other replica edits without having seen the move.
/// Both are merged both ways; the replicas must converge, and the moved items must stand together,
/// in order, where the user put them relative to the neighbours the user saw.
@Suite("ListModel: remote changes between the gesture and the call, and concurrent with it")
@MainActor
struct ListModelRemoteTests {
    typealias F = ListModelFixtures

    /// What the other replica did to the items the user saw.
    struct Touched {
        var moved: Set<ItemID> = []
        var deleted: Set<ItemID> = []
        var all: Set<ItemID> { moved.union(deleted) }
    }

    /// A gesture that moves something: a non-empty selection of `n` rows and a destination that is
    /// not in place; nil when `n < 2`.
    static func gesture(_ n: Int, _ rng: inout SplitMix64) -> (IndexSet, Int)? {
        guard n >= 2 else { return nil }
        while true {
            var offsets = F.subset(n, 35, &rng)
            if offsets.isEmpty { offsets.insert(rng.below(n)) }
            let destination = rng.chance(20) ? (rng.chance(50) ? 0 : n) : rng.below(n + 1)
            if Array(0..<n).moved(fromOffsets: offsets, toOffset: destination) != Array(0..<n) { return (offsets, destination) }
        }
    }

    /// `count` random item edits by `remote`: inserts anywhere, moves within and across sections,
    /// deletes; never moving or deleting `protected` items.
    static func itemEdits(_ remote: inout F.Board, _ count: Int, protected: Set<ItemID>,
                          _ rng: inout SplitMix64) throws -> Touched {
        var touched = Touched()
        for k in 0..<count {
            let doc = remote.document
            let candidates = doc.snapshot().itemIdentifiers.filter { !protected.contains($0) }
            let kind = candidates.isEmpty ? 0 : rng.below(3)
            if kind == 0 {
                let s = rng.below(doc.sectionCount)
                try remote.insertItem("x\(k)", at: IndexPath(item: rng.below(try doc.itemCount(inSection: s) + 1), section: s))
            } else if kind == 1 {
                let id = candidates[rng.below(candidates.count)]
                let from = try #require(doc.indexPath(of: id))
                let s = rng.below(doc.sectionCount)
                let limit = try doc.itemCount(inSection: s) - (s == from[0] ? 1 : 0)
                _ = try remote.document.moveItem(from: from, to: IndexPath(item: rng.below(limit + 1), section: s))
                touched.moved.insert(id)
            } else {
                let id = candidates[rng.below(candidates.count)]
                _ = try remote.document.deleteItem(id)
                touched.deleted.insert(id)
            }
        }
        return touched
    }

    /// Where `alive` stands in `rows`, if it stands there together and in order.
    static func block(_ alive: [ItemID], in rows: [ItemID]) -> Range<Int>? {
        guard let b = rows.firstIndex(of: alive[0]), b + alive.count <= rows.count,
              rows[b ..< b + alive.count].elementsEqual(alive) else { return nil }
        return b ..< b + alive.count
    }

    /// Checks that the replicas converged and that the model shows the document.
    func expectConverged(_ model: F.Model, _ remote: F.Board, _ seed: UInt64) throws {
        #expect(model.live.document.encodedState() == remote.document.encodedState(), "seed \(seed): converged")
        #expect(model.live.document.pendingCount == 0 && remote.document.pendingCount == 0, "seed \(seed)")
        model.refresh()
        #expect(model.snapshot == (try F.decoded(model)), "seed \(seed): the model shows the document")
        if seed % 10 == 0 { try model.live.document.checkInvariants() }   // the engine's own tests check every step
    }

    // MARK: Items

    @Test("remote operations between the gesture and moveItems: the move lands by identity, 1,000 seeds")
    func itemsRemoteBeforeTheCall() throws {
        var cases = (aboveKept: 0, belowKept: 0, top: 0, bottom: 0, clamped: 0, selectionTouched: 0)
        for seed in ListModelTests.seeds(1_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0101)
            let model = try F.model(counts: [2 + rng.below(8), rng.below(5)], coder: F.fast)
            var remote = F.fork(model, as: 2)
            let target = model.sections[0]
            let shown = target.items.map(\.id)
            guard let (offsets, destination) = Self.gesture(shown.count, &rng) else { continue }
            let selection = offsets.map { shown[$0] }
            let moving = Set(selection)
            let above = shown[..<destination].last { !moving.contains($0) }
            let below = shown[destination...].first { !moving.contains($0) }

            let version = remote.document.version
            let touched = try Self.itemEdits(&remote, 1 + rng.below(3), protected: [], &rng)
            model.live.receive(remote.document.operations(since: version))   // around the model
            #expect(model.sections[0].items.map(\.id) == shown, "seed \(seed): the model still shows what the user saw")
            if !touched.all.isDisjoint(with: moving) { cases.selectionTouched += 1 }

            let ops: [ListOperation]
            do { ops = try model.moveItems(fromOffsets: offsets, toOffset: destination, inSection: target.id) } catch {
                Issue.record("seed \(seed): \(error)")
                continue
            }
            remote.document.receive(ops)
            try expectConverged(model, remote, seed)

            let doc = model.live.document
            let alive = selection.filter { doc.contains($0) }
            #expect(ops.count == (alive.isEmpty ? 0 : 1), "seed \(seed): one operation for the items still alive")
            guard !alive.isEmpty else { continue }
            let rows = try doc.itemIDs(inSection: try #require(doc.index(of: target.id)))
            guard let block = Self.block(alive, in: rows) else {
                Issue.record("seed \(seed): \(alive) not together in order in \(rows)")
                continue
            }
            if let above, rows.contains(above) {
                cases.aboveKept += 1
                #expect(block.lowerBound > 0 && rows[block.lowerBound - 1] == above, "seed \(seed): right below the row above")
            } else if above == nil {
                cases.top += 1
                #expect(block.lowerBound == 0, "seed \(seed): at the top")
            } else if below == nil {
                cases.bottom += 1
                #expect(block.upperBound == rows.count, "seed \(seed): at the bottom")
            } else if let below, rows.contains(below) {
                cases.belowKept += 1
                #expect(block.upperBound < rows.count && rows[block.upperBound] == below, "seed \(seed): right above the row below")
            } else {
                cases.clamped += 1
            }
        }
        if ListModelTests.seeds(1_000).count > 1 {
            #expect(cases.aboveKept > 0 && cases.belowKept > 0 && cases.top > 0 && cases.bottom > 0
                    && cases.clamped > 0 && cases.selectionTouched > 0, "\(cases)")
        }
    }

    @Test("a remote edit concurrent with moveItems: both orders converge, the items stay together between the user's neighbours, 1,000 seeds")
    func itemsConcurrentWithTheMove() throws {
        for seed in ListModelTests.seeds(1_000) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0102)
            let model = try F.model(counts: [2 + rng.below(8), rng.below(5)], coder: F.fast)
            var remote = F.fork(model, as: 2)
            let target = model.sections[0]
            let shown = target.items.map(\.id)
            guard let (offsets, destination) = Self.gesture(shown.count, &rng) else { continue }
            let selection = offsets.map { shown[$0] }
            let moving = Set(selection)

            let ops: [ListOperation]
            do { ops = try model.moveItems(fromOffsets: offsets, toOffset: destination, inSection: target.id) } catch {
                Issue.record("seed \(seed): \(error)")
                continue
            }
            #expect(ops.count == 1, "seed \(seed)")
            let version = remote.document.version
            let touched = try Self.itemEdits(&remote, 1 + rng.below(3), protected: moving, &rng)
            model.receive(remote.document.operations(since: version))
            remote.document.receive(ops)
            try expectConverged(model, remote, seed)

            let doc = model.live.document
            let rows = try doc.itemIDs(inSection: try #require(doc.index(of: target.id)))
            guard let block = Self.block(selection, in: rows) else {
                Issue.record("seed \(seed): \(selection) not together in order in \(rows)")
                continue
            }
            // Every row the user saw that the other replica left alone is on the side of the block
            // where the user saw it.
            for (i, id) in shown.enumerated() where !moving.contains(id) && !touched.all.contains(id) {
                let at = try #require(rows.firstIndex(of: id), "seed \(seed): \(id) stays in its section")
                #expect(i < destination ? at < block.lowerBound : at >= block.upperBound,
                        "seed \(seed): \(id) (row \(i), destination \(destination)) at \(at), block \(block)")
            }
        }
    }

    @Test("the section of the move deleted by another replica before the call: refused, nothing changes")
    func sectionDeletedBeforeTheCall() throws {
        let model = try F.model(counts: [3, 1])
        var remote = F.fork(model, as: 2)
        let target = model.sections[0].id
        let op = try remote.document.deleteSection(target)
        model.live.receive(op)
        let state = model.live.document.encodedState()
        #expect(throws: ListModelError.document(.sectionDeleted(target))) {
            try model.moveItems(fromOffsets: [0], toOffset: 3, inSection: target)
        }
        #expect(model.live.document.encodedState() == state)
        #expect(try model.deleteItems(atOffsets: [0, 2], inSection: target).isEmpty, "deleted already: nothing to send")
    }

    // MARK: Sections

    /// `count` random section edits by `remote`: inserts, moves and deletes, never moving or
    /// deleting `protected` sections. Returns the sections it moved or deleted.
    static func sectionEdits(_ remote: inout F.Board, _ count: Int, protected: Set<SectionID>,
                             _ rng: inout SplitMix64) throws -> Set<SectionID> {
        var touched: Set<SectionID> = []
        for k in 0..<count {
            let ids = remote.document.sectionIDs
            let candidates = ids.filter { !protected.contains($0) }
            let kind = candidates.isEmpty ? 0 : rng.below(3)
            if kind == 0 {
                try remote.insertSection("X\(k)", at: rng.below(ids.count + 1))
            } else if kind == 1 {
                let id = candidates[rng.below(candidates.count)]
                _ = try remote.document.moveSection(from: ids.firstIndex(of: id)!, to: rng.below(ids.count))
                touched.insert(id)
            } else {
                let id = candidates[rng.below(candidates.count)]
                _ = try remote.document.deleteSection(id)
                touched.insert(id)
            }
        }
        return touched
    }

    @Test("remote section edits between the gesture and moveSections, or concurrent with it: converged, in order between the user's neighbours, 600 seeds")
    func sectionsRemote() throws {
        for seed in ListModelTests.seeds(600) {
            var rng = SplitMix64(seed: seed &+ 0x5157_0103)
            let model = try F.model(counts: (0..<(2 + rng.below(7))).map { _ in rng.below(3) }, coder: F.fast)
            var remote = F.fork(model, as: 2)
            let shown = model.sections.map(\.id)
            guard let (offsets, destination) = Self.gesture(shown.count, &rng) else { continue }
            let selection = offsets.map { shown[$0] }
            let moving = Set(selection)
            let before = seed % 2 == 0   // even seeds: between the gesture and the call
            let version = remote.document.version
            var touched: Set<SectionID> = []
            var ops: [ListOperation] = []
            do {
                if before {
                    touched = try Self.sectionEdits(&remote, 1 + rng.below(3), protected: [], &rng)
                    model.live.receive(remote.document.operations(since: version))
                    ops = try model.moveSections(fromOffsets: offsets, toOffset: destination)
                } else {
                    ops = try model.moveSections(fromOffsets: offsets, toOffset: destination)
                    touched = try Self.sectionEdits(&remote, 1 + rng.below(3), protected: moving, &rng)
                    model.receive(remote.document.operations(since: version))
                }
            } catch {
                Issue.record("seed \(seed): \(error)")
                continue
            }
            remote.document.receive(ops)
            try expectConverged(model, remote, seed)
            let order = model.live.document.sectionIDs
            let alive = selection.filter { order.contains($0) }
            guard !alive.isEmpty else { continue }
            let at = alive.map { order.firstIndex(of: $0)! }
            #expect(at == at.sorted(), "seed \(seed): \(alive) in order in \(order)")
            let b = at.min()!, end = at.max()! + 1
            // Together on this replica; under a concurrent edit, a section that was already in place
            // (so not moved: it keeps its slot) can have a concurrent insert or move land next to it.
            #expect(!before || end - b == alive.count, "seed \(seed): \(alive) together in \(order)")
            if before {
                // The neighbours the user saw, followed by identity (the other replica may have
                // moved them: then the block follows the one above).
                let above = shown[..<destination].last { !moving.contains($0) }
                let below = shown[destination...].first { !moving.contains($0) }
                if let above, order.contains(above) {
                    #expect(b > 0 && order[b - 1] == above, "seed \(seed): right below the section above")
                } else if above == nil {
                    #expect(b == 0, "seed \(seed): at the top")
                } else if below == nil {
                    #expect(end == order.count, "seed \(seed): at the bottom")
                } else if let below, order.contains(below) {
                    #expect(end < order.count && order[end] == below, "seed \(seed): right above the section below")
                }
            } else {
                for (i, id) in shown.enumerated() where !moving.contains(id) && !touched.contains(id) {
                    let at = try #require(order.firstIndex(of: id), "seed \(seed)")
                    #expect(i < destination ? at < b : at >= end, "seed \(seed): \(id) on its side of the block")
                }
            }
        }
    }
}
