import Foundation
import Testing
import ListSyncTestSupport
@_spi(Testing) @testable import ListCRDT

/// `ListDocument.typeText` (the typing API that returns the operation's id, not the operation)
/// against `splice` (which returns it) and against the general path (`fastPaths = false`): the
/// same document, log, operations and bytes; and the splice run's log run
/// (`LocalTextRun.logRun`, `OpLog.extendLocalTextRun`) extended only while it is the log's last
/// record.
@Suite("typeText: the typing API without operations, against splice")
struct TypeTextTests {
    /// A document with one section and one item, and a copy of it.
    static func board(fastPaths: Bool = true) throws -> (ListDocument, ItemID, SectionID) {
        var doc = ListDocument(replica: ReplicaID(1))
        let section = SectionID(try doc.insertSection(at: 0, value: Data("S".utf8)).id)
        let item = ItemID(try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data()).id)
        doc.fastPaths = fastPaths
        return (doc, item, section)
    }

    /// Everything two documents hold: records, state, operations rebuilt from the log, history
    /// and state snapshot bytes.
    static func expectSame(_ a: ListDocument, _ b: ListDocument, _ what: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(a.records == b.records, "\(what): the records differ", sourceLocation: sourceLocation)
        #expect(a.frontier == b.frontier && a.version == b.version, "\(what)", sourceLocation: sourceLocation)
        #expect(a.operations == b.operations, "\(what): the operations differ", sourceLocation: sourceLocation)
        #expect(a.encodedHistory() == b.encodedHistory(), "\(what): the histories differ", sourceLocation: sourceLocation)
        #expect(a.encodedSnapshot(format: .state) == b.encodedSnapshot(format: .state), "\(what): the state snapshots differ",
                sourceLocation: sourceLocation)
        #expect(a.reclaimableBytes == b.reclaimableBytes && a.documentBytes == b.documentBytes, "\(what): the byte counts differ",
                sourceLocation: sourceLocation)
        try a.checkInvariants()
        try b.checkInvariants()
    }

    @Test("the automerge-paper trace's first 4,000 lines typed with typeText: the ids splice returns, the operations it returns read back from the log, the same document and bytes")
    func traceMatchesSplice() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var (typed, item, _) = try Self.board()
        var spliced = typed
        var general = typed
        general.fastPaths = false
        for (k, e) in trace.edits.prefix(4_000).enumerated() {
            let text = String(decoding: e.text, as: UTF8.self)
            let before = typed.operationCount
            let id = try typed.typeText("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: text)
            let op = try spliced.splice("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: text)
            try general.splice("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: text)
            #expect(id == op.id, "line \(k)")
            // What an app sends (LiveDocument reads it from the log): the operation splice returned.
            #expect(try typed.operations(from: before) == [op], "line \(k)")
            if k % 500 == 0 { try Self.expectSame(typed, spliced, "line \(k)") }
        }
        #expect(typed.text("notes", ofItem: item) == spliced.text("notes", ofItem: item))
        try Self.expectSame(typed, spliced, "typeText against splice")
        try Self.expectSame(typed, general, "typeText against the general path")
        // The log's text runs: as many records as splice makes (one-character splices joined).
        #expect(typed.log.records.count == spliced.log.records.count)
    }

    @Test("typeText and splice mixed on one document, two fields of an item and a section, received operations between: the same as splice alone and as the general path")
    func mixedCallsMatch() throws {
        var (typed, item, section) = try Self.board()
        var spliced = typed
        var general = typed
        general.fastPaths = false
        var other = ListDocument(replica: ReplicaID(2))
        #expect(other.receive(typed.operations).isSuccess)
        // (field, on the section, position, delete, insert, through typeText)
        let steps: [(String, Bool, Int, Int, String, Bool)] = [
            ("notes", false, 0, 0, "h", true), ("notes", false, 1, 0, "e", true), ("notes", false, 2, 0, "y", false),
            ("notes", false, 3, 0, "!", true), ("notes", false, 3, 1, "", true), ("notes", false, 2, 1, "", false),
            ("notes", false, 1, 1, "", true), ("notes", false, 1, 0, "llo", true), ("notes", false, 4, 0, " ", true),
            ("memo", false, 0, 0, "m", true), ("memo", false, 1, 0, "e", true), ("notes", false, 5, 0, "w", true),
            ("notes", true, 0, 0, "s", true), ("notes", true, 1, 0, "t", false), ("notes", true, 2, 0, "u", true),
            ("notes", false, 6, 0, "o", true), ("notes", false, 7, 0, "r", true), ("notes", false, 0, 2, "", true),
            ("notes", false, 0, 1, "", true), ("notes", false, 0, 0, "é", true), ("notes", false, 1, 0, "🙂", true),
            ("notes", false, 2, 0, "x", true), ("notes", false, 3, 0, "y", true),
        ]
        for (k, (name, onSection, at, delete, insert, viaType)) in steps.enumerated() {
            let target: RecordTarget = onSection ? .section(section) : .item(item)
            if viaType {
                try typed.typeText(name, of: target, at: at, delete: delete, insert: insert)
            } else {
                try typed.splice(name, of: target, at: at, delete: delete, insert: insert)
            }
            try spliced.splice(name, of: target, at: at, delete: delete, insert: insert)
            try general.splice(name, of: target, at: at, delete: delete, insert: insert)
            if k == 4 || k == 15 {
                // Another replica's keystroke comes in between: the splice run stops (the log grew).
                let op = try other.splice("notes", ofItem: item, at: 0, insert: "o")
                for i in [0, 1, 2] {
                    var d = [typed, spliced, general][i]
                    #expect(d.receive([op]).isSuccess)
                    if i == 0 { typed = d } else if i == 1 { spliced = d } else { general = d }
                }
            }
            try Self.expectSame(typed, spliced, "step \(k)")
        }
        try Self.expectSame(typed, general, "against the general path")
        #expect(typed.text("notes", ofItem: item) == spliced.text("notes", ofItem: item))
        #expect(typed.text("memo", ofItem: item) == "me")
        #expect(typed.text("notes", ofSection: section) == "stu")
    }

    @Test("typeText refuses what splice refuses, with the same error, and changes nothing")
    func refusalsMatch() throws {
        var (typed, item, section) = try Self.board()
        try typed.typeText("notes", ofItem: item, at: 0, insert: "abc")
        var spliced = typed
        let before = typed
        let cases: [(String, RecordTarget, Int, Int, String)] = [
            ("notes", .item(item), 4, 0, "x"), ("notes", .item(item), 2, 2, ""), ("notes", .item(item), -1, 0, "x"),
            ("notes", .item(item), 0, 0, ""), ("notes", .section(section), 1, 0, "x"),
            ("notes", .item(ItemID(OpID(counter: 99, replica: ReplicaID(9)))), 0, 0, "x"),
        ]
        for (name, target, at, delete, insert) in cases {
            let a = Result { () throws(ListError) in try typed.typeText(name, of: target, at: at, delete: delete, insert: insert) }
            let b = Result { () throws(ListError) in try spliced.splice(name, of: target, at: at, delete: delete, insert: insert) }
            #expect(a.map { _ in true } == b.map { _ in true }, "\(name) \(target) \(at) \(delete) \(insert)")
            guard case .failure = a else { continue }
            #expect(typed.operationCount == before.operationCount)
        }
        #expect(typed.text("notes", ofItem: item) == "abc")
        #expect(typed.encodedState() == before.encodedState())
    }

    @Test("a one-character splice extends the log's text run only while the run is the log's last record: after a paste, another field, a received operation or the general path it starts or finds its run as splice does")
    func logRunFollowsTheLog() throws {
        var (typed, item, _) = try Self.board()
        var general = typed
        general.fastPaths = false
        func both(_ edit: (inout ListDocument) throws(ListError) -> Void) throws {
            try edit(&typed)
            try edit(&general)
        }
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 0, insert: "ab") }   // a paste: its own record
        #expect(typed.localTextRun?.logRun == -1)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 2, insert: "c") }    // starts a run
        let run = try #require(typed.localTextRun?.logRun)
        #expect(run >= 0)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 3, insert: "d") }    // extends it
        #expect(typed.localTextRun?.logRun == run)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 4, delete: 0, insert: "XY") }  // a paste
        #expect(typed.localTextRun?.logRun == -1)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 5, delete: 1) }      // a new run
        #expect((typed.localTextRun?.logRun ?? -1) > run)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 4, delete: 1) }      // backspace: extends
        try both { d throws(ListError) in try d.typeText("memo", ofItem: item, at: 0, insert: "m") }     // another field
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 4, insert: "e") }    // general path again
        #expect(typed.localTextRun?.logRun == -1)
        try both { d throws(ListError) in try d.typeText("notes", ofItem: item, at: 5, insert: "f") }
        #expect(typed.localTextRun.map { $0.logRun >= 0 } == true)
        try Self.expectSame(typed, general, "against the general path")
        #expect(typed.text("notes", ofItem: item) == "abcdef")
    }
    @Test("a one-character removal looks for its character's slot run where the last removal found its own (TextSlots.id(of:hint:)): every hint, right, stale or out of range, gives the id a search gives")
    func removedRunHintGivesTheSearchedID() throws {
        // A text of several slot runs: typed at the end, then in the middle, then at the start.
        var (typed, item, _) = try Self.board()
        for (at, text) in [(0, "abcdef"), (3, "XYZ"), (0, "12"), (11, "!?")] {
            try typed.typeText("notes", ofItem: item, at: at, insert: text)
        }
        let text = try #require(typed.records[item.opID]?["notes"]?.text)
        #expect(text.slots.runs.count == 4)
        let n = text.slotCount
        for raw in 0 ..< Int32(n) {
            let lv = LocalVersion(raw)
            let searched = text.slots.id(of: lv)
            for start: Int32 in [.min, -1, 0, 1, 2, 3, 4, 99, .max] {
                var hint = start
                #expect(text.slots.id(of: lv, hint: &hint) == searched, "character \(raw), hint \(start)")
                #expect(Int(hint) == text.slots.runIndex(of: lv), "character \(raw), hint \(start)")
            }
        }
    }

    @Test("backspaces and forward deletes across slot runs, in two fields, around a paste and a received operation: typeText's removals name the characters splice and the general path name")
    func removalsAcrossRunsMatch() throws {
        var (typed, item, _) = try Self.board()
        var general = typed
        general.fastPaths = false
        var other = ListDocument(replica: ReplicaID(2))
        #expect(other.receive(typed.operations).isSuccess)
        func both(_ name: String = "notes", at: Int, delete: Int = 0, insert: String = "") throws {
            try typed.typeText(name, ofItem: item, at: at, delete: delete, insert: insert)
            try general.splice(name, ofItem: item, at: at, delete: delete, insert: insert)
        }
        // Four slot runs: "12abcXYZdef!?"
        for (at, text) in [(0, "abcdef"), (3, "XYZ"), (0, "12"), (11, "!?")] { try both(at: at, insert: text) }
        try both("memo", at: 0, insert: "memo")
        // Backspaces from the end across three runs (`!?`, `def`, `XYZ`), the hint changing run each time.
        for at in stride(from: 12, through: 6, by: -1) { try both(at: at, delete: 1) }
        // Into another field and back: the run's hint is that field's, or none.
        try both("memo", at: 3, delete: 1)
        try both(at: 1, delete: 1)
        // Forward deletes at the start, across `12` into `abc`.
        for _ in 0 ..< 3 { try both(at: 0, delete: 1) }
        // A paste between, then a backspace in the pasted run and one before it.
        try both(at: 1, insert: "pasted")
        try both(at: 6, delete: 1)
        try both(at: 1, delete: 1)
        // A received operation stops the splice run; the next removal starts one.
        let op = try other.splice("notes", ofItem: item, at: 0, insert: "o")
        #expect(typed.receive([op]).isSuccess && general.receive([op]).isSuccess)
        try both(at: 2, delete: 1)
        try both(at: 1, delete: 1)
        // Two runs whose local versions follow one another but whose ids do not (an edit of
        // another field between): "abc" (characters 0 to 2), then "X" (character 3) typed after
        // "a". Backspaces remove c and b (the first run), then X: the character right after the
        // hint's run, which that run does not hold.
        try both("extra", at: 0, insert: "abc")
        try both("memo", at: 0, insert: "!")
        try both("extra", at: 1, insert: "X")
        for at in [3, 2, 1] { try both("extra", at: at, delete: 1) }
        try Self.expectSame(typed, general, "typeText's removals against the general path")
        #expect(typed.text("notes", ofItem: item) == general.text("notes", ofItem: item))
        #expect(typed.text("memo", ofItem: item) == "!mem")
        #expect(typed.text("extra", ofItem: item) == "a")
    }
}
