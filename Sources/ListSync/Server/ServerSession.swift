import ListCRDT

/// The daemon's side of one connection, as a state machine with no I/O: frames in, requests for
/// the daemon and frames out (Docs/Protocol.md, "Roles").
///
/// It decodes and checks each message (a malformed one gets an `error` and the connection is
/// closed; nobody else notices), refuses what it can decide alone (a batch for a document the
/// connection is not attached to, a batch over the rate limit, a message only a daemon sends), and
/// turns the rest into ``Action``s for its driver, which routes them to the document cores and the
/// registry. It pages `documents` and chunks `statusReport` so that any answer fits in frames.
public struct ServerSession: Sendable {
    /// What the session asks its driver to do, in order.
    public enum Action: Equatable, Sendable {
        /// Send this frame to the connection's peer.
        case send([UInt8])
        /// Close the connection, telling the peer `reason`.
        case close(reason: String)
        /// Attach the connection to a document (``DocumentCore/subscribe(_:epoch:version:ownLink:learnsParted:)``);
        /// call ``attached(_:)`` when it is. `learnsParted`: the subscriber asked for `parted`.
        case subscribe(DocumentID, epoch: UInt64, version: VersionVector, learnsParted: Bool = false)
        /// Detach from a document.
        case unsubscribe(DocumentID)
        /// A batch for an attached document, within the rate limit (``DocumentCore/receive(_:batch:from:)``).
        case operations(DocumentID, batch: UInt64, [ListOperation])
        /// Anti-entropy for an attached document (``DocumentCore/hello(_:version:)``).
        case hello(DocumentID, VersionVector)
        /// Create a document; answer with ``created(request:document:epoch:)`` or ``failed(request:document:code:text:)``.
        case create(request: UInt64, name: String, sections: [String], id: DocumentID?, epoch: UInt64)
        /// Destroy a document (the peer holds the daemon's key); answer with
        /// ``destroyed(request:document:epoch:)`` or ``failed(request:document:code:text:)``.
        case destroy(request: UInt64, document: DocumentID, epoch: UInt64)
        /// Rename a document (the peer may write it; the name is checked); answer with
        /// ``renamed(request:_:)`` or ``failed(request:document:code:text:)``.
        case rename(request: UInt64, document: DocumentID, name: String)
        /// List the documents after `after`; answer with ``documents(request:_:)``.
        case listDocuments(request: UInt64, after: DocumentID?)
        /// Report the status; answer with ``status(request:json:)``.
        case status(request: UInt64)
        /// A batch was refused for the rate limit (`first`: the first time on this connection).
        case rateLimited(first: Bool)
        /// A presence for an attached document, within the presence limit
        /// (``DocumentCore/presence(_:from:)``): relay it, store nothing.
        case presence(DocumentID, Presence)
        /// What the peer has seen of an attached document
        /// (``DocumentCore/seen(_:replica:version:role:now:)``): feeds the document's stability.
        case seen(DocumentID, replica: ReplicaID, version: VersionVector, role: SeenRole)
        /// A peer daemon's stability table of an attached document
        /// (``DocumentCore/peerStability(_:from:entries:now:)``): merge it.
        case stability(DocumentID, from: ReplicaID, entries: [ReplicaID: PeerStability.Entry])
        /// A device's own edits it made again (``DocumentCore/remade(_:ranges:now:)``): the
        /// document names them parted.
        case remade(DocumentID, PartedRanges)
        /// A peer daemon's link offered its daemon's snapshot, whole (the parts of
        /// ``SyncMessage/floorSnapshot(document:part:more:)`` joined), because that daemon refused
        /// for its floor what this copy holds: take it or merge this copy back onto it, as the
        /// daemon's own link takes a peer's snapshot catch-up, or answer ``floorRefused(_:text:)``.
        case floorSnapshot(DocumentID, [UInt8])
    }

