import Foundation
import Testing
@testable import ListCRDT

@Suite struct SmokeTests {
    @Test func insertMoveDelete() throws {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c"], ["x"]])
        #expect(doc.rows == [["a", "b", "c"], ["x"]])
        try doc.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0))
        #expect(doc.rows == [["b", "c", "a"], ["x"]])
        try doc.moveItem(from: IndexPath(item: 1, section: 0), to: IndexPath(item: 1, section: 1))
        #expect(doc.rows == [["b", "a"], ["x", "c"]])
        try doc.deleteItem(at: IndexPath(item: 0, section: 1))
        #expect(doc.rows == [["b", "a"], ["c"]])
        try doc.moveSection(from: 0, to: 1)
        #expect(doc.rows == [["c"], ["b", "a"]])
        try doc.checkInvariants()
        var other = doc.fork(as: 2)
        #expect(other.rows == doc.rows)
        try other.checkInvariants()
        try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z"))
        doc.merge(other)
        #expect(doc.rows == [["z", "c"], ["b", "a"]])
        expectConverged([doc, other])
    }
}
