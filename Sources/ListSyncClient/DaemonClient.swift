import Foundation
import ListCRDT
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
    case refused(SyncErrorCode, String)
    /// The connection closed before the answer came.
    case disconnected
    /// No answer in time.
    case timeout(String)
    /// The copy resumed from holds edits of its own that a daemon acknowledged and that this
    /// daemon, whose snapshot it re-syncs onto, has not received in time: another daemon holds
    /// them and has not relayed them here yet (the copy is left as it was).
    case editsHeldElsewhere(DocumentID)

    public var description: String {
        switch self {
        case let .notRunning(address, error): return "no daemon at \(address) (\(error)); is `listsync serve` running?"
        case let .handshake(why): return "the daemon refused the key: \(why) (is it the daemon's key file?)"
        case let .refused(code, text): return "\(code): \(text)"
        case .disconnected: return "the connection to the daemon closed"
        case let .timeout(what): return "no answer from the daemon for \(what)"
        case let .editsHeldElsewhere(document):
            return "the copy of \(document) holds edits that another daemon acknowledged and has not relayed to this one yet; try again later, or connect to that daemon"
        }
    }

    init(_ e: ClientSessionError) {
        switch e {
        case let .refused(code, text): self = .refused(code, text)
        case let .timeout(what): self = .timeout(what)
        case .disconnected: self = .disconnected
        case let .malformed(why): self = .refused(.malformed, why)
        }
    }
}

/// A change to the daemon's document list (``DaemonClient/documentListChanges()``).
public enum DocumentListChange: Hashable, Sendable {
    /// A document was made, or renamed: its info now.
    case changed(DocumentInfo)
    /// A document was destroyed, at the epoch it had: it is gone from the list for good.
    case destroyed(DocumentID, epoch: UInt64)
}

