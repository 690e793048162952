import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP

/// The daemon's connection to one peer daemon (`--peer HOST:PORT`): the driver of a
/// ``PeerSession``, kept open with backoff. The session decides; this actor connects, moves frames,
/// and attaches the link to the local document hosts as a subscriber whose `operations` frames it
/// relays to the peer.
actor PeerLink: DocumentSubscriber {
    nonisolated let label: String
    /// Whether discovery made this link (it is dropped when its peer falls silent and cannot be
    /// reached); `--peer` links are kept for as long as the daemon runs.
    nonisolated let discovered: Bool
    nonisolated let subscriberID: SubscriberID
    private weak var daemon: Daemon?
    private let host: String
    private let port: UInt16
    private let key: [UInt8]
    private let options: TCPOptions
    private let loop: EventLoop
    private let backoff: Backoff
    private var transport: TCPTransport?
    private var session: PeerSession?
    private var task: Task<Void, Never>?
    private var hosts: [DocumentID: DocumentHost] = [:]
    private var lastAntiEntropy: UInt64 = 0
    /// Whether the peer refused a `subscribe` saying `offersFloor` (an older build): later
    /// connections' links do not say it (``ClientSession/OlderDaemon/floor``).
    private var peerRefusedFloor = false
    /// Attempts to connect that failed since the last that succeeded.
    private(set) var failedAttempts = 0
    /// The relay's transport, readable from any thread (frames come from the hosts' queues).
    private nonisolated let relay = RelayBox()

    init(daemon: Daemon, number: Int, host: String, port: UInt16, key: [UInt8], options: TCPOptions,
         backoff: Backoff, loop: EventLoop, discovered: Bool = false) {
        self.backoff = backoff
        self.discovered = discovered
        self.daemon = daemon
        self.subscriberID = SubscriberID(number)
        self.host = host
        self.port = port
        self.key = key
        self.options = options
        self.loop = loop
        label = "\(host):\(port)"
    }

    var isConnected: Bool { transport?.isOpen ?? false }
    /// Documents held at two epochs (not synced).
    var epochConflicts: [DocumentID: (local: UInt64, remote: UInt64)] { session?.epochConflicts ?? [:] }

    func start() {
        guard task == nil else { return }
        task = Task { await self.run() }
    }

    func stop() async {
        task?.cancel()
        await transport?.close(reason: "the daemon is stopping")
        await task?.value
        task = nil
        await detachAll()
    }

    // MARK: DocumentSubscriber (frames from the local hosts)

    nonisolated func deliver(_ document: DocumentID, _ frame: [UInt8], via outbox: inout TCPOutbox) {
        guard PeerSession.relays(frame, sendsStability: relay.sendsStability) else { return }
        if let transport = relay.transport { outbox.enqueue(frame, on: transport) }
    }

    nonisolated func whenRoom(_ body: @escaping @Sendable () -> Void) {
        if let t = relay.transport { t.whenRoom(body) } else { body() }
    }

    nonisolated func cut(reason: String) {
        Task { await relay.transport?.close(reason: reason) }
    }

    nonisolated func documentDestroyed(_ document: DocumentID) {
        Task { await self.forgetHost(document) }
    }

    private func forgetHost(_ document: DocumentID) { hosts[document] = nil }

    // MARK: The connection

    private func run() async {
        var attempt = 0
        var rng = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            let connected = try? await TCPTransport.connect(host: host, port: port, key: key, options: options, loop: loop)
            failedAttempts = connected == nil ? failedAttempts + 1 : 0
            if let t = connected {
                attempt = 0
                transport = t
                relay.transport = t
                var s = PeerSession(maxFrame: t.maxFrame, daemon: await daemon?.replica ?? ReplicaID(1),
                                    offersFloor: !peerRefusedFloor)
                let first = s.start(now: Self.now())
                session = s
                lastAntiEntropy = Self.now()
                await perform(first)
                for await frame in t.incoming {
                    guard session != nil else { break }
                    let actions = session!.receive(frame, now: Self.now())
                    if !session!.client.sendsStability { relay.sendsStability = false }
                    if session!.client.refusedByDaemon.contains(.floor) { peerRefusedFloor = true }
                    await perform(actions)
                }
                relay.transport = nil
                transport = nil
                if session != nil {
                    let detach = session!.disconnected()
                    session = nil
                    await perform(detach)
                }
                await detachAll()
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: backoff.delay(attempt: attempt, using: &rng))
            attempt += 1
        }
    }

    /// A document was created on this daemon: create it on the peer too.
    func documentCreated(_ document: PeerSession.LocalDocument) async {
        await perform(onSession { $0.created(document, now: Self.now()) })
    }

    /// A document was destroyed on this daemon: destroy it on the peer too.
    func destroyOnPeer(_ document: DocumentID) async {
        hosts[document] = nil
        await perform(onSession { $0.destroyed(document, now: Self.now()) })
    }

    /// About once a second (the daemon's housekeeping): deadlines, resyncs after refusals, and an
    /// anti-entropy round every ``DaemonConfiguration/antiEntropyInterval``.
    func tick() async {
        guard session != nil, let daemon else { return }
        let now = Self.now()
        let (due, actions) = session!.tick(now: now)
        await perform(actions)
        for id in due { await resync(id) }
        guard now &- lastAntiEntropy >= daemon.configuration.antiEntropyInterval.nanoseconds else { return }
        lastAntiEntropy = now
        await perform(onSession { $0.start(now: now) })
        for id in hosts.keys.sorted() { await resync(id) }
    }

    private func resync(_ id: DocumentID) async {
        guard session != nil, let h = hosts[id] else { return }
        let version = await h.localDescription.version
        await perform(onSession { $0.resync(id, version: version, now: Self.now()) })
    }

    /// Calls `event` on the session if the link has one now: an `await` before may have let the
    /// connection end (the session is then nil, or a new connection's), so nothing may assume
    /// it from a check made before a suspension.
    private func onSession(_ event: (inout PeerSession) -> [PeerSession.Action]) -> [PeerSession.Action] {
        guard session != nil else { return [] }
        return event(&session!)
    }

    private func perform(_ actions: [PeerSession.Action]) async {
        for action in actions { await perform(action) }
    }

    private func perform(_ action: PeerSession.Action) async {
        guard let daemon else { return }
        switch action {
        case let .send(frame):
            transport?.enqueue(frame)
        case let .close(reason):
            await transport?.close(reason: reason)
        case let .listed(remote), let .announced(remote):
            var complete = false
            if case .listed = action { complete = true }
            var local: [PeerSession.LocalDocument] = []
            let wanted = complete ? nil : Set(remote.map(\.id))
            for d in await daemon.list() where wanted?.contains(d.id) ?? true {
                if let h = try? await daemon.host(d.id) { local.append(await h.localDescription) }
            }
            let destroyed = await daemon.destroyedIDs()
            await perform(onSession { $0.reconcile(remote: remote, local: local, destroyed: destroyed, complete: complete, now: Self.now()) })
        case let .createLocal(id, name, epoch):
            do {
                _ = try await daemon.create(name: name, sections: [], id: id, epoch: epoch)
                let h = try await daemon.host(id)
                await daemon.relayCreated(await h.localDescription, except: self)
                let ready = await h.localDescription
                await perform(onSession { $0.localReady(ready, now: Self.now()) })
            } catch {
                daemon.log("peer document not copied", ["peer": label, "document": id.description, "error": "\(error)"])
            }
        case let .attach(id, remoteVersion):
            guard let h = try? await daemon.host(id) else { return }
            if let old = hosts[id] { await old.unsubscribe(subscriberID) }
            if await h.subscribe(self, epoch: 0, version: remoteVersion, relay: true, peer: session?.peerDaemon, ownLink: true,
                                 offersFloor: session?.takesFloor ?? false) == true { hosts[id] = h }
        case let .detach(id):
            if let h = hosts.removeValue(forKey: id) { await h.unsubscribe(subscriberID) }
        case let .deliver(id, ops):
            await hosts[id]?.receive(ops, batch: 0, from: subscriberID)
        case let .destroyLocal(id, reason):
            hosts[id] = nil
            do {
                _ = try await daemon.destroy(id, epoch: 0, reason: "destroyed on peer \(label)")
            } catch DaemonError.unknownDocument {
                // Not here (a probe's document): nothing to destroy.
            } catch {
                daemon.log("peer destroy not applied", ["peer": label, "document": id.description, "reason": reason,
                                                        "error": "\(error)"])
            }
        case let .epochConflict(id, localEpoch, remoteEpoch):
            daemon.log("peer epoch conflict", ["peer": label, "document": id.description,
                                               "local_epoch": "\(localEpoch)", "remote_epoch": "\(remoteEpoch)"])
        case let .refusedCompacted(id, text):
            daemon.log("peer refused relayed operations as compacted", ["peer": label, "document": id.description, "error": text,
                                                                      "consequence": "this copy holds operations the peer's does not"])
        case let .stability(id, from, entries):
            await hosts[id]?.peerStability(subscriberID, from: from, entries: entries)
        case let .behindFloor(id, snapshot):
            // A copy that holds nothing the snapshot lacks (copied from a peer after it was
            // compacted) takes it, and subscribes again from it.
            if let h = try? await daemon.host(id), await h.adoptSnapshot(snapshot) {
                daemon.log("peer snapshot loaded", ["peer": label, "document": id.description])
                let ready = await h.localDescription
                await perform(onSession { $0.localReady(ready, now: Self.now()) })
                return
            }
            // A copy that holds operations the snapshot lacks is merged back onto it (the
            // operations made before its floor made again), and subscribes again from it.
            if let h = try? await daemon.host(id), let merge = await h.mergeBackSnapshot(snapshot) {
                daemon.log("peer snapshot merged back", ["peer": label, "document": id.description,
                                                         "kept": "\(merge.kept.count)", "made_again": "\(merge.made.count)",
                                                         "dropped": "\(merge.dropped.count)"])
                let ready = await h.localDescription
                await perform(onSession { $0.localReady(ready, now: Self.now()) })
                return
            }
            daemon.log("peer compacted past this copy", ["peer": label, "document": id.description,
                                                         "action": "not synced with this peer: re-attach one of the copies"])
        }
    }

    private func detachAll() async {
        for (_, h) in hosts { await h.unsubscribe(subscriberID) }
        hosts = [:]
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// The peer link's current transport, shared with the hosts' queues that relay frames.
final class RelayBox: @unchecked Sendable {
    // @unchecked Sendable: `transport` is behind `lock`.
    private let lock = NSLock()
    private var value: TCPTransport?
    private var stability = true
    /// Whether the peer reads `stability` (false once it refused it: an older build).
    var sendsStability: Bool {
        get { lock.lock(); defer { lock.unlock() }; return stability }
        set { lock.lock(); stability = newValue; lock.unlock() }
    }
    var transport: TCPTransport? {
        get { lock.lock(); defer { lock.unlock() }; return value }
        set { lock.lock(); value = newValue; lock.unlock() }
    }
}
