import Foundation

/// The registers of every section or every item, by dense index (struct of arrays).
///
/// - `winner`: the position register: the local version of the winning slot, and in `winnerID`
///   the id of the operation that wrote it (the greatest such operation id wins; one operation
///   writes an entity's position at most once, so ids never tie);
/// - `deleted`: the id of the greatest position-writing operation any delete's author had seen
///   (``OpID/none`` if none); the entity is alive while its winning write is greater (SEMANTICS §3.4);
/// - `value` and `valueWrite`: the value register.
struct EntityTable: Sendable {
    private(set) var id: [OpID] = []
    var winner: [Int32] = []
    var winnerID: [OpID] = []
    var deleted: [OpID] = []
    var value: [Data] = []
    var valueWrite: [OpID] = []
    /// Items only: the section whose sequence holds the winning slot.
    var section: [Int32] = []

    var count: Int { id.count }

    /// Adds an entity placed at slot `lv` with a value written by its own insert.
    mutating func append(id: OpID, slot lv: Int32, value v: Data, section s: Int32) -> Int32 {
        let index = Int32(self.id.count)
        self.id.append(id)
        winner.append(lv)
        winnerID.append(id)
        deleted.append(.none)
        value.append(v)
        valueWrite.append(id)
        section.append(s)
        return index
    }

    /// Whether the entity's winning position write survives every delete.
    @inline(__always) func isAlive(_ i: Int32) -> Bool { winnerID[Int(i)] > deleted[Int(i)] }
}
