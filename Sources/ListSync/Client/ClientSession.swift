import ListCRDT

/// Why a client's request, subscription or edit failed.
public enum ClientSessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The daemon refused it.
    case refused(SyncErrorCode, String)
    /// No answer before the deadline.
    case timeout(String)
    /// The connection closed before the answer came.
    case disconnected
    /// The daemon sent a message this client cannot read; the connection is closed.
    case malformed(String)

    public var description: String {
        switch self {
        case let .refused(code, text): return "\(code): \(text)"
        case let .timeout(what): return "no answer from the daemon for \(what)"
        case .disconnected: return "the connection to the daemon closed"
        case let .malformed(why): return "the daemon sent a message this client cannot read (\(why))"
        }
    }
}

/// A client's side of one connection to a daemon, as a state machine with no I/O: calls and frames
/// in, frames and results out (Docs/Protocol.md, "Roles").
///
/// Requests (`status`, the document list, `create`), subscriptions and edits each get a number and a
/// deadline: every one ends in exactly one result, an answer or an error, and ``tick(now:)`` fails
/// those past their deadline. An edit is sent as frames of at most ``maxFrame`` bytes, each with a
/// batch number of its own, and is done only when every frame is acknowledged (durable on the daemon).
/// The document list is fetched page by page and the status part by part, however large.
///
/// The session never reads a document: its driver applies ``Action/operations(_:_:)``, answers
/// ``Action/subscribed(_:name:epoch:version:)`` by sending what the daemon lacks (``send(_:_:now:)``),
/// and owns the clock (`now` in nanoseconds of any monotonic clock).
public struct ClientSession: Sendable {
    /// A request to the daemon.
    public enum Request: Hashable, Sendable {
        /// The daemon's status (a JSON object).
        case status
        /// Every document (all pages).
        case documents
        /// A new document with these sections; `id` and `epoch` when copying a peer's document.
        case create(name: String, sections: [String], id: DocumentID? = nil, epoch: UInt64 = 0)
        /// Destroy a document (at `epoch`; 0: whatever epoch it is at). Needs the daemon's key.
        case destroy(DocumentID, epoch: UInt64 = 0)
        /// Rename a document. Needs a credential that may write it (or the daemon's key).
        case rename(DocumentID, name: String)
    }

    /// The answer to a ``Request``.
    public enum Answer: Hashable, Sendable {
        case status(String)
        case documents([DocumentInfo])
        case created(DocumentID, epoch: UInt64)
        /// The document is destroyed (now or before); the epoch it had.
        case destroyed(DocumentID, epoch: UInt64)
        /// The document is renamed: its info with the new name.
        case renamed(DocumentInfo)
    }

