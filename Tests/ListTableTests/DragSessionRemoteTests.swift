import Foundation
import Testing
import ListSyncTestSupport
@testable import ListCRDT
@testable import ListTable
import ListSyncSimulation

/// SEMANTICS §4, remote operations during a drag: a remote op injected at every step of a drag,
/// then convergence with the remote replica; and a seeded fuzz of drags under random remote edits.
@Suite("DragSession: remote operations during a drag")
struct DragSessionRemoteTests {
    private func ip(_ s: Int, _ r: Int) -> IndexPath { IndexPath(item: r, section: s) }

    enum Remote: CaseIterable {
        case insertAbove, insertAtPlaceholder, insertBelow, deleteNeighbourAbove, deleteNeighbourBelow
        case moveLifted, deleteLifted, deletePlaceholderSection
    }

    /// The remote replica's op for `kind`, made against what the local user sees now; nil when
    /// the kind does not apply (no neighbour there).
    func remoteOp(_ kind: Remote, _ remote: inout ListDocument, _ session: DragSession) throws -> ListOperation? {
        let p = session.placeholder
        let lifted = session.liftedItems[0]
        let s = try #require(remote.index(of: p.section))
        func row(_ id: ItemID?) -> Int? { id.flatMap { remote.indexPath(of: $0)?.item } }
        switch kind {
        case .insertAbove:
            return try remote.insertItem(at: ip(s, row(p.after) ?? 0), value: Data("above"))
        case .insertAtPlaceholder:
            return try remote.insertItem(at: ip(s, row(p.after).map { $0 + 1 } ?? row(p.before) ?? 0), value: Data("at"))
        case .insertBelow:
            return try remote.insertItem(at: ip(s, row(p.before).map { $0 + 1 } ?? remote.itemCount(inSection: s)), value: Data("below"))
        case .deleteNeighbourAbove:
            return try p.after.map { try remote.deleteItem($0) }
        case .deleteNeighbourBelow:
            return try p.before.map { try remote.deleteItem($0) }
        case .moveLifted:
            let last = remote.sectionCount - 1
            let to = remote.indexPath(of: lifted)!.section == last ? ip(0, 0) : ip(last, 0)
            return try remote.moveItem(lifted, to: to)
        case .deleteLifted:
            return try remote.deleteItem(lifted)
        case .deletePlaceholderSection:
            return try remote.deleteSection(p.section)
        }
    }

