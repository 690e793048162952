import ListCRDT
import ListStore
import ListSync
import ListSyncTCP

/// Something a document's frames go to: a client's or a peer's connection.
protocol DocumentSubscriber: AnyObject, Sendable {
    /// The subscriber's number in the daemon.
    var subscriberID: SubscriberID { get }
    /// Queues a frame of `document` (an encoded message) for the subscriber in `outbox`, without
    /// waiting; it leaves when the host flushes the outbox. Frames queued by one host keep their
    /// order.
    func deliver(_ document: DocumentID, _ frame: [UInt8], via outbox: inout TCPOutbox)
    /// Runs `body` once the subscriber's connection can take more.
    func whenRoom(_ body: @escaping @Sendable () -> Void)
    /// Cuts the subscriber off (it fell too far behind).
    func cut(reason: String)
    /// The document was destroyed: the subscriber was told (`error(0, document, destroyed)`) and
    /// is detached; it must forget the host.
    func documentDestroyed(_ document: DocumentID)
}

/// One resident document: the driver of its ``DocumentCore`` (the protocol's logic) with its store,
/// its subscribers and its snapshots.
///
/// It moves the core's actions to the world: appends go to the store (group commit: appends issued
/// while a sync runs share the next one), frames to the subscribers' connections, and the store's
/// answers back to the core. Promise 1 (durable before acknowledged or forwarded) is the core's:
/// the host only reports what the store did. When to snapshot (a new generation), write the
/// stability down, retire, gossip and compact is ``DocumentHostPolicy``'s decision, which the
/// simulator's daemons take too: the host feeds it events and does the I/O of its actions.
///
/// The host runs on the cooperative pool, as the connections do: a batch goes from its connection
/// to the host and back on the same thread. (On a dispatch queue of its own, each batch cost two
/// thread wake-ups more: about a quarter of the daemon's CPU under load, Docs/Storage.md, "Daemon
/// CPU per acknowledged edit".)
/// Its long blocking calls, a snapshot's writes and fsyncs and a store's reopening after a failed
/// disk, run off the pool (``exclusively(_:)``); meanwhile batches of this document wait, so that
/// no append is issued while a snapshot decides which position of the log it covers.
actor DocumentHost {

    nonisolated let id: DocumentID
    /// Its name, as `subscribed` sends it (``rename(_:)`` changes it).
    private(set) var name: String
    private(set) var core: DocumentCore
    private(set) var store: DocumentStore
    /// Opens the document's store again (recovering it from its files).
    private let reopen: @Sendable () throws -> (DocumentStore, ListDocument)
    private let log: @Sendable (String, [String: String]) -> Void
    private var subscribers: [SubscriberID: any DocumentSubscriber] = [:]
    /// When the host was last used (for idle unloading), in monotonic nanoseconds.
    private(set) var lastUsed: UInt64
    private let clock: @Sendable () -> UInt64
    private let pendingLimits: PendingLimits
    /// When to snapshot and compact (the snapshot threshold: ``DaemonConfiguration/snapshotLogBytes``).
    private var policy: DocumentHostPolicy
    /// Holds that keep the host loaded without a subscriber (a document being created).
    private var holds: Int
    /// Whether the host was unloaded or closed: it takes no subscriber and no batch.
    private(set) var isClosed = false
    /// Cluster mode: publishes a batch once it is in the local store, and returns when the batch
    /// may be acknowledged (``ClusterNode``); `nil` outside cluster mode.
    /// It returns nil when the batch may be released, or why not (the node is stopping).
    private var replicator: (@Sendable (DocumentID, [ListOperation]) async -> String?)?
    /// The cluster's sender number: its batches came from the cluster and are not published again.
    private var clusterSender: SubscriberID?
    /// Whether a snapshot or a reopening runs off the pool (``exclusively(_:)``), and who waits
    /// for it to end (``settleStore()``).
    private var storeBusy = false
    private var storeWaiters: [CheckedContinuation<Void, Never>] = []
    /// Cluster mode: told of each subscriber attached (the node reads the document's subject
    /// while someone here reads the document).
    private var interest: (@Sendable (DocumentID) async -> Void)?
    /// The compaction settings (nil: never compacts; the policy holds their rule), the wall
    /// clock's seconds, and where the document's stability is kept (`stability` in its folder).
    private let compaction: CompactionPolicy?
    private let wallClock: @Sendable () -> UInt64
    private let stabilityPath: String?
    private let fileSystem: FileSystem
    private let metrics: DaemonMetrics?
    /// ``DocumentCore/operationsSent`` when last added to ``metrics``.
    private var operationsCounted = 0
    /// Whether the daemon has peers (``Daemon/hasPeers``), asked at each decision
    /// (``ListSync/CompactionRule/peered``).
    private let peered: @Sendable () -> Bool
    /// The wall-clock time of the last compaction (0: none since the host was loaded).
    private(set) var lastCompactionTime: UInt64 = 0

    init(id: DocumentID, name: String, store: DocumentStore, document: ListDocument, epoch: UInt64,
         pendingLimits: PendingLimits, maxFrame: Int, clock: @escaping @Sendable () -> UInt64,
         reopen: @escaping @Sendable () throws -> (DocumentStore, ListDocument),
         log: @escaping @Sendable (String, [String: String]) -> Void, held: Bool = false,
         snapshotLogBytes: Int64 = DaemonConfiguration.defaultSnapshotLogBytes,
         compaction: CompactionPolicy? = nil, wallClock: @escaping @Sendable () -> UInt64 = CompactionPolicy.wallClock,
         stabilityPath: String? = nil, fileSystem: FileSystem = .system, metrics: DaemonMetrics? = nil,
         created: Bool = false, peered: @escaping @Sendable () -> Bool = { false }) {
        self.peered = peered
        self.policy = DocumentHostPolicy(snapshotLogBytes: snapshotLogBytes, snapshotBytes: (try? store.snapshotBytes) ?? 0,
                                         compaction: compaction?.rule(gossipInterval: Self.gossipInterval))
        self.holds = held ? 1 : 0
        self.reopen = reopen
        self.log = log
        self.id = id
        self.name = name
        self.store = store
        var document = document
        document.pendingLimits = pendingLimits
        self.pendingLimits = pendingLimits
        self.compaction = compaction
        self.wallClock = wallClock
        self.stabilityPath = stabilityPath
        self.fileSystem = fileSystem
        self.metrics = metrics
        let stability = Self.loadStability(stabilityPath, fileSystem: fileSystem, log: log, id: id, created: created,
                                           compacts: compaction != nil, now: wallClock())
        self.core = DocumentCore(id: id, name: name, epoch: epoch, document: document, maxFrame: maxFrame, stability: stability)
        // What the log says came through peer links (Docs/Semantics.md §7, "A lost stability file").
        core.noteRelayed(store.recoveryReport.relayed)
        self.clock = clock
        self.lastUsed = clock()
    }

    var epoch: UInt64 { core.epoch }
    var document: ListDocument { core.document }
    var subscriberCount: Int { subscribers.count }
    var storeFailure: String? { core.failure }
    var equivocations: Int { core.equivocations }
    var operationsIn: Int { core.operationsApplied }
    /// This document as a peer link describes it.
    var localDescription: PeerSession.LocalDocument {
        PeerSession.LocalDocument(id: id, name: name, epoch: core.epoch, version: core.durableVersion)
    }

    /// Cluster mode: every batch not from `sender` is passed to `replicator` after its local
    /// append and before it is released (acknowledged and forwarded).
    /// `interest` hears of each subscriber attached.
    func setReplicator(_ replicator: @escaping @Sendable (DocumentID, [ListOperation]) async -> String?, sender: SubscriberID,
                       interest: @escaping @Sendable (DocumentID) async -> Void) {
        self.replicator = replicator
        clusterSender = sender
        self.interest = interest
    }

    /// The operations that are durable here (what a cluster read checkpoint may cover).
    var durableVersion: VersionVector { core.durableVersion }

    /// Cluster mode: the document's durable operations and their version, for a cluster
    /// snapshot (batches in flight are left out, so it is taken under load too); nil while the
    /// store is failing or closed.
    ///
    /// - Complexity: O(operations).
    func clusterSnapshot() -> (operations: [ListOperation], version: VersionVector)? {
        guard core.failure == nil, !isClosed else { return nil }
        return (core.durableOperations, core.durableVersion)
    }

    // MARK: Events

    /// Attaches `subscriber` (``DocumentCore/subscribe(_:epoch:version:)``): true when attached, false
    /// when refused (another epoch; the subscriber got the error), nil if the host was unloaded
    /// meanwhile (ask the daemon for the document's host again).
    /// `relay`: the subscriber is a peer link (``DocumentCore/markRelay(_:daemon:gossips:)``).
    /// `peer`: the peer daemon's id, if known; `gossips`: whether the subscriber takes the
    /// stability table; `ownLink`: the subscriber is this daemon's own link to the peer
    /// (``DocumentCore/subscribe(_:epoch:version:ownLink:)``).
    func subscribe(_ subscriber: any DocumentSubscriber, epoch: UInt64, version: VersionVector, relay: Bool = false,
                   peer: ReplicaID? = nil, gossips: Bool = true, ownLink: Bool = false, learnsParted: Bool = false,
                   offersFloor: Bool = false) async -> Bool? {
        guard !isClosed else { return nil }
        lastUsed = clock()
        let actions = core.subscribe(subscriber.subscriberID, epoch: epoch, version: version, ownLink: ownLink,
                                     learnsParted: learnsParted,
                                     relay: relay ? DocumentCore.RelayMark(daemon: peer, gossips: gossips) : nil,
                                     offersFloor: offersFloor)
        if core.isSubscribed(subscriber.subscriberID) {
            subscribers[subscriber.subscriberID] = subscriber
            if let interest { Task { [id] in await interest(id) } }
        } else { subscriber.deliverAll(id, actions) }
        await perform(actions)
        return subscribers[subscriber.subscriberID] != nil
    }

    /// Detaches a subscriber; the end of its presence, if it had one in progress, goes to the others.
    func unsubscribe(_ subscriber: SubscriberID) {
        let ends = core.unsubscribe(subscriber)
        subscribers[subscriber] = nil
        lastUsed = clock()
        deliver(ends)
    }

    /// A subscriber's presence: relayed to the other subscribers that take presence. Nothing is
    /// stored: not in the log, not in a snapshot (Docs/Protocol.md, "Presence").
    func presence(_ presence: Presence, from subscriber: SubscriberID) {
        deliver(core.presence(presence, from: subscriber))
    }

    /// Delivers frames the core sends outside batches (presence, the floor after a compaction,
    /// the stability table): `send`, and `close` of a subscriber that holds operations a peer
    /// parted (``ListSync/DocumentCore``'s housekeeping; it subscribes again).
    private func deliver(_ actions: [DocumentCore.Action]) {
        var outbox = TCPOutbox()
        for action in actions {
            if case let .close(to, reason) = action {
                let s = subscribers.removeValue(forKey: to)
                deliver(core.unsubscribe(to))
                s?.cut(reason: reason)
                continue
            }
            guard case let .send(to, frame) = action else {
                assertionFailure("a presence relay or a floor asked for \(action)")
                continue
            }
            subscribers[to]?.deliver(id, frame, via: &outbox)
        }
        outbox.flush()
        countSent()
    }

    /// Anti-entropy from a subscriber.
    func hello(_ subscriber: SubscriberID, version: VersionVector) async {
        lastUsed = clock()
        await perform(core.hello(subscriber, version: version))
    }

    /// What a subscriber has seen (``DocumentCore/seen(_:replica:version:role:now:)``); a change
    /// of who counts is written down at once, and the document compacted if it is due.
    func seen(_ subscriber: SubscriberID, replica: ReplicaID, version: VersionVector, role: SeenRole) async {
        await housekeep(.seen(subscriber, replica: replica, version: version, role: role))
    }

    /// A peer daemon's stability table, from the peer link attached as `subscriber`
    /// (``DocumentCore/peerStability(_:from:entries:now:)``): written down if it changed, then
    /// the document compacted if it is due.
    func peerStability(_ subscriber: SubscriberID, from daemon: ReplicaID, entries: [ReplicaID: PeerStability.Entry]) async {
        await housekeep(.peerStability(subscriber, from: daemon, entries: entries))
    }

    /// A device made edits of its own again (``DocumentCore/remade(_:ranges:now:)``): named
    /// parted in this daemon's table, written down and gossiped.
    func remade(_ subscriber: SubscriberID, ranges: PartedRanges) async {
        // Only this daemon's own entry changes (not the union of every entry's ranges).
        func own() -> PartedRanges? { core.stability.peers.entries[core.document.replica]?.parted }
        let before = own()
        await housekeep(.remade(subscriber, ranges: ranges))
        if own() != before {
            log("device edits made again named parted", ["document": id.description, "ranges": ranges.description])
        }
    }

    /// A peer answered this daemon's link with its snapshot (its floor is past this copy): if the
    /// copy holds nothing the snapshot lacks (an empty copy of a document copied after it was
    /// compacted), the snapshot becomes the copy: written to the store as a new generation, then
    /// every subscriber cut off to subscribe again (``DocumentCore/replace(with:)``). Returns
    /// whether it did; otherwise nothing changes.
    func adoptSnapshot(_ bytes: [UInt8]) async -> Bool {
        await settleStore()
        guard !isClosed, core.isQuiet, !storeBusy,
              let snapshot = try? ListDocument(snapshot: bytes, replica: core.document.replica),
              core.isHeld(by: snapshot) else { return false }
        let store = store, relayed = core.relayedRuns
        do { try await exclusively { try store.compact(snapshot, relayed: relayed) } } catch {
            log("peer snapshot not written", ["document": id.description, "error": "\(error)"])
            return false
        }
        // Batches waited while it was written: none is in flight.
        guard core.isQuiet, core.isHeld(by: snapshot) else { return false }
        await perform(core.replace(with: snapshot))
        policy.snapshotWritten(snapshotBytes: (try? store.snapshotBytes) ?? 0)
        return true
    }

    /// A peer answered this daemon's link with its snapshot, and this copy holds operations it
    /// lacks (Docs/Semantics.md §7, "A copy left out of a peer's floor"): the copy merged back
    /// onto the snapshot (``DocumentCore/mergeBack(_:)``) is written to the store as a new
    /// generation, then replaces the copy (``DocumentCore/replace(with:parting:)``). Returns what
    /// was merged back, or nil (nothing changed: the snapshot does not load, the copy cannot be
    /// merged, or the store failed).
    func mergeBackSnapshot(_ bytes: [UInt8]) async -> ListDocument.MergeBack? {
        await settleStore()
        guard !isClosed, core.isQuiet, !storeBusy,
              let snapshot = try? ListDocument(snapshot: bytes, replica: core.document.replica),
              let (merged, merge) = core.mergeBack(snapshot) else { return nil }
        let store = store, relayed = core.relayedRuns
        // The new generation lacks logged operations (those made again under other ids).
        do { try await exclusively { try store.replace(with: merged, relayed: relayed) } } catch {
            log("merged copy not written", ["document": id.description, "error": "\(error)"])
            return nil
        }
        // Batches waited while it was written (``settleStore()``), and none runs before the
        // replacement: no await between the write's end and it.
        let actions = core.replace(with: merged, parting: merge)
        await perform(actions)
        policy.snapshotWritten(snapshotBytes: (try? store.snapshotBytes) ?? 0)
        return merge
    }

    /// The core keeps operations waiting on ones a peer parted in a merge back
    /// (Docs/Semantics.md §7, "Waiting edits on parted originals"): the copy with them made
    /// again (``DocumentCore/remakePartedWaiting()``) is written to the store as a new
    /// generation (the originals leave the log), then replaces the core's
    /// (``DocumentCore/replace(with:parting:)``). Nothing if the store fails (tried again at the
    /// next housekeeping).
    private func remakePartedWaiting() async {
        await settleStore()
        guard !isClosed, core.isQuiet, !storeBusy, let (remade, merge) = core.remakePartedWaiting() else { return }
        let store = store, relayed = core.relayedRuns
        do { try await exclusively { try store.replace(with: remade, relayed: relayed) } } catch {
            log("copy with waiting operations made again not written", ["document": id.description, "error": "\(error)"])
            return
        }
        // Batches waited while it was written (``settleStore()``), and none runs before the
        // replacement: no await between the write's end and it (as ``mergeBackSnapshot(_:)``).
        let actions = core.replace(with: remade, parting: merge)
        await perform(actions)
        policy.snapshotWritten(snapshotBytes: (try? store.snapshotBytes) ?? 0)
        log("waiting operations on parted ones made again", ["document": id.description,
                                                            "parted": "\(merge.parted.count)", "made": "\(merge.made.count)",
                                                            "dropped": "\(merge.dropped.count)"])
    }

    /// About once a second (the daemon's housekeeping): a document with peers keeps its entry
    /// heard of, retires silent peers, and sends its stability table if it changed
    /// (Docs/Semantics.md §7, "Peers").
    func peerTick() async {
        guard !isClosed, compaction != nil, core.isPeered else { return }
        await compactIfDue()
    }

    /// The least time between two stability tables sent, in nanoseconds.
    static let gossipInterval: UInt64 = 1_000_000_000

    /// A subscriber's connection has room again.
    func roomAvailable(_ subscriber: SubscriberID) async {
        await perform(core.roomAvailable(subscriber))
    }

    /// A batch from `sender` (nil: the daemon itself). Its answer goes to the sender through the core.
    ///
    /// - Returns: for metrics and the log, the equivocations it held (with the last one's id) and
    ///   the store's failure, if any; and, for a host that closed (destroyed or unloaded) before
    ///   the batch came in, the refusal the caller must answer the sender with itself (the host
    ///   no longer holds its subscribers).
    @discardableResult
    func receive(_ ops: [ListOperation], batch: UInt64, from sender: SubscriberID?) async
        -> (equivocations: Int, lastEquivocation: OpID?, failure: String?, closed: (code: SyncErrorCode, text: String)?) {
        lastUsed = clock()
        await settleStore()
        if isClosed {
            if let reason = core.destroyedReason { return (0, nil, nil, (.destroyed, reason)) }
            return (0, nil, nil, (.storage, "the document is being unloaded; send it again"))
        }
        if core.failure != nil {
            do { try await reopenStore() } catch {
                if let sender { await perform(core.refuse(batch: batch, from: sender, code: .storage, text: "\(error)")) }
                return (0, nil, "\(error)", nil)
            }
        }
        let before = core.equivocations
        await perform(core.receive(ops, batch: batch, from: sender), replicate: replicator != nil && sender != clusterSender)
        return (core.equivocations - before, core.lastEquivocation, core.failure, nil)
    }

    /// Receives operations the daemon made itself (a new document's sections) and returns once they
    /// are durable; throws the store's failure.
    func receiveOwn(_ ops: [ListOperation]) async throws(DaemonError) {
        await receive(ops, batch: 0, from: nil)
        if let failure = core.failure { throw .storage(failure) }
    }

    // MARK: Actions

    private func perform(_ actions: [DocumentCore.Action], replicate: Bool = false) async {
        // Consecutive sends (a batch's fan-out and acknowledgement) leave together: one hand-over
        // to the event loop, flushed before any other action so that the order holds.
        var outbox = TCPOutbox()
        for action in actions {
            if case let .send(to, frame) = action {
                subscribers[to]?.deliver(id, frame, via: &outbox)
                continue
            }
            outbox.flush()
            switch action {
            case let .append(ticket, ops, relayed):
                do {
                    try await store.append(ops, relayed: relayed)
                    // Cluster mode: published (and, with `--ack cluster`, acknowledged by
                    // JetStream) before the batch is released; the core releases in order.
                    if replicate, let replicator, let failure = await replicator(id, ops) {
                        // Not in the cluster (`--ack cluster`, the node stopping): not acknowledged;
                        // the batches in flight are refused, as for a failed append.
                        log("cluster publish failed", ["document": id.description, "error": failure])
                        await perform(core.appendFailed(ticket: ticket, reason: "cluster: \(failure)"))
                        continue
                    }
                    let released = core.durable(ticket: ticket)
                    // A snapshot, if due, before the acknowledgements go out (the policy's order).
                    await perform(policy: decide(.committed(logBytes: try? store.logSize)))
                    await perform(released)
                    await housekeep(.released)
                } catch {
                    log("store failed", ["document": id.description, "error": error.description])
                    await perform(core.appendFailed(ticket: ticket, reason: error.description))
                }
            case .send:
                preconditionFailure("sends are queued above")
            case let .awaitRoom(to):
                subscribers[to]?.whenRoom { [weak self] in
                    Task { await self?.roomAvailable(to) }
                }
            case let .close(to, reason):
                let s = subscribers.removeValue(forKey: to)
                deliver(core.unsubscribe(to))
                s?.cut(reason: reason)
            }
        }
        outbox.flush()
        countSent()
    }

    /// Adds the operations the core put in frames since the last call to the daemon's metrics
    /// (`operations_out`).
    private func countSent() {
        let sent = core.operationsSent
        guard sent != operationsCounted else { return }
        metrics?.sent(operations: sent - operationsCounted, bytes: 0)
        operationsCounted = sent
    }

    /// Reopens the failed store: recovery keeps every record that reached the disk whole, and the
    /// core continues from that document (what the disk holds is the truth).
    private func reopenStore() async throws(StoreError) {
        try? store.close()
        let reopen = reopen
        let (fresh, recovered): (DocumentStore, ListDocument)
        do { (fresh, recovered) = try await exclusively { try reopen() } } catch {
            throw (error as? StoreError) ?? .failed(first: "\(error)")
        }
        store = fresh
        var document = recovered
        document.pendingLimits = pendingLimits
        let before = core.document.operationCount
        await perform(core.recovered(document))
        core.noteRelayed(fresh.recoveryReport.relayed)
        log("store reopened", ["document": id.description, "operations_before": "\(before)",
                               "operations_recovered": "\(document.operationCount)"])
    }

    // MARK: Compaction

    /// Compacts the document if the policy allows it and the core finds a quiescent stable
    /// version (``DocumentHostPolicy``, ``DocumentCore/housekeeping(stabilityNow:now:rule:)``):
    /// the core compacts in memory as the policy decides, the stability is written, then the
    /// store writes a format-3 snapshot and starts a new log generation, only then dropping the old one
    /// (``DocumentStore/compact(_:)``). A store failure leaves the old generation whole on disk
    /// (it loads uncompacted: safe). Tried after every batch and every `seen`, and by the
    /// daemon's housekeeping once a second (so that a document that went quiet, its last client
    /// gone or its interval not yet over at its last batch, is compacted without waiting for
    /// another connection).
    func compactIfDue() async {
        await housekeep(.tick)
    }

    /// Feeds `event` to the policy and does what it decides, unless the host is closed.
    private func housekeep(_ event: DocumentHostPolicy.Event) async {
        guard !isClosed else { return }
        metrics?.documentBytes(id.description, byteCounts)
        await perform(policy: decide(event))
    }

    /// The policy's decision about `event`, in the host's clocks.
    private func decide(_ event: DocumentHostPolicy.Event) -> [DocumentHostPolicy.Action] {
        policy.compaction?.peered = peered()
        return policy.handle(event, core: &core, stabilityNow: wallClock(), now: clock(), storeBusy: storeBusy)
    }

    /// Does the policy's actions in order: the I/O they name, the log and the metrics.
    /// `snapshotEvent`: the log's name for a snapshot written.
    private func perform(policy actions: [DocumentHostPolicy.Action], snapshotEvent: String = "document snapshotted") async {
        for action in actions {
            switch action {
            case .snapshot:
                await writeSnapshot(event: snapshotEvent)
            case .saveStability:
                saveStability()
            case let .send(frames):
                deliver(frames)
            case let .retired(replicas):
                metrics?.retired(replicas.count)
                log("senders retired", ["document": id.description, "replicas": replicas.map(\.description).joined(separator: ","),
                                        "after_seconds": "\(compaction?.retireAfterSeconds ?? 0)"])
            case let .forgotten(daemons):
                log("peer daemons forgotten", ["document": id.description, "daemons": daemons.map(\.description).joined(separator: ",")])
            case let .compactionRefused(error):
                log("compaction refused", ["document": id.description, "error": error.description])
            case let .compact(point, report):
                await writeCompaction(at: point, report)
            case .remakeParted:
                await remakePartedWaiting()
            }
        }
    }

    /// Writes the compacted document (the policy compacted the core at `point`): the snapshot
    /// and the log's trim off the pool, batches waiting meanwhile (``settleStore()``); then the
    /// floor to the devices that compact their copies, once it is durable here.
    private func writeCompaction(at point: VersionVector, _ report: CompactionReport) async {
        let store = store, compacted = core.document, relayed = core.relayedRuns
        // A floor short of the document's version: compacted at a stable prefix while busy.
        let prefix = point != compacted.version
        do { try await exclusively { try store.compact(compacted, relayed: relayed) } } catch {
            log("compaction snapshot failed", ["document": id.description, "error": "\(error)"])
            return
        }
        let announce = policy.compactionWritten(core: core, snapshotBytes: (try? store.snapshotBytes) ?? 0)
        // The old history and the copies the compaction went through are freed now.
        FreedMemory.giveBack()
        lastCompactionTime = wallClock()
        metrics?.compacted(report, at: lastCompactionTime)
        metrics?.documentBytes(id.description, byteCounts)
        await perform(policy: announce)
        log("document compacted", ["document": id.description, "floor": point.description,
                                   "operations_dropped": "\(report.operationsDropped)", "stable_prefix": "\(prefix)",
                                   "slots": "\(report.slotsBefore)->\(report.slotsAfter)",
                                   "items": "\(report.itemsBefore)->\(report.itemsAfter)",
                                   "generation": "\((try? store.generation) ?? 0)"])
    }

    /// The bytes a compaction would free now (less what the last one here kept: the bytes
    /// trigger's count, ``DocumentCore/reclaimableSinceCompaction``) and the document's bytes
    /// (``ListCRDT/ListDocument/documentBytes``), for `status` and `/metrics`.
    ///
    /// - Complexity: O(1).
    var byteCounts: (reclaimable: Int, document: Int) { (core.reclaimableSinceCompaction, core.document.documentBytes) }

    /// For `status`: the floor (the version it was last compacted at), when it was compacted in
    /// this run (Unix seconds), the senders that count and those retired.
    /// With peers: the peer daemons in its stability table, and how many of them reported this
    /// daemon's version (Docs/Semantics.md §7, "Peers").
    /// How many operations of the copy came through a peer link since its last compaction
    /// (``DocumentCore/relayedRuns``, kept in the log across restarts).
    var relayedOperations: Int { core.relayedRuns.count }

    var compactionStatus: (floor: String?, lastCompaction: UInt64, senders: Int, retired: Int, peers: Int?, peersAtVersion: Int,
                           refusedCompacted: Int, waitsFor: String?, prefixWaitsFor: String?) {
        let me = core.document.replica
        let others = core.stability.peers.entries.filter { $0.key != me }
        // Why it does not compact now, once there is anything since the floor to compact.
        let block = compaction != nil && core.document.operationCount > 0 ? core.compactionBlock : "nothing"
        return (core.document.historyFloor?.description, lastCompactionTime, core.stability.tracker.acknowledged.count,
                core.stability.tracker.retired.count, core.isPeered ? others.count : nil,
                others.values.filter { $0.version == core.document.version }.count, core.refusedBeforeFloor,
                block == "nothing" ? nil : block,
                compaction != nil && core.isPeered && core.document.operationCount > 0 ? core.peerPrefixBlock : nil)
    }

    /// Writes the document's stability (``DocumentStability``) atomically; a failure is logged
    /// (the next change tries again; lost, stability restarts from nothing, which is safe).
    private func saveStability() {
        guard let stabilityPath else { return }
        Self.write(core.stability, to: stabilityPath, fileSystem: fileSystem, log: log, id: id)
    }

    /// Writes `stability` to `path` atomically; a failure is logged.
    private static func write(_ stability: DocumentStability, to path: String, fileSystem fs: FileSystem,
                              log: (String, [String: String]) -> Void, id: DocumentID) {
        let folder = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        do { try fs.writeAtomically(stability.encoded(), to: path, folder: folder) } catch {
            log("stability not written", ["document": id.description, "error": error.description])
        }
    }

    /// The document's stability: nothing known for a document `created` now (written at once,
    /// so that a file missing later means a file lost), else what its file says, or a stability
    /// *lost* (``DocumentStability/recovered(from:now:)``, written at once) where the file is
    /// missing or does not decode: the document may have peers this daemon no longer knows of,
    /// so it is not compacted until a peer's table arrives or the retire period passes
    /// (Docs/Semantics.md §7, "A lost stability file"). Without compaction, nothing is written.
    private static func loadStability(_ path: String?, fileSystem fs: FileSystem, log: (String, [String: String]) -> Void,
                                      id: DocumentID, created: Bool, compacts: Bool, now: UInt64) -> DocumentStability {
        guard let path else { return DocumentStability() }
        var stability = DocumentStability()
        if !created {
            let bytes = fs.exists(path) ? try? fs.readFile(path) : nil
            let (recovered, problem) = DocumentStability.recovered(from: bytes, now: now)
            guard let problem, compacts else { return recovered }
            stability = recovered
            log("stability lost", ["document": id.description, "error": problem,
                                   "consequence": "not compacted until a peer's table arrives or --retire-after passes; every author holds compaction back until it reports or is retired"])
        }
        guard compacts else { return stability }
        write(stability, to: path, fileSystem: fs, log: log, id: id)
        return stability
    }

    // MARK: Lifetime

    /// Writes a snapshot (a new generation) if the log has grown past the snapshot threshold and
    /// nothing is in flight (the document is unloaded, or the daemon stops).
    func snapshotIfLarge() async {
        guard !isClosed else { return }
        await perform(policy: decide(.unloading(logBytes: try? store.logSize)))
    }

    /// Writes the document as the store's next snapshot, off the pool (``exclusively(_:)``), tells
    /// the policy how it went, and logs `event` (a failure is logged, not thrown).
    private func writeSnapshot(event: String) async {
        let store = store, document = core.document, relayed = core.relayedRuns
        let size = (try? store.logSize) ?? 0
        do {
            try await exclusively { try store.snapshot(document, relayed: relayed) }
            policy.snapshotWritten(snapshotBytes: (try? store.snapshotBytes) ?? 0)
            log(event, ["document": id.description, "log_bytes": "\(size)", "generation": "\((try? store.generation) ?? 0)"])
        } catch StoreError.snapshotBehindLog {
            // Another append is on its way (issued, not yet answered): the next batch tries again.
            policy.snapshotFailed(logBytes: size, retryNextBatch: true)
        } catch {
            policy.snapshotFailed(logBytes: size, retryNextBatch: false)
            log("snapshot failed", ["document": id.description, "error": "\(error)"])
        }
    }

    /// Runs blocking store `work` on a Dispatch thread (on the cooperative pool it would hold one
    /// of its few threads, and every connection and document waiting for one). Until it ends,
    /// ``settleStore()`` holds back whatever would append, reopen or close.
    ///
    /// - Precondition: nothing else runs so (callers check ``storeBusy`` or settled first).
    private func exclusively<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        precondition(!storeBusy, "two blocking store calls of one document at once")
        storeBusy = true
        defer {
            storeBusy = false
            let waiters = storeWaiters
            storeWaiters = []
            for w in waiters { w.resume() }
        }
        return try await offPool(work)
    }

    /// Returns once no blocking store call runs: a batch (an append, or a reopening) and a close
    /// wait here, since a snapshot's position in the log must not pass a record its document lacks.
    private func settleStore() async {
        while storeBusy { await withCheckedContinuation { storeWaiters.append($0) } }
    }

    /// Snapshots the document now if nothing is in flight (the daemon's checkpoint of the shared
    /// log: the snapshot lets the log drop the segments that held this document's records).
    func checkpoint() async {
        guard !isClosed else { return }
        await perform(policy: decide(.checkpoint(logBytes: try? store.logSize)), snapshotEvent: "document checkpointed")
    }

    /// Closes the store (the daemon stops); the host takes nothing more.
    func close() async {
        await settleStore()
        if !isClosed { await perform(policy: decide(.closing)) }
        closeStore()
    }

    /// Marks the host closed and closes its store (no snapshot is being written).
    private func closeStore() {
        isClosed = true
        metrics?.documentBytes(id.description, nil)
        try? store.close()
    }

    /// The document was renamed (its name file written): later subscribers hear the new name.
    func rename(_ newName: String) {
        name = newName
        core.name = newName
    }

    /// Destroys the document in memory (``DocumentCore/destroy(reason:)``): every subscriber is
    /// told and detached, batches in flight are answered, and the store is closed. The daemon
    /// removes the files next.
    func destroy(reason: String) async {
        await settleStore()
        let actions = core.destroy(reason: reason)
        var outbox = TCPOutbox()
        for case let .send(to, frame) in actions { subscribers[to]?.deliver(id, frame, via: &outbox) }
        outbox.flush()
        let ended = subscribers.values
        subscribers = [:]
        for s in ended { s.documentDestroyed(id) }
        closeStore()
    }

    /// Ends a hold.
    func release() { holds -= 1 }

    /// Unloads the host if nobody is subscribed and nothing is in flight: a snapshot if the log is
    /// large, then the store closed. The check is made again after the snapshot (others came in
    /// while it was written), and the close follows it in the same step of this actor.
    func unloadIfIdle() async -> Bool {
        guard isIdle else { return false }
        await snapshotIfLarge()
        await settleStore()
        guard isIdle else { return false }
        closeStore()
        return true
    }

    /// Nobody subscribed or holding the host, nothing in flight, not closed.
    private var isIdle: Bool { subscribers.isEmpty && holds == 0 && !isClosed && core.inFlightCount == 0 }
}

extension DocumentSubscriber {
    /// Delivers the frames of `actions` addressed to this subscriber (a refused subscription).
    func deliverAll(_ document: DocumentID, _ actions: [DocumentCore.Action]) {
        var outbox = TCPOutbox()
        for case let .send(to, frame) in actions where to == subscriberID { deliver(document, frame, via: &outbox) }
        outbox.flush()
    }
}
