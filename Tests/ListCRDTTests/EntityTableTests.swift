import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// The entity registers (position write, delete register, alive) against a plain model that
/// stores both ids for every entity: the compact rows (``EntityTable/Row/state``) must give the
/// same answers after any sequence of register writes.
@Suite struct EntityTableTests {
    struct Model { var id: OpID; var winnerID: OpID; var deleted: OpID }

    static func id(_ counter: UInt64, _ replica: UInt64 = 1) -> OpID {
        OpID(counter: counter, replica: ReplicaID(replica))
    }

    /// Raises the delete register to `seen` as `ListDocument.raiseDeleted` does (when greater).
    static func raise(_ t: inout EntityTable, _ m: inout [Model], _ i: EntityIndex, _ seen: OpID) {
        if seen > t.deleted(i) { t.setDeleted(seen, of: i) }
        if seen > m[i.int].deleted { m[i.int].deleted = seen }
    }

    static func check(_ t: EntityTable, _ m: [Model], _ what: String) {
        for (k, e) in m.enumerated() {
            let i = EntityIndex(k)
            #expect(t.rows[k].id == e.id, "\(what): id of \(k)")
            #expect(t.winnerID(i) == e.winnerID, "\(what): winnerID of \(k)")
            #expect(t.deleted(i) == e.deleted, "\(what): deleted of \(k)")
            #expect(t.isAlive(i) == (e.winnerID > e.deleted), "\(what): alive of \(k)")
        }
    }

    @Test("an entity deleted by a delete that saw its insert keeps its registers in its row")
    func deleteSeeingInsertStaysInTheRow() {
        var t = EntityTable()
        var m: [Model] = []
        for c in 1...3 as ClosedRange<UInt64> {
            _ = t.append(id: Self.id(c), slot: LocalVersion(Int32(c)), value: Data(), section: EntityIndex(0))
            m.append(Model(id: Self.id(c), winnerID: Self.id(c), deleted: .none))
        }
        Self.raise(&t, &m, EntityIndex(0), Self.id(1))
        var row = t.rows[1]
        let first = row.deleteSeeingInsert(), second = row.deleteSeeingInsert()
        #expect(first)
        #expect(!second, "a second delete kills nothing")
        t.rows[1] = row
        m[1].deleted = m[1].id
        #expect(t.registers.isEmpty, "no entity needed registers of its own")
        Self.check(t, m, "after the deletes")
        #expect(!t.isAlive(EntityIndex(0)) && !t.isAlive(EntityIndex(1)) && t.isAlive(EntityIndex(2)))
    }

    @Test("a move that wins after a delete revives the entity; a later delete that saw the move kills it")
    func moveAfterDeleteThenDeleteSeeingTheMove() {
        var t = EntityTable()
        var m = [Model(id: Self.id(1), winnerID: Self.id(1), deleted: .none)]
        _ = t.append(id: Self.id(1), slot: LocalVersion(0), value: Data(), section: EntityIndex(0))
        Self.raise(&t, &m, EntityIndex(0), Self.id(1))  // deleted, seeing the insert
        t.setWinner(LocalVersion(5), write: Self.id(4, 2), of: EntityIndex(0))  // a concurrent move wins
        t.rows[0].section = EntityIndex(1)
        m[0].winnerID = Self.id(4, 2)
        Self.check(t, m, "after the move")
        #expect(t.isAlive(EntityIndex(0)) && t.rows[0].winner == LocalVersion(5) && t.rows[0].section == EntityIndex(1))
        Self.raise(&t, &m, EntityIndex(0), Self.id(4, 2))
        Self.check(t, m, "after the delete that saw the move")
        #expect(!t.isAlive(EntityIndex(0)))
        guard case .registers(let k) = t.rows[0].state else { Issue.record("a moved item keeps its registers apart"); return }
        var registers = t.registers[k]
        let died = registers.deleteSeeingInsert(id: Self.id(1))
        #expect(!died, "the insert is older than the register")
    }

    @Test("random register writes: the compact rows answer as the plain model", arguments: [1, 2, 3, 4] as [UInt64])
    func randomWrites(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var t = EntityTable()
        var m: [Model] = []
        var clock: UInt64 = 0
        for step in 0..<2_000 {
            clock += 1
            let next = Self.id(clock, UInt64(rng.below(3) + 1))
            if m.isEmpty || rng.chance(20) {
                _ = t.append(id: next, slot: LocalVersion(step), value: Data(), section: EntityIndex(0))
                m.append(Model(id: next, winnerID: next, deleted: .none))
                continue
            }
            let i = EntityIndex(rng.below(m.count))
            switch rng.below(4) {
            case 0:  // a move: a newer write wins
                let write = rng.chance(80) ? next : Self.id(UInt64(rng.below(Int(clock)) + 1), UInt64(rng.below(3) + 1))
                if write > t.winnerID(i) {
                    t.setWinner(LocalVersion(step), write: write, of: i)
                    m[i.int].winnerID = write
                }
            case 1:  // a delete that saw the winning write
                Self.raise(&t, &m, i, t.winnerID(i))
            case 2:  // a delete that saw the insert, by the run path
                let row = t.rows[i.int]
                let died: Bool
                if case .registers(let k) = row.state {
                    died = t.registers[k].deleteSeeingInsert(id: row.id)
                } else {
                    died = t.rows[i.int].deleteSeeingInsert()
                }
                let before = m[i.int]
                if row.id > before.deleted { m[i.int].deleted = row.id }
                let after = m[i.int]
                #expect(died == (before.winnerID > before.deleted && !(after.winnerID > after.deleted)),
                        "seed \(seed) step \(step): died")
            default:  // a delete that saw some older write
                Self.raise(&t, &m, i, Self.id(UInt64(rng.below(Int(clock)) + 1), UInt64(rng.below(3) + 1)))
            }
        }
        Self.check(t, m, "seed \(seed)")
        #expect(t.registers.count < m.count, "some entities keep their registers in the row")
    }
}
