import Foundation

/// The compacted snapshot (format version 3, Docs/WireFormat.md §5.3): the state at the
/// compaction floor (a ``CompactedState``), then the operations applied since, as one batch.
/// Documents never compacted keep writing version 2; versions 1 and 2 still load.
extension ListDocument {
    /// The compacted snapshot format version.
    public static let compactedSnapshotFormatVersion: UInt8 = 3
    /// The compacted snapshot of a document with fields: version 3 with the floor's records after
    /// its state (Docs/WireFormat.md §5.4).
    public static let compactedRecordsSnapshotFormatVersion: UInt8 = 4
    /// The compacted snapshot of a document with a text field: version 4 whose records hold
    /// each field's text (Docs/WireFormat.md §5.6). (Version 5 is the state snapshot of a history
    /// with field writes, §5.5.)
    public static let compactedTextSnapshotFormatVersion: UInt8 = 6
    /// The compacted snapshot of a document whose floor counts counters it never held
    /// (``floorSkipped``): a flags byte (1: records, 2: records with text), the body of version
    /// 3, 4 or 6 as the flags say, with the skipped counters between the floor's records and the
    /// operations since (Docs/WireFormat.md §5.12). A floor that skipped nothing still writes
    /// version 3, 4 or 6, byte for byte.
    public static let compactedSkippedSnapshotFormatVersion: UInt8 = 12
    /// The compacted snapshot of a document whose floor admits concurrent operations
    /// (``compact(stable:keepingConcurrent:)``): version 12 (flags, state, records, skipped
    /// counters, possibly none), then the admitted operations' runs (a varint length and
    /// ``OperationRuns/encoded()``), then the operations since (Docs/WireFormat.md §5.13). A floor
    /// that admits nothing writes what it wrote before.
    public static let compactedConcurrentSnapshotFormatVersion: UInt8 = 13

    /// Version 3: the floor's state, then the log (every operation applied since the floor).
    ///
    /// - Complexity: O(b + k) for b bytes of the floor's state and k operations since.
    func encodedCompactedSnapshot(_ floor: CompactionFloor) -> [UInt8] {
        var w = WireWriter()
        w.bytes.append(contentsOf: Self.snapshotMagic)
        let flags: UInt8 = floor.records.isEmpty ? 0 : floor.recordsHaveText ? 3 : 1
        if !floor.admitted.isEmpty {
            w.byte(Self.compactedConcurrentSnapshotFormatVersion)
            w.byte(flags)
        } else if floor.skipped.isEmpty {
            w.byte(floor.records.isEmpty ? Self.compactedSnapshotFormatVersion
                   : floor.recordsHaveText ? Self.compactedTextSnapshotFormatVersion : Self.compactedRecordsSnapshotFormatVersion)
        } else {
            w.byte(Self.compactedSkippedSnapshotFormatVersion)
            w.byte(flags)
        }
        w.count(floor.base.count)
        w.bytes.append(contentsOf: floor.base)
        if !floor.records.isEmpty {
            w.count(floor.records.count)
            w.bytes.append(contentsOf: floor.records)
        }
        if !floor.skipped.isEmpty || !floor.admitted.isEmpty { SkippedCountersCoding.encode(floor.skipped, to: &w) }
        if !floor.admitted.isEmpty {
            let runs = floor.admitted.encoded()
            w.count(runs.count)
            w.bytes.append(contentsOf: runs)
        }
        appendEncodedOperations(since: VersionVector(), to: &w)
        return w.bytes
    }

