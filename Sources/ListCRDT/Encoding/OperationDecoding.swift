import Foundation

/// Reads a batch written by ``BatchEncoder``, validating every field; throws on the first problem.
///
/// Nothing is allocated from a count before the count is checked against the bytes left (or, for
/// runs of deletes, which cost no bytes per operation, against the operation count the header
/// declared, itself checked against the caller's limit).
struct BatchDecoder {
    var reader: WireReader
    let maxValueSize: Int
    var replicas: [ReplicaID] = []
    var context = CodingContext()
    var ops: [ListOperation] = []
    /// The batch's format version.
    var version: UInt8 = 0
    /// The field names and the last field clock so far (version 4).
    var fieldNames = FieldNameTable()
    /// Operations decoded so far (in ``ops``, or in ``runs``).
    var count = 0
    /// When set (``DecodedBatch``), insert runs and delete runs are kept as descriptors in
    /// ``runs`` instead of one operation each, and ``ops`` holds only the operations since the
    /// last run.
    var keepsRuns = false
    /// The parts and runs kept when ``keepsRuns``.
    var runs = DecodedBatch()
    /// When set (with ``keepsRuns``: a state snapshot's batch of other operations), field writes
    /// that hold no text are checked and kept as ``DecodedBatch/LazyField``s, not built
    /// (`OperationScanning.swift`).
    var lazyFields = false
    /// The record of the last field write found to hold a text edit (``OpID/none``: none yet),
    /// whose next writes are decoded without a scan first.
    var lastTextRecord = OpID.none

    /// Decodes one batch from the reader's position; leaves the reader after it.
    static func decode(from reader: inout WireReader, maxValueSize: Int, maxOperations: Int) throws(WireError) -> [ListOperation] {
        var d = BatchDecoder(reader: reader, maxValueSize: maxValueSize)
        try d.decodeBatch(maxOperations: maxOperations)
        reader = d.reader
        return d.ops
    }

    /// Reads the version, the replica table, the operation count and every record.
    mutating func decodeBatch(maxOperations: Int) throws(WireError) {
        version = try reader.byte()
        guard version >= ListOperation.oldestWireFormatVersion, version <= ListOperation.wireFormatVersion else {
            throw .unsupportedVersion(version)
        }

        let tableAt = reader.offset
        let replicaCount = try reader.count(minBytes: 1)
        replicas.reserveCapacity(replicaCount)
        var seen = Set<ReplicaID>(minimumCapacity: replicaCount)
        for _ in 0..<replicaCount {
            let r = ReplicaID(try reader.varint())
            guard seen.insert(r).inserted else { throw .invalidValue("replica \(r) twice in the table", offset: tableAt) }
            replicas.append(r)
        }

        let countAt = reader.offset
        let total = try reader.count(minBytes: 0)
        guard total <= maxOperations else { throw .countTooLarge(total, offset: countAt) }
        // Every record is at least two bytes; only runs hold more operations than bytes.
        if !keepsRuns { ops.reserveCapacity(min(total, reader.remaining)) }
        // Most runs of a long history are longer than 16 bytes (a run record holds at least 3 to
        // 7): room for that many at once spares growing the run tables record by record (their
        // copies were 3% of loading a 52 KB history). Only for batches of 16 KiB or more (a short
        // one's tables are small, and room reserved in the middle of the heap for them is left
        // there as a hole once they are freed).
        if keepsRuns && reader.remaining >= 1 << 14 { runs.reserveCapacity(records: min(total, reader.remaining / 16)) }
        while count < total {
            try record(left: total - count)
        }
    }

    // MARK: Records

