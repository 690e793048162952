import Foundation

/// Loads a state snapshot (format version 2, Docs/WireFormat.md §5.2) by rebuilding the
/// document's tables directly, checking every field as it goes: an index out of range, a count the
/// input cannot hold, slots or log records that disagree, a tree that misses a slot or names one
/// twice, all throw a ``WireError``; nothing is trusted that a later step would index with.
///
/// What the snapshot does not hold is derived, so that it cannot disagree: the version vector and
/// the clock from the log, the position registers from the slots' writes, visibility from the
/// registers, the B-trees from the orders. A loaded document therefore always passes
/// ``ListDocument/checkInvariants()``, whatever bytes it came from.
struct StateSnapshotDecoder {
    var r: WireReader
    let replica: ReplicaID
    let maxValueSize: Int
    var doc: ListDocument
    var replicas: [ReplicaID] = []
    /// A delete record's seen slots (reused from record to record).
    var seen: [LocalVersion] = []
    /// The slots of moves (not new entities), as ranges of local versions in increasing order.
    var moveSlots: [Range<LocalVersion>] = []
    /// The item slot runs that made new entities, in entity order: the items' rows are written
    /// from them in one pass once the items' delete registers are read (``readItemDeletes()``).
    var itemPieces: [(id: OpID, lv: LocalVersion, section: EntityIndex, count: Int)] = []
    /// The number of items.
    var itemCount = 0
    /// Whether each slot shows, and how many items each section shows: derived as the items'
    /// rows are written, completed by ``readTrees()`` with the sections.
    var visible: [Bool] = []
    var itemsShown: [Int] = []
    /// Version 5: the log's operations of other kinds, read ahead of the log, as the log's
    /// records take them (nil: version 2, each record holds its own).
    var others: OtherOperationStream?
    /// Field writes of values, counters and sets, filed per record for a replay on first use
    /// (DeferredRecords.swift).
    var deferral = DeferredRecords.Builder()
    /// Version 7: the records that hold text, read ahead of the log as state and checked against
    /// it (`StateSnapshotDecoding+Text.swift`); nil before version 7.
    var textState: TextStateCheck?
    /// Version 8: the log may hold text run records (tag 6).
    let textRuns: Bool
    /// Version 9: every record is read as state (``readStateRecords()``), the records without
    /// text on first use; set once they are read.
    let allRecordsState: Bool
    /// Version 10: a record the records part does not hold is made from the log's field writes,
    /// as version 5 makes a record with text (its text was pasted: its characters are in the log).
    /// (Version 11: as its records part's flag says.)
    var pastedRecords: Bool
    /// Version 11: typed texts made from the log (`DerivedTextCoding.swift`).
    let derivedTexts: Bool
    var stateRecords: StateRecords?
    /// Version 9 and later: the history's field writes without text are checked and kept as
    /// bytes in the log (`History/LazyOperations.swift`), not decoded (false: decoded, as builds
    /// before it did; for tests).
    let lazyLog: Bool
    /// Per replica index: one past the greatest counter of the log read so far.
    var lastEnd: [UInt64] = []
    /// The index of each replica in ``replicas``.
    var replicaIndexOf: [ReplicaID: Int] = [:]
    /// The most slots, and log operations, the input may claim (16 per byte, plus 65,536: every
    /// slot or operation but a run's costs at least a byte, and runs are bounded likewise).
    let limit: Int

    /// A decoder reading `reader` from its offset (right after the magic and the version byte).
    init(_ reader: WireReader, replica: ReplicaID, maxValueSize: Int, othersInOneBatch: Bool = false,
         textRecords: Bool = false, textRuns: Bool = false, stateRecords: Bool = false, pastedRecords: Bool = false,
         derivedTexts: Bool = false, lazyLog: Bool = true) {
        r = reader
        self.derivedTexts = derivedTexts
        self.lazyLog = lazyLog
        self.textRuns = textRuns
        allRecordsState = stateRecords
        self.pastedRecords = pastedRecords
        if othersInOneBatch { others = OtherOperationStream() }
        if textRecords { textState = TextStateCheck() }
        self.replica = replica
        self.maxValueSize = maxValueSize
        doc = ListDocument(replica: replica, maxValueSize: maxValueSize)
        let n = r.remaining
        // (And fewer than 2^31: slots and log positions are Int32s.)
        limit = n >= (Int(Int32.max) - 65_536) / 16 ? Int(Int32.max) - 1 : n * 16 + 65_536
    }

