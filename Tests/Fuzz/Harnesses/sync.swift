// Sync messages: SyncMessage(decoding:) (Docs/WireFormat.md, the sync protocol's frames).
//
// Properties: no crash; an accepted frame re-encodes to a frame that decodes to the same message.
import Foundation
import ListCRDT
import ListSync

func fuzzSeeds() -> [[UInt8]] {
    let doc = FuzzDocuments.shared()
    var out: [[UInt8]] = [
        SyncMessage.hello(replica: ReplicaID(1), version: doc.version).encoded(),
        SyncMessage.hello(replica: ReplicaID(7), version: VersionVector()).encoded(),
    ]
    out += FuzzDocuments.batches().map { SyncMessage.operations($0).encoded() }
    return out
}

func fuzzOne(_ bytes: [UInt8]) {
    let message: SyncMessage
    do { message = try SyncMessage(decoding: bytes) } catch { return }
    let again: SyncMessage
    do { again = try SyncMessage(decoding: message.encoded()) } catch {
        fuzzFailure("a decoded message re-encodes to bytes that do not decode: \(error)")
    }
    guard again == message else { fuzzFailure("decode(encode(m)) != m") }
}
