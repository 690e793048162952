import Foundation
import ListCRDT
import ListStore
import ListSync

/// The daemon's document registry: the resident documents' hosts, loaded when first asked for
/// (recovery off the actor), created, destroyed, renamed and listed, snapshotted to keep the
/// shared log short, and the settings every host is made with. The process around it (start,
/// stop, connections, housekeeping) is Daemon.swift; what it reports, DaemonStatus.swift.
extension Daemon {
    /// The resident host of document `id`, loading it (recovering its store) if needed.
    ///
    /// - Throws: ``DaemonError/unknownDocument(_:)`` or a storage failure.
    func host(_ id: DocumentID) async throws(DaemonError) -> DocumentHost {
        if destroying.contains(id) { throw .destroyed(id) }
        if let h = hosts[id] {
            if await !h.isClosed { return h }
            if hosts[id] === h { hosts[id] = nil }   // unloaded meanwhile: load it again
        }
        if let h = hosts[id] { return h }
        guard let folder else { throw .stopping }
        if let pending = loading[id] {
            do { return try await pending.value } catch { throw DaemonError.from(error) }
        }
        let replica = replica
        let clock = Self.clock
        let limits = configuration.pendingLimits
        let options = storeOptions()
        let maxFrame = configuration.tcp.maxPayload
        let snapshotLogBytes = configuration.snapshotLogBytes
        let log = log
        let compaction = compactionSettings
        let metrics = metrics
        let peered = peeredQuery
        // Recovery reads and replays the document's files: off this actor and the cooperative pool.
        let task = Task { () throws -> DocumentHost in
            try await offPool {
                let entry = try folder.list().first { $0.id == id }
                guard let entry else {
                    if folder.isDestroyed(id) { throw DaemonError.destroyed(id) }
                    throw DaemonError.unknownDocument(id)
                }
                let (store, document) = try folder.open(id, replica: replica, options: options)
                return DocumentHost(id: id, name: entry.name, store: store, document: document,
                                    epoch: try store.epoch, pendingLimits: limits, maxFrame: maxFrame, clock: clock,
                                    reopen: { try folder.open(id, replica: replica, options: options) }, log: log,
                                    snapshotLogBytes: snapshotLogBytes, compaction: compaction.policy, wallClock: compaction.wallClock,
                                    stabilityPath: folder.folder(of: id) + "/stability", fileSystem: compaction.fileSystem,
                                    metrics: metrics, peered: peered)
            }
        }
        loading[id] = task
        defer { loading[id] = nil }
        do {
            let h = try await task.value
            if isDestroyed(id, in: folder) {
                // Destroyed while it loaded: no host for it, and its store closed.
                await h.close()
                throw DaemonError.destroyed(id)
            }
            if let made = hosts[id], made !== h {
                // Created here while it loaded (a peer's copy): one store per document, the first.
                await h.close()
                return made
            }
            hosts[id] = h
            metrics.loaded()
            if let cluster { await cluster.attach(h) }
            return h
        } catch {
            if case DaemonError.destroyed? = error as? DaemonError { throw .destroyed(id) }
            if let made = hosts[id] { return made }
            let failure = DaemonError.from(error)
            if case .storage = failure, loadFailuresLogged[id] != failure.description {
                // A damaged snapshot or log: said in the log once per document and reason (the
                // client is told too, and may ask again and again).
                loadFailuresLogged[id] = failure.description
                log("document could not be loaded", ["document": id.description, "reason": failure.description])
            }
            throw failure
        }
    }

    /// What document `id` holds in the shared log beyond its snapshot (bytes of its records there)
    /// and when its newest record there was made durable (ms since 1970, if since the daemon
    /// started or found at its start); nil without a shared log. Its folder has the rest (its
    /// name and snapshot). Safe from any thread.
    public nonisolated func storageUsage(_ id: DocumentID) -> (logBytes: Int64, lastWriteMillis: UInt64?)? {
        guard let log = sharedLogHandle.withLock({ $0 }) else { return nil }
        return (log.uncoveredBytes(of: id), log.lastWrite(of: id))
    }

    /// Whether document `id` is being destroyed or was (its deletion record).
    private func isDestroyed(_ id: DocumentID, in folder: DataFolder) -> Bool {
        destroying.contains(id) || folder.isDestroyed(id)
    }

