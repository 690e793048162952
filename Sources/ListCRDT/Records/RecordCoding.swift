import Foundation

/// The records of a compacted document (Docs/WireFormat.md §5.4): what compaction keeps of every
/// field once its history is gone. Written after the floor's state in a version-4 snapshot.
extension RecordStore {
    /// The bytes of the records (sorted, so equal stores give equal bytes).
    ///
    /// - Complexity: O(r log r + f log f + t) for r records, f fields and t tags.
    func encoded() -> [UInt8] {
        var replicas: [ReplicaID] = []
        var index: [ReplicaID: Int] = [:]
        var w = WireWriter()
        func id(_ x: OpID) {
            if x == .none { w.count(0); return }
            if index[x.replica] == nil { index[x.replica] = replicas.count; replicas.append(x.replica) }
            w.count(index[x.replica]! + 1)
            w.varint(x.counter)
        }
        func stamp(_ s: FieldStamp) { w.varint(s.clock); id(s.id) }
        let withText = hasText
        w.varint(clock)
        let all = allRecords
        let entities = all.keys.sorted()
        w.count(entities.count)
        for e in entities {
            id(e)
            let fields = all[e]!
            w.count(fields.count)
            for name in fields.keys.sorted() {
                let f = fields[name]!
                w.string(name)
                stamp(f.latest)
                w.byte(f.kind.rawValue)
                stamp(f.register)
                if let v = f.value { w.byte(1); w.fieldValue(v) } else { w.byte(0) }
                let increments = f.increments.sorted { $0.key < $1.key }
                w.count(increments.count)
                for (t, n) in increments { id(t); w.signed(n) }
                let members = f.adds.keys.sorted()
                w.count(members.count)
                for m in members {
                    w.string(m)
                    let tags = f.adds[m]!.sorted()
                    w.count(tags.count)
                    for t in tags { id(t) }
                }
                if withText {   // version 5 (Text/TextCoding.swift)
                    if let t = f.text {
                        w.byte(1)
                        t.encode { token in
                            switch token {
                            case .id(let x): id(x)
                            case .count(let n): w.count(n)
                            case .signed(let n): w.signed(n)
                            case .data(let d): w.data(d)
                            }
                        }
                    } else {
                        w.byte(0)
                    }
                }
            }
        }
        var head = WireWriter()
        head.count(replicas.count)
        for r in replicas { head.varint(r.rawValue) }
        return head.bytes + w.bytes
    }

    /// Reads records written by ``encoded()``; every count is bounded by the input. `text`: the
    /// layout of snapshot version 5 (a text flag after each field), written when a field has text.
    init(decoding bytes: some Collection<UInt8>, maxValueSize: Int, text: Bool = false) throws(WireError) {
        var r = WireReader(bytes)
        var replicas: [ReplicaID] = []
        for _ in 0 ..< (try r.count(minBytes: 1)) { replicas.append(ReplicaID(try r.varint())) }
        func id(allowNone: Bool) throws(WireError) -> OpID {
            let at = r.offset
            let k = try r.varint()
            if k == 0 {
                guard allowNone else { throw .invalidValue("no id where one is needed", offset: at) }
                return .none
            }
            guard k <= UInt64(replicas.count) else { throw .invalidValue("replica index \(k) not in the table", offset: at) }
            let c = try r.varint()
            guard c >= 1, c <= OpID.maxCounter else { throw .invalidValue("counter \(c) out of range", offset: at) }
            return OpID(counter: c, replica: replicas[Int(k - 1)])
        }
        func stamp() throws(WireError) -> FieldStamp {
            let c = try r.varint()
            return FieldStamp(clock: c, id: try id(allowNone: true))
        }
        self.init()
        clock = try r.varint()
        let recordCount = try r.count(minBytes: 2)
        materialized.reserveCapacity(recordCount)
        for _ in 0 ..< recordCount {
            let e = try id(allowNone: false)
            let fieldCount = try r.count(minBytes: 8)
            var fields = [String: FieldState](minimumCapacity: fieldCount)
            for _ in 0 ..< fieldCount {
                let at = r.offset
                let name = try r.utf8(limit: FieldLimits.maxNameBytes)
                if let why = FieldLimits.problem(withName: name) { throw .invalidValue(why, offset: at) }
                var f = FieldState()
                f.latest = try stamp()
                let kindAt = r.offset
                guard let kind = FieldState.Kind(rawValue: try r.byte()) else { throw .invalidValue("a field kind that is not one", offset: kindAt) }
                f.kind = kind
                f.register = try stamp()
                let hasAt = r.offset
                switch try r.byte() {
                case 0: f.value = nil
                case 1: f.value = try r.fieldValue(maxValueSize: maxValueSize)
                default: throw .invalidValue("a flag that is not 0 or 1", offset: hasAt)
                }
                for _ in 0 ..< (try r.count(minBytes: 2)) {
                    let t = try id(allowNone: false)
                    f.increments[t] = try r.signed()
                }
                for _ in 0 ..< (try r.count(minBytes: 2)) {
                    let m = try r.utf8(limit: FieldLimits.maxMemberBytes)
                    var tags: [OpID] = []
                    for _ in 0 ..< (try r.count(minBytes: 1)) { tags.append(try id(allowNone: false)) }
                    if !tags.isEmpty { f.adds[m] = tags }
                }
                if text {
                    let flagAt = r.offset
                    switch try r.byte() {
                    case 0: break
                    case 1: f.text = try TextSequence(decoding: &r, replicas: replicas)
                    default: throw .invalidValue("a flag that is not 0 or 1", offset: flagAt)
                    }
                }
                if f.kind == .text, f.text == nil { throw .invalidValue("a text field without its text", offset: at) }
                guard fields.updateValue(f, forKey: name) == nil else { throw .invalidValue("field \(name) twice", offset: at) }
            }
            guard materialized.updateValue(fields, forKey: e) == nil else { throw .invalidValue("record \(e) twice", offset: r.offset) }
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
    }

    /// The records compaction keeps: those of entities in `kept`, each field folded
    /// (``FieldState/folded``); a removed field whose every tag is gone is dropped too. The
    /// records of `asIs` (entities concurrent operations name, which are received again on the
    /// compacted document) are kept as they are.
    func compacted(keeping kept: Set<OpID>, asIs: Set<OpID> = []) -> RecordStore {
        var out = RecordStore()
        out.clock = clock
        for (e, fields) in allRecords where kept.contains(e) {
            if asIs.contains(e) {
                out.materialized[e] = fields
                continue
            }
            var keptFields: [String: FieldState] = [:]
            for (name, f) in fields {
                let folded = f.folded
                if folded.kind == .removed, folded.increments.isEmpty, folded.adds.isEmpty {
                    // Nothing left to show or to count: its stamps can still order a concurrent
                    // write, but every write from now on is after the floor, so it beats them.
                    continue
                }
                keptFields[name] = folded
            }
            if !keptFields.isEmpty { out.materialized[e] = keptFields }
        }
        return out
    }
}
