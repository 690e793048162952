import ListCRDT

/// A daemon's link to a peer daemon, as a state machine with no I/O (Docs/Protocol.md, "Peers").
///
/// The link is a client of the peer (its wire side is a ``ClientSession``) and a subscriber of this
/// daemon's document cores. On every connection and every anti-entropy round it lists the peer's
/// documents and reconciles them with this daemon's:
/// - a document only the peer holds is subscribed to with epoch 0; when the peer says which epoch it
///   is at, the driver makes the local copy with that id and epoch (``Action/createLocal(_:name:epoch:)``);
/// - a document only this daemon holds is created on the peer with the same id and epoch;
/// - a document both hold at the same epoch is subscribed to with this daemon's version: the peer
///   sends what this daemon lacks, and its `subscribed` answer (its version) makes the link send
///   what the peer lacks (``Action/attach(_:remoteVersion:)``);
/// - a document held at two epochs is not synced (an operator re-attaches one of them);
/// - a document this daemon destroyed (it holds its deletion record) that the peer still lists is
///   destroyed on the peer (`destroy`); a document the peer says is destroyed (a refused `create`
///   or `subscribe`, or the end of a subscription, with ``SyncErrorCode/destroyed``) is destroyed
///   here too (``Action/destroyLocal(_:reason:)``). So a destroy reaches every peer, and no
///   peer's copy brings the document back (Docs/Daemon.md, "Destroying a document").
///
/// Operations flow both ways from then on. A batch the peer refused for a limit or its storage is
/// sent again by a resync (a new subscription, both ways) after ``resyncDelay``; a resync whose
/// subscription fails (the peer's storage, a deadline) is tried again after the same delay.
public struct PeerSession: Sendable {
    /// This daemon's copy of a document, as the link needs it.
    public struct LocalDocument: Hashable, Sendable {
        public var id: DocumentID
        public var name: String
        public var epoch: UInt64
        /// The durable version.
        public var version: VersionVector
        public init(id: DocumentID, name: String, epoch: UInt64, version: VersionVector) {
            (self.id, self.name, self.epoch, self.version) = (id, name, epoch, version)
        }
    }

    /// What the link asks its driver to do, in order.
    public enum Action: Equatable, Sendable {
        /// Send this frame to the peer.
        case send([UInt8])
        /// Close the connection.
        case close(reason: String)
        /// The peer's document list arrived: call ``reconcile(remote:local:complete:now:)`` with this
        /// daemon's documents.
        case listed([DocumentInfo])
        /// The peer announced new documents: call ``reconcile(remote:local:complete:now:)`` with
        /// `complete: false` and this daemon's copies of them.
        case announced([DocumentInfo])
        /// Make this daemon's copy of a document only the peer holds, then call ``localReady(_:now:)``.
        case createLocal(DocumentID, name: String, epoch: UInt64)
        /// Attach the link to the local core as a subscriber holding `remoteVersion` (the core then
        /// streams what the peer lacks; relay its `operations` frames to the peer).
        case attach(DocumentID, remoteVersion: VersionVector)
        /// Detach the link from the local core.
        case detach(DocumentID)
        /// Operations from the peer: receive them into the local core (batch 0, from the link).
        case deliver(DocumentID, [ListOperation])
        /// Held at two epochs: not synced.
        case epochConflict(DocumentID, local: UInt64, remote: UInt64)
        /// The peer destroyed the document: destroy this daemon's copy too (its deletion record
        /// then keeps it from coming back).
        case destroyLocal(DocumentID, reason: String)
        /// The peer compacted the document past this daemon's copy (it answered the subscription
        /// with `snapshot`, these bytes): the document is detached from this peer. If the copy
        /// holds nothing the snapshot lacks (an empty copy: a document copied from a peer after
        /// it was compacted), the driver replaces it with the snapshot and calls
        /// ``localReady(_:now:)`` to subscribe again; otherwise it is not synced with this peer
        /// (log it; an operator re-attaches one of them). Docs/Semantics.md §7, "Peers".
        case behindFloor(DocumentID, snapshot: [UInt8])
        /// The peer refused operations this link relayed as made before its compaction floor
        /// (``SyncErrorCode/compacted``): this daemon took operations of a replica left out of
        /// that floor (Docs/Semantics.md §7, "A copy left out of a peer's floor"). Log it. The
        /// link detaches the document and subscribes to it again from nothing: the peer's
        /// answer is its snapshot (``behindFloor(_:snapshot:)``), on which the driver merges
        /// this copy back.
        case refusedCompacted(DocumentID, String)
        /// The peer's stability table of an attached document: merge it into the local core
        /// (``DocumentCore/peerStability(_:from:entries:now:)``, with the link as subscriber).
        case stability(DocumentID, from: ReplicaID, entries: [ReplicaID: PeerStability.Entry])
    }

