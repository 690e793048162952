import Foundation
import Testing
@testable import ListCRDT
@_exported import ListSyncTestSupport
@_exported import ListSync

// The document helpers (`Data("…")`, `rows`, `make`, `fork`, `merge`, `item`, …) and
// `convergenceFailures` are shared with ListTableTests: Sources/ListSyncTestSupport/DocumentFixtures.swift.

/// Asserts that documents show the same thing and have the same encoded state.
func expectConverged(_ docs: [ListDocument], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(convergenceFailures(docs) == [], sourceLocation: sourceLocation)
}

/// The directory holding the editing traces.
let tracesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Benchmarks/Traces")