    /// The largest frame the connection takes.
    public let maxFrame: Int
    /// Documents the connection is attached to.
    public private(set) var attachedDocuments: Set<DocumentID> = []
    /// The daemon at the other end, once it said so (a `seen` with the relay role, or a
    /// `stability`): the connection is a peer daemon's link, and its later subscriptions are
    /// marked as such at once (``DocumentCore/markRelay(_:daemon:gossips:)``), before anything
    /// it relays arrives on them.
    public private(set) var relayDaemon: ReplicaID?
    /// Whether that link sent a stability table (it reads them: send it this daemon's).
    public private(set) var relayGossips = false
    /// Whether the connection said, in any of the three ways, that it is a peer daemon's link:
    /// a subscription that offers its daemon's snapshot (`offersFloor`: only a link sends it, at
    /// its first subscription, before it relays anything), a `seen` as a relay, or a stability
    /// table; each only with the daemon's key. The driver notes then that its daemon has peers
    /// (Docs/Semantics.md §7, "A daemon with peers keeps the loss"): ``relayDaemon`` alone is
    /// known only from a link's first `seen`, after its first subscription, and a daemon that
    /// only accepts links and lost a stability file in between took itself for one without peers.
    public var isPeerLink: Bool { saidPeerLink || relayDaemon != nil }
    private var saidPeerLink = false
    /// Whether the peer listed the documents: it then hears of every new one.
    public private(set) var followsDocuments = false
    /// Batches refused for the rate limit.
    public private(set) var rateLimitedCount = 0
    /// Whether the connection is closed (after a malformed message): it takes nothing more.
    public private(set) var isClosed = false
    /// What the peer may do (its credential's claims).
    public let access: Access
    /// Presence messages dropped for the presence limit (silently: presence is ephemeral, and the
    /// sender's next refresh carries the latest state).
    public private(set) var presenceDroppedCount = 0
    private var bucket: TokenBucket?
    private var presenceBucket: TokenBucket?
    /// Attached documents whose subscription said `offersFloor` (a peer daemon's link only).
    public private(set) var offeringFloor: Set<DocumentID> = []
    /// `floorSnapshot` parts received so far, by document.
    private var floorParts: [DocumentID: [UInt8]] = [:]

    /// A session for one connection; `rateLimit` nil: no limit; `now` in nanoseconds; `access`:
    /// what the peer's credential allows (``Access/full`` for a holder of the daemon's key);
    /// `presenceLimit`: presence messages a second, all documents together (nil: no limit).
    public init(maxFrame: Int, rateLimit: RateLimit?, now: UInt64, access: Access = .full,
                presenceLimit: RateLimit? = .presence) {
        precondition(maxFrame >= 256, "frames of \(maxFrame) bytes are too small")
        self.maxFrame = maxFrame
        self.access = access
        bucket = rateLimit.map { TokenBucket($0, now: now) }
        presenceBucket = presenceLimit.map { TokenBucket($0, now: now) }
    }

    /// The text of the answer for a document that does not exist, and for one the peer's
    /// credential does not name: the same, so a scope does not reveal which documents exist.
    public static func unknownDocumentText(_ document: DocumentID) -> String { "unknown document \(document)" }

