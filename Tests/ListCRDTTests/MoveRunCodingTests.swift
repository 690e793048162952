import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Move runs (Docs/WireFormat.md §2.6): exact round trips of any batch of moves, the version the
/// encoder picks, compactness, and a typed error for every malformed packed area.
@Suite(.cpuHeavy) struct MoveRunCodingTests {
    // MARK: Helpers

    static func id(_ counter: UInt64, _ replica: UInt64) -> OpID { OpID(counter: counter, replica: ReplicaID(replica)) }

    /// The worked move-run example of Docs/WireFormat.md §6 and its exact bytes.
    static func workedExample() throws -> (ops: [ListOperation], bytes: [UInt8]) {
        var doc = ListDocument(replica: ReplicaID(7))
        try doc.insertSection(at: 0, value: Data("L"))
        for (k, c) in ["a", "b", "c"].enumerated() { try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data(c)) }
        _ = try doc.moveItem(from: IndexPath(item: 2, section: 0), to: IndexPath(item: 0, section: 0))   // c to the top
        _ = try doc.moveItem(from: IndexPath(item: 1, section: 0), to: IndexPath(item: 2, section: 0))   // a to the end
        let bytes: [UInt8] = [
            0x02, 0x01, 0x07, 0x06,                          // version 2; 1 replica: 7; 6 operations
            0x61, 0x00, 0x00, 0x00, 0x01, 0x4C,              // insertSection 1@7 "L"
            0xF9, 0x00, 0x00, 0x00, 0x03, 0x61, 0x62, 0x63,  // insert run 2@7...4@7 "a" "b" "c"
            0x7B, 0x00, 0x02, 0x03, 0x02, 0x03,              // move run 5@7, 6@7: section 1@7, widths 3 and 2, 3 bytes
            0xD1, 0x0C, 0x09,                                // packed fields
        ]
        return (doc.operations, bytes)
    }

    /// A batch of one move run by replica 7 (first operation 1@7, deps empty, section 1@7) with the
    /// packed area `fields` writes; the replica table is `replicas` (7 first).
    static func runBatch(count n: UInt8, total: UInt8? = nil, originWidth: UInt8 = 4, itemWidth: UInt8 = 4,
                         replicas: [UInt8] = [7], version: UInt8 = 2, first: UInt8 = 0x6B, length: UInt8? = nil,
                         extra: [UInt8] = [], _ fields: (inout BitWriter) -> Void) -> [UInt8] {
        var w = BitWriter()
        fields(&w)
        let packed = w.finish() + extra
        return [version, UInt8(replicas.count)] + replicas + [total ?? n, first, 0x00, 0x03, 0x00,
                                                            n, originWidth, itemWidth, length ?? UInt8(packed.count)] + packed
    }

    /// Where the packed area of ``runBatch`` starts (with one replica).
    static let packedAt = 12

    /// Random batches of single-item moves that form runs and break them in every way.
    static func randomMoves(_ rng: inout SplitMix64, count: Int) -> [ListOperation] {
        let replicas: [UInt64] = [1, 2, 300, UInt64.max]
        func counter() -> UInt64 {
            switch rng.below(10) {
            case 0: OpID.maxCounter - UInt64(rng.below(3))
            case 1: 1 + rng.next() % (1 << 40)
            default: UInt64(1 + rng.below(5_000))
            }
        }
        func anyID(_ own: OpID) -> OpID {
            OpID(counter: counter(), replica: rng.chance(60) ? own.replica : ReplicaID(replicas[rng.below(replicas.count)]))
        }
        var ops: [ListOperation] = []
        while ops.count < count {
            let prev = ops.last
            var id = OpID(counter: UInt64(1 + rng.below(3_000)), replica: ReplicaID(replicas[rng.below(replicas.count)]))
            var deps = Frontier((0..<rng.below(3)).map { _ in anyID(id) })
            var section = SectionID(anyID(id))
            if let prev, rng.chance(85), prev.lastID.counter < OpID.maxCounter - 10 {
                // Continue the previous operation, then maybe break the run in one way.
                id = prev.lastID.advanced(by: 1)
                deps = Frontier(only: prev.lastID)
                if case .moveItems(_, let s, _) = prev.kind { section = s }
                switch rng.below(12) {
                case 0: id.replica = ReplicaID(replicas[rng.below(replicas.count)])
                case 1: id.counter += UInt64(1 + rng.below(3))
                case 2: deps.insert(anyID(id))
                case 3: section = SectionID(anyID(id))
                default: break
                }
            }
            func ref() -> OpID {
                rng.chance(10) ? (ops.last?.lastID ?? anyID(id)) : anyID(id)
            }
            func origin() -> SlotID? { rng.chance(25) ? nil : SlotID(ref()) }
            let kind: ListOperation.Kind
            switch rng.below(20) {
            case 0: kind = .moveItems(ItemIDList((0..<rng.below(3)).map { _ in ItemID(ref()) }), section: section, .init(after: origin(), before: origin()))
            case 1: kind = .insertItem(section: section, .init(after: origin(), before: origin()), value: Data([1]))
            case 2: kind = .deleteItem(ItemID(ref()), seen: SlotID(ref()))
            default: kind = .moveItems([ItemID(ref())], section: section, .init(after: origin(), before: origin()))
            }
            if id.counter > OpID.maxCounter - 3 { id.counter = 9 }
            ops.append(ListOperation(id: id, deps: deps, kind: kind))
        }
        return ops
    }

    /// `n` random moves of a list of `items` items made by replica 1, after building it.
    static func localMoves(items: Int, moves n: Int, seed: UInt64) throws -> ListDocument {
        var rng = SplitMix64(seed: seed)
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        for i in 0..<items { try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data([UInt8(i & 0xff)])) }
        for _ in 0..<n {
            _ = try doc.moveItem(from: IndexPath(item: rng.below(items), section: 0), to: IndexPath(item: rng.below(items), section: 0))
        }
        return doc
    }

    func expectInvalidValue(_ bytes: [UInt8], _ message: String, offset: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: WireError.invalidValue(message, offset: offset), sourceLocation: sourceLocation) {
            try ListOperation.decode(bytes)
        }
    }

    // MARK: Round trips

    @Test("the move-run example of Docs/WireFormat.md encodes to exactly the bytes shown there")
    func workedExampleBytes() throws {
        let (ops, bytes) = try Self.workedExample()
        #expect(ListOperation.encode(ops) == bytes)
        #expect(try ListOperation.decode(bytes) == ops)
    }

    @Test("a hand-written run decodes to the operations its fields say")
    func handWrittenRun() throws {
        let bytes = Self.runBatch(count: 2) { w in
            w.none(); w.none(); w.same(1, 4)           // 1@7: after nil, before nil, item 1@7
            w.previous(); w.none(); w.same(3, 4)       // 2@7: after 1@7 (previous), before nil, item 3@7
        }
        let s = SectionID(Self.id(1, 7))
        #expect(try ListOperation.decode(bytes) == [
            ListOperation(id: Self.id(1, 7), deps: Frontier(), kind: .moveItems([ItemID(Self.id(1, 7))], section: s, .init(after: nil, before: nil))),
            ListOperation(id: Self.id(2, 7), deps: Frontier([Self.id(1, 7)]),
                          kind: .moveItems([ItemID(Self.id(3, 7))], section: s, .init(after: SlotID(Self.id(1, 7)), before: nil))),
        ])
    }

    @Test("3,000 random moves of 300 items: one record per 1,024 moves, under 5 bytes a move, exact round trip")
    func localMovesRoundTrip() throws {
        let doc = try Self.localMoves(items: 300, moves: 3_000, seed: 11)
        let moves = Array(doc.operations[301...])
        let bytes = ListOperation.encode(moves)
        #expect(bytes[0] == 2)
        #expect(bytes.count < 5 * moves.count)
        #expect(try ListOperation.decode(bytes) == moves)
        let whole = ListOperation.encode(doc.operations)
        let back = try ListOperation.decode(whole)
        #expect(back == doc.operations)
        var copy = ListDocument(replica: ReplicaID(2))
        #expect(copy.receive(back).refused.isEmpty)
        #expect(copy.encodedState() == doc.encodedState())
        print("move runs: \(moves.count) moves encode to \(bytes.count) bytes (\(String(format: "%.2f", Double(bytes.count) / Double(moves.count))) bytes/move)")
    }

    @Test("moves of another replica's items (escaped references) round-trip and apply")
    func otherReplicaItems() throws {
        let base = try Self.localMoves(items: 200, moves: 0, seed: 1)
        var b = ListDocument(replica: ReplicaID(2))
        #expect(b.receive(base.operations).refused.isEmpty)
        let fork = b.version
        var rng = SplitMix64(seed: 5)
        for _ in 0..<500 {
            _ = try b.moveItem(from: IndexPath(item: rng.below(200), section: 0), to: IndexPath(item: rng.below(200), section: 0))
        }
        let update = b.operations(since: fork)
        let bytes = ListOperation.encode(update)
        #expect(bytes[0] == 2)
        #expect(try ListOperation.decode(bytes) == update)
        var a = base
        #expect(a.receive(try ListOperation.decode(bytes)).refused.isEmpty)
        #expect(a.encodedState() == b.encodedState())
    }

    @Test("3,000 seeded random move batches (replicas, nil and previous origins, runs broken at random) round-trip exactly")
    func randomMoveBatchesRoundTrip() throws {
        var rng = SplitMix64(seed: 2_718)
        var runs = 0
        for k in 0..<3_000 {
            let ops = Self.randomMoves(&rng, count: 1 + rng.below(40))
            let bytes = ListOperation.encode(ops)
            if bytes[0] == 2 { runs += 1 }
            let back = try ListOperation.decode(bytes, maxValueSize: 16)
            #expect(back == ops)
            #expect(ListOperation.encode(back) == bytes)
            guard k % 100 == 0 else { continue }
            for n in 0..<bytes.count {
                #expect {
                    try ListOperation.decode(bytes[..<n])
                } throws: { error in
                    switch error as? WireError {
                    case .truncated, .countTooLarge: true
                    default: false
                    }
                }
            }
        }
        #expect(runs > 2_000)
    }

    @Test("10,000 mutated move-run batches never crash the decoder; whatever decodes re-encodes")
    func moveRunGarbageFuzz() throws {
        var rng = SplitMix64(seed: 31)
        var valid = [try Self.workedExample().bytes]
        for _ in 0..<8 { valid.append(ListOperation.encode(Self.randomMoves(&rng, count: 2 + rng.below(30)))) }
        var decoded = 0
        for k in 0..<10_000 {
            var bytes = valid[k % valid.count]
            switch rng.below(4) {
            case 0, 1: for _ in 0..<(1 + rng.below(3)) { bytes[rng.below(bytes.count)] ^= UInt8(1 << rng.below(8)) }
            case 2: bytes[rng.below(bytes.count)] = UInt8(truncatingIfNeeded: rng.next())
            default:
                if rng.chance(50) { bytes.remove(at: rng.below(bytes.count)) }
                else { bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(bytes.count + 1)) }
            }
            if let ops = try? ListOperation.decode(bytes) {
                decoded += 1
                #expect(try ListOperation.decode(ListOperation.encode(ops)) == ops)
            }
        }
        print("move-run garbage fuzz: \(decoded) of 10000 mutated inputs still decoded")
    }

    // MARK: Versions

    @Test("the encoder writes version 2 only for batches with a move run; version 1 bytes are unchanged")
    func versionChoice() throws {
        let one = ListOperation(id: Self.id(5, 1), deps: Frontier(),
                                kind: .moveItems([ItemID(Self.id(2, 1))], section: SectionID(Self.id(1, 1)), .init(after: nil, before: nil)))
        var two = one
        two.id = Self.id(6, 1)
        two.deps = Frontier([one.id])
        #expect(ListOperation.encode([one]).first == 1)
        #expect(ListOperation.encode([one, two]).first == 2)
        #expect(ListOperation.encode([ListOperation]()) == [1, 0, 0])
        // Another section breaks the run: two moveItems records, version 1.
        two.kind = .moveItems([ItemID(Self.id(2, 1))], section: SectionID(Self.id(9, 1)), .init(after: nil, before: nil))
        #expect(ListOperation.encode([one, two]).first == 1)
        #expect(try ListOperation.decode(ListOperation.encode([one, two])) == [one, two])
    }

    @Test("kind 11 is refused in a version-1 batch, with the variant bit, and kinds 12-15 in version 2 (12 and 13 are version 3, 14 version 6)")
    func kindsByVersion() {
        let valid = Self.runBatch(count: 2) { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) }
        #expect(throws: Never.self) { try ListOperation.decode(valid) }
        #expect(throws: WireError.invalidTag(0x6B, offset: 4)) { try ListOperation.decode([1] + valid.dropFirst()) }
        #expect(throws: WireError.invalidTag(0xEB, offset: 4)) {
            try ListOperation.decode(Self.runBatch(count: 2, first: 0xEB) { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) })
        }
        for kind: UInt8 in [0x6C, 0x6D, 0x6E, 0x6F, 0x60] {
            #expect(throws: WireError.invalidTag(kind, offset: 4)) { try ListOperation.decode([2, 1, 7, 1, kind]) }
        }
        for kind: UInt8 in [0x6E, 0x6F, 0x60] {
            #expect(throws: WireError.invalidTag(kind, offset: 4)) { try ListOperation.decode([3, 1, 7, 1, kind]) }
            #expect(throws: WireError.invalidTag(kind, offset: 4)) { try ListOperation.decode([4, 1, 7, 1, kind]) }
            #expect(throws: WireError.invalidTag(kind, offset: 4)) { try ListOperation.decode([5, 1, 7, 1, kind]) }
        }
        // Version 6 gives kind 14 (a text run) a meaning; 15 and 0 stay refused.
        for kind: UInt8 in [0x6F, 0x60] {
            #expect(throws: WireError.invalidTag(kind, offset: 4)) { try ListOperation.decode([6, 1, 7, 1, kind]) }
        }
        let newer = ListOperation.wireFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(newer)) { try ListOperation.decode([newer, 0, 0]) }
        #expect(throws: WireError.unsupportedVersion(0)) { try ListOperation.decode([0, 0, 0]) }
    }

    // MARK: Bad input

    @Test("a packed area longer than the input, or too short for its fields, is truncated")
    func moveRunTruncatedArea() {
        let long = Self.runBatch(count: 2, length: 10) { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) }
        #expect(throws: WireError.truncated(offset: long.count)) { try ListOperation.decode(long) }
        // 13 bits in 2 bytes: the second operation's item reads tag 0 from the padding, then
        // needs 4 bits where 2 are left.
        let short = Self.runBatch(count: 2) { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none() }
        #expect(throws: WireError.truncated(offset: short.count)) { try ListOperation.decode(short) }
        // The second operation's item cut inside its counter.
        let cut = Self.runBatch(count: 2, itemWidth: 12) { w in w.none(); w.none(); w.same(1, 12); w.none(); w.none(); w.write(0, width: 1) }
        #expect(throws: WireError.truncated(offset: cut.count)) { try ListOperation.decode(cut) }
    }

    @Test("bits left over in a packed area: a whole byte, or padding that is not zero")
    func moveRunLeftoverBits() {
        let fields: (inout BitWriter) -> Void = { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) }
        let extra = Self.runBatch(count: 2, extra: [0x00], fields)
        expectInvalidValue(extra, "1 bytes left over in a packed area", offset: extra.count - 1)
        // 18 bits used: bit 2 of the third byte set.
        let padded = Self.runBatch(count: 2) { w in fields(&w); w.write(1, width: 1) }
        expectInvalidValue(padded, "padding bits not zero", offset: Self.packedAt + 2)
    }

    @Test("a field width of 0 or over 63 is refused")
    func moveRunWidthOutOfRange() {
        let fields: (inout BitWriter) -> Void = { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) }
        for bad: UInt8 in [0, 64, 65, 255] {
            expectInvalidValue(Self.runBatch(count: 2, originWidth: bad, fields), "field width \(bad) not in 1...63", offset: 9)
            expectInvalidValue(Self.runBatch(count: 2, itemWidth: bad, fields), "field width \(bad) not in 1...63", offset: 10)
        }
        // 63 is the widest: a counter up to OpID.maxCounter.
        let wide = Self.runBatch(count: 2, itemWidth: 63) { w in
            w.none(); w.none(); w.same(OpID.maxCounter, 63); w.none(); w.none(); w.same(1, 63)
        }
        #expect(throws: Never.self) { try ListOperation.decode(wide) }
    }

    @Test("a packed counter of 0 or over OpID.maxCounter is refused, in every field and after an escape")
    func moveRunCounterOutOfRange() {
        let maxText = "not in 1...\(OpID.maxCounter)"
        expectInvalidValue(Self.runBatch(count: 2) { w in w.same(0, 4); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) },
                           "referenced counter 0 \(maxText)", offset: Self.packedAt)
        expectInvalidValue(Self.runBatch(count: 2) { w in w.none(); w.none(); w.same(0, 4); w.none(); w.none(); w.same(1, 4) },
                           "referenced counter 0 \(maxText)", offset: Self.packedAt)
        let over = OpID.maxCounter + 1
        expectInvalidValue(Self.runBatch(count: 2, originWidth: 63) { w in
            w.none(); w.same(over, 63); w.same(1, 4); w.none(); w.none(); w.same(1, 4)
        }, "referenced counter \(over) \(maxText)", offset: Self.packedAt)
        expectInvalidValue(Self.runBatch(count: 2, itemWidth: 63) { w in
            w.none(); w.none(); w.other(0, 0, over, 63); w.none(); w.none(); w.same(1, 63)
        }, "referenced counter \(over) \(maxText)", offset: Self.packedAt)
    }

    @Test("an escaped replica index outside the table is refused")
    func moveRunReplicaIndexOutOfRange() throws {
        // Three replicas: indexes take 2 bits; 3 is not in the table.
        let good = Self.runBatch(count: 2, replicas: [7, 8, 9]) { w in
            w.none(); w.other(2, 2, 5, 4); w.same(1, 4); w.none(); w.none(); w.same(1, 4)
        }
        let ops = try ListOperation.decode(good)
        guard case .moveItems(_, _, let o) = ops[0].kind else { Issue.record("not a move"); return }
        #expect(o.before == SlotID(Self.id(5, 9)))
        expectInvalidValue(Self.runBatch(count: 2, replicas: [7, 8, 9]) { w in
            w.none(); w.other(3, 2, 5, 4); w.same(1, 4); w.none(); w.none(); w.same(1, 4)
        }, "replica index 3 not in the table of 3", offset: Self.packedAt + 2)
    }

    @Test("a run count of 0 or 1, over the operations left, over the caller's limit, or over what the area holds is refused")
    func moveRunCountOutOfRange() {
        let fields: (inout BitWriter) -> Void = { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) }
        expectInvalidValue(Self.runBatch(count: 0, total: 2, fields), "a run of 0 operations", offset: 8)
        expectInvalidValue(Self.runBatch(count: 1, total: 2, fields), "a run of 1 operations", offset: 8)
        #expect(throws: WireError.countTooLarge(3, offset: 8)) { try ListOperation.decode(Self.runBatch(count: 3, total: 2, fields)) }
        #expect(throws: WireError.countTooLarge(2, offset: 3)) {
            try ListOperation.decode(Self.runBatch(count: 2, fields), maxValueSize: 16, maxOperations: 1)
        }
        // 100 operations need at least 75 bytes; the area has 3.
        #expect(throws: WireError.countTooLarge(100, offset: 8)) { try ListOperation.decode(Self.runBatch(count: 100, fields)) }
    }

    @Test("tag 1 (no default) for an item is a reserved tag")
    func moveRunReservedTag() {
        #expect(throws: WireError.invalidTag(1, offset: Self.packedAt)) {
            try ListOperation.decode(Self.runBatch(count: 2) { w in w.none(); w.none(); w.none(); w.none(); w.none(); w.same(1, 4) })
        }
        // The second operation's item: bits 9 + 4.
        #expect(throws: WireError.invalidTag(1, offset: Self.packedAt + 1)) {
            try ListOperation.decode(Self.runBatch(count: 2) { w in w.none(); w.none(); w.same(1, 4); w.none(); w.none(); w.none() })
        }
    }

    @Test("tag 2 (previous) in the first operation of a batch is refused")
    func moveRunPreviousInFirst() {
        expectInvalidValue(Self.runBatch(count: 2) { w in w.previous(); w.none(); w.same(1, 4); w.none(); w.none(); w.same(1, 4) },
                           "reference to a previous operation in the first", offset: Self.packedAt)
    }
}

extension BitWriter {
    /// Tag 0 and a counter: the operation's own replica.
    mutating func same(_ counter: UInt64, _ width: Int) { write(0, width: 1); write(counter, width: width) }
    /// Tag 1: the field default (nil origin).
    mutating func none() { write(0b01, width: 2) }
    /// Tag 2: the previous operation's last id.
    mutating func previous() { write(0b011, width: 3) }
    /// Tag 3, a replica index and a counter.
    mutating func other(_ index: UInt64, _ indexBits: Int, _ counter: UInt64, _ width: Int) {
        write(0b111, width: 3)
        write(index, width: indexBits)
        write(counter, width: width)
    }
}
