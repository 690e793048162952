import Foundation

/// Version 9 of the state snapshot (Docs/WireFormat.md §5.9): every record written as state,
/// its fields as they are (every register's stamps, every live increment and add tag, the text),
/// so that a load replays no field write; the records without text are decoded on first read
/// (issue 43: replaying a board's field writes was half of its load with every card read).
///
/// The part, between the batch of other operations and the log:
///
/// ```
/// part   := clock:varint  names:count  name:string × names  records:count  record × records
/// record := replica:varint  counterDelta:varint (the entity; ids strictly increasing, each counter
///           the previous one's plus the delta)  lengthAndText:varint (length × 2 + 1 when a
///           field holds text)  body (length bytes)
/// body   := base  fields:count  field × fields
/// base   := clock:varint  replica:varint (index + 1; 0: none)  [counter:signed, from the entity's]
/// field  := name:varint (index into the names, strictly increasing)  flags:byte  [parts:byte]
///           [latest stamp] [register stamp] [value] [increments] [adds] [text]
/// ```
///
/// A stamp is `clock:varint` and an id; an id is `0` (none), `1` (the base stamp's id) or
/// `replica index + 2` then its counter. A field's flags: its kind (bits 0–2), the latest stamp is
/// the base one (8), a register stamp (16), the register stamp is the latest one (32), the kind's
/// own part (64: the value of a removed or value field, a counter's increments, a set's adds, a
/// text's text), more parts (128: a `parts` byte follows, nonzero, of 1 value, 2 increments, 4
/// adds, 8 text). The parts: a value (§2.7); increments (`k:count`, then an id and a `signed`
/// amount each, ids strictly increasing); adds (`k:count` members, strictly increasing as UTF-8
/// bytes, each with `t:count` tags strictly increasing); a text (§5.6's layout with ids as replica
/// index + 1).
struct StateRecords: Sendable {
    /// Field flags (the first byte).
    enum Flag {
        static let kindMask: UInt8 = 0x7
        static let latestIsBase: UInt8 = 8, register: UInt8 = 16, registerIsLatest: UInt8 = 32
        static let ownPart: UInt8 = 64, moreParts: UInt8 = 128
    }

    /// A field's parts (the `parts` byte).
    enum Part {
        static let value: UInt8 = 1, increments: UInt8 = 2, adds: UInt8 = 4, text: UInt8 = 8
        static let all: UInt8 = 15

        /// The part that flag 64 stands for in a field of `kind`.
        static func own(_ kind: FieldState.Kind) -> UInt8 {
            switch kind {
            case .removed, .value: value
            case .counter: increments
            case .set: adds
            case .text: text
            }
        }
    }

    /// The snapshot's bytes (shared with the loader's reader, not copied).
    let reader: WireReader
    let names: [String]
    let replicas: [ReplicaID]
    let maxValueSize: Int
    /// Version 11: a text part starts with its kind, and a derived text holds its order only
    /// (`DerivedTextCoding.swift`).
    var derivedTexts = false

    /// How ``read(_:mode:)`` treats what it reads.
    enum Mode {
        /// Checks everything a later read relies on, builds nothing.
        case check
        /// Builds every field's state.
        case state
        /// Builds only what the fields show.
        case shown
    }

    /// What ``read(_:mode:)`` builds.
    struct Built {
        var state: [String: FieldState] = [:]
        var shown: [String: Field] = [:]
    }

    /// Version 11: the order and digest of each derived text of a record, by field name (its
    /// state holds an empty text until the log has made it).
    typealias DerivedOrders = [String: (order: [Int], digest: UInt32)]

    /// The record whose body starts at `offset`, every field's state. Checked at the load.
    ///
    /// - Complexity: O(f + t) for f fields and t tags and members.
    func fields(at offset: Int, of entity: OpID) -> [String: FieldState] {
        var r = reader
        r.rewind(to: offset)
        do { return try read(&r, of: entity, mode: .state).state } catch { preconditionFailure("a record checked at the load: \(error)") }
    }

    /// What the record whose body starts at `offset` shows (``RecordStore/record(of:)``), read
    /// without building the fields' states.
    ///
    /// - Complexity: O(f + t) for f fields and t tags and members.
    func shown(at offset: Int, of entity: OpID) -> [String: Field] {
        var r = reader
        r.rewind(to: offset)
        do { return try read(&r, of: entity, mode: .shown).shown } catch { preconditionFailure("a record checked at the load: \(error)") }
    }

