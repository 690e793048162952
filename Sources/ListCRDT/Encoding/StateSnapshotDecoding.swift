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
    var seen: [Int32] = []
    /// The slots of moves (not new entities), as ranges of local versions in increasing order.
    var moveSlots: [Range<Int32>] = []
    /// The most slots, and log operations, the input may claim (16 per byte, plus 65,536: every
    /// slot or operation but a run's costs at least a byte, and runs are bounded likewise).
    let limit: Int

    /// A decoder reading `reader` from its offset (right after the magic and the version byte).
    init(_ reader: WireReader, replica: ReplicaID, maxValueSize: Int) {
        r = reader
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
            replicas.append(id)
        }
        try readSlots()
        try readLog()
        deriveWinners()
        try readDeleted(items: false)
        try readDeleted(items: true)
        try readValues(items: false)
        try readValues(items: true)
        try readFrontier()
        try readTrees()
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        return doc
    }

    // MARK: Fields

    @inline(__always)
    private mutating func replicaIndex() throws(WireError) -> Int {
        let at = r.offset
        let k = try r.varint()
        guard k < UInt64(replicas.count) else { throw .invalidValue("replica index \(k) not in the table", offset: at) }
        return Int(k)
    }

    private mutating func counter(_ v: UInt64, at: Int) throws(WireError) -> UInt64 {
        guard v >= 1, v <= OpID.maxCounter else { throw .invalidValue("counter \(v) out of range", offset: at) }
        return v
    }

    private mutating func id() throws(WireError) -> OpID {
        let k = try replicaIndex()
        let at = r.offset
        return OpID(counter: try counter(try r.varint(), at: at), replica: replicas[k])
    }

    /// A count of at most `max`.
    @inline(__always)
    private mutating func bounded(_ max: Int) throws(WireError) -> Int {
        let at = r.offset
        let v = try r.varint()
        guard max >= 0, v <= UInt64(max) else { throw .countTooLarge(v > UInt64(Int.max) ? Int.max : Int(v), offset: at) }
        return Int(v)
    }

    /// `base + zigzag delta`, checked to lie in `lowest ... highest`.
    @inline(__always)
    private mutating func offsetValue(from base: Int64, lowest: Int64, highest: Int64) throws(WireError) -> Int64 {
        let at = r.offset
        let d = try r.signed()
        let (v, overflow) = base.addingReportingOverflow(d)
        guard !overflow, v >= lowest, v <= highest else { throw .invalidValue("a number out of range", offset: at) }
        return v
    }

    // MARK: Slots

    /// The slot runs, with the entities they place; makes the entities' rows (values come later).
    private mutating func readSlots() throws(WireError) {
        let at = r.offset
        let slotCount = try r.varint()
        guard slotCount <= UInt64(min(limit, Int(Int32.max) - 1)) else {
            throw .countTooLarge(slotCount > UInt64(Int.max) ? Int.max : Int(slotCount), offset: at)
        }
        let n = Int(slotCount)
        let pieces = try r.count(minBytes: 7)
        doc.slots.reserveCapacity(forMore: n)
        // The items' rows are written in one pass at the end, from these pieces.
        var itemPieces: [(id: OpID, lv: Int32, section: EntityIndex, count: Int)] = []
        var itemCount = 0
        var lastEnd = Array(repeating: UInt64(0), count: replicas.count)
        var previousEnd: UInt64 = 0
        var lv: Int32 = 0
        for _ in 0 ..< pieces {
            let countAt = r.offset
            let count = try bounded(n - Int(lv))
            guard count >= 1 else { throw .invalidValue("empty slot run", offset: countAt) }
            let k = try replicaIndex()
            let counterAt = r.offset
            let c = UInt64(bitPattern: try offsetValue(from: Int64(bitPattern: previousEnd), lowest: 1, highest: Int64(OpID.maxCounter)))
            guard c >= lastEnd[k], c <= OpID.maxCounter - UInt64(count) + 1 else {
                throw .invalidValue("slot ids out of order or out of range", offset: counterAt)
            }
            let originAt = r.offset
            let left = try bounded(Int(lv)), right = try bounded(Int(lv))
            let seq = try bounded(doc.sections.count)
            let sequence: SequenceIndex = seq == 0 ? .sections : .items(EntityIndex(Int32(seq - 1)))
            let leftLV = left == 0 ? -1 : lv - Int32(left), rightLV = right == 0 ? -1 : lv - Int32(right)
            guard leftLV < 0 || doc.slots.sequence(of: leftLV) == sequence,
                  rightLV < 0 || doc.slots.sequence(of: rightLV) == sequence else {
                throw .invalidValue("an origin is in another sequence", offset: originAt)
            }
            let modeAt = r.offset
            let mode = try r.byte()
            let id = OpID(counter: c, replica: replicas[k])
            let isItems = sequence.isItems
            switch mode {
            case 0:  // new entities: an insert's slots
                let e = EntityIndex(isItems ? itemCount : doc.sections.count)
                _ = doc.slots.appendRun(id: id, count: count, left: leftLV, right: rightLV, sequence: sequence, entity: e)
                if isItems {
                    itemPieces.append((id, lv, sequence.section, count))
                    itemCount += count
                } else {
                    doc.sections.appendRows(id: id, slot: lv, section: .none, count: count)
                }
            case 1:  // existing entities: a move's slots
                if let last = moveSlots.last, last.upperBound == lv {
                    moveSlots[moveSlots.count - 1] = last.lowerBound ..< lv + Int32(count)
                } else {
                    moveSlots.append(lv ..< lv + Int32(count))
                }
                for j in 0 ..< count {
                    let e = try bounded(isItems ? itemCount - 1 : doc.sections.count - 1)
                    _ = doc.slots.append(id: id.advanced(by: j), left: j == 0 ? leftLV : lv + Int32(j) - 1, right: rightLV,
                                         sequence: sequence, entity: EntityIndex(e))
                }
            default:
                throw .invalidTag(mode, offset: modeAt)
            }
            lastEnd[k] = c + UInt64(count)
            previousEnd = lastEnd[k]
            lv += Int32(count)
        }
        guard Int(lv) == n else { throw .invalidValue("the slot runs hold \(lv) slots, not \(n)", offset: at) }
        doc.sectionShown = Array(repeating: false, count: doc.sections.count)
        doc.items.rows = [EntityTable.Row](unsafeUninitializedCapacity: itemCount) { rows, initialized in
            var e = 0
            for piece in itemPieces {
                for k in 0 ..< piece.count {
                    (rows.baseAddress! + e + k).initialize(to: EntityTable.Row(
                        untouched: OpID(counter: piece.id.counter &+ UInt64(k), replica: piece.id.replica),
                        winner: piece.lv &+ Int32(k), section: piece.section))
                }
                e += piece.count
            }
            initialized = e
        }
    }

    // MARK: Log

    /// The log records, each checked against the slots; the version vector follows from them.
    private mutating func readLog() throws(WireError) {
        let records = try r.count(minBytes: 3)
        var lastEnd = Array(repeating: UInt64(0), count: replicas.count)
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
            var payload: Int32 = 0
            switch tag {
            case .insertSection, .insertItem, .moveSection, .moveItems:
                let lv = try offsetValue(from: nextSlot, lowest: 0, highest: max(0, slotCount - 1))
                span = try bounded(Int(slotCount - lv))
                guard span >= 1, tag != .moveSection || span == 1 else { throw .invalidValue("bad record length", offset: bodyAt) }
                payload = Int32(lv)
                first = try checkSlots(from: payload, count: span, tag: tag, replica: replicas[k], at: bodyAt)
                nextSlot = lv + Int64(span)
                covered += span
            case .deleteItem:
                let c = UInt64(bitPattern: try offsetValue(from: Int64(bitPattern: previousEnd), lowest: 1, highest: Int64(OpID.maxCounter)))
                span = try bounded(limit - doc.log.count)
                guard span >= 1 else { throw .invalidValue("empty delete record", offset: bodyAt) }
                first = OpID(counter: c, replica: replicas[k])
                try readSeen(span)
            case .other:
                let n = try r.count(minBytes: 1)
                let blobAt = r.offset
                let ops = try ListOperation.decode(try r.raw(n), maxValueSize: maxValueSize, maxOperations: 1)
                guard ops.count == 1, ops[0].id.replica == replicas[k] else {
                    throw .invalidValue("not one operation of the record's replica", offset: blobAt)
                }
                switch ops[0].kind {
                case .deleteSection, .setItemValue, .setSectionValue: break
                default: throw .invalidValue("an operation of this kind has a record of its own", offset: blobAt)
                }
                other = ops[0]
                first = ops[0].id
                span = 1
            }
            let ops = tag == .moveItems ? 1 : span
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
            switch tag {
            case .insertSection:
                for j in 0 ..< span {
                    doc.log.append(id: first.advanced(by: j), deps: deps, kind: .insertSection, span: 1, payload: payload + Int32(j))
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
                var op = other!
                op.deps = deps
                doc.log.append(other: op)
            }
        }
        guard covered == doc.slots.count else {
            throw .invalidValue("the log's inserts and moves make \(covered) slots, not \(doc.slots.count)", offset: r.offset)
        }
        var counters: [ReplicaID: UInt64] = [:]
        for (k, end) in lastEnd.enumerated() where end > 0 { counters[replicas[k]] = end - 1 }
        doc.versionVector = VersionVector(counters)
        doc.clock = lastEnd.max().map { $0 > 0 ? $0 - 1 : 0 } ?? 0
    }

    /// Checks that slots `lv ..< lv + count` have consecutive ids of `replica` and are the slots
    /// the record says (new entities' slots for an insert, in the right level), and returns the
    /// first id.
    private mutating func checkSlots(from lv: Int32, count: Int, tag: Tag, replica: ReplicaID, at: Int) throws(WireError) -> OpID {
        let first = doc.slots.id(of: lv)
        guard first.replica == replica else { throw .invalidValue("the record's replica is not its slots'", offset: at) }
        let inItems = tag == .insertItem || tag == .moveItems
        let new = tag == .insertSection || tag == .insertItem
        var x = lv
        let end = lv + Int32(count)
        while x < end {
            let run = doc.slots.run(of: x)
            guard run.id.advanced(by: Int(x - run.lv)) == first.advanced(by: Int(x - lv)),
                  run.sequence.isItems == inItems else {
                throw .invalidValue("the record's slots are not its operations'", offset: at)
            }
            x = min(end, run.lv + run.count)
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
    private mutating func readSeen(_ count: Int) throws(WireError) {
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
                var x = Int32(min(start, end))
                let stop = Int32(max(start, end))
                while x <= stop {
                    let run = doc.slots.run(of: x)
                    guard run.sequence.isItems else { throw .invalidValue("seen slot is not an item's", offset: at) }
                    x = run.lv + run.count
                }
            } else {
                var lv = start
                for _ in 0 ..< n {
                    guard doc.slots.sequence(of: Int32(lv)).isItems else { throw .invalidValue("seen slot is not an item's", offset: at) }
                    lv &+= step
                }
            }
            var lv = Int32(start)
            let step32 = Int32(truncatingIfNeeded: step)
            for _ in 0 ..< n {
                out.append(lv)
                lv &+= step32
            }
            previous = end
        }
    }

    // MARK: Registers

    /// Each entity's position register: its slot with the greatest write (a move's, when a move
    /// wins; else its insert's, which `appendRows` set).
    private mutating func deriveWinners() {
        for rec in doc.log.records.indices {
            let record = doc.log.records[rec]
            guard record.kind == .moveItems || record.kind == .moveSection else { continue }
            let write = doc.log.id(record: rec, operation: 0)
            for k in 0 ..< record.count {
                let lv = record.payload + k
                let e = doc.slots.entity(of: lv)
                if record.kind == .moveSection {
                    if write > doc.sections.winnerID(e) { doc.sections.setWinner(lv, write: write, of: e) }
                } else if write > doc.items.winnerID(e) {
                    doc.items.setWinner(lv, write: write, of: e)
                    doc.items.rows[e.int].section = doc.slots.sequence(of: lv).section
                }
            }
        }
    }

    /// The delete registers of one table, as runs.
    private mutating func readDeleted(items: Bool) throws(WireError) {
        let total = items ? doc.items.count : doc.sections.count
        let runs = try r.count(minBytes: 2)
        var e = 0
        for _ in 0 ..< runs {
            let at = r.offset
            let n = try bounded(total - e)
            let tagAt = r.offset
            let tag = try r.varint()
            guard n >= 1 else { throw .invalidValue("empty register run", offset: at) }
            switch tag {
            case StateSnapshotEncoder.DeletedTag.none.rawValue:
                break
            case StateSnapshotEncoder.DeletedTag.own.rawValue:
                // What setDeleted(id, of:) does to an entity without registers (none yet: only
                // moved ones have them, and a move's register is written before this).
                if items { doc.items.markDeletedAtInsert(e ..< e + n) } else { doc.sections.markDeletedAtInsert(e ..< e + n) }
            case StateSnapshotEncoder.DeletedTag.explicit.rawValue:
                for x in e ..< e + n {
                    let seen = try id()
                    if items { doc.items.setDeleted(seen, of: EntityIndex(x)) } else { doc.sections.setDeleted(seen, of: EntityIndex(x)) }
                }
            default:
                throw .invalidTag(UInt8(truncatingIfNeeded: tag), offset: tagAt)
            }
            e += n
        }
        guard e == total else { throw .invalidValue("delete registers for \(e) of \(total) entities", offset: r.offset) }
    }

    /// The values of one table, and the insert values that later writes replaced.
    private mutating func readValues(items: Bool) throws(WireError) {
        let total = items ? doc.items.count : doc.sections.count
        let runs = try r.count(minBytes: 2)
        var lengths: [(count: Int, length: Int)] = []
        lengths.reserveCapacity(runs)
        var e = 0, bytes = 0
        for _ in 0 ..< runs {
            let at = r.offset
            let n = try bounded(total - e)
            let length = try r.varint()
            guard n >= 1 else { throw .invalidValue("empty value run", offset: at) }
            guard length <= UInt64(max(maxValueSize, 0)) else {
                throw .valueTooLarge(length > UInt64(Int.max) ? Int.max : Int(length), limit: maxValueSize, offset: at)
            }
            let (sum, overflow) = n.multipliedReportingOverflow(by: Int(length))
            guard !overflow, sum <= r.remaining - bytes else { throw .truncated(offset: r.offset + r.remaining) }
            bytes += sum
            lengths.append((n, Int(length)))
            e += n
        }
        guard e == total else { throw .invalidValue("values for \(e) of \(total) entities", offset: r.offset) }
        let raw = try r.raw(bytes)
        // Every value written once, in place (small values are stored inline in the Data).
        let values = [Data](unsafeUninitializedCapacity: total) { out, initialized in
            raw.withUnsafeBufferPointer { buffer in
                var at = 0, k = 0
                for run in lengths {
                    let values = out.baseAddress! + k
                    if run.length == 0 {
                        for j in 0 ..< run.count { (values + j).initialize(to: Data()) }
                    } else if run.length == 1 {
                        // The common case (text), with a constant count: inline, no loop inside.
                        let bytes = buffer.baseAddress! + at
                        for j in 0 ..< run.count { (values + j).initialize(to: Data(bytes: bytes + j, count: 1)) }
                    } else {
                        // Not empty, so the buffer has a base address (run.count ≥ 1 values of ≥ 1 byte).
                        let bytes = buffer.baseAddress! + at
                        for j in 0 ..< run.count {
                            (values + j).initialize(to: Data(bytes: bytes + j * run.length, count: run.length))
                        }
                    }
                    at += run.count * run.length
                    k += run.count
                }
                initialized = k
            }
        }
        let replaced = try r.count(minBytes: 3)
        var previous = -1
        var insertValues: [(EntityIndex, OpID, Data)] = []
        for _ in 0 ..< replaced {
            let x = try bounded(total - previous - 2) + previous + 1
            let write = try id()
            let insertValue = try r.data(limit: maxValueSize)
            insertValues.append((EntityIndex(x), write, insertValue))
            previous = x
        }
        if items {
            doc.items.value = values
            for (i, write, v) in insertValues {
                let current = doc.items.value[i.int]
                doc.items.value[i.int] = v
                doc.items.setValue(current, write: write, of: i)
            }
        } else {
            doc.sections.value = values
            for (s, write, v) in insertValues {
                let current = doc.sections.value[s.int]
                doc.sections.value[s.int] = v
                doc.sections.setValue(current, write: write, of: s)
            }
        }
    }

    private mutating func readFrontier() throws(WireError) {
        let n = try r.count(minBytes: 2)
        var ids: [OpID] = []
        for _ in 0 ..< n {
            let at = r.offset
            let x = try id()
            guard doc.versionVector.contains(x) else { throw .invalidValue("frontier id \(x) not applied", offset: at) }
            ids.append(x)
        }
        doc.currentFrontier = Frontier(ids)
    }

    // MARK: Trees

    /// The entries of tree `t` from its runs of slots, cut where the visibility changes and every
    /// ``SlotForest/maxEntryLength`` slots. Each run must lie in the tree of its sequence (checked
    /// per slot run of `slots`, which share one sequence); returns the first slot that does not as
    /// `bad` (else -1).
    private static func entries(of runs: ArraySlice<(start: Int32, count: Int32)>, tree t: Int32, slots: SlotStore,
                                visible: [Bool]) -> ([SlotForest.Entry], bad: Int32) {
        var entries: [SlotForest.Entry] = []
        for run in runs {
            var lv = run.start
            let end = run.start + run.count
            while lv < end {
                let slotRun = slots.run(of: lv)
                if slotRun.sequence.tree != t { return (entries, lv) }
                lv = min(end, slotRun.lv + slotRun.count)
            }
        }
        visible.withUnsafeBufferPointer { visible in
            for run in runs {
                var lv = run.start
                let end = run.start + run.count
                while lv < end {
                    let shows = visible[Int(lv)]
                    var stop = lv + 1
                    let limit = min(end, lv + Int32(SlotForest.maxEntryLength))
                    // Eight flags at a time while they all equal `shows`.
                    let same: UInt64 = shows ? 0x0101_0101_0101_0101 : 0
                    let raw = UnsafeRawPointer(visible.baseAddress!)
                    while stop + 8 <= limit && raw.loadUnaligned(fromByteOffset: Int(stop), as: UInt64.self) == same {
                        stop += 8
                    }
                    while stop < limit && visible[Int(stop)] == shows { stop += 1 }
                    entries.append(SlotForest.Entry(lv: lv, count: Int(stop - lv), visible: shows))
                    lv = stop
                }
            }
        }
        return (entries, -1)
    }

    /// Every tree's order; each slot must appear once, in the tree of its sequence. Visibility is
    /// derived: an item's winning slot shows while it is alive, a section's while the section is
    /// visible (§3.5), no other slot.
    private mutating func readTrees() throws(WireError) {
        let slotCount = doc.slots.count
        var itemsShown = Array(repeating: 0, count: doc.sections.count)
        var visible = Array(repeating: false, count: slotCount)
        let items = doc.items
        visible.withUnsafeMutableBufferPointer { visible in
            itemsShown.withUnsafeMutableBufferPointer { itemsShown in
                items.rows.withUnsafeBufferPointer { rows in
                    for i in 0 ..< rows.count {
                        let row = rows[i]
                        // isAlive, read from the row for the entities without registers.
                        let alive = row.packedState == -1 || (row.packedState >= 0 && items.isAlive(EntityIndex(i)))
                        if alive {
                            itemsShown[row.section.int] &+= 1
                            visible[Int(row.winner)] = true
                        }
                    }
                }
            }
        }
        for s in doc.sections.indices {
            let shown = doc.sections.isAlive(s) || itemsShown[s.int] > 0
            doc.sectionShown[s.int] = shown
            if shown { visible[Int(doc.sections.rows[s.int].winner)] = true }
        }

        // Every tree's runs of slots, checked against the bounds; together they must hold as many
        // slots as there are, and (below) leave none out, so each slot is in exactly one.
        var runs: [(start: Int32, count: Int32)] = []
        var treeEnds: [Int] = []
        treeEnds.reserveCapacity(doc.sections.count + 1)
        var previousEnd: Int64 = 0
        var placed = 0
        let last = Int64(slotCount) - 1
        for _ in 0 ... doc.sections.count {
            let n = try r.count(minBytes: 2)
            runs.reserveCapacity(runs.count + n)
            for _ in 0 ..< n {
                let at = r.offset
                let start = try offsetValue(from: previousEnd, lowest: 0, highest: max(0, last))
                let count = try bounded(Int(last - start + 1))
                guard count >= 1, last >= 0, placed + count <= slotCount else {
                    throw .invalidValue("empty run of slots, or more slots than there are", offset: at)
                }
                runs.append((Int32(start), Int32(count)))
                placed += count
                previousEnd = start + Int64(count)
            }
            treeEnds.append(runs.count)
        }
        guard placed == slotCount else {
            throw .invalidValue("the trees hold \(placed) of \(slotCount) slots", offset: r.offset)
        }

        var forest = SlotForest()
        forest.leafOf = Array(repeating: .none, count: slotCount)
        var firstRun = 0
        for (t, end) in treeEnds.enumerated() {
            let (entries, bad) = Self.entries(of: runs[firstRun ..< end], tree: Int32(t), slots: doc.slots, visible: visible)
            if bad >= 0 { throw .invalidValue("slot \(bad) is in the tree of another sequence", offset: r.offset) }
            forest.appendTree(entries)
            firstRun = end
        }
        // As many slots placed as there are, and none left out: none placed twice.
        let missing = forest.leafOf.withUnsafeBufferPointer { leafOf in leafOf.firstIndex { !$0.exists } }
        if let missing { throw .invalidValue("slot \(missing) is in no tree (another is in two)", offset: r.offset) }
        doc.forest = forest
    }
}

