import Foundation
import ListSyncHTTP
import ListSyncTCP

/// The daemon's status at one moment, the one source of both its renderings: `listsync status`
/// (``json()``) and the admin port's Prometheus `/metrics` (``prometheus()``), so both say the
/// same values.
///
/// The counters, the listener's refusals and its handshake gauges are read without the daemon's
/// actor and without walking a document or a file (``Daemon/counterStatus()``, all `/metrics`
/// reads: Docs/Security.md, "Admin port"). ``detail`` adds what `status` shows besides, which walks
/// the resident documents (``Daemon/status()``).
struct DaemonStatus {
    /// What only `listsync status` shows: read on the daemon's actor, walking its documents.
    struct Detail {
        /// The address it listens on, and its data folder.
        var address: String, dataFolder: String
        /// Open connections, the event loop's poller, whether compaction is on.
        var connections: Int, poller: String, compaction: Bool
        /// Each peer link: `address`, `connected`, `discovered`.
        var peers: [[String: Any]]
        /// Each resident document: id, name, operations, subscribers, its store's failure, its
        /// compaction (``DocumentHost/compactionStatus``).
        var resident: [[String: Any]]
        /// The resident documents whose store failed, with the reason.
        var failingStores: [String: String]
        /// Device credentials issued and revoked (the devices file), devices connected.
        var devicesIssued: Int, devicesRevoked: Int, devicesConnected: Int
        /// The configured limits, by name.
        var limits: [String: Any]
        /// Cluster mode's figures (Docs/Cluster.md); nil outside it.
        var cluster: [String: Any]?
    }

    /// The counters and gauges (``DaemonMetrics``) at the moment of reading.
    var counters: DaemonMetrics.Counters
    /// Connections the listener refused before or during the handshake, by reason.
    var refused: [String: Int]
    /// The handshake pool's gauges, and the pool's size.
    var handshakes: HandshakeGauges, handshakePool: Int
    /// This process's resident set size, in bytes.
    var residentBytes: Int
    /// What `status` adds; nil for `/metrics`.
    var detail: Detail?

    /// Quantile `q` of the durable-append latency, from the histogram (the bucket's upper bound),
    /// in ms; nil before the first append.
    ///
    /// - Complexity: O(number of buckets).
    func appendQuantile(_ q: Double) -> Double? {
        let c = counters
        guard c.appendCount > 0 else { return nil }
        let target = Int((Double(c.appendCount) * q).rounded(.up))
        var seen = 0
        for (i, n) in c.appendBuckets.enumerated() {
            seen += n
            if seen >= target { return i < DaemonMetrics.bucketBounds.count ? DaemonMetrics.bucketBounds[i] * 1000 : .infinity }
        }
        return nil
    }

