// Daemon messages: DaemonMessage(decoding:) (Docs/Daemon.md, "Protocol").
//
// Properties: no crash; an accepted message re-encodes to bytes that decode to the same message.
import Foundation
import ListCRDT
import ListStore
import ListSyncServer

func fuzzSeeds() -> [[UInt8]] {
    let doc = FuzzDocuments.shared()
    let id = DocumentID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
    let v = doc.version
    let messages: [DaemonMessage] = [
        .subscribe(document: id, epoch: 1, version: v),
        .subscribed(document: id, name: "groceries", epoch: 1, version: v),
        .unsubscribe(document: id),
        .operations(document: id, batch: 3, operations: doc.operations),
        .operations(document: id, batch: 0, operations: FuzzDocuments.batches()[3]),
        .ack(document: id, batch: 3, version: v),
        .hello(document: id, version: v),
        .create(request: 1, name: "list", sections: ["a", "b"], id: id, epoch: 2),
        .create(request: 2, name: "", sections: [], id: nil, epoch: 0),
        .created(request: 1, document: id, epoch: 2),
        .listDocuments(request: 4),
        .documents(request: 4, [DocumentInfo(id: id, name: "list", epoch: 2, operations: 12)]),
        .status(request: 5),
        .statusReport(request: 5, json: "{\"documents\":1}"),
        .error(request: 6, document: id, code: .epochMismatch, text: "re-attach"),
        .error(request: 7, document: nil, code: .malformed, text: "bad"),
    ]
    return messages.map { $0.encoded() }
}

func fuzzOne(_ bytes: [UInt8]) {
    let message: DaemonMessage
    do { message = try DaemonMessage(decoding: bytes) } catch { return }
    let again: DaemonMessage
    do { again = try DaemonMessage(decoding: message.encoded()) } catch {
        fuzzFailure("a decoded message re-encodes to bytes that do not decode: \(error)")
    }
    guard again == message else { fuzzFailure("decode(encode(m)) != m") }
}
