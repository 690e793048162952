import Foundation

// Compaction at a version with concurrent operations outside it (Docs/Semantics.md §7,
// "Compacting under a chain of concurrent edits"). A stable prefix (ListDocument+PrefixCompaction.swift)
// needs every operation held outside it to be causally after it; devices that each edit before
// taking the others' last edits leave none past the floor. Here the document is compacted at `C`
// anyway: the operations outside `C` that are not after it (the *concurrent* ones, `X`) are all
// held already (every sender acknowledged `C` after sending them), so what they name is known,
// and compaction keeps it:
// - every item slot of `C` between the origins of an insert or move of `X` (the slots its
//   placement scans: with them and its origins kept, Fugue's scan compares the same positions);
// - every slot an operation of `X` names (origins, slots a delete saw), and each item it names
//   whole: its registers, its value even if dead, its records as they are (not folded, text not
//   compacted);
// - in every tree, the slot of `C` right before and right after every slot outside `C` (a later
//   insert that goes after a slot of `X` names the next slot as its right origin; the others
//   are the anchors a stable prefix keeps), and around every slot kept for `X` (one hidden at
//   `C` can show again once `X` is received: a move its delete did not see).
// The compacted document takes the operations of `X` again (the floor *admits* them,
// `CompactionFloor.admitted`), and every operation after `C` as a stable prefix does.

extension ListDocument {
    /// The greatest version within `stable` and this document's version that ends at operation
    /// boundaries and is causally closed (every dependency of an operation in it is in it), if it
    /// includes the floor and goes past it: where ``compact(stable:keepingConcurrent:)`` may
    /// compact, whatever operations outside it are concurrent with it. Nil otherwise.
    ///
    /// - Complexity: O(m × r) for m operations logged since the floor and r replicas, once per
    ///   shrink (none when `stable` is causally closed and ends at operation boundaries, as a
    ///   daemon's stable version does).
    public func concurrentPrefix(within stable: VersionVector) -> VersionVector? {
        let floor = compaction?.version ?? VersionVector()
        guard stable.includes(floor) else { return nil }
        var c = VersionVector()
        for e in stable.entries { c[e.replica] = min(e.counter, versionVector[e.replica]) }
        let history = PrefixHistory(self)
        var shrunk = true
        while shrunk {
            shrunk = false
            for (k, op) in history.ops.enumerated() where c.contains(op.id) {
                if !c.contains(op.lastID) || !c.includes(history.pasts[k]) {
                    c[op.id.replica] = op.id.counter - 1
                    shrunk = true
                }
            }
        }
        return c.includes(floor) && !floor.includes(c) ? c : nil
    }

    /// The operations logged here outside `c` that are not causally after it (their author had
    /// not seen all of `c`), in log order.
    ///
    /// - Complexity: O(m × r) for m operations logged since the floor and r replicas.
    public func concurrentOperations(outside c: VersionVector) -> [ListOperation] {
        let history = PrefixHistory(self)
        return history.ops.indices.filter { !c.contains(history.ops[$0].id) && !history.pasts[$0].includes(c) }
            .map { history.ops[$0] }
    }

