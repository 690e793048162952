// Op batches: ListOperation.decode(_:) and ListDocument.receive(encoded:) (Docs/WireFormat.md §2).
//
// Properties checked on every input, into an empty document and into a small shared one:
// - decode and receive(encoded:) agree: both refuse, or both accept with the same report, state,
//   version and buffer (receive(encoded:) is documented as exactly receive(decode(bytes)));
// - a refused batch leaves the document exactly as it was;
// - after a batch is received, checkInvariants() passes;
// - an accepted batch round-trips: decode(encode(ops)) == ops.
import Foundation
@testable import ListCRDT

/// Every input is also received into this document (built once).
let sharedDocument: ListDocument = FuzzDocuments.shared()

func fuzzSeeds() -> [[UInt8]] {
    FuzzDocuments.batches().map { ListOperation.encode($0) } + [[], [ListOperation.wireFormatVersion]]
}

func fuzzOne(_ bytes: [UInt8]) {
    let decoded: [ListOperation]?
    do { decoded = try ListOperation.decode(bytes) } catch { decoded = nil }
    if let ops = decoded {
        let again: [ListOperation]
        do { again = try ListOperation.decode(ListOperation.encode(ops)) } catch {
            fuzzFailure("re-encoded batch does not decode: \(error)")
        }
        guard again == ops else { fuzzFailure("decode(encode(ops)) != ops") }
    }
    for start in [ListDocument(replica: ReplicaID(99)), sharedDocument] {
        var viaOps = start
        var viaBytes = start
        let report: ReceiveReport
        do {
            report = try viaBytes.receive(encoded: bytes)
        } catch {
            guard decoded == nil else { fuzzFailure("decode accepted, receive(encoded:) threw \(error)") }
            guard viaBytes.encodedState() == start.encodedState(), viaBytes.version == start.version,
                  viaBytes.pendingCount == start.pendingCount else {
                fuzzFailure("a refused batch changed the document")
            }
            continue
        }
        guard let ops = decoded else { fuzzFailure("decode refused, receive(encoded:) accepted") }
        let expected = viaOps.receive(ops)
        guard report == expected else { fuzzFailure("reports differ: \(report) vs \(expected)") }
        guard viaBytes.encodedState() == viaOps.encodedState(), viaBytes.version == viaOps.version,
              viaBytes.pendingCount == viaOps.pendingCount, viaBytes.operationCount == viaOps.operationCount else {
            fuzzFailure("receive(encoded:) and receive(decode) reached different documents")
        }
        do {
            try viaOps.checkInvariants()
            try viaBytes.checkInvariants()
        } catch {
            fuzzFailure("\(error)")
        }
    }
}
