/// What a replica knows about every slot: its id, its origins, its sequence and what it holds.
///
/// Slots are numbered by local version (`lv`) in arrival order. Slots made together (an insert typed
/// right after the previous one by the same replica, or the slots of one multi-item move) share a
/// ``Run``: consecutive ids, consecutive local versions, the same right origin, and each slot's left
/// origin is the slot before it. So a typed run of a thousand items costs one run record.
struct SlotStore: Sendable {
    /// A run of slots made together.
    struct Run: Sendable {
        /// First local version.
        var lv: LocalVersion
        /// Number of slots.
        var count: Int32
        /// Id of the first slot; slot `k` has id `id.advanced(by: k)`.
        var id: OpID
        /// Left origin of the first slot (``LocalVersion/none`` for the start of the sequence).
        var left: LocalVersion
        /// Right origin of every slot (``LocalVersion/none`` for the end of the sequence).
        var right: LocalVersion
        /// The sequence: -1 for the section sequence, else the index of the section.
        var sequence: SequenceIndex

        /// The id of slot `lv`, one of this run's.
        @inline(__always)
        func id(of lv: LocalVersion) -> OpID { id.advanced(by: Int(lv.distance(from: self.lv))) }

        /// Left and right origins of slot `lv`, one of this run's: the first slot's left origin
        /// is the run's, each later one's the slot before it.
        @inline(__always)
        func origins(of lv: LocalVersion) -> (left: LocalVersion, right: LocalVersion) {
            (lv == self.lv ? left : lv.advanced(by: -1), right)
        }

        /// Whether slots with ids from `id` on, at `lv` on, the first with left origin `left`,
        /// all with right origin `right` in `sequence`, continue this run (a typed run goes on).
        @inline(__always)
        func isContinued(by id: OpID, at lv: LocalVersion, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex) -> Bool {
            self.id.replica == id.replica && self.id.counter &+ UInt64(count) == id.counter
                && self.lv.advanced(by: count) == lv && self.lv.advanced(by: count - 1) == left
                && self.right == right && self.sequence == sequence
        }
    }

    /// What a replica keeps for one slot: 8 bytes. Its id, origins and sequence are its run's
    /// (``Run/sequence``: one more load to read, 4 bytes less per slot, issue 29).
    struct Slot: Sendable {
        /// The entity (section index or item index) the slot places (one `Int32`).
        var entity: EntityIndex
        /// The slot's run (an index into `runs`).
        var run: Int32
    }

    /// Runs in local-version order.
    private(set) var runs: [Run] = []
    /// Every slot, by local version (one append per slot).
    private(set) var slots: [Slot] = []
    /// Each replica's runs of ids to local versions.
    private(set) var ids = IDRunIndex()

    typealias IDRun = IDRunIndex.Run
    typealias IDHint = IDRunIndex.Hint

    /// For each replica, its runs of ids in counter order.
    var idRuns: [[IDRun]] { ids.runs }

    /// Number of slots.
    var count: Int { slots.count }

    /// Adds one slot and returns its local version.
    ///
    /// - Complexity: O(1) amortized.
    mutating func append(id: OpID, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex, entity e: EntityIndex) -> LocalVersion {
        appendRun(id: id, count: 1, left: left, right: right, sequence: sequence, entity: e)
    }

    /// Adds `n` slots made together (ids `id`, `id + 1`, …, for entities `e`, `e + 1`, …): the first
    /// with left origin `left`, each later one right after the one before, all with right origin
    /// `right` (a typed run). Returns the first one's local version. The slots extend the last run
    /// when the first continues it (see ``append(id:left:right:sequence:entity:)``), and their
    /// replica's last id run when their ids and local versions continue it.
    ///
    /// - Complexity: O(n) amortized, with one run record.
    @inline(__always)
    mutating func appendRun(id: OpID, count n: Int, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex, entity e: EntityIndex) -> LocalVersion {
        let lv = LocalVersion(slots.count)
        if var last = runs.last, last.isContinued(by: id, at: lv, left: left, right: right, sequence: sequence) {
            last.count += Int32(n)
            runs[runs.count - 1] = last
        } else {
            runs.append(Run(lv: lv, count: Int32(n), id: id, left: left, right: right, sequence: sequence))
        }
        appendSlots(Slot(entity: e, run: Int32(runs.count - 1)), count: n)
        noteIDs(id, count: n, at: lv)
        return lv
    }