    /// Creates a document with `sections` (made by this daemon's replica), or, with `id` (a
    /// peer's copy), returns the existing one or makes an empty one with that id and `epoch`.
    func create(name: String, sections: [String], id: DocumentID?, epoch: UInt64) async throws(DaemonError)
        -> (DocumentID, UInt64) {
        guard let folder else { throw .stopping }
        if id == nil, let why = DocumentInfo.nameProblem(name) { throw .invalidName(why) }
        // A destroyed id is never made again, whoever holds a copy (Docs/Daemon.md, "Destroying a document").
        if let id, isDestroyed(id, in: folder) { throw .destroyed(id) }
        if let id, let existing = try? await host(id) { return (id, await existing.epoch) }
        // Another create of this id may have made it while this one waited: from this check to
        // `hosts[newID] = h` nothing awaits, so one store per document whatever the races.
        if let id, let made = hosts[id] { return (id, await made.epoch) }
        // Counted at start and at each create: no listing of the folder per create.
        let count = metrics.documentsOnDisk
        guard count < configuration.maxDocuments else { throw .limit("\(count) documents: the limit") }
        let newID: DocumentID
        do { newID = try folder.create(name: name, id: id) } catch { throw DaemonError.from(error) }
        metrics.setOnDisk(count + 1)
        log("document created", ["id": newID.description, "name": name, "from": id == nil ? "client" : "peer"])
        var options = storeOptions()
        let reopenOptions = options
        if epoch != 0 { options.newEpoch = { epoch } }
        let h: DocumentHost
        do {
            let (store, document) = try folder.open(newID, replica: replica, options: options)
            let replica = replica
            h = DocumentHost(id: newID, name: name, store: store, document: document, epoch: try store.epoch,
                             pendingLimits: configuration.pendingLimits, maxFrame: configuration.tcp.maxPayload, clock: Self.clock,
                             reopen: { try folder.open(newID, replica: replica, options: reopenOptions) }, log: log, held: true,
                             snapshotLogBytes: configuration.snapshotLogBytes, compaction: compactionSettings.policy,
                             wallClock: compactionSettings.wallClock, stabilityPath: folder.folder(of: newID) + "/stability",
                             fileSystem: compactionSettings.fileSystem, metrics: metrics, created: true,
                             peered: peeredQuery)
        } catch { throw DaemonError.from(error) }
        hosts[newID] = h
        metrics.loaded()
        // Cluster mode: its sections, and every later batch, are published.
        if let cluster { await cluster.attach(h) }
        // Held (not unloaded for want of a subscriber) until its sections are written.
        defer { Task { await h.release() } }
        // A document made here (not a peer's copy) starts with the sections asked for.
        if id == nil, !sections.isEmpty {
            let names = sections
            var doc = await h.document
            var ops: [ListOperation] = []
            for (i, n) in names.enumerated() {
                if let op = try? doc.insertSection(at: i, value: Data(n.utf8)) { ops.append(op) }
            }
            try await h.receiveOwn(ops)
        }
        let madeEpoch = await h.epoch
        // Cluster mode: every document made here goes into the cluster's list (a client's, a
        // device's with its own id; for a copy of the list's own, a compare-and-set that loses).
        if let cluster { await cluster.created(newID, name: name, epoch: madeEpoch) }
        if id == nil {
            let local = await h.localDescription
            for p in peers { await p.documentCreated(local) }
        }
        // Connected peers that follow the list hear of it at once (they have no link to us).
        let info = DocumentInfo(id: newID, name: name, epoch: madeEpoch, operations: 0)
        for c in connections.values { await c.announce(info) }
        return (newID, madeEpoch)
    }

    /// Destroys document `id` (Docs/Daemon.md, "Destroying a document"): its subscribers hear
    /// `destroyed` and are detached, its host closes, its deletion record is written durably,
    /// then its files are removed, and the peers are told. `epoch` 0: whatever epoch it is at;
    /// another: only at that epoch. Destroying a destroyed document answers its record's epoch
    /// (and finishes a removal left half done).
    ///
    /// - Returns: the epoch the document had.
    /// - Throws: ``DaemonError/unknownDocument(_:)``, ``DaemonError/epochMismatch(_:epoch:)``, or
    ///   a storage failure (the record may be written: the document is then destroyed, and the
    ///   removal is finished at the next start).
    func destroy(_ id: DocumentID, epoch: UInt64, reason: String) async throws(DaemonError) -> UInt64 {
        guard let folder else { throw .stopping }
        if let record = try? folder.destroyedRecord(id) {
            try? folder.remove(id)
            return record.epoch
        }
        guard !destroying.contains(id) else { throw .destroyed(id) }
        let h: DocumentHost?
        do { h = try await host(id) } catch {
            // A document that cannot be loaded (a damaged store) can still be destroyed, at any epoch.
            guard case .storage = error, epoch == 0, (try? folder.list())?.contains(where: { $0.id == id }) == true else { throw error }
            log("destroying a document that does not load", ["id": id.description, "error": error.description])
            h = nil
        }
        let current = await h?.epoch ?? 0
        guard epoch == 0 || epoch == current else { throw .epochMismatch(id, epoch: current) }
        guard !destroying.contains(id) else { throw .destroyed(id) }
        destroying.insert(id)
        defer { destroying.remove(id) }
        if let h {
            await h.destroy(reason: "document \(id) was destroyed (\(reason)); its id is not used again")
            if hosts[id] === h { hosts[id] = nil }
            metrics.unloaded()
        }
        do { try folder.destroy(id, epoch: current, time: Self.unixMillis()) } catch {
            log("document destroy failed", ["id": id.description, "error": error.description])
            throw DaemonError.from(error)
        }
        metrics.setOnDisk(max(0, metrics.documentsOnDisk - 1))
        log("document destroyed", ["id": id.description, "name": await h?.name ?? "", "epoch": String(current, radix: 16), "by": reason])
        for c in connections.values { await c.announceDestroyed(id, epoch: current) }
        for p in peers { await p.destroyOnPeer(id) }
        await cluster?.destroyed(id)
        return current
    }

