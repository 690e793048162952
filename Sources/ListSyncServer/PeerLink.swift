import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP

/// The daemon's connection to one peer daemon (`--peer HOST:PORT`): kept open with backoff, it
/// makes both daemons hold the same documents and syncs each of them both ways.
///
/// On every connection it lists the peer's documents: a document only the peer has is created
/// here with the same id and epoch; one only this daemon has is created there. Then it
/// subscribes to each: the peer sends what this daemon lacks, and this daemon pushes what the
/// peer lacks (its version comes back in `subscribed`). New operations flow both ways as they
/// are made; every `antiEntropyInterval` it lists and says hello again.
actor PeerLink: DocumentSubscriber {
    nonisolated let label: String
    private weak var daemon: Daemon?
    private let host: String
    private let port: UInt16
    private let key: [UInt8]
    private let options: TCPOptions
    private let loop: EventLoop
    private var transport: TCPTransport?
    private var task: Task<Void, Never>?
    private var nextRequest: UInt64 = 1
    private var subscribed: [DocumentID: DocumentHost] = [:]
    private var pendingCreates: [UInt64: DocumentID] = [:]
    /// Documents only the peer holds, subscribed to before our copy exists (made on `subscribed`).
    private var probing: Set<DocumentID> = []
    private var lastAntiEntropy: UInt64 = 0
    /// Documents the peer holds at another epoch: not synced (re-attach is an operator's decision).
    private(set) var epochConflicts: [DocumentID: (local: UInt64, remote: UInt64)] = [:]

    private let backoff: Backoff

    init(daemon: Daemon, host: String, port: UInt16, key: [UInt8], options: TCPOptions, backoff: Backoff, loop: EventLoop) {
        self.backoff = backoff
        self.daemon = daemon
        self.host = host
        self.port = port
        self.key = key
        self.options = options
        self.loop = loop
        label = "\(host):\(port)"
    }

    var isConnected: Bool { transport?.isOpen ?? false }

    func start() {
        guard task == nil else { return }
        task = Task { await self.run() }
    }

    func stop() async {
        task?.cancel()
        await transport?.close(reason: "the daemon is stopping")
        await task?.value
        task = nil
        for (_, h) in subscribed { await h.unsubscribe(self) }
        subscribed = [:]
    }

    private func run() async {
        var attempt = 0
        var rng = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            if let t = try? await TCPTransport.connect(host: host, port: port, key: key, options: options, loop: loop) {
                attempt = 0
                transport = t
                await send(.listDocuments(request: request()))
                for await frame in t.incoming {
                    guard let m = try? DaemonMessage(decoding: frame) else { break }
                    await handle(m)
                }
                transport = nil
                for (_, h) in subscribed { await h.unsubscribe(self) }
                subscribed = [:]
                pendingCreates = [:]
                probing = []
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: backoff.delay(attempt: attempt, using: &rng))
            attempt += 1
        }
    }

    private func request() -> UInt64 {
        defer { nextRequest += 1 }
        return nextRequest
    }

    private func send(_ m: DaemonMessage) async {
        try? await transport?.send(m.encoded())
    }

    nonisolated func push(_ document: DocumentID, _ operations: [ListOperation]) async {
        guard let t = await transport else { return }
        for f in DaemonMessage.operationFrames(document, batch: 1, operations, maxFrame: t.maxFrame) {
            try? await t.send(f)
        }
    }

    /// A document was created on this daemon: create it on the peer too.
    func documentCreated(_ id: DocumentID, name: String, epoch: UInt64) async {
        guard transport != nil, subscribed[id] == nil else { return }
        let r = request()
        pendingCreates[r] = id
        await send(.create(request: r, name: name, sections: [], id: id, epoch: epoch))
    }

    /// Anti-entropy, called about once a second by the daemon.
    func tick() async {
        guard transport != nil, let daemon else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- lastAntiEntropy >= daemon.configuration.antiEntropyInterval.nanos else { return }
        lastAntiEntropy = now
        await send(.listDocuments(request: request()))
        for id in subscribed.keys { await resync(id) }
    }

    /// Subscribes to `id` again with the current version: the peer sends what this daemon lacks,
    /// and its `subscribed` reply (its version) makes this link send what the peer lacks. Both
    /// directions, so a batch the peer refused (over its rate limit, its disk failing) or a frame
    /// lost with a connection reaches it at the next resync.
    private func resync(_ id: DocumentID) async {
        guard transport != nil, let h = subscribed[id] else { return }
        await send(.subscribe(document: id, epoch: await h.epoch, version: await h.document.version))
    }

    /// Documents with a resync already scheduled after a refusal.
    private var resyncScheduled: Set<DocumentID> = []

    /// A resync of `id` in `delay` (once, however many batches were refused meanwhile).
    private func scheduleResync(_ id: DocumentID, after delay: Duration) {
        guard resyncScheduled.insert(id).inserted else { return }
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.resyncScheduled(id)
        }
    }

    private func resyncScheduled(_ id: DocumentID) async {
        resyncScheduled.remove(id)
        await resync(id)
    }

    private func subscribe(_ id: DocumentID) async {
        guard subscribed[id] == nil, let daemon, let h = try? await daemon.host(id) else { return }
        subscribed[id] = h
        await send(.subscribe(document: id, epoch: await h.epoch, version: await h.document.version))
    }

    private func handle(_ m: DaemonMessage) async {
        guard let daemon else { return }
        switch m {
        case let .documents(request, remote):
            // Request 0: the peer announces new documents (a partial list).
            let complete = request != 0
            let local = await daemon.list()
            let localIDs = Set(local.map(\.id))
            let remoteIDs = Set(remote.map(\.id))
            for d in remote where !localIDs.contains(d.id) && !probing.contains(d.id) {
                // Only the peer has it: subscribe as a newcomer; our copy is made, with the
                // peer's epoch, when `subscribed` says which epoch that is.
                probing.insert(d.id)
                await send(.subscribe(document: d.id, epoch: 0, version: VersionVector()))
            }
            for d in local where complete && !remoteIDs.contains(d.id) {
                let h = try? await daemon.host(d.id)
                await documentCreated(d.id, name: d.name, epoch: await h?.epoch ?? 0)
            }
            for id in localIDs where subscribed[id] == nil && !pendingCreates.values.contains(id) {
                if epochConflicts[id] == nil { await subscribe(id) }
            }
        case let .created(request, id, _):
            if pendingCreates.removeValue(forKey: request) != nil { await subscribe(id) }
        case let .subscribed(id, name, epoch, version):
            if probing.remove(id) != nil, subscribed[id] == nil {
                guard (try? await daemon.create(name: name, sections: [], id: id, epoch: epoch)) != nil,
                      let h = try? await daemon.host(id) else { return }
                subscribed[id] = h
                await daemon.relayCreated(id, name: name, epoch: epoch, except: self)
            }
            guard let h = subscribed[id] else { return }
            let localEpoch = await h.epoch
            guard epoch == localEpoch else {
                epochConflicts[id] = (localEpoch, epoch)
                subscribed[id] = nil
                return
            }
            guard let s = await h.subscribe(self, version: version) else {
                // Unloaded meanwhile: subscribe again to the document's new host.
                subscribed[id] = nil
                return await subscribe(id)
            }
            if !s.missing.isEmpty { await push(id, s.missing) }
        case let .operations(id, _, ops):
            guard let h = subscribed[id] else { return }
            _ = try? await h.receive(ops, from: self)
        case let .error(request, doc, code, _):
            if let doc, code == .epochMismatch, let h = subscribed[doc] {
                epochConflicts[doc] = (await h.epoch, 0)
                subscribed[doc] = nil
                await h.unsubscribe(self)
            } else if let doc, code == .limit || code == .storage, subscribed[doc] != nil {
                // The peer refused a batch and applied nothing of it: send it again once the peer's
                // bucket has refilled (or its disk may have recovered), by a resync.
                scheduleResync(doc, after: .seconds(1))
            }
            pendingCreates[request] = nil
        case .ack, .statusReport, .hello, .subscribe, .unsubscribe, .create, .listDocuments, .status:
            break
        }
    }
}