    /// What a compaction at `c` keeps for the concurrent operations `concurrent`
    /// (``concurrentOperations(outside:)``), found on this document (which holds them and `c`).
    ///
    /// - Complexity: O(n + k) for n slots and k ids the operations name.
    func concurrentKeep(at c: VersionVector, concurrent: [ListOperation]) -> ConcurrentKeep {
        var keep = ConcurrentKeep()
        guard !concurrent.isEmpty, variant != .keepsNothingForConcurrent else { return keep }
        // Tree order of every slot, and where each is.
        var where_: [Int32: (tree: Int32, position: Int)] = [:]
        var order: [[LocalVersion]] = []
        for t in 0 ... sections.count {
            var lvs: [LocalVersion] = []
            forest.forEachRun(Int32(t)) { lv, count, _ in
                for k in 0 ..< count { lvs.append(lv.advanced(by: k)) }
            }
            for (p, lv) in lvs.enumerated() { where_[lv.raw] = (Int32(t), p) }
            order.append(lvs)
        }
        func inC(_ lv: LocalVersion) -> Bool { c.contains(slots.id(of: lv)) }
        // Spans to keep, per tree: the positions from an origin to the other.
        var spans: [Int32: [(Int, Int)]] = [:]
        for op in concurrent {
            for id in op.namedIDs {
                if let lv = slots.lv(of: id) {
                    keep.slots.insert(slots.id(of: lv))
                    if slots.sequence(of: lv).isItems, slots.id(of: lv) == id { keep.items.insert(id) }
                }
                keep.entities.insert(id)
            }
            let origins: (ListOperation.Origins, SectionID)?
            switch op.kind {
            case let .insertItem(s, o, _), let .moveItems(_, s, o), let .insertItemWithFields(s, o, _, _): origins = (o, s)
            default: origins = nil
            }
            guard let (o, section) = origins else { continue }
            let after = o.after.flatMap { slots.lv(of: $0.opID) }.flatMap { where_[$0.raw] }
            let before = o.before.flatMap { slots.lv(of: $0.opID) }.flatMap { where_[$0.raw] }
            let tree: Int32
            if let a = after { tree = a.tree } else if let b = before { tree = b.tree } else if
                let lv = slots.lv(of: section.opID) { tree = slots.entity(of: lv).raw + 1 } else { continue }
            spans[tree, default: []].append((after?.position ?? 0, before?.position ?? order[Int(tree)].count - 1))
        }
        for (t, list) in spans {
            let lvs = order[Int(t)]
            guard !lvs.isEmpty else { continue }
            var marks = Array(repeating: 0, count: lvs.count + 1)
            for (a, b) in list where a <= b { marks[a] += 1; marks[b + 1] -= 1 }
            var depth = 0
            for (p, lv) in lvs.enumerated() {
                depth += marks[p]
                if depth > 0 { keep.slots.insert(slots.id(of: lv)) }
            }
        }
        // The insert and winning slots of every item named whole (kept by the extraction too), and
        // around every slot kept so far: the nearest slot of `c` on each side. A slot hidden in `c`
        // can show again once the concurrent operations are received (a move of `X` its delete
        // did not see), and a later insert after it names the slot that follows it.
        for id in keep.items {
            guard let lv = slots.lv(of: id) else { continue }
            let row = items.rows[slots.entity(of: lv).int]
            keep.slots.insert(slots.id(of: row.winner))
        }
        for id in keep.slots {
            guard let lv = slots.lv(of: id), let at = where_[lv.raw] else { continue }
            let lvs = order[Int(at.tree)]
            if let p = lvs[..<at.position].lastIndex(where: inC) { keep.slots.insert(slots.id(of: lvs[p])) }
            if at.position + 1 < lvs.count, let n = lvs[(at.position + 1)...].firstIndex(where: inC) { keep.slots.insert(slots.id(of: lvs[n])) }
        }
        // Around every slot outside `c`: the nearest slot of `c` on each side.
        for lvs in order {
            var lastInC: LocalVersion? = nil
            var pendingAfter = false
            for lv in lvs {
                if inC(lv) {
                    if pendingAfter { keep.slots.insert(slots.id(of: lv)); pendingAfter = false }
                    lastInC = lv
                } else {
                    if let l = lastInC { keep.slots.insert(slots.id(of: l)) }
                    pendingAfter = true
                }
            }
        }
        return keep
    }

    /// ``compact(stable:)`` at a version `stable` this document holds, causally closed, past the
    /// floor (``concurrentPrefix(within:)``), with operations held outside it that are not after
    /// it (when `keepingConcurrent`): what they name is kept, and the floor admits them
    /// (Docs/Semantics.md §7, "Compacting under a chain of concurrent edits"). Every operation
    /// that arrives later must still be after `stable` (the caller's stable version says every
    /// sender saw it). With `keepingConcurrent` false, as ``compact(stable:)``.
    ///
    /// - Throws: ``CompactionError/notStablePrefix(stable:version:why:)`` when `stable` is not
    ///   such a version, or the document compacted there would show something else; nothing
    ///   changes then.
    /// - Complexity: O(n + e + m × r) for n slots, e entities, m logged operations and r
    ///   replicas, plus receiving the m operations again.
    @discardableResult
    public mutating func compact(stable: VersionVector, keepingConcurrent: Bool) throws(CompactionError) -> CompactionReport {
        guard keepingConcurrent else { return try compact(stable: stable) }
        guard !(stable.includes(versionVector) && versionVector.includes(stable)) else { return try compactQuiescent(stable: stable) }
        return try compactAtPrefix(stable, keepingConcurrent: true)
    }
}

/// What a compaction at a version with concurrent operations outside it keeps beyond what one at
/// a stable prefix keeps (``ListDocument/concurrentKeep(at:concurrent:)``).
struct ConcurrentKeep {
    /// Slots kept, by id (those of the compacted version; others are ignored).
    var slots: Set<OpID> = []
    /// Items kept whole: registers, value (even if dead), records as they are.
    var items: Set<OpID> = []
    /// Entities (and other ids) the concurrent operations name: their records are kept as they are.
    var entities: Set<OpID> = []
    /// The concurrent operations, which the floor takes when they are received again, each with
    /// the floor's heads in its past (set by the caller, which finds them on the compacted version).
    var admitted = AdmittedOperations()
}