    /// What the session tells its driver, in order.
    public enum Action: Equatable, Sendable {
        /// Send this frame to the daemon.
        case send([UInt8])
        /// Close the connection (the daemon sent what this client cannot read).
        case close(reason: String)
        /// Request `number` ended.
        case answered(UInt64, Result<Answer, ClientSessionError>)
        /// A subscription is live: the daemon holds `version` durable at `epoch`. Send it what it lacks.
        case subscribed(DocumentID, name: String, epoch: UInt64, version: VersionVector)
        /// A subscription failed (unknown document, another epoch, a deadline), or a live one ended:
        /// the document was reset (``SyncErrorCode/epochMismatch``) or destroyed
        /// (``SyncErrorCode/destroyed``) on the daemon.
        case subscribeFailed(DocumentID, ClientSessionError)
        /// Operations from the daemon: apply them.
        case operations(DocumentID, [ListOperation])
        /// A catch-up ended: the daemon sent everything it held durable up to `version`.
        case synced(DocumentID, VersionVector)
        /// Edit `number` ended: every frame durable and applied on the daemon (its version then), or
        /// the first error (with `refused`, the edit's other operations were applied).
        case editDone(UInt64, Result<VersionVector, ClientSessionError>)
        /// The daemon announced new documents (this connection listed them before).
        case announced([DocumentInfo])
        /// The daemon destroyed a document (this connection listed them before): it is gone from
        /// the list, at the epoch it had.
        case withdrawn(DocumentID, epoch: UInt64)
        /// An error about a document that answers nothing waiting (a refused batch sent with no
        /// acknowledgement asked).
        case documentError(DocumentID, SyncErrorCode, String)
        /// The daemon ended this credential's access (``SyncErrorCode/revoked`` or
        /// ``SyncErrorCode/expired``): the session is closed; do not connect again with it.
        case accessEnded(SyncErrorCode, String)
        /// Another replica's presence in a live document (a drag in progress, a selection, or its
        /// end): ephemeral, hand it to the document's presence board.
        case presence(DocumentID, Presence)
        /// The catch-up of a live document is a snapshot (its version was behind the daemon's
        /// compaction floor, Docs/Protocol.md, "Compaction"): these bytes (format 3) are the
        /// document; load them in place of the copy, then make again what the daemon lacks
        /// (unsent edits) as new operations. Live operations and `synced` follow.
        case snapshot(DocumentID, [UInt8])
        /// The daemon compacted a live document at this version, its floor (sent only after a
        /// `seen` with ``SeenRole/compactingDevice``): a copy whose version is exactly it may
        /// compact there too.
        case stable(DocumentID, VersionVector)
        /// A peer daemon's stability table of a live document (the daemon's side of a peer link,
        /// Docs/Protocol.md, "Compaction"): hand it to this daemon's copy.
        case stability(DocumentID, from: ReplicaID, entries: [ReplicaID: PeerStability.Entry])
        /// What the document's daemons parted in merges back, as far as this daemon knows (sent
        /// only to a subscription that asked, ``asksForParted``): hand it to the copy's machine
        /// (``DeviceClientMachine/learnedParted(_:document:prepare:askable:)``).
        case parted(DocumentID, PartedRanges)
    }

    /// The most bytes of one snapshot the session assembles (over it: the connection is closed).
    public static let maxSnapshotBytes = 1 << 30
    /// The least time between two `seen` reports of one document, in nanoseconds.
    public static let seenInterval: UInt64 = 1_000_000_000
    /// This session's least time between two `seen` reports, in nanoseconds (``seenInterval``
    /// unless its driver says otherwise: the simulator, whose runs last a virtual second or two).
    public var seenReportInterval: UInt64 = ClientSession.seenInterval

    /// The largest frame the connection takes.
    public let maxFrame: Int
    /// How long a request, subscription or edit may wait for its answer, in nanoseconds.
    public let timeout: UInt64
    /// Documents subscribed to (live, waiting for `subscribed`, or waiting to be sent).
    public var subscriptions: [DocumentID] { Array(subscribing.keys) + Array(queued.keys) + Array(live) }
    /// Whether a subscription of `document` waits for its `subscribed` (sent, or waiting to be sent).
    public func isSubscribing(_ document: DocumentID) -> Bool { subscribing[document] != nil || queued[document] != nil }
    /// Requests, subscriptions and edits waiting for an answer.
    public var waitingCount: Int { requests.count + subscribing.count + queued.count + edits.count }
    /// Whether the session is closed (disconnected or fed an unreadable message).
    public private(set) var isClosed = false
    /// What calls on a closed session fail with: why it closed (a revoked credential says so to
    /// every later call, not only to those waiting then).
    private var closedWith = ClientSessionError.disconnected