    /// An empty store.
    init() {}

    /// A store holding `runs` and `slots` as they are (built in place by
    /// ``load(slots:runs:_:)``), with each replica's id runs derived from the runs: the id runs
    /// ``appendRun(id:count:left:right:sequence:entity:)`` would have made appending them.
    ///
    /// - Complexity: O(runs).
    init(runs: [Run], slots: [Slot]) {
        self.runs = runs
        self.slots = slots
        for run in runs { noteIDs(run.id, count: Int(run.count), at: run.lv) }
    }

    @inline(__always)
    private mutating func noteIDs(_ id: OpID, count n: Int, at lv: LocalVersion) { ids.note(id, count: n, at: lv) }

    /// Appends the slot of the operation right after the last slot's, by the same replica, with
    /// the next local version, right after the last slot with the same right origin and sequence:
    /// what ``append(id:left:right:sequence:entity:)`` does for the next slot of a typed run, without
    /// its checks (the caller has made sure). Returns its local version.
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func appendContinuingLast(entity e: EntityIndex) -> LocalVersion {
        let lv = LocalVersion(slots.count)
        extendLastRun(by: 1, entity: e)
        return lv
    }

    /// Appends `n` slots (entities `e ..< e + n`) that continue the last slot run and its replica's
    /// last id run.
    ///
    /// - Complexity: O(n) amortized.
    @inline(__always)
    private mutating func extendLastRun(by n: Int, entity e: EntityIndex) {
        let run = runs.count - 1
        assert(runs[run].lv.advanced(by: runs[run].count) == LocalVersion(slots.count)
               && ids.lastRunEnds(at: LocalVersion(slots.count)), "the last slot does not end the last run")
        appendSlots(Slot(entity: e, run: Int32(run)), count: n)
        runs[run].count += Int32(n)
        ids.extendLast(by: n)
    }

    /// Appends `first` and `n - 1` slots like it for the next entities.
    @inline(__always)
    private mutating func appendSlots(_ first: Slot, count n: Int) {
        if n == 1 {
            slots.append(first)
        } else {
            slots.append(contentsOf: NumberedSlots(first: first, count: n))
        }
    }

    /// The local version of the slot with this id, or nil if unknown.
    ///
    /// - Complexity: O(log r) for r id runs of the replica.
    func lv(of id: OpID) -> LocalVersion? { ids.lv(of: id) }

    /// ``lv(of:)`` with a guess of where to look (``IDRunIndex/lv(of:hint:)``).
    ///
    /// - Complexity: O(1) when `id` is in the hinted id run or one next to it, else O(log r).
    @inline(__always)
    func lv(of id: OpID, hint: inout IDHint) -> LocalVersion? { ids.lv(of: id, hint: &hint) }

    /// The run holding slot `lv`.
    func run(of lv: LocalVersion) -> Run { runs[Int(slots[lv.int].run)] }

    /// The entity (section index or item index) slot `lv` places.
    @inline(__always) func entity(of lv: LocalVersion) -> EntityIndex { slots[lv.int].entity }

    /// The id of slot `lv`.
    func id(of lv: LocalVersion) -> OpID {
        run(of: lv).id(of: lv)
    }

    /// Left and right origins of slot `lv` (``LocalVersion/none`` for the ends of the sequence).
    func origins(of lv: LocalVersion) -> (left: LocalVersion, right: LocalVersion) {
        run(of: lv).origins(of: lv)
    }

