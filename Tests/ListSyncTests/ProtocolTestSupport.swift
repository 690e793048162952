import Foundation
import Testing
import ListCRDT
import ListSync
import ListSyncTestSupport

// Shared by the tests of the protocol's state machines (ClientSessionTests, ServerSessionTests,
// DocumentCoreTests, PeerSessionTests, SyncMessageTests): documents, message look-ups, the byte
// stream split at every offset, and a client, a server connection and a document core wired
// together with no socket (Docs/Protocol.md).

/// Documents and operations for the tests.
enum Fixture {
    static let document = DocumentID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
    static let other = DocumentID(high: 0x1111_1111_1111_1111, low: 0x2222_2222_2222_2222)

    /// A document of replica `replica` with one section and `items` items ("r<replica>-<i>").
    static func typed(_ items: Int, replica: UInt64 = 1) -> ListDocument {
        var doc = ListDocument(replica: ReplicaID(replica))
        do {
            try doc.insertSection(at: 0, value: Data("section"))
            for i in 0..<items {
                try doc.insertItem(at: IndexPath(item: i, section: 0), value: Data("r\(replica)-\(i)"))
            }
        } catch {
            Issue.record("building a test document: \(error)")
        }
        return doc
    }

    /// `count` new item inserts made on a copy of `base` by replica `replica` (a copy that holds
    /// `base`'s operations), with values of `size` bytes.
    static func edits(on base: ListDocument, replica: UInt64, count: Int, size: Int = 8) -> [ListOperation] {
        var doc = base.fork(as: replica)
        var ops: [ListOperation] = []
        do {
            for i in 0..<count {
                let value = Data(String(repeating: Character(UnicodeScalar(UInt8(97 + i % 26))), count: size))
                ops.append(try doc.insertItem(at: IndexPath(item: 0, section: 0), value: value))
            }
        } catch {
            Issue.record("making test edits: \(error)")
        }
        return ops
    }
}

/// The message a frame holds (nil if it does not decode).
func decoded(_ frame: [UInt8]) -> SyncMessage? { try? SyncMessage(decoding: frame) }

extension Array where Element == ClientSession.Action {
    /// The frames to send, decoded.
    var sent: [SyncMessage] { compactMap { if case let .send(f) = $0 { return decoded(f) }; return nil } }
}

extension Array where Element == ServerSession.Action {
    /// The frames to send, decoded.
    var sent: [SyncMessage] { compactMap { if case let .send(f) = $0 { return decoded(f) }; return nil } }
    /// The actions that are not frames to send.
    var requests: [ServerSession.Action] { filter { if case .send = $0 { return false }; return true } }
}

extension Array where Element == PeerSession.Action {
    /// The frames to send, decoded.
    var sent: [SyncMessage] { compactMap { if case let .send(f) = $0 { return decoded(f) }; return nil } }
    /// The actions that are not frames to send.
    var requests: [PeerSession.Action] { filter { if case .send = $0 { return false }; return true } }
}

extension Array where Element == DocumentCore.Action {
    /// The frames sent to `subscriber`, in order.
    func frames(to subscriber: SubscriberID) -> [[UInt8]] {
        compactMap { if case let .send(to, f) = $0, to == subscriber { return f }; return nil }
    }
    /// The messages sent to `subscriber`, decoded, in order.
    func sent(to subscriber: SubscriberID) -> [SyncMessage] { frames(to: subscriber).compactMap(decoded) }
    /// The operations of the `operations` messages sent to `subscriber`, in order.
    func operations(to subscriber: SubscriberID) -> [ListOperation] {
        sent(to: subscriber).flatMap { m -> [ListOperation] in
            if case let .operations(_, _, ops) = m { return ops }
            return []
        }
    }
    /// The appends asked for: (ticket, operations).
    var appends: [(ticket: UInt64, operations: [ListOperation])] {
        compactMap { if case let .append(t, ops, _) = $0 { return (t, ops) }; return nil }
    }
}

// MARK: The byte stream

