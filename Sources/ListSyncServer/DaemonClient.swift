import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP
import ListTable

/// Why a client request failed.
public enum DaemonClientError: Error, CustomStringConvertible, Sendable {
    /// Nothing answers at the address (the daemon is not running there).
    case notRunning(String, TransportError)
    /// The handshake failed (wrong key, most likely).
    case handshake(String)
    /// The daemon refused the request.
    case refused(DaemonErrorCode, String)
    /// The connection closed before the answer came.
    case disconnected
    /// No answer in time.
    case timeout(String)

    public var description: String {
        switch self {
        case let .notRunning(address, error): return "no daemon at \(address) (\(error)); is `listsync serve` running?"
        case let .handshake(why): return "the daemon refused the key: \(why) (is it the daemon's key file?)"
        case let .refused(code, text): return "\(code): \(text)"
        case .disconnected: return "the connection to the daemon closed"
        case let .timeout(what): return "no answer from the daemon for \(what)"
        }
    }
}

/// A client of a daemon: lists and creates documents, opens one as a local replica, edits it
/// (each edit acknowledged once durable on the daemon), and watches its changes.
public actor DaemonClient {
    private let transport: TCPTransport
    private var nextRequest: UInt64 = 1
    private var waiting: [UInt64: CheckedContinuation<DaemonMessage, any Error>] = [:]
    private var acks: [UInt64: CheckedContinuation<VersionVector, any Error>] = [:]
    private var opened: [DocumentID: LiveDocument] = [:]
    private var subscribing: [DocumentID: CheckedContinuation<(String, UInt64, VersionVector), any Error>] = [:]
    private var names: [DocumentID: (name: String, epoch: UInt64)] = [:]
    private var reader: Task<Void, Never>?
    private var closed = false
    private var observer: (@Sendable (DocumentID, [ListOperation]) -> Void)?
    private let changeSets: Bool

    private init(transport: TCPTransport, changeSets: Bool) {
        self.transport = transport
        self.changeSets = changeSets
    }

    /// Connects to the daemon at `host:port` with `key` (from `localHost`, when given).
    ///
    /// - Parameter changeSets: whether opened documents diff every change into a `ChangeSet`
    ///   (an app's table needs them; O(n) per change). Without, a change costs what the
    ///   document's does (``LiveDocument/init(withoutChangeSets:)``).
    public static func connect(host: String, port: UInt16, key: [UInt8], localHost: String? = nil, changeSets: Bool = true,
                               loop: EventLoop = .shared) async throws(DaemonClientError) -> DaemonClient {
        let t: TCPTransport
        do {
            t = try await TCPTransport.connect(host: host, port: port, key: key, localHost: localHost, loop: loop)
        } catch {
            if case let .handshake(why) = error {
                if why.contains("authentication failed") { throw .handshake(why) }
                throw .refused(.limit, why)
            }
            throw .notRunning("\(host):\(port)", error)
        }
        let c = DaemonClient(transport: t, changeSets: changeSets)
        await c.startReading()
        return c
    }

    private func startReading() {
        reader = Task { [transport] in
            for await frame in transport.incoming {
                // A message this client cannot read may be the answer a request waits for:
                // fail every request rather than leave one waiting for ever.
                guard let m = try? DaemonMessage(decoding: frame) else {
                    await transport.close(reason: "a message from the daemon did not decode")
                    break
                }
                await self.dispatch(m)
            }
            await self.failAll()
        }
    }

    /// Closes the connection.
    public func close() async {
        closed = true
        await transport.close()
        reader?.cancel()
        failAll()
    }

    // MARK: Requests

    /// The daemon's status, as a JSON object.
    public func status() async throws -> String {
        guard case let .statusReport(_, json) = try await ask({ .status(request: $0) }) else { throw DaemonClientError.disconnected }
        return json
    }

    /// The daemon's documents.
    public func documents() async throws -> [DocumentInfo] {
        guard case let .documents(_, list) = try await ask({ .listDocuments(request: $0) }) else { throw DaemonClientError.disconnected }
        return list
    }

    /// Creates a document with `sections` (none when empty); returns its id.
    public func create(name: String, sections: [String] = [""]) async throws -> DocumentID {
        guard case let .created(_, id, _) = try await ask({ .create(request: $0, name: name, sections: sections, id: nil, epoch: 0) }) else {
            throw DaemonClientError.disconnected
        }
        return id
    }

    /// Finds a document by id (32 hex digits or a unique prefix of at least 4) or by exact name.
    public func resolve(_ text: String) async throws -> DocumentInfo {
        let list = try await documents()
        if let exact = list.first(where: { $0.id.description == text.lowercased() }) { return exact }
        let byName = list.filter { $0.name == text }
        if byName.count == 1 { return byName[0] }
        let byPrefix = text.count >= 4 ? list.filter { $0.id.description.hasPrefix(text.lowercased()) } : []
        if byPrefix.count == 1 { return byPrefix[0] }
        if byName.count > 1 || byPrefix.count > 1 {
            throw DaemonClientError.refused(.unknownDocument, "\"\(text)\" names more than one document; use its id")
        }
        throw DaemonClientError.refused(.unknownDocument, "no document \"\(text)\" (see `listsync docs`)")
    }

    /// Opens `document` as a local replica: subscribes and waits until it holds everything the
    /// daemon had when it answered.
    ///
    /// - Parameters:
    ///   - held: a copy kept from an earlier session, to resume from: only what it lacks is sent,
    ///     and what the daemon lacks is uploaded (acknowledged) before this returns.
    ///   - epoch: the epoch `held` belongs to (``info(_:)`` after an earlier `open`); 0 with no copy.
    /// - Throws: ``DaemonClientError/refused(_:_:)`` with `.epochMismatch` when the document was
    ///   reset or restored since: drop `held` and open it afresh.
    public func open(_ document: DocumentID, resuming held: ListDocument? = nil, epoch: UInt64 = 0,
                     timeout: Duration = .seconds(30)) async throws -> LiveDocument {
        if let live = opened[document] { return live }
        let start = held ?? ListDocument(replica: ReplicaID.random())
        let live = changeSets ? LiveDocument(start) : LiveDocument(withoutChangeSets: start)
        opened[document] = live
        let since = held?.version ?? VersionVector()
        if closed { throw DaemonClientError.disconnected }
        let (name, currentEpoch, version) = try await withCheckedThrowingContinuation { c in
            subscribing[document] = c
            Task { try? await transport.send(DaemonMessage.subscribe(document: document, epoch: epoch, version: since).encoded()) }
        }
        names[document] = (name, currentEpoch)
        let deadline = ContinuousClock.now + timeout
        while !live.document.version.includes(version) {
            if closed { throw DaemonClientError.disconnected }
            if ContinuousClock.now > deadline { throw DaemonClientError.timeout("the contents of \(document)") }
            try await Task.sleep(for: .milliseconds(2))
        }
        if held != nil {
            let missing = live.operations(since: version)
            if !missing.isEmpty { try await upload(document, missing) }
        }
        return live
    }

    /// Calls `handler` with every batch of operations the daemon sends for an opened document,
    /// before they are applied (for instrumentation: the load generator times arrivals with it).
    public func observeOperations(_ handler: @escaping @Sendable (DocumentID, [ListOperation]) -> Void) {
        observer = handler
    }

    /// The name and epoch of an opened document.
    public func info(_ document: DocumentID) -> (name: String, epoch: UInt64)? { names[document] }

    /// Edits an opened document and returns once the daemon acknowledged the operations as
    /// durable.
    public func edit<R: Sendable>(_ document: DocumentID, _ body: (inout ListDocument) throws(ListError) -> R) async throws -> R {
        guard let live = opened[document] else { throw DaemonClientError.refused(.unknownDocument, "open \(document) first") }
        let result = try live.edit(body)
        if result.operations.isEmpty { return result.result }
        let batch = nextRequest
        nextRequest += 1
        let frames = DaemonMessage.operationFrames(document, batch: batch, result.operations, maxFrame: transport.maxFrame)
        if closed { throw DaemonClientError.disconnected }
        _ = try await withCheckedThrowingContinuation { (c: CheckedContinuation<VersionVector, any Error>) in
            acks[batch] = c
            Task {
                for f in frames { try? await transport.send(f) }
            }
        }
        return result.result
    }

    /// Sends operations made elsewhere (an import) to an opened document; returns once they are
    /// acknowledged as durable.
    public func upload(_ document: DocumentID, _ operations: [ListOperation]) async throws {
        guard let live = opened[document] else { throw DaemonClientError.refused(.unknownDocument, "open \(document) first") }
        _ = live.receive(operations)
        var frames: [([UInt8], UInt64)] = []
        var start = 0
        // One acknowledged batch per frame, so that a large import never waits on one huge ack.
        for f in DaemonMessage.operationFrames(document, batch: 0, operations, maxFrame: transport.maxFrame - 16) {
            guard case let .operations(_, _, ops) = try DaemonMessage(decoding: f) else { continue }
            let batch = nextRequest
            nextRequest += 1
            frames.append((DaemonMessage.operations(document: document, batch: batch, operations: ops).encoded(), batch))
            start += ops.count
        }
        for (frame, batch) in frames {
            if closed { throw DaemonClientError.disconnected }
            _ = try await withCheckedThrowingContinuation { (c: CheckedContinuation<VersionVector, any Error>) in
                acks[batch] = c
                Task { try? await transport.send(frame) }
            }
        }
    }

    // MARK: Internals

    private func ask(_ make: (UInt64) -> DaemonMessage) async throws -> DaemonMessage {
        if closed { throw DaemonClientError.disconnected }
        let r = nextRequest
        nextRequest += 1
        let bytes = make(r).encoded()
        return try await withCheckedThrowingContinuation { c in
            waiting[r] = c
            Task { try? await transport.send(bytes) }
        }
    }

    private func dispatch(_ m: DaemonMessage) {
        switch m {
        case let .statusReport(r, _), let .documents(r, _), let .created(r, _, _):
            waiting.removeValue(forKey: r)?.resume(returning: m)
        case let .subscribed(doc, name, epoch, version):
            subscribing.removeValue(forKey: doc)?.resume(returning: (name, epoch, version))
        case let .operations(doc, _, ops):
            observer?(doc, ops)
            _ = opened[doc]?.receive(ops)
        case let .ack(_, batch, version):
            acks.removeValue(forKey: batch)?.resume(returning: version)
        case let .error(r, doc, code, text):
            let e = DaemonClientError.refused(code, text)
            if let c = waiting.removeValue(forKey: r) { c.resume(throwing: e); return }
            if let c = acks.removeValue(forKey: r) { c.resume(throwing: e); return }
            if let doc, let c = subscribing.removeValue(forKey: doc) {
                opened[doc] = nil
                c.resume(throwing: e)
            }
        case .subscribe, .unsubscribe, .hello, .create, .listDocuments, .status:
            break
        }
    }

    private func failAll() {
        closed = true
        for (_, c) in waiting { c.resume(throwing: DaemonClientError.disconnected) }
        for (_, c) in acks { c.resume(throwing: DaemonClientError.disconnected) }
        for (_, c) in subscribing { c.resume(throwing: DaemonClientError.disconnected) }
        waiting = [:]; acks = [:]; subscribing = [:]
    }
}
