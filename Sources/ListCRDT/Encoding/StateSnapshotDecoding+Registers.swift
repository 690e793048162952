import Foundation

/// The registers and values of a state snapshot (Docs/WireFormat.md §5.2): position registers
/// derived from the log, delete registers and values read, the frontier (see
/// `StateSnapshotDecoding.swift` for the decoder and its checks).
extension StateSnapshotDecoder {
    // MARK: Registers

    /// Each entity's position register: its slot with the greatest write (a move's, when a move
    /// wins; else its insert's, which the entity's row holds from the start). For the sections, or
    /// for the items (once their rows are written); the items whose register a move writes are
    /// retracted from the visibility first and added to `touched`.
    mutating func deriveWinners(items: Bool, touched: inout [EntityIndex]) {
        let kind: OpLog.Kind = items ? .moveItems : .moveSection
        for rec in doc.log.records.indices {
            let record = doc.log.records[rec]
            guard record.kind == kind else { continue }
            let write = doc.log.id(record: rec, operation: 0)
            for k in 0 ..< record.count {
                let lv = record.firstSlot.advanced(by: k)
                let e = doc.slots.entity(of: lv)
                if !items {
                    if write > doc.sections.winnerID(e) { doc.sections.setWinner(lv, write: write, of: e) }
                } else if write > doc.items.winnerID(e) {
                    retract(e, into: &touched)
                    doc.items.setWinner(lv, write: write, of: e)
                    doc.items.rows[e.int].section = doc.slots.sequence(of: lv).section
                }
            }
        }
    }

    /// Before a write to item `e`'s registers: takes back what its row counted when it was written
    /// (its insert slot shown, when untouched and so alive), and notes it in `touched`, once: an
    /// item has registers only after a first write, which came here.
    @inline(__always)
    mutating func retract(_ e: EntityIndex, into touched: inout [EntityIndex]) {
        let row = doc.items.rows[e.int]
        guard row.packedState < 0 else { return }   // retracted already
        if row.packedState == -1 {
            visible[row.winner.int] = false
            itemsShown[row.section.int] -= 1
        }
        touched.append(e)
    }

