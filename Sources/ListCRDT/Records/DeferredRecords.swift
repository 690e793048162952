import Foundation

/// The field writes of a loaded history whose replay into records waits until a record is first
/// read or changed (issue 43: a state snapshot's load replayed every field write of the board, 97%
/// of its time).
///
/// A state snapshot keeps the field history as operations. Its loader checks every write as it
/// always did (the limits of ``ListDocument/problem(with:maxValueSize:)``, which do not depend on
/// any record), and files each write of a value, counter or set under its target instead of
/// applying it: such writes cannot fail against a record, so replaying them later gives exactly
/// the record an eager replay gives. Writes of text are applied at once (a text edit is checked
/// against its text), and so is every later write to a record that has one.
///
/// Immutable once built and shared by the copies of a document; the records it replays for
/// readers are kept in a cache behind a lock, so that reading a record twice replays it once. A
/// document changes a record only after taking it into its own ``RecordStore/materialized``
/// (``RecordStore/take(_:)``, which moves it out of the cache), so copies never see each other's
/// changes and no record is held twice.
final class DeferredRecords: @unchecked Sendable {
    /// One filed write: the operation's id and writes, and the next write to the same target
    /// (an index into ``writes``; -1: none).
    struct Write: Sendable {
        let id: OpID
        let writes: FieldWrites
        var next: Int32
    }

    /// What the loader files, in log order.
    struct Builder {
        var writes: [Write] = []
        /// Per target: its first and last write, and whether the target was a live item (or a
        /// section) at the load (set by ``ListDocument/finishDeferral()``).
        var targets: [OpID: (first: Int32, last: Int32, alive: Bool)] = [:]

        /// Files write `writes` of operation `id` to `target`.
        ///
        /// - Complexity: O(1) amortized.
        mutating func file(_ writes: FieldWrites, of id: OpID, to target: OpID) {
            precondition(self.writes.count < Int(Int32.max), "too many deferred writes")
            let k = Int32(self.writes.count)
            self.writes.append(Write(id: id, writes: writes, next: -1))
            if let t = targets[target] {
                self.writes[Int(t.last)].next = k
                targets[target] = (t.first, k, true)
            } else {
                targets[target] = (k, k, true)
            }
        }

        /// Takes the writes filed for `target` out (in order), to be applied at once.
        mutating func unfile(_ target: OpID) -> [Write] {
            guard let t = targets.removeValue(forKey: target) else { return [] }
            var out: [Write] = []
            var k = t.first
            while k >= 0 { out.append(writes[Int(k)]); k = writes[Int(k)].next }
            return out
        }
    }

    let writes: [Write]
    /// Per record: its first and last filed write; or, read from ``state``, where its body starts
    /// (and -1). Whether its entity was a live item or a section at the load.
    let targets: [OpID: (first: Int32, last: Int32, alive: Bool)]
    /// The replica of the document that loaded them (a write's `local` side).
    let local: ReplicaID
    /// Version 9 of the state snapshot: the records as state, each read from its bytes on first
    /// use instead of replayed (`Encoding/StateRecordsCoding.swift`); nil: from ``writes``.
    let state: StateRecords?

    private let lock = NSLock()
    private var cache: [OpID: [String: FieldState]] = [:]
    private var totals: ByteAccount?

    init(_ builder: Builder, local: ReplicaID, state: StateRecords? = nil) {
        writes = builder.writes
        targets = builder.targets
        self.local = local
        self.state = state
    }

    /// Whether writes were filed for `id`.
    func holds(_ id: OpID) -> Bool { targets[id] != nil }

    /// The record of `id` as its filed writes make it; nil when none were filed.
    ///
    /// - Complexity: O(w × f) for its w writes the first time, a hash look-up after.
    func fields(of id: OpID) -> [String: FieldState]? {
        guard let t = targets[id] else { return nil }
        if let hit = lock.withLock({ cache[id] }) { return hit }
        let fields = replay(id, from: t.first)
        lock.withLock {
            // Room for every record at the first read: a board is usually read whole, and the
            // cache grown one record at a time rehashed itself about log2(r) times.
            if cache.isEmpty { cache.reserveCapacity(targets.count) }
            cache[id] = fields
        }
        return fields
    }

    /// The record of `id` for a copy that takes it to change it: the cached one moves out of the
    /// cache (a copy that reads it later replays it again), so that it is not kept twice.
    ///
    /// - Complexity: as ``fields(of:)``.
    func take(_ id: OpID) -> [String: FieldState]? {
        guard let t = targets[id] else { return nil }
        return lock.withLock { cache.removeValue(forKey: id) } ?? replay(id, from: t.first)
    }

