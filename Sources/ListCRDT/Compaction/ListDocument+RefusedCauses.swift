/// Operations that wait for a cause this copy refused for its compaction floor
/// (Docs/Semantics.md §7, "A copy left out of a peer's floor", "What a compacted device does with
/// them").
///
/// A compacted copy refuses an operation made before its floor (``isBeforeFloor(_:)``): it may
/// name collected state. An operation that depends on one it refused can never apply here either
/// (its cause never will), yet the causal buffer would keep it waiting for ever: a device whose
/// copy re-synced from a compacted daemon's snapshot and then roamed to a daemon left out of that
/// floor was sent that daemon's operations made before it (seed 25 of `listsync simulate
/// --daemons 3 --compact-after 10 --hide-daemon --roam 30 --crashes 1`: 37 operations waiting at
/// the end, the run never quiet). The daemon left out makes them again when it merges back, and
/// those come as new operations. So the copy remembers, per replica, the greatest counter it
/// refused for the floor (a replica's operations form one causal chain: one made before another
/// that was not after the floor was not after it either), refuses an operation that would wait
/// for one of them, and drops what waits for it already. The daemon's core refuses the same
/// (``ListSync`` `DocumentCore.refuseBeforeFloor`), before its document sees them.
extension ListDocument {
    /// Whether `d`, a dependency, names an operation refused here for the floor (or an earlier one
    /// of its author's) that is neither applied nor waiting here: it will never apply.
    ///
    /// - Complexity: O(1) when nothing was refused; else that of a buffer look-up.
    func isRefusedCause(_ d: OpID) -> Bool {
        guard let refused = refusedBeforeFloor[d.replica], d.counter <= refused, !versionVector.contains(d) else { return false }
        return buffer.operation(d) == nil
    }

    /// The first dependency of `op` that is a refused cause (``isRefusedCause(_:)``), if any.
    ///
    /// - Complexity: O(1) when nothing was refused; else O(d) look-ups for d dependencies.
    func refusedCause(of op: ListOperation) -> OpID? {
        guard !refusedBeforeFloor.isEmpty else { return nil }
        for d in op.deps where isRefusedCause(d) { return d }
        return nil
    }

    /// Notes `op` as refused for the floor, and drops what waits for it (now, or with `sweep`
    /// false once the wake that found it is over).
    mutating func noteRefusedBeforeFloor(_ op: ListOperation, sweep: Bool = true) {
        refusedBeforeFloor[op.id.replica] = max(refusedBeforeFloor[op.id.replica] ?? 0, op.lastID.counter)
        if sweep { dropWaitingOnRefused() } else { refusalsToSweep = true }
    }

    /// Drops every waiting operation that depends, directly or through other waiting ones, on a
    /// refused cause; each is noted as refused too and listed in ``droppedOperations``.
    ///
    /// - Complexity: O(p log p) for p waiting operations (a refusal for the floor is rare: a copy
    ///   sent operations of a daemon left out of its floor).
    mutating func dropWaitingOnRefused() {
        refusalsToSweep = false
        guard buffer.count > 0, !refusedBeforeFloor.isEmpty else { return }
        // By counter: every dependency of an operation has a lesser one, so its fate is known
        // when the operation is looked at.
        let waiting = buffer.all.sorted { ($0.id.counter, $0.id.replica) < ($1.id.counter, $1.id.replica) }
        var kept: [ListOperation] = []
        var keptIDs = Set<OpID>()
        var drops: [(ListOperation, ApplyError)] = []
        for op in waiting {
            let cause = op.deps.first { d in
                !versionVector.contains(d) && !keptIDs.contains(d)
                    && refusedBeforeFloor[d.replica].map { d.counter <= $0 } == true
            }
            if let cause {
                refusedBeforeFloor[op.id.replica] = max(refusedBeforeFloor[op.id.replica] ?? 0, op.lastID.counter)
                drops.append((op, Self.onRefusedCause(op.id, cause)))
            } else {
                kept.append(op)
                for counter in op.id.counter...op.lastID.counter { keptIDs.insert(OpID(counter: counter, replica: op.id.replica)) }
            }
        }
        guard !drops.isEmpty else { return }
        keepWaiting(kept)
        dropped += drops
    }

    /// The refusal of an operation that depends on one refused for the floor.
    static func onRefusedCause(_ id: OpID, _ cause: OpID) -> ApplyError {
        .malformed(id, "it depends on \(cause), which was refused here as made before the version this document was compacted at; it can never apply here (its author's daemon makes such edits again when it merges back, Docs/Semantics.md, \"Compaction\")")
    }
}
