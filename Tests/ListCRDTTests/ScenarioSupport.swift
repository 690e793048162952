import Foundation
import Testing
@testable import ListCRDT

/// Helpers shared by the SEMANTICS scenario suites: each suite conforms and gets them.
protocol ScenarioSupport {}

extension ScenarioSupport {
    func ip(_ section: Int, _ row: Int) -> IndexPath { IndexPath(item: row, section: section) }

    /// Invariants, and every visible identity shown exactly once.
    func valid(_ docs: ListDocument..., sourceLocation: SourceLocation = #_sourceLocation) throws {
        for d in docs {
            try d.checkInvariants()
            let snap = d.snapshot()
            let ids = snap.sections.flatMap { $0.items.map(\.id) }
            #expect(Set(ids).count == ids.count, "an item is shown twice", sourceLocation: sourceLocation)
            #expect(Set(snap.sections.map(\.id)).count == snap.sections.count, "a section is shown twice",
                    sourceLocation: sourceLocation)
            #expect(d.totalItemCount == ids.count, sourceLocation: sourceLocation)
            #expect(d.sectionCount == snap.sections.count, sourceLocation: sourceLocation)
        }
    }

    /// Applies `edit` to both documents (one taking the short paths of local runs, one with
    /// `fastPaths` off) and checks they make the same operation and state.
    func same(_ fast: inout ListDocument, _ general: inout ListDocument, _ what: String,
              _ edit: (inout ListDocument) throws -> ListOperation?,
              sourceLocation: SourceLocation = #_sourceLocation) throws -> ListOperation? {
        let a = try edit(&fast)
        let b = try edit(&general)
        #expect(a == b, "\(what): the operations differ", sourceLocation: sourceLocation)
        let sameState = fast.encodedState() == general.encodedState()
        #expect(sameState, "\(what): the states differ", sourceLocation: sourceLocation)
        return a
    }

    /// A remote operation reaches both documents of a path comparison (`times` times: duplicates
    /// must change nothing); their states must stay equal.
    func receiveOnBoth(_ op: ListOperation, _ fast: inout ListDocument, _ general: inout ListDocument,
                       _ what: String, times: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for _ in 0..<times {
            _ = try fast.receive(op)
            _ = try general.receive(op)
        }
        let sameState = fast.encodedState() == general.encodedState()
        #expect(sameState, "\(what): the states differ after a remote operation", sourceLocation: sourceLocation)
    }

    /// The end of a seeded path comparison: the same log, frontier and version on both paths, both
    /// sound, and the peer and the fast document converge once they exchange everything.
    func expectSameEnd(_ fast: inout ListDocument, _ general: ListDocument, peer: inout ListDocument, _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(fast.operations == general.operations, "\(what)", sourceLocation: sourceLocation)
        #expect(fast.frontier == general.frontier && fast.version == general.version, "\(what)",
                sourceLocation: sourceLocation)
        try valid(fast, general, sourceLocation: sourceLocation)
        peer.receive(fast.operations)
        fast.receive(peer.operations)
        expectConverged([fast, peer], sourceLocation: sourceLocation)
    }

    func permutations<T>(_ a: [T]) -> [[T]] {
        guard a.count > 1 else { return [a] }
        var out: [[T]] = []
        for i in a.indices {
            var rest = a
            let x = rest.remove(at: i)
            for p in permutations(rest) { out.append([x] + p) }
        }
        return out
    }

    /// A fresh replica that saw `base` receives `ops` in every order (buffering the ones that come
    /// before their causes), checking invariants after every step; every order must end with
    /// `expected` rows (and section values, if given).
    @discardableResult
    func everyOrder(_ base: ListDocument, _ ops: [ListOperation], expected: [[String]],
                            sections: [String]? = nil,
                            sourceLocation: SourceLocation = #_sourceLocation) throws -> [ListDocument] {
        var out: [ListDocument] = []
        for order in permutations(ops) {
            var doc = base.fork(as: 99)
            for op in order {
                try doc.receive(op)
                try valid(doc, sourceLocation: sourceLocation)
            }
            #expect(doc.pendingCount == 0, sourceLocation: sourceLocation)
            #expect(doc.rows == expected, "order \(order.map(\.id))", sourceLocation: sourceLocation)
            if let sections { #expect(doc.sectionValues == sections, "order \(order.map(\.id))", sourceLocation: sourceLocation) }
            out.append(doc)
        }
        expectConverged(out, sourceLocation: sourceLocation)
        return out
    }

    func deliver(_ ops: ListOperation..., to doc: inout ListDocument,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        for op in ops {
            let outcome = try doc.receive(op)
            #expect(outcome == .applied(woken: 1), sourceLocation: sourceLocation)
            try valid(doc, sourceLocation: sourceLocation)
        }
    }
}

/// Everything observable about a document that a refused or duplicate operation must not change.
struct DocumentFingerprint: Equatable {
    var state: [UInt8]
    var snapshot: ListSnapshot
    var operationCount: Int
    var version: VersionVector
    var frontier: Frontier
    var pending: Int
    init(_ d: ListDocument) {
        state = d.encodedState()
        snapshot = d.snapshot()
        operationCount = d.operationCount
        version = d.version
        frontier = d.frontier
        pending = d.pendingCount
    }
}
