// Snapshots: ListDocument(snapshot:replica:) (Docs/WireFormat.md, "Snapshots"), whatever format
// versions that initializer reads (v1, and v2 once it exists).
//
// Properties: no crash; a loaded document passes checkInvariants(); its own snapshot loads again
// into the same state and version.
import Foundation
@testable import ListCRDT

func fuzzSeeds() -> [[UInt8]] {
    let doc = FuzzDocuments.shared()
    var edited = doc
    var history = ListDocument(replica: ReplicaID(3))
    _ = history.receive(FuzzDocuments.batches().flatMap { $0 })
    _ = try? edited.insertItem(at: IndexPath(item: 0, section: 0), value: Data("new".utf8))
    return [ListDocument(replica: ReplicaID(1)).encodedSnapshot(), doc.encodedSnapshot(), edited.encodedSnapshot(),
            history.encodedSnapshot()]
}

func fuzzOne(_ bytes: [UInt8]) {
    let doc: ListDocument
    do { doc = try ListDocument(snapshot: bytes, replica: ReplicaID(42)) } catch { return }
    do { try doc.checkInvariants() } catch { fuzzFailure("\(error)") }
    let again: ListDocument
    do { again = try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(42)) } catch {
        fuzzFailure("a loaded document's own snapshot does not load: \(error)")
    }
    guard again.encodedState() == doc.encodedState(), again.version == doc.version else {
        fuzzFailure("a snapshot's reload differs")
    }
}