    /// Reads one record (of at most `left` operations).
    mutating func record(left: Int) throws(WireError) {
        let at = reader.offset
        let first = try reader.byte()
        guard let kind = RecordKind(rawValue: first & 0x0f), kind.version <= version else { throw .invalidTag(first, offset: at) }
        let variant = first & RecordFlag.variant != 0
        if variant, kind != .insertItemRun, kind != .deleteItemRun, kind != .moveItems, kind != .writeFields, kind != .textRun,
           kind != .insertItemWithFields || version < ListOperation.sectionFieldsWireFormatVersion {
            throw .invalidTag(first, offset: at)
        }

        let (id, deps) = try header(first, at: at)
        if lazyFields, kind == .writeFields || kind == .insertItemWithFields,
           try keepLazily(kind, variant: variant, id: id, at: at) {
            return
        }
        let op: ListOperation
        switch kind {
        case .insertSection:
            let o = try origins(id)
            op = ListOperation(id: id, deps: deps, kind: .insertSection(o, value: try value()))
        case .insertItem:
            let s = try sectionRef(id)
            let o = try origins(id)
            if keepsRuns {
                // A run of one (its value is read the same way).
                try keepInsertRun(id: id, deps: deps, section: s, origins: o, count: 1, oneByte: false)
                return
            }
            op = ListOperation(id: id, deps: deps, kind: .insertItem(section: s, o, value: try value()))
        case .moveSection:
            let s = try sectionRef(id)
            op = ListOperation(id: id, deps: deps, kind: .moveSection(s, try origins(id)))
        case .moveItems:
            let s = try sectionRef(id)
            let o = try origins(id)
            let n = variant ? 1 : try reader.count(minBytes: 1)
            guard UInt64(n) <= OpID.maxCounter - id.counter + 1 || n == 0 else {
                throw .invalidValue("a move of \(n) items passes the largest counter", offset: at)
            }
            let items: ItemIDList
            if n == 1 {
                items = ItemIDList(one: ItemID(try ref(id, default: nil)))
            } else {
                var list: [ItemID] = []
                list.reserveCapacity(n)
                for _ in 0..<n { list.append(ItemID(try ref(id, default: nil))) }
                items = ItemIDList(list)
            }
            op = ListOperation(id: id, deps: deps, kind: .moveItems(items, section: s, o))
        case .deleteItem:
            let item = try ref(id, default: nil)
            let seen = try ref(id, default: item)
            if keepsRuns, seen == item {
                // A run of one: a delete that saw the item's insert slot.
                keepDeleteRun(id: id, deps: deps, firstItem: item, count: 1, descending: false)
                return
            }
            op = ListOperation(id: id, deps: deps, kind: .deleteItem(ItemID(item), seen: SlotID(seen)))
        case .deleteSection:
            let s = try sectionRef(id)
            let seen = try ref(id, default: s.opID)
            let n = try reader.count(minBytes: 2)
            var items: [ListOperation.SeenItem] = []
            items.reserveCapacity(n)
            for _ in 0..<n {
                let item = try ref(id, default: nil)
                items.append(.init(item: ItemID(item), seen: SlotID(try ref(id, default: item))))
            }
            op = ListOperation(id: id, deps: deps, kind: .deleteSection(s, seen: SlotID(seen), items: items))
        case .setItemValue:
            let item = try ref(id, default: nil)
            op = ListOperation(id: id, deps: deps, kind: .setItemValue(ItemID(item), try value()))
        case .setSectionValue:
            let s = try sectionRef(id)
            op = ListOperation(id: id, deps: deps, kind: .setSectionValue(s, try value()))
        case .insertItemRun:
            try insertRun(id: id, deps: deps, oneByte: variant, left: left, at: at)
            return
        case .deleteItemRun:
            try deleteRun(id: id, deps: deps, descending: variant, left: left, at: at)
            return
        case .moveItemRun:
            try moveRun(id: id, deps: deps, left: left)
            return
        case .textRun:
            try textRun(id: id, deps: deps, deleting: variant, left: left, at: at)   // Records/Text/TextRunCoding.swift
            return
        case .textBlock:
            try textBlock(id: id, deps: deps, left: left, at: at)   // Records/Text/TextBlockCoding.swift
            return
        case .writeFields:
            let target: RecordTarget = variant ? .section(try sectionRef(id)) : .item(ItemID(try ref(id, default: nil)))
            op = ListOperation(id: id, deps: deps, kind: .writeFields(target, try fieldWrites(id)))
        case .insertItemWithFields where variant:
            // Version 5: a section inserted with its fields (no section reference).
            let o = try origins(id)
            let v = try value()
            op = ListOperation(id: id, deps: deps, kind: .insertSectionWithFields(o, value: v, fields: try fieldWrites(id)))
        case .insertItemWithFields:
            let s = try sectionRef(id)
            let o = try origins(id)
            let v = try value()
            op = ListOperation(id: id, deps: deps, kind: .insertItemWithFields(section: s, o, value: v, fields: try fieldWrites(id)))
        }
        append(op)
    }

    private mutating func insertRun(id: OpID, deps: Frontier, oneByte: Bool, left: Int, at: Int) throws(WireError) {
        let section = try sectionRef(id)
        let o = try origins(id)
        let n = try runCount(left: left, bytesEach: 1, id: id)
        if keepsRuns {
            try keepInsertRun(id: id, deps: deps, section: section, origins: o, count: n, oneByte: oneByte)
            return
        }
        var prev = id
        for k in 0..<n {
            let v: Data
            if oneByte { v = Data(repeating: try reader.byte(), count: 1) } else { v = try value() }
            let opID = k == 0 ? id : prev.advanced(by: 1)
            append(ListOperation(
                id: opID, deps: k == 0 ? deps : Frontier(only: prev),
                kind: .insertItem(section: section,
                                  k == 0 ? o : ListOperation.Origins(after: SlotID(prev), before: o.before),
                                  value: v)))
            prev = opID
        }
    }

