import Foundation

/// The registers of every section or every item, by dense index: one ``Row`` of plain fields per
/// entity (one array append per new entity), and the values apart.
///
/// - `winner`: the position register: the local version of the winning slot, and in `winnerID`
///   the id of the operation that wrote it (the greatest such operation id wins; one operation
///   writes an entity's position at most once, so ids never tie);
/// - `deleted`: the id of the greatest position-writing operation any delete's author had seen
///   (``OpID/none`` if none); the entity is alive while its winning write is greater (SEMANTICS §3.4);
/// - `value` and `valueWrite`: the value register.
struct EntityTable: Sendable {
    /// The plain registers of one entity.
    struct Row: Sendable {
        /// The entity's id (the id of the operation that inserted it).
        var id: OpID
        var winnerID: OpID
        var deleted: OpID
        var valueWrite: OpID
        var winner: Int32
        /// Items only: the section whose sequence holds the winning slot.
        var section: Int32
    }

    var rows: [Row] = []
    /// The value of each entity (apart from ``rows``, which then hold no references).
    var value: [Data] = []

    var count: Int { rows.count }

    /// Adds an entity placed at slot `lv` with a value written by its own insert.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(id: OpID, slot lv: Int32, value v: Data, section s: Int32) -> Int32 {
        let index = Int32(rows.count)
        rows.append(Row(id: id, winnerID: id, deleted: .none, valueWrite: id, winner: lv, section: s))
        value.append(v)
        return index
    }

    /// What deletes whose authors saw the insert slots of items `items[0]`, `items[1]`, … (so the
    /// position write each saw is its item's own insert) do to the registers, in one pass with
    /// one uniqueness check: each item's delete register is raised to its id (what
    /// `ListDocument.raiseDeleted(i, seen: rows[i].id)` does). The items that this killed are
    /// moved to the front of `items`, in order; returns their number.
    ///
    /// - Complexity: O(n) for n items.
    mutating func deleteSeeingInserts(_ items: UnsafeMutableBufferPointer<Int32>) -> Int {
        rows.withUnsafeMutableBufferPointer { rows in
            var dead = 0
            for j in items.indices {
                let i = Int(items[j])
                precondition(i >= 0 && i < rows.count, "no item \(i)")
                let row = rows[i]
                guard row.id > row.deleted else { continue }
                rows[i].deleted = row.id
                // It was alive (its winning write survived the old register) and is no longer.
                if row.winnerID > row.deleted && !(row.winnerID > row.id) {
                    items[dead] = items[j]
                    dead += 1
                }
            }
            return dead
        }
    }

    /// Whether the entity's winning position write survives every delete.
    @inline(__always) func isAlive(_ i: Int32) -> Bool {
        let row = rows[Int(i)]
        return row.winnerID > row.deleted
    }
}