    typealias Tag = StateSnapshotEncoder.RecordTag

    /// Decodes everything after the magic and the version byte.
    mutating func decode() throws(WireError) -> ListDocument {
        let nReplicas = try r.count(minBytes: 1)
        replicas.reserveCapacity(nReplicas)
        var seenReplicas = Set<ReplicaID>()
        for _ in 0 ..< nReplicas {
            let at = r.offset
            let id = ReplicaID(try r.varint())
            guard seenReplicas.insert(id).inserted else { throw .invalidValue("replica \(id) listed twice", offset: at) }
            replicaIndexOf[id] = replicas.count
            replicas.append(id)
        }
        try readSlots()
        if others != nil {
            let n = try r.count(minBytes: 1)
            let batch = try DecodedBatch.decode(try r.raw(n), maxValueSize: maxValueSize, maxOperations: limit,
                                                lazyFields: allRecordsState && lazyLog)
            if let source = batch.lazySource { doc.log.keepLazily(source) }
            others = OtherOperationStream(batch)
        }
        if allRecordsState { try readStateRecords() } else if textState != nil { try readTextRecords() }
        // The history's field writes rebuild the records: history, not news (no conflicts reported).
        doc.records.reportsConflicts = false
        // Room for a record per entity at once (growing the table was 4% of a kanban's load).
        if !allRecordsState, let others, others.count > 0 {
            deferral.targets.reserveCapacity(min(others.count, itemCount + doc.sections.count))
        }
        try readLog()
        doc.records.reportsConflicts = true
        var none: [EntityIndex] = []
        deriveWinners(items: false, touched: &none)   // the items' come with their rows
        try readSectionDeletes()
        try readItemDeletes()
        try readValues(items: false)
        try readValues(items: true)
        try readFrontier()
        try readTrees()
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        try finishTextRecords(at: r.offset)
        try finishDeferral(at: r.offset)
        return doc
    }

    // MARK: Fields

    @inline(__always)
    mutating func replicaIndex() throws(WireError) -> Int {
        let at = r.offset
        let k = try r.varint()
        guard k < UInt64(replicas.count) else { throw .invalidValue("replica index \(k) not in the table", offset: at) }
        return Int(k)
    }

    mutating func counter(_ v: UInt64, at: Int) throws(WireError) -> UInt64 {
        guard v >= 1, v <= OpID.maxCounter else { throw .invalidValue("counter \(v) out of range", offset: at) }
        return v
    }

    mutating func id() throws(WireError) -> OpID {
        let k = try replicaIndex()
        let at = r.offset
        return OpID(counter: try counter(try r.varint(), at: at), replica: replicas[k])
    }

    /// A count of at most `max`.
    @inline(__always)
    mutating func bounded(_ max: Int) throws(WireError) -> Int {
        let at = r.offset
        let v = try r.varint()
        guard max >= 0, v <= UInt64(max) else { throw .countTooLarge(v > UInt64(Int.max) ? Int.max : Int(v), offset: at) }
        return Int(v)
    }

    /// `base + zigzag delta`, checked to lie in `lowest ... highest`.
    @inline(__always)
    mutating func offsetValue(from base: Int64, lowest: Int64, highest: Int64) throws(WireError) -> Int64 {
        let at = r.offset
        let d = try r.signed()
        let (v, overflow) = base.addingReportingOverflow(d)
        guard !overflow, v >= lowest, v <= highest else { throw .invalidValue("a number out of range", offset: at) }
        return v
    }

    // MARK: Slots

    /// The slot runs, with the entities they place; makes the entities' rows (values come later).
    /// The slots are written in place (``SlotStore/load(slots:runs:_:)``): the count is known.
    mutating func readSlots() throws(WireError) {
        let at = r.offset
        let slotCount = try r.varint()
        guard slotCount <= UInt64(min(limit, Int(Int32.max) - 1)) else {
            throw .countTooLarge(slotCount > UInt64(Int.max) ? Int.max : Int(slotCount), offset: at)
        }
        let n = Int(slotCount)
        let pieces = try r.count(minBytes: 7)
        // The items' rows are written in one pass later, from these pieces (``readItemDeletes()``).
        itemPieces.reserveCapacity(pieces)
        // Each piece starts at most one run: a move's later slots continue its first one's run.
        doc.slots = try SlotStore.load(slots: n, runs: pieces) { (slots: inout SlotStore.Loading) throws(WireError) in
            try readSlotRuns(pieces, of: n, countAt: at, into: &slots)
        }
        doc.sectionShown = Array(repeating: false, count: doc.sections.count)
    }