    /// One frame from the peer, at `now` (nanoseconds).
    ///
    /// - Complexity: O(size) to decode.
    public mutating func receive(_ frame: [UInt8], now: UInt64) -> [Action] {
        guard !isClosed else { return [] }
        let message: SyncMessage
        do { message = try SyncMessage(decoding: frame) } catch {
            isClosed = true
            return [.send(SyncMessage.error(request: 0, document: nil, code: .malformed, text: error.description).encoded()),
                    .close(reason: "malformed message")]
        }
        switch message {
        case let .subscribe(doc, epoch, version, learnsParted, offersFloor):
            guard access.allows(doc) else { return [error(0, doc, .unknownDocument, Self.unknownDocumentText(doc))] }
            // Only a peer daemon (the daemon's key) may offer its snapshot: a device's flag is ignored.
            floorParts[doc] = nil
            if offersFloor, !access.isDevice {
                offeringFloor.insert(doc)
                saidPeerLink = true
            } else {
                offeringFloor.remove(doc)
            }
            return [.subscribe(doc, epoch: epoch, version: version, learnsParted: learnsParted)]
        case let .unsubscribe(doc):
            offeringFloor.remove(doc)
            floorParts[doc] = nil
            guard attachedDocuments.remove(doc) != nil else { return [] }
            return [.unsubscribe(doc)]
        case let .operations(doc, batch, ops):
            guard attachedDocuments.contains(doc) else {
                return [error(batch, doc, .unknownDocument, "subscribe to \(doc) before sending its operations")]
            }
            if access.readOnly {
                return [error(batch, doc, .forbidden, "this device's credential is read-only: the edit was refused")]
            }
            if !bucket.allows(now: now), let limit = bucket?.limit {
                rateLimitedCount += 1
                return [.rateLimited(first: rateLimitedCount == 1),
                        error(batch, doc, .limit, "rate limit: over \(Int(limit.rate)) batches a second (bursts of \(Int(limit.burst))); this batch was refused, send it again later")]
            }
            return [.operations(doc, batch: batch, ops)]
        case let .hello(doc, version):
            guard attachedDocuments.contains(doc) else { return [] }
            return [.hello(doc, version)]
        case let .create(request, name, sections, id, epoch):
            guard access.mayCreate else {
                return [error(request, id, .forbidden, "this device's credential does not allow creating documents")]
            }
            // A new list needs a name; a copy of a peer's (with its id) keeps whatever name it has.
            if id == nil, let why = DocumentInfo.nameProblem(name) { return [error(request, nil, .refused, why)] }
            return [.create(request: request, name: name, sections: sections, id: id, epoch: epoch)]
        case let .destroy(request, doc, epoch):
            // Only the daemon's key destroys (Docs/Security.md): a device is told what it would be
            // told of any document out of its scope, or that its credential does not allow it.
            guard access.allows(doc) else { return [error(request, doc, .unknownDocument, Self.unknownDocumentText(doc))] }
            guard !access.isDevice else {
                return [error(request, doc, .forbidden, "destroying a document needs the daemon's key, not a device credential")]
            }
            return [.destroy(request: request, document: doc, epoch: epoch)]
        case let .rename(request, doc, name):
            guard access.allows(doc) else { return [error(request, doc, .unknownDocument, Self.unknownDocumentText(doc))] }
            if access.readOnly {
                return [error(request, doc, .forbidden, "this device's credential is read-only: the rename was refused")]
            }
            if let why = DocumentInfo.nameProblem(name) { return [error(request, doc, .refused, why)] }
            return [.rename(request: request, document: doc, name: name)]
        case let .listDocuments(request, after):
            followsDocuments = true
            return [.listDocuments(request: request, after: after)]
        case let .status(request):
            guard !access.isDevice else {
                return [error(request, nil, .forbidden, "the daemon's status needs the daemon's key, not a device credential")]
            }
            return [.status(request: request)]
        case let .presence(doc, presence):
            // Ephemeral: what is not relayed is dropped without a word, never an error.
            guard attachedDocuments.contains(doc) else { return [] }
            if !presenceBucket.allows(now: now) {
                presenceDroppedCount += 1
                return []
            }
            return [.presence(doc, presence)]
        case let .seen(doc, replica, version, role):
            // No answer, never an error: a report for a document not attached changes nothing.
            guard attachedDocuments.contains(doc) else { return [] }
            // A read-only device sends no operations: it holds stability back only while attached
            // (a live copy already does, and keeps its role: it is answered with the floor).
            if role == .relay, !access.isDevice { relayDaemon = replica }
            return [.seen(doc, replica: replica, version: version, role: access.readOnly && role != .liveCopy ? .live : role)]
        case let .stability(doc, from, entries):
            // Only a peer daemon (the daemon's key) speaks for daemons: a device's table would let
            // it make the daemon compact under its peers. No answer, never an error.
            guard attachedDocuments.contains(doc), !access.isDevice else { return [] }
            relayDaemon = from
            relayGossips = true
            return [.stability(doc, from: from, entries: entries)]
        case let .remade(doc, ranges):
            // No answer, never an error: a read-only device makes nothing, and a document not
            // attached changes nothing.
            guard attachedDocuments.contains(doc), !access.readOnly, !ranges.isEmpty else { return [] }
            return [.remade(doc, ranges)]
        case let .floorSnapshot(doc, part, more):
            return floorSnapshot(doc, part: part, more: more)
        case .subscribed, .synced, .ack, .created, .documents, .statusReport, .error, .destroyed, .snapshot, .stable, .parted:
            return [error(0, nil, .unsupported, "a daemon does not take that message")]
        }
    }