/// The transport's byte stream for whole frames, and a reader that cuts it back into frames
/// (Docs/Transport.md, "Frames": `u32 BE length | body`, here before sealing). The state machines
/// take whole frames; a transport hands them over however the bytes arrived, which these helpers
/// stand in for.
enum ByteStream {
    /// `frames` as one stream.
    static func bytes(_ frames: [[UInt8]]) -> [UInt8] {
        frames.flatMap { f in
            [UInt8(truncatingIfNeeded: f.count >> 24), UInt8(truncatingIfNeeded: f.count >> 16),
             UInt8(truncatingIfNeeded: f.count >> 8), UInt8(truncatingIfNeeded: f.count)] + f
        }
    }

    /// The frames of a stream that arrives in `pieces`, each frame as soon as its last byte is in.
    static func frames(_ pieces: [ArraySlice<UInt8>]) -> [[UInt8]] {
        var buffer: [UInt8] = [], out: [[UInt8]] = []
        for piece in pieces {
            buffer += piece
            while buffer.count >= 4 {
                let n = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
                guard buffer.count >= 4 + n else { break }
                out.append(Array(buffer[4..<4 + n]))
                buffer.removeFirst(4 + n)
            }
        }
        return out
    }

    /// The stream of `frames` cut in two at every offset, and cut into single bytes.
    static func splits(_ frames: [[UInt8]]) -> [[ArraySlice<UInt8>]] {
        let s = bytes(frames)
        var out = (0...s.count).map { k in [s[..<k], s[k...]] }
        out.append(s.indices.map { s[$0...$0] })
        return out
    }
}

/// Feeds `frames` to copies of `machine`: once whole, then as read back from the stream split at
/// every offset and one byte at a time. Each split must give back the same frames, and the machine
/// the same actions.
func expectSameAtEverySplit<Machine, Action: Equatable>(
    _ machine: Machine, _ frames: [[UInt8]], feed: (inout Machine, [UInt8]) -> [Action],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var whole = machine
    let expected = frames.flatMap { feed(&whole, $0) }
    var failures = 0
    for pieces in ByteStream.splits(frames) where failures < 3 {
        let read = ByteStream.frames(pieces)
        var copy = machine
        let got = read.flatMap { feed(&copy, $0) }
        if read != frames || got != expected {
            failures += 1
            Issue.record("split \(pieces.map(\.count)): \(read.count) frames, actions \(got) instead of \(expected)",
                         sourceLocation: sourceLocation)
        }
    }
}

/// Every strict prefix of `frame` is refused by the decoder with a typed error: a part of a
/// message is never taken for a whole one.
func expectEveryPrefixRefused(_ frame: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    for k in 0..<frame.count {
        do {
            let m = try SyncMessage(decoding: Array(frame[..<k]))
            Issue.record("the first \(k) of \(frame.count) bytes decode as \(m)", sourceLocation: sourceLocation)
            return
        } catch {
            // SyncProtocolError: typed by the signature.
        }
    }
}

// MARK: A client, its server connection and a document core, wired

/// A ``ClientSession``, the daemon's ``ServerSession`` of its connection and one ``DocumentCore``,
/// wired as the drivers wire them (frames whole and in order), with appends made durable only when
/// the test says so and a clock the test moves.
struct Wired {
    var client: ClientSession
    var server: ServerSession
    var core: DocumentCore
    /// The client's connection, as the core's subscriber.
    let connection = SubscriberID(1)
    var now: UInt64 = 0
    /// Appends asked for and not yet durable, in order.
    var appending: [(ticket: UInt64, operations: [ListOperation])] = []
    /// Frames on their way to the client.
    var toClient: [[UInt8]] = []
    /// Frames the core sent to its other subscribers.
    var toOthers: [(SubscriberID, [UInt8])] = []
    /// Everything the client told its driver, but frames to send.
    var results: [ClientSession.Action] = []
    /// What `listDocuments` lists (besides the core's document) and the status the daemon reports.
    var otherDocuments: [DocumentInfo] = []
    var statusJSON = "{\"ok\":true}"

    init(core: DocumentCore, maxFrame: Int = 1 << 20, timeout: UInt64 = 1_000) {
        client = ClientSession(maxFrame: maxFrame, timeout: timeout)
        server = ServerSession(maxFrame: maxFrame, rateLimit: nil, now: 0)
        self.core = core
    }

    /// Runs what the client asked for, then delivers to it until nothing moves.
    mutating func run(_ actions: [ClientSession.Action]) {
        fromClient(actions)
        deliver()
    }

    /// Runs what the client asked for, delivering nothing to it yet (its answers wait in
    /// ``toClient`` for ``deliver()``).
    mutating func sendOnly(_ actions: [ClientSession.Action]) {
        fromClient(actions)
    }

