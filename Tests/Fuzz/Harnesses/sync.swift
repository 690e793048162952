// Sync messages: SyncMessage(decoding:) (Docs/Protocol.md, "Encoding"), and the same bytes as a
// frame from the daemon to a ClientSession.
//
// Properties: no crash; an accepted frame re-encodes to a frame that decodes to the same message;
// a client session waiting for a request, a subscription and an edit never closes on a frame that
// decodes, and closes on one that does not, failing each of the three once.
import Foundation
import ListCRDT
import ListSync

let fuzzDocument = DocumentID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)

/// A client session waiting for the status (request 1), a subscription to `fuzzDocument` and an
/// edit (number 2, sent as batch 3).
let waitingClient: ClientSession = {
    var s = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
    _ = s.request(.status, now: 0)
    _ = s.subscribe(fuzzDocument, epoch: 0, version: VersionVector(), now: 0)
    _ = s.send(fuzzDocument, Array(FuzzDocuments.shared().operations.prefix(2)), now: 0)
    return s
}()

func fuzzSeeds() -> [[UInt8]] {
    let doc = FuzzDocuments.shared()
    let v = doc.version
    let info = DocumentInfo(id: fuzzDocument, name: "groceries", epoch: 7, operations: doc.operationCount)
    var messages: [SyncMessage] = [
        .subscribe(document: fuzzDocument, epoch: 7, version: v),
        .subscribed(document: fuzzDocument, name: "groceries", epoch: 7, version: v),
        .synced(document: fuzzDocument, version: v),
        .unsubscribe(document: fuzzDocument),
        .ack(document: fuzzDocument, batch: 3, version: v),
        .hello(document: fuzzDocument, version: VersionVector()),
        .presence(document: fuzzDocument, Presence(replica: ReplicaID(2), name: "phone", activity: .selecting(items: []))),
        .create(request: 1, name: "list", sections: ["a", "b"], id: nil, epoch: 0),
        .create(request: 2, name: "copy", sections: [], id: fuzzDocument, epoch: 7),
        .created(request: 1, document: fuzzDocument, epoch: 7),
        .listDocuments(request: 1, after: nil),
        .listDocuments(request: 1, after: fuzzDocument),
        .documents(request: 1, [info, info], more: true),
        .documents(request: 0, [info], more: false),
        .status(request: 1),
        .statusReport(request: 1, part: Array("{\"documents\":".utf8), more: true),
        .statusReport(request: 1, part: Array("1}".utf8), more: false),
        .error(request: 3, document: fuzzDocument, code: .refused, text: "equivocation"),
        .error(request: 0, document: fuzzDocument, code: .epochMismatch, text: "re-attach"),
        .error(request: 0, document: nil, code: .malformed, text: "bad"),
    ]
    for (k, batch) in FuzzDocuments.batches().enumerated() {
        messages.append(.operations(document: fuzzDocument, batch: UInt64(k), operations: batch))
    }
    return messages.map { $0.encoded() }
}

func fuzzOne(_ bytes: [UInt8]) {
    var client = waitingClient
    let actions = client.receive(bytes, now: 1)
    let message: SyncMessage
    do { message = try SyncMessage(decoding: bytes) } catch {
        guard actions.count == 4, case .close? = actions.first, client.isClosed, client.waitingCount == 0 else {
            fuzzFailure("a frame that does not decode: \(actions) (closed: \(client.isClosed))")
        }
        guard client.receive(bytes, now: 2).isEmpty else { fuzzFailure("a closed client session acted") }
        return
    }
    // The daemon ends a device's access (its credential revoked or expired): the session closes
    // (ClientSession, issue 27), fails what waits, and acts no more. Any other message that
    // decodes never closes it.
    if case let .error(_, _, code, _) = message, code == .revoked || code == .expired {
        guard client.isClosed, client.waitingCount == 0, actions.contains(where: { if case .close = $0 { true } else { false } }) else {
            fuzzFailure("access ended (\(code)) but the client session did not close: \(actions)")
        }
        guard client.receive(bytes, now: 2).isEmpty else { fuzzFailure("a closed client session acted") }
    } else {
        for case .close in actions { fuzzFailure("a message that decodes closed the client session: \(message)") }
    }
    let again: SyncMessage
    do { again = try SyncMessage(decoding: message.encoded()) } catch {
        fuzzFailure("a decoded message re-encodes to bytes that do not decode: \(error)")
    }
    guard again == message else { fuzzFailure("decode(encode(m)) != m") }
}