    /// The `pieces` slot runs of `n` slots (a count read at offset `at`), written to `slots`.
    private mutating func readSlotRuns(_ pieces: Int, of n: Int, countAt at: Int, into slots: inout SlotStore.Loading) throws(WireError) {
        var lastEnd = Array(repeating: UInt64(0), count: replicas.count)
        var previousEnd: UInt64 = 0
        var lv = LocalVersion(0)
        for _ in 0 ..< pieces {
            let countAt = r.offset
            let count = try bounded(n - lv.int)
            guard count >= 1 else { throw .invalidValue("empty slot run", offset: countAt) }
            let k = try replicaIndex()
            let counterAt = r.offset
            let c = UInt64(bitPattern: try offsetValue(from: Int64(bitPattern: previousEnd), lowest: 1, highest: Int64(OpID.maxCounter)))
            guard c >= lastEnd[k], c <= OpID.maxCounter - UInt64(count) + 1 else {
                throw .invalidValue("slot ids out of order or out of range", offset: counterAt)
            }
            let originAt = r.offset
            let left = try bounded(lv.int), right = try bounded(lv.int)
            let seq = try bounded(doc.sections.count)
            let sequence: SequenceIndex = seq == 0 ? .sections : .items(EntityIndex(Int32(seq - 1)))
            let leftLV = left == 0 ? .none : lv.advanced(by: -left), rightLV = right == 0 ? .none : lv.advanced(by: -right)
            guard !leftLV.exists || slots.sequence(of: leftLV) == sequence,
                  !rightLV.exists || slots.sequence(of: rightLV) == sequence else {
                throw .invalidValue("an origin is in another sequence", offset: originAt)
            }
            let modeAt = r.offset
            let mode = try r.byte()
            let id = OpID(counter: c, replica: replicas[k])
            let isItems = sequence.isItems
            switch mode {
            case 0:  // new entities: an insert's slots
                let e = EntityIndex(isItems ? itemCount : doc.sections.count)
                _ = slots.appendRun(id: id, count: count, left: leftLV, right: rightLV, sequence: sequence, entity: e)
                if isItems {
                    itemPieces.append((id, lv, sequence.section, count))
                    itemCount += count
                } else {
                    doc.sections.appendRows(id: id, slot: lv, section: .none, count: count)
                }
            case 1:  // existing entities: a move's slots
                if let last = moveSlots.last, last.upperBound == lv {
                    moveSlots[moveSlots.count - 1] = last.lowerBound ..< lv.advanced(by: count)
                } else {
                    moveSlots.append(lv ..< lv.advanced(by: count))
                }
                for j in 0 ..< count {
                    let e = try bounded(isItems ? itemCount - 1 : doc.sections.count - 1)
                    _ = slots.append(id: id.advanced(by: j), left: j == 0 ? leftLV : lv.advanced(by: j - 1), right: rightLV,
                                     sequence: sequence, entity: EntityIndex(e))
                }
            default:
                throw .invalidTag(mode, offset: modeAt)
            }
            lastEnd[k] = c + UInt64(count)
            previousEnd = lastEnd[k]
            lv = lv.advanced(by: count)
        }
        guard lv.int == n else { throw .invalidValue("the slot runs hold \(lv) slots, not \(n)", offset: at) }
    }

    // MARK: Log