    private var next: UInt64 = 1
    private var requests: [UInt64: Pending] = [:]
    private var batches: [UInt64: (edit: UInt64, deadline: UInt64)] = [:]
    private var edits: [UInt64: Edit] = [:]
    private var subscribing: [DocumentID: UInt64] = [:]
    /// Documents whose `subscribe` on the wire was given up before its answer came (made again,
    /// unsubscribed, or past its deadline). The daemon answers every `subscribe` once
    /// (`subscribed` or an error naming the document), in order; a subscription made while that
    /// answer is due waits for it in ``queued`` and is sent after it, so that one answer can never
    /// be taken for another's (each `subscribed` streams its own catch-up from its own version).
    private var answerDue: Set<DocumentID> = []
    /// Subscriptions waiting for a given-up one's answer before they are sent: epoch, version and
    /// deadline.
    private var queued: [DocumentID: (epoch: UInt64, version: VersionVector, deadline: UInt64)] = [:]
    private var live: Set<DocumentID> = []
    /// What a daemon of an older build refused as malformed (it then closes the connection): the
    /// driver carries it to its next session on the same daemon (``refusedByDaemon``), so that the
    /// client reconnects once, not again and again (Docs/Protocol.md, "Compaction").
    public struct OlderDaemon: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// `seen` (tag 19): ``reportSeen(_:replica:version:role:now:)`` sends nothing.
        public static let seen = OlderDaemon(rawValue: 1)
        /// The role ``SeenRole/compactingDevice``: `seen` says ``SeenRole/device`` instead.
        public static let compactingDevice = OlderDaemon(rawValue: 2)
        /// `stability` (tag 21): a peer link stops relaying its cores' tables.
        public static let stability = OlderDaemon(rawValue: 4)
        /// The role ``SeenRole/liveCopy``: the driver opens its documents without it.
        public static let liveCopy = OlderDaemon(rawValue: 8)
        /// A version-8 `subscribe` asking for `parted` (``asksForParted``): subscriptions do not ask.
        public static let parted = OlderDaemon(rawValue: 16)
        /// `remade` (version 10): ``remade(_:ranges:)`` sends nothing.
        public static let remade = OlderDaemon(rawValue: 32)
        /// A version-11 `subscribe` saying `offersFloor` (``offersFloor``): subscriptions do not
        /// say it, and no `floorSnapshot` is sent.
        public static let floor = OlderDaemon(rawValue: 64)

        /// The refusal's text that names each (the end of an older `ServerSession`'s answer).
        static let refusals: [(OlderDaemon, String)] = [
            (.seen, "unknown message type \(SyncMessage.seenTag)"),
            (.compactingDevice, "seen role \(SeenRole.compactingDevice.rawValue)"),
            (.stability, "unknown message type \(SyncMessage.stabilityTag)"),
            (.liveCopy, "seen role \(SeenRole.liveCopy.rawValue)"),
        ]

