import Foundation

/// Every record of a document: for each section or item that has fields (by its id), its fields
/// by name. Most documents without fields keep this empty, at no cost to the list's paths.
struct RecordStore: Hashable, Sendable {
    /// The fields of each entity that has any, by the entity's id, but for those still in
    /// ``deferred`` (read them through ``subscript(_:)``).
    var materialized: [OpID: [String: FieldState]] = [:]
    /// Field writes of a loaded history not yet replayed (DeferredRecords.swift); shared by copies.
    var deferred: DeferredRecords?
    /// The deferred records this store has taken into ``materialized`` (they may have changed,
    /// or gone, since).
    var taken: Set<OpID> = []
    /// The greatest field-write clock applied here (the hybrid logical clock's memory).
    var clock: UInt64 = 0
    /// Conflicts this replica lost, not yet taken by ``ListDocument/takeFieldConflicts()``.
    var conflicts: [FieldConflict] = []
    /// Conflicts dropped because ``conflicts`` was full (nobody took them).
    var conflictsDropped = 0
    /// Whether applying writes reports conflicts (off while a snapshot's history is replayed).
    var reportsConflicts = true

    /// The most conflicts kept for ``ListDocument/takeFieldConflicts()``: 1,024 (older ones are
    /// dropped and counted).
    static let conflictLimit = 1024

    var isEmpty: Bool { materialized.isEmpty && deferred == nil }
    /// No record and a field clock of 0: nothing a compacted state writes (with a clock, the
    /// clock is written with no record: Docs/Semantics.md §8.9, "The field clock survives
    /// compaction").
    var isBlank: Bool { isEmpty && clock == 0 }

    /// Equal when every record is (deferred ones replayed), with the same clock and conflicts.
    static func == (a: RecordStore, b: RecordStore) -> Bool {
        a.clock == b.clock && a.conflicts == b.conflicts && a.conflictsDropped == b.conflictsDropped
            && a.reportsConflicts == b.reportsConflicts && a.allRecords == b.allRecords
    }

    func hash(into h: inout Hasher) {
        h.combine(clock)
        h.combine(count)
    }

    /// Applies the writes of operation `id` to the record of `target`. Returns what the fields
    /// they wrote count for now less what they counted for before (``FieldState/accountedBytes(name:)``:
    /// in all, and what a compaction would drop of them while the entity lives), measured in
    /// place as each write applies.
    ///
    /// - Complexity: O(w × (f + t)) for w writes, f the fields' live tags and t their members.
    @discardableResult
    mutating func apply(_ writes: FieldWrites, of id: OpID, to target: RecordTarget, local: ReplicaID) -> (held: Int, reclaimable: Int) {
        clock = max(clock, writes.clock)
        let stamp = FieldStamp(clock: writes.clock, id: id)
        let key = target.opID
        // One lookup of the record per operation, changed in place (not copied out and back); a
        // new record gets room for its writes at once (most records are made whole by an insert).
        var lost: [FieldConflict] = []
        var delta = (held: 0, reclaimable: 0)
        Self.apply(writes.writes, stamp: stamp, local: local,
                   to: &self[key, default: writes.writes.count], delta: &delta) { w, value, by, won in
            lost.append(FieldConflict(target: target, name: w.name, lost: value, won: won, localOperation: by, winner: id))
        }
        if reportsConflicts { for c in lost { report(c) } }
        return delta
    }

    /// Applies `writes` to one record's fields, adding to `delta` what each changed (measured in
    /// place); `lost` hears each of `local`'s writes beaten.
    static func apply(_ writes: [FieldWrite], stamp: FieldStamp, local: ReplicaID,
                              to fields: inout [String: FieldState], delta: inout (held: Int, reclaimable: Int),
                              lost: (FieldWrite, FieldValue?, OpID, FieldValue?) -> Void) {
        for w in writes {
            if let beaten = fields[w.name, default: FieldState()].applyMeasuring(w, stamp: stamp, local: local, delta: &delta) {
                lost(w, beaten.lost, beaten.by, fields[w.name]?.value)
            }
        }
    }

    private mutating func report(_ c: FieldConflict) {
        if conflicts.count >= Self.conflictLimit {
            conflicts.removeFirst()
            conflictsDropped += 1
        }
        conflicts.append(c)
    }

    /// The fields `target` shows (removed fields left out).
    func record(of id: OpID) -> [String: Field] {
        if let fields = materialized[id] { return Self.shown(fields) }
        // A deferred record is read without caching its fields' states when it can be
        // (DeferredRecords.swift).
        guard let deferred, !taken.contains(id) else { return [:] }
        return deferred.shown(of: id) ?? [:]
    }

    /// What `fields` show (removed fields left out).
    ///
    /// - Complexity: O(f + m log m) for f fields and m set members.
    static func shown(_ fields: [String: FieldState]) -> [String: Field] {
        var out = [String: Field](minimumCapacity: fields.count)
        for (name, state) in fields { if let f = state.shown { out[name] = f } }
        return out
    }

    /// The record of `id`, made empty with room for `capacity` fields when it has none (the
    /// deferred one taken first).
    subscript(id: OpID, default capacity: Int) -> [String: FieldState] {
        get { self[id] ?? [:] }
        _modify {
            take(id)
            yield &materialized[id, default: Dictionary(minimumCapacity: capacity)]
        }
    }

    /// Heap bytes, roughly, for ``ListDocument/memoryBreakdown``.
    var heapBytes: Int {
        (deferred?.heapBytes ?? 0) + materialized.reduce(materialized.capacity * 48) { total, r in
            r.value.reduce(total + r.value.capacity * 48) { t, f in
                t + f.key.utf8.count + 96 + f.value.increments.count * 40
                    + f.value.adds.reduce(0) { $0 + $1.key.utf8.count + 24 + $1.value.count * 16 }
                    + (f.value.text?.heapBytes ?? 0)
            }
        }
    }
}