    /// The replica a link of an older build named in its `seen`.
    public static let relayReplica = ReplicaID(1)
    /// This daemon's replica id (``DocumentCore`` names it in its stability table): the link
    /// says it in its `seen`, so that the peer waits for this daemon's table before compacting.
    public let daemon: ReplicaID

    /// Nanoseconds after a refusal before the document is resynced.
    public let resyncDelay: UInt64
    /// The wire side.
    public private(set) var client: ClientSession
    /// Documents synced both ways.
    public private(set) var attached: Set<DocumentID> = []
    /// The peer's daemon id, once it sent a stability table on this connection (its link
    /// subscribers are marked with it at once on later attachments).
    public private(set) var peerDaemon: ReplicaID?
    /// Documents held at two epochs, with both.
    public private(set) var epochConflicts: [DocumentID: (local: UInt64, remote: UInt64)] = [:]
    private var epochs: [DocumentID: UInt64] = [:]
    /// Documents only the peer holds, subscribed to before the local copy exists.
    private var probing: Set<DocumentID> = []
    private var creating: [UInt64: DocumentID] = [:]
    /// `destroy` requests on their way to the peer.
    private var destroying: [UInt64: DocumentID] = [:]
    private var listing: UInt64?
    private var resyncAt: [DocumentID: UInt64] = [:]
    /// Attached documents whose catch-up has not ended (no `synced` yet). A new subscription
    /// would restart it from this daemon's durable version: over a slow link a large document
    /// restarted by every anti-entropy round never finished, so rounds and resyncs leave these be.
    public private(set) var catchingUp: Set<DocumentID> = []
    /// Documents whose relayed operations the peer refused for its floor: subscribed again from
    /// nothing for the peer's snapshot, not attached meanwhile (``Action/refusedCompacted(_:_:)``).
    public private(set) var parting: Set<DocumentID> = []

    /// A link over a connection whose frames are at most `maxFrame` bytes; times in nanoseconds.
    /// `offersFloor`: its subscriptions say `offersFloor` (a version-11 `subscribe`), so that this
    /// daemon's core may offer the peer its snapshot when it refuses, for its floor, what the link
    /// relays from the peer, or the link's catch-up is a snapshot (``takesFloor``; Docs/Semantics.md
    /// §7, "A left-out daemon that only accepts links"). False: the link of builds before it,
    /// which never offers (the left-out peer stays apart until it dials this daemon). The driver passes false to a
    /// peer that refused it (``ClientSession/OlderDaemon/floor``).
    public init(maxFrame: Int, timeout: UInt64 = 30_000_000_000, resyncDelay: UInt64 = 1_000_000_000,
                daemon: ReplicaID = PeerSession.relayReplica, offersFloor: Bool = false) {
        client = ClientSession(maxFrame: maxFrame, timeout: timeout)
        client.offersFloor = offersFloor
        self.resyncDelay = resyncDelay
        self.daemon = daemon
    }

    /// Whether the peer takes `floorSnapshot` on this connection (``ClientSession/sendsFloor``):
    /// the driver attaches the link to its cores with `offersFloor` then
    /// (``DocumentCore/subscribe(_:epoch:version:ownLink:learnsParted:relay:offersFloor:)``).
    public var takesFloor: Bool { client.sendsFloor }

