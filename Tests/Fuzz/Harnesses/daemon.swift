// The daemon's side of a connection: ServerSession.receive (Docs/Protocol.md, "The server
// connection"), fed a script of frames and driven as DaemonConnection drives it.
//
// The input is a sequence of frames, each `u16 LE length | bytes` (the last one takes what is left
// if it is short). A subscribe is attached, create, listDocuments and status are answered, an
// offered snapshot (`floorSnapshot`, joined from its parts) is refused as a daemon that cannot take
// it refuses it, and the clock moves 1 ms per frame under a small rate limit, so the operations,
// limit, offer and answer paths are reached.
//
// Properties: no crash; a frame that does not decode is answered with exactly one `malformed`
// error and a close, and the session takes nothing more; a frame that decodes never closes the
// session, re-encodes to itself, gives `operations` only for an attached document, and every frame
// the session sends (refusals and answers) decodes.
import Foundation
import ListCRDT
import ListSync

let fuzzDocument = DocumentID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
let fuzzInfo = DocumentInfo(id: fuzzDocument, name: "groceries", epoch: 7, operations: 12)

/// Frames of a script: `u16 LE length | bytes`, repeated.
func frames(_ bytes: [UInt8]) -> [[UInt8]] {
    var input = FuzzInput(bytes)
    var out: [[UInt8]] = []
    while !input.isAtEnd { out.append(input.take(input.u16())) }
    return out
}

/// A script of whole frames.
func script(_ messages: [SyncMessage]) -> [UInt8] {
    messages.flatMap { m -> [UInt8] in
        let f = m.encoded()
        return [UInt8(f.count & 0xff), UInt8(f.count >> 8)] + f
    }
}

func fuzzSeeds() -> [[UInt8]] {
    let doc = FuzzDocuments.shared()
    let v = doc.version
    let batches = FuzzDocuments.batches()
    let snapshot = doc.encodedSnapshot()
    var ranges = PartedRanges()
    ranges.insert(1...3, of: ReplicaID(2))
    ranges.insert(7...7, of: ReplicaID(2))
    return [
        script([.subscribe(document: fuzzDocument, epoch: 7, version: v),
                .operations(document: fuzzDocument, batch: 1, operations: batches[1]),
                .operations(document: fuzzDocument, batch: 0, operations: batches[3]),
                .hello(document: fuzzDocument, version: VersionVector()),
                .presence(document: fuzzDocument, Presence(replica: ReplicaID(2), name: "phone", activity: .dragging(
                    items: [ItemID(OpID(counter: 3, replica: ReplicaID(1)))],
                    to: PresencePlace(section: SectionID(OpID(counter: 1, replica: ReplicaID(1))), after: nil, before: nil)))),
                .unsubscribe(document: fuzzDocument),
                .operations(document: fuzzDocument, batch: 2, operations: batches[2])]),
        script([.create(request: 1, name: "list", sections: ["a", "b"], id: nil, epoch: 0),
                .create(request: 2, name: "copy", sections: [], id: fuzzDocument, epoch: 7),
                .listDocuments(request: 3, after: nil),
                .listDocuments(request: 3, after: fuzzDocument),
                .status(request: 4)]),
        script([.subscribe(document: fuzzDocument, epoch: 0, version: VersionVector())]
               + Array(repeating: .operations(document: fuzzDocument, batch: 5, operations: batches[4]), count: 5)),
        script([.ack(document: fuzzDocument, batch: 1, version: v),
                .error(request: 0, document: nil, code: .malformed, text: "bad"),
                .status(request: 1)]),
        // A peer daemon's link that offers its snapshot (version 11): subscribed with the flag,
        // `seen` as a relay, then the snapshot in parts; an offer without the flag after a
        // subscribe that does not say it.
        script([.subscribe(document: fuzzDocument, epoch: 7, version: v, learnsParted: true, offersFloor: true),
                .seen(document: fuzzDocument, replica: ReplicaID(50), version: v, role: .relay),
                .floorSnapshot(document: fuzzDocument, part: Array(snapshot.prefix(snapshot.count / 2)), more: true),
                .floorSnapshot(document: fuzzDocument, part: Array(snapshot.dropFirst(snapshot.count / 2)), more: false),
                .subscribe(document: fuzzDocument, epoch: 7, version: v),
                .floorSnapshot(document: fuzzDocument, part: snapshot, more: false)]),
        // A device's edits made again (version 10), and a parted announcement a daemon never takes.
        script([.subscribe(document: fuzzDocument, epoch: 7, version: v, learnsParted: true),
                .seen(document: fuzzDocument, replica: ReplicaID(2), version: v, role: .device),
                .remade(document: fuzzDocument, ranges: ranges),
                .parted(document: fuzzDocument, ranges: ranges)]),
    ]
}

