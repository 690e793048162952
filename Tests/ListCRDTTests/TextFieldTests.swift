import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// Docs/Semantics.md §8.10: text fields, merged character by character.
@Suite("§8.10 text fields: characters merged one by one")
struct TextFieldTests {
    /// `n` replicas holding one item whose `notes` field is text `start` (typed by replica 1).
    static func replicas(_ n: Int = 2, start: String = "", walls: [UInt64]? = nil) throws -> ([ListDocument], ItemID) {
        var a = ListDocument(replica: ReplicaID(1))
        try a.insertSection(at: 0, value: Data("To do".utf8))
        let item = ItemID(try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        if !start.isEmpty { try a.splice("notes", ofItem: item, at: 0, insert: start) }
        var docs = [a]
        for k in 2 ... max(n, 2) where k <= n {
            var d = ListDocument(replica: ReplicaID(UInt64(k)))
            #expect(d.receive(a.operations).isSuccess)
            docs.append(d)
        }
        if let walls { for k in docs.indices { docs[k].wallClock = .fixed(walls[k]) } }
        return (docs, item)
    }

    /// Types `s` at `position`, one operation per character (as a text view reports keystrokes).
    @discardableResult
    static func type(_ s: String, at position: Int, into doc: inout ListDocument, item: ItemID) throws -> [ListOperation] {
        var ops: [ListOperation] = []
        for (k, c) in s.unicodeScalars.enumerated() {
            ops.append(try doc.splice("notes", ofItem: item, at: position + k, insert: String(c)))
        }
        return ops
    }

    static func sequence(_ doc: ListDocument, _ item: ItemID) -> TextSequence? { doc.records[item.opID]?["notes"]?.text }

    @Test("§8.10 the issue's example: one appends, the other types at the start, offline; both texts survive in order")
    func bothTextsSurvive() throws {
        var (docs, milk) = try Self.replicas(start: "milk")
        let append = try Self.type(" (2 litres)", at: 4, into: &docs[0], item: milk)
        let prefix = try Self.type("organic ", at: 0, into: &docs[1], item: milk)
        #expect(docs[0].receive(prefix).isSuccess)
        #expect(docs[1].receive(append).isSuccess)
        #expect(docs[0].text("notes", ofItem: milk) == "organic milk (2 litres)")
        #expect(docs[1].text("notes", ofItem: milk) == "organic milk (2 litres)")
        #expect(docs[0].snapshot() == docs[1].snapshot())
    }

    /// Two replicas each type a run of three characters at position 1 of "ab", concurrently, by
    /// `type` (forwards or backwards); both must show one run after the other, each whole.
    private func concurrentRunsStayWhole(_ type: (String, inout ListDocument, ItemID) throws -> [ListOperation]) throws {
        var (docs, item) = try Self.replicas(start: "ab")
        let x = try type("xyz", &docs[0], item)
        let p = try type("PQR", &docs[1], item)
        #expect(docs[0].receive(p).isSuccess)
        #expect(docs[1].receive(x).isSuccess)
        let t = docs[0].text("notes", ofItem: item)
        #expect(t == docs[1].text("notes", ofItem: item))
        #expect(t == "axyzPQRb" || t == "aPQRxyzb", "got \(t ?? "nil")")
    }

    @Test("§8.10 two people typing at one spot never interleave: each run stays whole")
    func typingAtOneSpotDoesNotInterleave() throws {
        try concurrentRunsStayWhole { s, doc, item in try Self.type(s, at: 1, into: &doc, item: item) }
    }

    @Test("§8.10 backwards typing (each character typed before the last) stays whole too")
    func backwardTypingDoesNotInterleave() throws {
        try concurrentRunsStayWhole { s, doc, item in
            try s.reversed().map { c in try doc.splice("notes", ofItem: item, at: 1, insert: String(c)) }
        }
    }

    @Test("§8.10 positions count Unicode scalars: an emoji with a skin tone is two, é written as e + accent two")
    func positionsCountScalars() throws {
        var (docs, item) = try Self.replicas(start: "a👍🏽e\u{301}b")
        #expect(docs[0].text("notes", ofItem: item)!.unicodeScalars.count == 6)
        try docs[0].splice("notes", ofItem: item, at: 1, delete: 2)   // the emoji and its modifier
        #expect(docs[0].text("notes", ofItem: item) == "ae\u{301}b")
        try docs[0].splice("notes", ofItem: item, at: 3, insert: "!")
        #expect(docs[0].text("notes", ofItem: item) == "ae\u{301}!b")
        #expect(throws: ListError.self) { try docs[0].splice("notes", ofItem: item, at: 6, insert: "x") }
        #expect(throws: ListError.self) { try docs[0].splice("notes", ofItem: item, at: 2, delete: 4) }
        #expect(throws: ListError.self) { try docs[0].splice("notes", ofItem: item, at: 0) }
    }

    @Test("§8.10 a removal concurrent with typing inside it: the typing survives, the rest goes")
    func typingInsideConcurrentRemoval() throws {
        var (docs, item) = try Self.replicas(start: "hello world")
        let cut = try docs[0].splice("notes", ofItem: item, at: 5, delete: 6)
        let typed = try Self.type("XY", at: 8, into: &docs[1], item: item)
        #expect(docs[0].receive(typed).isSuccess)
        #expect(docs[1].receive([cut]).isSuccess)
        #expect(docs[0].text("notes", ofItem: item) == "helloXY")
        #expect(docs[1].text("notes", ofItem: item) == "helloXY")
    }

    @Test("§8.10 two removals of the same characters remove them once")
    func concurrentRemovalsOfTheSameCharacters() throws {
        var (docs, item) = try Self.replicas(start: "abcdef")
        let one = try docs[0].splice("notes", ofItem: item, at: 1, delete: 3)
        let two = try docs[1].splice("notes", ofItem: item, at: 2, delete: 3)
        #expect(docs[0].receive([two]).isSuccess)
        #expect(docs[1].receive([one]).isSuccess)
        #expect(docs[0].text("notes", ofItem: item) == "af")
        #expect(docs[1].text("notes", ofItem: item) == "af")
    }

    @Test("§8.10 a typed run is stored as one run: a hundred keystrokes, one slot run, one tree entry")
    func typedRunIsOneRun() throws {
        var (docs, item) = try Self.replicas()
        let ops = try Self.type(String(repeating: "q", count: 100), at: 0, into: &docs[0], item: item)
        #expect(Self.sequence(docs[0], item)!.slots.runs.count == 1)
        #expect(Self.sequence(docs[0], item)!.forest.problems(TextSequence.tree).isEmpty)
        #expect(docs[1].receive(ops).isSuccess)
        #expect(Self.sequence(docs[1], item)!.slots.runs.count == 1, "on the receiver too")
        // One operation per keystroke, one id per character: the ids are consecutive.
        #expect(zip(ops, ops.dropFirst()).allSatisfy { $0.1.id == $0.0.id.advanced(by: 1) })
        // A paste of 300 characters is one operation spanning 300 ids.
        let paste = try docs[0].splice("notes", ofItem: item, at: 100, insert: String(repeating: "p", count: 300))
        #expect(paste.span == 300)
        let next = try docs[0].splice("notes", ofItem: item, at: 0, insert: "n")
        #expect(next.id == paste.id.advanced(by: 300))
        #expect(docs[1].receive([paste, next]).isSuccess)
        #expect(docs[1].text("notes", ofItem: item) == docs[0].text("notes", ofItem: item))
    }

    @Test("§8.10 a keystroke edits the text in place: its storage is not copied")
    func keystrokeEditsInPlace() throws {
        var (docs, item) = try Self.replicas(start: "hello")
        docs[0].records[item.opID]!["notes"]!.text!.scalars.reserveCapacity(1000)
        func address(_ d: ListDocument) -> UnsafeRawPointer? {
            d.records[item.opID]!["notes"]!.text!.scalars.storageAddress
        }
        let before = address(docs[0])
        try docs[0].splice("notes", ofItem: item, at: 5, insert: "!")
        try docs[0].writeFields(["notes": .splice(at: 0, delete: 1, insert: "H")], ofItem: item)
        #expect(address(docs[0]) == before, "the scalars were copied")
        #expect(docs[0].text("notes", ofItem: item) == "Hello!")
    }

    @Test("§8.10 a value written after the text replaces it; a splice then edits that string as text")
    func valueWriteReplacesText() throws {
        var (docs, item) = try Self.replicas(start: "draft")
        let set = try docs[0].setField("notes", to: .string("final"), ofItem: item)
        #expect(docs[0].field("notes", of: item) == .value(.string("final")))
        let edit = try docs[0].splice("notes", ofItem: item, at: 5, insert: "!")
        #expect(docs[0].text("notes", ofItem: item) == "final!")
        #expect(docs[1].receive([set, edit]).isSuccess)
        #expect(docs[1].text("notes", ofItem: item) == "final!")
        #expect(docs[0].snapshot() == docs[1].snapshot())
    }

    @Test("§8.10 a value write concurrent with typing: the later edit (hybrid clock) decides what shows; typing it had not seen is kept")
    func valueWriteConcurrentWithTyping() throws {
        // The value is later: it shows, on both.
        do {
            var (docs, item) = try Self.replicas(start: "abc", walls: [1_000, 2_000])
            let typed = try Self.type("d", at: 3, into: &docs[0], item: item)
            let set = try docs[1].setField("notes", to: .string("X"), ofItem: item)
            #expect(docs[0].receive([set]).isSuccess)
            #expect(docs[1].receive(typed).isSuccess)
            #expect(docs[0].field("notes", of: item) == .value(.string("X")))
            #expect(docs[1].field("notes", of: item) == .value(.string("X")))
        }
        // The typing is later: the text shows, without what the value write had seen (it reset
        // "abc"), with the typing it had not.
        do {
            var (docs, item) = try Self.replicas(start: "abc", walls: [3_000, 2_000])
            let typed = try Self.type("d", at: 3, into: &docs[0], item: item)
            let set = try docs[1].setField("notes", to: .string("X"), ofItem: item)
            #expect(docs[0].receive([set]).isSuccess)
            #expect(docs[1].receive(typed).isSuccess)
            #expect(docs[0].field("notes", of: item) == .text("d"))
            #expect(docs[1].field("notes", of: item) == .text("d"))
        }
    }

    @Test("§8.10 a splice onto a counter or a non-string value is refused and changes nothing")
    func spliceOntoOtherKindsRefused() throws {
        var (docs, item) = try Self.replicas()
        try docs[0].increment("votes", by: 2, ofItem: item)
        try docs[0].setField("done", to: .bool(true), ofItem: item)
        let before = docs[0].operationCount
        #expect(throws: ListError.self) { try docs[0].splice("votes", ofItem: item, at: 0, insert: "x") }
        #expect(throws: ListError.self) { try docs[0].splice("done", ofItem: item, at: 0, insert: "x") }
        #expect(docs[0].operationCount == before)
    }

    @Test("§8.10 an anchor (a cursor) stays with its character while others type and remove around it")
    func anchorsSurviveOthersEdits() throws {
        var (docs, item) = try Self.replicas(start: "hello world")
        let caret = try #require(docs[0].anchor("notes", ofItem: item, at: 5))          // after "hello"
        let follow = try #require(docs[0].anchor("notes", ofItem: item, at: 5, side: .before))  // before " "
        let remote = try Self.type(">> ", at: 0, into: &docs[1], item: item)
        #expect(docs[0].receive(remote).isSuccess)
        #expect(docs[0].position(of: caret, "notes", ofItem: item) == 8)
        #expect(docs[0].position(of: follow, "notes", ofItem: item) == 8)
        // Someone types at the caret: the caret held after "o" stays left of it, the other follows.
        #expect(docs[0].receive(try Self.type("!!", at: 8, into: &docs[1], item: item)).isSuccess)
        #expect(docs[0].position(of: caret, "notes", ofItem: item) == 8)
        #expect(docs[0].position(of: follow, "notes", ofItem: item) == 10)
        // The character it holds is removed: it stays where that character was.
        #expect(docs[0].receive([try docs[1].splice("notes", ofItem: item, at: 5, delete: 3)]).isSuccess)
        #expect(docs[0].text("notes", ofItem: item) == ">> he!! world")
        #expect(docs[0].position(of: caret, "notes", ofItem: item) == 5)
        #expect(docs[0].position(of: .start, "notes", ofItem: item) == 0)
        #expect(docs[0].position(of: .end, "notes", ofItem: item) == 13)
        #expect(docs[0].anchor("notes", ofItem: item, at: 14) == nil)
    }

    @Test("§8.10 a received edit naming a character the field does not hold is refused and changes nothing")
    func unknownCharacterRefused() throws {
        var (docs, item) = try Self.replicas(start: "abc")
        let good = try docs[1].splice("notes", ofItem: item, at: 1, insert: "x")
        let text = docs[0].text("notes", ofItem: item)
        for bad in [TextEdit(after: OpID(counter: 1, replica: ReplicaID(9)), insert: "y"),
                    TextEdit(deletes: [TextRange(first: OpID(counter: 2, replica: ReplicaID(1)), count: 1)]),
                    TextEdit(after: good.id, insert: "z")] {
            var op = good
            op.kind = .writeFields(.item(item), FieldWrites(clock: 99, writes: [FieldWrite(name: "notes", change: .text(bad))]))
            #expect(throws: ApplyError.self) { try docs[0].receive(op) }
            #expect(docs[0].text("notes", ofItem: item) == text)
        }
        // Two text fields typed into by one operation, and a splice by position, are refused.
        var two = good
        two.kind = .writeFields(.item(item), FieldWrites(clock: 99, writes: [FieldWrite(name: "a", change: .text(TextEdit(insert: "1"))),
                                                                             FieldWrite(name: "b", change: .text(TextEdit(insert: "2")))]))
        #expect(throws: ApplyError.self) { try docs[0].receive(two) }
        var positional = good
        positional.kind = .writeFields(.item(item), FieldWrites(clock: 99, writes: [FieldWrite(name: "notes", change: .splice(at: 0, delete: 0, insert: "x"))]))
        #expect(throws: ApplyError.self) { try docs[0].receive(positional) }
        #expect(docs[0].receive([good]).isSuccess)
    }

    @Test("§8.10 compaction drops the removed characters (all but the first of each removed run) and keeps merging")
    func compactionCollectsTombstones() throws {
        var (docs, item) = try Self.replicas(start: String(repeating: "abcdefghij", count: 10))
        for _ in 0 ..< 9 { try docs[0].splice("notes", ofItem: item, at: 5, delete: 10) }
        #expect(docs[1].receive(docs[0].operations).isSuccess)
        let text = docs[0].text("notes", ofItem: item)
        #expect(text?.count == 10)
        #expect(Self.sequence(docs[0], item)!.slotCount == 100)
        for k in docs.indices { try docs[k].compact(stable: docs[k].version) }
        #expect(Self.sequence(docs[0], item)!.slotCount == 11, "ten shown, one removed run's first")
        #expect(docs[0].text("notes", ofItem: item) == text)
        // Concurrent typing at the removed spot still merges, and both agree.
        let a = try Self.type("AA", at: 5, into: &docs[0], item: item)
        let b = try Self.type("BB", at: 5, into: &docs[1], item: item)
        #expect(docs[0].receive(b).isSuccess)
        #expect(docs[1].receive(a).isSuccess)
        #expect(docs[0].text("notes", ofItem: item) == docs[1].text("notes", ofItem: item))
        #expect(docs[0].text("notes", ofItem: item)?.count == 14)
    }
}