    private mutating func deleteRun(id: OpID, deps: Frontier, descending: Bool, left: Int, at: Int) throws(WireError) {
        let firstItem = try ref(id, default: nil)
        let n = try runCount(left: left, bytesEach: 0, id: id)
        let span = UInt64(n - 1)
        if descending {
            guard firstItem.counter > span else {
                throw .invalidValue("a delete run goes below counter 1", offset: at)
            }
        } else {
            guard firstItem.counter <= OpID.maxCounter - span else {
                throw .invalidValue("a delete run passes the largest counter", offset: at)
            }
        }
        if keepsRuns {
            keepDeleteRun(id: id, deps: deps, firstItem: firstItem, count: n, descending: descending)
            return
        }
        var prev = id
        var item = firstItem
        for k in 0..<n {
            let opID = k == 0 ? id : prev.advanced(by: 1)
            if k > 0 { item.counter = descending ? item.counter - 1 : item.counter + 1 }
            append(ListOperation(id: opID, deps: k == 0 ? deps : Frontier(only: prev),
                                 kind: .deleteItem(ItemID(item), seen: SlotID(item))))
            prev = opID
        }
    }

    /// A run's length: at least 2, at most the operations the header has left, at most what the
    /// bytes left can hold, and not past the largest counter.
    mutating func runCount(left: Int, bytesEach: Int, id: OpID) throws(WireError) -> Int {
        let at = reader.offset
        let n = try reader.count(minBytes: bytesEach)
        guard n <= left else { throw .countTooLarge(n, offset: at) }
        guard n >= 2 else { throw .invalidValue("a run of \(n) operations", offset: at) }
        guard UInt64(n - 1) <= OpID.maxCounter - id.counter else {
            throw .invalidValue("a run passes the largest counter", offset: at)
        }
        return n
    }

    mutating func append(_ op: ListOperation) {
        context.advance(past: op)
        ops.append(op)
        count += 1
    }

    // MARK: Fields

    /// The operation id and deps, as the first byte's flags say.
    private mutating func header(_ first: UInt8, at: Int) throws(WireError) -> (OpID, Frontier) {
        let prev = context.previousLast
        let replica: ReplicaID
        if first & RecordFlag.sameReplica != 0 {
            guard prev != .none else { throw .invalidTag(first, offset: at) }
            replica = prev.replica
        } else {
            replica = try replicaAt(try reader.varint())
        }
        let counter: UInt64
        if first & RecordFlag.nextCounter != 0 {
            counter = prev.counter + 1
        } else {
            let deltaAt = reader.offset
            let delta = try reader.signed()
            let (c, overflow) = Int64(prev.counter + 1).addingReportingOverflow(delta)
            guard !overflow, c >= 1 else { throw .invalidValue("counter out of range", offset: deltaAt) }
            counter = UInt64(c)
        }
        guard counter <= OpID.maxCounter else {
            throw .invalidValue("counter \(counter) over \(OpID.maxCounter)", offset: at)
        }
        let id = OpID(counter: counter, replica: replica)
        var deps = Frontier()
        if first & RecordFlag.depsPrevious != 0 {
            if prev != .none { deps = Frontier(only: prev) }
        } else {
            let n = try reader.count(minBytes: 1)
            var last = OpID.none
            for _ in 0..<n {
                let depAt = reader.offset
                let d = try ref(id, default: nil)
                guard last < d else { throw .invalidValue("deps not in increasing order", offset: depAt) }
                last = d
                deps.insert(d)
            }
        }
        return (id, deps)
    }

    @inline(__always)
    mutating func replicaAt(_ index: UInt64) throws(WireError) -> ReplicaID {
        guard index < UInt64(replicas.count) else {
            throw .invalidValue("replica index \(index) not in the table of \(replicas.count)", offset: reader.offset - 1)
        }
        return replicas[Int(index)]
    }

    /// A reference (see ``RefCode``); `fieldDefault` nil means code 0 is invalid here.
    @inline(__always)
    mutating func ref(_ op: OpID, default fieldDefault: OpID?) throws(WireError) -> OpID {
        let at = reader.offset
        return try ref(op, code: try reader.varint(), at: at, default: fieldDefault)
    }

    /// ``ref(_:default:)`` whose code, at offset `at`, is read already.
    @inline(__always)
    private mutating func ref(_ op: OpID, code: UInt64, at: Int, default fieldDefault: OpID?) throws(WireError) -> OpID {
        switch code {
        case RefCode.fieldDefault:
            guard let fieldDefault else { throw .invalidValue("reference code 0 where no default exists", offset: at) }
            return fieldDefault
        case RefCode.previous:
            guard context.previousLast != .none else { throw .invalidValue("reference to a previous operation in the first", offset: at) }
            return context.previousLast
        default:
            let replica = try replicaAt((code - RefCode.firstExplicit) / 2)
            let forward = (code - RefCode.firstExplicit) & 1 == 1
            let deltaAt = reader.offset
            let delta = try reader.varint()
            let counter: UInt64
            if forward {
                guard delta <= OpID.maxCounter - op.counter else {
                    throw .invalidValue("referenced counter over \(OpID.maxCounter)", offset: deltaAt)
                }
                counter = op.counter + delta
            } else {
                guard delta < op.counter - 1 else {
                    throw .invalidValue("referenced counter below 1", offset: deltaAt)
                }
                counter = op.counter - 1 - delta
            }
            return OpID(counter: counter, replica: replica)
        }
    }