    /// The log records, each checked against the slots; the version vector follows from them.
    mutating func readLog() throws(WireError) {
        // A record takes at least 3 bytes, but for one of another kind in version 5, whose
        // operation is in the batch ahead: its tag and replica only (2 bytes; a typed text makes
        // one per splice, so requiring 3 refused a snapshot of 100 keystrokes).
        let records = try r.count(minBytes: others != nil ? 2 : 3)
        doc.log.reserveCapacity(records: records)
        lastEnd = Array(repeating: UInt64(0), count: replicas.count)
        var nextSlot: Int64 = 0
        var previousEnd: UInt64 = 0
        var covered = 0
        let slotCount = Int64(doc.slots.count)
        for _ in 0 ..< records {
            let headAt = r.offset
            let head = try r.byte()
            guard head & ~(0x07 | StateSnapshotEncoder.explicitDepsFlag) == 0,
                  let tag = Tag(rawValue: head & 0x07) else { throw .invalidTag(head, offset: headAt) }
            let k = try replicaIndex()
            let bodyAt = r.offset
            var first: OpID
            var span: Int
            var other: ListOperation?
            var lazy: DecodedBatch.LazyField?
            var splices: [LoggedSplices] = []
            var payload = LocalVersion(0)
            switch tag {
            case .insertSection, .insertItem, .moveSection, .moveItems:
                let lv = try offsetValue(from: nextSlot, lowest: 0, highest: max(0, slotCount - 1))
                span = try bounded(Int(slotCount - lv))
                guard span >= 1, tag != .moveSection || span == 1 else { throw .invalidValue("bad record length", offset: bodyAt) }
                payload = LocalVersion(Int32(lv))
                first = try checkSlots(from: payload, count: span, tag: tag, replica: replicas[k], at: bodyAt)
                nextSlot = lv + Int64(span)
                covered += span
            case .deleteItem:
                let c = UInt64(bitPattern: try offsetValue(from: Int64(bitPattern: previousEnd), lowest: 1, highest: Int64(OpID.maxCounter)))
                span = try bounded(limit - doc.log.count)
                guard span >= 1 else { throw .invalidValue("empty delete record", offset: bodyAt) }
                first = OpID(counter: c, replica: replicas[k])
                try readSeen(span)
            case .textRun:
                // Version 8: `n` splices of one text field, the next operations of the batch ahead.
                guard textRuns, others != nil else { throw .invalidTag(head, offset: headAt) }
                let countAt = r.offset
                let n = try bounded(limit - doc.log.count)
                guard n >= 1, others!.taken + n <= others!.count else { throw .invalidValue("a text run of \(n) operations", offset: countAt) }
                splices = try takeSplices(n, replica: k, at: countAt)   // StateSnapshotDecoding+TextRuns.swift
                switch splices[0] {
                case .one(let op): first = op.id
                case let .run(run, from, _): first = run.id.advanced(by: from)
                }
                span = n
            case .other:
                let blobAt = r.offset
                if let f = try lazyOperation(k, at: blobAt, covered: &covered) {
                    lazy = f
                    first = f.id
                    span = 1
                } else {
                    other = try otherOperation(k, at: blobAt, covered: &covered)
                    first = other!.id
                    // One operation; a text edit spans one id per character it inserts.
                    span = other!.span
                }
            }
            let ops = tag == .moveItems || tag == .other ? 1 : span
            guard doc.log.count + ops <= limit, first.counter >= lastEnd[k],
                  first.counter <= OpID.maxCounter - UInt64(span) + 1 else {
                throw .invalidValue("log ids out of order or out of range", offset: bodyAt)
            }
            lastEnd[k] = first.counter + UInt64(span)
            previousEnd = lastEnd[k]
            var deps: Frontier
            if head & StateSnapshotEncoder.explicitDepsFlag != 0 {
                let n = try r.count(minBytes: 2)
                var ids: [OpID] = []
                for _ in 0 ..< n { ids.append(try id()) }
                deps = Frontier(ids)
            } else if let last = doc.log.records.indices.last {
                deps = Frontier(only: doc.log.lastID(record: last, operation: doc.log.records[last].operations - 1))
            } else {
                deps = Frontier()
            }
            if let f = lazy {
                doc.log.append(lazy: f.id, deps: deps, payloadBytes: f.footprint, offset: f.offset, previousLast: f.previousLast,
                               lastSection: f.lastSection, lastClock: f.lastClock)
                continue
            }
            try appendRecord(tag, first: first, span: span, payload: payload, deps: deps, other: &other, splices: splices)
        }
        if let others, others.taken != others.count {
            throw .invalidValue("\(others.count - others.taken) operations of other kinds that no record takes", offset: r.offset)
        }
        guard covered == doc.slots.count else {
            throw .invalidValue("the log's inserts and moves make \(covered) slots, not \(doc.slots.count)", offset: r.offset)
        }
        var counters: [ReplicaID: UInt64] = [:]
        for (k, end) in lastEnd.enumerated() where end > 0 { counters[replicas[k]] = end - 1 }
        doc.versionVector = VersionVector(counters)
        doc.clock = lastEnd.max().map { $0 > 0 ? $0 - 1 : 0 } ?? 0
    }

