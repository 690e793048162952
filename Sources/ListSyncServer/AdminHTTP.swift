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