    mutating func sectionRef(_ op: OpID) throws(WireError) -> SectionID {
        SectionID(try ref(op, default: context.lastSection?.opID))
    }

    mutating func origins(_ op: OpID) throws(WireError) -> ListOperation.Origins {
        func slot(_ d: inout BatchDecoder) throws(WireError) -> SlotID? {
            let at = d.reader.offset
            let code = try d.reader.varint()
            if code == RefCode.fieldDefault { return nil }
            return SlotID(try d.ref(op, code: code, at: at, default: nil))
        }
        let after = try slot(&self)
        return ListOperation.Origins(after: after, before: try slot(&self))
    }

    /// A record's field writes (Docs/WireFormat.md §2.7), names in strictly increasing order.
    private mutating func fieldWrites(_ id: OpID) throws(WireError) -> FieldWrites {
        let (clock, n, countAt) = try fieldWritesHead()
        var writes: [FieldWrite] = []
        writes.reserveCapacity(n)
        var previousName: String?
        for _ in 0 ..< n {
            let name = try fieldName()
            // In increasing order, each once: checked name by name (comparing the writes in pairs
            // afterwards copied each write twice, a third of decoding a state snapshot's field writes).
            if let previousName, !(previousName < name) {
                throw .invalidValue("field names not in increasing order, or twice", offset: countAt)
            }
            previousName = name
            let replaces = try ref(id, default: OpID.none)
            let seenAt = reader.offset
            let s = try reader.count(minBytes: 1)
            guard s <= FieldLimits.maxSeen else { throw .countTooLarge(s, offset: seenAt) }
            var seen: [OpID] = []
            if s > 0 {
                seen.reserveCapacity(s)
                for _ in 0 ..< s { seen.append(try ref(id, default: nil)) }
            }
            let change = try fieldChangeOrText(id)   // Records/Text/TextCoding.swift
            writes.append(FieldWrite(name: name, change: change, replaces: replaces, seen: seen))
        }
        return FieldWrites(clock: clock, sortedWrites: writes)
    }

    /// The head of a record's field writes (Docs/WireFormat.md §2.7): their clock (a difference
    /// from the batch's last one from version 4), how many there are (at most
    /// ``FieldLimits/maxWrites``) and where that count is. Shared by ``fieldWrites(_:)`` and
    /// the scan that builds nothing (`OperationScanning.swift`).
    mutating func fieldWritesHead() throws(WireError) -> (clock: UInt64, count: Int, countAt: Int) {
        let clock: UInt64
        if version >= 4 {
            clock = fieldNames.lastClock &+ UInt64(bitPattern: try reader.signed())
            fieldNames.lastClock = clock
        } else {
            clock = try reader.varint()
        }
        let countAt = reader.offset
        let n = try reader.count(minBytes: 4)
        guard n <= FieldLimits.maxWrites else { throw .countTooLarge(n, offset: countAt) }
        return (clock, n, countAt)
    }

    /// A field's name: spelled out (version 3; version 4 the first time), or the number of one the
    /// batch spelled out before (version 4). Every name is checked against ``FieldLimits`` where it
    /// is spelled, so a decoded write's name needs no check of its own
    /// (``ListDocument/problem(with:maxValueSize:namesChecked:)``).
    mutating func fieldName() throws(WireError) -> String {
        guard version >= 4 else { return try spelledName() }
        let at = reader.offset
        let code = try reader.varint()
        if code == 0 {
            let name = try spelledName()
            fieldNames.names.append(name)
            return name
        }
        guard code <= UInt64(fieldNames.names.count) else {
            throw .invalidValue("field name \(code) not in the batch's table of \(fieldNames.names.count)", offset: at)
        }
        return fieldNames.names[Int(code - 1)]
    }

    /// A name spelled out, within ``FieldLimits``.
    private mutating func spelledName() throws(WireError) -> String {
        let at = reader.offset
        let name = try reader.utf8(limit: FieldLimits.maxNameBytes)
        if let why = FieldLimits.problem(withName: name) { throw .invalidValue(why, offset: at) }
        return name
    }

    private mutating func value() throws(WireError) -> Data {
        try reader.data(limit: maxValueSize)
    }
}
