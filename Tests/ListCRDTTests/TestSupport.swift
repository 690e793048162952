import Foundation
import Testing
@testable import ListCRDT
@_exported import ListSyncTestSupport
@_exported import ListSync

extension Data {
    /// UTF-8 bytes of a string: test values are short strings.
    init(_ s: String) { self = Data(s.utf8) }
    var string: String { String(decoding: self, as: UTF8.self) }
}

extension ListDocument {
    /// The document as values: one array of item value strings per section.
    var rows: [[String]] { snapshot().sections.map { $0.items.map(\.value.string) } }
    /// Section values, in order.
    var sectionValues: [String] { snapshot().sections.map(\.value.string) }
    /// Every visible item value, flattened.
    var flat: [String] { rows.flatMap { $0 } }

    /// A document with one replica id and the given sections and rows already in place.
    static func make(_ replica: UInt64, sections: [[String]], names: [String]? = nil) throws -> ListDocument {
        var doc = ListDocument(replica: ReplicaID(replica))
        for (s, rows) in sections.enumerated() {
            try doc.insertSection(at: s, value: Data(names?[s] ?? "S\(s)"))
            for (r, v) in rows.enumerated() { try doc.insertItem(at: IndexPath(item: r, section: s), value: Data(v)) }
        }
        return doc
    }

    /// A copy that edits as another replica, with the same state (for scenarios that fork).
    func fork(as replica: UInt64) -> ListDocument {
        var other = ListDocument(replica: ReplicaID(replica), maxValueSize: maxValueSize)
        other.receive(operations)
        return other
    }

    /// Applies every operation of `other` this document has not seen (in `other`'s order).
    mutating func merge(_ other: ListDocument) {
        let errors = receive(other.operations(since: version)).refused
        precondition(errors.isEmpty, "merge failed: \(errors)")
    }

    /// Finds a visible item by value (test documents use unique values).
    func item(_ value: String) -> ItemID? {
        snapshot().sections.lazy.flatMap(\.items).first { $0.value.string == value }?.id
    }
}

/// Asserts that documents show the same thing and have the same encoded state.
func expectConverged(_ docs: [ListDocument], sourceLocation: SourceLocation = #_sourceLocation) {
    guard let first = docs.first else { return }
    for d in docs.dropFirst() {
        #expect(d.snapshot() == first.snapshot(), sourceLocation: sourceLocation)
        #expect(d.encodedState() == first.encodedState(), sourceLocation: sourceLocation)
    }
}

/// The directory holding the editing traces.
let tracesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Benchmarks/Traces")
