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
        let shared = ListDocument(replica: ReplicaID(99))
        let count = try replayFuzzCorpus("ops") { input in
            let bytes = input.rest()
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
        #expect(count > 0)
    }

    @Test("snapshots: ListDocument(snapshot:replica:), checkInvariants")
    func snapshots() throws {
        let count = try replayFuzzCorpus("snapshot") { input in
            guard let doc = try? ListDocument(snapshot: input.rest(), replica: ReplicaID(42)) else { return }
            try doc.checkInvariants()
        }
        #expect(count > 0)
    }
}
