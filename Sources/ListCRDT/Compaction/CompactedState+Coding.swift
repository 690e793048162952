import Foundation

/// The compacted snapshot (format version 3, Docs/WireFormat.md §5.3): the state at the
/// compaction floor (a ``CompactedState``), then the operations applied since, as one batch.
/// Documents never compacted keep writing version 2; versions 1 and 2 still load.
extension ListDocument {
    /// The compacted snapshot format version.
    public static let compactedSnapshotFormatVersion: UInt8 = 3

    /// Version 3: the floor's state, then the log (every operation applied since the floor).
    ///
    /// - Complexity: O(b + k) for b bytes of the floor's state and k operations since.
    func encodedCompactedSnapshot(_ floor: CompactionFloor) -> [UInt8] {
        var w = WireWriter()
        w.bytes.append(contentsOf: Self.snapshotMagic)
        w.byte(Self.compactedSnapshotFormatVersion)
        w.count(floor.base.count)
        w.bytes.append(contentsOf: floor.base)
        w.bytes.append(contentsOf: ListOperation.encode(operations))
        return w.bytes
    }

    /// Loads the rest of a version-3 snapshot (after the magic and the version byte): builds the
    /// floor's state, then applies the operations since; each must apply at once.
    ///
    /// - Complexity: O(b + n log n) for the state (b bytes, n kept slots; the invariants are
    ///   checked), then the cost of receiving the operations since.
    static func loadCompacted(_ r: inout WireReader, replica: ReplicaID, maxValueSize: Int) throws(WireError) -> ListDocument {
        let n = try r.count(minBytes: 1)
        let base = Array(try r.raw(n))
        var br = WireReader(base)
        let state = try CompactedState(decoding: &br, maxValueSize: maxValueSize)
        guard br.isAtEnd else { throw .trailingBytes(br.remaining) }
        do { try state.validate() } catch { throw .inconsistentSnapshot(error.why) }
        var doc = state.build(replica: replica, maxValueSize: maxValueSize)
        doc.compaction = CompactionFloor(version: state.version, frontier: state.frontier, base: base, writes: state.writes)
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
        w.count(slotCount)
        var previous: UInt64 = 0
        for k in 0 ..< slotCount {
            let x = slotIDs[k]
            w.count(r(x.replica))
            w.signed(Int64(bitPattern: x.counter &- previous))
            previous = x.counter
            w.count(lefts[k] < 0 ? 0 : k - Int(lefts[k]))
            w.count(rights[k] < 0 ? 0 : k - Int(rights[k]))
            w.count(Int(sequences[k] + 1))
            w.count(Int(entities[k]))
        }
        w.count(writes.count)
        for (slot, write) in writes.sorted(by: { $0.key < $1.key }) { id(slot); id(write) }
        for table in [sections, items] {
            w.count(table.count)
            for e in table {
                var flags: UInt8 = 0
                if e.winnerID != e.id { flags |= Self.winnerFlag }
                if e.deleted == e.winnerID { flags |= Self.deletedIsWinner } else if e.deleted != .none { flags |= Self.deletedExplicit }
                if e.valueWrite != e.id { flags |= Self.valueFlag }
                w.byte(flags)
                id(e.id)
                w.count(Int(e.winner))
                if flags & Self.winnerFlag != 0 { id(e.winnerID) }
                if flags & Self.deletedExplicit != 0 { id(e.deleted) }
                w.data(e.value)
                if flags & Self.valueFlag != 0 { id(e.valueWrite) }
            }
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
        let n = try r.count(minBytes: 6)
        guard n < Int(Int32.max) else { throw .countTooLarge(n, offset: r.offset) }
        var previous: UInt64 = 0
        for k in 0 ..< n {
            let at = r.offset
            let rk = try small(replicas.count - 1)
            let (c, overflow) = Int64(bitPattern: previous).addingReportingOverflow(try r.signed())
            guard !overflow, c >= 1, UInt64(c) <= OpID.maxCounter else { throw .invalidValue("slot counter out of range", offset: at) }
            previous = UInt64(c)
            slotIDs.append(OpID(counter: UInt64(c), replica: replicas[rk]))
            let l = try small(k), rr = try small(k)
            lefts.append(l == 0 ? -1 : Int32(k - l))
            rights.append(rr == 0 ? -1 : Int32(k - rr))
            sequences.append(Int32(try small(Int(Int32.max) - 1)) - 1)
            entities.append(Int32(try small(Int(Int32.max) - 1)))
        }
        for _ in 0 ..< (try r.count(minBytes: 4)) {
            let slot = try id()
            writes[slot] = try id()
        }
        func table() throws(WireError) -> [Entity] {
            var out: [Entity] = []
            for _ in 0 ..< (try r.count(minBytes: 5)) {
                let at = r.offset
                let flags = try r.byte()
                guard flags & ~(Self.winnerFlag | Self.deletedIsWinner | Self.deletedExplicit | Self.valueFlag) == 0,
                      flags & Self.deletedIsWinner == 0 || flags & Self.deletedExplicit == 0 else { throw .invalidTag(flags, offset: at) }
                let x = try id()
                let winner = Int32(try small(max(0, n - 1)))
                let winnerID = try flags & Self.winnerFlag != 0 ? id() : x
                let deleted = try flags & Self.deletedExplicit != 0 ? id() : flags & Self.deletedIsWinner != 0 ? winnerID : .none
                let value = try r.data(limit: maxValueSize)
                let valueWrite = try flags & Self.valueFlag != 0 ? id() : x
                out.append(Entity(id: x, winner: winner, winnerID: winnerID, deleted: deleted, value: value, valueWrite: valueWrite))
            }
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