    /// Renames document `id` to `name` (Docs/Daemon.md, "Renaming a document"): the name file is
    /// written durably, a resident host takes the new name (later subscribers hear it), and every
    /// connection that listed the documents hears the new info. Peers are not told; in cluster mode
    /// the cluster's document list takes the name first, and the other nodes take it from there.
    ///
    /// - Returns: the document's info with its new name.
    /// - Throws: ``DaemonError/invalidName(_:)`` (nothing written), ``DaemonError/unknownDocument(_:)``,
    ///   ``DaemonError/destroyed(_:)`` or a storage failure.
    func rename(_ id: DocumentID, to name: String, fromCluster: Bool = false) async throws(DaemonError) -> DocumentInfo {
        guard let folder else { throw .stopping }
        if let why = DocumentInfo.nameProblem(name) { throw .invalidName(why) }
        if isDestroyed(id, in: folder) { throw .destroyed(id) }
        // Cluster mode: the cluster's list first (every node takes its names from it), then here.
        if !fromCluster, let cluster, let failure = await cluster.renamed(id, name: name) { throw .cluster(failure) }
        do { try folder.rename(id, to: name) } catch {
            throw DaemonError.from(error)
        }
        // A host loading now may have read the old name: it takes the new one once loaded.
        if let pending = loading[id] { _ = try? await pending.value }
        var info = DocumentInfo(id: id, name: name, epoch: 0, operations: 0)
        if let h = hosts[id] {
            await h.rename(name)
            info.epoch = await h.epoch
            info.operations = await h.document.operationCount
        }
        log("document renamed", ["id": id.description, "name": name])
        for c in connections.values { await c.announce(info) }
        return info
    }

    /// The ids of the destroyed documents (their deletion records).
    func destroyedIDs() -> Set<DocumentID> {
        (try? folder?.destroyedIDs()) ?? []
    }

    /// Document `id`'s host if it is loaded (none is loaded for the asking).
    func residentHost(_ id: DocumentID) -> DocumentHost? { hosts[id] }

    /// Every document in the data folder.
    func list() async -> [DocumentInfo] {
        guard let folder, let entries = try? folder.list() else { return [] }
        var out: [DocumentInfo] = []
        for e in entries {
            if let h = hosts[e.id] {
                out.append(DocumentInfo(id: e.id, name: e.name, epoch: await h.epoch, operations: await h.document.operationCount))
            } else {
                out.append(DocumentInfo(id: e.id, name: e.name, epoch: 0, operations: 0))
            }
        }
        return out
    }

    static func unixMillis() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// A peer created a document here: tell the other peers.
    func relayCreated(_ document: PeerSession.LocalDocument, except: PeerLink?) async {
        for p in peers where p !== except { await p.documentCreated(document) }
    }

    /// Snapshots the documents that hold the shared log's oldest segment once it has more than
    /// ``DaemonConfiguration/checkpointSegments`` (loading those not resident), so that the
    /// segment is deleted: the log stays a few segments long whatever the documents do. At most
    /// 16 documents a turn.
    func checkpoint() async {
        guard let log = folder?.sharedLog else { return }
        for id in log.documentsHolding(moreThan: configuration.checkpointSegments).prefix(16) {
            guard let h = try? await host(id) else { continue }
            await h.checkpoint()
        }
    }

    /// The resident documents whose store failed, with the reason (disk full: they acknowledge
    /// nothing until their next batch reopens the store). Read by status and readiness.
    func failingStores() async -> [String: String] {
        var out: [String: String] = [:]
        for (id, h) in hosts { if let e = await h.storeFailure { out[id.description] = e } }
        return out
    }

    /// The store options of every document: recovery replays under the daemon's own buffer limits,
    /// so an operation refused live for a full buffer is refused at recovery too.
    private func storeOptions() -> StoreOptions {
        var options = StoreOptions()
        options.pendingLimits = configuration.pendingLimits
        return options
    }

    /// What a document host needs to compact: the policy (nil when compaction is off, or in a
    /// cluster, whose JetStream relays it cannot see past; with peers, the peers' stability
    /// gossip decides: Docs/Semantics.md §7, "Peers"), the wall clock and the file funnel.
    var compactionSettings: (policy: CompactionPolicy?, wallClock: @Sendable () -> UInt64, fileSystem: FileSystem) {
        (configuration.cluster != nil ? nil : configuration.compaction, configuration.wallClock, configuration.fileSystem)
    }
}
