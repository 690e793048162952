import Foundation

/// The registers of every section or every item, by dense index: one ``Row`` of plain fields per
/// entity (one array append per new entity), and the values apart.
///
/// - `winner`: the position register: the local version of the winning slot, and in
///   ``winnerID(_:)`` the id of the operation that wrote it (the greatest such operation id wins;
///   one operation writes an entity's position at most once, so ids never tie);
/// - ``deleted(_:)``: the id of the greatest position-writing operation any delete's author had
///   seen (``OpID/none`` if none); the entity is alive while its winning write is greater
///   (SEMANTICS §3.4);
/// - ``value(_:)`` and ``valueWrite(_:)``: the value register. Every entity's insert value is in
///   ``insertValues`` (packed bytes, 4 bytes of offset each; the history needs it back); for the
///   entities whose value a write replaced, ``replaced`` keeps that write's id and the current
///   value; the others' value is their insert's.
struct EntityTable: Sendable {
    /// The plain registers of one entity: 32 bytes. Most entities never move and are deleted, if
    /// at all, by deletes that saw their insert: their position write is their insert and their
    /// delete register is nothing or their own id, which ``state`` says without storing either.
    /// The others keep both registers in ``EntityTable/registers``.
    struct Row: Sendable {
        /// The entity's id (the id of the operation that inserted it).
        var id: OpID
        /// The local version of the winning slot.
        var winner: LocalVersion
        /// Items only: the section whose sequence holds the winning slot (sections: ``EntityIndex/none``).
        var section: EntityIndex
        /// ``state``, packed: -1 untouched, -2 deleted at its insert, else the index of the
        /// entity's ``Registers``.
        var packedState: Int32

        /// Where an entity's position and delete registers are.
        enum State: Equatable {
            /// The winning write is the insert (`id`) and no delete saw it.
            case untouched
            /// The winning write is the insert (`id`) and the delete register is `id`: a delete
            /// saw the insert (the entity is dead).
            case deletedAtInsert
            /// In ``EntityTable/registers``, at this index.
            case registers(Int)
        }

        /// Where this entity's registers are (``packedState`` unpacked; free at `-O`).
        @inline(__always) var state: State {
            get {
                switch packedState {
                case -1: .untouched
                case -2: .deletedAtInsert
                default: .registers(Int(packedState))
                }
            }
            set {
                switch newValue {
                case .untouched: packedState = -1
                case .deletedAtInsert: packedState = -2
                case .registers(let k): packedState = Int32(k)
                }
            }
        }

        init(id: OpID, winner: LocalVersion, section: EntityIndex, state: State) {
            (self.id, self.winner, self.section, packedState) = (id, winner, section, -1)
            self.state = state
        }

        /// The row of an entity that neither moved nor was deleted (``State/untouched``): the
        /// fields stored as they are (a state snapshot's load writes every item's row so).
        @inline(__always) init(untouched id: OpID, winner: LocalVersion, section: EntityIndex) {
            (self.id, self.winner, self.section, packedState) = (id, winner, section, -1)
        }

        /// A row with its state packed already (-1 untouched, -2 deleted at its insert).
        @inline(__always) init(id: OpID, winner: LocalVersion, section: EntityIndex, packedState: Int32) {
            (self.id, self.winner, self.section, self.packedState) = (id, winner, section, packedState)
        }
    }

    /// The position write and delete registers of an entity that moved, or whose delete register
    /// is neither nothing nor its own id.
    struct Registers: Sendable {
        /// The id of the operation that wrote the winning slot.
        var winnerID: OpID
        /// The id of the greatest position write any delete's author had seen.
        var deleted: OpID
    }

    var rows: [Row] = []
    /// The registers of the entities whose ``Row/state`` indexes them (only
    /// ``Registers/deleteSeeingInsert(id:)`` changes them from outside).
    var registers: [Registers] = []
    /// The value each entity's insert gave it, packed (apart from ``rows``, which then hold no
    /// references): 4 bytes per entity plus the value's bytes.
    var insertValues = ValueStore()
    /// The entities whose value a write replaced, by dense index (most entities keep their
    /// insert's value: no entry).
    private(set) var replaced: [EntityIndex: Replaced] = [:]

    /// The value register of an entity whose value a write replaced.
    struct Replaced: Sendable {
        /// The write that gave the current value.
        var write: OpID
        /// The current value.
        var value: Data
    }

    /// The bytes of the current values beyond the insert values they replaced (``valueBytes``).
    private(set) var replacedExtraBytes = 0

    var count: Int { rows.count }

    /// The bytes of every entity's current value (a later write's, else its insert's).
    ///
    /// - Complexity: O(1).
    var valueBytes: Int { insertValues.bytes.count + replacedExtraBytes }

    /// The length of entity `i`'s current value.
    ///
    /// - Complexity: O(1) expected.
    @inline(__always) func valueLength(_ i: EntityIndex) -> Int {
        Self.valueLength(i, values: insertValues, replaced: replaced)
    }

    /// ``valueLength(_:)`` from the table's parts (for a loop that holds its rows).
    @inline(__always) static func valueLength(_ i: EntityIndex, values: ValueStore, replaced: [EntityIndex: Replaced]) -> Int {
        if !replaced.isEmpty, let r = replaced[i] { return r.value.count }
        return values.length(i.int)
    }