    /// Reads one record's body at `r`'s offset. `.check` throws for anything the other modes
    /// would refuse, so that a record checked at the load always reads later.
    /// Version 11: each derived text's order is put in `derived` (a derived text where it is nil
    /// is an error: only the load reads one; a pointer, so that other reads pass nothing to free).
    func read(_ r: inout WireReader, of entity: OpID, mode: Mode,
              derived: UnsafeMutablePointer<DerivedOrders>? = nil) throws(WireError) -> Built {
        var out = Built()
        let base = try baseStamp(&r, of: entity)
        let n = try r.count(minBytes: 2)
        // Made with room (`reserveCapacity` on an empty dictionary went through the unspecialized
        // library entry, an eighth of reading a card).
        switch mode {
        case .check: break
        case .state: out.state = Dictionary(minimumCapacity: n)
        case .shown: out.shown = Dictionary(minimumCapacity: n)
        }
        var previous = -1
        for _ in 0 ..< n {
            let at = r.offset
            let k = try r.varint()
            guard k < UInt64(names.count), Int(k) > previous else { throw .invalidValue("a field name index out of order or out of range", offset: at) }
            previous = Int(k)
            let flagsAt = r.offset
            let flags = try r.byte()
            guard let kind = FieldState.Kind(rawValue: flags & Flag.kindMask) else {
                throw .invalidValue("field flags \(flags) that are not a field's", offset: flagsAt)
            }
            var parts = flags & Flag.ownPart != 0 ? Part.own(kind) : 0
            if flags & Flag.moreParts != 0 {
                let more = try r.byte()
                guard more != 0, more & ~Part.all == 0, more & Part.own(kind) == 0 else {
                    throw .invalidValue("field parts \(more) that are not a field's", offset: flagsAt)
                }
                parts |= more
            }
            guard flags & Flag.register != 0 || (flags & Flag.registerIsLatest == 0 && parts & Part.value == 0),
                  kind != .text || parts & Part.text != 0 else {
                throw .invalidValue("field flags \(flags) that are not a field's", offset: flagsAt)
            }
            let latest = flags & Flag.latestIsBase != 0 ? base : try stamp(&r, base: base.id)
            let register = flags & Flag.register == 0 ? .zero
                : flags & Flag.registerIsLatest != 0 ? latest : try stamp(&r, base: base.id)
            var value: FieldValue?
            if parts & Part.value != 0 {
                if mode == .check { try Self.checkValue(&r, maxValueSize: maxValueSize) } else { value = try r.fieldValue(maxValueSize: maxValueSize) }
            }
            var increments: [OpID: Int64] = [:]
            var sum: Int64 = 0
            if parts & Part.increments != 0 {
                let countAt = r.offset
                let m = try r.count(minBytes: 2)
                guard m >= 1 else { throw .invalidValue("no increments where the flags say some", offset: countAt) }
                if mode == .state { increments.reserveCapacity(m) }
                var last = OpID.none
                for _ in 0 ..< m {
                    let idAt = r.offset
                    let t = try id(&r, base: base.id)
                    guard t > last else { throw .invalidValue("increments out of order", offset: idAt) }
                    last = t
                    let amount = try r.signed()
                    if mode == .state { increments[t] = amount } else { sum &+= amount }
                }
            }
            var adds: [String: [OpID]] = [:]
            var members: [String] = []
            if parts & Part.adds != 0 {
                let countAt = r.offset
                let m = try r.count(minBytes: 2)
                guard m >= 1 else { throw .invalidValue("no members where the flags say some", offset: countAt) }
                if mode == .shown { members.reserveCapacity(m) }
                var lastMember: Range<Int>?
                for _ in 0 ..< m {
                    let memberAt = r.offset
                    let range = try r.dataRange(limit: FieldLimits.maxMemberBytes)
                    if let lastMember {
                        guard r.bytes[lastMember].lexicographicallyPrecedes(r.bytes[range]) else {
                            throw .invalidValue("set members out of order", offset: memberAt)
                        }
                    }
                    lastMember = range
                    var member: String?
                    if mode == .check {
                        try Self.checkUTF8(r.bytes[range], at: memberAt)
                    } else {
                        member = String(decoding: r.bytes[range], as: UTF8.self)
                    }
                    let tagsAt = r.offset
                    let t = try r.count(minBytes: 2)
                    guard t >= 1 else { throw .invalidValue("a member without tags", offset: tagsAt) }
                    var tags: [OpID] = []
                    if mode == .state { tags.reserveCapacity(t) }
                    var last = OpID.none
                    for _ in 0 ..< t {
                        let idAt = r.offset
                        let tag = try id(&r, base: base.id)
                        guard tag > last else { throw .invalidValue("tags out of order", offset: idAt) }
                        last = tag
                        if mode == .state { tags.append(tag) }
                    }
                    if let member {
                        if mode == .state { adds[member] = tags } else { members.append(member) }
                    }
                }
            }
            var text: TextSequence?
            if parts & Part.text != 0 {
                // A record read later holds no text: each text is checked against the log at the load.
                guard mode != .check else { throw .invalidValue("a text in a record not flagged with text", offset: flagsAt) }
                text = try readText(&r, name: Int(k), derived: derived)   // DerivedTextCoding.swift
            }
            let name = names[Int(k)]
            switch mode {
            case .check: break
            case .state:
                var f = FieldState()
                f.latest = latest
                f.kind = kind
                f.register = register
                f.value = value
                f.increments = increments
                f.adds = adds
                f.text = text
                out.state[name] = f
            case .shown:
                switch kind {
                case .removed: break
                case .value: if let value { out.shown[name] = .value(value) }
                case .counter: out.shown[name] = .counter(sum)
                case .set:
                    // Members in String order, as ``FieldState/shown`` gives them: the bytes' order for
                    // ASCII; beyond it, sorted, and members equal as strings once (as the state's keys).
                    out.shown[name] = .set(members.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } } ? members : Set(members).sorted())
                case .text: out.shown[name] = .text(text?.string ?? "")
                }
            }
        }
        return out
    }

    /// An id (0: none, 1: `base`, else a replica index + 2 and a counter).
    @inline(__always)
    func id(_ r: inout WireReader, base: OpID?) throws(WireError) -> OpID {
        let at = r.offset
        let k = try r.varint()
        if k == 0 { return .none }
        if k == 1 {
            guard let base else { throw .invalidValue("the base id where there is none", offset: at) }
            return base
        }
        guard k - 2 < UInt64(replicas.count) else { throw .invalidValue("replica index \(k - 2) not in the table", offset: at) }
        let c = try r.varint()
        guard c >= 1, c <= OpID.maxCounter else { throw .invalidValue("counter \(c) out of range", offset: at) }
        return OpID(counter: c, replica: replicas[Int(k - 2)])
    }

    /// A record's base stamp: its clock, and its id's replica (index + 1; 0: none) and counter
    /// (a difference from the entity's).
    func baseStamp(_ r: inout WireReader, of entity: OpID) throws(WireError) -> FieldStamp {
        let clock = try r.varint()
        let at = r.offset
        let k = try r.varint()
        if k == 0 { return FieldStamp(clock: clock, id: .none) }
        guard k - 1 < UInt64(replicas.count) else { throw .invalidValue("replica index \(k - 1) not in the table", offset: at) }
        let (c, overflow) = Int64(bitPattern: entity.counter).addingReportingOverflow(try r.signed())
        guard !overflow, c >= 1, UInt64(c) <= OpID.maxCounter else { throw .invalidValue("counter \(c) out of range", offset: at) }
        return FieldStamp(clock: clock, id: OpID(counter: UInt64(c), replica: replicas[Int(k - 1)]))
    }

    @inline(__always)
    func stamp(_ r: inout WireReader, base: OpID?) throws(WireError) -> FieldStamp {
        let clock = try r.varint()
        return FieldStamp(clock: clock, id: try id(&r, base: base))
    }

    /// Checks a field value as ``WireReader/fieldValue(maxValueSize:)`` reads one, making nothing.
    static func checkValue(_ r: inout WireReader, maxValueSize: Int) throws(WireError) {
        let at = r.offset
        let tag = try r.byte()
        switch FieldCode.Value(rawValue: tag) {
        case .null, .falseValue, .trueValue: break
        case .int: _ = try r.signed()
        case .double:
            guard Double(bitPattern: try r.varint()).isFinite else { throw .invalidValue("a double that is not finite", offset: at) }
        case .string:
            let textAt = r.offset
            let range = try r.dataRange(limit: maxValueSize)
            try checkUTF8(r.bytes[range], at: textAt)
        case .date:
            let ms = try r.signed()
            guard abs(ms) <= 9_000_000_000_000_000 else { throw .invalidValue("a date out of range", offset: at) }
        case .bytes: _ = try r.dataRange(limit: maxValueSize)
        case nil: throw .invalidTag(tag, offset: at)
        }
    }

    /// Checks that `bytes` are UTF-8 (ASCII without making a string).
    static func checkUTF8(_ bytes: ArraySlice<UInt8>, at: Int) throws(WireError) {
        if bytes.allSatisfy({ $0 < 0x80 }) { return }
        let s = String(decoding: bytes, as: UTF8.self)
        guard s.utf8.elementsEqual(bytes) else { throw .invalidValue("a string that is not UTF-8", offset: at) }
    }
}