    /// Loads the rest of a version-3 snapshot (after the magic and the version byte): builds the
    /// floor's state, then applies the operations since; each must apply at once.
    ///
    /// - Complexity: O(b + n log n) for the state (b bytes, n kept slots; the invariants are
    ///   checked), then the cost of receiving the operations since.
    static func loadCompacted(_ r: inout WireReader, replica: ReplicaID, maxValueSize: Int,
                              records hasRecords: Bool = false, text: Bool = false,
                              skipped hasSkipped: Bool = false, admitted hasAdmitted: Bool = false) throws(WireError) -> ListDocument {
        let n = try r.count(minBytes: 1)
        let base = Array(try r.raw(n))
        var br = WireReader(base)
        var state = try CompactedState(decoding: &br, maxValueSize: maxValueSize)
        guard br.isAtEnd else { throw .trailingBytes(br.remaining) }
        var recordBytes: [UInt8] = []
        if hasRecords {
            let m = try r.count(minBytes: 1)
            recordBytes = Array(try r.raw(m))
            state.records = try RecordStore(decoding: recordBytes, maxValueSize: maxValueSize, text: text)
        }
        let skipped = hasSkipped ? try SkippedCountersCoding.decode(&r, version: state.version, frontier: state.frontier) : [:]
        var admitted = AdmittedOperations()
        if hasAdmitted {
            admitted = try AdmittedOperations(decoding: try r.raw(try r.count(minBytes: 1)), version: state.version,
                                              heads: state.frontier.count)
        }
        do { try state.validate() } catch { throw .inconsistentSnapshot(error.why) }
        var doc = state.build(replica: replica, maxValueSize: maxValueSize)
        doc.compaction = CompactionFloor(version: state.version, frontier: state.frontier, base: base, writes: state.writes,
                                         records: recordBytes, recordsHaveText: text, skipped: skipped, admitted: admitted)
        do { try doc.checkInvariants() } catch { throw .inconsistentSnapshot("the compacted state: \(error)") }
        let maxOperations = r.remaining > (Int.max - 65_536) / 16 ? Int.max : r.remaining * 16 + 65_536
        let batch = try DecodedBatch.decode(from: &r, maxValueSize: maxValueSize, maxOperations: maxOperations)
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        _ = try doc.apply(batch, strict: true)
        return doc
    }
}

extension CompactedState {
    /// Entity flags: which registers are not the implicit ones.
    private static let winnerFlag: UInt8 = 1, deletedIsWinner: UInt8 = 2, deletedExplicit: UInt8 = 4, valueFlag: UInt8 = 8

    /// The bytes of this state (the body of a version-3 snapshot, Docs/WireFormat.md §5.3).
    ///
    /// - Complexity: O(n + e + v) for n slots, e entities and v value bytes.
    func encoded() -> [UInt8] {
        var replicas: [ReplicaID] = []
        var index: [ReplicaID: Int] = [:]
        func r(_ x: ReplicaID) -> Int {
            if let k = index[x] { return k }
            index[x] = replicas.count
            replicas.append(x)
            return replicas.count - 1
        }
        var w = WireWriter()
        func id(_ x: OpID) { w.count(r(x.replica)); w.varint(x.counter) }
        let versionEntries = version.entries
        w.count(versionEntries.count)
        for e in versionEntries { id(OpID(counter: e.counter, replica: e.replica)) }
        w.varint(clock)
        w.count(frontier.count)
        for x in frontier { id(x) }
        // Slots, as runs made together: consecutive ids, each slot's left origin the one before,
        // one right origin, one sequence, consecutive entities.
        w.count(slotCount)
        var runStarts: [Int] = []
        for k in 0 ..< slotCount {
            if k > 0, let start = runStarts.last, continuesRun(k, from: start) { continue }
            runStarts.append(k)
        }
        w.count(runStarts.count)
        var previous: UInt64 = 0
        for (j, k) in runStarts.enumerated() {
            let length = (j + 1 < runStarts.count ? runStarts[j + 1] : slotCount) - k
            let x = slotIDs[k]
            w.count(length)
            w.count(r(x.replica))
            w.signed(Int64(bitPattern: x.counter &- previous))
            previous = x.counter &+ UInt64(length)
            w.count(lefts[k] < 0 ? 0 : k - Int(lefts[k]))
            w.count(rights[k] < 0 ? 0 : k - Int(rights[k]))
            w.count(Int(sequences[k] + 1))
            w.count(Int(entities[k]))
        }
        w.count(writes.count)
        for (slot, write) in writes.sorted(by: { $0.key < $1.key }) { id(slot); id(write) }
        // Entities, as runs of plain ones (consecutive ids and winning slots, the same flags, no
        // explicit register), then every value's length (run-length coded), then their bytes.
        for table in [sections, items] {
            w.count(table.count)
            var starts: [Int] = []
            for e in table.indices {
                if e > 0, let start = starts.last, Self.continuesRun(table, e, from: start) { continue }
                starts.append(e)
            }
            w.count(starts.count)
            for (j, e) in starts.enumerated() {
                let length = (j + 1 < starts.count ? starts[j + 1] : table.count) - e
                let x = table[e]
                let flags = Self.flags(of: x)
                w.count(length)
                w.byte(flags)
                id(x.id)
                w.count(Int(x.winner))
                if flags & Self.winnerFlag != 0 { id(x.winnerID) }
                if flags & Self.deletedExplicit != 0 { id(x.deleted) }
                if flags & Self.valueFlag != 0 { id(x.valueWrite) }
            }
            var lengths: [(Int, Int)] = []
            for x in table {
                if let last = lengths.last, last.0 == x.value.count { lengths[lengths.count - 1].1 += 1 } else { lengths.append((x.value.count, 1)) }
            }
            w.count(lengths.count)
            for (length, count) in lengths { w.count(length); w.count(count) }
            for x in table { w.bytes.append(contentsOf: x.value) }
        }
        for order in trees {
            var runs: [(Int32, Int32)] = []
            for lv in order {
                if let last = runs.last, last.0 + last.1 == lv { runs[runs.count - 1].1 += 1 } else { runs.append((lv, 1)) }
            }
            w.count(runs.count)
            var end: Int64 = 0
            for (start, count) in runs {
                w.signed(Int64(start) - end)
                w.count(Int(count))
                end = Int64(start) + Int64(count)
            }
        }
        var head = WireWriter()
        head.count(replicas.count)
        for x in replicas { head.varint(x.rawValue) }
        return head.bytes + w.bytes
    }

