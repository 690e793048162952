/// Move runs (record kind 11, format version 2; Docs/WireFormat.md §2.6): consecutive single-item
/// moves by one replica in one section, as reordering a list produces, written as one record whose
/// references are bit-packed.
///
/// ```
/// moveRun := first:u8 header  section  n:varint  originWidth:u8  itemWidth:u8
///            length:varint  packed[length]
/// packed  := (after before item) × n, zero bits to the end of the last byte
/// field   := tag, then  counter:w                     (tag 0, same replica as the operation)
///                     | —                             (tag 1, field default: nil origin)
///                     | —                             (tag 2, the previous operation's last id)
///                     | replicaIndex:r  counter:w     (tag 3, any replica)
/// ```
///
/// Tag `t` is `t` one bits then a zero bit, or three one bits for 3 ("0", "10", "110", "111");
/// `w` is `originWidth` for `after` and `before` and `itemWidth` for `item`; `r` is the bits needed
/// for the largest replica index of the batch's table (0 with one replica).
enum MoveRun {
    /// The encoder's longest run, so that the field widths follow counters as they grow (a new
    /// record costs about 8 bytes). Decoders accept any length up to the batch's operation count.
    static let maxLength = 1024

    /// The tags of a packed field.
    enum Tag: UInt8 {
        /// The operation's own replica; a counter follows.
        case sameReplica = 0
        /// The field default: nil for an origin; reserved for an item (an item has no default).
        case fieldDefault = 1
        /// The previous operation's last id.
        case previous = 2
        /// A replica index and a counter follow.
        case explicit = 3
    }

    /// How a reference is written: its tag, and the replica index and counter that follow it.
    struct Field {
        var tag: Tag
        var replicaIndex = 0
        var counter: UInt64 = 0

        /// Whether a counter follows the tag.
        var hasCounter: Bool { tag == .sameReplica || tag == .explicit }
    }

    /// Bits needed for `v` (at least 1).
    @inline(__always) static func width(of v: UInt64) -> Int { max(1, UInt64.bitWidth - v.leadingZeroBitCount) }

    /// Bits of a replica index in a batch of `count` replicas (0 for one).
    @inline(__always) static func replicaBits(_ count: Int) -> Int {
        count <= 1 ? 0 : Int.bitWidth - (count - 1).leadingZeroBitCount
    }
}

extension ListOperation {
    /// Whether `next` can follow `op` in a move run: both move one item in the same section, and
    /// `next` is by the same replica, with the next counter and `deps == {op.id}`.
    static func continuesMoveRun(_ op: ListOperation, _ next: ListOperation) -> Bool {
        guard case .moveItems(let items, let s, _) = op.kind, items.count == 1,
              case .moveItems(let items2, let s2, _) = next.kind, items2.count == 1
        else { return false }
        return next.id.replica == op.id.replica && next.id.counter == op.id.counter &+ 1
            && next.deps.isOnly(op.id) && s2 == s
    }
}

// MARK: - Encoder

extension BatchEncoder {
    /// How many operations from `ops[i]` a move run would hold (at most ``MoveRun/maxLength``;
    /// 1 when `ops[i]` does not start one).
    ///
    /// - Complexity: O(the run's length).
    func moveRunLength(at i: Int) -> Int {
        var n = 1
        while n < MoveRun.maxLength, i + n < ops.count, ListOperation.continuesMoveRun(ops[i + n - 1], ops[i + n]) { n += 1 }
        return n
    }

    /// Writes `run` (at least two operations that continue each other, ``ListOperation/continuesMoveRun(_:_:)``)
    /// as one move-run record.
    ///
    /// - Complexity: O(n) for n operations.
    mutating func moveRun(_ run: ArraySlice<ListOperation>) {
        guard let first = run.first, case .moveItems(_, let section, _) = first.kind else { return }
        // First pass: the widest counter of each field class.
        var originMax: UInt64 = 1, itemMax: UInt64 = 1
        var previous = context.previousLast
        for op in run {
            guard case .moveItems(let items, _, let o) = op.kind else { continue }
            let a = field(o.after?.opID, op, previous), b = field(o.before?.opID, op, previous)
            let item = field(items[0].opID, op, previous)
            if a.hasCounter { originMax = max(originMax, a.counter) }
            if b.hasCounter { originMax = max(originMax, b.counter) }
            if item.hasCounter { itemMax = max(itemMax, item.counter) }
            previous = op.lastID
        }
        let originWidth = MoveRun.width(of: originMax), itemWidth = MoveRun.width(of: itemMax)
        let replicaBits = MoveRun.replicaBits(replicaIndex.count)

        header(first, .moveItemRun)
        sectionRef(section, first)
        out.count(run.count)
        out.byte(UInt8(originWidth))
        out.byte(UInt8(itemWidth))
        var bits = BitWriter()
        previous = context.previousLast
        for op in run {
            guard case .moveItems(let items, _, let o) = op.kind else { continue }
            write(field(o.after?.opID, op, previous), width: originWidth, replicaBits: replicaBits, to: &bits)
            write(field(o.before?.opID, op, previous), width: originWidth, replicaBits: replicaBits, to: &bits)
            write(field(items[0].opID, op, previous), width: itemWidth, replicaBits: replicaBits, to: &bits)
            previous = op.lastID
        }
        let packed = bits.finish()
        out.count(packed.count)
        out.bytes.append(contentsOf: packed)
        for op in run { context.advance(past: op) }
        version = max(version, RecordKind.moveItemRun.version)
    }

