import Foundation
import ListCRDT
import ListSyncClient
import ListSyncCrypto
import ListSyncHTTP
import ListSyncFiles
import ListSyncTCP

/// What the web view is started with.
public struct WebViewConfiguration: Sendable {
    /// Where it listens (`--web HOST:PORT`; loopback unless told otherwise).
    public var host: String
    public var port: UInt16
    /// The daemon it is a client of (its own port).
    public var daemonHost: String
    public var daemonPort: UInt16
    /// The daemon's key: login links are checked with it, and each session proves it (or the
    /// credential derived from it for the session's device claims).
    public var masterKey: [UInt8]
    /// The daemon's data folder: the devices file (revocation) and the documents' sizes.
    public var dataFolder: String
    /// One log line per event (login, session ended, refusals).
    public var log: (@Sendable (String, [String: String]) -> Void)?
    /// What a document holds in the daemon's shared log beyond its folder, and when it was last
    /// written there (the daemon's `Daemon.storageUsage(_:)`); nil: the folder alone.
    public var logUsage: (@Sendable (DocumentID) -> (logBytes: Int64, lastWriteMillis: UInt64?)?)?

    public init(host: String, port: UInt16, daemonHost: String, daemonPort: UInt16, masterKey: [UInt8], dataFolder: String,
                log: (@Sendable (String, [String: String]) -> Void)? = nil) {
        (self.host, self.port, self.daemonHost, self.daemonPort) = (host, port, daemonHost, daemonPort)
        (self.masterKey, self.dataFolder, self.log) = (masterKey, dataFolder, log)
    }
}