    /// The status as the JSON object `listsync status` prints (keys sorted).
    ///
    /// - Complexity: O(resident documents + peers + counters).
    func json() -> String {
        let c = counters
        var object: [String: Any] = [
            "documents_on_disk": c.documentsOnDisk,
            "documents_resident": c.documentsResident,
            "refused_connections": refused,
            "handshakes": ["in_progress": handshakes.inHandshake, "peak": handshakes.peakInHandshake, "completed": handshakes.completed,
                           "failed_proofs": handshakes.failedProofs, "evicted": handshakes.evicted, "pool": handshakePool],
            "rss_bytes": residentBytes,
            "bytes_on_disk": c.diskBytes ?? 0,
            "connections_total": c.connectionsTotal, "operations_in": c.operationsIn, "operations_out": c.operationsOut,
            "batches_acknowledged": c.batchesAcknowledged, "batches_refused": c.batchesRefused,
            "equivocations_refused": c.equivocations, "batches_rate_limited": c.rateLimited,
            "bytes_in": c.bytesIn, "bytes_out": c.bytesOut, "storage_failures": c.storageFailures,
            "documents_loaded_total": c.documentsLoaded, "documents_unloaded_total": c.documentsUnloaded,
            "admin_unauthorized": c.adminUnauthorized,
            "presence_in": c.presenceIn, "presence_dropped": c.presenceDropped,
            "compactions": c.compactions, "operations_collected": c.operationsCollected,
            "slots_collected": c.slotsCollected, "senders_retired": c.sendersRetired,
            "last_compaction": c.lastCompaction,
        ]
        if !c.discovery.isEmpty { object["discovery"] = c.discovery }
        if let e = c.lastStorageError { object["last_storage_error"] = e }
        if let p50 = appendQuantile(0.5), let p99 = appendQuantile(0.99), p99.isFinite {
            object["fsync_p50_ms"] = p50
            object["fsync_p99_ms"] = p99
        }
        if let d = detail {
            object["address"] = d.address
            object["data_folder"] = d.dataFolder
            object["connections"] = d.connections
            object["poller"] = d.poller
            object["compaction"] = d.compaction ? "on" : "off"
            object["peers"] = d.peers
            object["resident"] = d.resident
            // Documents whose store failed (disk full, I/O error): they acknowledge nothing until
            // a write succeeds again (each new batch retries by reopening the store).
            object["storage"] = d.failingStores.isEmpty ? "ok" : "failing"
            object["store_errors"] = d.failingStores
            object["devices"] = ["issued": d.devicesIssued, "revoked": d.devicesRevoked, "connected": d.devicesConnected,
                                 "refused_total": c.devicesRefused]
            object["limits"] = d.limits
            if let cluster = d.cluster { object["cluster"] = cluster }
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The metrics in the Prometheus text format.
    ///
    /// - Complexity: O(number of metric lines).
    func prometheus() -> String {
        let c = counters
        var m = PrometheusText()
        m.gauge("listsync_connections", help: "Open client and peer connections.", value: c.connectionsOpen)
        m.counter("listsync_connections_total", help: "Connections accepted since start.", value: c.connectionsTotal)
        m.gauge("listsync_documents_resident", help: "Documents loaded in memory.", value: c.documentsResident)
        m.gauge("listsync_documents_on_disk", help: "Documents in the data folder.", value: c.documentsOnDisk)
        m.counter("listsync_operations_in_total", help: "Operations received and applied.", value: c.operationsIn)
        m.counter("listsync_operations_out_total", help: "Operations sent to subscribers.", value: c.operationsOut)
        m.counter("listsync_bytes_in_total", help: "Message bytes received.", value: c.bytesIn)
        m.counter("listsync_batches_acknowledged_total", help: "Batches acknowledged (durable).", value: c.batchesAcknowledged)
        m.counter("listsync_rate_limited_total", help: "Batches refused: a connection over its rate limit.", value: c.rateLimited)
        m.counter("listsync_presence_total", help: "Presence messages relayed (drags in progress; never stored).", value: c.presenceIn)
        m.counter("listsync_presence_dropped_total", help: "Presence messages dropped: a connection over its presence limit.", value: c.presenceDropped)
        m.counter("listsync_equivocations_total", help: "Operations refused: a known id with other content.", value: c.equivocations)
        m.counter("listsync_compactions_total", help: "Documents compacted (history and dead state collected).", value: c.compactions)
        m.counter("listsync_operations_collected_total", help: "Logged operations dropped by compactions.", value: c.operationsCollected)
        for (id, bytes) in c.documentBytes.sorted(by: { $0.key < $1.key }) {
            m.gauge("listsync_document_reclaimable_bytes", help: "Bytes a compaction of the document would free now (dead values and records, removed fields, hidden text, the log).",
                    value: bytes.reclaimable, labels: ["document": id])
        }
        for (id, bytes) in c.documentBytes.sorted(by: { $0.key < $1.key }) {
            m.gauge("listsync_document_bytes", help: "The document's bytes as the reclaimable bytes count them (values, records, the log).",
                    value: bytes.document, labels: ["document": id])
        }
        m.counter("listsync_senders_retired_total", help: "Senders retired for silence (--retire-after).", value: c.sendersRetired)
        m.gauge("listsync_last_compaction_seconds", help: "Wall-clock time of the last compaction (0: none since start).", value: Int(c.lastCompaction))
        m.counter("listsync_storage_failures_total", help: "Appends that could not be made durable.", value: c.storageFailures)
        m.histogram("listsync_append_seconds", help: "Durable append latency: write and fdatasync, group commit included.",
                    buckets: DaemonMetrics.bucketBounds, counts: Array(c.appendBuckets.prefix(DaemonMetrics.bucketBounds.count)),
                    sum: c.appendSum, count: c.appendCount)
        for (reason, n) in refused.sorted(by: { $0.key < $1.key }) {
            m.counter("listsync_refused_connections_total", help: "Connections refused before or during the handshake.",
                      value: n, labels: ["reason": reason])
        }
        let h = handshakes
        m.gauge("listsync_handshakes_in_progress", help: "Connections still in their handshake (the pool).", value: h.inHandshake)
        m.counter("listsync_handshakes_completed_total", help: "Handshakes completed (key or credential proved).", value: h.completed)
        m.counter("listsync_handshake_failed_proofs_total", help: "Key or credential proofs that failed.", value: h.failedProofs)
        m.counter("listsync_handshakes_evicted_total", help: "Connections evicted from a full handshake pool.", value: h.evicted)
        m.counter("listsync_devices_refused_total", help: "Device connections ended or refused: revoked, unknown or expired.",
                  value: c.devicesRefused)
        m.counter("listsync_admin_unauthorized_total", help: "Admin requests refused for a missing or wrong token.",
                  value: c.adminUnauthorized)
        for (result, n) in c.discovery.sorted(by: { $0.key < $1.key }) {
            m.counter("listsync_discovery_announcements_total", help: "Discovery announcements heard, by what became of them.",
                      value: n, labels: ["result": result])
        }
        m.gauge("listsync_resident_bytes", help: "Resident set size of the daemon.", value: residentBytes)
        if let bytes = c.diskBytes {
            m.gauge("listsync_disk_bytes", help: "Bytes in the data folder (sampled in the background).", value: bytes)
        }
        return m.text
    }
}

extension Daemon {
    /// The status without its detail: the counters, refusals and handshake gauges, read without
    /// this actor and without walking documents or files (what `/metrics` reads).
    nonisolated func counterStatus() -> DaemonStatus {
        let listener = listenerForMetrics.withLock { $0 }
        return DaemonStatus(counters: metrics.state.withLock { $0 }, refused: listener?.refused ?? [:],
                            handshakes: listener?.handshakes ?? HandshakeGauges(),
                            handshakePool: configuration.tcp.maxUnauthenticated, residentBytes: DaemonMetrics.residentBytes())
    }

    /// The whole status, its detail included (what `listsync status` shows): the devices file is
    /// reread and every resident document asked.
    ///
    /// - Complexity: O(resident documents + peers + connections), plus the devices file's read.
    func status() async -> DaemonStatus {
        _ = try? devices.reload()   // the rows as they are now (the periodic read runs only while devices connect)
        var resident: [[String: Any]] = []
        let failing = await failingStores()
        for (id, h) in hosts {
            var entry: [String: Any] = ["id": id.description, "name": await h.name, "operations": await h.document.operationCount,
                                        "subscribers": await h.subscriberCount]
            if let failure = await h.storeFailure { entry["store_error"] = failure }
            // What a compaction would free now, of the document's bytes (Docs/Semantics.md §7).
            let bytes = await h.byteCounts
            entry["reclaimable_bytes"] = bytes.reclaimable
            entry["document_bytes"] = bytes.document
            let compaction = await h.compactionStatus
            entry["senders"] = compaction.senders
            entry["retired"] = compaction.retired
            if let floor = compaction.floor { entry["floor"] = floor }
            if compaction.lastCompaction > 0 { entry["last_compaction"] = compaction.lastCompaction }
            if compaction.refusedCompacted > 0 { entry["refused_compacted"] = compaction.refusedCompacted }
            if let waits = compaction.waitsFor { entry["compaction_waits_for"] = waits }
            if let waits = compaction.prefixWaitsFor { entry["prefix_waits_for"] = waits }
            // Operations taken from peer links since the floor, known across restarts (the log
            // says so): a merge back leaves them to their daemon (Docs/Semantics.md §7).
            let relayed = await h.relayedOperations
            if relayed > 0 { entry["relayed_operations"] = relayed }
            if let peers = compaction.peers {
                entry["peers"] = peers
                entry["peers_at_version"] = compaction.peersAtVersion
            }
            resident.append(entry)
        }
        var peerList: [[String: Any]] = []
        for p in peers { peerList.append(["address": p.label, "connected": await p.isConnected, "discovered": p.discovered]) }
        var clusterFields: [String: Any]?
        if let c = await cluster?.status() {
            // Cluster mode (Docs/Cluster.md): batches published and acknowledged by JetStream,
            // messages refused (no tag or a wrong one), documents followed (read from their
            // subjects: those with interest here), snapshots stored and trims, snapshots loaded,
            // trim leases held.
            clusterFields = ["servers": c.servers, "ack": c.ack, "connected": c.connected, "documents_followed": c.followed.count,
                             "followed": c.followed, "published": c.published, "refused": c.refused, "trims": c.trims,
                             "snapshots_loaded": c.snapshotsLoaded, "leases_held": c.leasesHeld]
        }
        let limits: [String: Any] = [
            "max_connections": configuration.tcp.maxConnections,
            "max_unauthenticated": configuration.tcp.maxUnauthenticated,
            "max_per_address": configuration.tcp.maxPerAddress,
            "frame_bytes": configuration.tcp.frameLimit,
            "send_queue_bytes": configuration.tcp.sendQueueLimit,
            "handshake_timeout_ms": Int(configuration.tcp.handshakeTimeout.nanoseconds / 1_000_000),
            "idle_timeout_ms": Int(configuration.tcp.idleTimeout.nanoseconds / 1_000_000),
            "max_resident_documents": configuration.maxResidentDocuments,
            "max_documents": configuration.maxDocuments,
            "pending_operations_per_document": configuration.pendingLimits.maxOperations,
            "pending_bytes_per_document": configuration.pendingLimits.maxBytes,
        ]
        var status = counterStatus()
        status.detail = DaemonStatus.Detail(
            address: address?.description ?? "", dataFolder: configuration.dataFolder, connections: connections.count,
            poller: loop.pollerKind.rawValue, compaction: compactionSettings.policy != nil, peers: peerList, resident: resident,
            failingStores: failing, devicesIssued: devices.records.count,
            devicesRevoked: devices.records.values.filter { $0.revoked != nil }.count,
            devicesConnected: connections.values.filter { $0.claims != nil }.count, limits: limits, cluster: clusterFields)
        return status
    }

    /// The status as a JSON object (what `listsync status` prints).
    func statusJSON() async -> String { await status().json() }

    /// The metrics in the Prometheus text format (`/metrics`): values kept as their events
    /// happen, read without this actor and without walking documents or files.
    ///
    /// - Complexity: O(number of metric lines).
    nonisolated func prometheus() -> String { counterStatus().prometheus() }
}