    /// Whether slot `k` continues the run of slots that starts at `start` (see ``encoded()``).
    private func continuesRun(_ k: Int, from start: Int) -> Bool {
        let d = k - start
        return slotIDs[k].replica == slotIDs[start].replica && slotIDs[k].counter == slotIDs[start].counter &+ UInt64(d)
            && lefts[k] == Int32(k - 1) && rights[k] == rights[start] && sequences[k] == sequences[start]
            && entities[k] == entities[start] + Int32(d)
    }

    /// An entity's flags: which registers are not the implicit ones.
    private static func flags(of x: Entity) -> UInt8 {
        var flags: UInt8 = 0
        if x.winnerID != x.id { flags |= winnerFlag }
        if x.deleted == x.winnerID { flags |= deletedIsWinner } else if x.deleted != .none { flags |= deletedExplicit }
        if x.valueWrite != x.id { flags |= valueFlag }
        return flags
    }

    /// Whether entity `e` continues the run of entities that starts at `start`: the same flags,
    /// none of them an explicit register, the next id and the next winning slot.
    private static func continuesRun(_ table: [Entity], _ e: Int, from start: Int) -> Bool {
        let d = e - start, x = table[e], first = table[start]
        let f = flags(of: x)
        return f == flags(of: first) && f & (winnerFlag | deletedExplicit | valueFlag) == 0
            && x.id.replica == first.id.replica && x.id.counter == first.id.counter &+ UInt64(d)
            && x.winner == first.winner + Int32(d)
    }

