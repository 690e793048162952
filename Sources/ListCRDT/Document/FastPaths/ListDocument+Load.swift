import Foundation

/// Loading encoded batches (a saved history, a snapshot, a sync frame) without building one
/// ``ListOperation`` per typed character or deleted item.
extension ListDocument {
    /// Decodes a batch (Docs/WireFormat.md §2) and applies it, refusing a batch of more than
    /// `maxOperations` operations: exactly
    /// `receive(try ListOperation.decode(bytes, maxValueSize: maxValueSize, maxOperations: maxOperations))`
    /// (the same state, history, version, frontier, buffer and returned errors), but the batch's
    /// insert runs and delete runs are never expanded into operations: a run whose first operation
    /// applies at once (or, for a delete run, continues the operation applied last) goes in in one
    /// step. Anything else (other records, a run that waits for a dependency, duplicates, a
    /// document with buffered operations) takes the general path of ``receive(_:)-([ListOperation])``.
    ///
    /// - Throws: ``WireError`` when the bytes are malformed (values are limited to
    ///   ``maxValueSize``); the whole batch is decoded and validated first, so the document is then
    ///   exactly as it was.
    /// - Returns: what happened to the batch's operations; those refused are in
    ///   ``ReceiveReport/refused``.
    /// - Complexity: O(b) to decode b bytes; then O(n + log N) for an insert or delete run of n
    ///   operations that goes in in one step in a document of N slots (a delete run: of consecutive
    ///   typed items), plus the general path's cost of each other operation.
    @discardableResult
    public mutating func receive(
        encoded bytes: some Collection<UInt8>,
        maxOperations: Int = ListOperation.defaultMaxBatchOperations
    ) throws(WireError) -> ReceiveReport {
        let batch = try DecodedBatch.decode(bytes, maxValueSize: maxValueSize, maxOperations: maxOperations)
        return try apply(batch, strict: false)
    }

    /// Applies a decoded batch in order (``receive(operations:from:into:irregular:context:)``, with the
    /// run fast paths reading the batch's runs in place).
    ///
    /// When `strict` (loading a snapshot), every operation must apply at once (no error, no
    /// duplicate, none buffered, none waking buffered ones): else it throws
    /// ``WireError/inconsistentSnapshot(_:)`` naming the first that does not, and the document is
    /// left part-way (the caller discards it).
    ///
    /// Into an empty document (a history load), the delete runs leave the slots of the items
    /// that die visible and gather them (``RunContext/deaths``), and the insert runs into an item
    /// tree the forest holds nothing of keep its order aside (``RunContext/order``) while each run
    /// goes right after its left origin with its right origin next; both go into the trees at
    /// once, rebuilt packed (``settle(_:)``), at the end of the batch, before the first operation
    /// that takes the general path, or before an insert run with a slot between its origins. Until
    /// then nothing reads the trees kept aside or the trees' visibility: the run routes place
    /// slots by the order of the trees (or the lists) alone, and a section's visibility, which
    /// their inserts refresh, only goes from hidden to shown then (a live item was just added).
    mutating func apply(_ batch: DecodedBatch, strict: Bool) throws(WireError) -> ReceiveReport {
        var report = ReceiveReport()
        var irregular: String?
        var context = RunContext()
        let empty = slots.count == 0
        let slotsMade = reserveCapacity(for: batch)
        if empty {
            // About one run of slots that die per delete run (a history load's).
            context.deaths = []
            context.deaths!.reserveCapacity(batch.deleteRuns.count)
            context.order = PendingOrder(room: slotsMade)
        }
        var position = 0  // index in the batch of the part's first operation
        try batch.withView { (view) throws(WireError) in
            for part in batch.parts {
                switch part {
                case .operations(let ops):
                    receive(operations: OperationList(ops: ops), from: position, into: &report, irregular: &irregular,
                            context: &context)
                    position += ops.count
                case .insertRun(let r):
                    let run = DecodedInsertRun(view, r)
                    receive(operations: run, from: position, into: &report, irregular: &irregular, context: &context)
                    position += run.count
                case .deleteRun(let r):
                    let run = DecodedDeleteRun(view, r)
                    receive(operations: run, from: position, into: &report, irregular: &irregular, context: &context)
                    position += run.count
                case .textRun(let r):
                    let run = DecodedTextRun(view, r)
                    receive(operations: run, from: position, into: &report, irregular: &irregular, context: &context)
                    position += run.count
                case .lazyFields(let r):
                    // Only a state snapshot's load keeps field writes as bytes; decoded here all the same.
                    let ops = r.map { batch.operation(lazy: $0) }
                    receive(operations: OperationList(ops: ops), from: position, into: &report, irregular: &irregular,
                            context: &context)
                    position += ops.count
                }
                if strict, let irregular { throw .inconsistentSnapshot(irregular) }
            }
        }
        settle(&context)
        return report
    }