// MARK: Writing

extension StateSnapshotEncoder {
    /// Version 9: every record, as state (``StateRecords``).
    ///
    /// - Complexity: O(r log r + f log f + t) for r records, f fields and t tags and members.
    mutating func putStateRecords() {
        let records = doc.records
        var all = records.allRecords
        for record in pastedRecords { all[record] = nil }   // version 10: left to the log
        var nameSet = Set<String>()
        for fields in all.values { for name in fields.keys { nameSet.insert(name) } }
        let names = nameSet.sorted()
        var nameIndex: [String: Int] = [:]
        for (k, name) in names.enumerated() { nameIndex[name] = k }
        // Version 11: whether records are left to the log (version 10's rule), as a flag.
        if derivedTexts != nil { w.count(pastedRecords.isEmpty ? 0 : 1) }
        w.varint(records.clock)
        w.count(names.count)
        for name in names { w.string(name) }
        let entities = all.keys.sorted()
        w.count(entities.count)
        var body = WireWriter()
        var previous: UInt64 = 0
        for e in entities {
            let fields = all[e]!
            w.count(index(of: e.replica))
            w.varint(e.counter - previous)
            previous = e.counter
            body.bytes.removeAll(keepingCapacity: true)
            putRecordBody(fields, of: e, nameIndex: nameIndex, into: &body)
            w.count(body.bytes.count * 2 + (fields.values.contains { $0.text != nil } ? 1 : 0))
            w.bytes.append(contentsOf: body.bytes)
        }
    }

