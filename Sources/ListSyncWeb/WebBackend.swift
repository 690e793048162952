import ListCRDT
import ListSyncClient
import ListSyncTCP
import ListTable

/// One browser session's connection to the daemon: a ``DaemonClient`` over the daemon's own
/// port, proving the daemon's key (the operator) or the device's credential, which the web view
/// derives from the session's claims and the key. So the daemon applies the credential's scopes
/// to the browser as to any device, and closes this connection when the credential is revoked or
/// expires; the session's streams then end with the daemon's words.
actor WebBackend {
    let session: WebSession
    private let host: String
    private let port: UInt16
    private let authentication: ClientAuthentication
    private var client: DaemonClient?
    private var connecting: Task<DaemonClient, any Error>?
    private var opening: [DocumentID: Task<LiveDocument, any Error>] = [:]
    /// The streams open for this session: ended when the daemon closes the connection; `final`
    /// when the session is over (the page is told why), else the page reconnects.
    private var streams: [ObjectIdentifier: @Sendable (_ why: String, _ final: Bool) -> Void] = [:]
    /// Why the daemon ended the connection, once it has.
    private(set) var ended: String?
    private let onEnded: @Sendable (String) -> Void

    init(session: WebSession, host: String, port: UInt16, masterKey: [UInt8], onEnded: @escaping @Sendable (String) -> Void) {
        self.session = session
        (self.host, self.port) = (host, port)
        self.authentication = session.claims.map { .credential(Credential(claims: $0, masterKey: masterKey)) } ?? .key(masterKey)
        self.onEnded = onEnded
    }

    /// The name others see in presence: the device's, or "operator".
    nonisolated var displayName: String { session.claims.map { "\($0.name) (web)" } ?? "operator (web)" }

    /// The connection, made on first use.
    func daemon() async throws -> DaemonClient {
        if let ended { throw DaemonClientError.refused(.revoked, ended) }
        if let client { return client }
        if let connecting { return try await connecting.value }
        let (host, port, auth) = (host, port, authentication)
        let task = Task { try await DaemonClient.connect(host: host, port: port, authentication: auth) }
        connecting = task
        defer { connecting = nil }
        let c = try await task.value
        client = c
        Task { [weak self] in
            let why = await c.waitUntilClosed()
            await self?.closed(c, why)
        }
        return c
    }

    /// Document `id`, opened once per session (later calls share it).
    func document(_ id: DocumentID) async throws -> (DaemonClient, LiveDocument) {
        let c = try await daemon()
        if let pending = opening[id] { return (c, try await pending.value) }
        let task = Task { try await c.open(id) }
        opening[id] = task
        do { return (c, try await task.value) } catch {
            opening[id] = nil
            throw error
        }
    }

    /// Registers a stream to end (with the daemon's words) when the connection closes; returns
    /// false if it has closed already.
    func register(_ key: ObjectIdentifier, end: @escaping @Sendable (_ why: String, _ final: Bool) -> Void) -> Bool {
        if let ended { end(ended, true); return false }
        streams[key] = end
        return true
    }

    func unregister(_ key: ObjectIdentifier) { streams[key] = nil }

    /// The daemon closed the connection: every stream ends; for a revoked or expired credential
    /// the session ends too, otherwise the pages reconnect (`EventSource` does) and the next
    /// request connects again.
    private func closed(_ c: DaemonClient, _ why: String) {
        guard client === c else { return }
        client = nil
        opening = [:]
        let ends = streams.values
        streams = [:]
        let final = session.claims != nil && (why.contains("revoked") || why.contains("expired"))
        for e in ends { e(why, final) }
        if final {
            ended = why
            onEnded(why)
        }
    }

    /// Closes the connection (the session ended).
    func close() async {
        ended = ended ?? "the session ended"
        let c = client
        client = nil
        for e in streams.values { e(ended!, true) }
        streams = [:]
        await c?.close()
    }
}
