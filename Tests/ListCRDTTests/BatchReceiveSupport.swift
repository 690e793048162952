import Foundation
import Testing
@testable import ListCRDT

/// Helpers of the suites that compare receiving a batch (with the run fast paths) with receiving
/// one operation at a time through the general path.
extension ScenarioSupport {
    /// `ops` as one batch with the fast paths, and one at a time without them.
    @discardableResult
    func bothWays(_ base: ListDocument, _ ops: [ListOperation], sourceLocation: SourceLocation = #_sourceLocation)
        throws -> ListDocument {
        let (batch, single) = Self.receivedBothWays(base, ops, sourceLocation: sourceLocation)
        let sameState = batch.encodedState() == single.encodedState()
        #expect(sameState, "the states differ", sourceLocation: sourceLocation)
        #expect(batch.operations == single.operations, sourceLocation: sourceLocation)
        #expect(batch.version == single.version, sourceLocation: sourceLocation)
        #expect(batch.frontier == single.frontier, sourceLocation: sourceLocation)
        #expect(batch.pendingOperations == single.pendingOperations, sourceLocation: sourceLocation)
        #expect(batch.rows == single.rows, sourceLocation: sourceLocation)
        try valid(batch, single, sourceLocation: sourceLocation)
        return batch
    }

    /// `ops` received by a copy of `base` as one array (the fast paths on) and, by another, one at
    /// a time without the fast paths; their reports must be equal. Returns both copies.
    static func receivedBothWays(_ base: ListDocument, _ ops: [ListOperation], sourceLocation: SourceLocation)
        -> (batch: ListDocument, single: ListDocument) {
        var batch = base.fork(as: 90)
        var single = base.fork(as: 90)
        single.fastPaths = false
        let batchReport = batch.receive(ops)
        var singleReport = ReceiveReport()
        for op in ops {
            do { singleReport.add(try single.receive(op)) } catch { singleReport.refused.append(error) }
        }
        #expect(batchReport == singleReport, "\(batchReport) against \(singleReport)", sourceLocation: sourceLocation)
        return (batch, single)
    }

    /// A replica types `text` at `row` of `section`, one item per character.
    func type(_ doc: inout ListDocument, _ text: String, at row: Int, section: Int = 0) throws -> [ListOperation] {
        var ops: [ListOperation] = []
        for (k, c) in text.enumerated() {
            ops.append(try doc.insertItem(at: ip(section, row + k), value: Data(String(c))))
        }
        return ops
    }
}