    /// Appends a record read by ``readLog()`` to the log.
    private mutating func appendRecord(_ tag: Tag, first: OpID, span: Int, payload: LocalVersion, deps: Frontier,
                                       other: inout ListOperation?, splices: [LoggedSplices]) throws(WireError) {
        var deps = deps
        switch tag {
        case .insertSection:
            for j in 0 ..< span {
                doc.log.append(id: first.advanced(by: j), deps: deps, kind: .insertSection, span: 1, payload: payload.advanced(by: j))
                deps = Frontier(only: first.advanced(by: j))
            }
        case .insertItem:
            doc.log.append(id: first, deps: deps, kind: .insertItem, span: 1, payload: payload)
            if span > 1 { doc.log.extendInsertRun(by: span - 1) }
        case .moveSection:
            doc.log.append(id: first, deps: deps, kind: .moveSection, span: 1, payload: payload)
        case .moveItems:
            doc.log.append(id: first, deps: deps, kind: .moveItems, span: span, payload: payload)
        case .deleteItem:
            doc.log.append(id: first, deps: deps, kind: .deleteItem, span: 1, payload: seen[0])
            if span > 1 { doc.log.extendDeleteRun(seen: seen[1...]) }
        case .other:
            var op = other.take()!
            op.deps = deps
            doc.log.append(other: op)
        case .textRun:
            appendSplices(splices, deps: deps)
        }
    }

    /// The next operation of another kind (of replica index `k`): the next of the batch ahead
    /// (version 5), or its own batch behind the record's length (version 2); its field writes
    /// applied to the records, or checked against a record loaded as state (version 7).
    mutating func otherOperation(_ k: Int, at blobAt: Int) throws(WireError) -> ListOperation {
        var covered = 0
        let op = try otherOperation(k, at: blobAt, covered: &covered)
        guard covered == 0 else { throw .invalidValue("an insert in a text run", offset: blobAt) }
        return op
    }

    /// When the next operation of the batch ahead is a field write kept as bytes
    /// (`OperationScanning.swift`) to a record the snapshot holds as state: it, taken, checked as
    /// ``otherOperation(_:at:covered:)`` checks it (its writes were checked by the batch decoder;
    /// without text, they have nothing to check against the record). Nil, taking nothing, for
    /// anything else (a record of version 10 left to the log is made from its writes: decoded).
    private mutating func lazyOperation(_ k: Int, at blobAt: Int, covered: inout Int) throws(WireError) -> DecodedBatch.LazyField? {
        guard others != nil, let f = others!.peekLazy() else { return nil }
        guard deferral.targets[f.target] != nil || textState!.records[f.target] != nil else {
            guard pastedRecords else {
                throw .invalidValue("a field write to \(f.target), whose record the snapshot does not hold", offset: blobAt)
            }
            return nil
        }
        guard f.id.replica == replicas[k] else {
            throw .invalidValue("an operation not of the record's replica", offset: blobAt)
        }
        switch f.kind {
        case .writeItem, .writeSection: break
        case .insertItem:
            guard let lv = doc.slots.lv(of: f.id), doc.slots.sequence(of: lv).isItems else {
                throw .invalidValue("an insert record whose slot is not a new item's", offset: blobAt)
            }
            covered += 1
        case .insertSection:
            guard let lv = doc.slots.lv(of: f.id), doc.slots.sequence(of: lv) == .sections else {
                throw .invalidValue("an insert record whose slot is not a new section's", offset: blobAt)
            }
            covered += 1
        }
        doc.records.clock = max(doc.records.clock, f.clock)
        others!.skip(1)
        return f
    }