    /// Delivers the frames on their way to the client, and what they cause, until nothing moves.
    mutating func deliver() {
        while !toClient.isEmpty {
            let f = toClient.removeFirst()
            fromClient(client.receive(f, now: now))
        }
    }

    /// The appends of these tickets are durable (all pending ones when nil).
    mutating func durable(_ tickets: [UInt64]? = nil) {
        for t in tickets ?? appending.map(\.ticket) {
            appending.removeAll { $0.ticket == t }
            fromCore(core.durable(ticket: t))
        }
        deliver()
    }

    private mutating func fromClient(_ actions: [ClientSession.Action]) {
        for a in actions {
            if case let .send(f) = a { fromServer(server.receive(f, now: now)) } else { results.append(a) }
        }
    }

    private mutating func fromServer(_ actions: [ServerSession.Action]) {
        for a in actions {
            switch a {
            case let .send(f): toClient.append(f)
            case .close, .rateLimited: results.append(.close(reason: "server: \(a)"))
            case let .subscribe(doc, epoch, version, learnsParted):
                guard doc == core.id else {
                    fromServer(server.subscribeFailed(doc, code: .unknownDocument, text: "unknown document \(doc)"))
                    continue
                }
                fromCore(core.subscribe(connection, epoch: epoch, version: version, learnsParted: learnsParted))
                if core.isSubscribed(connection) { server.attached(doc) }
            case let .unsubscribe(doc):
                if doc == core.id { core.unsubscribe(connection) }
            case let .operations(_, batch, ops):
                fromCore(core.receive(ops, batch: batch, from: connection))
            case let .hello(_, version):
                fromCore(core.hello(connection, version: version))
            case let .seen(_, replica, version, role):
                _ = core.seen(connection, replica: replica, version: version, role: role, now: 0)
            case let .remade(_, ranges):
                _ = core.remade(connection, ranges: ranges, now: 0)
            case let .stability(_, from, entries):
                _ = core.peerStability(connection, from: from, entries: entries, now: 0)
            case let .floorSnapshot(doc, _):
                // A device's session never offers one; a peer's is driven in PeerFloorOfferTests.
                fromServer(server.floorRefused(doc, text: "not taken here"))
            case let .create(request, name, _, id, epoch):
                if name == "one too many" {
                    fromServer(server.failed(request: request, document: id, code: .limit, text: "the documents limit"))
                } else {
                    fromServer(server.created(request: request, document: id ?? Fixture.other, epoch: epoch == 0 ? 9 : epoch))
                }
            case let .listDocuments(request, after):
                let all = ([DocumentInfo(id: core.id, name: core.name, epoch: core.epoch, operations: core.document.operationCount)]
                           + otherDocuments).sorted { $0.id < $1.id }
                fromServer(server.documents(request: request, all.filter { after == nil || $0.id > after! }))
            case let .status(request):
                fromServer(server.status(request: request, json: statusJSON))
            case let .presence(_, presence):
                fromCore(core.presence(presence, from: connection))
            case let .destroy(request, doc, _):
                guard doc == core.id else {
                    fromServer(server.failed(request: request, document: doc, code: .unknownDocument, text: "unknown document \(doc)"))
                    continue
                }
                fromCore(core.destroy(reason: "destroyed"))
                server.detached(doc)
                fromServer(server.destroyed(request: request, document: doc, epoch: core.epoch))
            case let .rename(request, doc, name):
                guard doc == core.id else {
                    fromServer(server.failed(request: request, document: doc, code: .unknownDocument, text: "unknown document \(doc)"))
                    continue
                }
                core.name = name
                fromServer(server.renamed(request: request, DocumentInfo(id: doc, name: name, epoch: core.epoch,
                                                                         operations: core.document.operationCount)))
            }
        }
    }

    private mutating func fromCore(_ actions: [DocumentCore.Action]) {
        for a in actions {
            switch a {
            case let .append(t, ops, _): appending.append((t, ops))
            case let .send(to, f): if to == connection { toClient.append(f) } else { toOthers.append((to, f)) }
            case let .awaitRoom(to): fromCore(core.roomAvailable(to))
            case let .close(to, reason): if to == connection { results.append(.close(reason: reason)) }
            }
        }
    }
}