    /// How `id` is written in a field of `op`, `previous` being the last id of the operation before.
    private func field(_ id: OpID?, _ op: ListOperation, _ previous: OpID) -> MoveRun.Field {
        guard let id else { return .init(tag: .fieldDefault) }
        if id == previous, id != .none { return .init(tag: .previous) }
        if id.replica == op.id.replica { return .init(tag: .sameReplica, counter: id.counter) }
        return .init(tag: .explicit, replicaIndex: replicaIndex.index(of: id.replica)!, counter: id.counter)
    }

    private func write(_ f: MoveRun.Field, width: Int, replicaBits: Int, to bits: inout BitWriter) {
        switch f.tag {
        case .sameReplica: bits.write(0b0, width: 1)
        case .fieldDefault: bits.write(0b01, width: 2)
        case .previous: bits.write(0b011, width: 3)
        case .explicit: bits.write(0b111, width: 3)
        }
        if f.tag == .explicit { bits.write(UInt64(f.replicaIndex), width: replicaBits) }
        if f.hasCounter { bits.write(f.counter, width: width) }
    }
}

// MARK: - Decoder

extension BatchDecoder {
    /// Reads the rest of a move-run record whose first operation has `id` and `deps`, with `left`
    /// operations left in the batch.
    ///
    /// - Complexity: O(n) for n operations.
    mutating func moveRun(id: OpID, deps: Frontier, left: Int) throws(WireError) {
        let section = try sectionRef(id)
        let countAt = reader.offset
        let n = try runCount(left: left, bytesEach: 0, id: id)
        let originWidth = try fieldWidth(), itemWidth = try fieldWidth()
        let length = Int(clamping: try reader.varint())
        // Every operation takes at least 6 bits (three fields of at least 2 bits each).
        guard length <= reader.remaining else { throw .truncated(offset: reader.offset + reader.remaining) }
        guard n <= length * 8 / 6 else { throw .countTooLarge(n, offset: countAt) }
        var bits = try reader.bitArea(length: length)
        let replicaBits = MoveRun.replicaBits(replicas.count)
        for k in 0..<n {
            let opID = id.advanced(by: k)
            let previous = context.previousLast
            let after = try field(&bits, opID, width: originWidth, replicaBits: replicaBits, isItem: false)
            let before = try field(&bits, opID, width: originWidth, replicaBits: replicaBits, isItem: false)
            // An item never reads as nil: tag 1 is refused for it.
            let item = try field(&bits, opID, width: itemWidth, replicaBits: replicaBits, isItem: true) ?? .none
            append(ListOperation(
                id: opID, deps: k == 0 ? deps : Frontier(only: previous),
                kind: .moveItems([ItemID(item)], section: section,
                                 .init(after: after.map(SlotID.init), before: before.map(SlotID.init)))))
        }
        try bits.finish()
    }

    /// A field width byte: 1...63 (a counter needs at most 63 bits).
    private mutating func fieldWidth() throws(WireError) -> Int {
        let at = reader.offset
        let w = try reader.byte()
        guard w >= 1, w <= 63 else { throw .invalidValue("field width \(w) not in 1...63", offset: at) }
        return Int(w)
    }

    /// One packed reference of operation `op`; nil for an origin's default.
    private mutating func field(_ bits: inout BitReader, _ op: OpID, width: Int, replicaBits: Int,
                                isItem: Bool) throws(WireError) -> OpID? {
        let at = bits.byteOffset
        var tag: UInt8 = 0
        while tag < 3, try bits.bit() { tag += 1 }
        let replica: ReplicaID
        switch MoveRun.Tag(rawValue: tag)! {
        case .sameReplica:
            replica = op.replica
        case .fieldDefault:
            guard !isItem else { throw .invalidTag(tag, offset: at) }
            return nil
        case .previous:
            guard context.previousLast != .none else {
                throw .invalidValue("reference to a previous operation in the first", offset: at)
            }
            return context.previousLast
        case .explicit:
            let index = try bits.read(replicaBits)
            guard index < UInt64(replicas.count) else {
                throw .invalidValue("replica index \(index) not in the table of \(replicas.count)", offset: at)
            }
            replica = replicas[Int(index)]
        }
        let counter = try bits.read(width)
        guard counter >= 1, counter <= OpID.maxCounter else {
            throw .invalidValue("referenced counter \(counter) not in 1...\(OpID.maxCounter)", offset: at)
        }
        return OpID(counter: counter, replica: replica)
    }
}