    /// One record's body: its base stamp (the latest stamp most of its fields share), then each
    /// field in name order.
    private mutating func putRecordBody(_ fields: [String: FieldState], of entity: OpID, nameIndex: [String: Int], into b: inout WireWriter) {
        var counts: [FieldStamp: Int] = [:]
        for f in fields.values { counts[f.latest, default: 0] += 1 }
        let base = counts.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key ?? .zero
        func id(_ x: OpID, _ b: inout WireWriter, baseAllowed: Bool = true) {
            if x == .none { b.count(0); return }
            if baseAllowed, x == base.id { b.count(1); return }
            b.count(index(of: x.replica) + 2)
            b.varint(x.counter)
        }
        func stamp(_ s: FieldStamp, _ b: inout WireWriter, baseAllowed: Bool = true) {
            b.varint(s.clock)
            id(s.id, &b, baseAllowed: baseAllowed)
        }
        b.varint(base.clock)
        if base.id == .none {
            b.count(0)
        } else {
            b.count(index(of: base.id.replica) + 1)
            b.signed(Int64(bitPattern: base.id.counter &- entity.counter))
        }
        let ordered = fields.map { (nameIndex[$0.key]!, $0.key, $0.value) }.sorted { $0.0 < $1.0 }
        b.count(ordered.count)
        for (k, name, f) in ordered {
            b.count(k)
            var flags = f.kind.rawValue
            if f.latest == base { flags |= StateRecords.Flag.latestIsBase }
            if f.register != .zero || f.value != nil {
                flags |= StateRecords.Flag.register
                if f.register == f.latest { flags |= StateRecords.Flag.registerIsLatest }
            }
            var parts: UInt8 = 0
            if f.value != nil { parts |= StateRecords.Part.value }
            if !f.increments.isEmpty { parts |= StateRecords.Part.increments }
            if !f.adds.isEmpty { parts |= StateRecords.Part.adds }
            if f.text != nil { parts |= StateRecords.Part.text }
            let own = StateRecords.Part.own(f.kind)
            if parts & own != 0 { flags |= StateRecords.Flag.ownPart }
            if parts & ~own != 0 { flags |= StateRecords.Flag.moreParts }
            b.byte(flags)
            if parts & ~own != 0 { b.byte(parts & ~own) }
            if flags & StateRecords.Flag.latestIsBase == 0 { stamp(f.latest, &b) }
            if flags & StateRecords.Flag.register != 0, flags & StateRecords.Flag.registerIsLatest == 0 { stamp(f.register, &b) }
            if let v = f.value { b.fieldValue(v) }
            if !f.increments.isEmpty {
                let increments = f.increments.sorted { $0.key < $1.key }
                b.count(increments.count)
                for (t, n) in increments { id(t, &b); b.signed(n) }
            }
            if !f.adds.isEmpty {
                let members = f.adds.keys.map { (Array($0.utf8), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
                b.count(members.count)
                for (_, m) in members {
                    b.string(m)
                    let tags = f.adds[m]!.sorted()
                    b.count(tags.count)
                    for t in tags { id(t, &b) }
                }
            }
            let textStart = b.bytes.count
            defer { textBytes += b.bytes.count - textStart }
            if let t = f.text, let derived = derivedTexts, derived.contains(TextStateCheck.Key(record: entity, name: name)) {
                Self.putDerivedText(t, into: &b)   // version 11
            } else if let t = f.text {
                if derivedTexts != nil { b.count(Int(TextKind.whole.rawValue)) }
                t.encode { token in
                    switch token {
                    case .id(let x): b.count(index(of: x.replica) + 1); b.varint(x.counter)
                    case .count(let n): b.count(n)
                    case .signed(let n): b.signed(n)
                    case .data(let d): b.data(d)
                    }
                }
            }
        }
    }
}

// MARK: Reading

extension StateSnapshotDecoder {
    /// Version 9: reads the records part. Every record is checked whole now; those with text are
    /// built now (their texts are checked against the log's edits, as version 7's), the others
    /// are indexed, to be read on first use (``DeferredRecords``, from ``StateRecords``).
    ///
    /// - Complexity: O(b + n) for b bytes of records and n characters of text.
    mutating func readStateRecords() throws(WireError) {
        if derivedTexts {
            let at = r.offset
            let flags = try r.varint()
            guard flags <= 1 else { throw .invalidValue("records flags \(flags)", offset: at) }
            pastedRecords = flags == 1
        }
        let clock = try r.varint()
        let nameCount = try r.count(minBytes: 2)
        var names: [String] = []
        names.reserveCapacity(nameCount)
        var distinct = Set<String>()
        for _ in 0 ..< nameCount {
            let at = r.offset
            let name = try r.utf8(limit: FieldLimits.maxNameBytes)
            if let why = FieldLimits.problem(withName: name) { throw .invalidValue(why, offset: at) }
            guard distinct.insert(name).inserted else { throw .invalidValue("field name \(name) twice", offset: at) }
            names.append(name)
        }
        let recordCount = try r.count(minBytes: 4)
        let state = StateRecords(reader: r, names: names, replicas: replicas, maxValueSize: maxValueSize, derivedTexts: derivedTexts)
        var check = TextStateCheck()
        check.clock = clock
        deferral.targets.reserveCapacity(recordCount)
        var previous = OpID.none
        for _ in 0 ..< recordCount {
            let at = r.offset
            let k = try replicaIndex()
            let delta = try r.varint()
            let (c, overflow) = previous.counter.addingReportingOverflow(delta)
            guard !overflow, c >= 1, c <= OpID.maxCounter else { throw .invalidValue("counter out of range", offset: at) }
            let e = OpID(counter: c, replica: replicas[k])
            guard e > previous else { throw .invalidValue("records out of order", offset: at) }
            previous = e
            let lengthAt = r.offset
            let lengthAndFlag = try r.varint()
            let flag = lengthAndFlag & 1
            guard lengthAndFlag / 2 <= UInt64(r.remaining) else { throw .countTooLarge(Int(lengthAndFlag / 2), offset: lengthAt) }
            let length = Int(lengthAndFlag / 2)
            let start = r.offset
            guard start < Int(Int32.max) else { throw .countTooLarge(start, offset: at) }
            var body = r
            var derived: StateRecords.DerivedOrders = [:]
            let built = try withUnsafeMutablePointer(to: &derived) { (p) throws(WireError) in
                try state.read(&body, of: e, mode: flag == 1 ? .state : .check, derived: flag == 1 && derivedTexts ? p : nil)
            }
            guard body.offset == start + length else { throw .invalidValue("a record of \(body.offset - start) bytes where its length says \(length)", offset: start) }
            r.rewind(to: start + length)
            if flag == 1 {
                var any = false
                for (name, f) in built.state {
                    guard let text = f.text else { continue }
                    any = true
                    check.index[TextStateCheck.Key(record: e, name: name)] = check.fields.count
                    check.fields.append(derived[name].map { TextStateCheck.Field(derivedOrder: $0) } ?? TextStateCheck.Field(text))
                }
                guard any else { throw .invalidValue("a record \(e) flagged with text that holds none", offset: at) }
                check.records[e] = built.state
            } else {
                deferral.targets[e] = (Int32(start), -1, true)
            }
        }
        textState = check
        stateRecords = state
    }
}