    private mutating func otherOperation(_ k: Int, at blobAt: Int, covered: inout Int) throws(WireError) -> ListOperation {
        let op: ListOperation
        if others != nil {
            guard others!.taken < others!.count else { throw .invalidValue("more records of other kinds than operations", offset: blobAt) }
            // Moved out, not copied (a copy retains every part of the operation).
            op = others!.next()
        } else {
            let n = try r.count(minBytes: 1)
            let ops = try ListOperation.decode(try r.raw(n), maxValueSize: maxValueSize, maxOperations: 1)
            guard ops.count == 1 else { throw .invalidValue("not one operation", offset: blobAt) }
            op = ops[0]
        }
        guard op.id.replica == replicas[k] else {
            throw .invalidValue("an operation not of the record's replica", offset: blobAt)
        }
        switch op.kind {
        case .deleteSection, .setItemValue, .setSectionValue: break
        case let .writeFields(target, writes):
            // The history holds every field write: the records are rebuilt from it.
            try applyHistory(writes, of: op.id, to: target, at: blobAt)
        case let .insertItemWithFields(_, _, _, writes):
            // Its slot is in the slot runs already: a new item's, with this id.
            // (The items' rows come later, with their ids checked against their slots.)
            guard let lv = doc.slots.lv(of: op.id), doc.slots.sequence(of: lv).isItems else {
                throw .invalidValue("an insert record whose slot is not a new item's", offset: blobAt)
            }
            try applyHistory(writes, of: op.id, to: .item(ItemID(op.id)), at: blobAt)
            covered += 1
        case let .insertSectionWithFields(_, _, writes):
            // The same for a new section's slot (wire format 5).
            guard let lv = doc.slots.lv(of: op.id), doc.slots.sequence(of: lv) == .sections else {
                throw .invalidValue("an insert record whose slot is not a new section's", offset: blobAt)
            }
            try applyHistory(writes, of: op.id, to: .section(SectionID(op.id)), at: blobAt)
            covered += 1
        default: throw .invalidValue("an operation of this kind has a record of its own", offset: blobAt)
        }
        return op
    }

    /// One history operation's field writes, checked as a received operation's are (the limits,
    /// and each text edit against its field: the history is in causal order), then applied to
    /// the records.
    mutating func applyHistory(_ writes: FieldWrites, of id: OpID, to target: RecordTarget, at offset: Int) throws(WireError) {
        // Every operation here came out of the batch decoder, which checked the names and their order.
        if let problem = ListDocument.problem(with: writes, maxValueSize: maxValueSize, namesChecked: true) {
            throw .invalidValue("field \"\(problem.name)\": \(problem.why)", offset: offset)
        }
        let key = target.opID
        // Version 9: every record is in the state; version 7: the records with typed text. A
        // record in the state has its writes checked (each text edit against its text,
        // `checkLogged`), none applied.
        if allRecordsState ? deferral.targets[key] != nil || textState!.records[key] != nil : textState?.records[key] != nil {
            try checkLogged(writes, of: id, record: key, at: offset)
            doc.records.clock = max(doc.records.clock, writes.clock)
            return
        }
        if allRecordsState {
            // Version 10: a record left to the log is made now, write by write, as below (nothing
            // of it is filed: the filed records are read from the state).
            guard pastedRecords else {
                throw .invalidValue("a field write to \(key), whose record the snapshot does not hold", offset: offset)
            }
        } else if doc.records.materialized[key] == nil && !writes.writes.contains(where: { if case .text = $0.change { true } else { false } }) {
            // Cannot fail against the record: filed, replayed when the record is first used.
            deferral.file(writes, of: id, to: key)
            doc.records.clock = max(doc.records.clock, writes.clock)
            return
        }
        // A text edit is checked against its text: the record is made now, in order.
        for w in deferral.unfile(key) { doc.records.apply(w.writes, of: w.id, to: target, local: doc.replica) }
        if let why = doc.textProblem(writes, of: target) { throw .invalidValue(why, offset: offset) }
        doc.records.apply(writes, of: id, to: target, local: doc.replica)
    }

    /// Hands the filed writes to the document, each record marked with whether its entity is a
    /// live item or a section now (what its bytes count for, ``RecordStore/deferredAccount``).
    ///
    /// - Complexity: O(r) for r records filed.
    /// Version 9: each record read as state must be a section's or an item's (an error at
    /// `offset` else), and is read from ``stateRecords`` on first use.
    ///
    /// - Complexity: O(r) for r records filed.
    mutating func finishDeferral(at offset: Int) throws(WireError) {
        guard !deferral.targets.isEmpty else { return }
        for i in deferral.targets.indices {
            let id = deferral.targets.keys[i]
            if let e = doc.itemEntity(ItemID(id)) {
                deferral.targets.values[i].alive = doc.items.isAlive(e)
            } else {
                guard stateRecords == nil || doc.sectionEntity(SectionID(id)) != nil else {
                    throw .invalidValue("a record for \(id), not a section or an item", offset: offset)
                }
                deferral.targets.values[i].alive = true
            }
        }
        doc.records.deferred = DeferredRecords(deferral, local: doc.replica, state: stateRecords)
    }