    /// What the record of `id` shows (``RecordStore/record(of:)``), nil when none was filed: read
    /// from the cache, or else, for a record kept as state, straight from its bytes without
    /// making (or caching) the fields' states; else replayed and cached.
    ///
    /// - Complexity: as ``fields(of:)``.
    func shown(of id: OpID) -> [String: Field]? {
        guard let t = targets[id] else { return nil }
        if let state, lock.withLock({ cache[id] }) == nil { return state.shown(at: Int(t.first), of: id) }
        return fields(of: id).map(RecordStore.shown)
    }

    private func replay(_ id: OpID, from first: Int32) -> [String: FieldState] {
        if let state { return state.fields(at: Int(first), of: id) }
        // Room for the first write's fields (usually the insert that carries them all), so the
        // record is not grown one field at a time.
        var fields = [String: FieldState](minimumCapacity: first >= 0 ? writes[Int(first)].writes.writes.count : 0)
        var delta = (held: 0, reclaimable: 0)
        var k = first
        while k >= 0 {
            let w = writes[Int(k)]
            RecordStore.apply(w.writes.writes, stamp: FieldStamp(clock: w.writes.clock, id: w.id), local: local,
                              to: &fields, delta: &delta) { _, _, _, _ in }
            k = w.next
        }
        return fields
    }

    /// What every filed record counts for (``ByteAccount``), each as of the load: a record of an
    /// item dead then is reclaimable whole. Found once (every record replayed), then kept.
    ///
    /// - Complexity: O(w × f) for all w filed writes, the first time.
    var account: ByteAccount {
        if let t = lock.withLock({ totals }) { return t }
        var sum = ByteAccount()
        for (id, t) in targets {
            // Replayed and measured, not cached: a daemon asks this once and may read no record.
            sum.add(lock.withLock({ cache[id] }) ?? replay(id, from: t.first), dead: !t.alive)
        }
        lock.withLock { totals = sum }
        return sum
    }

    /// Heap bytes, roughly (the writes' own parts are shared with the log's operations).
    /// (A state snapshot's records keep the snapshot's bytes.)
    var heapBytes: Int {
        writes.capacity * MemoryLayout<Write>.stride + targets.capacity * 40 + (state?.reader.bytes.count ?? 0)
    }
}

extension RecordStore {
    /// The fields of `id` (removed ones included), from ``materialized`` or else from the
    /// deferred writes; nil when it has none. Setting takes the record first (``take(_:)``).
    ///
    /// - Complexity: a hash look-up, plus the deferred replay the first time a record is read.
    subscript(id: OpID) -> [String: FieldState]? {
        get {
            if let f = materialized[id] { return f }
            guard let deferred, !taken.contains(id) else { return nil }
            return deferred.fields(of: id)
        }
        _modify {
            take(id)
            yield &materialized[id]
        }
        set {
            take(id)
            materialized[id] = newValue
        }
    }

    /// Moves `id`'s deferred record, if any, into ``materialized`` before it changes there.
    ///
    /// - Complexity: O(1) when nothing is deferred, else as ``DeferredRecords/fields(of:)``.
    @inline(__always)
    mutating func take(_ id: OpID) {
        guard let deferred, deferred.holds(id), !taken.contains(id) else { return }
        taken.insert(id)
        materialized[id] = deferred.take(id)
    }

    /// Calls `body` with every record, deferred ones replayed.
    ///
    /// - Complexity: O(r) for r records, plus the replay of those not yet read.
    func forEachRecord(_ body: (OpID, [String: FieldState]) -> Void) {
        for (id, fields) in materialized { body(id, fields) }
        guard let deferred else { return }
        for id in deferred.targets.keys where !taken.contains(id) { body(id, deferred.fields(of: id)!) }
    }

    /// Every record, deferred ones replayed (for compaction and the compacted encoding).
    ///
    /// - Complexity: as ``forEachRecord(_:)``.
    var allRecords: [OpID: [String: FieldState]] {
        guard deferred != nil else { return materialized }
        var out = materialized
        forEachRecord { id, fields in if out[id] == nil { out[id] = fields } }
        return out
    }

    /// The number of records.
    var count: Int { materialized.count + (deferred.map { d in d.targets.count - taken.count } ?? 0) }

    /// What the deferred records count for as of the load (``DeferredRecords/account``); zero
    /// when none are.
    var deferredAccount: ByteAccount { deferred?.account ?? ByteAccount() }
}