    /// A part of a peer link's offered snapshot (Docs/Protocol.md, "Compaction"; Docs/Semantics.md
    /// §7, "A left-out daemon that only accepts links"). Refused, with an `error`
    /// (request 0) that changes nothing and drops the parts so far: from a device (`forbidden`:
    /// a device must not make the daemon merge back), for a document the connection is not
    /// attached to (`unknownDocument`), on a subscription that did not say `offersFloor` or a
    /// connection that never said it is a peer's link with its `seen` (`unsupported`), or over
    /// ``ClientSession/maxSnapshotBytes`` (`limit`).
    ///
    /// - Complexity: O(size) of the parts so far (joined).
    private mutating func floorSnapshot(_ doc: DocumentID, part: [UInt8], more: Bool) -> [Action] {
        guard !access.isDevice else {
            return [error(0, doc, .forbidden, "only a peer daemon's link offers its snapshot, not a device")]
        }
        guard attachedDocuments.contains(doc) else {
            floorParts[doc] = nil
            return [error(0, doc, .unknownDocument, "subscribe to \(doc) before offering its snapshot")]
        }
        guard offeringFloor.contains(doc), relayDaemon != nil else {
            floorParts[doc] = nil
            return [error(0, doc, .unsupported, "a floorSnapshot needs a peer link's subscription that said offersFloor, and its seen")]
        }
        var bytes = floorParts.removeValue(forKey: doc) ?? []
        guard bytes.count + part.count <= ClientSession.maxSnapshotBytes else {
            return [error(0, doc, .limit, "an offered snapshot over \(ClientSession.maxSnapshotBytes) bytes: not taken")]
        }
        bytes += part
        guard !more else {
            floorParts[doc] = bytes
            return []
        }
        return [.floorSnapshot(doc, bytes)]
    }

    /// The driver could not take an offered snapshot (it does not load, the copy cannot be merged
    /// back onto it, the store failed): the link's peer is told, nothing changed.
    public func floorRefused(_ document: DocumentID, text: String) -> [Action] {
        [error(0, document, .refused, text)]
    }

    // MARK: Answers from the driver

    /// The connection is attached to `document` (its core sent `subscribed`).
    public mutating func attached(_ document: DocumentID) { attachedDocuments.insert(document) }

    /// The connection is no longer attached to `document` (unloaded, or its core cut it off).
    /// What its subscription said (``offeringFloor``) stays: a driver detaches the old
    /// subscription after the new `subscribe` was read.
    public mutating func detached(_ document: DocumentID) {
        attachedDocuments.remove(document)
        floorParts[document] = nil
    }

    /// A subscription the driver could not make (unknown document, storage).
    public func subscribeFailed(_ document: DocumentID, code: SyncErrorCode, text: String) -> [Action] {
        [error(0, document, code, text)]
    }

    /// The answer to a `create`.
    public func created(request: UInt64, document: DocumentID, epoch: UInt64) -> [Action] {
        [.send(SyncMessage.created(request: request, document: document, epoch: epoch).encoded())]
    }