    /// Puts what the run routes kept aside in `context` into the trees: the order of the item
    /// trees kept aside (``RunContext/order``) and the slots gathered to hide (``RunContext/deaths``);
    /// the sections of both are refreshed. Keeping aside stops then (so that a batch rebuilds the
    /// trees at most once), unless there was nothing to put in.
    ///
    /// With a tree kept aside, or at least one run of slots gathered per ``slotsPerRebuild`` slots,
    /// the trees are rebuilt packed (``SlotForest/rebuild(hiding:pending:)``); else the gathered
    /// runs are hidden one by one, as the delete run route hides them at once.
    ///
    /// - Complexity: O(N + e + g) for N slots in e entries and g runs gathered, or O(g log N) (see
    ///   ``SlotForest/hideRange(_:count:)``) for few runs and no tree kept aside; O(1) when nothing
    ///   was kept aside.
    mutating func settle(_ context: inout RunContext) {
        let pendingTrees = context.order.map { !$0.isEmpty } ?? false
        guard pendingTrees || context.deaths?.isEmpty == false else { return }
        let deaths = context.deaths ?? [], order = context.order ?? PendingOrder()
        (context.deaths, context.order) = (nil, nil)
        guard pendingTrees || deaths.count * Self.slotsPerRebuild >= slots.count else {
            for death in deaths { hideDead(death.first, count: Int(death.count), section: death.section) }
            return
        }
        forest.rebuild(hiding: deaths.map { ($0.first, $0.count) }, pending: order)
        // The sections whose items were kept aside were not refreshed as their items came in.
        for s in 0 ..< sections.count where order.isPending(tree(ofSequence: .items(EntityIndex(s)))) {
            refreshSection(EntityIndex(s))
        }
        var refreshed = EntityIndex.none
        for death in deaths where death.section != refreshed {
            refreshSection(death.section)
            refreshed = death.section
        }
    }

    /// The most slots per gathered run of slots for which ``settle(_:)`` rebuilds the trees
    /// rather than hiding the runs one by one: a rebuild costs about 2.5 ns a slot, hiding a run
    /// about 100 ns (the automerge-paper history's load, 182,316 slots and 7,900 runs, issue 29).
    static let slotsPerRebuild = 32

    /// Makes room in the slot and item tables for the slots and items the batch's new insert runs
    /// add (at least doubling the room when it grows, as appending does): a run appends many at
    /// once. Runs whose first id is known here (duplicates) are not counted. The slot tables get
    /// room for the slots the other operations make too (section inserts, moves): without
    /// it, a history that starts with its section outgrew the room by one slot at its last run and
    /// copied the whole slot table and leaf index there. Returns the slots the new insert runs
    /// make.
    @discardableResult
    private mutating func reserveCapacity(for batch: DecodedBatch) -> Int {
        var n = 0
        for run in batch.insertRuns where run.id.counter > versionVector[run.id.replica] { n += run.count }
        if n == 0 { return 0 }
        var others = 0, otherRuns = 0  // slots the other operations make, and at most as many slot runs
        var otherOperations = 0
        for part in batch.parts {
            guard case .operations(let ops) = part else { continue }
            otherOperations += ops.count
            for op in ops {
                switch op.kind {
                case .insertSection, .insertItem, .moveSection, .insertItemWithFields, .insertSectionWithFields:
                    (others, otherRuns) = (others + 1, otherRuns + 1)
                case .moveItems(let list, _, _): (others, otherRuns) = (others + list.count, otherRuns + 1)
                default: break
                }
            }
        }
        var deletes = 0
        for run in batch.deleteRuns { deletes += run.count }
        // Into an empty document (a history load), the slot runs too: at most one per insert run
        // and per other operation that makes slots, which the table would otherwise reach by
        // doubling (copying itself each time) and overshoot.
        slots.reserveCapacity(forMore: n + others, runs: slots.count == 0 ? batch.insertRuns.count + otherRuns : 0)
        forest.reserveSlots(more: n + others)
        items.rows.reserveCapacity(more: n)
        items.insertValues.reserveCapacity(more: n)
        // Not the log records (nor the slot runs) but into an empty document: a run that extends
        // the last one adds none, and room for them all doubled those tables in documents loaded
        // with a short tail (W8's compacted snapshot loads). Into an empty document (a history
        // load), at most one record per run and per other operation, which the table would
        // otherwise reach by doubling (copying itself each time).
        log.reserveCapacity(seen: deletes)
        if log.count == 0 {
            log.reserveCapacity(records: batch.insertRuns.count + batch.deleteRuns.count + otherOperations)
        }
        return n
    }
}