/// The web view (Docs/Web.md): the daemon's lists in a browser, live, with drag and drop.
///
/// An ``HTTPServer`` that serves the page (HTML, CSS and JavaScript in this module, nothing
/// from elsewhere), takes one-time login links (``WebLoginToken``) for session cookies
/// (``WebSessionTable``), checks every request (``WebRequestCheck``), and answers the page's
/// API through one ``WebBackend`` per session: a client of the daemon's own port.
public actor WebView {
    let configuration: WebViewConfiguration
    private var server: HTTPServer?
    private var table = WebSessionTable()
    private var backends: [String: WebBackend] = [:]
    private var devices: DeviceRegistry
    private var allowedHosts: Set<String> = []
    private var anyHost = false

    /// The address it listens on, once started.
    public private(set) var address: SocketAddress?

    private init(configuration: WebViewConfiguration) {
        self.configuration = configuration
        devices = DeviceRegistry(dataFolder: configuration.dataFolder)
    }

    /// Starts the web view on `configuration.host:port`.
    ///
    /// - Throws: ``TransportError`` naming the call that failed (a port in use).
    public static func start(_ configuration: WebViewConfiguration) async throws -> WebView {
        let view = WebView(configuration: configuration)
        var options = HTTPServerOptions()
        options.methods = ["GET", "HEAD", "POST"]
        options.maxStreams = 64
        // Room beyond the streams: a connection holding a stream is never evicted, so with as
        // many connections as streams, 64 open pages would leave none for a login.
        options.maxConnections = 128
        let server = try await HTTPServer.listen(host: configuration.host, port: configuration.port, options: options) { [weak view] request in
            guard let view else { return HTTPResponse(status: 503, text: "stopping\n") }
            return await view.answer(request)
        }
        await view.started(server)
        return view
    }

    private func started(_ server: HTTPServer) {
        self.server = server
        address = server.address
        let port = server.address.port
        allowedHosts = ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)", server.address.description.lowercased()]
        if !server.address.isLoopback {
            // Bound beyond loopback on purpose: the names it is reached by are not known here.
            anyHost = true
        }
    }

    /// Stops listening and ends every session's connection to the daemon.
    public func stop() async {
        await server?.close()
        server = nil
        for b in backends.values { await b.close() }
        backends = [:]
    }

    func log(_ event: String, _ fields: [String: String]) { configuration.log?(event, fields) }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970) }

    // MARK: Requests

    func answer(_ request: HTTPRequest) async -> HTTPResponse {
        var response = await route(request)
        response.headers += WebPages.securityHeaders
        return response
    }

    private func route(_ request: HTTPRequest) async -> HTTPResponse {
        if !anyHost, !WebRequestCheck.hostAllowed(request, allowed: allowedHosts) {
            return WebPages.problem(421, "this web view answers to 127.0.0.1 and localhost only")
        }
        let path = request.path
        switch path {
        case "/app.js": return WebPages.asset(WebAssets.script, type: "text/javascript; charset=utf-8")
        case "/app.css": return WebPages.asset(WebAssets.style, type: "text/css; charset=utf-8")
        case "/login": return login(request)
        default: break
        }
        let now = Self.now()
        guard let session = currentSession(request, now: now) else {
            if path.hasPrefix("/api/") { return WebPages.json(401, ["error": "no session: open the web view with `listsync open`"]) }
            return WebPages.signedOut()
        }
        guard WebRequestCheck.mayChangeState(request, csrf: session.csrf) else {
            log("web request refused", ["reason": "csrf", "path": path])
            return WebPages.json(403, ["error": "this request did not come from the web view's own page"])
        }
        if request.method == "POST", path == "/logout" {
            await endSession(session.id, why: "signed out")
            return HTTPResponse(status: 303, headers: [("Location", "/"), ("Set-Cookie", WebRequestCheck.clearCookie)])
        }
        let backend = backend(for: session)
        switch (request.method, path) {
        case ("GET", "/"), ("HEAD", "/"): return WebPages.page(.documents, session: session)
        case ("GET", "/status"), ("HEAD", "/status"): return WebPages.page(.status, session: session)
        case ("GET", "/api/docs"): return await WebAPI.documents(backend, dataFolder: configuration.dataFolder, logUsage: configuration.logUsage)
        case ("POST", "/api/docs"): return await WebAPI.create(backend, request)
        case ("GET", "/api/status"): return await WebAPI.status(backend)
        default: break
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 3, parts[1] == "doc", let id = DocumentID(hex: parts[2]), request.method == "GET" || request.method == "HEAD" {
            guard session.claims?.allows(id) ?? true else { return WebPages.problem(404, "no such document") }
            return WebPages.page(.document(id), session: session)
        }
        if parts.count == 5, parts[1] == "api", parts[2] == "docs", let id = DocumentID(hex: parts[3]) {
            guard session.claims?.allows(id) ?? true else { return WebPages.json(404, ["error": "no such document"]) }
            switch (request.method, parts[4]) {
            case ("GET", "events"): return await WebAPI.events(backend, id)
            case ("POST", "move"): return await WebAPI.move(backend, id, request)
            case ("POST", "presence"): return await WebAPI.presence(backend, id, request)
            case ("POST", "insert"): return await WebAPI.insert(backend, id, request)
            case ("POST", "field"): return await WebAPI.field(backend, id, request)
            case ("POST", "text"): return await WebAPI.text(backend, id, request)
            case ("POST", "destroy"): return await WebAPI.destroy(backend, id)
            case ("POST", "rename"): return await WebAPI.rename(backend, id, request)
            default: break
            }
        }
        return WebPages.problem(404, "no such page")
    }

    /// The request's session, if its cookie names one that is open, and its device (if any) is
    /// still allowed by the devices file (reread when it changed).
    private func currentSession(_ request: HTTPRequest, now: UInt64) -> WebSession? {
        guard let session = table.session(WebRequestCheck.cookie(WebRequestCheck.cookieName, in: request), now: now) else { return nil }
        if let claims = session.claims, let why = refusal(claims, now: now) {
            log("web session ended", ["device": claims.idText, "reason": why])
            let b = backends.removeValue(forKey: session.id)
            table.end(session.id)
            Task { await b?.close() }
            return nil
        }
        return session
    }

    private func refusal(_ claims: DeviceClaims, now: UInt64) -> String? {
        do { try devices.reload() } catch { return "the devices file cannot be read: \(error)" }
        return devices.refusal(for: claims, now: now)?.1
    }

    private func backend(for session: WebSession) -> WebBackend {
        if let b = backends[session.id] { return b }
        let id = session.id
        let b = WebBackend(session: session, host: configuration.daemonHost, port: configuration.daemonPort,
                           masterKey: configuration.masterKey) { [weak self] why in
            Task { await self?.endSession(id, why: why) }
        }
        backends[session.id] = b
        return b
    }

    private func endSession(_ id: String, why: String) async {
        table.end(id)
        if let b = backends.removeValue(forKey: id) {
            log("web session ended", ["reason": why])
            await b.close()
        }
    }

    private func login(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" else { return WebPages.problem(405, "a login link is opened, not posted") }
        guard let text = WebRequestCheck.parameter("t", in: request.query) else { return WebPages.problem(400, "no login token in the link") }
        let now = Self.now()
        do {
            let token = try WebLoginToken(parsing: text)
            let session = try table.login(token, masterKey: configuration.masterKey, now: now,
                                          refusal: { refusal($0, now: now) }, random: { SecureRandom.bytes(32) })
            log("web login", ["device": session.claims?.idText ?? "key", "name": session.claims?.name ?? "operator"])
            // Sessions the table ended (the oldest, past its bound) or that expired: their connections go.
            for (id, b) in backends where table.session(id, now: now) == nil {
                backends[id] = nil
                Task { await b.close() }
            }
            let target = token.document.map { "/doc/\($0)" } ?? "/"
            return HTTPResponse(status: 303, headers: [("Location", target), ("Set-Cookie", WebRequestCheck.setCookie(session, now: now)),
                                                       ("Cache-Control", "no-store")])
        } catch {
            log("web login refused", ["reason": error.description])
            return WebPages.problem(403, error.description)
        }
    }
}
