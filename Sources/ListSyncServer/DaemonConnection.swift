import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP

/// One client's or peer's connection to the daemon: the driver of its ``ServerSession``. It feeds
/// the session the connection's frames and moves the session's actions to the document hosts and
/// the daemon's registry; the hosts send frames to it (``deliver(_:_:)``) in their own order.
actor DaemonConnection: DocumentSubscriber {
    nonisolated let transport: TCPTransport
    nonisolated let subscriberID: SubscriberID
    private weak var daemon: Daemon?
    /// The daemon's counters: every frame sent on this connection adds to `bytes_out`.
    private nonisolated let metrics: DaemonMetrics
    private var session: ServerSession
    private var hosts: [DocumentID: DocumentHost] = [:]
    /// The device's claims, when it proved a credential (nil: the daemon's key).
    nonisolated var claims: DeviceClaims? { transport.peerClaims }

    init(transport: TCPTransport, daemon: Daemon, number: Int) {
        self.transport = transport
        self.subscriberID = SubscriberID(number)
        self.daemon = daemon
        self.metrics = daemon.metrics
        let access = transport.peerClaims.map { Access(documents: $0.documents.map(Set.init), readOnly: $0.readOnly) } ?? .full
        session = ServerSession(maxFrame: transport.maxFrame, rateLimit: daemon.configuration.rateLimit,
                                now: DispatchTime.now().uptimeNanoseconds, access: access)
    }

    /// Ends the device's access (revoked or expired): tells it why and closes.
    func endAccess(_ code: SyncErrorCode, text: String) async {
        await perform(session.endAccess(code, text: text))
    }

    /// Handles frames until the connection closes, then detaches from every document.
    func run() async {
        for await frame in transport.incoming {
            daemon?.metrics.received(operations: 0, bytes: frame.count)
            let dropped = session.presenceDroppedCount
            await perform(session.receive(frame, now: DispatchTime.now().uptimeNanoseconds))
            if session.presenceDroppedCount > dropped, let daemon {
                daemon.metrics.presenceDropped()
                if dropped == 0 {   // one line per connection, not one per message
                    daemon.log("presence limited", ["from": transport.remoteAddress.description])
                }
            }
            if session.isClosed { break }
        }
        for (_, h) in hosts { await h.unsubscribe(subscriberID) }
        hosts = [:]
    }

    /// Closes the connection with `reason`.
    func close(reason: String) async {
        await transport.close(reason: reason)
    }

    nonisolated func deliver(_ document: DocumentID, _ frame: [UInt8], via outbox: inout TCPOutbox) {
        metrics.sent(operations: 0, bytes: frame.count)
        outbox.enqueue(frame, on: transport)
    }

    nonisolated func whenRoom(_ body: @escaping @Sendable () -> Void) {
        transport.whenRoom(body)
    }

    nonisolated func cut(reason: String) {
        Task { await transport.close(reason: reason) }
    }

    nonisolated func documentDestroyed(_ document: DocumentID) {
        Task { await self.detach(document) }
    }

    /// The document's host ended this connection's subscription (destroyed): a later batch for
    /// it is refused as for any document the connection is not attached to.
    private func detach(_ document: DocumentID) {
        hosts[document] = nil
        session.detached(document)
    }

    /// Tells a connection that listed the documents about a new one.
    func announce(_ info: DocumentInfo) async {
        await perform(session.announce(info))
    }

    /// Tells a connection that listed the documents that one was destroyed.
    func announceDestroyed(_ document: DocumentID, epoch: UInt64) async {
        await perform(session.announceDestroyed(document, epoch: epoch))
    }

    private func perform(_ actions: [ServerSession.Action]) async {
        for action in actions {
            await perform(action)
        }
    }

    private func perform(_ action: ServerSession.Action) async {
        guard let daemon else { return }
        switch action {
        case let .send(frame):
            metrics.sent(operations: 0, bytes: frame.count)
            transport.enqueue(frame)
        case let .close(reason):
            await transport.close(reason: reason)
        case let .subscribe(doc, epoch, version, learnsParted):
            await subscribe(doc, epoch: epoch, version: version, learnsParted: learnsParted, daemon: daemon)
        case let .unsubscribe(doc):
            if let h = hosts.removeValue(forKey: doc) { await h.unsubscribe(subscriberID) }
        case let .operations(doc, batch, ops):
            guard let host = hosts[doc] else { return }
            let start = DispatchTime.now().uptimeNanoseconds
            let (equivocated, equivocation, failure, closed) = await host.receive(ops, batch: batch, from: subscriberID)
            if let closed {
                // Destroyed (or unloaded) since this connection attached: answered here, since
                // the host no longer holds this connection (its detach may be on its way).
                if closed.code == .destroyed { detach(doc) }
                return await perform(session.failed(request: batch, document: doc, code: closed.code, text: closed.text))
            }
            daemon.metrics.appended(seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            daemon.metrics.received(operations: ops.count, bytes: 0)
            if batch != 0 { daemon.metrics.acknowledged() }
            if equivocated > 0 {
                // Someone holding the key sent an operation under a known id with other content
                // (a forked replica, or an attack): refused, nothing changed.
                daemon.metrics.equivocated(equivocated)
                daemon.log("equivocation refused", ["document": doc.description, "count": "\(equivocated)",
                                                    "operation": equivocation.map { "\($0)" } ?? "",
                                                    "from": transport.remoteAddress.description])
            }
            if let failure { daemon.metrics.storageFailed(failure) }
        case let .hello(doc, version):
            await hosts[doc]?.hello(subscriberID, version: version)
        case let .seen(doc, replica, version, role):
            await notePeerLink(daemon)
            await hosts[doc]?.seen(subscriberID, replica: replica, version: version, role: role)
        case let .stability(doc, from, entries):
            await notePeerLink(daemon)
            await hosts[doc]?.peerStability(subscriberID, from: from, entries: entries)
        case let .remade(doc, ranges):
            await hosts[doc]?.remade(subscriberID, ranges: ranges)
        case let .floorSnapshot(doc, bytes):
            await takeFloor(doc, bytes, daemon: daemon)
        case let .presence(doc, presence):
            daemon.metrics.presence()
            await hosts[doc]?.presence(presence, from: subscriberID)
        case let .create(request, name, sections, id, epoch):
            do {
                let (made, madeEpoch) = try await daemon.create(name: name, sections: sections, id: id, epoch: epoch)
                await perform(session.created(request: request, document: made, epoch: madeEpoch))
            } catch {
                await perform(session.failed(request: request, document: id, code: error.code, text: error.description))
            }
        case let .destroy(request, doc, epoch):
            do {
                let madeEpoch = try await daemon.destroy(doc, epoch: epoch, reason: "asked by \(transport.remoteAddress)")
                hosts[doc] = nil
                await perform(session.destroyed(request: request, document: doc, epoch: madeEpoch))
            } catch {
                await perform(session.failed(request: request, document: doc, code: error.code, text: error.description))
            }
        case let .rename(request, doc, name):
            do {
                let info = try await daemon.rename(doc, to: name)
                await perform(session.renamed(request: request, info))
            } catch {
                await perform(session.failed(request: request, document: doc, code: error.code, text: error.description))
            }
        case let .listDocuments(request, after):
            let list = await daemon.list().filter { after == nil || $0.id > after! }
            await perform(session.documents(request: request, list))
        case let .status(request):
            await perform(session.status(request: request, json: await daemon.statusJSON()))
        case let .rateLimited(first):
            daemon.metrics.rateLimited()
            if first {   // one line per connection, not one per batch
                daemon.log("rate limited", ["from": transport.remoteAddress.description])
            }
        }
    }

    /// A peer's link offered its daemon's snapshot: this daemon's copy was left out of that
    /// peer's floor, and the peer only dials here (Docs/Semantics.md §7, "A left-out daemon that
    /// only accepts links"). Taken exactly as the daemon's own link takes a peer's snapshot catch-up (``PeerLink``, `behindFloor`): the copy takes it if it holds
    /// nothing the snapshot lacks, or is merged back onto it; either way every subscriber, this
    /// connection included, is cut off and subscribes again. Otherwise the peer is told and
    /// nothing changed.
    private func takeFloor(_ doc: DocumentID, _ bytes: [UInt8], daemon: Daemon) async {
        let peer = transport.remoteAddress.description
        if let h = hosts[doc], await h.adoptSnapshot(bytes) {
            daemon.log("peer snapshot loaded", ["peer": peer, "document": doc.description, "offered": "true"])
            return
        }
        if let h = hosts[doc], let merge = await h.mergeBackSnapshot(bytes) {
            daemon.log("peer snapshot merged back", ["peer": peer, "document": doc.description, "offered": "true",
                                                     "kept": "\(merge.kept.count)", "made_again": "\(merge.made.count)",
                                                     "dropped": "\(merge.dropped.count)"])
            return
        }
        daemon.log("peer's offered snapshot not taken", ["peer": peer, "document": doc.description,
                                                        "action": "not synced with this peer until it offers again"])
        await perform(session.floorRefused(doc, text: "the offered snapshot of \(doc) was not taken (it does not load, this copy cannot be merged back onto it now, or the store failed); nothing changed"))
    }

    /// A peer daemon's link (``ListSync/ServerSession/isPeerLink``): this daemon has peers from
    /// now on (Daemon+Peered.swift), noted before the link's subscription is made or anything it
    /// relays is taken.
    private func notePeerLink(_ daemon: Daemon) async {
        if session.isPeerLink, !daemon.hasPeers { await daemon.notePeered() }
    }

    private func subscribe(_ doc: DocumentID, epoch: UInt64, version: VersionVector, learnsParted: Bool, daemon: Daemon) async {
        await notePeerLink(daemon)
        if let old = hosts.removeValue(forKey: doc) {
            // A second subscribe (a resync): start over from the version it names.
            await old.unsubscribe(subscriberID)
            session.detached(doc)
        }
        // A host unloaded between the lookup and the subscription is asked for again.
        for _ in 0 ..< 10 {
            let host: DocumentHost
            do { host = try await daemon.host(doc) } catch {
                return await perform(session.subscribeFailed(doc, code: error.code, text: error.description))
            }
            // A peer daemon's link, known from its earlier subscriptions: marked at once.
            let peer = session.relayDaemon
            switch await host.subscribe(self, epoch: epoch, version: version, relay: peer != nil, peer: peer,
                                        gossips: session.relayGossips, learnsParted: learnsParted) {
            case nil: continue
            case false?: return
            case true?:
                hosts[doc] = host
                session.attached(doc)
                return
            }
        }
        await perform(session.subscribeFailed(doc, code: .storage, text: "document \(doc) could not be loaded; try again"))
    }
}

extension DaemonError {
    /// The protocol's code for this error.
    var code: SyncErrorCode {
        switch self {
        case .unknownDocument: return .unknownDocument
        case .destroyed: return .destroyed
        case .epochMismatch: return .epochMismatch
        case .limit: return .limit
        case .invalidName: return .refused
        case .storage, .stopping: return .storage
        default: return .unsupported
        }
    }
}