extension EntityTable {
    /// Sets the delete register of entities `range`, which have no ``Registers``, to their own
    /// ids: what ``setDeleted(_:of:)`` does with each one's id, in one pass.
    ///
    /// - Complexity: O(range.count).
    mutating func markDeletedAtInsert(_ range: Range<Int>) {
        rows.withUnsafeMutableBufferPointer { rows in
            for x in range {
                if rows[x].packedState == -1 { rows[x].packedState = -2 } else if rows[x].packedState >= 0 {
                    registers[Int(rows[x].packedState)].deleted = rows[x].id
                }
            }
        }
    }

    /// Appends the rows of `count` entities made by consecutive ids from `id`, at consecutive
    /// slots from `lv`, in section `s` (items) or none (sections); their values come apart.
    ///
    /// - Complexity: O(count) amortized.
    mutating func appendRows(id: OpID, slot lv: Int32, section s: EntityIndex, count: Int) {
        rows.append(contentsOf: NewRows(id: id, lv: lv, section: s, left: count))
    }

    /// The rows ``appendRows(id:slot:section:count:)`` appends, as a sequence (appended in one step).
    private struct NewRows: Sequence, IteratorProtocol {
        var id: OpID
        var lv: Int32
        let section: EntityIndex
        var left: Int
        var underestimatedCount: Int { left }

        mutating func next() -> Row? {
            guard left > 0 else { return nil }
            left -= 1
            defer { (id.counter, lv) = (id.counter &+ 1, lv &+ 1) }
            return Row(id: id, winner: lv, section: section, state: .untouched)
        }
    }
}
