import Foundation

/// The registers and values of a state snapshot (Docs/WireFormat.md §5.2): position registers
/// derived from the log, delete registers and values read, the frontier (see
/// `StateSnapshotDecoding.swift` for the decoder and its checks).
extension StateSnapshotDecoder {
    // MARK: Registers

    /// Each entity's position register: its slot with the greatest write (a move's, when a move
    /// wins; else its insert's, which `readSlots` set).
    mutating func deriveWinners() {
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
    mutating func readDeleted(items: Bool) throws(WireError) {
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