    /// Runs a drag from `start` through `hovers`, with the remote op `kind` injected after step
    /// `step` (0: right after begin; k: after the k-th hover), drops, and converges.
    func run(_ kind: Remote, atStep step: Int, start: IndexPath, hovers: [IndexPath]) throws {
        var local = try ListDocument.make(1, sections: [["a", "b", "c", "d", "e"], ["f", "g", "h"], ["i"]])
        var remote = local.fork(as: 2)
        var session = DragSession()
        try session.begin(at: start, in: local)
        let lifted = session.liftedItems[0]
        let homeSection = local.snapshot().sections[start.section].id
        var remoteOps: [ListOperation] = []
        func inject() throws {
            guard session.isDragging, let op = try remoteOp(kind, &remote, session) else { return }
            remoteOps.append(op)
            let before = session.placeholder, oldVisible = session.visibleSnapshot
            _ = session.takeEvents()
            try local.receive(op)
            session.documentDidChange(local)
            let events = session.takeEvents()
            let where_ = "\(kind) at step \(step)"
            if !session.isDragging {
                // Only a delete of the lifted item (or of its own section, which holds it) ends the drag.
                #expect(kind == .deleteLifted || (kind == .deletePlaceholderSection && before.section == homeSection),
                        "\(where_)")
                #expect(events == [.didEnd(.cancelled(.liftedItemsDeleted([lifted])))], "\(where_)")
                #expect(session.phase == .ended(.cancelled(.liftedItemsDeleted([lifted]))))
                return
            }
            let now = session.placeholder
            switch kind {
            case .deleteLifted:
                Issue.record("\(where_): the drag survived the delete of its item")
            case .insertAbove:
                #expect(now.after == before.after && (before.after == nil || now.before == before.before), "\(where_)")
            case .insertAtPlaceholder:
                #expect(now.after == before.after, "\(where_)")
            case .insertBelow:
                #expect(now.after == before.after && (before.before == nil || now.before == before.before), "\(where_)")
            case .moveLifted:
                #expect(now.after == before.after && now.before == before.before, "\(where_)")
            case .deleteNeighbourAbove:
                if before.before != nil { #expect(now.before == before.before, "\(where_)") }
            case .deleteNeighbourBelow:
                if before.after != nil { #expect(now.after == before.after, "\(where_)") }
            case .deletePlaceholderSection:
                // Fallback: the placeholder is back at the lifted item's own position.
                let home = local.indexPath(of: lifted)!       // one lifted item: visible = data source
                #expect(session.placeholderIndexPath == home, "\(where_)")
                #expect(try session.dataSourceIndexPath(forVisible: home) == home)
            }
            // The visible change the table receives turns the old rows into the new ones.
            let changes = events.compactMap { if case .arrangementDidChange(let c) = $0 { return c } else { return nil } }
            #expect(changes.count <= 1)
            let newVisible = session.visibleSnapshot
            let applied = try BatchUpdateApplier.apply(changes.first ?? ChangeSet(), to: oldVisible, dataSource: newVisible)
            #expect(applied == newVisible, "\(where_)")
            #expect(try DragSessionTests.shown(session, local).flatMap { $0 }.filter { $0 == "_" }.count == 1)
        }
        if step == 0 { try inject() }
        for (k, hover) in hovers.enumerated() where session.isDragging {
            if hover.section < session.base.sections.count {
                let n = session.rowsWithoutLifted(hover.section)
                try session.update(to: ip(hover.section, min(hover.item, n)))
            }
            if step == k + 1 { try inject() }
        }
        let ops = local.operationCount
        if session.isDragging {
            let p = session.placeholder
            let op = try session.drop(into: &local)
            #expect(local.operationCount == ops + (op == nil ? 0 : 1))
            // The drop lands between the neighbours the user saw.
            let at = try #require(local.indexPath(of: lifted))
            #expect(local.index(of: p.section) == at.section, "\(kind) at step \(step)")
            if let a = p.after { #expect(local.indexPath(of: a) == ip(at.section, at.item - 1), "\(kind) at step \(step)") }
            else { #expect(at.item == 0, "\(kind) at step \(step)") }
        } else {
            #expect(throws: DragError.notDragging) { try session.drop(into: &local) }
            #expect(local.operationCount == ops)
        }
        try local.checkInvariants()
        remote.merge(local)
        local.merge(remote)
        try remote.checkInvariants()
        #expect(convergenceFailures([local, remote]) == [])
    }

    @Test("a remote op of every kind injected at every step of a drag within a section",
          arguments: Remote.allCases)
    func everyStepWithinSection(_ kind: Remote) throws {
        let hovers = [ip(0, 2), ip(0, 3), ip(0, 4), ip(0, 0), ip(0, 2)]
        for step in 0...hovers.count { try run(kind, atStep: step, start: ip(0, 1), hovers: hovers) }
    }

    @Test("a remote op of every kind injected at every step of a drag across sections",
          arguments: Remote.allCases)
    func everyStepAcrossSections(_ kind: Remote) throws {
        let hovers = [ip(0, 3), ip(1, 0), ip(1, 2), ip(2, 1), ip(1, 3), ip(1, 1)]
        for step in 0...hovers.count { try run(kind, atStep: step, start: ip(0, 1), hovers: hovers) }
    }

    @Test("a deleted placeholder section while the item is elsewhere: the drop is back home, no op")
    func placeholderSectionDeleted() throws {
        var local = try ListDocument.make(1, sections: [["a", "b"], ["c", "d"]])
        var remote = local.fork(as: 2)
        var session = DragSession()
        try session.begin(at: ip(0, 0), in: local)
        try session.update(to: ip(1, 1))
        try local.receive(try remote.deleteSection(at: 1))
        session.documentDidChange(local)
        #expect(session.placeholderIndexPath == ip(0, 0))
        #expect(try session.numberOfRows(inSection: 0) == 2)
        #expect(try session.drop(into: &local) == nil)
        #expect(local.rows == [["a", "b"]])
    }

    @Test("drop catches up with a document the session was not told about")
    func dropCatchesUp() throws {
        var local = try ListDocument.make(1, sections: [["a", "b", "c"]])
        var remote = local.fork(as: 2)
        var session = DragSession()
        try session.begin(at: ip(0, 0), in: local)
        try session.update(to: ip(0, 1))                                    // between b and c
        try local.receive(try remote.insertItem(at: ip(0, 0), value: Data("x")))
        #expect(try session.drop(into: &local) != nil)
        #expect(local.rows == [["x", "b", "a", "c"]])
    }

    @Test("200 seeded drags under random remote edits at random steps: invariants and convergence")
    func fuzz() throws {
        var rng = SplitMix64(seed: 0xD4A6)
        for round in 0..<200 {
            var local = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["e", "f"], ["g"]])
            var remote = local.fork(as: 2)
            var session = DragSession()
            let s0 = rng.below(3)
            try session.begin(at: ip(s0, rng.below(local.snapshot().sections[s0].items.count)), in: local)
            for _ in 0..<rng.below(8) where session.isDragging {
                if rng.chance(40) {
                    let snap = remote.snapshot()
                    let items = snap.itemIdentifiers
                    switch rng.below(5) {
                    case 0 where !items.isEmpty: try remote.deleteItem(items[rng.below(items.count)])
                    case 1 where !items.isEmpty:
                        try remote.moveItem(items[rng.below(items.count)], to: ip(0, 0))
                    case 2 where snap.sections.count > 1: try remote.deleteSection(at: rng.below(snap.sections.count))
                    case 3 where snap.sections.count > 1: try remote.moveSection(from: 0, to: snap.sections.count - 1)
                    default:
                        if snap.sections.isEmpty { try remote.insertSection(at: 0) }
                        let s = rng.below(remote.sectionCount)
                        try remote.insertItem(at: ip(s, rng.below(try remote.itemCount(inSection: s) + 1)), value: Data("r\(round)"))
                    }
                    local.merge(remote)
                    let old = session.visibleSnapshot
                    _ = session.takeEvents()
                    session.documentDidChange(local)
                    if session.isDragging {
                        let c = session.takeEvents().compactMap { if case .arrangementDidChange(let c) = $0 { return c } else { return nil } }.first
                        #expect(try BatchUpdateApplier.apply(c ?? ChangeSet(), to: old, dataSource: session.visibleSnapshot) == session.visibleSnapshot)
                    }
                } else {
                    let s = rng.below(session.base.sections.count)
                    try session.update(to: ip(s, rng.below(session.rowsWithoutLifted(s) + 1)))
                }
                if session.isDragging {
                    #expect(try DragSessionTests.shown(session, local).count == local.sectionCount)
                }
            }
            if session.isDragging {
                if rng.chance(15) { try session.cancel() } else { try session.drop(into: &local) }
            }
            try local.checkInvariants()
            remote.merge(local)
            local.merge(remote)
            #expect(convergenceFailures([local, remote]) == [])
        }
    }
}
