import Foundation
import ListSyncTCP

/// The admin HTTP endpoints (`--admin HOST:PORT`): `/healthz`, `/readyz`, Prometheus `/metrics`.
extension Daemon {
    /// Starts the admin server on `host:port`.
    func startAdmin(host: String, port: UInt16) async throws -> HTTPServer {
        try await HTTPServer.listen(host: host, port: port, loop: loop) { [weak self] request in
            guard let self else { return HTTPResponse(status: 503, text: "stopping\n") }
            switch request.path {
            case "/healthz":
                return HTTPResponse(text: "ok\n")
            case "/readyz":
                let (ready, why) = await self.readiness()
                return HTTPResponse(status: ready ? 200 : 503, text: why + "\n")
            case "/metrics":
                return HTTPResponse(text: await self.prometheus(), contentType: "text/plain; version=0.0.4; charset=utf-8")
            default:
                return HTTPResponse(status: 404, text: "not found: try /healthz, /readyz or /metrics\n")
            }
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

    /// The metrics in the Prometheus text format.
    func prometheus() async -> String {
        let c = metrics.state.withLock { $0 }
        var m = PrometheusText()
        m.gauge("listsync_connections", help: "Open client and peer connections.", value: c.connectionsOpen)
        m.counter("listsync_connections_total", help: "Connections accepted since start.", value: c.connectionsTotal)
        m.gauge("listsync_documents_resident", help: "Documents loaded in memory.", value: residentCount)
        m.gauge("listsync_documents_on_disk", help: "Documents in the data folder.", value: onDiskCount)
        m.counter("listsync_operations_in_total", help: "Operations received and applied.", value: c.operationsIn)
        m.counter("listsync_operations_out_total", help: "Operations sent to subscribers.", value: c.operationsOut)
        m.counter("listsync_bytes_in_total", help: "Message bytes received.", value: c.bytesIn)
        m.counter("listsync_batches_acknowledged_total", help: "Batches acknowledged (durable).", value: c.batchesAcknowledged)
        m.counter("listsync_rate_limited_total", help: "Batches refused: a connection over its rate limit.", value: c.rateLimited)
        m.counter("listsync_equivocations_total", help: "Operations refused: a known id with other content.", value: c.equivocations)
        m.counter("listsync_storage_failures_total", help: "Appends that could not be made durable.", value: c.storageFailures)
        m.histogram("listsync_append_seconds", help: "Durable append latency: write and fdatasync, group commit included.",
                    buckets: DaemonMetrics.bucketBounds, counts: Array(c.appendBuckets.prefix(DaemonMetrics.bucketBounds.count)),
                    sum: c.appendSum, count: c.appendCount)
        for (reason, n) in refusedConnections.sorted(by: { $0.key < $1.key }) {
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
        m.gauge("listsync_resident_bytes", help: "Resident set size of the daemon.", value: DaemonMetrics.residentBytes())
        m.gauge("listsync_disk_bytes", help: "Bytes in the data folder.", value: Self.diskUsage(configuration.dataFolder))
        return m.text
    }
}