        /// Which of them a malformed-message refusal's text names: the end of the text, or, for
        /// a version the daemon does not read, its words ("unsupported sync protocol version 8
        /// (this build speaks 2 to 7)").
        static func refused(_ text: String) -> OlderDaemon? {
            if let (older, _) = refusals.first(where: { text.hasSuffix($0.1) }) { return older }
            if text.contains("unsupported sync protocol version \(SyncMessage.partedVersion) ") { return .parted }
            if text.contains("unsupported sync protocol version \(SyncMessage.remadeVersion) ") { return .remade }
            if text.contains("unsupported sync protocol version \(SyncMessage.floorVersion) ") { return .floor }
            return nil
        }
    }
    /// What the daemon refused, on this session or (set by the driver) an earlier one.
    public var refusedByDaemon: OlderDaemon = []
    /// Whether ``reportSeen(_:replica:version:role:now:)`` sends anything (``OlderDaemon/seen``).
    public var sendsSeen: Bool {
        get { !refusedByDaemon.contains(.seen) }
        set { if newValue { refusedByDaemon.remove(.seen) } else { refusedByDaemon.insert(.seen) } }
    }
    /// Whether `seen` says ``SeenRole/compactingDevice`` as asked (``OlderDaemon/compactingDevice``).
    public var saysCompactingDevice: Bool {
        get { !refusedByDaemon.contains(.compactingDevice) }
        set { if newValue { refusedByDaemon.remove(.compactingDevice) } else { refusedByDaemon.insert(.compactingDevice) } }
    }
    /// Whether subscriptions ask for `parted` (a version-8 `subscribe`; Docs/Protocol.md,
    /// "Compaction"): a device's driver sets it. A daemon of an older build refuses such a
    /// `subscribe` by its version byte and closes the connection; from then on
    /// (``OlderDaemon/parted``, carried by the driver) subscriptions do not ask.
    public var asksForParted = false
    /// Whether the daemon reads `stability` (``OlderDaemon/stability``).
    public var sendsStability: Bool { !refusedByDaemon.contains(.stability) }
    /// Whether subscriptions say `offersFloor` (a version-11 `subscribe`; Docs/Protocol.md,
    /// "Compaction"): a peer link's driver sets it. A daemon of an older build refuses such a
    /// `subscribe` by its version byte and closes the connection; from then on
    /// (``OlderDaemon/floor``, carried by the driver) subscriptions do not say it.
    public var offersFloor = false
    /// Whether the daemon takes `floorSnapshot` on this connection: subscriptions say
    /// `offersFloor` and it has not refused that (a daemon of an older build closes the
    /// connection at the first such `subscribe`, so one that answered any reads version 11).
    public var sendsFloor: Bool { offersFloor && !refusedByDaemon.contains(.floor) }
    /// Snapshot parts received so far, by document.
    private var snapshotParts: [DocumentID: [UInt8]] = [:]
    /// `seen` reports: the last one sent (with when), and the next one waiting for its interval.
    private var seenSent: [DocumentID: (version: VersionVector, at: UInt64)] = [:]
    private var seenDue: [DocumentID: SyncMessage] = [:]

    private struct Pending {
        var request: Request
        var deadline: UInt64
        var pages: [DocumentInfo] = []
        var status: [UInt8] = []
    }

    private struct Edit {
        var frames: Int
        var version = VersionVector()
        var error: ClientSessionError?
        /// What the daemon said it took of its frames refused in part (``TakenInPart``), merged.
        var taken: TakenInPart?
        /// A frame was refused without saying what was taken (an older daemon, another code).
        var takenUnknown = false
    }

    /// A session over a connection whose frames are at most `maxFrame` bytes; `timeout` in nanoseconds.
    public init(maxFrame: Int, timeout: UInt64 = 30_000_000_000) {
        precondition(maxFrame >= 256, "frames of \(maxFrame) bytes are too small")
        self.maxFrame = maxFrame
        self.timeout = timeout
    }

    // MARK: Calls

    /// Sends `request`; its result comes as ``Action/answered(_:_:)`` with the returned number.
    public mutating func request(_ request: Request, now: UInt64) -> (UInt64, [Action]) {
        let n = number()
        guard !isClosed else { return (n, [.answered(n, .failure(closedWith))]) }
        requests[n] = Pending(request: request, deadline: now &+ timeout)
        let message: SyncMessage
        switch request {
        case .status: message = .status(request: n)
        case .documents: message = .listDocuments(request: n, after: nil)
        case let .create(name, sections, id, epoch): message = .create(request: n, name: name, sections: sections, id: id, epoch: epoch)
        case let .destroy(doc, epoch): message = .destroy(request: n, document: doc, epoch: epoch)
        case let .rename(doc, name): message = .rename(request: n, document: doc, name: name)
        }
        return (n, [.send(message.encoded())])
    }

    /// Subscribes to `document` holding `version` at `epoch` (0: nothing held yet). Made while an
    /// earlier subscription of the document waits for its answer, it replaces that one and is sent
    /// once that answer came (dropped), so that every answer is matched to its own subscription.
    public mutating func subscribe(_ document: DocumentID, epoch: UInt64, version: VersionVector, now: UInt64) -> [Action] {
        guard !isClosed else { return [.subscribeFailed(document, closedWith)] }
        live.remove(document)
        forgetLive(document)
        if subscribing.removeValue(forKey: document) != nil { answerDue.insert(document) }
        guard !answerDue.contains(document) else {
            queued[document] = (epoch, version, now &+ timeout)
            return []
        }
        return sendSubscribe(document, epoch: epoch, version: version, deadline: now &+ timeout)
    }

    /// Stops receiving `document`. Sent too while a given-up subscription's answer is due: the
    /// daemon may attach the connection for that one first.
    public mutating func unsubscribe(_ document: DocumentID) -> [Action] {
        guard !isClosed else { return [] }
        let wasQueued = queued.removeValue(forKey: document) != nil
        let waiting = subscribing.removeValue(forKey: document) != nil
        if waiting { answerDue.insert(document) }
        let wasLive = live.remove(document) != nil
        guard wasQueued || waiting || wasLive || answerDue.contains(document) else { return [] }
        forgetLive(document)
        return [.send(SyncMessage.unsubscribe(document: document).encoded())]
    }

    /// Tells the daemon that this device made the edits of its own that `ranges` names again
    /// under new ids (``SyncMessage/remade(document:ranges:)``), on a live document, after its
    /// `seen` (which names the replica the daemon takes the runs of). Nothing to a daemon of an
    /// older build (``OlderDaemon/remade``: it refused the message by its version byte).
    public func remade(_ document: DocumentID, ranges: PartedRanges) -> [Action] {
        guard live.contains(document), !isClosed, !ranges.isEmpty, !refusedByDaemon.contains(.remade) else { return [] }
        return [.send(SyncMessage.remade(document: document, ranges: ranges).encoded())]
    }

    /// Anti-entropy: tells the daemon this client holds `version` of a live document.
    public func hello(_ document: DocumentID, version: VersionVector) -> [Action] {
        guard live.contains(document), !isClosed else { return [] }
        return [.send(SyncMessage.hello(document: document, version: version).encoded())]
    }

    /// Reports that `replica` has seen `version` of a live document
    /// (``SyncMessage/seen(document:replica:version:role:)``), coalesced: sent now if it differs
    /// from the last report and ``seenReportInterval`` has passed since it, otherwise kept and sent by
    /// ``tick(now:)`` (only the latest). Call it after each catch-up and each change.
    public mutating func reportSeen(_ document: DocumentID, replica: ReplicaID, version: VersionVector, role: SeenRole,
                                    now: UInt64) -> [Action] {
        guard live.contains(document), !isClosed, sendsSeen else { return [] }
        let role = role == .compactingDevice && !saysCompactingDevice ? .device : role
        let last = seenSent[document]
        guard last?.version != version else {
            seenDue[document] = nil
            return []
        }
        let message = SyncMessage.seen(document: document, replica: replica, version: version, role: role)
        if let last, now < last.at &+ seenReportInterval {
            seenDue[document] = message
            return []
        }
        seenDue[document] = nil
        seenSent[document] = (version, now)
        return [.send(message.encoded())]
    }

    /// The earliest time a kept `seen` report is due (for the driver's timer), if any.
    public var nextSeenDeadline: UInt64? {
        seenDue.keys.compactMap { seenSent[$0].map { $0.at &+ seenReportInterval } }.min()
    }

    /// Sends `ops` of `document` as one edit: frames with a batch number each. The edit ends with
    /// ``Action/editDone(_:_:)`` (with the returned number) once every frame is answered.
    ///
    /// - Complexity: O(size) to encode.
    public mutating func send(_ document: DocumentID, _ ops: [ListOperation], now: UInt64) -> (UInt64, [Action]) {
        let edit = number()
        guard !isClosed else { return (edit, [.editDone(edit, .failure(closedWith))]) }
        guard !ops.isEmpty else { return (edit, [.editDone(edit, .success(VersionVector()))]) }
        var numbers: [UInt64] = []
        let frames = OperationFrames.split(document, ops[...], maxFrame: maxFrame) { _ in
            let b = self.number()
            numbers.append(b)
            return b
        }
        edits[edit] = Edit(frames: frames.count)
        for b in numbers { batches[b] = (edit, now &+ timeout) }
        return (edit, frames.map { .send($0.frame) })
    }

    /// Sends `ops` with no acknowledgement asked (batch 0): a relay of operations the sender does
    /// not need to track.
    public func push(_ document: DocumentID, _ ops: [ListOperation]) -> [Action] {
        guard !isClosed, !ops.isEmpty else { return [] }
        return OperationFrames.split(document, ops[...], maxFrame: maxFrame).map { .send($0.frame) }
    }

    /// Sends this replica's presence in a live document (not live: nothing is sent, presence is
    /// ephemeral). The daemon relays it to the document's other subscribers, and from the first
    /// one on relays theirs to this connection (Docs/Protocol.md, "Presence"). Coalesce before
    /// calling (``PresenceOutbox``): the daemon drops what exceeds its limit.
    public func publish(_ document: DocumentID, _ presence: Presence) -> [Action] {
        guard live.contains(document), !isClosed else { return [] }
        return [.send(SyncMessage.presence(document: document, presence).encoded())]
    }

    // MARK: Events

    /// One frame from the daemon.
    ///
    /// - Complexity: O(size) to decode.
    public mutating func receive(_ frame: [UInt8], now: UInt64) -> [Action] {
        guard !isClosed else { return [] }
        let message: SyncMessage
        do { message = try SyncMessage(decoding: frame) } catch {
            // An answer a request waits for may be in it: fail everything rather than wait for ever.
            return [.close(reason: "a message from the daemon did not decode")] + fail(.malformed(error.description))
        }
        switch message {
        case let .subscribed(doc, name, epoch, version):
            if answerDue.contains(doc) { return givenUpAnswered(doc) }
            guard subscribing.removeValue(forKey: doc) != nil else { return [] }
            live.insert(doc)
            return [.subscribed(doc, name: name, epoch: epoch, version: version)]
        case let .synced(doc, version):
            return live.contains(doc) ? [.synced(doc, version)] : []
        case let .operations(doc, _, ops):
            return live.contains(doc) && !ops.isEmpty ? [.operations(doc, ops)] : []
        case let .ack(_, batch, version):
            return answerBatch(batch, .success(version))
        case let .created(r, doc, epoch):
            guard requests.removeValue(forKey: r) != nil else { return [] }
            return [.answered(r, .success(.created(doc, epoch: epoch)))]
        case let .destroyed(r, doc, epoch):
            if r == 0 { return [.withdrawn(doc, epoch: epoch)] }
            guard requests.removeValue(forKey: r) != nil else { return [] }
            return [.answered(r, .success(.destroyed(doc, epoch: epoch)))]
        case let .documents(r, list, more):
            if r == 0 { return [.announced(list)] }
            guard var p = requests[r] else { return [] }
            if case let .rename(doc, _) = p.request {
                // A rename's answer: one entry, the renamed document.
                requests[r] = nil
                guard list.count == 1, let info = list.first, info.id == doc, !more else {
                    return [.answered(r, .failure(.malformed("the answer to a rename is not the renamed document")))]
                }
                return [.answered(r, .success(.renamed(info)))]
            }
            p.pages += list
            guard more, let last = list.last else {
                requests[r] = nil
                return [.answered(r, .success(.documents(p.pages)))]
            }
            p.deadline = now &+ timeout
            requests[r] = p
            return [.send(SyncMessage.listDocuments(request: r, after: last.id).encoded())]
        case let .statusReport(r, part, more):
            guard var p = requests[r] else { return [] }
            p.status += part
            guard more else {
                requests[r] = nil
                return [.answered(r, .success(.status(String(decoding: p.status, as: UTF8.self))))]
            }
            p.deadline = now &+ timeout
            requests[r] = p
            return []
        case let .error(r, doc, code, text):
            let e = ClientSessionError.refused(code, text)
            if code == .malformed, doc == nil, let older = OlderDaemon.refused(text) {
                // An older daemon: it closes the connection now; what it refused is not said to
                // it again (a kept `seen` would be: drop it).
                refusedByDaemon.insert(older)
                seenDue = [:]
            }
            if code == .revoked || code == .expired {
                return [.accessEnded(code, text), .close(reason: text)] + fail(e)
            }
            if r != 0, requests.removeValue(forKey: r) != nil { return [.answered(r, .failure(e))] }
            if r != 0, batches[r] != nil { return answerBatch(r, .failure(e)) }
            if let doc, r == 0, Self.subscriptionCodes.contains(code), answerDue.contains(doc) {
                return givenUpAnswered(doc)
            }
            if let doc, Self.subscriptionCodes.contains(code),
               subscribing.removeValue(forKey: doc) != nil || (Self.endsLive.contains(code) && live.remove(doc) != nil) {
                return [.subscribeFailed(doc, e)]
            }
            if let doc { return [.documentError(doc, code, text)] }
            return []
        case let .presence(doc, presence):
            return live.contains(doc) ? [.presence(doc, presence)] : []
        case let .snapshot(doc, part, more):
            guard live.contains(doc) else { return [] }
            var bytes = snapshotParts[doc, default: []]
            guard bytes.count + part.count <= Self.maxSnapshotBytes else {
                return [.close(reason: "a snapshot over \(Self.maxSnapshotBytes) bytes")] + fail(.malformed("a snapshot over \(Self.maxSnapshotBytes) bytes"))
            }
            bytes += part
            guard !more else {
                snapshotParts[doc] = bytes
                return []
            }
            snapshotParts[doc] = nil
            seenSent[doc] = nil
            return [.snapshot(doc, bytes)]
        case let .stable(doc, version):
            return live.contains(doc) ? [.stable(doc, version)] : []
        case let .stability(doc, from, entries):
            return live.contains(doc) ? [.stability(doc, from: from, entries: entries)] : []
        case let .parted(doc, ranges):
            return live.contains(doc) ? [.parted(doc, ranges)] : []
        case .subscribe, .unsubscribe, .hello, .create, .listDocuments, .status, .destroy, .rename, .seen, .remade, .floorSnapshot:
            return []
        }
    }

    /// The clock moved to `now`: requests, subscriptions and edits past their deadline fail.
    public mutating func tick(now: UInt64) -> [Action] {
        var actions: [Action] = []
        for (doc, message) in seenDue.sorted(by: { $0.key < $1.key }) {
            guard case let .seen(_, _, version, _) = message, live.contains(doc) else { seenDue[doc] = nil; continue }
            guard now >= (seenSent[doc]?.at ?? 0) &+ seenReportInterval else { continue }
            seenDue[doc] = nil
            seenSent[doc] = (version, now)
            actions.append(.send(message.encoded()))
        }
        for (r, p) in requests.sorted(by: { $0.key < $1.key }) where p.deadline <= now {
            requests[r] = nil
            actions.append(.answered(r, .failure(.timeout(Self.describe(p.request)))))
        }
        for (doc, deadline) in subscribing.sorted(by: { $0.key < $1.key }) where deadline <= now {
            subscribing[doc] = nil
            answerDue.insert(doc)   // it may still come: the next subscription waits for it
            actions.append(.subscribeFailed(doc, .timeout("the subscription to \(doc)")))
        }
        for (doc, q) in queued.sorted(by: { $0.key < $1.key }) where q.deadline <= now {
            // The answer it waited for never came within a whole deadline: taken as lost, so
            // that the next subscription is sent at once.
            queued[doc] = nil
            answerDue.remove(doc)
            actions.append(.subscribeFailed(doc, .timeout("the subscription to \(doc)")))
        }
        for (b, entry) in batches.sorted(by: { $0.key < $1.key }) where entry.deadline <= now && batches[b] != nil {
            actions += answerBatch(b, .failure(.timeout("the acknowledgement of batch \(b)")))
        }
        return actions
    }

    /// The connection closed: everything waiting fails with ``ClientSessionError/disconnected``.
    public mutating func disconnected() -> [Action] {
        fail(.disconnected)
    }

    // MARK: Internals

    private mutating func sendSubscribe(_ document: DocumentID, epoch: UInt64, version: VersionVector, deadline: UInt64) -> [Action] {
        subscribing[document] = deadline
        let learnsParted = asksForParted && !refusedByDaemon.contains(.parted)
        return [.send(SyncMessage.subscribe(document: document, epoch: epoch, version: version, learnsParted: learnsParted,
                                            offersFloor: sendsFloor).encoded())]
    }

    /// The answer to a given-up subscription of `document` came (dropped): the subscription
    /// waiting for it, if any, is sent now.
    private mutating func givenUpAnswered(_ document: DocumentID) -> [Action] {
        // Nothing makes a document live while an answer is due (only its own answer would).
        assert(!live.contains(document), "\(document) is live while a given-up subscription's answer is due")
        answerDue.remove(document)
        guard let q = queued.removeValue(forKey: document) else { return [] }
        return sendSubscribe(document, epoch: q.epoch, version: q.version, deadline: q.deadline)
    }

    /// Forgets what a subscription was streaming (a part-built snapshot, its `seen` reports).
    private mutating func forgetLive(_ document: DocumentID) {
        snapshotParts[document] = nil
        seenSent[document] = nil
        seenDue[document] = nil
    }

    private mutating func number() -> UInt64 {
        defer { next += 1 }
        return next
    }

    private mutating func answerBatch(_ batch: UInt64, _ result: Result<VersionVector, ClientSessionError>) -> [Action] {
        guard let entry = batches.removeValue(forKey: batch), var edit = edits[entry.edit] else { return [] }
        edit.frames -= 1
        switch result {
        case let .success(v): edit.version.formUnion(v)
        case let .failure(e):
            if edit.error == nil { edit.error = e }
            if case let .refused(code, text) = e, code == .compacted || code == .refused, let taken = TakenInPart(text: text) {
                edit.taken = edit.taken.map { $0.merged(with: taken) } ?? taken
            } else {
                edit.takenUnknown = true
            }
            if case .timeout = e {
                // The rest of the edit cannot be trusted to end on its own: end it now.
                for (b, other) in batches where other.edit == entry.edit { batches[b] = nil }
                edit.frames = 0
            }
        }
        guard edit.frames == 0 else {
            edits[entry.edit] = edit
            return []
        }
        edits[entry.edit] = nil
        if case let .refused(code, text)? = edit.error {
            // The edit's refusal says what the daemon took of all its frames (those acknowledged
            // too), or nothing when one frame did not say.
            var said = TakenInPart.stripped(text)
            if !edit.takenUnknown, var taken = edit.taken {
                taken.version.formUnion(edit.version)
                said = taken.appended(to: said)
            }
            edit.error = .refused(code, said)
        }
        return [.editDone(entry.edit, edit.error.map { .failure($0) } ?? .success(edit.version))]
    }

    private mutating func fail(_ e: ClientSessionError) -> [Action] {
        if !isClosed { closedWith = e }
        isClosed = true
        var actions: [Action] = []
        for r in requests.keys.sorted() { actions.append(.answered(r, .failure(e))) }
        for d in Set(subscribing.keys).union(queued.keys).sorted() { actions.append(.subscribeFailed(d, e)) }
        for id in edits.keys.sorted() { actions.append(.editDone(id, .failure(e))) }
        requests = [:]; subscribing = [:]; answerDue = []; queued = [:]; edits = [:]; batches = [:]; live = []
        snapshotParts = [:]; seenSent = [:]; seenDue = [:]
        return actions
    }

    /// The codes a failed `subscribe` is answered with (request 0, its document). `limit` and
    /// `refused` with request 0 refuse a batch sent with batch 0 (a relayed push), never a
    /// subscription, so they do not end one that waits (Docs/Protocol.md, "Errors").
    private static let subscriptionCodes: Set<SyncErrorCode> = [.unknownDocument, .epochMismatch, .storage, .unsupported, .destroyed]

    /// The codes that end a live subscription (request 0, its document): the document was reset
    /// or destroyed on the daemon.
    private static let endsLive: Set<SyncErrorCode> = [.epochMismatch, .destroyed]

    private static func describe(_ r: Request) -> String {
        switch r {
        case .status: return "the status"
        case .documents: return "the document list"
        case let .create(name, _, _, _): return "creating \(name)"
        case let .destroy(doc, _): return "destroying \(doc)"
        case let .rename(doc, _): return "renaming \(doc)"
        }
    }
}