    /// The sequence slot `lv` is in (-1: sections; else a section index).
    ///
    /// - Complexity: O(1) (the slot's run holds it).
    @inline(__always) func sequence(of lv: LocalVersion) -> SequenceIndex { runs[Int(slots[lv.int].run)].sequence }
}

/// `count` slots of one run for consecutive entities, from `first` on, as a sequence: appending a
/// sequence reserves room once and writes the elements through a pointer (appending one at a
/// time checks uniqueness and room for each; a closure, as in `lazy.map`, is not inlined there).
private struct NumberedSlots: Sequence, IteratorProtocol {
    var slot: SlotStore.Slot
    var left: Int

    init(first: SlotStore.Slot, count: Int) {
        slot = first
        left = count
    }

    var underestimatedCount: Int { left }

    mutating func next() -> SlotStore.Slot? {
        guard left > 0 else { return nil }
        left -= 1
        defer { slot.entity = slot.entity.advanced(by: 1) }
        return slot
    }

    /// Writes the slots left (as many as fit) straight into `buffer`, in one loop: what
    /// `Array.append(contentsOf:)` calls to fill its new room (the default calls ``next()`` once
    /// per slot). Returns the slots not written and the number written.
    func _copyContents(initializing buffer: UnsafeMutableBufferPointer<SlotStore.Slot>) -> (NumberedSlots, Int) {
        let n = Swift.min(left, buffer.count)
        guard n > 0, let base = buffer.baseAddress else { return (self, 0) }
        for k in 0 ..< n {
            (base + k).initialize(to: SlotStore.Slot(entity: slot.entity.advanced(by: Int32(truncatingIfNeeded: k)), run: slot.run))
        }
        var rest = self
        (rest.slot.entity, rest.left) = (slot.entity.advanced(by: Int32(truncatingIfNeeded: n)), left - n)
        return (rest, n)
    }
}

// MARK: - Reading many slots (delete runs)

extension SlotStore {
    /// Read access to the slots for a loop over many of them: each read is a load through a
    /// pointer, with no bounds check beyond the one on the local version and no copy.
    struct View {
        fileprivate let runs: UnsafeBufferPointer<Run>
        fileprivate let slots: UnsafeBufferPointer<Slot>

        /// Slot `lv`, or nil when there is no such slot.
        @inline(__always) func slot(_ lv: LocalVersion) -> Slot? {
            UInt32(bitPattern: lv.raw) < UInt32(slots.count) ? slots[lv.int] : nil
        }

        /// The sequence of `slot` (as ``SlotStore/sequence(of:)``).
        @inline(__always) func sequence(of slot: Slot) -> SequenceIndex { runs[Int(slot.run)].sequence }

        /// The id of `slot`, the slot at `lv` (as ``SlotStore/id(of:)``).
        @inline(__always) func id(of slot: Slot, at lv: LocalVersion) -> OpID {
            runs[Int(slot.run)].id(of: lv)
        }
    }

    /// Calls `body` with a ``View`` of the slots (valid only during the call).
    func withView<R>(_ body: (View) -> R) -> R {
        runs.withUnsafeBufferPointer { runs in
            slots.withUnsafeBufferPointer { slots in body(View(runs: runs, slots: slots)) }
        }
    }
}

// MARK: - Room for a loaded batch (ListDocument+Load.swift)

extension SlotStore {
    /// Makes room for `n` more slots at once (at least doubling the room when it grows, as
    /// appending does), and for `r` more runs, so that the runs of a loaded batch go in without
    /// reallocating on the way.
    ///
    /// - Complexity: O(count) when it grows, else O(1).
    mutating func reserveCapacity(forMore n: Int, runs r: Int = 0) {
        let needed = slots.count + n
        if slots.capacity < needed { slots.reserveCapacity(max(needed, 2 * slots.capacity)) }
        if runs.capacity < runs.count + r { runs.reserveCapacity(max(runs.count + r, 2 * runs.capacity)) }
    }
}
