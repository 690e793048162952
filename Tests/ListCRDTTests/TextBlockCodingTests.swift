import Foundation
import Testing
import ListSyncTestTraits
@testable import ListCRDT
import ListSyncRandom

/// Issue 45 item 5: a typed text's splices as text blocks (wire format 7, kind 15,
/// `Records/Text/TextBlockCoding.swift`, Docs/WireFormat.md §2.10): several runs in one record,
/// their origins as differences from where the run before ended, a run's text without its length.
/// What builds before wrote (wire format 6, text runs, kind 14) still loads.
@Suite("Text blocks: wire format 7")
struct TextBlockCodingTests {
    /// What a build of wire format 6 and state snapshot 9 wrote (`W16ProbeTests`-style fixture made
    /// at `cdeac31`): replica 7 types "héllo", backspaces twice, types "p 🙂", deletes the first
    /// two characters forward, pastes "Oh, ", types "yes"; replica 9 types "ok" at the start; 7
    /// types "!!" after it. Its encoded history (version 6), state snapshot (version 9, a version-6
    /// batch inside) and history snapshot (version 1, the same batch).
    static let olderHistory = "060207091661000000014c7200000004636172647e000100056e6f746573020500000668c3a96c6c6ffe0400010202017e000001020302040203067020f09f9982fe000001020202097c020c02010100000500020b044f682c20007e000001020301020f037965736e010000010202000206026f6b6e000000010202010208022121"
    static let olderStateSnapshot = "4c534e5009020709020201000200000000010000000001007d06020709144e000400020000056e6f746573020500000668c3a96c6c6fbe000400010202013e00000001020302040203067020f09f9982be00000001020202093c00020c02010100000500020b044f682c20003e00000001020301020f037965732e01000000010202000206026f6b2e000000000102020102080221211401056e6f7465730100028b0114012e01004c050103050000010a030304010f070001021602000901180211091768c3a96c6c6f7020f09f99824f682c207965736f6b2121060f08080e00030202050603030a000000010100000106000506000206000306000205000600030601020600020101000101000101014c000101046361726400010019010001010001"
    static let olderHistorySnapshot = "4c534e50010207190917060207091661000000014c7200000004636172647e000100056e6f746573020500000668c3a96c6c6ffe0400010202017e000001020302040203067020f09f9982fe000001020202097c020c02010100000500020b044f682c20007e000001020301020f037965736e010000010202000206026f6b6e000000010202010208022121"
    static let olderText = "ok!!Oh, yeslp 🙂"

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i ..< j], radix: 16)!)
            i = j
        }
        return out
    }

    /// A board typed into by replicas 1 and 2 (each its own random edits, merged twice), with
    /// keystrokes a few milliseconds apart when `ticking` (clocks that do not go up by one), and a
    /// section's text field too.
    static func typedBoard(seed: UInt64, ticking: Bool) throws -> ListDocument {
        var (a, item) = try TextRunLogTests.doc(replica: 1, ticking: ticking)
        var b = ListDocument(replica: ReplicaID(2))
        #expect(b.receive(a.operations).isSuccess)
        for round in 0 ..< 2 {
            _ = try TextRunLogTests.randomEdits(&a, item, seed: seed &+ UInt64(round), steps: 120)
            _ = try TextRunLogTests.randomEdits(&b, item, seed: seed &+ 100 &+ UInt64(round), steps: 80)
            for (k, c) in "Déjà".enumerated() { _ = try a.splice("notes", ofSection: SectionID(a.operations[0].id), at: k, insert: String(c)) }
            #expect(a.receive(b.operations).isSuccess)
            #expect(b.receive(a.operations).isSuccess)
        }
        return a
    }

    @Test("typed text in blocks round-trips: decode, the windowed history, receive(encoded:), the snapshots; irregular clocks, two replicas, a section's field",
          arguments: [1, 2, 3, 4] as [UInt64])
    func roundTrip(seed: UInt64) throws {
        let doc = try Self.typedBoard(seed: seed, ticking: seed % 2 == 0)
        let ops = doc.operations
        let bytes = ListOperation.encode(ops)
        #expect(bytes[0] == ListOperation.textBlockWireFormatVersion)
        #expect(try ListOperation.decode(bytes) == ops)
        // The history written from the log a few operations at a time: the same bytes.
        for window in [1, 3, 64] {
            var w = WireWriter()
            doc.appendEncodedOperations(since: VersionVector(), to: &w, window: window)
            #expect(w.bytes == bytes, "window \(window)")
        }
        var fresh = ListDocument(replica: ReplicaID(5))
        #expect(try fresh.receive(encoded: bytes, maxOperations: Int.max).isSuccess)
        #expect(fresh.operations == ops && fresh.encodedStateSnapshot() == doc.encodedStateSnapshot())
        for format in [ListDocument.SnapshotFormat.state, .history] {
            let loaded = try ListDocument(snapshot: doc.encodedSnapshot(format: format), replica: ReplicaID(6))
            #expect(loaded.operations == ops && loaded.encodedHistory() == bytes, "\(format)")
        }
        // Smaller than what builds before wrote, which still reads.
        let older = ListOperation.encodeWithTextRuns(ops)
        #expect(older[0] == ListOperation.textRunWireFormatVersion && bytes.count < older.count)
        #expect(try ListOperation.decode(older) == ops)
    }

    @Test("a block ends at 4,096 operations, a run cut there; the windowed history writes the same bytes")
    func longBlocks() throws {
        var (doc, item) = try TextRunLogTests.doc()
        for k in 0 ..< 5_000 { _ = try doc.splice("notes", ofItem: item, at: k, insert: k % 7 == 0 ? "é" : "a") }
        for k in 0 ..< 4_200 { _ = try doc.splice("notes", ofItem: item, at: 4_999 - k, delete: 1) }
        let bytes = ListOperation.encode(doc.operations)
        #expect(try ListOperation.decode(bytes, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max) == doc.operations)
        #expect(doc.encodedHistory() == bytes)
        var w = WireWriter()
        doc.appendEncodedOperations(since: VersionVector(), to: &w, window: 1_000)
        #expect(w.bytes == bytes)
        #expect(bytes.count < 5_000 + 5_000 / 7 + 100, "the characters and a few bytes a block")
    }

    @Test("wire format 7 only for a batch holding a text block; a keystroke alone or a paste stays version 4")
    func wireFormatSevenOnlyForBlocks() throws {
        var (doc, item) = try TextRunLogTests.doc()
        let one = try doc.splice("notes", ofItem: item, at: 0, insert: "a")
        let two = try doc.splice("notes", ofItem: item, at: 1, insert: "b")
        let paste = try doc.splice("notes", ofItem: item, at: 2, insert: "cd")
        let back = try doc.splice("notes", ofItem: item, at: 3, delete: 1)
        let again = try doc.splice("notes", ofItem: item, at: 3, insert: "e")
        #expect(ListOperation.encode([one])[0] == ListOperation.fieldsWireFormatVersion)
        #expect(ListOperation.encode([one, paste])[0] == ListOperation.fieldsWireFormatVersion)
        #expect(!ListOperation.needsWireFormat7([one, paste]) && !ListOperation.needsWireFormat7([two, back]))
        // Two runs of one in a block: a backspace, then a keystroke (two field writes in version 6).
        #expect(ListOperation.needsWireFormat7([back, again]) && !ListOperation.needsWireFormat6([back, again]))
        for ops in [[one, two], [back, again]] {
            let bytes = ListOperation.encode(ops)
            #expect(bytes[0] == ListOperation.textBlockWireFormatVersion)
            #expect(try ListOperation.decode(bytes) == ops)
            #expect(bytes.count <= ListOperation.encodeWithTextRuns(ops).count)
        }
        // A backspace and a keystroke were two field writes; one block now.
        #expect(ListOperation.encode([back, again]).count + 10 < ListOperation.encodeWithTextRuns([back, again]).count)
    }

    /// Docs/WireFormat.md §2.10's example, byte for byte.
    @Test("the worked example: typed, backspaced over, typed again, one record")
    func wireExample() throws {
        var (doc, item) = try TextRunLogTests.doc(replica: 7)
        var ops: [ListOperation] = []
        for (k, c) in "hey".enumerated() { ops.append(try doc.splice("notes", ofItem: item, at: k, insert: String(c))) }
        ops.append(try doc.splice("notes", ofItem: item, at: 2, delete: 1))
        ops.append(try doc.splice("notes", ofItem: item, at: 2, insert: "é"))
        let bytes = ListOperation.encode(ops)
        let hex = bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
        #expect(hex == "07 01 07 05 0f 00 04 01 02 00 00 02 00 00 05 6e 6f 74 65 73 02 03 10 00 00 68 65 79 01 01 04 02 03 05 c3 a9")
        #expect(try ListOperation.decode(bytes) == ops)
        #expect(ListOperation.encodeWithTextRuns(ops).count == 60, "version 6: a text run and two field writes")
    }

    @Test("what builds of wire format 6 and state snapshot 9 wrote still loads: the same text, operations, and history written again as version 7")
    func olderVersionsStillLoad() throws {
        let history = Self.bytes(Self.olderHistory)
        #expect(history[0] == ListOperation.textRunWireFormatVersion)
        let ops = try ListOperation.decode(history)
        #expect(ops.count == 22)
        var fromBatch = ListDocument(replica: ReplicaID(3))
        #expect(try fromBatch.receive(encoded: history, maxOperations: Int.max).isSuccess)
        let item = ItemID(ops[1].id)
        #expect(fromBatch.text("notes", ofItem: item) == Self.olderText)
        let state = Self.bytes(Self.olderStateSnapshot), historySnapshot = Self.bytes(Self.olderHistorySnapshot)
        #expect(state[4] == ListDocument.stateRecordsSnapshotFormatVersion && historySnapshot[4] == ListDocument.snapshotFormatVersion)
        for (what, snapshot) in [("state", state), ("history", historySnapshot)] {
            let loaded = try ListDocument(snapshot: snapshot, replica: ReplicaID(4))
            #expect(loaded.text("notes", ofItem: item) == Self.olderText, "\(what)")
            #expect(loaded.operations == ops, "\(what)")
            // Written again: version 7, smaller, the same operations.
            let again = loaded.encodedHistory()
            #expect(again[0] == ListOperation.textBlockWireFormatVersion && again.count < history.count, "\(what)")
            #expect(try ListOperation.decode(again) == ops, "\(what)")
            #expect(ListOperation.encodeWithTextRuns(ops) == history, "\(what): the older encoder is kept byte for byte")
        }
    }

    @Test("a version-7 batch labelled 6 is refused (kind 15 is unknown there); one labelled 8 is an unsupported version")
    func olderReaderRefuses() throws {
        var (doc, item) = try TextRunLogTests.doc()
        let ops = [try doc.splice("notes", ofItem: item, at: 0, insert: "a"), try doc.splice("notes", ofItem: item, at: 1, insert: "b")]
        var bytes = ListOperation.encode(ops)
        bytes[0] = ListOperation.textRunWireFormatVersion
        #expect(throws: WireError.self) { try ListOperation.decode(bytes) }
        bytes[0] = ListOperation.wireFormatVersion + 1
        #expect(throws: WireError.unsupportedVersion(ListOperation.wireFormatVersion + 1)) { try ListOperation.decode(bytes) }
    }

    @Test("malformed text blocks are typed errors: every cut, every flipped byte (an error, never a crash, the document unchanged), and each field's rule")
    func malformedBlocks() throws {
        var (doc, item) = try TextRunLogTests.doc(ticking: true)
        let base = doc
        var ops: [ListOperation] = []
        for (k, c) in "ab🙂c".enumerated() { ops.append(try doc.splice("notes", ofItem: item, at: k, insert: String(c))) }
        ops.append(try doc.splice("notes", ofItem: item, at: 3, delete: 1))
        ops.append(try doc.splice("notes", ofItem: item, at: 2, delete: 1))
        ops.append(try doc.splice("notes", ofItem: item, at: 0, delete: 1))
        let bytes = ListOperation.encode(ops)
        #expect(bytes[0] == ListOperation.textBlockWireFormatVersion)
        for n in 0 ..< bytes.count { #expect(throws: WireError.self) { try ListOperation.decode(bytes.prefix(n)) } }
        let before = base.encodedStateSnapshot()
        for at in 1 ..< bytes.count {
            for flip: UInt8 in [0x01, 0x04, 0x80, 0xFF] {
                var damaged = bytes
                damaged[at] ^= flip
                var d = base
                do {
                    _ = try d.receive(encoded: damaged, maxOperations: Int.max)
                } catch {
                    #expect(d.encodedStateSnapshot() == before, "byte \(at) ^ \(flip): refused, nothing changed")
                }
                try d.checkInvariants()
            }
        }
        // Each rule, on a block of two keystrokes "xy" (… 0f header, flags, target, name, clock, runs, …).
        var (plain, item2) = try TextRunLogTests.doc()
        let two = [try plain.splice("notes", ofItem: item2, at: 0, insert: "x"), try plain.splice("notes", ofItem: item2, at: 1, insert: "y")]
        let good = ListOperation.encode(two)
        // 07 01 01 02 | 0f 00 04 01 02 00 (header: replica 0, counter 3, deps {2@1}) | 00 flags |
        // 02 00 target 2@1 | 00 05 "notes" | 02 clock 1 | 01 one run | 08 two typed | 00 00 origins | "xy"
        #expect(good.map { String(format: "%02x", $0) }.joined() == "070101020f000401020000020000056e6f7465730201080000" + "7879")
        let head = 4, flags = 10, control = 22
        #expect(try ListOperation.decode(good) == two)
        func refused(_ change: (inout [UInt8]) -> Void, _ why: String) {
            var b = good
            change(&b)
            #expect(throws: WireError.self, "\(why)") { try ListOperation.decode(b) }
        }
        refused({ $0[flags] = 4 }, "unknown block flags")
        refused({ $0[control] = 0x08 | TextBlockCode.wide.asByte | TextBlockCode.deleting.asByte }, "a deleting run with a text")
        refused({ $0[control] = 0x08 | TextBlockCode.descending.asByte }, "a typing run going down")
        refused({ $0[control] = 0x10 }, "a run of 3 where the header has 2 operations")
        refused({ $0[control] = 0x00; $0.removeLast() }, "a block of one operation")
        refused({ $0[$0.count - 1] = 0xC3 }, "a typing run whose bytes are not its characters")
        refused({ $0[control + 1] = 0x7F }, "an origin below counter 1")
        refused({ $0[0] = ListOperation.textRunWireFormatVersion }, "kind 15 in version 6")
        refused({ $0[head] |= RecordFlag.variant }, "the variant bit on kind 15")
    }

    /// The automerge-paper trace typed into one card's notes, one splice per trace line, as
    /// `listsync-bench`'s W16.text types it.
    static func automergePaper() throws -> (trace: EditingTrace, doc: ListDocument, item: ItemID) {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        let item = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
        for e in trace.edits {
            _ = try doc.splice("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: String(decoding: e.text, as: UTF8.self))
        }
        return (trace, doc, item)
    }

    @Test("the automerge-paper trace typed into one card's notes: its history is at most Loro's 257,406 bytes (it was 358,528 as text runs)",
          .cpuHeavy)
    func automergePaperBytes() throws {
        let (trace, doc, item) = try Self.automergePaper()
        let history = doc.encodedHistory()
        #expect(history.count <= 257_406, "\(history.count) bytes")
        #expect(ListOperation.encodeWithTextRuns(doc.operations).count == 358_528, "version 6, as W16.text measured it")
        var fresh = ListDocument(replica: ReplicaID(2))
        #expect(try fresh.receive(encoded: history, maxOperations: Int.max).isSuccess)
        #expect(Array((fresh.text("notes", ofItem: item) ?? "").utf8) == trace.finalText)
        // The state snapshot's batch is one block across the log's runs (each run's first operation
        // depends on the batch's one before): version 10 wrote 572,584 bytes, where a block per log
        // record would add about 7 bytes for each of the 13,622 (714,229 with text runs); version
        // 11: DerivedTextBytesTests.
        let state = doc.encodedSnapshot(format: .state)
        #expect(state.count < 600_000, "\(state.count) bytes")
        let loaded = try ListDocument(snapshot: state, replica: ReplicaID(3))
        #expect(Array((loaded.text("notes", ofItem: item) ?? "").utf8) == trace.finalText && loaded.encodedHistory() == history)
    }
}

private extension UInt64 {
    var asByte: UInt8 { UInt8(truncatingIfNeeded: self) }
}
