import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The operation batch encoding (Docs/WireFormat.md): exact round trips, compactness of runs,
/// and typed errors (never a crash) for truncated, oversized and garbage input.
@Suite(.cpuHeavy) struct OperationCodingTests {
    // MARK: Helpers

    static func id(_ counter: UInt64, _ replica: UInt64) -> OpID { OpID(counter: counter, replica: ReplicaID(replica)) }
    static func slot(_ counter: UInt64, _ replica: UInt64) -> SlotID { SlotID(id(counter, replica)) }
    static func item(_ counter: UInt64, _ replica: UInt64) -> ItemID { ItemID(id(counter, replica)) }
    static func section(_ counter: UInt64, _ replica: UInt64) -> SectionID { SectionID(id(counter, replica)) }

    /// Encodes, decodes, and checks that the result is exactly the input.
    func expectRoundTrip(_ ops: [ListOperation], sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = ListOperation.encode(ops)
        do {
            let back = try ListOperation.decode(bytes, maxValueSize: Int.max, maxOperations: Int.max)
            #expect(back == ops, sourceLocation: sourceLocation)
        } catch {
            Issue.record("decode failed: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The history of a few replicas editing at random and merging now and then, in causal order.
    static func randomHistory(seed: UInt64, replicas: Int = 3, edits: Int = 150) -> (ops: [ListOperation], doc: ListDocument) {
        var rng = SplitMix64(seed: seed &* 0x2545_F491 &+ 3)
        var docs = (0..<replicas).map { ListDocument(replica: ReplicaID(UInt64($0) * 1_000_003 + 5)) }
        var counter = 0
        for _ in 0..<edits {
            let r = rng.below(replicas)
            if rng.chance(15) {
                let other = docs[rng.below(replicas)]
                docs[r].receive(other.operations(since: docs[r].version))
            }
            let edit = RandomEdit.random(for: docs[r], rng: &rng) { counter += 1; return "v\(counter)" }
            _ = try? edit.apply(to: &docs[r])
        }
        for r in 1..<replicas { docs[0].receive(docs[r].operations(since: docs[0].version)) }
        return (docs[0].operations, docs[0])
    }

    /// Random operations with arbitrary (valid) fields, often continuing the previous one so that
    /// runs form and break in every way.
    static func randomOperations(_ rng: inout SplitMix64, count: Int) -> [ListOperation] {
        let replicas: [UInt64] = [0, 1, 2, 300, UInt64.max, 1 << 40]
        func anyID() -> OpID {
            let counter: UInt64 = rng.chance(10) ? OpID.maxCounter - UInt64(rng.below(4)) : UInt64(1 + rng.below(200))
            return OpID(counter: counter, replica: ReplicaID(replicas[rng.below(replicas.count)]))
        }
        func value() -> Data {
            let n = rng.chance(70) ? 1 : rng.below(5)
            return Data((0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        func origins() -> ListOperation.Origins {
            .init(after: rng.chance(70) ? SlotID(anyID()) : nil, before: rng.chance(50) ? SlotID(anyID()) : nil)
        }
        func deps() -> Frontier { Frontier((0..<rng.below(4)).map { _ in anyID() }) }
        var ops: [ListOperation] = []
        while ops.count < count {
            if let prev = ops.last, rng.chance(50), prev.lastID.counter < OpID.maxCounter {
                var next = prev
                next.id = prev.id.advanced(by: 1)
                next.deps = rng.chance(90) ? Frontier([prev.id]) : deps()
                switch prev.kind {
                case .insertItem(let s, let o, _):
                    let after = rng.chance(90) ? SlotID(prev.id) : o.after
                    let before = rng.chance(90) ? o.before : nil
                    next.kind = .insertItem(section: rng.chance(95) ? s : SectionID(anyID()),
                                            .init(after: after, before: before), value: value())
                    ops.append(next)
                    continue
                case .deleteItem(let i, _):
                    let step: UInt64 = rng.chance(50) ? 1 : UInt64.max
                    let c = i.opID.counter &+ step
                    if c >= 1, c <= OpID.maxCounter {
                        let item = OpID(counter: c, replica: i.opID.replica)
                        next.kind = .deleteItem(ItemID(item), seen: rng.chance(90) ? SlotID(item) : SlotID(anyID()))
                        ops.append(next)
                        continue
                    }
                default: break
                }
            }
            var id = anyID()
            let kind: ListOperation.Kind
            switch rng.below(8) {
            case 0: kind = .insertSection(origins(), value: value())
            case 1: kind = .insertItem(section: SectionID(anyID()), origins(), value: value())
            case 2: kind = .moveSection(SectionID(anyID()), origins())
            case 3:
                let items = (0..<rng.below(5)).map { _ in ItemID(anyID()) }
                if id.counter > OpID.maxCounter - 5 { id.counter = 7 }
                kind = .moveItems(ItemIDList(items), section: SectionID(anyID()), origins())
            case 4:
                let item = anyID()
                kind = .deleteItem(ItemID(item), seen: rng.chance(60) ? SlotID(item) : SlotID(anyID()))
            case 5:
                let items = (0..<rng.below(4)).map { _ in
                    let i = anyID()
                    return ListOperation.SeenItem(item: ItemID(i), seen: rng.chance(60) ? SlotID(i) : SlotID(anyID()))
                }
                let s = anyID()
                kind = .deleteSection(SectionID(s), seen: rng.chance(60) ? SlotID(s) : SlotID(anyID()), items: items)
            case 6: kind = .setItemValue(ItemID(anyID()), value())
            default: kind = .setSectionValue(SectionID(anyID()), value())
            }
            ops.append(ListOperation(id: id, deps: rng.chance(50) ? deps() : Frontier(ops.last.map { [$0.lastID] } ?? []), kind: kind))
        }
        return ops
    }

    /// A small batch and its exact bytes: the worked example of Docs/WireFormat.md.
    static func workedExample() throws -> (ops: [ListOperation], bytes: [UInt8]) {
        var doc = ListDocument(replica: ReplicaID(7))
        var ops: [ListOperation] = []
        ops.append(try doc.insertSection(at: 0, value: Data("L")))
        ops.append(try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("h")))
        ops.append(try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("i")))
        ops.append(try doc.deleteItem(at: IndexPath(item: 1, section: 0)))
        let bytes: [UInt8] = [
            0x01, 0x01, 0x07, 0x04,                 // version 1; 1 replica: 7; 4 operations
            0x61, 0x00, 0x00, 0x00, 0x01, 0x4C,     // insertSection 1@7: origins nil, nil; value "L"
            0xF9, 0x00, 0x00, 0x00, 0x02, 0x68, 0x69, // insert run 2@7, 3@7: section 1@7; "h", "i"
            0x75, 0x01, 0x00,                       // deleteItem 4@7: item 3@7, seen itself
        ]
        return (ops, bytes)
    }

    // MARK: Round trips

    @Test("the worked example of Docs/WireFormat.md encodes to exactly the bytes shown there")
    func workedExampleBytes() throws {
        let (ops, bytes) = try Self.workedExample()
        #expect(ListOperation.encode(ops) == bytes)
        #expect(try ListOperation.decode(bytes) == ops)
    }

    @Test("an empty batch is three bytes and decodes to nothing")
    func emptyBatch() throws {
        let bytes = ListOperation.encode([ListOperation]())
        #expect(bytes == [1, 0, 0])   // version 1: nothing in it needs a newer one
        #expect(try ListOperation.decode(bytes).isEmpty)
    }

    @Test("every kind of operation round-trips, with nil and set origins")
    func everyKind() {
        let o1 = ListOperation.Origins(after: nil, before: nil)
        let o2 = ListOperation.Origins(after: Self.slot(3, 1), before: Self.slot(2, 2))
        let o3 = ListOperation.Origins(after: nil, before: Self.slot(9, 4))
        let kinds: [ListOperation.Kind] = [
            .insertSection(o1, value: Data("A")),
            .insertSection(o2, value: Data()),
            .insertItem(section: Self.section(1, 1), o1, value: Data("x")),
            .insertItem(section: Self.section(1, 1), o3, value: Data("longer value")),
            .moveSection(Self.section(1, 1), o2),
            .moveItems([Self.item(4, 1)], section: Self.section(1, 2), o3),
            .moveItems([Self.item(4, 1), Self.item(5, 2), Self.item(6, 1)], section: Self.section(1, 1), o2),
            .deleteItem(Self.item(4, 1), seen: Self.slot(4, 1)),
            .deleteItem(Self.item(4, 1), seen: Self.slot(8, 2)),
            .deleteSection(Self.section(1, 1), seen: Self.slot(1, 1), items: []),
            .deleteSection(Self.section(1, 1), seen: Self.slot(7, 3), items: [
                .init(item: Self.item(4, 1), seen: Self.slot(4, 1)),
                .init(item: Self.item(5, 2), seen: Self.slot(11, 3)),
            ]),
            .setItemValue(Self.item(4, 1), Data("new")),
            .setItemValue(Self.item(4, 1), Data()),
            .setSectionValue(Self.section(1, 2), Data("S")),
        ]
        // Alone, each as the first operation of a batch.
        for (k, kind) in kinds.enumerated() {
            expectRoundTrip([ListOperation(id: Self.id(20 + UInt64(k), 1), deps: Frontier([Self.id(3, 1)]), kind: kind)])
        }
        // All together, chained as a local history would be.
        var ops: [ListOperation] = []
        var counter: UInt64 = 20
        for kind in kinds {
            let op = ListOperation(id: Self.id(counter, 1), deps: Frontier(ops.last.map { [$0.lastID] } ?? []), kind: kind)
            ops.append(op)
            counter = op.lastID.counter + 1
        }
        expectRoundTrip(ops)
        expectRoundTrip(ops.reversed())
    }

    @Test("edge values round-trip: empty and large values, extreme replicas and counters, wide frontiers")
    func edgeValues() {
        let big = Data((0..<ListDocument.defaultMaxValueSize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let max = OpID.maxCounter
        let ops = [
            ListOperation(id: Self.id(1, 0), deps: Frontier(), kind: .insertSection(.init(after: nil, before: nil), value: Data())),
            ListOperation(id: Self.id(2, UInt64.max), deps: Frontier([Self.id(1, 0)]),
                          kind: .insertItem(section: Self.section(1, 0), .init(after: nil, before: nil), value: big)),
            ListOperation(id: Self.id(max, 5), deps: Frontier([Self.id(1, 0), Self.id(2, UInt64.max), Self.id(max - 1, 9), Self.id(7, 3)]),
                          kind: .setItemValue(Self.item(2, UInt64.max), Data())),
            ListOperation(id: Self.id(max - 2, 5), deps: Frontier(),
                          kind: .moveItems([Self.item(max, 1), Self.item(1, 1), Self.item(2, UInt64.max)],
                                           section: Self.section(max, 0), .init(after: Self.slot(max, 7), before: Self.slot(1, 7)))),
            ListOperation(id: Self.id(1, 5), deps: Frontier([Self.id(max, 5)]),
                          kind: .deleteItem(Self.item(max, 5), seen: Self.slot(1, 0))),
        ]
        expectRoundTrip(ops)
        #expect(ListOperation.encode(ops).count < big.count + 150)
    }

    @Test("a batch naming 300 replicas (two-byte replica indexes) round-trips")
    func manyReplicas() {
        var ops: [ListOperation] = []
        for r in 0..<300 as Range<UInt64> {
            let id = Self.id(r + 1, r * 7_919 + (r % 3 == 0 ? UInt64.max / 2 : 0))
            ops.append(ListOperation(id: id, deps: Frontier(ops.suffix(3).map(\.id)),
                                     kind: .insertItem(section: Self.section(1, 0), .init(after: ops.last.map { SlotID($0.id) }, before: nil),
                                                       value: Data([UInt8(r & 0xff)]))))
        }
        expectRoundTrip(ops)
        var rng = SplitMix64(seed: 1)
        expectRoundTrip(ops.shuffled(using: &rng))
    }

    @Test("2,000 batches of random operations round-trip exactly, and re-encode to the same bytes")
    func randomOperationsRoundTrip() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let ops = Self.randomOperations(&rng, count: 1 + rng.below(12))
            let bytes = ListOperation.encode(ops)
            let back = try ListOperation.decode(bytes, maxValueSize: 16)
            #expect(back == ops)
            #expect(ListOperation.encode(back) == bytes)
        }
    }

    @Test("seeded multi-replica histories round-trip whole, per replica, and in random slices and orders")
    func randomHistories() throws {
        for seed in 0..<40 as Range<UInt64> {
            let (ops, _) = Self.randomHistory(seed: seed, replicas: 2 + Int(seed % 4))
            expectRoundTrip(ops)
            var rng = SplitMix64(seed: seed)
            for _ in 0..<5 {
                let a = rng.below(ops.count), b = rng.below(ops.count)
                expectRoundTrip(Array(ops[min(a, b)...max(a, b)]))
            }
            expectRoundTrip(ops.shuffled(using: &rng))
            let byReplica = Dictionary(grouping: ops, by: \.id.replica)
            for (_, mine) in byReplica { expectRoundTrip(mine) }
        }
    }

    @Test("applying a decoded batch gives the same document as applying the originals")
    func decodedBatchApplies() throws {
        for seed in 100..<120 as Range<UInt64> {
            let (ops, doc) = Self.randomHistory(seed: seed, replicas: 3)
            let decoded = try ListOperation.decode(ListOperation.encode(ops))
            var a = ListDocument(replica: ReplicaID(99))
            var b = ListDocument(replica: ReplicaID(99))
            #expect(a.receive(ops).refused.isEmpty)
            #expect(b.receive(decoded).refused.isEmpty)
            #expect(a.encodedState() == b.encodedState())
            #expect(b.encodedState() == doc.encodedState())
            // In two batches, split anywhere.
            let cut = Int(seed) * 7 % ops.count
            var c = ListDocument(replica: ReplicaID(98))
            c.receive(try ListOperation.decode(ListOperation.encode(ops[..<cut])))
            c.receive(try ListOperation.decode(ListOperation.encode(ops[cut...])))
            #expect(c.encodedState() == doc.encodedState())
        }
    }

    // MARK: Compactness

    @Test("typing is one record per run: about one byte per character")
    func typingRun() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b"]])
        let start = doc.operationCount
        for (k, c) in "hello, world! this is a run of typing".utf8.enumerated() {
            try doc.insertItem(at: IndexPath(item: 1 + k, section: 0), value: Data([c]))
        }
        let typed = Array(doc.operations[start...])
        let bytes = ListOperation.encode(typed)
        #expect(bytes.count <= typed.count + 24)
        #expect(try ListOperation.decode(bytes) == typed)
        // Multi-byte values: a run too, one length byte more per value.
        let words = (0..<20).map { "w\($0)" }
        let before = doc.operationCount
        for (k, w) in words.enumerated() { try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data(w)) }
        let typedWords = Array(doc.operations[before...])
        let wordBytes = ListOperation.encode(typedWords)
        #expect(wordBytes.count <= typedWords.reduce(0) { $0 + 1 + ($1.valueSize) } + 16)
        #expect(try ListOperation.decode(wordBytes) == typedWords)
    }

    @Test("backspace and forward-delete runs are one record each")
    func deleteRuns() throws {
        var doc = try ListDocument.make(1, sections: [[]])
        for (k, c) in "abcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data([c]))
        }
        let start = doc.operationCount
        for k in (20..<30).reversed() { try doc.deleteItem(at: IndexPath(item: k, section: 0)) }   // backspace
        let backspace = Array(doc.operations[start...])
        #expect(ListOperation.encode(backspace).count <= 16)
        expectRoundTrip(backspace)
        let mid = doc.operationCount
        for _ in 0..<8 { try doc.deleteItem(at: IndexPath(item: 3, section: 0)) }               // forward delete
        let forward = Array(doc.operations[mid...])
        #expect(ListOperation.encode(forward).count <= 16)
        expectRoundTrip(forward)
        expectRoundTrip(Array(doc.operations[start...]))
        expectRoundTrip(doc.operations)
    }

    @Test("the automerge-paper history is compact (size printed)")
    func automergePaperSize() throws {
        let doc = try AutomergePaper.document()
        let ops = doc.operations
        let bytes = ListOperation.encode(ops)
        let values = ops.reduce(0) { $0 + $1.valueSize }
        print("automerge-paper: \(ops.count) operations (\(values) value bytes) encode to \(bytes.count) bytes (\(String(format: "%.2f", Double(bytes.count) / Double(ops.count))) bytes/op)")
        #expect(bytes.count < 2 * values)
        let back = try ListOperation.decode(bytes, maxValueSize: 2, maxOperations: ops.count)
        #expect(back == ops)
    }

    // MARK: Bad input

    @Test("every proper prefix of a valid encoding fails with a typed error")
    func truncation() throws {
        var samples = [try Self.workedExample().bytes, ListOperation.encode([ListOperation]())]
        samples.append(ListOperation.encode(Self.randomHistory(seed: 7, replicas: 3, edits: 60).ops))
        var rng = SplitMix64(seed: 9)
        samples.append(ListOperation.encode(Self.randomOperations(&rng, count: 40)))
        for bytes in samples {
            for n in 0..<bytes.count {
                do {
                    let ops = try ListOperation.decode(bytes[..<n])
                    Issue.record("prefix of \(n) of \(bytes.count) bytes decoded to \(ops.count) operations")
                } catch {
                    switch error {
                    case .truncated, .countTooLarge: break
                    default: Issue.record("prefix of \(n) bytes: unexpected \(error)")
                    }
                }
            }
        }
    }

    @Test("10,000 flipped, inserted, removed and random bytes never crash the decoder")
    func garbageFuzz() throws {
        var rng = SplitMix64(seed: 2024)
        let (history, _) = Self.randomHistory(seed: 3, replicas: 3, edits: 60)
        var valid = [try Self.workedExample().bytes, ListOperation.encode(history)]
        for _ in 0..<8 { valid.append(ListOperation.encode(Self.randomOperations(&rng, count: 1 + rng.below(20)))) }
        var decoded = 0
        for k in 0..<10_000 {
            var bytes = valid[k % valid.count]
            switch rng.below(5) {
            case 0, 1:
                for _ in 0..<(1 + rng.below(3)) { bytes[rng.below(bytes.count)] ^= UInt8(1 << rng.below(8)) }
            case 2:
                bytes[rng.below(bytes.count)] = UInt8(truncatingIfNeeded: rng.next())
            case 3:
                if rng.chance(50) { bytes.remove(at: rng.below(bytes.count)) }
                else { bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(bytes.count + 1)) }
            default:
                bytes = [ListOperation.wireFormatVersion] + (0..<rng.below(40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
            if let ops = try? ListOperation.decode(bytes) {
                decoded += 1
                // Whatever decodes is well-formed: it re-encodes and decodes to the same thing.
                #expect(try ListOperation.decode(ListOperation.encode(ops)) == ops)
            }
        }
        print("garbage fuzz: \(decoded) of 10000 mutated inputs still decoded")
    }

    @Test("counts are checked against the bytes left before anything is allocated")
    func countsAgainstBytesLeft() {
        func expectCountTooLarge(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(sourceLocation: sourceLocation) {
                _ = try ListOperation.decode(bytes, maxValueSize: Int.max, maxOperations: Int.max)
            } throws: { error in
                if case WireError.countTooLarge = error { return true } else { return false }
            }
        }
        let huge: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x20]   // 2^40
        // 2^40 operations over the caller's limit: fails at once.
        #expect(throws: WireError.countTooLarge(1 << 40, offset: 2)) { try ListOperation.decode([1, 0] + huge) }
        // 2^40 replicas in a 9-byte input.
        expectCountTooLarge([1] + huge + [0])
        // A deps list, a move's items, a section delete's items, a run: each claiming 2^40.
        expectCountTooLarge([1, 1, 7, 1, 0x03, 0x00, 0x00] + huge)                                  // deps
        // (Records of operation 5@7: flags "deps = previous", replica index 0, counter delta 4.)
        expectCountTooLarge([1, 1, 7, 1, 0x44, 0x00, 0x08, 0x02, 0x00, 0x00, 0x00] + huge)          // moveItems
        expectCountTooLarge([1, 1, 7, 1, 0x46, 0x00, 0x08, 0x02, 0x00, 0x00] + huge)                // deleteSection
        expectCountTooLarge([1, 1, 7, 3, 0x4A, 0x00, 0x08, 0x02, 0x00] + huge)                      // delete run
        expectCountTooLarge([1, 1, 7, 3, 0xC9, 0x00, 0x08, 0x02, 0x00, 0x00, 0x00] + huge)          // insert run
        // A run longer than the operations the header declared.
        expectCountTooLarge([1, 1, 7, 2, 0x4A, 0x00, 0x08, 0x02, 0x00, 0x03])
        // A value longer than the limit, and one longer than the input.
        #expect(throws: WireError.valueTooLarge(1 << 40, limit: 10, offset: 8)) {
            try ListOperation.decode([1, 1, 7, 1, 0x61, 0x00, 0x00, 0x00] + huge, maxValueSize: 10)
        }
        #expect(throws: WireError.truncated(offset: 10)) { try ListOperation.decode([1, 1, 7, 1, 0x61, 0x00, 0x00, 0x00, 0x05, 0x41]) }
    }

    @Test("malformed fields give typed errors")
    func malformedFields() throws {
        let (_, example) = try Self.workedExample()
        #expect(throws: WireError.truncated(offset: 0)) { try ListOperation.decode([UInt8]()) }
        #expect(throws: WireError.unsupportedVersion(8)) { try ListOperation.decode([8, 0, 0]) }
        #expect(throws: WireError.trailingBytes(1)) { try ListOperation.decode(example + [0]) }
        #expect(throws: WireError.invalidTag(0x6B, offset: 4)) { try ListOperation.decode([1, 1, 7, 1, 0x6B]) }
        #expect(throws: WireError.invalidTag(0x60, offset: 4)) { try ListOperation.decode([1, 1, 7, 1, 0x60]) }
        #expect(throws: WireError.invalidTag(0xE1, offset: 4)) { try ListOperation.decode([1, 1, 7, 1, 0xE1]) }
        // "Same replica as the previous operation" in the first.
        #expect(throws: WireError.invalidTag(0x71, offset: 4)) { try ListOperation.decode([1, 1, 7, 1, 0x71]) }
        // Varints: 11 bytes, and 10 bytes above UInt64.max.
        #expect(throws: WireError.invalidVarint(offset: 1)) { try ListOperation.decode([1] + Array(repeating: 0xFF, count: 10) + [0x01]) }
        #expect(throws: WireError.invalidVarint(offset: 1)) { try ListOperation.decode([1] + Array(repeating: 0xFF, count: 9) + [0x02]) }
        // A replica listed twice; a replica index outside the table.
        #expect(throws: WireError.invalidValue("replica r7 twice in the table", offset: 1)) { try ListOperation.decode([1, 2, 7, 7, 0]) }
        #expect {
            try ListOperation.decode([1, 1, 7, 1, 0x41, 0x01, 0x00, 0x00, 0x00])
        } throws: { if case WireError.invalidValue = $0 { true } else { false } }
        // Counter 0 and a counter over OpID.maxCounter, written by the encoder itself.
        for bad in [UInt64(0), OpID.maxCounter + 1] {
            let op = ListOperation(id: Self.id(bad, 1), deps: Frontier(), kind: .setItemValue(Self.item(1, 1), Data()))
            #expect { try ListOperation.decode(ListOperation.encode([op])) } throws: { if case WireError.invalidValue = $0 { true } else { false } }
            let ref = ListOperation(id: Self.id(5, 1), deps: Frontier(), kind: .setItemValue(Self.item(bad, 1), Data()))
            #expect { try ListOperation.decode(ListOperation.encode([ref])) } throws: { if case WireError.invalidValue = $0 { true } else { false } }
        }
        // A move whose slots would pass the largest counter.
        let move = ListOperation(id: Self.id(OpID.maxCounter, 1), deps: Frontier(),
                                 kind: .moveItems([Self.item(1, 1), Self.item(2, 1)], section: Self.section(1, 1), .init(after: nil, before: nil)))
        #expect { try ListOperation.decode(ListOperation.encode([move])) } throws: { if case WireError.invalidValue = $0 { true } else { false } }
        // A value over the caller's limit.
        #expect(throws: WireError.valueTooLarge(1, limit: 0, offset: 8)) { try ListOperation.decode(example, maxValueSize: 0) }
        // A batch over the caller's operation limit.
        #expect(throws: WireError.countTooLarge(4, offset: 3)) { try ListOperation.decode(example, maxValueSize: 10, maxOperations: 3) }
    }
}

extension ListOperation {
    /// The size of the value an insert or value write carries (0 for other kinds).
    var valueSize: Int {
        switch kind {
        case .insertSection(_, let v), .insertItem(_, _, let v), .setItemValue(_, let v), .setSectionValue(_, let v): v.count
        default: 0
        }
    }
}

/// The automerge-paper trace replayed once per test process and shared by the encoding tests.
enum AutomergePaper {
    private static let shared: Result<ListDocument, any Error> = Result {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var doc = try ListDocument.make(1, sections: [[]])
        try TraceTests.replay(trace, on: &doc)
        return doc
    }

    static func document() throws -> ListDocument { try shared.get() }
}