/// A client of a daemon over one connection: lists and creates documents, opens one as a local
/// replica, edits it (each edit returns once every frame of it is durable on the daemon), and
/// watches its changes. The driver of a ``ClientSession``: every request ends in an answer, an
/// error or a timeout (``requestTimeout``).
public actor DaemonClient {
    private let transport: TCPTransport
    private var session: ClientSession
    private var answers: [UInt64: CheckedContinuation<ClientSession.Answer, any Error>] = [:]
    private var edits: [UInt64: CheckedContinuation<VersionVector, any Error>] = [:]
    private var subscriptions: [DocumentID: CheckedContinuation<(String, UInt64, VersionVector), any Error>] = [:]
    private var catchUps: [DocumentID: CheckedContinuation<Void, any Error>] = [:]
    private var opened: [DocumentID: LiveDocument] = [:]
    private var synced: Set<DocumentID> = []
    /// Opened documents whose copy a snapshot from the daemon replaced, or that compacted where
    /// the daemon had (``wasReplaced(_:)``).
    private var replaced: Set<DocumentID> = []
    /// Opened documents whose copy is kept between runs (``open(_:replica:resuming:epoch:acknowledged:keepsCopy:)``):
    /// they say `seen` as ``ListSync/SeenRole/liveCopy`` and follow the daemon's floor.
    private var copies: Set<DocumentID> = []
    /// What a daemon acknowledged as durable of each opened document's copy: given at
    /// ``open(_:replica:resuming:epoch:acknowledged:keepsCopy:)``, then the copy's own operations
    /// of each acknowledged edit, in order. A re-sync makes again only the copy's own edits past
    /// it (``resync(_:from:)``).
    private var acknowledged: [DocumentID: (version: VersionVector, counting: Bool)] = [:]
    /// The operations each edit in flight carries, by the session's edit number.
    private var carried: [UInt64: (DocumentID, [ListOperation])] = [:]
    /// Edits sent again after a refusal for the daemon's rate limit, by the session's edit
    /// number: the attempts so far and when the edit gives up (its first send plus
    /// ``requestTimeout``).
    private var retries: [UInt64: (attempt: Int, deadline: UInt64)] = [:]
    /// Per document, the edits refused for the rate limit and not yet answered for good:
    /// while one is, a later edit's acknowledgement says nothing of the copy's own operations
    /// before it (``noteAnswered(_:succeeded:)``).
    private var resending: [DocumentID: Int] = [:]
    /// Opened documents whose catch-up is the daemon's snapshot (the copy resumed from was behind
    /// its floor): the daemon's copy is built (``ListSync/CopyResync``, the device's machine) until
    /// it holds every edit of the copy a daemon acknowledged, by `deadline` (``EventLoop/now()``).
    private var resyncs: [DocumentID: (resync: CopyResync, deadline: UInt64)] = [:]
    /// The floor the daemon last told for a kept copy (empty: never compacted).
    private var floors: [DocumentID: VersionVector] = [:]
    /// Opens waiting for the daemon's floor, with their deadline (``EventLoop/now()`` nanoseconds).
    private var floorWaiters: [DocumentID: (CheckedContinuation<Void, Never>, deadline: UInt64)] = [:]
    private var names: [DocumentID: (name: String, epoch: UInt64)] = [:]
    private var reader: Task<Void, Never>?
    private var ticker: Task<Void, Never>?
    private var observer: (@Sendable (DocumentID, [ListOperation]) -> Void)?
    private var closeWaiters: [CheckedContinuation<String, Never>] = []
    /// Opened documents whose subscription the daemon ended (destroyed or reset), with its words.
    private var endedDocuments: [DocumentID: String] = [:]
    private var documentEndWaiters: [DocumentID: [CheckedContinuation<String, Never>]] = [:]
    /// Whoever follows the document list (``documentListChanges()``).
    private var listFollowers: [AsyncStream<DocumentListChange>.Continuation] = []
    /// Why the connection ended (the daemon's reason: a revoked credential, a shutdown), once it has.
    public private(set) var endReason: String?
    private let changeSets: Bool
    /// The documents that take part in presence: their coalescing outboxes.
    private var presence = PresencePublisher()
    /// Whether a flush of coalesced presence is scheduled.
    private var presenceFlush: Task<Void, Never>?
    /// How long a request, subscription or edit may wait for its answer.
    public nonisolated let requestTimeout: Duration
    /// How long an edit refused for the daemon's rate limit is sent again from its first send
    /// (``edit(_:_:)``); ``requestTimeout`` unless ``connect(host:port:key:localHost:changeSets:timeout:limitPatience:loop:)`` was given one.
    public nonisolated let limitPatience: Duration

    private init(transport: TCPTransport, changeSets: Bool, timeout: Duration, limitPatience: Duration?) {
        self.transport = transport
        self.changeSets = changeSets
        self.requestTimeout = timeout
        self.limitPatience = limitPatience ?? timeout
        session = ClientSession(maxFrame: transport.maxFrame, timeout: timeout.nanoseconds)
    }

    /// Connects to the daemon at `host:port` with `key` (from `localHost`, when given).
    ///
    /// - Parameters:
    ///   - changeSets: whether opened documents diff every change into a `ChangeSet` (an app's
    ///     table needs them; O(n log n) per change, and one for a whole catch-up).
    ///   - timeout: how long the handshake, and then any request, may wait for its answer
    ///     (default 30 s).
    ///   - limitPatience: how long an edit refused for the daemon's rate limit is sent again
    ///     before it throws the refusal (``limitPatience``; default: `timeout`). Each send still
    ///     waits up to `timeout` for its answer.
    public static func connect(host: String, port: UInt16, key: [UInt8], localHost: String? = nil, changeSets: Bool = true,
                               timeout: Duration = .seconds(30), limitPatience: Duration? = nil,
                               loop: EventLoop = .shared) async throws(DaemonClientError) -> DaemonClient {
        try await connect(host: host, port: port, authentication: .key(key), localHost: localHost, changeSets: changeSets,
                          timeout: timeout, limitPatience: limitPatience, loop: loop)
    }

    /// Connects to the daemon at `host:port` proving `authentication` (the daemon's key or a
    /// device credential); otherwise as ``connect(host:port:key:localHost:changeSets:timeout:limitPatience:loop:)``.
    /// A connection cut during its handshake (a daemon evicting handshakes under a flood) is tried
    /// again (``TCPTransport/handshakeAttempts`` in all).
    public static func connect(host: String, port: UInt16, authentication: ClientAuthentication, localHost: String? = nil,
                               changeSets: Bool = true, timeout: Duration = .seconds(30), limitPatience: Duration? = nil,
                               loop: EventLoop = .shared) async throws(DaemonClientError) -> DaemonClient {
        let t: TCPTransport
        do {
            // A handshake cut by a flooded listener is tried again there (TCPTransport.handshakeAttempts).
            // The caller's deadline bounds the handshake as it bounds every request: the
            // transport's 3 s default is the listener's guard against strangers, and a client on
            // a busy machine (a CI run beside builds) missed it with the daemon up and well.
            var options = TCPOptions()
            options.handshakeTimeout = timeout
            t = try await TCPTransport.connect(host: host, port: port, authentication: authentication, options: options,
                                               localHost: localHost, loop: loop)
        } catch {
            if case let .handshake(why) = error {
                if why.isAuthenticationFailure { throw .handshake(why.description) }
                throw .refused(.limit, why.description)
            }
            throw .notRunning("\(host):\(port)", error)
        }
        let c = DaemonClient(transport: t, changeSets: changeSets, timeout: timeout, limitPatience: limitPatience)
        await c.startReading()
        return c
    }

    private func startReading() {
        reader = Task { [transport] in
            for await frame in transport.incoming {
                self.received(frame)
            }
            self.closedByPeer()
        }
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                await self?.tick()
            }
        }
    }

    /// Closes the connection; whatever waits fails with ``DaemonClientError/disconnected``.
    public func close() async {
        await transport.close()
        reader?.cancel()
        ticker?.cancel()
        presenceFlush?.cancel()
        for (_, live) in opened { live.clearPresence() }
        resyncs = [:]
        perform(session.disconnected())
        ended(endReason ?? "closed by this client")
    }

    // MARK: Requests

    /// The daemon's status, as a JSON object (however large: it comes in parts).
    public func status() async throws -> String {
        guard case let .status(json) = try await ask(.status) else { throw DaemonClientError.disconnected }
        return json
    }

    /// The daemon's documents (every page).
    public func documents() async throws -> [DocumentInfo] {
        guard case let .documents(list) = try await ask(.documents) else { throw DaemonClientError.disconnected }
        return list
    }

    /// Creates a document with `sections` (none when empty); returns its id.
    public func create(name: String, sections: [String] = [""]) async throws -> DocumentID {
        guard case let .created(id, _) = try await ask(.create(name: name, sections: sections)) else {
            throw DaemonClientError.disconnected
        }
        return id
    }

    /// Destroys `document` on the daemon (Docs/Daemon.md, "Destroying a document"): it is gone
    /// from the list, its files are removed, its subscribers are told, and its id is refused from
    /// then on, here and on the daemon's peers. Needs the daemon's key (a device credential is
    /// refused). Destroying a destroyed document succeeds again.
    ///
    /// - Parameter epoch: destroy it only at this epoch (0: whatever epoch it is at), so that a
    ///   copy restored since is not destroyed by mistake.
    /// - Returns: the epoch it had.
    /// - Throws: ``DaemonClientError/refused(_:_:)`` with `.unknownDocument`, `.epochMismatch`,
    ///   `.forbidden` (a device) or `.storage`.
    @discardableResult
    public func destroy(_ document: DocumentID, epoch: UInt64 = 0) async throws -> UInt64 {
        guard case let .destroyed(_, madeEpoch) = try await ask(.destroy(document, epoch: epoch)) else {
            throw DaemonClientError.disconnected
        }
        return madeEpoch
    }

    /// Renames `document` on the daemon (Docs/Daemon.md, "Renaming a document"): its name file is
    /// replaced durably, and connections that listed the documents hear the new name. Needs the
    /// daemon's key or a device credential that may write the document. Peers are not told.
    ///
    /// - Returns: the document's info with its new name.
    /// - Throws: ``DaemonClientError/refused(_:_:)`` with `.unknownDocument` (or out of the
    ///   credential's scope), `.destroyed`, `.forbidden` (a read-only device), `.refused` (an
    ///   empty name) or `.storage`; nothing is renamed then.
    @discardableResult
    public func rename(_ document: DocumentID, to name: String) async throws -> DocumentInfo {
        guard case let .renamed(info) = try await ask(.rename(document, name: name)) else {
            throw DaemonClientError.disconnected
        }
        return info
    }

    /// Waits until the daemon ends the subscription of an opened document (it was destroyed, or
    /// reset), and returns the daemon's words; nil when the connection closes first.
    public func waitUntilEnded(_ document: DocumentID) async -> String? {
        if let text = endedDocuments[document] { return text }
        guard transport.isOpen else { return nil }
        let text = await withCheckedContinuation { documentEndWaiters[document, default: []].append($0) }
        return text.isEmpty ? nil : text
    }

    /// Finds a document by id (32 hex digits or a unique prefix of at least 4) or by exact name.
    public func resolve(_ text: String) async throws -> DocumentInfo {
        try DocumentInfo.resolve(text, in: try await documents())
    }

    /// Opens `document` as a local replica: subscribes and returns once the daemon's catch-up has
    /// arrived (its `synced`), after sending what `held` has and the daemon lacks.
    ///
    /// - Parameters:
    ///   - replica: the replica id of the local copy when nothing is held (a client's stable id).
    ///   - held: a copy kept from an earlier session, to resume from: only what it lacks is sent,
    ///     and what the daemon lacks is uploaded (acknowledged) before this returns.
    ///   - epoch: the epoch `held` belongs to (``info(_:)`` after an earlier `open`); 0 with no copy.
    ///   - acknowledged: what of `held` a daemon acknowledged as durable; the command line's kept
    ///     copy (``ClientCache``) holds nothing else, so its whole version. When the catch-up is
    ///     the daemon's snapshot (`held` is behind its floor), the copy's own edits that the
    ///     snapshot lacks are made again on it, except these: a daemon holds them (in its causal
    ///     buffer, or not yet relayed to this one) and they come back from it; made again here
    ///     too, they would show twice (Docs/Semantics.md §7, "A device left behind").
    /// - Throws: ``DaemonClientError/refused(_:_:)`` with `.epochMismatch` when the document was
    ///   reset or restored since: drop `held` and open it afresh.
    ///   - keepsCopy: the copy is kept between runs (the command line's, ``ClientCache``): it says
    ///     `seen` as a ``ListSync/SeenRole/liveCopy``, and this returns once the daemon has also
    ///     told its floor (``followsFloor(_:)``), the copy compacted there if it holds exactly it;
    ///     later floors compact it too. A daemon of an older build refuses the role and closes
    ///     the connection (``refusedLiveCopy``): open it again without.
    public func open(_ document: DocumentID, replica: ReplicaID? = nil, resuming held: ListDocument? = nil,
                     epoch: UInt64 = 0, acknowledged heldAcknowledged: VersionVector = VersionVector(),
                     keepsCopy: Bool = false) async throws -> LiveDocument {
        if let live = opened[document] { return live }
        replaced.remove(document)
        floors[document] = nil
        acknowledged[document] = (heldAcknowledged, true)
        if keepsCopy { copies.insert(document) } else { copies.remove(document) }
        let start = held ?? ListDocument(replica: replica ?? ReplicaID.random())
        let live = changeSets ? LiveDocument(start) : LiveDocument(withoutChangeSets: start)
        // The catch-up, however many frames, is one change set (published at `synced`).
        live.holdChanges()
        opened[document] = live
        let since = held?.version ?? VersionVector()
        let actions = session.subscribe(document, epoch: epoch, version: since, now: EventLoop.now())
        let (name, currentEpoch, version): (String, UInt64, VersionVector)
        do {
            (name, currentEpoch, version) = try await withCheckedThrowingContinuation { c in
                subscriptions[document] = c
                perform(actions)
            }
            if !synced.contains(document) {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                    // The session may have closed between `subscribed` and now (a daemon killed
                    // right after it): nothing would resume a wait registered after that.
                    if session.isClosed { c.resume(throwing: DaemonClientError.disconnected) } else { catchUps[document] = c }
                }
            }
        } catch {
            opened[document] = nil
            live.publishHeldChanges()
            throw error
        }
        if keepsCopy, floors[document] == nil {
            // The `seen` sent at `synced` is answered with the floor (or the connection ends).
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if session.isClosed { c.resume() } else {
                    floorWaiters[document] = (c, EventLoop.now() &+ requestTimeout.nanoseconds)
                }
            }
            if floors[document] == nil {
                opened[document] = nil
                throw endReason.map { _ in DaemonClientError.disconnected } ?? DaemonClientError.timeout("the floor of \(document)")
            }
        }
        names[document] = (name, currentEpoch)
        try await sendMissing(document, from: live.document, since: version)
        return live
    }

    /// The most operations ``open(_:replica:resuming:epoch:acknowledged:keepsCopy:)`` rebuilds from a held
    /// copy's log and sends at once (an imported list is sent this way).
    public static let resumePart = 65_536

    /// Sends what `held` has and `version` lacks, ``resumePart`` operations at a time, each part
    /// acknowledged before the next is rebuilt from the log: memory of one part, not of the
    /// whole difference decoded. `held` is a value: if the opened copy changes meanwhile (another
    /// subscriber's edit), the parts still come from the log as it was.
    ///
    /// - Complexity: O(r + k) for the r records of `held`'s log and the k operations sent.
    private func sendMissing(_ document: DocumentID, from held: ListDocument, since version: VersionVector) async throws {
        let end = held.operationCount
        var position = 0, part: [ListOperation] = []
        while position < end {
            part.removeAll(keepingCapacity: true)
            position = held.appendOperations(since: version, from: position, before: end, limit: Self.resumePart, into: &part)
            if !part.isEmpty { try await send(document, part) }
        }
    }

    /// Calls `handler` with every batch of operations the daemon sends for an opened document,
    /// before they are applied (for instrumentation: the load generator times arrivals with it).
    public func observeOperations(_ handler: @escaping @Sendable (DocumentID, [ListOperation]) -> Void) {
        observer = handler
    }

    /// The name and epoch of an opened document.
    public func info(_ document: DocumentID) -> (name: String, epoch: UInt64)? { names[document] }

    /// Whether the copy of an opened document was replaced by the daemon's snapshot (the copy
    /// resumed from was behind the daemon's compaction floor): its log is then not the one it
    /// was opened with plus what came since.
    public func wasReplaced(_ document: DocumentID) -> Bool { replaced.contains(document) }

    /// Whether the copy of a document opened with `keepsCopy` holds the history the daemon
    /// holds: its floor is the daemon's (none where the daemon never compacted). False: the
    /// copy keeps history the daemon has collected, and cannot compact it away (it is past the
    /// floor): open it afresh. Nil when the daemon has not told its floor.
    public func followsFloor(_ document: DocumentID) -> Bool? {
        guard let floor = floors[document], let live = opened[document] else { return nil }
        return live.document.historyFloor == (floor == VersionVector() ? nil : floor)
    }

    /// Whether the daemon refused ``ListSync/SeenRole/liveCopy`` (an older build): it has closed
    /// this connection; open without `keepsCopy` on the next.
    public var refusedLiveCopy: Bool { session.refusedByDaemon.contains(.liveCopy) }

    /// Edits an opened document and returns once the daemon acknowledged every frame of the
    /// operations as durable.
    ///
    /// A frame the daemon refused for its rate limit (`limit`: nothing of it done) is sent again
    /// after a pause (50 ms, doubling up to 1.6 s) until it is acknowledged or ``limitPatience``
    /// (by default ``requestTimeout``) has passed since the first send; then the edit throws the
    /// daemon's last refusal. Any
    /// other refusal (`storage`: the daemon's disk is full) throws at once. The operations stay
    /// in the opened copy either way, and a later edit's operations depend on them: an app that
    /// gets an error here should send them again (``upload(_:_:)``) or open the document again
    /// (a device's ``SyncClient`` does all this itself).
    public func edit<R: Sendable>(_ document: DocumentID, _ body: (inout ListDocument) throws(ListError) -> R) async throws -> R {
        guard let live = opened[document] else { throw DaemonClientError.refused(.unknownDocument, "open \(document) first") }
        let result = try live.edit(body)
        if !result.operations.isEmpty { try await send(document, result.operations) }
        return result.result
    }

    /// Sends operations made elsewhere (an import) to an opened document; returns once they are
    /// acknowledged as durable.
    public func upload(_ document: DocumentID, _ operations: [ListOperation]) async throws {
        guard let live = opened[document] else { throw DaemonClientError.refused(.unknownDocument, "open \(document) first") }
        _ = live.receive(operations)
        try await send(document, operations)
    }

    // MARK: Presence

    /// Publishes what this client does with an opened document (a drag in progress:
    /// `dragSession.presenceActivity`; `.idle` when it ends) to the document's other subscribers,
    /// shown with `name` (Docs/DragSessions.md, "Presence").
    ///
    /// The first call for a document also makes the daemon relay the others' presence to this
    /// client: they arrive in the opened `LiveDocument` (``ListTable/LiveDocument/remoteActivities``,
    /// ``ListTable/LiveDocument/presenceChanges()``), and expire there 3 s after their last refresh.
    /// Calls are coalesced to at most 10 messages a second per document (the latest wins); an
    /// activity in progress is refreshed every second. Nothing is stored or acknowledged.
    public func publishPresence(_ document: DocumentID, _ activity: PresenceActivity, as name: String) throws {
        guard let live = opened[document] else { throw DaemonClientError.refused(.unknownDocument, "open \(document) first") }
        let now = EventLoop.now()
        let due = presence.publish(document, activity, replica: live.replica, name: name, now: now)
        if let due { perform(session.publish(document, due)) } else { schedulePresenceFlush(now: now) }
    }

    /// Sends what the outboxes owe now; forgets the others' presence that expired.
    private func flushPresence() {
        let now = EventLoop.now()
        for (doc, due) in presence.tick(now: now) { perform(session.publish(doc, due)) }
        for (_, live) in opened { live.expirePresence(now: now) }
    }

    /// Flushes coalesced presence when its turn comes, sooner than the 250 ms tick.
    private func schedulePresenceFlush(now: UInt64) {
        guard presenceFlush == nil, let at = presence.nextDeadline else { return }
        presenceFlush = Task { [weak self] in
            try? await Task.sleep(nanoseconds: at > now ? at - now : 0)
            await self?.presenceFlushed()
        }
    }

    private func presenceFlushed() {
        presenceFlush = nil
        flushPresence()
    }

    // MARK: The session's driver

    private func send(_ document: DocumentID, _ ops: [ListOperation]) async throws {
        let (edit, actions) = session.send(document, ops, now: EventLoop.now())
        carried[edit] = (document, ops)
        _ = try await withCheckedThrowingContinuation { (c: CheckedContinuation<VersionVector, any Error>) in
            edits[edit] = c
            perform(actions)
        }
    }

    /// Notes an edit's answer (in the order the daemon answers, before its sender resumes): the
    /// copy's own operations it carried count as acknowledged, as long as every earlier edit of
    /// the document was acknowledged too. After one that was not (refused, or the connection
    /// lost), none counts: a version counts every counter of the replica up to its greatest.
    ///
    /// - Complexity: O(k) for the k operations of the edit.
    private func noteAnswered(_ edit: UInt64, succeeded: Bool) {
        let retried = retries.removeValue(forKey: edit) != nil
        guard let (document, ops) = carried.removeValue(forKey: edit) else { return }
        let othersResending = (resending[document] ?? 0) - (retried ? 1 : 0)
        if retried { resending[document] = othersResending > 0 ? othersResending : nil }
        guard var held = acknowledged[document] else { return }
        // An earlier edit refused and not yet acknowledged: this one's version would claim it.
        guard succeeded, held.counting, othersResending == 0, let replica = opened[document]?.replica else {
            acknowledged[document]?.counting = false
            return
        }
        for op in ops where op.id.replica == replica { held.version.observe(op.lastID) }
        acknowledged[document] = held
    }

    /// Edit `n` was refused for the daemon's rate limit (nothing of that frame done): sends its
    /// operations again after a pause, as a new edit that resumes the same waiter, unless its
    /// time is up or the document is no longer open (false: it fails now). Sending operations
    /// the daemon already holds again is harmless (duplicates are ignored).
    private func sendAgainLater(_ n: UInt64) -> Bool {
        guard let (document, ops) = carried[n], opened[document] != nil, let waiter = edits[n] else { return false }
        let now = EventLoop.now()
        let first = retries[n] == nil
        let retry = retries[n] ?? (0, now &+ limitPatience.nanoseconds)
        let pause = UInt64(50_000_000) << UInt64(min(retry.attempt, 5))
        guard now &+ pause < retry.deadline else { return false }
        carried[n] = nil
        edits[n] = nil
        retries[n] = nil
        if first { resending[document, default: 0] += 1 }
        Task { [weak self] in
            try? await Task.sleep(nanoseconds: pause)
            guard let self else { return waiter.resume(throwing: DaemonClientError.disconnected) }
            await self.sendAgain(document, ops, waiter, attempt: retry.attempt + 1, deadline: retry.deadline)
        }
        return true
    }

    private func sendAgain(_ document: DocumentID, _ ops: [ListOperation], _ waiter: CheckedContinuation<VersionVector, any Error>,
                           attempt: Int, deadline: UInt64) {
        let (edit, actions) = session.send(document, ops, now: EventLoop.now())
        carried[edit] = (document, ops)
        edits[edit] = waiter
        retries[edit] = (attempt, deadline)
        perform(actions)
    }

    private func ask(_ request: ClientSession.Request) async throws -> ClientSession.Answer {
        let (n, actions) = session.request(request, now: EventLoop.now())
        return try await withCheckedThrowingContinuation { c in
            answers[n] = c
            perform(actions)
        }
    }

    private func received(_ frame: [UInt8]) {
        perform(session.receive(frame, now: EventLoop.now()))
    }

    private func tick() {
        let now = EventLoop.now()
        for (doc, w) in floorWaiters where w.deadline <= now {
            floorWaiters[doc] = nil
            w.0.resume()
        }
        for (doc, r) in resyncs where r.deadline <= now && r.resync.synced != nil {
            // The daemon never took the acknowledged edits: the open fails, the copy unchanged.
            resyncs[doc] = nil
            catchUps.removeValue(forKey: doc)?.resume(throwing: DaemonClientError.editsHeldElsewhere(doc))
        }
        perform(session.tick(now: now))
        flushPresence()
    }

    private func closedByPeer() {
        ticker?.cancel()
        presenceFlush?.cancel()
        for (_, live) in opened { live.clearPresence() }
        perform(session.disconnected())
        ended(endReason ?? transport.closeReason?.description ?? "the connection to the daemon closed")
    }

    /// The connection ended for `reason`: whoever waits for that hears it.
    private func ended(_ reason: String) {
        endReason = reason
        for w in closeWaiters { w.resume(returning: reason) }
        closeWaiters = []
        for (_, waiters) in documentEndWaiters { for w in waiters { w.resume(returning: "") } }
        documentEndWaiters = [:]
        for f in listFollowers { f.finish() }
        listFollowers = []
    }

    /// The changes to the daemon's document list from now on: documents made, renamed and
    /// destroyed, by anyone (within this credential's scope). The daemon tells a connection
    /// that has listed the documents, so call ``documents()`` first; the stream ends with the
    /// connection.
    public func documentListChanges() -> AsyncStream<DocumentListChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: DocumentListChange.self)
        if transport.isOpen { listFollowers.append(continuation) } else { continuation.finish() }
        return stream
    }

    private func tellFollowers(_ change: DocumentListChange) {
        for f in listFollowers { f.yield(change) }
    }

    /// Waits until the connection ends (the daemon closed it, or it was lost); returns why.
    public func waitUntilClosed() async -> String {
        if let endReason, !transport.isOpen { return endReason }
        return await withCheckedContinuation { closeWaiters.append($0) }
    }

    /// Tells the daemon what this client holds of an opened document (coalesced by the session),
    /// as a client that keeps no copy: it holds compaction back only while it is subscribed.
    private func reportSeen(_ document: DocumentID) {
        guard let live = opened[document] else { return }
        perform(session.reportSeen(document, replica: live.replica, version: live.document.version,
                                   role: copies.contains(document) ? .liveCopy : .live, now: EventLoop.now()))
    }

    /// The daemon's floor of an opened document (`stable`): noted, and a kept copy that holds
    /// exactly that version compacts there too (what it holds is then all in the daemon's
    /// compacted copy: nothing of it is unsent).
    private func floorTold(_ document: DocumentID, _ floor: VersionVector) {
        guard copies.contains(document), let live = opened[document] else { return }
        floors[document] = floor
        let copy = live.document
        if DeviceCopyPolicy.compactsAtFloor(floor, version: copy.version, historyFloor: copy.historyFloor, resyncing: false),
           (try? live.compact(at: floor)) != nil {
            replaced.insert(document)
        }
        floorWaiters.removeValue(forKey: document)?.0.resume()
    }

    /// The catch-up of an opened document is the daemon's snapshot (what was held is behind its
    /// compaction floor): the daemon's copy is built from it, to replace the copy once it holds
    /// what `synced` says (``finishResync(_:)``).
    private func resync(_ document: DocumentID, from bytes: [UInt8]) {
        guard let live = opened[document] else { return }
        var resync = CopyResync()
        do {
            try resync.snapshot(bytes, replica: live.replica)
            resyncs[document] = (resync, EventLoop.now() &+ requestTimeout.nanoseconds)
        } catch {
            let t = transport
            Task { await t.close(reason: "the daemon's snapshot did not load: \(error)") }
        }
    }

    /// Replaces the copy of a re-syncing document with the daemon's, once that holds what `synced`
    /// said and every edit of the copy a daemon acknowledged that can still come
    /// (``ListSync/CopyResync/outcome(local:acknowledged:prepare:)``): the copy's other edits the
    /// daemon lacks are made again on it (sent by ``open(_:replica:resuming:epoch:acknowledged:keepsCopy:)``),
    /// and the document goes live. Until then it waits (``tick()`` gives up at the deadline).
    private func finishResync(_ document: DocumentID) {
        guard let resync = resyncs[document]?.resync, let live = opened[document] else { return }
        let held = acknowledged[document]?.version ?? VersionVector()
        guard let outcome = resync.outcome(local: live.document, acknowledged: held) else { return }
        resyncs[document] = nil
        live.replace(with: outcome.document)
        replaced.insert(document)
        wentLive(document)
    }

    /// The catch-up of `document` is complete: its change set is published, and `open` returns.
    private func wentLive(_ document: DocumentID) {
        synced.insert(document)
        opened[document]?.publishHeldChanges()
        catchUps.removeValue(forKey: document)?.resume()
        reportSeen(document)
    }

    private func perform(_ actions: [ClientSession.Action]) {
        for action in actions {
            switch action {
            case let .send(frame):
                // A closed transport: the reader still delivers what came before the close (a
                // revocation's error among it), then ends the session; what waits fails then.
                _ = transport.enqueue(frame)
            case let .close(reason):
                let t = transport
                Task { await t.close(reason: reason) }
            case let .answered(n, result):
                answers.removeValue(forKey: n)?.resume(with: result.mapError { DaemonClientError($0) })
            case let .subscribed(doc, name, epoch, version):
                subscriptions.removeValue(forKey: doc)?.resume(returning: (name, epoch, version))
            case let .subscribeFailed(doc, error):
                let e = DaemonClientError(error)
                let waited = subscriptions[doc] != nil || catchUps[doc] != nil
                subscriptions.removeValue(forKey: doc)?.resume(throwing: e)
                catchUps.removeValue(forKey: doc)?.resume(throwing: e)
                if !waited, opened[doc] != nil, case let .refused(code, text) = error, code == .destroyed || code == .epochMismatch {
                    // A live document ended by the daemon: it no longer syncs.
                    opened[doc] = nil
                    endedDocuments[doc] = text
                    for w in documentEndWaiters.removeValue(forKey: doc) ?? [] { w.resume(returning: text) }
                }
            case let .operations(doc, ops):
                observer?(doc, ops)
                if resyncs[doc]?.resync.receive(ops) == true {
                    finishResync(doc)
                } else {
                    _ = opened[doc]?.receive(ops)
                    if synced.contains(doc) { reportSeen(doc) }
                }
            case let .snapshot(doc, bytes):
                resync(doc, from: bytes)
            case let .synced(doc, version):
                if resyncs[doc] != nil {
                    resyncs[doc]?.resync.synced(version)
                    finishResync(doc)
                } else {
                    wentLive(doc)
                }
            case let .editDone(n, result):
                if case .failure(.refused(.limit, _)) = result, sendAgainLater(n) { continue }
                if case .success = result { noteAnswered(n, succeeded: true) } else { noteAnswered(n, succeeded: false) }
                edits.removeValue(forKey: n)?.resume(with: result.mapError { DaemonClientError($0) })
            case let .accessEnded(_, text):
                endReason = text
            case let .presence(doc, p):
                opened[doc]?.receivePresence(p, now: EventLoop.now())
            case .stability, .parted:
                // Only a peer daemon's link hears a daemon's stability table; `parted` only a
                // device that asked (this client keeps no copy it re-syncs).
                break
            case let .announced(list):
                for info in list { tellFollowers(.changed(info)) }
            case let .withdrawn(doc, epoch):
                tellFollowers(.destroyed(doc, epoch: epoch))
            case let .stable(doc, floor):
                floorTold(doc, floor)
            case .documentError:
                break
            }
        }
        if session.isClosed {
            // Whatever still waits outside the session (a catch-up after `subscribed`) ends too.
            for (_, c) in catchUps { c.resume(throwing: DaemonClientError.disconnected) }
            catchUps = [:]
            for (_, w) in floorWaiters { w.0.resume() }
            floorWaiters = [:]
        }
    }

}

extension DocumentInfo {
    /// Finds a document in `list` by id (32 hex digits or a unique prefix of at least 4) or by exact name.
    ///
    /// - Throws: ``DaemonClientError/refused(_:_:)`` with `.unknownDocument` when none or several match.
    /// - Complexity: O(n).
    public static func resolve(_ text: String, in list: [DocumentInfo]) throws(DaemonClientError) -> DocumentInfo {
        if let exact = list.first(where: { $0.id.description == text.lowercased() }) { return exact }
        let byName = list.filter { $0.name == text }
        if byName.count == 1 { return byName[0] }
        let byPrefix = text.count >= 4 ? list.filter { $0.id.description.hasPrefix(text.lowercased()) } : []
        if byPrefix.count == 1 { return byPrefix[0] }
        if byName.count > 1 || byPrefix.count > 1 {
            throw .refused(.unknownDocument, "\"\(text)\" names more than one document; use its id")
        }
        throw .refused(.unknownDocument, "no document \"\(text)\" (see `listsync docs`)")
    }
}
