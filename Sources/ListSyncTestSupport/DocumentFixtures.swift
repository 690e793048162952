import Foundation
import ListCRDT

// Document helpers shared by the test targets (ListCRDTTests, ListTableTests): test values are
// short unique strings, documents are built from and read back as arrays of them.

extension Data {
    /// UTF-8 bytes of a string: test values are short strings.
    public init(_ s: String) { self = Data(s.utf8) }
    /// The bytes read as UTF-8.
    public var string: String { String(decoding: self, as: UTF8.self) }
}

extension ListDocument {
    /// The document as values: one array of item value strings per section.
    public var rows: [[String]] { snapshot().sections.map { $0.items.map(\.value.string) } }
    /// Section values, in order.
    public var sectionValues: [String] { snapshot().sections.map(\.value.string) }
    /// Every visible item value, flattened.
    public var flat: [String] { rows.flatMap { $0 } }

    /// A document with one replica id and the given sections and rows already in place.
    public static func make(_ replica: UInt64, sections: [[String]], names: [String]? = nil) throws -> ListDocument {
        var doc = ListDocument(replica: ReplicaID(replica))
        for (s, rows) in sections.enumerated() {
            try doc.insertSection(at: s, value: Data(names?[s] ?? "S\(s)"))
            for (r, v) in rows.enumerated() { try doc.insertItem(at: IndexPath(item: r, section: s), value: Data(v)) }
        }
        return doc
    }

    /// A copy that edits as another replica, with the same state (for scenarios that fork).
    /// A compacted document's copy is loaded from its snapshot (its log starts at the floor).
    public func fork(as replica: UInt64) -> ListDocument {
        if historyFloor != nil {
            do { return try ListDocument(snapshot: encodedSnapshot(), replica: ReplicaID(replica)) } catch {
                preconditionFailure("a document's own snapshot did not load: \(error)")
            }
        }
        var other = ListDocument(replica: ReplicaID(replica), maxValueSize: maxValueSize)
        other.receive(operations)
        return other
    }

    /// Applies every operation of `other` this document has not seen (in `other`'s order).
    public mutating func merge(_ other: ListDocument) {
        let errors = receive(other.operations(since: version)).refused
        precondition(errors.isEmpty, "merge failed: \(errors)")
    }

    /// Finds a visible item by value (test documents use unique values).
    public func item(_ value: String) -> ItemID? {
        snapshot().sections.lazy.flatMap(\.items).first { $0.value.string == value }?.id
    }
}

/// How documents that should have converged differ from the first one: empty when they all show the
/// same thing and have the same encoded state. Tests check `convergenceFailures(docs) == []`.
public func convergenceFailures(_ docs: [ListDocument]) -> [String] {
    guard let first = docs.first else { return [] }
    var out: [String] = []
    for (k, d) in docs.enumerated().dropFirst() {
        if d.snapshot() != first.snapshot() {
            out.append(d.rows != first.rows ? "document \(k) shows \(d.rows), document 0 shows \(first.rows)"
                                            : "document \(k) shows the same rows with other identities or section values")
        }
        if d.encodedState() != first.encodedState() { out.append("document \(k) has a different encoded state") }
    }
    return out
}