    /// The connection is up (or an anti-entropy round is due): list the peer's documents.
    public mutating func start(now: UInt64) -> [Action] {
        guard listing == nil else { return [] }
        let (n, actions) = client.request(.documents, now: now)
        listing = n
        return wire(actions, now: now)
    }

    /// Reconciles the peer's documents with this daemon's (after ``Action/listed(_:)``).
    ///
    /// - Parameter complete: whether `remote` is the peer's whole list (false for an announcement:
    ///   documents missing from it are not created on the peer).
    /// - Parameter destroyed: the documents this daemon destroyed (its deletion records): those the
    ///   peer lists are destroyed on the peer, never copied here.
    public mutating func reconcile(remote: [DocumentInfo], local: [LocalDocument], destroyed: Set<DocumentID> = [],
                                   complete: Bool = true, now: UInt64) -> [Action] {
        var actions: [Action] = []
        let localIDs = Dictionary(local.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let remoteIDs = Set(remote.map(\.id))
        for d in remote where destroyed.contains(d.id) {
            actions += destroyRemote(d.id, now: now)
        }
        for d in remote where localIDs[d.id] == nil && !probing.contains(d.id) && !destroyed.contains(d.id) {
            probing.insert(d.id)
            actions += wire(client.subscribe(d.id, epoch: 0, version: VersionVector(), now: now), now: now)
        }
        for d in local where epochConflicts[d.id] == nil && !parting.contains(d.id) {
            epochs[d.id] = d.epoch
            if !remoteIDs.contains(d.id) {
                guard complete, !creating.values.contains(d.id) else { continue }
                let (n, sent) = client.request(.create(name: d.name, sections: [], id: d.id, epoch: d.epoch), now: now)
                creating[n] = d.id
                actions += wire(sent, now: now)
            } else if !catchingUp.contains(d.id), !client.isSubscribing(d.id) {
                actions += wire(client.subscribe(d.id, epoch: d.epoch, version: d.version, now: now), now: now)
            }
        }
        return actions
    }

    /// The local copy of a document only the peer held exists now (or did already).
    public mutating func localReady(_ document: LocalDocument, now: UInt64) -> [Action] {
        epochs[document.id] = document.epoch
        return wire(client.subscribe(document.id, epoch: document.epoch, version: document.version, now: now), now: now)
    }

    /// A document was created on this daemon: create it on the peer too.
    public mutating func created(_ document: LocalDocument, now: UInt64) -> [Action] {
        guard !client.isClosed, !attached.contains(document.id), !creating.values.contains(document.id) else { return [] }
        epochs[document.id] = document.epoch
        let (n, sent) = client.request(.create(name: document.name, sections: [], id: document.id, epoch: document.epoch), now: now)
        creating[n] = document.id
        return wire(sent, now: now)
    }

    /// A document was destroyed on this daemon: destroy it on the peer too. The link forgets it
    /// (the local host is gone; its detach came from the host).
    public mutating func destroyed(_ document: DocumentID, now: UInt64) -> [Action] {
        attached.remove(document)
        catchingUp.remove(document)
        probing.remove(document)
        resyncAt[document] = nil
        epochs[document] = nil
        return destroyRemote(document, now: now)
    }

    private mutating func destroyRemote(_ document: DocumentID, now: UInt64) -> [Action] {
        guard !client.isClosed, !destroying.values.contains(document) else { return [] }
        let (n, sent) = client.request(.destroy(document), now: now)
        destroying[n] = document
        return wire(sent, now: now)
    }

    /// One frame from the peer.
    public mutating func receive(_ frame: [UInt8], now: UInt64) -> [Action] {
        wire(client.receive(frame, now: now), now: now)
    }

    /// The clock moved: deadlines pass, and the documents whose resync is due are returned (the
    /// driver calls ``resync(_:version:now:)`` for each, with this daemon's version of it).
    public mutating func tick(now: UInt64) -> (due: [DocumentID], actions: [Action]) {
        let due = resyncAt.filter { $0.value <= now }.map(\.key).sorted()
        for d in due { resyncAt[d] = nil }
        return (due, wire(client.tick(now: now), now: now))
    }

    /// Subscribes to `document` again with this daemon's `version`: both directions resync. Nothing
    /// while a subscription of it waits for its answer (its catch-up is on its way; made again, it
    /// would only be sent after that answer, ClientSession).
    public mutating func resync(_ document: DocumentID, version: VersionVector, now: UInt64) -> [Action] {
        guard attached.contains(document), !catchingUp.contains(document), !client.isSubscribing(document),
              let epoch = epochs[document] else { return [] }
        return wire(client.subscribe(document, epoch: epoch, version: version, now: now), now: now)
    }

    /// The connection closed: everything is detached.
    public mutating func disconnected() -> [Action] {
        let detach = attached.sorted().map { Action.detach($0) }
        _ = client.disconnected()
        attached = []; probing = []; creating = [:]; destroying = [:]; listing = nil; resyncAt = [:]; catchingUp = []; parting = []
        return detach
    }

    // MARK: Internals

    private mutating func wire(_ actions: [ClientSession.Action], now: UInt64) -> [Action] {
        var out: [Action] = []
        for a in actions {
            switch a {
            case let .send(f): out.append(.send(f))
            case let .close(reason): out.append(.close(reason: reason))
            case let .answered(n, result):
                if n == listing {
                    listing = nil
                    if case let .success(.documents(list)) = result { out.append(.listed(list)) }
                } else if destroying.removeValue(forKey: n) != nil {
                    // Destroyed there (or unknown there): nothing more to do either way.
                } else if let doc = creating.removeValue(forKey: n) {
                    if case let .failure(.refused(.destroyed, text)) = result {
                        // The peer destroyed it: so does this daemon, rather than keep a copy
                        // nobody may sync.
                        epochs[doc] = nil
                        out.append(.destroyLocal(doc, reason: text))
                    } else if case .success = result, let epoch = epochs[doc] {
                        // Created there (or there already): subscribe with an empty version; its
                        // `subscribed` brings the peer's version and starts the push.
                        out += wire(client.subscribe(doc, epoch: epoch, version: VersionVector(), now: now), now: now)
                    }
                }
            case let .subscribed(doc, name, epoch, version):
                if probing.remove(doc) != nil {
                    out.append(.createLocal(doc, name: name, epoch: epoch))
                    continue
                }
                guard let local = epochs[doc] else { continue }
                guard local == epoch else {
                    epochConflicts[doc] = (local, epoch)
                    catchingUp.remove(doc)
                    if attached.remove(doc) != nil { out.append(.detach(doc)) }
                    out.append(.epochConflict(doc, local: local, remote: epoch))
                    continue
                }
                if attached.contains(doc) { out.append(.detach(doc)) }
                if parting.contains(doc) {
                    // Subscribed from nothing for the peer's snapshot: nothing is relayed (the
                    // peer refuses it) until this copy is merged back.
                    attached.remove(doc)
                    catchingUp.insert(doc)
                    continue
                }
                attached.insert(doc)
                catchingUp.insert(doc)
                // The peer must not compact a document this link relays (its other replicas'
                // operations reach the peer through it) before it has this daemon's stability:
                // said once per subscription, before anything this daemon sends (so that the
                // peer counts their authors as relayed).
                out.append(.send(SyncMessage.seen(document: doc, replica: daemon, version: version, role: .relay).encoded()))
                out.append(.attach(doc, remoteVersion: version))
            case let .subscribeFailed(doc, error):
                probing.remove(doc)
                catchingUp.remove(doc)   // no subscription streams now (a resync may start one)
                if case let .refused(.destroyed, text) = error {
                    if attached.remove(doc) != nil { out.append(.detach(doc)) }
                    resyncAt[doc] = nil
                    epochs[doc] = nil
                    out.append(.destroyLocal(doc, reason: text))
                } else if case let .refused(code, _) = error, code == .epochMismatch {
                    epochConflicts[doc] = (epochs[doc] ?? 0, 0)
                    if attached.remove(doc) != nil { out.append(.detach(doc)) }
                    out.append(.epochConflict(doc, local: epochs[doc] ?? 0, remote: 0))
                } else if attached.contains(doc), resyncAt[doc] == nil {
                    // A resync's subscription failed (the peer's storage, a deadline): the wire side
                    // no longer delivers the document's operations. Try again after the delay.
                    resyncAt[doc] = now &+ resyncDelay
                }
            case let .operations(doc, ops):
                if attached.contains(doc) { out.append(.deliver(doc, ops)) }
            case let .synced(doc, _):
                catchingUp.remove(doc)
                // No snapshot came (the peer holds no floor now): the next round subscribes again.
                parting.remove(doc)
            case .editDone, .accessEnded:
                break
            case let .snapshot(doc, bytes):
                catchingUp.remove(doc)
                parting.remove(doc)
                if attached.remove(doc) != nil { out.append(.detach(doc)) }
                out += wire(client.unsubscribe(doc), now: now)
                out.append(.behindFloor(doc, snapshot: bytes))
            case let .stability(doc, from, entries):
                peerDaemon = from
                if attached.contains(doc) { out.append(.stability(doc, from: from, entries: entries)) }
            case .presence:
                // Presence is per daemon: a link never sends one, so the peer relays none to it.
                break
            case .stable, .parted:
                // Sent only to compacting devices, and to devices that asked; a link says `seen`
                // as a relay and never asks for `parted`.
                break
            case let .announced(list):
                out.append(.announced(list))
            case let .withdrawn(doc, epoch):
                // The peer destroyed a document this daemon holds at the same epoch: so does this
                // daemon (as when its subscription ends `destroyed`). Another epoch is another
                // copy's business: the subscription's own answer decides.
                guard let local = epochs[doc], local == epoch else { break }
                catchingUp.remove(doc)
                resyncAt[doc] = nil
                epochs[doc] = nil
                if attached.remove(doc) != nil { out.append(.detach(doc)) }
                out.append(.destroyLocal(doc, reason: "document \(doc) was destroyed on the peer"))
            case let .documentError(doc, code, text):
                if code == .destroyed {
                    catchingUp.remove(doc)
                    if attached.remove(doc) != nil { out.append(.detach(doc)) }
                    out.append(.destroyLocal(doc, reason: text))
                } else if code == .compacted {
                    out.append(.refusedCompacted(doc, text))
                    out += fetchFloor(doc, now: now)
                } else {
                    refusedPush(doc, code: code, now: now)
                }
            }
        }
        return out
    }

    /// The peer refused what this link relayed for its floor: detach the document and subscribe
    /// from nothing, so that the peer answers with its snapshot (once per refusal episode).
    private mutating func fetchFloor(_ doc: DocumentID, now: UInt64) -> [Action] {
        guard attached.contains(doc), !parting.contains(doc), let epoch = epochs[doc] else { return [] }
        parting.insert(doc)
        attached.remove(doc)
        catchingUp.remove(doc)
        resyncAt[doc] = nil
        return [.detach(doc)] + wire(client.subscribe(doc, epoch: epoch, version: VersionVector(), now: now), now: now)
    }

    /// Called by the driver for an `error` the peer sent about a document with request 0: a refusal
    /// of a pushed batch (a limit, its storage) schedules a resync.
    public mutating func refusedPush(_ document: DocumentID, code: SyncErrorCode, now: UInt64) {
        guard attached.contains(document), code == .limit || code == .storage, resyncAt[document] == nil else { return }
        resyncAt[document] = now &+ resyncDelay
    }
}

extension PeerSession {
    /// Whether a frame the local document core addressed to this link goes on to the peer:
    /// operations, the stability table unless the peer (an older build) refused it once
    /// (`sendsStability` false), and the parts of an offered snapshot (`floorSnapshot`, which the
    /// core makes only for a link whose peer takes it). `subscribed` and `synced` are the local core's answers to the
    /// link's attachment, not messages for the peer. The daemon's link and the simulator's both
    /// filter by it.
    ///
    /// - Complexity: O(1).
    public static func relays(_ frame: [UInt8], sendsStability: Bool) -> Bool {
        guard frame.count > 1 else { return false }
        return frame[1] == SyncMessage.operationsTag || (frame[1] == SyncMessage.stabilityTag && sendsStability)
            || frame[1] == SyncMessage.floorSnapshotTag
    }
}
