import Foundation
import Testing
import ListCRDT
import ListSyncTestSupport

/// Gives each replica every operation of the other; they must then agree and pass their
/// invariants (the undo suites' exchange between `mine` and `theirs`).
func exchange(_ a: inout ListDocument, _ b: inout ListDocument, sourceLocation: SourceLocation = #_sourceLocation) throws {
    a.merge(b)
    b.merge(a)
    #expect(convergenceFailures([a, b]) == [], sourceLocation: sourceLocation)
    try a.checkInvariants()
    try b.checkInvariants()
}