    /// The operation at `slot`, moved out (a cheap placeholder is left behind).
    @inline(__always)
    static func take(_ slot: inout ListOperation) -> ListOperation {
        var out = ListOperation(id: .none, deps: Frontier(), kind: .setSectionValue(SectionID(.none), Data()))
        swap(&out, &slot)
        return out
    }

    /// Checks that slots `lv ..< lv + count` have consecutive ids of `replica` and are the slots
    /// the record says (new entities' slots for an insert, in the right level), and returns the
    /// first id.
    mutating func checkSlots(from lv: LocalVersion, count: Int, tag: Tag, replica: ReplicaID, at: Int) throws(WireError) -> OpID {
        let first = doc.slots.id(of: lv)
        guard first.replica == replica else { throw .invalidValue("the record's replica is not its slots'", offset: at) }
        let inItems = tag == .insertItem || tag == .moveItems
        let new = tag == .insertSection || tag == .insertItem
        var x = lv
        let end = lv.advanced(by: count)
        while x < end {
            let run = doc.slots.run(of: x)
            guard run.id.advanced(by: Int(x.distance(from: run.lv))) == first.advanced(by: Int(x.distance(from: lv))),
                  run.sequence.isItems == inItems else {
                throw .invalidValue("the record's slots are not its operations'", offset: at)
            }
            x = min(end, run.lv.advanced(by: run.count))
        }
        // An insert's slots are in no move range; a move's are all in one.
        let k = moveSlots.partitionPoint { $0.upperBound <= lv }
        let inMove = k < moveSlots.count && moveSlots[k].lowerBound <= lv
        let ok = new ? !(k < moveSlots.count && moveSlots[k].lowerBound < end)
                     : inMove && moveSlots[k].upperBound >= end
        guard ok else { throw .invalidValue("the record's slots are not \(new ? "an insert's" : "a move's")", offset: at) }
        return first
    }

    /// `count` seen slots of a delete record as arithmetic runs, each an item's slot.
    mutating func readSeen(_ count: Int) throws(WireError) {
        var out = seen
        seen = []
        out.removeAll(keepingCapacity: true)
        defer { seen = out }
        var previous: Int64 = 0
        let last = Int64(doc.slots.count) - 1
        while out.count < count {
            let at = r.offset
            let start = try offsetValue(from: previous, lowest: 0, highest: max(0, last))
            let step = try r.signed()
            let n = try bounded(count - out.count)
            guard n >= 1, last >= 0 else { throw .invalidValue("empty seen run", offset: at) }
            let (span, o1) = step.multipliedReportingOverflow(by: Int64(n - 1))
            let (end, o2) = start.addingReportingOverflow(span)
            guard !o1, !o2, end >= 0, end <= last else { throw .invalidValue("seen run out of range", offset: at) }
            // Every slot of the run in an item sequence: checked per slot run for a step of ±1
            // (typed text deleted forwards or backwards), else slot by slot.
            if step == 1 || step == -1 || n == 1 {
                var x = LocalVersion(Int32(min(start, end)))
                let stop = LocalVersion(Int32(max(start, end)))
                while x <= stop {
                    let run = doc.slots.run(of: x)
                    guard run.sequence.isItems else { throw .invalidValue("seen slot is not an item's", offset: at) }
                    x = run.lv.advanced(by: run.count)
                }
            } else {
                var lv = start
                for _ in 0 ..< n {
                    guard doc.slots.sequence(of: LocalVersion(Int32(lv))).isItems else { throw .invalidValue("seen slot is not an item's", offset: at) }
                    lv &+= step
                }
            }
            var lv = LocalVersion(Int32(start))
            let step32 = Int32(truncatingIfNeeded: step)
            for _ in 0 ..< n {
                out.append(lv)
                lv = lv.advanced(by: step32)
            }
            previous = end
        }
    }
}