    /// Every entity's index, in order.
    var indices: LazyMapSequence<Range<Int>, EntityIndex> { (0 ..< rows.count).lazy.map { EntityIndex($0) } }

    /// Adds an entity placed at slot `lv` with a value written by its own insert.
    ///
    /// - Complexity: O(1) amortized (O(size of the value)).
    mutating func append(id: OpID, slot lv: LocalVersion, value v: Data, section s: EntityIndex) -> EntityIndex {
        let index = EntityIndex(rows.count)
        rows.append(Row(id: id, winner: lv, section: s, state: .untouched))
        insertValues.append(v)
        return index
    }

    /// The current value of entity `i`: a later write's, or its insert's.
    ///
    /// - Complexity: O(size of the value) (O(1) expected for the look-up of a replaced value).
    @inline(__always) func value(_ i: EntityIndex) -> Data {
        if !replaced.isEmpty, let r = replaced[i] { return r.value }
        return insertValues[i.int]
    }

    /// The id of the operation that wrote entity `i`'s value: its insert, or a later value write.
    ///
    /// - Complexity: O(1) expected.
    @inline(__always) func valueWrite(_ i: EntityIndex) -> OpID { replaced[i]?.write ?? rows[i.int].id }

    /// The value entity `i`'s insert gave it.
    ///
    /// - Complexity: O(size of the value).
    func insertValue(_ i: EntityIndex) -> Data { insertValues[i.int] }

    /// Writes entity `i`'s value register: value `v`, written by operation `write` (the caller
    /// has checked that `write` wins); the insert's value is kept.
    ///
    /// - Complexity: O(1) expected.
    mutating func setValue(_ v: Data, write: OpID, of i: EntityIndex) {
        replacedExtraBytes += v.count - valueLength(i)
        replaced[i] = Replaced(write: write, value: v)
    }

    /// The id of the operation that wrote entity `i`'s winning slot (its position register).
    @inline(__always) func winnerID(_ i: EntityIndex) -> OpID {
        let row = rows[i.int]
        if case .registers(let k) = row.state { return registers[k].winnerID }
        return row.id
    }

    /// Entity `i`'s delete register: the greatest position write any delete's author had seen
    /// (``OpID/none`` if none).
    @inline(__always) func deleted(_ i: EntityIndex) -> OpID {
        let row = rows[i.int]
        switch row.state {
        case .untouched: return .none
        case .deletedAtInsert: return row.id
        case .registers(let k): return registers[k].deleted
        }
    }

    /// Whether the entity's winning position write survives every delete.
    @inline(__always) func isAlive(_ i: EntityIndex) -> Bool {
        let row = rows[i.int]
        switch row.state {
        case .untouched: return true
        case .deletedAtInsert: return false
        case .registers(let k):
            let r = registers[k]
            return r.winnerID > r.deleted
        }
    }

    /// Writes entity `i`'s position register: its winning slot is now `lv`, written by `write`
    /// (the caller has checked that `write` wins; an item's caller sets its `section` too).
    ///
    /// - Complexity: O(1) amortized.
    mutating func setWinner(_ lv: LocalVersion, write: OpID, of i: EntityIndex) {
        let k = registersIndex(i)
        registers[k].winnerID = write
        rows[i.int].winner = lv
    }

    /// Writes entity `i`'s delete register (the caller has checked that `seen` is greater).
    ///
    /// - Complexity: O(1) amortized.
    mutating func setDeleted(_ seen: OpID, of i: EntityIndex) {
        let row = rows[i.int]
        if case .registers = row.state {} else if seen == row.id {
            rows[i.int].state = .deletedAtInsert
            return
        }
        registers[registersIndex(i)].deleted = seen
    }

    /// The index of entity `i`'s ``Registers``, made from its state when it has none.
    private mutating func registersIndex(_ i: EntityIndex) -> Int {
        let row = rows[i.int]
        if case .registers(let k) = row.state { return k }
        let k = registers.count
        registers.append(Registers(winnerID: row.id, deleted: row.state == .deletedAtInsert ? row.id : .none))
        rows[i.int].state = .registers(k)
        return k
    }
}

extension EntityTable.Row {
    /// What a delete whose author saw this item's insert slot (so the position write it saw is
    /// the item's own insert) does to its registers when they are in the row (not ``State/registers(_:)``):
    /// raises the delete register to the item's id, as `ListDocument.raiseDeleted(i, seen: id)`
    /// does. Returns whether that killed the item (it was alive; its winning write, the insert,
    /// no longer survives); the caller then hides its slot. For an item with ``EntityTable/Registers``
    /// (``State/registers(_:)``), use ``EntityTable/Registers/deleteSeeingInsert(id:)``.
    @inline(__always) mutating func deleteSeeingInsert() -> Bool {
        guard state == .untouched else { return false }
        state = .deletedAtInsert
        return true
    }
}

extension EntityTable.Registers {
    /// ``EntityTable/Row/deleteSeeingInsert()`` for an item `id` whose registers are these.
    @inline(__always) mutating func deleteSeeingInsert(id: OpID) -> Bool {
        guard id > deleted else { return false }
        let wasAlive = winnerID > deleted
        deleted = id
        return wasAlive && !(winnerID > id)
    }
}
