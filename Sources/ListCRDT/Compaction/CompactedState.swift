import Foundation

/// What a compacted document holds, apart from the engine's tables: the rule of Docs/Semantics.md
/// §"Compaction" applied to a document whose whole history is causally stable.
///
/// Kept, in local-version order (so every kept origin still comes before its slot):
/// - every section slot (sections are few, and a hidden section can show again when a live item
///   is moved into it);
/// - every visible item slot;
/// - in each item sequence, the first slot of every maximal run of hidden slots (the *anchor*: a
///   later insert right before the run names it as its right origin; nothing can ever be placed
///   between two slots of a run, so the others are never named and never scanned again);
/// - for every item with a kept slot, its insert slot and its winning slot (so its registers
///   still name slots that exist).
///
/// Dropped: every other hidden item slot, every item with no kept slot, the values of dead items,
/// the whole operation log (the history before the floor), every origin that names a dropped slot.
struct CompactedState: Sendable, Equatable {
    /// The registers of one kept section or item.
    struct Entity: Sendable, Equatable {
        var id: OpID
        /// The winning slot (a kept local version) and the id of the write that placed it.
        var winner: Int32
        var winnerID: OpID
        /// The delete register (``OpID/none`` if no delete saw a write of it).
        var deleted: OpID
        var value: Data
        var valueWrite: OpID
    }

    /// The version every kept slot and register is part of (the floor), the clock, the frontier.
    var version: VersionVector
    var clock: UInt64
    var frontier: [OpID]
    /// Per kept slot (index = new local version): its id, origins (new local versions, -1 for
    /// none or dropped), sequence (-1 sections, else the section's index) and entity.
    var slotIDs: [OpID] = []
    var lefts: [Int32] = []
    var rights: [Int32] = []
    var sequences: [Int32] = []
    var entities: [Int32] = []
    var sections: [Entity] = []
    var items: [Entity] = []
    /// Kept slots whose write is another id (the later items of a multi-item move).
    var writes: [OpID: OpID] = [:]
    /// Every tree's order, as kept local versions: tree 0 the sections, `s + 1` section `s`'s items.
    var trees: [[Int32]] = []
    /// The records of the sections and live items, folded (``RecordStore/compacted(keeping:)``).
    var records = RecordStore()
}

extension CompactedState {
    /// The compacted state of `doc` (all of whose operations are causally stable); with
    /// `collect` false, every slot and item is kept (the document's state as it is).
    ///
    /// - Complexity: O(n + e) for n slots and e entities.
    /// `keep` adds what a compaction keeping concurrent operations keeps (``ConcurrentKeep``).
    init(extracting doc: ListDocument, collect: Bool = true, keep extra: ConcurrentKeep = ConcurrentKeep()) {
        version = doc.version
        clock = doc.clock
        frontier = Array(doc.frontier)
        let n = doc.slots.count
        var keep = Array(repeating: !collect, count: n)
        // Tree order, and the anchors of each hidden run.
        var order: [[LocalVersion]] = []
        order.reserveCapacity(doc.sections.count + 1)
        for t in 0 ... doc.sections.count {
            var lvs: [LocalVersion] = []
            var shows: [Bool] = []
            doc.forest.forEachRun(Int32(t)) { lv, count, visible in
                for k in 0 ..< count {
                    lvs.append(lv.advanced(by: k))
                    shows.append(visible)
                }
            }
            for (k, lv) in lvs.enumerated() {
                if t == 0 || shows[k] { keep[lv.int] = true; continue }
                if k == 0 || shows[k - 1] { keep[lv.int] = true }   // the first of a run of hidden slots
            }
            order.append(lvs)
        }
        // What concurrent operations name or scan.
        var whole = Array(repeating: false, count: doc.items.count)
        for id in extra.slots { if let lv = doc.slots.lv(of: id) { keep[lv.int] = true } }
        for id in extra.items {
            guard let lv = doc.slots.lv(of: id), doc.slots.sequence(of: lv).isItems else { continue }
            keep[lv.int] = true
            whole[doc.slots.entity(of: lv).int] = true
        }
        // Items with a kept slot keep their insert and winning slots too.
        var keptItem = Array(repeating: false, count: doc.items.count)
        for k in 0 ..< n where keep[k] {
            let lv = LocalVersion(k)
            if doc.slots.sequence(of: lv).isItems { keptItem[doc.slots.entity(of: lv).int] = true }
        }
        for i in doc.items.indices where keptItem[i.int] {
            keep[doc.items.rows[i.int].winner.int] = true
            if let insert = doc.slots.lv(of: doc.items.rows[i.int].id) { keep[insert.int] = true }
        }
        // New numbers: slots and items in their old order.
        var newLV = Array(repeating: Int32(-1), count: n)
        var next: Int32 = 0
        for k in 0 ..< n where keep[k] { newLV[k] = next; next += 1 }
        var newItem = Array(repeating: Int32(-1), count: doc.items.count)
        var nextItem: Int32 = 0
        for i in 0 ..< doc.items.count where keptItem[i] { newItem[i] = nextItem; nextItem += 1 }

        let kept = Int(next)
        slotIDs.reserveCapacity(kept)
        for k in 0 ..< n where keep[k] {
            let lv = LocalVersion(k)
            let id = doc.slots.id(of: lv)
            let (l, r) = doc.slots.origins(of: lv)
            let seq = doc.slots.sequence(of: lv)
            let e = doc.slots.entity(of: lv)
            slotIDs.append(id)
            lefts.append(l.exists ? newLV[l.int] : -1)
            rights.append(r.exists ? newLV[r.int] : -1)
            sequences.append(seq.raw)
            entities.append(seq.isItems ? newItem[e.int] : e.raw)
            let write = doc.writeID(ofSlot: lv)
            if write != id { writes[id] = write }
        }
        func entity(_ table: EntityTable, _ i: EntityIndex, alive: Bool) -> Entity {
            let row = table.rows[i.int]
            return Entity(id: row.id, winner: newLV[row.winner.int], winnerID: table.winnerID(i),
                          deleted: table.deleted(i), value: alive ? table.value(i) : Data(),
                          valueWrite: alive ? table.valueWrite(i) : row.id)
        }
        sections = doc.sections.indices.map { entity(doc.sections, $0, alive: true) }
        for i in doc.items.indices where keptItem[i.int] {
            items.append(entity(doc.items, i, alive: !collect || whole[i.int] || doc.items.isAlive(i)))
        }
        trees = order.map { lvs in lvs.compactMap { keep[$0.int] ? newLV[$0.int] : nil } }
        // With no record left, the field clock is still kept: a later write must take a clock past
        // every write applied here, collected ones included (Docs/Semantics.md §8, "The field
        // clock survives compaction").
        if !doc.records.isBlank {
            // A dead item's record goes with its value (undo remembers both, Docs/Semantics.md §8.9).
            var live = Set(sections.map(\.id))
            for i in doc.items.indices where !collect || whole[i.int] || doc.items.isAlive(i) { live.insert(doc.items.rows[i.int].id) }
            records = doc.records.compacted(keeping: live, asIs: extra.entities)
        }
    }

    /// Number of kept slots.
    var slotCount: Int { slotIDs.count }
}
