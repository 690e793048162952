import Foundation
import Testing
import ListSyncTestSupport
import ListCRDT
import ListTable

/// `ListDocument.typeText` (the typing API that returns the operation's id, not the operation)
/// inside `LiveDocument.edit`, against `splice`: an app gets the same operations to send, the
/// same change sets, the same undo groups and the same document.
@Suite("typeText in a LiveDocument: the same operations, change sets and undo as splice")
struct TypeTextLiveTests {
    static let traces = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Benchmarks/Traces")

    /// A board of one section and one card, with a fixed wall clock (so that both copies stamp
    /// their writes alike), in a LiveDocument that records undo.
    static func live() throws -> (LiveDocument, ItemID) {
        var doc = try ListDocument.make(1, sections: [["card"]])
        doc.wallClock = .fixed(1_800_000_000_000)
        let item = try doc.itemID(at: IndexPath(item: 0, section: 0))
        return (LiveDocument(doc), item)
    }

    /// The two results agree: the operations to send, the change set, and the documents after.
    static func expectSame<A, B>(_ a: LiveDocument.Edit<A>, _ b: LiveDocument.Edit<B>, _ x: LiveDocument, _ y: LiveDocument,
                                 _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.operations == b.operations, "\(what): the operations differ", sourceLocation: sourceLocation)
        #expect(a.changes == b.changes, "\(what): the change sets differ", sourceLocation: sourceLocation)
        #expect(x.document.encodedState() == y.document.encodedState(), "\(what): the documents differ",
                sourceLocation: sourceLocation)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test("the automerge-paper trace's first 1,500 lines, then undo of every group (typing groups end where the caret jumps) and redo: typeText and splice give the same operations, change sets, groups and bytes")
    func traceWithUndo() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: Self.traces)
        let (typed, item) = try Self.live()
        let (spliced, _) = try Self.live()
        for (k, e) in trace.edits.prefix(1_500).enumerated() {
            let text = String(decoding: e.text, as: UTF8.self)
            let a = try typed.edit { doc in try doc.typeText("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: text) }
            let b = try spliced.edit { doc in try doc.splice("notes", ofItem: item, at: e.position, delete: e.deleteCount, insert: text) }
            #expect(a.operations.map(\.id) == [a.result], "line \(k)")
            Self.expectSame(a, b, typed, spliced, "line \(k)")
        }
        #expect(typed.document.text("notes", ofItem: item) == spliced.document.text("notes", ofItem: item))
        #expect(typed.undoCount == spliced.undoCount && typed.undoCount > 1)
        var undone = 0
        while typed.canUndo {
            let a = try typed.undo(), b = try spliced.undo()
            #expect(a.result == b.result)
            Self.expectSame(a, b, typed, spliced, "undo \(undone)")
            undone += 1
        }
        #expect(!spliced.canUndo)
        #expect(typed.document.text("notes", ofItem: item) == nil, "the field was absent before the first splice")
        for k in 0 ..< 3 {
            Self.expectSame(try typed.redo(), try spliced.redo(), typed, spliced, "redo \(k)")
        }
        // Typing again after undo and redo, through both APIs.
        for (k, ch) in "again".enumerated() {
            let a = try typed.edit { doc in try doc.typeText("notes", ofItem: item, at: k, insert: String(ch)) }
            let b = try spliced.edit { doc in try doc.splice("notes", ofItem: item, at: k, insert: String(ch)) }
            Self.expectSame(a, b, typed, spliced, "typing again \(k)")
        }
        #expect(typed.document.encodedHistory() == spliced.document.encodedHistory())
        #expect(typed.document.encodedSnapshot(format: .state) == spliced.document.encodedSnapshot(format: .state))
    }
}
