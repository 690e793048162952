import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncRandom

/// The typing path of text fields (`FastPaths/ListDocument+TextRuns.swift`: a splice right after
/// this replica's previous splice of the same field, with nothing in between) against the
/// general path (`fastPaths = false`), and the log's splices kept in parts
/// (`History/OtherOperations.swift`).
@Suite("Text runs (typing into one field) against the general path")
struct TextRunTests {
    /// Two documents with one item (and one section) whose fields are typed into: `fast` takes
    /// the short paths, `general` does not.
    static func pair(wall: UInt64? = nil, maxValueSize: Int = ListDocument.defaultMaxValueSize) throws
        -> (fast: ListDocument, general: ListDocument, item: ItemID, section: SectionID) {
        var fast = ListDocument(replica: ReplicaID(1), maxValueSize: maxValueSize)
        let section = SectionID(try fast.insertSection(at: 0, value: Data("S".utf8)).id)
        let item = ItemID(try fast.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        if let wall { fast.wallClock = .fixed(wall) }
        var general = fast
        general.fastPaths = false
        return (fast, general, item, section)
    }

    /// Makes the same splice on both; they must return the same operation (or throw the same
    /// error) and reach the same state, records and log.
    @discardableResult
    static func same(_ fast: inout ListDocument, _ general: inout ListDocument, _ what: String,
                     sourceLocation: SourceLocation = #_sourceLocation,
                     _ edit: (inout ListDocument) throws(ListError) -> ListOperation) -> ListOperation? {
        let a: Result<ListOperation, ListError>, b: Result<ListOperation, ListError>
        do { a = .success(try edit(&fast)) } catch { a = .failure(error) }
        do { b = .success(try edit(&general)) } catch { b = .failure(error) }
        #expect(a == b, "\(what): the results differ", sourceLocation: sourceLocation)
        #expect(fast.records == general.records, "\(what): the records differ", sourceLocation: sourceLocation)
        #expect(fast.encodedState() == general.encodedState(), "\(what): the states differ", sourceLocation: sourceLocation)
        #expect(fast.frontier == general.frontier && fast.version == general.version, sourceLocation: sourceLocation)
        #expect(fast.operationCount == general.operationCount, sourceLocation: sourceLocation)
        return try? a.get()
    }

    /// Everything two documents hold: operations rebuilt from the log, history and state
    /// snapshot bytes, text.
    static func expectSame(_ fast: ListDocument, _ general: ListDocument, _ item: ItemID,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(fast.operations == general.operations, sourceLocation: sourceLocation)
        #expect(fast.encodedHistory() == general.encodedHistory(), sourceLocation: sourceLocation)
        #expect(fast.encodedSnapshot(format: .state) == general.encodedSnapshot(format: .state), sourceLocation: sourceLocation)
        #expect(fast.text("notes", ofItem: item) == general.text("notes", ofItem: item), sourceLocation: sourceLocation)
        try fast.checkInvariants()
        try general.checkInvariants()
    }

    @Test("typing, backspaces, jumps, pastes and multi-scalar text: the same operations, records, log and bytes as the general path")
    func randomTypingMatchesGeneralPath() throws {
        for seed: UInt64 in [1, 2, 3] {
            var (fast, general, item, _) = try Self.pair(wall: seed == 3 ? 1_800_000_000_000 : nil)
            var rng = SplitMix64(seed: seed)
            var caret = 0, length = 0
            var returned: [ListOperation] = []
            let alphabet = Array("abc de🙂é\u{301}".unicodeScalars)
            for step in 0 ..< 600 {
                let roll = rng.next() % 100
                var at = caret, delete = 0, insert = ""
                switch roll {
                case 0 ..< 60: insert = String(alphabet[Int(rng.next() % UInt64(alphabet.count))])          // a keystroke
                case 60 ..< 75 where caret > 0: at = caret - 1; delete = 1                                   // a backspace
                case 75 ..< 80 where caret < length: delete = 1                                             // a forward delete
                case 80 ..< 88: at = Int(rng.next() % UInt64(length + 1)); caret = at                        // a jump, then a keystroke
                    insert = "x"
                case 88 ..< 94: insert = String(repeating: "pq", count: 1 + Int(rng.next() % 4))             // a paste
                default:
                    if length > 0 {                                                                          // a selection replaced
                        at = Int(rng.next() % UInt64(length))
                        delete = 1 + Int(rng.next() % UInt64(min(5, length - at)))
                        insert = rng.next() % 2 == 0 ? "" : "Z"
                    } else { insert = "y" }
                }
                if delete == 0 && insert.isEmpty { insert = "w" }
                let op = Self.same(&fast, &general, "seed \(seed) step \(step)") { (d: inout ListDocument) throws(ListError) in
                    try d.splice("notes", ofItem: item, at: at, delete: delete, insert: insert)
                }
                if let op { returned.append(op) }
                let k = insert.unicodeScalars.count
                length += k - delete
                caret = at + k
            }
            #expect(fast.text("notes", ofItem: item)?.unicodeScalars.count == length)
            // The log gives back exactly the operations returned (the splices kept in parts).
            #expect(Array(fast.operations.suffix(returned.count)) == returned)
            try Self.expectSame(fast, general, item)
            // And the short path was taken: the run is current.
            #expect(fast.localTextRun?.logCount == fast.operationCount)
            #expect(general.localTextRun == nil)
        }
    }

    @Test("typing with each returned operation dropped (its writes reused in place) matches the general path: operations, records, log, bytes")
    func droppedOperationsMatchGeneralPath() throws {
        // As a text view types: bursts of keystrokes at the caret, backspace and forward-delete
        // runs, jumps, pastes, selections replaced, some scalars of more than one byte. No
        // operation is kept, so the typing path writes each keystroke's edit into the array the
        // last one held (the test above keeps every operation, so it copies that array).
        for seed: UInt64 in [11, 12, 13] {
            var (fast, general, item, _) = try Self.pair(wall: seed == 13 ? 1_800_000_000_000 : nil)
            var rng = SplitMix64(seed: seed)
            var caret = 0, length = 0
            var mode = 0, left = 0
            let alphabet = Array("etaoin shrdlu".unicodeScalars) + Array("é🙂\u{301}".unicodeScalars)
            for step in 0 ..< 1_500 {
                if left == 0 {
                    let roll = rng.next() % 100
                    mode = roll < 60 ? 0 : roll < 75 ? 1 : roll < 82 ? 2 : roll < 90 ? 3 : roll < 95 ? 4 : 5
                    left = mode <= 2 ? 1 + Int(rng.next() % 12) : 1
                }
                left -= 1
                var at = caret, delete = 0, insert = ""
                switch mode {
                case 0: insert = String(alphabet[Int(rng.next() % UInt64(alphabet.count))])    // a keystroke
                case 1 where caret > 0: at = caret - 1; delete = 1                              // a backspace
                case 2 where caret < length: delete = 1                                         // a forward delete
                case 3: at = Int(rng.next() % UInt64(length + 1)); insert = "j"                   // a jump, then a keystroke
                case 4: insert = String(repeating: "pa", count: 1 + Int(rng.next() % 3))          // a paste
                case 5 where length > 0:                                                        // a selection replaced
                    at = Int(rng.next() % UInt64(length))
                    delete = 1 + Int(rng.next() % UInt64(min(4, length - at)))
                    insert = rng.next() % 2 == 0 ? "" : "R"
                default: insert = "d"
                }
                Self.same(&fast, &general, "seed \(seed) step \(step)") { (d: inout ListDocument) throws(ListError) in
                    try d.splice("notes", ofItem: item, at: at, delete: delete, insert: insert)
                }
                let k = insert.unicodeScalars.count
                length += k - delete
                caret = at + k
            }
            #expect(fast.text("notes", ofItem: item)?.unicodeScalars.count == length)
            try Self.expectSame(fast, general, item)
            #expect(fast.localTextRun?.logCount == fast.operationCount)
            // A third replica that receives the typing path's history has the same text.
            var peer = ListDocument(replica: ReplicaID(9))
            _ = try peer.receive(encoded: fast.encodedHistory(), maxOperations: Int.max)
            #expect(peer.text("notes", ofItem: item) == fast.text("notes", ofItem: item))
        }
    }

    @Test("a keystroke at the caret takes the short way (one slot run, one tree entry for a typed word)")
    func keystrokesExtendTheRun() throws {
        var (fast, general, item, _) = try Self.pair()
        for (k, c) in "hello".unicodeScalars.enumerated() {
            Self.same(&fast, &general, "char \(k)") { (d: inout ListDocument) throws(ListError) in
                try d.splice("notes", ofItem: item, at: k, insert: String(c))
            }
        }
        let text = try #require(fast.records[item.opID]?["notes"]?.text)
        #expect(text.slots.runs.count == 1)
        #expect(fast.localTextRun?.typing?.caret == 5)
        try Self.expectSame(fast, general, item)
    }

    @Test("anything between two splices ends the run: a remote edit of the field, another field or item, a value write, a delete of the item")
    func interruptionsEndTheRun() throws {
        var (fast, general, item, section) = try Self.pair()
        let second = ItemID(try fast.insertItem(at: IndexPath(item: 1, section: 0), value: Data()).id)
        _ = try general.insertItem(at: IndexPath(item: 1, section: 0), value: Data())
        var peer = ListDocument(replica: ReplicaID(2))
        #expect(peer.receive(fast.operations).isSuccess)
        func splice(_ what: String, _ name: String = "notes", of target: ItemID? = nil, at: Int, delete: Int = 0, insert: String = "") {
            Self.same(&fast, &general, what) { (d: inout ListDocument) throws(ListError) in
                try d.splice(name, ofItem: target ?? item, at: at, delete: delete, insert: insert)
            }
        }
        splice("t1", at: 0, insert: "ab")
        splice("t2", at: 2, insert: "c")
        // A remote splice right at the caret.
        #expect(peer.receive(fast.operations).isSuccess)
        let remote = try peer.splice("notes", ofItem: item, at: 3, insert: "R")
        _ = try fast.receive(remote)
        _ = try general.receive(remote)
        splice("after remote", at: 3, insert: "d")
        splice("another field", "title", at: 0, insert: "T")
        splice("back", at: 4, insert: "e")
        splice("another item", of: second, at: 0, insert: "2")
        splice("back again", at: 5, insert: "f")
        Self.same(&fast, &general, "a section's field") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofSection: section, at: 0, insert: "s")
        }
        Self.same(&fast, &general, "the section again") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofSection: section, at: 1, insert: "t")
        }
        // A value write makes the field a value; the next splice types its string anew.
        splice("before the value", at: 6, insert: "g")
        Self.same(&fast, &general, "a value write") { (d: inout ListDocument) throws(ListError) in
            try d.setField("notes", to: .string("plain"), ofItem: item)
        }
        splice("after the value", at: 5, insert: "!")
        splice("typing on", at: 6, insert: "?")
        // The item deleted elsewhere: the next splice throws, as the general path does.
        let delete = try peer.deleteItem(at: IndexPath(item: 0, section: 0))
        _ = try fast.receive(delete)
        _ = try general.receive(delete)
        splice("on a deleted item", at: 7, insert: "x")
        try Self.expectSame(fast, general, item)
    }

    @Test("a splice the run cannot take throws what the general path throws and changes nothing")
    func badSplicesOnTheRun() throws {
        var (fast, general, item, _) = try Self.pair(maxValueSize: 16)
        for (k, c) in "abc".enumerated() {
            Self.same(&fast, &general, "char \(k)") { (d: inout ListDocument) throws(ListError) in
                try d.splice("notes", ofItem: item, at: k, insert: String(c))
            }
        }
        let before = fast.operationCount
        for (what, at, delete, insert) in [("past the end", 4, 0, "x"), ("a range past the end", 2, 2, ""),
                                           ("negative", -1, 0, "x"), ("a negative count", 0, -1, ""),
                                           ("nothing", 1, 0, ""), ("over the value size", 3, 0, String(repeating: "y", count: 17))] {
            let op = Self.same(&fast, &general, what) { (d: inout ListDocument) throws(ListError) in
                try d.splice("notes", ofItem: item, at: at, delete: delete, insert: insert)
            }
            #expect(op == nil, "\(what) was applied")
        }
        #expect(fast.operationCount == before)
        // The run goes on after them.
        Self.same(&fast, &general, "typing on") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofItem: item, at: 3, insert: "d")
        }
        #expect(fast.text("notes", ofItem: item) == "abcd")
        try Self.expectSame(fast, general, item)
    }

    @Test("a copy of the document made between two keystrokes types on by itself, as does the original")
    func copiesTypeOnAlone() throws {
        var (fast, general, item, _) = try Self.pair()
        for (k, c) in "abc".enumerated() {
            Self.same(&fast, &general, "char \(k)") { (d: inout ListDocument) throws(ListError) in
                try d.splice("notes", ofItem: item, at: k, insert: String(c))
            }
        }
        var fastCopy = fast, generalCopy = general
        Self.same(&fastCopy, &generalCopy, "the copy types") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofItem: item, at: 3, insert: "X")
        }
        Self.same(&fast, &general, "the original types") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofItem: item, at: 3, insert: "Y")
        }
        Self.same(&fastCopy, &generalCopy, "the copy deletes") { (d: inout ListDocument) throws(ListError) in
            try d.splice("notes", ofItem: item, at: 0, delete: 1)
        }
        #expect(fast.text("notes", ofItem: item) == "abcY")
        #expect(fastCopy.text("notes", ofItem: item) == "bcX")
        try Self.expectSame(fast, general, item)
        try Self.expectSame(fastCopy, generalCopy, item)
    }

    @Test("splices kept in parts in the log come back equal: local ones, received ones, concurrent ones, after a history and a state snapshot load")
    func splicesInPartsRoundTrip() throws {
        var (a, _, item, _) = try Self.pair()
        var b = ListDocument(replica: ReplicaID(2))
        #expect(b.receive(a.operations).isSuccess)
        var sent: [ListOperation] = []
        sent += try TextFieldTests.type("hello", at: 0, into: &a, item: item)
        let concurrent = try TextFieldTests.type("abc", at: 0, into: &b, item: item)
        sent.append(try a.splice("notes", ofItem: item, at: 1, delete: 3, insert: "ÉE"))
        #expect(a.receive(concurrent).isSuccess)
        sent.append(try a.splice("notes", ofItem: item, at: 0, delete: 2))   // depends on both replicas
        #expect(b.receive(sent).isSuccess)
        #expect(a.text("notes", ofItem: item) == b.text("notes", ofItem: item))
        for doc in [a, b] {
            let ops = doc.operations
            for op in sent + concurrent { #expect(ops.contains(op), "\(op) is not given back") }
            #expect(doc.loggedOperation(containing: sent.last!.id) == sent.last!)
            for format in [ListDocument.SnapshotFormat.history, .state] {
                let loaded = try ListDocument(snapshot: doc.encodedSnapshot(format: format), replica: ReplicaID(9))
                #expect(loaded.operations == ops, "\(format)")
                #expect(loaded.records == doc.records, "\(format)")
                #expect(loaded.text("notes", ofItem: item) == doc.text("notes", ofItem: item))
            }
        }
        #expect(a.log.others.count == a.log.records.filter { $0.kind == .other }.count)
        #expect(a.log.others.memoryParts.contains { $0.name == "log.splices" && $0.count > 0 })
    }
}
