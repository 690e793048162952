import Foundation

extension CompactedState {
    /// Why a compacted state cannot be built (a decoded one that does not hold together).
    struct Inconsistent: Error { var why: String }

    /// Checks everything ``build(replica:maxValueSize:)`` indexes with, so that building never
    /// traps: origins before their slot and in its sequence, sequences and entities in range,
    /// slot ids increasing per replica and unique, winners that are slots of their entity,
    /// every slot in exactly one tree (the one of its sequence), a frontier inside the version.
    ///
    /// - Complexity: O(n + e) for n slots and e entities.
    func validate() throws(Inconsistent) {
        let n = slotCount
        guard lefts.count == n, rights.count == n, sequences.count == n, entities.count == n else {
            throw Inconsistent(why: "slot tables of different lengths")
        }
        guard trees.count == sections.count + 1 else { throw Inconsistent(why: "\(trees.count) trees for \(sections.count) sections") }
        var lastCounter: [ReplicaID: UInt64] = [:]
        for k in 0 ..< n {
            let id = slotIDs[k]
            guard id.counter >= 1, id.counter <= OpID.maxCounter, version.contains(id) else {
                throw Inconsistent(why: "slot id \(id) outside the version")
            }
            guard id.counter > lastCounter[id.replica, default: 0] else { throw Inconsistent(why: "slot ids of \(id.replica) out of order") }
            lastCounter[id.replica] = id.counter
            let seq = sequences[k]
            guard seq >= -1, seq < Int32(sections.count) else { throw Inconsistent(why: "slot \(k): no sequence \(seq)") }
            for o in [lefts[k], rights[k]] where o != -1 {
                guard o >= 0, o < Int32(k), sequences[Int(o)] == seq else { throw Inconsistent(why: "slot \(k): bad origin \(o)") }
            }
            let count = seq == -1 ? sections.count : items.count
            guard entities[k] >= 0, entities[k] < Int32(count) else { throw Inconsistent(why: "slot \(k): no entity \(entities[k])") }
        }
        for (isItems, table) in [(false, sections), (true, items)] {
            for (e, entity) in table.enumerated() {
                let w = Int(entity.winner)
                guard w >= 0, w < n, entities[w] == Int32(e), (sequences[w] >= 0) == isItems else {
                    throw Inconsistent(why: "entity \(e): winner \(w) is not its slot")
                }
            }
        }
        var placed = Array(repeating: false, count: n)
        for (t, order) in trees.enumerated() {
            for lv in order {
                guard lv >= 0, lv < Int32(n), !placed[Int(lv)], sequences[Int(lv)] + 1 == Int32(t) else {
                    throw Inconsistent(why: "tree \(t): slot \(lv) missing, repeated or of another sequence")
                }
                placed[Int(lv)] = true
            }
        }
        guard placed.allSatisfy({ $0 }) else { throw Inconsistent(why: "a slot is in no tree") }
        for id in frontier where !version.contains(id) { throw Inconsistent(why: "frontier id \(id) outside the version") }
    }

    /// A document holding exactly this state, with no history before it (its operation log is
    /// empty; ``ListDocument/compaction`` records the floor). The state must be valid
    /// (``validate()``).
    ///
    /// - Complexity: O(n + e) for n slots and e entities.
    func build(replica: ReplicaID, maxValueSize: Int) -> ListDocument {
        var doc = ListDocument(replica: replica, maxValueSize: maxValueSize)
        doc.records = records
        let n = slotCount
        doc.slots.reserveCapacity(forMore: n)
        for k in 0 ..< n {
            let seq: SequenceIndex = sequences[k] == -1 ? .sections : .items(EntityIndex(sequences[k]))
            _ = doc.slots.append(id: slotIDs[k], left: LocalVersion(lefts[k]), right: LocalVersion(rights[k]),
                                 sequence: seq, entity: EntityIndex(entities[k]))
        }
        func add(_ entity: Entity, to table: inout EntityTable, section: EntityIndex) {
            let winner = LocalVersion(entity.winner)
            let e = table.append(id: entity.id, slot: winner, value: entity.value, section: section)
            if entity.winnerID != entity.id { table.setWinner(winner, write: entity.winnerID, of: e) }
            if entity.deleted != .none { table.setDeleted(entity.deleted, of: e) }
            if entity.valueWrite != entity.id { table.setValue(entity.value, write: entity.valueWrite, of: e) }
        }
        for s in sections { add(s, to: &doc.sections, section: .none) }
        for i in items { add(i, to: &doc.items, section: EntityIndex(sequences[Int(i.winner)])) }

        // Visibility: an item's winning slot while it is alive; a section's while it is alive or
        // holds a live item (§3.5).
        var visible = Array(repeating: false, count: n)
        var itemsShown = Array(repeating: 0, count: sections.count)
        for i in doc.items.indices where doc.items.isAlive(i) {
            visible[doc.items.rows[i.int].winner.int] = true
            itemsShown[doc.items.rows[i.int].section.int] += 1
        }
        doc.sectionShown = Array(repeating: false, count: sections.count)
        for s in doc.sections.indices {
            let shown = doc.sections.isAlive(s) || itemsShown[s.int] > 0
            doc.sectionShown[s.int] = shown
            if shown { visible[doc.sections.rows[s.int].winner.int] = true }
        }
        var forest = SlotForest()
        forest.leafOf = LeafTable(repeating: .none, count: n)
        for (t, order) in trees.enumerated() {
            var runs: [(start: LocalVersion, count: Int32)] = []
            for lv in order {
                if let last = runs.last, last.start.raw + last.count == lv {
                    runs[runs.count - 1].count += 1
                } else {
                    runs.append((LocalVersion(lv), 1))
                }
            }
            let (entries, bad) = StateSnapshotDecoder.entries(of: runs[...], tree: Int32(t), slots: doc.slots, visible: visible)
            assert(!bad.exists, "validated: every slot is in the tree of its sequence")
            _ = forest.appendTree(entries)
        }
        doc.forest = forest
        doc.versionVector = version
        doc.clock = clock
        doc.currentFrontier = Frontier(frontier)
        return doc
    }
}