    /// The answer to a `destroy`: the document is gone (now or before), at `epoch`.
    public mutating func destroyed(request: UInt64, document: DocumentID, epoch: UInt64) -> [Action] {
        attachedDocuments.remove(document)
        return [.send(SyncMessage.destroyed(request: request, document: document, epoch: epoch).encoded())]
    }

    /// The answer to a `rename`: the document's info with its new name (a one-entry `documents`
    /// page with the request's number).
    public func renamed(request: UInt64, _ info: DocumentInfo) -> [Action] {
        [.send(SyncMessage.documents(request: request, [info], more: false).encoded())]
    }

    /// A request that failed.
    public func failed(request: UInt64, document: DocumentID?, code: SyncErrorCode, text: String) -> [Action] {
        [error(request, document, code, text)]
    }

    /// The answer to `listDocuments`: the first page of `list` (the documents after the one asked
    /// for, ordered by id) that fits in a frame, with `more` set when the rest did not fit.
    ///
    /// - Complexity: O(k) for the k documents of the page.
    public func documents(request: UInt64, _ list: [DocumentInfo]) -> [Action] {
        let list = access.documents == nil ? list : list.filter { access.allows($0.id) }
        let budget = maxFrame - 64
        var size = 0, count = 0
        for d in list {
            var w = WireWriter()
            w.documentInfo(d)
            guard size + w.bytes.count <= budget else { break }
            size += w.bytes.count
            count += 1
        }
        // A single entry always fits: names are at most 64 KiB, frames at least 256 bytes after the
        // handshake's 1 MiB default; a smaller frame limit with a huge name still makes progress.
        if count == 0, !list.isEmpty { count = 1 }
        let page = Array(list.prefix(count))
        return [.send(SyncMessage.documents(request: request, page, more: count < list.count).encoded())]
    }

    /// Tells a connection that listed the documents about a new one, or a renamed one (request 0).
    public func announce(_ info: DocumentInfo) -> [Action] {
        guard followsDocuments, access.allows(info.id) else { return [] }
        return [.send(SyncMessage.documents(request: 0, [info], more: false).encoded())]
    }

    /// Tells a connection that listed the documents that one was destroyed (`destroyed` with
    /// request 0): it is gone from the list, and its id is not used again.
    public func announceDestroyed(_ document: DocumentID, epoch: UInt64) -> [Action] {
        guard followsDocuments, access.allows(document) else { return [] }
        return [.send(SyncMessage.destroyed(request: 0, document: document, epoch: epoch).encoded())]
    }

    /// The answer to `status`: `json` in as many parts as frames need.
    ///
    /// - Complexity: O(size).
    public func status(request: UInt64, json: String) -> [Action] {
        let bytes = Array(json.utf8)
        let part = max(maxFrame - 32, 1)
        var actions: [Action] = []
        var start = 0
        repeat {
            let end = min(start + part, bytes.count)
            actions.append(.send(SyncMessage.statusReport(request: request, part: Array(bytes[start..<end]),
                                                          more: end < bytes.count).encoded()))
            start = end
        } while start < bytes.count
        return actions
    }

    /// The peer's access ended (its credential was revoked or expired): tells it with `code`
    /// (``SyncErrorCode/revoked`` or ``SyncErrorCode/expired``) and closes. The client must not
    /// reconnect with that credential.
    public mutating func endAccess(_ code: SyncErrorCode, text: String) -> [Action] {
        precondition(code == .revoked || code == .expired, "access ends only for revocation or expiry")
        guard !isClosed else { return [] }
        isClosed = true
        return [error(0, nil, code, text), .close(reason: text)]
    }

    private func error(_ request: UInt64, _ document: DocumentID?, _ code: SyncErrorCode, _ text: String) -> Action {
        .send(SyncMessage.error(request: request, document: document, code: code, text: text).encoded())
    }
}