func fuzzOne(_ bytes: [UInt8]) {
    var session = ServerSession(maxFrame: 1024, rateLimit: RateLimit(batchesPerSecond: 100, burst: 3), now: 0)
    for (k, frame) in frames(bytes).enumerated() {
        let now = UInt64(k) * 1_000_000
        let attachedBefore = session.attachedDocuments
        let actions = session.receive(frame, now: now)
        let message: SyncMessage
        do { message = try SyncMessage(decoding: frame) } catch {
            guard actions.count == 2, case let .send(reply) = actions[0], case .close = actions[1],
                  case .error(0, nil, .malformed, _)? = try? SyncMessage(decoding: reply), session.isClosed else {
                fuzzFailure("a frame that does not decode: \(actions)")
            }
            guard session.receive(frame, now: now).isEmpty else { fuzzFailure("a closed session acted") }
            return
        }
        guard let again = try? SyncMessage(decoding: message.encoded()), again == message else {
            fuzzFailure("decode(encode(m)) != m for \(message)")
        }
        for action in actions {
            switch action {
            case .close: fuzzFailure("a message that decodes closed the session: \(message)")
            case let .send(f):
                guard case .error? = try? SyncMessage(decoding: f) else { fuzzFailure("the session sent a frame that is not an error") }
            case let .operations(doc, _, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("operations for a document not attached") }
            case let .subscribe(doc, _, _, _):
                session.attached(doc)
            case let .create(request, _, _, id, epoch):
                answers(session.created(request: request, document: id ?? fuzzDocument, epoch: max(epoch, 1)))
            case let .listDocuments(request, _):
                answers(session.documents(request: request, Array(repeating: fuzzInfo, count: Int(request % 20))))
                answers(session.announce(fuzzInfo))
            case let .status(request):
                answers(session.status(request: request, json: String(repeating: "{}", count: Int(request % 700))))
            case let .presence(doc, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("presence for a document not attached") }
            case let .seen(doc, _, _, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("seen for a document not attached") }
            case let .stability(doc, _, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("stability for a document not attached") }
            case let .remade(doc, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("remade for a document not attached") }
            case let .floorSnapshot(doc, _):
                guard attachedBefore.contains(doc) else { fuzzFailure("an offered snapshot for a document not attached") }
                // As DaemonConnection does when the copy cannot take it: the peer is told.
                answers(session.floorRefused(doc, text: "the offered snapshot was not taken"))
            case let .destroy(request, doc, epoch):
                answers(session.destroyed(request: request, document: doc, epoch: epoch))
            case let .rename(request, doc, name):
                guard DocumentInfo.nameProblem(name) == nil else { fuzzFailure("a rename with a name that is refused") }
                answers(session.renamed(request: request, DocumentInfo(id: doc, name: name, epoch: 1, operations: 0)))
            case .unsubscribe, .hello, .rateLimited:
                break
            }
        }
    }
}

/// Every frame of an answer decodes.
func answers(_ actions: [ServerSession.Action]) {
    for case let .send(f) in actions {
        guard (try? SyncMessage(decoding: f)) != nil else { fuzzFailure("an answer does not decode") }
    }
}