// MARK: - Entity rows of a run

extension EntityTable {
    /// Adds the rows and values of the items made by a typed run, one per value: ids `id`,
    /// `id + 1`, …, placed at slots `lv`, `lv + 1`, … of section `s`, each with its value written
    /// by its own insert: what one ``append(id:slot:value:section:)`` per value does, with one
    /// reservation per array.
    ///
    /// - Complexity: O(n) amortized for n values.
    @inline(__always)
    mutating func appendRun(id: OpID, slot lv: LocalVersion, section s: EntityIndex, values: some Collection<Data>) {
        rows.append(contentsOf: RunRows(id: id, slot: lv, section: s, count: values.count))
        insertValues.append(contentsOf: values)
    }

    /// ``appendRun(id:slot:section:values:)`` for one-byte values: their bytes go in as they are.
    ///
    /// - Complexity: O(n) amortized for n values.
    @inline(__always)
    mutating func appendRun(id: OpID, slot lv: LocalVersion, section s: EntityIndex, values: DecodedBatch.OneByteValues) {
        rows.append(contentsOf: RunRows(id: id, slot: lv, section: s, count: values.count))
        insertValues.append(oneByteValues: values.bytes)
    }

    /// The rows of `count` items made by a typed run (see ``appendRun(id:slot:section:values:)``),
    /// as a sequence: appending a sequence reserves room once and writes the elements through a
    /// pointer (appending one at a time checks uniqueness and room for each; a closure, as in
    /// `lazy.map`, is not inlined there). It writes them in one loop (`_copyContents`, below).
    private struct RunRows: Sequence, IteratorProtocol {
        var id: OpID
        var lv: LocalVersion
        let section: EntityIndex
        var left: Int

        init(id: OpID, slot lv: LocalVersion, section: EntityIndex, count: Int) {
            (self.id, self.lv, self.section, left) = (id, lv, section, count)
        }

        var underestimatedCount: Int { left }

        mutating func next() -> Row? {
            guard left > 0 else { return nil }
            left -= 1
            defer { (id.counter, lv) = (id.counter &+ 1, lv.advanced(by: 1)) }
            return Row(id: id, winner: lv, section: section, state: .untouched)
        }

        /// Writes the rows left (as many as fit) straight into `buffer`, in one loop: what
        /// `Array.append(contentsOf:)` calls to fill its new room (the default calls ``next()``
        /// once per row, with its checks, in a function of its own: about 35 instructions a row).
        /// Returns the rows not written and the number written.
        func _copyContents(initializing buffer: UnsafeMutableBufferPointer<Row>) -> (RunRows, Int) {
            let n = Swift.min(left, buffer.count)
            guard n > 0, let base = buffer.baseAddress else { return (self, 0) }
            for k in 0 ..< n {
                (base + k).initialize(to: Row(id: OpID(counter: id.counter &+ UInt64(k), replica: id.replica),
                                              winner: lv.advanced(by: Int32(k)), section: section, packedState: -1))
            }
            var rest = self
            (rest.id.counter, rest.lv, rest.left) = (id.counter &+ UInt64(n), lv.advanced(by: Int32(n)), left - n)
            return (rest, n)
        }
    }
}

extension Array {
    /// Makes room for `n` more elements, at least doubling the room when it grows (as appending
    /// does, so that calling it for every batch stays amortized O(1) per element).
    mutating func reserveCapacity(more n: Int) {
        let needed = count + n
        if capacity < needed { reserveCapacity(Swift.max(needed, 2 * capacity)) }
    }
}
