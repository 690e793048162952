import Foundation
import ListSyncTestSupport
import Testing
@testable import ListCRDT

/// Replays the libFuzzer corpora and kept crashes of Tests/Fuzz (Docs/Fuzzing.md) through the
/// same calls as the harnesses `ops` and `snapshot`: no input may trap (errors are fine).
@Suite("Fuzz corpus replay: op batches and snapshots")
struct FuzzCorpusReplayTests {
    @Test("op batches: decode, receive(encoded:), receive, checkInvariants")
    func opBatches() throws {
        let inputs = fuzzInputs("ops")
        #expect(!inputs.isEmpty)
        let shared = ListDocument(replica: ReplicaID(99))
        for bytes in inputs {
            let ops = try? ListOperation.decode(bytes)
            var viaBytes = shared, viaOps = shared
            let report = try? viaBytes.receive(encoded: bytes)
            #expect((ops == nil) == (report == nil))
            if let ops {
                #expect(viaOps.receive(ops) == report)
                try viaOps.checkInvariants()
                try viaBytes.checkInvariants()
            }
        }
    }

    @Test("snapshots: ListDocument(snapshot:replica:), checkInvariants")
    func snapshots() throws {
        let inputs = fuzzInputs("snapshot")
        #expect(!inputs.isEmpty)
        for bytes in inputs {
            guard let doc = try? ListDocument(snapshot: bytes, replica: ReplicaID(42)) else { continue }
            try doc.checkInvariants()
        }
    }
}
