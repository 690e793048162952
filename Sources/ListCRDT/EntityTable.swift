import Foundation

/// The registers of every section or every item, by dense index: one ``Row`` of plain fields per
/// entity (one array append per new entity), and the values apart.
///
/// - `winner`: the position register: the local version of the winning slot, and in `winnerID`
///   the id of the operation that wrote it (the greatest such operation id wins; one operation
///   writes an entity's position at most once, so ids never tie);
/// - `deleted`: the id of the greatest position-writing operation any delete's author had seen
///   (``OpID/none`` if none); the entity is alive while its winning write is greater (SEMANTICS §3.4);
/// - `value` and ``valueWrite(_:)``: the value register. For the entities whose value a write
///   replaced, ``replaced`` keeps that write's id and the value the insert gave (the history
///   needs it back); the others' value is their insert's.
struct EntityTable: Sendable {
    /// The plain registers of one entity.
    struct Row: Sendable {
        /// The entity's id (the id of the operation that inserted it).
        var id: OpID
        var winnerID: OpID
        var deleted: OpID
        var winner: Int32
        /// Items only: the section whose sequence holds the winning slot.
        var section: Int32
    }

    var rows: [Row] = []
    /// The value of each entity (apart from ``rows``, which then hold no references).
    var value: [Data] = []
    /// The entities whose value a write replaced, by dense index (most entities keep their
    /// insert's value: no entry).
    private(set) var replaced: [Int32: Replaced] = [:]

    /// The value register of an entity whose value a write replaced.
    struct Replaced: Sendable {
        /// The write that gave the current value.
        var write: OpID
        /// The value the entity's insert gave it.
        var insertValue: Data
    }

    var count: Int { rows.count }

    /// Adds an entity placed at slot `lv` with a value written by its own insert.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(id: OpID, slot lv: Int32, value v: Data, section s: Int32) -> Int32 {
        let index = Int32(rows.count)
        rows.append(Row(id: id, winnerID: id, deleted: .none, winner: lv, section: s))
        value.append(v)
        return index
    }

    /// The id of the operation that wrote entity `i`'s value: its insert, or a later value write.
    ///
    /// - Complexity: O(1) expected.
    @inline(__always) func valueWrite(_ i: Int32) -> OpID { replaced[i]?.write ?? rows[Int(i)].id }

    /// The value entity `i`'s insert gave it.
    ///
    /// - Complexity: O(1) expected.
    func insertValue(_ i: Int32) -> Data { replaced[i]?.insertValue ?? value[Int(i)] }

    /// Writes entity `i`'s value register: value `v`, written by operation `write` (the caller
    /// has checked that `write` wins); the insert's value is kept.
    ///
    /// - Complexity: O(1) expected.
    mutating func setValue(_ v: Data, write: OpID, of i: Int32) {
        replaced[i] = Replaced(write: write, insertValue: insertValue(i))
        value[Int(i)] = v
    }

    /// Whether the entity's winning position write survives every delete.
    @inline(__always) func isAlive(_ i: Int32) -> Bool {
        let row = rows[Int(i)]
        return row.winnerID > row.deleted
    }
}

extension EntityTable.Row {
    /// What a delete whose author saw this item's insert slot (so the position write it saw is
    /// the item's own insert) does to its registers: raises the delete register to the item's id,
    /// as `ListDocument.raiseDeleted(i, seen: id)` does. Returns whether that killed the item (it
    /// was alive and its winning write no longer survives); the caller then hides its slot.
    @inline(__always) mutating func deleteSeeingInsert() -> Bool {
        guard id > deleted else { return false }
        let wasAlive = winnerID > deleted
        deleted = id
        // Most items never moved: their winning write is their insert, which was alive (greater
        // than the old register) and is not greater than the new one.
        return winnerID == id || (wasAlive && !(winnerID > id))
    }
}
