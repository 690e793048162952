import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// Docs/Semantics.md §8: records of fields, merged field by field.
@Suite("§8 fields: records merged field by field")
struct FieldTests {
    /// Two replicas that hold one item `{title: milk, done: false}`.
    private func pair(wallA: UInt64? = nil, wallB: UInt64? = nil) throws -> (ListDocument, ListDocument, ItemID) {
        var a = ListDocument(replica: ReplicaID(1))
        a.wallClock = wallA.map { .fixed($0) }
        try a.insertSection(at: 0, value: Data("To do".utf8))
        let insert = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data())
        let item = ItemID(insert.id)
        try a.writeFields(["title": .set(.string("milk")), "done": .set(.bool(false))], ofItem: item)
        var b = ListDocument(replica: ReplicaID(2))
        b.wallClock = wallB.map { .fixed($0) }
        #expect(b.receive(a.operations).isSuccess)
        return (a, b, item)
    }

    @Test("§8.1 different fields never conflict: a title and a tick written offline are both kept")
    func differentFieldsBothKept() throws {
        var (phone, laptop, milk) = try pair()
        let rename = try phone.setField("title", to: .string("oat milk"), ofItem: milk)
        let tick = try laptop.setField("done", to: .bool(true), ofItem: milk)
        #expect(phone.receive([tick]).isSuccess)
        #expect(laptop.receive([rename]).isSuccess)
        let expected: [String: Field] = ["title": .value(.string("oat milk")), "done": .value(.bool(true))]
        #expect(phone.fields(of: milk) == expected)
        #expect(laptop.fields(of: milk) == expected)
        #expect(phone.snapshot() == laptop.snapshot())
        #expect(phone.takeFieldConflicts().isEmpty && laptop.takeFieldConflicts().isEmpty, "no conflict: different fields")
    }

    @Test("§8.2 the later edit wins a field, even against a greater operation id")
    func laterEditWins() throws {
        // The phone (replica 1) edits later by the wall clock, but its counter is behind: the
        // laptop made many edits meanwhile, so its operation id is the greater one.
        var (phone, laptop, milk) = try pair(wallA: 1_000, wallB: 1_000)
        laptop.wallClock = .fixed(2_000_000)  // the laptop edits at 2,000 s
        phone.wallClock = .fixed(5_000_000)   // the phone, offline, at 5,000 s
        for k in 0 ..< 20 { try laptop.setField("note", to: .int(Int64(k)), ofItem: milk) }
        let early = try laptop.setField("title", to: .string("laptop's"), ofItem: milk)
        let late = try phone.setField("title", to: .string("phone's"), ofItem: milk)
        #expect(early.id > late.id, "the laptop's id is the greater")
        #expect(phone.receive(laptop.operations).isSuccess)
        #expect(laptop.receive([late]).isSuccess)
        #expect(phone.field("title", of: milk) == .value(.string("phone's")))
        #expect(laptop.field("title", of: milk) == .value(.string("phone's")))
    }

    @Test("§8.2 a write beats what its author saw, whatever the clocks say")
    func causalWriteWins() throws {
        // The laptop's clock is far behind: its edit made after seeing the phone's still wins.
        var (phone, laptop, milk) = try pair(wallA: 9_000_000, wallB: 1_000)
        let first = try phone.setField("title", to: .string("first"), ofItem: milk)
        #expect(laptop.receive([first]).isSuccess)
        let second = try laptop.setField("title", to: .string("second"), ofItem: milk)
        #expect(phone.receive([second]).isSuccess)
        #expect(phone.field("title", of: milk) == .value(.string("second")))
        #expect(phone.takeFieldConflicts().isEmpty, "a write that saw mine is not a conflict")
    }

    @Test("§8.3 the loser of a same-field conflict is told: which field, both values, whose")
    func loserIsTold() throws {
        var (phone, laptop, milk) = try pair(wallA: 1_000, wallB: 2_000)
        let mine = try phone.setField("title", to: .string("oat milk"), ofItem: milk)
        let theirs = try laptop.setField("title", to: .string("soy milk"), ofItem: milk)
        #expect(phone.receive([theirs]).isSuccess)
        #expect(laptop.receive([mine]).isSuccess)
        let lost = phone.takeFieldConflicts()
        #expect(lost == [FieldConflict(target: .item(milk), name: "title", lost: .string("oat milk"), won: .string("soy milk"),
                                       localOperation: mine.id, winner: theirs.id)])
        #expect(phone.takeFieldConflicts().isEmpty, "taken once")
        #expect(laptop.takeFieldConflicts().isEmpty, "the winner is not told")
        #expect(phone.field("title", of: milk) == laptop.field("title", of: milk))
    }

    @Test("§8.4 counters add: every increment counts once, in any order, duplicated or not")
    func countersAdd() throws {
        var (a, b, milk) = try pair()
        let x = try a.increment("votes", by: 2, ofItem: milk)
        let y = try b.increment("votes", by: 3, ofItem: milk)
        let z = try b.increment("votes", by: -1, ofItem: milk)
        #expect(a.receive([z, y, y]).isSuccess)
        #expect(b.receive([x, x]).isSuccess)
        #expect(a.field("votes", of: milk) == .counter(4))
        #expect(b.field("votes", of: milk) == .counter(4))
    }

    @Test("§8.4 a value write resets the increments its author saw, not concurrent ones")
    func counterResetKeepsConcurrent() throws {
        var (a, b, milk) = try pair(wallA: 1_000, wallB: 2_000)
        let one = try a.increment("votes", by: 5, ofItem: milk)
        #expect(b.receive([one]).isSuccess)
        let reset = try b.setField("votes", to: .int(0), ofItem: milk)
        let concurrent = try a.increment("votes", by: 7, ofItem: milk)
        #expect(a.receive([reset]).isSuccess)
        #expect(b.receive([concurrent]).isSuccess)
        // The increment is the later write (a's clock was raised past b's by the reset? no: a had not
        // seen it), so what shows is decided by the greatest stamp; both replicas agree.
        #expect(a.field("votes", of: milk) == b.field("votes", of: milk))
        let c = try a.increment("votes", by: 1, ofItem: milk)
        #expect(b.receive([c]).isSuccess)
        #expect(a.field("votes", of: milk) == .counter(8), "the reset killed the 5 it saw; 7 and 1 count")
        #expect(b.field("votes", of: milk) == .counter(8))
    }

    @Test("§8.4 sets are add-wins: a remove takes the adds its author saw, a concurrent add survives")
    func setsAddWins() throws {
        var (a, b, milk) = try pair()
        let tag = try a.writeFields(["tags": .insert(["dairy", "urgent"])], ofItem: milk)
        #expect(b.receive([tag]).isSuccess)
        let remove = try b.writeFields(["tags": .delete(["urgent", "dairy"])], ofItem: milk)
        let again = try a.writeFields(["tags": .insert(["urgent"])], ofItem: milk)
        #expect(a.receive([remove]).isSuccess)
        #expect(b.receive([again]).isSuccess)
        #expect(a.field("tags", of: milk) == .set(["urgent"]))
        #expect(b.field("tags", of: milk) == .set(["urgent"]))
    }

    @Test("§8.6 deleting an item keeps its record; removing a field is a write")
    func deleteKeepsRecord() throws {
        var (a, _, milk) = try pair()
        try a.removeField("done", ofItem: milk)
        #expect(a.fields(of: milk) == ["title": .value(.string("milk"))])
        try a.deleteItem(milk)
        #expect(a.fields(of: milk) == ["title": .value(.string("milk"))])
        #expect(throws: ListError.itemDeleted(milk)) { try a.setField("title", to: .null, ofItem: milk) }
    }

    @Test("§8.7 a write names only its fields: fields it does not know survive")
    func unknownFieldsSurvive() throws {
        var (newer, older, milk) = try pair()
        let extra = try newer.setField("colour", to: .string("blue"), ofItem: milk)
        #expect(older.receive([extra]).isSuccess)
        let rename = try older.setField("title", to: .string("oat milk"), ofItem: milk)
        #expect(newer.receive([rename]).isSuccess)
        #expect(newer.field("colour", of: milk) == .value(.string("blue")))
        #expect(newer.field("title", of: milk) == .value(.string("oat milk")))
    }

    @Test("§8 bad field writes are typed errors and change nothing")
    func badInput() throws {
        var (a, _, milk) = try pair()
        let before = a.encodedSnapshot()
        let bad: [[String: FieldChange]] = [
            [:], ["": .set(.null)], [String(repeating: "n", count: 65): .set(.null)], ["a\u{7}": .set(.null)],
            ["x": .set(.double(.nan))], ["x": .set(.double(.infinity))],
            ["x": .set(.bytes(Data(count: ListDocument.defaultMaxValueSize + 1)))],
            ["x": .insert([])], ["x": .insert([String(repeating: "m", count: 1025)])],
        ]
        for changes in bad {
            #expect(throws: ListError.self) { try a.writeFields(changes, ofItem: milk) }
        }
        #expect(throws: ListError.unknownItem(ItemID(OpID(counter: 99, replica: ReplicaID(9))))) {
            try a.setField("x", to: .null, ofItem: ItemID(OpID(counter: 99, replica: ReplicaID(9))))
        }
        #expect(a.encodedSnapshot() == before)
    }

    @Test("§8 a received field write that breaks a rule is refused and changes nothing")
    func badReceived() throws {
        var (a, b, milk) = try pair()
        let op = try a.setField("title", to: .string("x"), ofItem: milk)
        let before = b.encodedSnapshot()
        var nan = op
        nan.kind = .writeFields(.item(milk), FieldWrites(clock: 5, writes: [FieldWrite(name: "t", change: .set(.double(.nan)))]))
        var future = op
        future.kind = .writeFields(.item(milk), FieldWrites(clock: 5, writes: [FieldWrite(name: "t", change: .remove, replaces: op.id.advanced(by: 1))]))
        var unknown = op
        unknown.kind = .writeFields(.item(ItemID(OpID(counter: 1, replica: ReplicaID(77)))), FieldWrites(clock: 5, writes: [FieldWrite(name: "t", change: .remove)]))
        for bad in [nan, future] {
            let report = b.receive([bad])
            #expect(report.refused.count == 1, "\(bad)")
        }
        _ = b.receive([unknown])
        #expect(b.encodedSnapshot() == before)
    }

    @Test("§8 field writes travel in wire format 4; batches without them keep their old version")
    func wireFormat() throws {
        var (a, _, milk) = try pair()
        try a.writeFields(["votes": .increment(-3), "tags": .insert(["x", "é"]), "when": .set(.date(Date(timeIntervalSince1970: 1.5))),
                           "blob": .set(.bytes(Data([0, 1, 2]))), "n": .set(.int(-7)), "d": .set(.double(2.5)), "z": .set(.null)], ofItem: milk)
        try a.writeFields(["tags": .delete(["x"]), "gone": .remove], ofItem: milk)
        try a.writeFields(["colour": .set(.string("red"))], ofSection: a.sectionID(at: 0))
        let ops = a.operations
        let bytes = ListOperation.encode(ops)
        #expect(bytes.first == 4)
        #expect(try ListOperation.decode(bytes) == ops)
        let plain = ops.filter { !$0.carriesFields }
        #expect(ListOperation.encode(plain).first! <= 2, "no field write, no version 3 or 4")
        // Every prefix of the bytes is an error, never a crash.
        for n in 0 ..< bytes.count { #expect(throws: WireError.self) { try ListOperation.decode(bytes[..<n]) } }
    }

    @Test("§8 a batch or a snapshot that spells a field name outside the limits is a wire error where it is read")
    func badNameDecoded() throws {
        // The decoder checks each name where a batch spells it, so a state snapshot's load, which
        // checks every field write of its history, need not check the names again.
        var (a, _, milk) = try pair()
        var op = try a.setField("zq", to: .int(1), ofItem: milk)
        op.kind = .writeFields(.item(milk), FieldWrites(clock: 9, writes: [FieldWrite(name: "z\u{7}", change: .set(.int(1)))]))
        #expect(throws: WireError.self) { try ListOperation.decode(ListOperation.encode([op])) }
        op.kind = .writeFields(.item(milk), FieldWrites(clock: 9, writes: [FieldWrite(name: "", change: .set(.int(1)))]))
        #expect(throws: WireError.self) { try ListOperation.decode(ListOperation.encode([op])) }

        // A state snapshot of version 5 applies its history's field writes: the one name "zq",
        // spelled once in the batch ahead of the log, made a control character.
        let good = a.encodedStateSnapshotBeforeVersion9()
        #expect(try ListDocument(snapshot: good, replica: ReplicaID(3)).field("zq", of: milk) == .value(.int(1)))
        let at = try #require((0 ..< good.count - 1).first { good[$0] == UInt8(ascii: "z") && good[$0 + 1] == UInt8(ascii: "q") })
        #expect((at + 1 ..< good.count - 1).allSatisfy { !(good[$0] == UInt8(ascii: "z") && good[$0 + 1] == UInt8(ascii: "q")) })
        var bad = good
        bad[at + 1] = 7
        #expect(throws: WireError.self) { try ListDocument(snapshot: bad, replica: ReplicaID(3)) }
    }

    @Test("§8.1 an item inserted with its fields is one operation; it travels, loads and compacts like any")
    func insertWithFields() throws {
        var (a, b, _) = try pair()
        let op = try a.insertItem(at: IndexPath(item: 1, section: 0), value: Data("v".utf8),
                                  fields: ["title": .set(.string("eggs")), "votes": .increment(2), "tags": .insert(["x"])])
        let eggs = ItemID(op.id)
        #expect(a.fields(of: eggs) == ["title": .value(.string("eggs")), "votes": .counter(2), "tags": .set(["x"])])
        #expect(ListOperation.encode([op]).first == 4)
        #expect(try ListOperation.decode(ListOperation.encode([op])) == [op])
        #expect(b.receive([op]).isSuccess)
        #expect(b.snapshot() == a.snapshot())
        // Typing continues after it with the fast path, and the state snapshot keeps it whole.
        try a.insertItem(at: IndexPath(item: 2, section: 0), value: Data("w".utf8))
        try a.insertItem(at: IndexPath(item: 3, section: 0), value: Data("x".utf8))
        for format in [ListDocument.SnapshotFormat.state, .history] {
            let loaded = try ListDocument(snapshot: a.encodedSnapshot(format: format), replica: ReplicaID(5))
            #expect(loaded.snapshot() == a.snapshot(), "\(format)")
            #expect(loaded.operations == a.operations, "\(format): the history gives the insert back whole")
        }
        try a.compact(stable: a.version)
        #expect(a.fields(of: eggs)["votes"] == .counter(2))
        #expect(throws: ListError.invalidField("t", "a new item has nothing to remove: set, increment or add")) {
            try a.insertItem(at: IndexPath(item: 0, section: 0), fields: ["t": .remove])
        }
        // A received insert whose fields claim to replace something is refused.
        var bad = op
        bad.kind = .insertItemWithFields(section: try b.sectionID(at: 0), .init(after: nil, before: nil), value: Data(),
                                         fields: FieldWrites(clock: 1, writes: [FieldWrite(name: "t", change: .set(.null), replaces: op.id)]))
        bad.id = OpID(counter: 1_000, replica: ReplicaID(9))
        #expect(b.receive([bad]).refused.count == 1)
    }

    @Test("§8 the worked examples of Docs/WireFormat.md §2.7, byte for byte: version 4 written, version 3 still read")
    func wireExample() throws {
        let op = ListOperation(id: OpID(counter: 9, replica: ReplicaID(2)), deps: Frontier([OpID(counter: 3, replica: ReplicaID(1))]),
                               kind: .writeFields(.item(ItemID(OpID(counter: 3, replica: ReplicaID(1)))),
                                                  FieldWrites(clock: 1, writes: [FieldWrite(name: "title", change: .set(.string("oat milk")))])))
        func bytes(_ hex: String) -> [UInt8] { hex.split(separator: " ").map { UInt8($0, radix: 16)! } }
        // Version 3, as the build before wrote it: the clock whole, the name spelled out.
        let v3 = bytes("03 02 02 01 01 0c 00 10 01 04 05 04 05 01 01 05 74 69 74 6c 65 00 00 00 05 08 6f 61 74 20 6d 69 6c 6b")
        #expect(try ListOperation.decode(v3) == [op])
        // Version 4: the clock as the difference from 0 (zigzag 2), the name's code 0 (spelled out).
        let v4 = bytes("04 02 02 01 01 0c 00 10 01 04 05 04 05 02 01 00 05 74 69 74 6c 65 00 00 00 05 08 6f 61 74 20 6d 69 6c 6b")
        #expect(ListOperation.encode([op]) == v4)
        #expect(try ListOperation.decode(v4) == [op])
        // A second write of the same field in the batch names it by its number (code 1) and its
        // clock by the difference (0: zigzag 0).
        var next = op
        next.id = OpID(counter: 10, replica: ReplicaID(2))
        next.deps = Frontier([op.id])
        next.kind = .writeFields(.item(ItemID(OpID(counter: 3, replica: ReplicaID(1)))),
                                 FieldWrites(clock: 1, writes: [FieldWrite(name: "title", change: .remove)]))
        let two = ListOperation.encode([op, next])
        #expect(Array(two.suffix(6)) == bytes("00 01 01 00 00 01"), "clock +0, one write, name 1, replaces none, seen none, remove")
        #expect(try ListOperation.decode(two) == [op, next])
        // A name number the batch never gave is an error, not a crash.
        var bad = two
        bad[bad.count - 4] = 2
        #expect(throws: WireError.self) { try ListOperation.decode(bad) }
    }

    @Test("§8 a batch of field writes spells each name once (wire format 4)")
    func namesSpelledOnce() throws {
        var (a, _, milk) = try pair()
        for k in 0 ..< 50 { try a.writeFields(["title": .set(.string("t\(k)")), "votes": .increment(1)], ofItem: milk) }
        let bytes = ListOperation.encode(a.operations)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.components(separatedBy: "title").count == 2, "\"title\" once in the batch")
        #expect(text.components(separatedBy: "votes").count == 2, "\"votes\" once in the batch")
        #expect(try ListOperation.decode(bytes) == a.operations)
    }

    @Test("§8 a state snapshot with field writes is version 5 (other operations in one batch); version 2 of the same still loads")
    func stateSnapshotVersionFive() throws {
        var (a, b, milk) = try pair()
        for k in 0 ..< 20 {
            try a.writeFields(["title": .set(.string("t\(k)")), "votes": .increment(1), "tags": .insert(["x\(k % 3)"])], ofItem: milk)
            _ = try a.insertItem(at: IndexPath(item: 0, section: 0), fields: ["title": .set(.string("card \(k)")), "done": .set(.bool(false))])
        }
        try a.setValue(Data("plain".utf8), forItem: milk)
        #expect(b.receive(a.operations).isSuccess)
        let v5 = a.encodedStateSnapshotBeforeVersion9()
        #expect(v5[ListDocument.snapshotMagic.count] == ListDocument.stateFieldsSnapshotFormatVersion)
        var old = StateSnapshotEncoder(a, othersInOneBatch: false)
        let v2 = old.encode()
        #expect(v2[ListDocument.snapshotMagic.count] == ListDocument.stateSnapshotFormatVersion)
        #expect(v5.count < v2.count, "one batch spells each name once: \(v5.count) < \(v2.count)")
        for bytes in [v5, v2] {
            let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(9))
            try loaded.checkInvariants()
            #expect(loaded.snapshot() == a.snapshot())
            #expect(loaded.operations == a.operations)
            #expect(loaded.fields(of: milk) == a.fields(of: milk))
            #expect(loaded.encodedState() == a.encodedState())
        }
        // A document without field writes still writes version 2, byte for byte as before.
        var plain = ListDocument(replica: ReplicaID(4))
        try plain.insertSection(at: 0, value: Data())
        try plain.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
        #expect(plain.encodedSnapshot()[ListDocument.snapshotMagic.count] == ListDocument.stateSnapshotFormatVersion)
        // Every prefix of a version-5 snapshot (a sample of 300) is an error, never a crash.
        for n in stride(from: 0, to: v5.count, by: max(1, v5.count / 300)) {
            #expect(throws: WireError.self) { try ListDocument(snapshot: v5[..<n], replica: ReplicaID(9)) }
        }
    }

    @Test("§8 snapshots keep the records: state, history and a reload of each")
    func snapshotsKeepRecords() throws {
        var (a, b, milk) = try pair()
        try a.increment("votes", by: 2, ofItem: milk)
        try a.writeFields(["tags": .insert(["a"])], ofSection: a.sectionID(at: 0))
        #expect(b.receive(a.operations).isSuccess)
        for format in [ListDocument.SnapshotFormat.state, .history] {
            let loaded = try ListDocument(snapshot: a.encodedSnapshot(format: format), replica: ReplicaID(3))
            #expect(loaded.snapshot() == a.snapshot(), "\(format)")
            #expect(loaded.fields(of: milk) == a.fields(of: milk))
            #expect(loaded.fieldClock == a.fieldClock)
        }
    }

    @Test("§8.9 compaction keeps what decides each field, folded; the snapshot (version 4) loads it back")
    func compactionKeepsFields() throws {
        var (a, b, milk) = try pair(wallA: 1_000, wallB: 2_000)
        for _ in 0 ..< 5 { try a.increment("votes", ofItem: milk) }
        try b.increment("votes", by: 10, ofItem: milk)
        try a.writeFields(["tags": .insert(["x", "y"])], ofItem: milk)
        try a.writeFields(["tags": .delete(["x"]), "title": .set(.string("oat"))], ofItem: milk)
        let doomed = try a.insertItem(at: IndexPath(item: 1, section: 0), value: Data())
        try a.setField("title", to: .string("gone"), ofItem: ItemID(doomed.id))
        try a.deleteItem(ItemID(doomed.id))
        _ = b.receive(a.operations)
        _ = a.receive(b.operations)
        let before = a.fields(of: milk)
        #expect(before["votes"] == .counter(15))
        try a.compact(stable: a.version)
        #expect(a.fields(of: milk) == before)
        #expect(a.records[milk.opID]?["votes"]?.increments.count == 2, "one increment per replica once folded")
        #expect(a.records[doomed.id] == nil, "a dead item's record goes with its value")
        let bytes = a.encodedSnapshot()
        #expect(bytes[ListDocument.snapshotMagic.count] == ListDocument.compactedRecordsSnapshotFormatVersion)
        var loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(1))
        #expect(loaded.snapshot() == a.snapshot())
        // Writes after the floor merge with the folded state on both sides.
        let reset = try loaded.setField("votes", to: .int(0), ofItem: milk)
        let more = try b.increment("votes", by: 2, ofItem: milk)
        _ = loaded.receive([more])
        _ = b.receive([reset])
        #expect(loaded.snapshot() == b.snapshot())
        // A truncated version-4 snapshot is an error, never a crash.
        for n in stride(from: 0, to: bytes.count, by: 3) {
            #expect(throws: WireError.self) { try ListDocument(snapshot: bytes[..<n], replica: ReplicaID(1)) }
        }
    }

    /// Seed 17275 of `listsync simulate --daemons 2 --compact-after 10 --hide-daemon --roam 30
    /// --crashes 2 --ops 80`: a compaction that kept no record wrote no field clock, a device
    /// re-synced from that snapshot made a field write again with clock 10, and the removal it
    /// followed (a clock of the wall clock's order) beat it by the clocks.
    @Test("§8.9 the field clock survives a compaction that keeps no record: a write on the loaded snapshot beats what the compacted copy saw, on a copy that never compacted too")
    func fieldClockSurvivesCompaction() throws {
        var (a, b, milk) = try pair(wallA: 1_000, wallB: 2_000)
        try b.writeFields(["title": .remove, "done": .remove], ofItem: milk)
        _ = a.receive(b.operations)
        let seen = a.fieldClock
        try a.compact(stable: a.version)
        #expect(a.records[milk.opID] == nil || a.records[milk.opID]!.isEmpty, "every field removed: nothing decides any")
        let bytes = a.encodedSnapshot()
        var loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(3))
        #expect(loaded.fieldClock == seen, "the snapshot keeps the clock (\(loaded.fieldClock), not \(seen))")
        // A write made on the loaded copy with no wall clock (a re-sync's edit made again).
        let again = try loaded.setField("title", to: .string("oat"), ofItem: milk)
        #expect(b.receive([again]).isSuccess)
        #expect(b.fields(of: milk) == loaded.fields(of: milk), "the copy that never compacted shows the write too")
        #expect(b.fields(of: milk)["title"] == .value(.string("oat")))
    }

    @Test("§8 seeded fuzz: replicas writing fields converge, match the oracle, lose no write",
          arguments: 0 ..< 40)
    func fuzz(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed &* 7919 &+ 11)
        var docs = (1 ... 3).map { ListDocument(replica: ReplicaID($0)) }
        for k in docs.indices { docs[k].wallClock = .fixed(UInt64(1_000 * (k + 1))) }
        try docs[0].insertSection(at: 0, value: Data("s".utf8))
        for k in 0 ..< 4 { try docs[0].insertItem(at: IndexPath(item: k, section: 0), value: Data()) }
        let start = docs[0].operations
        for k in 1 ..< docs.count { _ = docs[k].receive(start) }
        var made: [[ListOperation]] = Array(repeating: [], count: docs.count)
        let names = ["title", "done", "votes", "tags"]
        for _ in 0 ..< 60 {
            let k = Int(rng.next() % UInt64(docs.count))
            let ids = docs[k].snapshot().sections.flatMap { $0.items.map(\.id) }
            guard let item = ids.isEmpty ? nil : ids[Int(rng.next() % UInt64(ids.count))] else { continue }
            let name = names[Int(rng.next() % UInt64(names.count))]
            let change: FieldChange = switch rng.next() % 6 {
            case 0: .set(.string("v\(rng.next() % 10)"))
            case 1: .remove
            case 2: .increment(Int64(rng.next() % 5) - 2)
            case 3: .insert(["m\(rng.next() % 4)"])
            case 4: .delete(["m\(rng.next() % 4)"])
            default: .set(.bool(rng.next() % 2 == 0))
            }
            if let op = try? docs[k].writeFields([name: change], ofItem: item) { made[k].append(op) }
            if rng.next() % 4 == 0, let op = try? docs[k].deleteItem(item) { made[k].append(op) }
            if rng.next() % 5 == 0, let op = try? docs[k].insertItem(at: IndexPath(item: 0, section: 0),
                                                                     fields: ["title": .set(.string("new")), "votes": .increment(1)]) {
                made[k].append(op)
            }
            // Sometimes a sync of a random part, in random order, duplicated.
            if rng.next() % 3 == 0 {
                let from = Int(rng.next() % UInt64(docs.count)), to = Int(rng.next() % UInt64(docs.count))
                var batch = docs[from].operations
                batch.shuffle(using: &rng)
                _ = docs[to].receive(batch + batch.prefix(3))
            }
        }
        let all = docs.map(\.operations)
        for k in docs.indices {
            for other in all { var batch = other; batch.shuffle(using: &rng); _ = docs[k].receive(batch) }
            _ = docs[k].takeFieldConflicts()
        }
        let oracle = SemanticsOracle(docs[0].operations)
        for d in docs {
            #expect(d.snapshot() == docs[0].snapshot(), "seed \(seed): replicas differ")
            #expect(oracle.check(d.snapshot()) == nil, "seed \(seed): \(oracle.check(d.snapshot()) ?? "")")
            #expect(d.pendingCount == 0)
        }
        // Every item's fields, deleted or not, agree with the oracle (nothing of another field lost).
        for op in docs[0].operations {
            if case .insertItem = op.kind {
                #expect(docs[0].fields(of: ItemID(op.id)) == oracle.expectedFields(of: op.id), "seed \(seed)")
            }
        }
        _ = made
    }
}