    /// Reads a state written by ``encoded()``. Every count is bounded by the input; what
    /// ``build(replica:maxValueSize:)`` indexes with is checked by ``validate()`` afterwards.
    init(decoding r: inout WireReader, maxValueSize: Int) throws(WireError) {
        let nReplicas = try r.count(minBytes: 1)
        var replicas: [ReplicaID] = []
        for _ in 0 ..< nReplicas { replicas.append(ReplicaID(try r.varint())) }
        func id() throws(WireError) -> OpID {
            let at = r.offset
            let k = try r.varint()
            guard k < UInt64(replicas.count) else { throw .invalidValue("replica index \(k) not in the table", offset: at) }
            let c = try r.varint()
            guard c >= 1, c <= OpID.maxCounter else { throw .invalidValue("counter \(c) out of range", offset: at) }
            return OpID(counter: c, replica: replicas[Int(k)])
        }
        func small(_ max: Int) throws(WireError) -> Int {
            let at = r.offset
            let v = try r.varint()
            guard max >= 0, v <= UInt64(max) else { throw .invalidValue("\(v) is over \(max)", offset: at) }
            return Int(v)
        }
        var counters: [ReplicaID: UInt64] = [:]
        for _ in 0 ..< (try r.count(minBytes: 2)) {
            let x = try id()
            counters[x.replica] = x.counter
        }
        version = VersionVector(counters)
        clock = try r.varint()
        frontier = []
        for _ in 0 ..< (try r.count(minBytes: 2)) { frontier.append(try id()) }
        // At most 16 slots (or entities) per byte left, plus 65,536, as the state snapshot (version 2).
        let limit = min(Int(Int32.max) - 1, r.remaining > (Int.max - 65_536) / 16 ? Int.max : r.remaining * 16 + 65_536)
        let countAt = r.offset
        let n = try small(limit)
        let runCount = try r.count(minBytes: 7)
        var previous: UInt64 = 0
        var k = 0
        for _ in 0 ..< runCount {
            let at = r.offset
            let length = try small(n - k)
            guard length >= 1 else { throw .invalidValue("empty run of slots", offset: at) }
            let rk = try small(replicas.count - 1)
            let (c, overflow) = Int64(bitPattern: previous).addingReportingOverflow(try r.signed())
            guard !overflow, c >= 1, UInt64(c) <= OpID.maxCounter - UInt64(length) + 1 else { throw .invalidValue("slot counter out of range", offset: at) }
            previous = UInt64(c) + UInt64(length)
            let l = try small(k), rr = try small(k)
            let seq = Int32(try small(Int(Int32.max) - 1)) - 1
            let entity = try small(Int(Int32.max) - 1 - length)
            for j in 0 ..< length {
                slotIDs.append(OpID(counter: UInt64(c) + UInt64(j), replica: replicas[rk]))
                lefts.append(j > 0 ? Int32(k + j - 1) : l == 0 ? -1 : Int32(k - l))
                rights.append(rr == 0 ? -1 : Int32(k - rr))
                sequences.append(seq)
                entities.append(Int32(entity + j))
            }
            k += length
        }
        guard k == n else { throw .invalidValue("the slot runs hold \(k) slots, not \(n)", offset: countAt) }
        for _ in 0 ..< (try r.count(minBytes: 4)) {
            let slot = try id()
            writes[slot] = try id()
        }
        func table() throws(WireError) -> [Entity] {
            var out: [Entity] = []
            let total = try small(limit)
            let runs = try r.count(minBytes: 4)
            for _ in 0 ..< runs {
                let at = r.offset
                let length = try small(total - out.count)
                let flags = try r.byte()
                guard length >= 1, flags & ~(Self.winnerFlag | Self.deletedIsWinner | Self.deletedExplicit | Self.valueFlag) == 0,
                      flags & Self.deletedIsWinner == 0 || flags & Self.deletedExplicit == 0,
                      length == 1 || flags & (Self.winnerFlag | Self.deletedExplicit | Self.valueFlag) == 0 else {
                    throw .invalidValue("bad entity run", offset: at)
                }
                let x = try id()
                guard x.counter <= OpID.maxCounter - UInt64(length) + 1 else { throw .invalidValue("entity ids out of range", offset: at) }
                let winner = try small(max(0, n - length))
                let winnerID = try flags & Self.winnerFlag != 0 ? id() : x
                let deleted = try flags & Self.deletedExplicit != 0 ? id() : flags & Self.deletedIsWinner != 0 ? winnerID : .none
                let valueWrite = try flags & Self.valueFlag != 0 ? id() : x
                for j in 0 ..< length {
                    let y = x.advanced(by: j)
                    out.append(Entity(id: y, winner: Int32(winner + j), winnerID: length == 1 ? winnerID : y,
                                      deleted: length == 1 ? deleted : flags & Self.deletedIsWinner != 0 ? y : .none,
                                      value: Data(), valueWrite: length == 1 ? valueWrite : y))
                }
            }
            guard out.count == total else { throw .invalidValue("the entity runs hold \(out.count) of \(total)", offset: r.offset) }
            var lengths: [Int] = []
            for _ in 0 ..< (try r.count(minBytes: 2)) {
                let at = r.offset
                let length = try r.varint()
                let count = try small(total - lengths.count)
                guard length <= UInt64(maxValueSize) else { throw .valueTooLarge(Int(min(length, UInt64(Int.max))), limit: maxValueSize, offset: at) }
                lengths.append(contentsOf: repeatElement(Int(length), count: count))
            }
            guard lengths.count == total else { throw .invalidValue("value lengths for \(lengths.count) of \(total)", offset: r.offset) }
            for e in 0 ..< total { out[e].value = Data(try r.raw(lengths[e])) }
            return out
        }
        sections = try table()
        items = try table()
        for _ in 0 ... sections.count {
            var order: [Int32] = []
            var end: Int64 = 0
            for _ in 0 ..< (try r.count(minBytes: 2)) {
                let at = r.offset
                let (start, overflow) = end.addingReportingOverflow(try r.signed())
                let count = try small(n)
                guard !overflow, start >= 0, start + Int64(count) <= Int64(n), count >= 1, order.count + count <= n else {
                    throw .invalidValue("a run of slots out of range", offset: at)
                }
                for lv in start ..< start + Int64(count) { order.append(Int32(lv)) }
                end = start + Int64(count)
            }
            trees.append(order)
        }
    }
}
