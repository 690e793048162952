import Foundation
import ListSyncHTTP
import ListSyncTCP

/// The admin HTTP endpoints (`--admin HOST:PORT`): `/healthz`, `/readyz`, Prometheus `/metrics`
/// (Docs/Security.md, "Admin port").
extension Daemon {
    /// Starts the admin server on `host:port`. Every path but `/healthz` asks for the admin token
    /// when there is one: always on an address beyond loopback (the token file is created in the
    /// data folder on first start unless `--admin-token-file` names one), and on loopback only
    /// when `--admin-token-file` is given.
    func startAdmin(host: String, port: UInt16) async throws(DaemonError) -> HTTPServer {
        let where_ = "admin \(host):\(port)"
        let resolved: SocketAddress
        do {
            guard let first = try SocketAddress.resolve(host: host, port: port).first else { throw DaemonError.listen("\(where_): no address") }
            resolved = first
        } catch let e as DaemonError { throw e } catch { throw .listen("\(where_): \(error)") }
        let token = try adminToken(open: resolved.isLoopback)
        let server: HTTPServer
        do {
            server = try await HTTPServer.listen(host: host, port: port, loop: loop) { [weak self] request in
                guard let self else { return HTTPResponse(status: 503, text: "stopping\n") }
                if request.path != "/healthz", let token, !token.authorizes(request) {
                    self.metrics.adminRefused()
                    return token.challenge(request)
                }
                return await self.answerAdmin(request)
            }
        } catch { throw .listen("\(where_): \(error)") }
        // The token was chosen for the address resolved above; the bound one must agree.
        if server.address.isLoopback != resolved.isLoopback {
            await server.close()
            throw .listen("\(where_): bound \(server.address), not the address resolved")
        }
        return server
    }

    /// The token the admin port asks for, or `nil` when it stays open (loopback, no token file).
    private func adminToken(open loopback: Bool) throws(DaemonError) -> HTTPBearerToken? {
        guard let (path, given) = AdminToken.file(loopback: loopback, configuration: configuration) else { return nil }
        adminTokenPath = path
        if given { return try AdminToken.read(path, fileSystem: configuration.fileSystem) }
        let (token, created) = try AdminToken.readOrCreate(path, fileSystem: configuration.fileSystem)
        adminTokenCreated = created
        return token
    }

    private func answerAdmin(_ request: HTTPRequest) async -> HTTPResponse {
        switch request.path {
        case "/healthz":
            return HTTPResponse(text: "ok\n")
        case "/readyz":
            let (ready, why) = await readiness()
            return HTTPResponse(status: ready ? 200 : 503, text: why + "\n")
        case "/metrics":
            return HTTPResponse(text: prometheus(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        default:
            return HTTPResponse(status: 404, text: "not found: try /healthz, /readyz or /metrics\n")
        }
    }

    /// Ready when listening, with the data folder open and the last append not failed.
    /// Ready while listening with every resident document's store writable: a store that failed
    /// (disk full) makes it not ready until a write succeeds again (see DocumentHost.reopenStore).
    func readiness() async -> (Bool, String) {
        if isStopping { return (false, "stopping") }
        guard address != nil else { return (false, "not listening yet") }
        if let (id, e) = await failingStores().min(by: { $0.key < $1.key }) {
            return (false, "storage failing for \(id): \(e)")
        }
        return (true, "ready")
    }

    /// The metrics in the Prometheus text format: values kept as their events happen, read
    /// without this actor and without walking documents or files.
    ///
    /// - Complexity: O(number of metric lines).
    nonisolated func prometheus() -> String {
        let c = metrics.state.withLock { $0 }
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
        m.counter("listsync_senders_retired_total", help: "Senders retired for silence (--retire-after).", value: c.sendersRetired)
        m.gauge("listsync_last_compaction_seconds", help: "Wall-clock time of the last compaction (0: none since start).", value: Int(c.lastCompaction))
        m.counter("listsync_storage_failures_total", help: "Appends that could not be made durable.", value: c.storageFailures)
        m.histogram("listsync_append_seconds", help: "Durable append latency: write and fdatasync, group commit included.",
                    buckets: DaemonMetrics.bucketBounds, counts: Array(c.appendBuckets.prefix(DaemonMetrics.bucketBounds.count)),
                    sum: c.appendSum, count: c.appendCount)
        let refused = listenerForMetrics.withLock { $0?.refused } ?? [:]
        for (reason, n) in refused.sorted(by: { $0.key < $1.key }) {
            m.counter("listsync_refused_connections_total", help: "Connections refused before or during the handshake.",
                      value: n, labels: ["reason": reason])
        }
        let h = listenerForMetrics.withLock { $0?.handshakes } ?? HandshakeGauges()
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
        m.gauge("listsync_resident_bytes", help: "Resident set size of the daemon.", value: DaemonMetrics.residentBytes())
        if let bytes = c.diskBytes {
            m.gauge("listsync_disk_bytes", help: "Bytes in the data folder (sampled in the background).", value: bytes)
        }
        return m.text
    }

    /// Samples the data folder's size now and then, off this actor and the cooperative pool: at
    /// start, then every ``DaemonConfiguration/diskUsageInterval``, or every 100 walks' time if
    /// that is longer (so the walk uses at most 1% of a core however many files there are).
    func sampleDiskUsage() {
        let path = configuration.dataFolder, metrics = metrics, interval = configuration.diskUsageInterval
        diskSampler = Task { [weak self] in
            while !Task.isCancelled, self != nil {
                let start = ContinuousClock.now
                guard let bytes = try? await offPool({ Daemon.diskUsage(path) }) else { return }
                metrics.setDiskBytes(bytes)
                try? await Task.sleep(for: max(interval, (ContinuousClock.now - start) * 100))
            }
        }
    }
}