    /// The delete registers of one table, as runs, read into deleted-at-insert ranges and explicit
    /// registers (in entity order).
    mutating func readDeletedRuns(total: Int) throws(WireError) -> (own: [Range<Int>], explicit: [(EntityIndex, OpID)]) {
        let runs = try r.count(minBytes: 2)
        var own: [Range<Int>] = [], explicit: [(EntityIndex, OpID)] = []
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
                own.append(e ..< e + n)
            case StateSnapshotEncoder.DeletedTag.explicit.rawValue:
                for x in e ..< e + n { explicit.append((EntityIndex(x), try id())) }
            default:
                throw .invalidTag(UInt8(truncatingIfNeeded: tag), offset: tagAt)
            }
            e += n
        }
        guard e == total else { throw .invalidValue("delete registers for \(e) of \(total) entities", offset: r.offset) }
        return (own, explicit)
    }

    /// The sections' delete registers.
    mutating func readSectionDeletes() throws(WireError) {
        let (own, explicit) = try readDeletedRuns(total: doc.sections.count)
        // What setDeleted(id, of:) does to an entity deleted by a delete that saw its insert.
        for range in own { doc.sections.markDeletedAtInsert(range) }
        for (s, seen) in explicit { doc.sections.setDeleted(seen, of: s) }
    }

    /// The items' delete registers; then the items' rows, written once each with their delete
    /// state (``writeItemRows(deletedAtInsert:)``), the moves' position registers and the
    /// explicit delete registers; and the visibility of the items they touched.
    mutating func readItemDeletes() throws(WireError) {
        let (own, explicit) = try readDeletedRuns(total: itemCount)
        writeItemRows(deletedAtInsert: own)
        var touched: [EntityIndex] = []
        deriveWinners(items: true, touched: &touched)
        for (x, seen) in explicit {
            retract(x, into: &touched)
            doc.items.setDeleted(seen, of: x)
        }
        // Each touched item once (see retract), shown where its registers say.
        for x in touched where doc.items.isAlive(x) {
            let row = doc.items.rows[x.int]
            visible[row.winner.int] = true
            itemsShown[row.section.int] += 1
        }
    }

    /// Writes every item's row from `itemPieces`, in one pass: the insert's id, slot and section,
    /// deleted at its insert in the ranges `own` (sorted, disjoint), else untouched; and, for the
    /// untouched, the visibility of its slot and its count in its section.
    ///
    /// - Complexity: O(items + ranges).
    mutating func writeItemRows(deletedAtInsert own: [Range<Int>]) {
        visible = Array(repeating: false, count: doc.slots.count)
        itemsShown = Array(repeating: 0, count: doc.sections.count)
        let pieces = itemPieces
        var shown = itemsShown
        itemsShown = []
        defer { itemsShown = shown }
        doc.items.rows = visible.withUnsafeMutableBufferPointer { visible in
            [EntityTable.Row](unsafeUninitializedCapacity: itemCount) { rows, initialized in
                var e = 0, o = 0
                for piece in pieces {
                    var k = 0
                    while k < piece.count {
                        // The longest stretch from entity e + k in one delete state.
                        while o < own.count && own[o].upperBound <= e + k { o += 1 }
                        let dead = o < own.count && own[o].lowerBound <= e + k
                        let bound = o < own.count ? (dead ? own[o].upperBound : own[o].lowerBound) : Int.max
                        let stop = min(piece.count, bound - e)
                        let state: Int32 = dead ? -2 : -1
                        // One pass writes the rows and, for live items, their slots' visibility
                        // (a memset per stretch cost more than the stores: stretches are short).
                        var row = rows.baseAddress! + e + k
                        var counter = piece.id.counter &+ UInt64(k)
                        var lv = piece.lv.advanced(by: k)
                        let flags = visible.baseAddress!
                        for _ in k ..< stop {
                            row.initialize(to: EntityTable.Row(id: OpID(counter: counter, replica: piece.id.replica),
                                                               winner: lv, section: piece.section, packedState: state))
                            flags[lv.int] = !dead
                            row += 1
                            counter &+= 1
                            lv = lv.advanced(by: 1)
                        }
                        if !dead { shown[piece.section.int] += stop - k }
                        k = stop
                    }
                    e += piece.count
                }
                initialized = e
            }
        }
    }

    /// The values of one table, and the insert values that later writes replaced.
    mutating func readValues(items: Bool) throws(WireError) {
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
        let values = ValueStore(bytes: Array(raw), lengths: lengths)
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
        // The snapshot holds the current values, the table keeps the inserts' values apart from
        // the written ones: put the insert values back in place when some were replaced.
        func install(_ table: inout EntityTable) {
            if insertValues.isEmpty {
                table.insertValues = values
                return
            }
            var inserts = (0 ..< values.count).map { values[$0] }
            for (i, _, v) in insertValues { inserts[i.int] = v }
            table.insertValues = ValueStore(inserts)
            for (i, write, _) in insertValues { table.setValue(values[i.int], write: write, of: i) }
        }
        if items { install(&doc.items) } else { install(&doc.sections) }
    }

    mutating func readFrontier() throws(WireError) {
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
    mutating func appendRows(id: OpID, slot lv: LocalVersion, section s: EntityIndex, count: Int) {
        rows.append(contentsOf: NewRows(id: id, lv: lv, section: s, left: count))
    }

    /// The rows ``appendRows(id:slot:section:count:)`` appends, as a sequence (appended in one step).
    private struct NewRows: Sequence, IteratorProtocol {
        var id: OpID
        var lv: LocalVersion
        let section: EntityIndex
        var left: Int
        var underestimatedCount: Int { left }

        mutating func next() -> Row? {
            guard left > 0 else { return nil }
            left -= 1
            defer { (id.counter, lv) = (id.counter &+ 1, lv.advanced(by: 1)) }
            return Row(id: id, winner: lv, section: section, state: .untouched)
        }
    }
}
