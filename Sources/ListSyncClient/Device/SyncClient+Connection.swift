import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP
import ListTable

extension SyncClient {
    /// One connection to the daemon: the transport and the protocol's client session over it.
    final class Connection {
        let transport: TCPTransport
        /// `host:port` as dialled: the daemon, for ``LocalCopy/unanswered``.
        let address: String
        var session: ClientSession
        /// Edit numbers of the session → the document they belong to (its machine keeps what
        /// they carry).
        var edits: [UInt64: DocumentID] = [:]
        /// `create` requests → the document they make on the daemon.
        var creates: [UInt64: DocumentID] = [:]
        var ticker: Task<Void, Never>?

        init(transport: TCPTransport, address: String, timeout: Duration, refusedByDaemon: ClientSession.OlderDaemon) {
            self.transport = transport
            self.address = address
            session = ClientSession(maxFrame: transport.maxFrame, timeout: timeout.nanoseconds)
            session.refusedByDaemon = refusedByDaemon
            // A device learns what the daemons parted (Docs/Semantics.md §7, "A device learns what
            // was parted"); a daemon of an older build refuses the asking `subscribe` once.
            session.asksForParted = true
        }
    }

    /// Starts connecting to the daemon in the background, and reconnecting after every loss
    /// (``Server/backoff``), until ``close()``. Does nothing without a server.
    public func start() {
        guard server != nil, runner == nil, !closed else { return }
        runner = Task { await self.run() }
    }

    /// Cuts the wait before the next connection attempt short (call it from the app's
    /// reachability callback, or when it comes to the foreground).
    public func reconnectNow() {
        wake?.resume()
        wake = nil
    }

    /// The addresses this client dials (`host:port`): the server's, then its alternates.
    var dialled: [String] { reconnect.addresses }

    /// Connects, and reconnects, until ``close()``: the I/O of what ``reconnect`` decides.
    func run() async {
        guard let server else { return }
        var rng = SystemRandomNumberGenerator()
        var next = reconnect.start()
        while let action = next, !closed, !Task.isCancelled {
            switch action {
            case let .dial(i):
                next = await dial(i, of: server, using: &rng)
            case let .wait(until):
                let now = EventLoop.now()
                await sleep(.nanoseconds(Int64(clamping: until > now ? until - now : 0)))
                next = reconnect.timerFired(now: EventLoop.now())
            case .giveUp:
                // Revoked or expired: connecting again cannot help; edits stay saved here.
                updateStatus()
                next = nil
            }
        }
    }

    /// Dials address `i` of `server` and serves its connection until it ends; what the machine
    /// does next (nil once closed).
    func dial(_ i: Int, of server: Server, using rng: inout SystemRandomNumberGenerator) async -> ReconnectMachine.Action? {
        let (host, port) = i == 0 ? (server.host, server.port) : server.alternates[i - 1]
        isConnecting = true
        updateStatus()
        let transport: TCPTransport
        do {
            transport = try await TCPTransport.connect(host: host, port: port, authentication: server.authentication,
                                                       localHost: server.localHost, loop: loop)
        } catch {
            let why: ReconnectMachine.DialFailure
            if case let .handshake(reason) = error, reason.isAuthenticationFailure {
                sessionFailure = .wrongKey(reason.description)
                why = .refused
            } else {
                lastError = "cannot reach \(host):\(port): \(error)"
                why = .unreachable
            }
            isConnecting = false
            updateStatus()
            return reconnect.dialFailed(why, now: EventLoop.now(), using: &rng)
        }
        isConnecting = false
        if closed {
            await transport.close()
            return nil
        }
        reconnect.connected()
        sessionFailure = nil
        lastError = nil
        await serve(transport, address: "\(host):\(port)", timeout: server.requestTimeout)
        if closed { return nil }
        let loss: ReconnectMachine.Loss
        if case .accessEnded? = sessionFailure {
            loss = .accessEnded
        } else {
            loss = .closed
            lastError = lastError ?? "the connection to \(host):\(port) closed"
        }
        updateStatus()
        return reconnect.lost(loss, now: EventLoop.now(), using: &rng)
    }

    /// Waits `delay`, or less if ``reconnectNow()`` or ``close()`` comes first.
    func sleep(_ delay: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.reconnectNow()
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if closed { c.resume() } else { wake = c }
        }
        timer.cancel()
    }

    /// Runs one connection until it closes.
    func serve(_ transport: TCPTransport, address: String, timeout: Duration) async {
        let c = Connection(transport: transport, address: address, timeout: timeout, refusedByDaemon: refusedByDaemon)
        connection = c
        c.ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                await self?.tick()
            }
        }
        for copy in copies.values.sorted(by: { $0.id < $1.id }) { attach(copy) }
        updateStatus()
        for await frame in transport.incoming {
            guard connection === c else { break }
            await perform(c.session.receive(frame, now: EventLoop.now()), on: c)
            if c.session.isClosed { break }
        }
        c.ticker?.cancel()
        refusedByDaemon.formUnion(c.session.refusedByDaemon)
        if connection === c {
            // Detached before any wait: an edit arriving meanwhile must not use a closed session.
            connection = nil
            await perform(c.session.disconnected(), on: c)
            await transport.close()
            let t = transport.traffic
            closedTraffic = (closedTraffic.sent + t.sent, closedTraffic.received + t.received)
        }
        for copy in copies.values {
            copy.live.clearPresence()   // nothing refreshes it now
            copy.live.publishHeldChanges()   // a catch-up cut short: what came of it is shown
            copy.phase = .idle
            copy.machine.disconnected()
            if copy.recordDirty { writeRecord(copy) }
        }
        updateStatus()
    }

    func tick() async {
        guard let c = connection else { return }
        await perform(c.session.tick(now: EventLoop.now()), on: c)
        tickPresence()
    }

    /// Starts syncing `copy` on the current connection, if any: `create` first for a document
    /// the daemon has never had, then `subscribe` from the copy's version.
    func attach(_ copy: LocalCopy) {
        guard let c = connection, copy.phase == .idle, copy.failure == nil else { return }
        if copy.machine.daemon == nil { copy.machine.connected(to: c.address) }
        if !copy.record.onServer {
            let (n, actions) = c.session.request(.create(name: copy.name, sections: [], id: copy.id, epoch: copy.record.epoch), now: EventLoop.now())
            c.creates[n] = copy.id
            copy.phase = .creating(request: n)
            send(actions, on: c)
            return
        }
        copy.phase = .subscribing
        // After a refusal for the compaction floor: from nothing, so that the catch-up is the
        // daemon's snapshot (its history no longer goes back that far).
        let since = copy.machine.subscribing(copy.live.document)
        send(c.session.subscribe(copy.id, epoch: copy.record.epoch, version: since, now: EventLoop.now()), on: c)
    }

    /// Sends the operations of `copy` the daemon has not acknowledged (once caught up; only
    /// durable ones: the caller checks that no append runs).
    func sendMissing(_ copy: LocalCopy) {
        guard connection != nil else { return }
        act(copy.machine.sendUnacknowledged(copy.live.document), for: copy)
    }

    /// Does what `copy`'s state machine decided (``ListSync/DeviceClientMachine/Action``): the
    /// I/O of its decisions on the current connection and in the device's folder.
    func act(_ actions: [DeviceClientMachine.Action], for copy: LocalCopy) {
        copy.noteMachine(replica: replica)
        for action in actions {
            switch action {
            case let .send(ops, recordFirst):
                guard let c = connection else { continue }
                if recordFirst {
                    // Durable before they leave: a refusal by another daemon is final only once
                    // this one answered too (``ListSync/UnansweredSends``).
                    writeRecord(copy)
                    guard !copy.recordDirty else {
                        lastError = "edits of \(copy.id) not sent: their record was not written"
                        continue
                    }
                }
                let (n, sends) = c.session.send(copy.id, ops, now: EventLoop.now())
                c.edits[n] = copy.id
                copy.machine.sent(edit: n, ops)
                send(sends, on: c)
            case .sendUnacknowledged:
                if copy.appending == 0 { sendMissing(copy) } else { copy.resendAfterAppends = true }
            case .saveRecord:
                writeRecord(copy)
            case .live:
                copy.phase = .live
                copy.live.publishHeldChanges()
            case .reportSeen:
                if let c = connection { reportSeen(copy, on: c) }
            case let .refusedForFloor(text):
                lastError = "compacted: \(text)"
            case let .settle(other):
                // Another daemon may hold what this one refused: ask it first (it acknowledges
                // them, or refuses them too).
                lastError = "\(lastError ?? "compacted"); asking \(other) first, which may hold those edits"
                reconnect.settle(at: other)
                if let t = connection?.transport { Task { await t.close(reason: "edits refused here may be held by \(other)") } }
            case .resubscribe:
                // Left behind a compaction (retired while offline), or unaccounted for on a peered
                // document: re-sync from the daemon's copy and make the unsent edits again.
                guard copy.phase != .idle, let c = connection else { continue }
                send(c.session.unsubscribe(copy.id), on: c)
                copy.phase = .idle
                attach(copy)
            case let .replace(outcome):
                resync(copy, with: outcome)
            case .cannotSend:
                lastError = "edits of \(copy.id) not sent: the copy compacted past what the daemon acknowledged"
            case let .editFailed(error):
                fail(copy, error)
            case .dropPartedWaiting:
                dropPartedWaiting(copy)
            case let .announceRemade(ranges):
                if let c = connection { send(c.session.remade(copy.id, ranges: ranges), on: c) }
            }
        }
    }

    /// Performs the actions of a call on the session (frames out, or, on a session that has
    /// closed, the call's failure at once).
    func send(_ actions: [ClientSession.Action], on c: Connection) {
        var settled = false
        for action in actions {
            if case .send = action {} else { settled = true }
            settle(action, on: c)
        }
        if settled { updateStatus() }
    }

    /// Performs the actions of an event on the session, storing received operations.
    func perform(_ actions: [ClientSession.Action], on c: Connection) async {
        for action in actions {
            if case let .snapshot(id, bytes) = action {
                if let copy = copies[id] { resync(copy, from: bytes, on: c) }
                continue
            }
            guard case let .operations(id, ops) = action else {
                settle(action, on: c)
                continue
            }
            guard let copy = copies[id] else { continue }
            let configured = dialled
            let (applies, more) = copy.machine.received(ops, document: copy.live.document, askable: { configured.contains($0) })
            guard applies else {
                // Re-syncing: the catch-up from nothing is the daemon's copy (``resync(_:with:)``).
                act(more, for: copy)
                continue
            }
            _ = copy.live.receive(ops)
            copy.noteMachine(replica: replica)
            copy.appending += 1
            do { try await copy.store.append(ops) } catch { copy.failure = .storage(error.description) }
            copy.appending -= 1
            if copy.resendAfterAppends, copy.appending == 0 {
                copy.resendAfterAppends = false
                sendMissing(copy)
            }
            act(more, for: copy)
        }
        updateStatus()
    }

    /// Performs one action that needs no waiting (everything but storing operations).
    func settle(_ action: ClientSession.Action, on c: Connection) {
        switch action {
        case let .send(frame):
            if !c.transport.enqueue(frame) {
                let t = c.transport
                Task { await t.close() }
            }
        case let .close(reason):
            lastError = reason
            let t = c.transport
            Task { await t.close(reason: reason) }
        case let .answered(n, result):
            guard let id = c.creates.removeValue(forKey: n), let copy = copies[id] else { break }
            switch result {
            case let .success(.created(_, epoch)) where epoch == copy.record.epoch:
                copy.record.onServer = true
                writeRecord(copy)
                copy.phase = .idle
                attach(copy)
            case .success:
                copy.phase = .idle
                copy.failure = .documentReset(id, unsent: copy.unacked.count)
            case let .failure(e):
                copy.phase = .idle
                fail(copy, e)
            }
        case let .subscribed(id, name, epoch, version):
            guard let copy = copies[id] else { break }
            if copy.record.epoch == 0 {
                do {
                    try copy.store.resetEpoch(to: epoch)
                } catch {
                    copy.failure = .storage(error.description)
                    break
                }
                copy.record.epoch = epoch
                copy.record.name = name
                copy.name = name
                writeRecord(copy)
            }
            act(copy.machine.subscribed(version, document: copy.live.document), for: copy)
            copy.phase = .catchingUp
            copy.live.holdChanges()   // one change set for the whole catch-up (`caughtUp`)
            presence.announce(id)   // a presence in progress is owed to this new subscription
        case let .subscribeFailed(id, error):
            guard let copy = copies[id] else { break }
            copy.phase = .idle
            fail(copy, error)
        case let .synced(id, version):
            guard let copy = copies[id] else { break }
            // Caught up (re-syncing, once the daemon's copy is complete: ``resync(_:with:)``).
            let configured = dialled
            act(copy.machine.synced(version, document: copy.live.document, askable: { configured.contains($0) }), for: copy)
        case let .editDone(n, result):
            guard let id = c.edits.removeValue(forKey: n), let copy = copies[id] else { break }
            // Acknowledged (what the daemon keeps waiting for its causes too, in order), or
            // refused; a refusal for the floor is acted on once every later edit is answered.
            let configured = dialled
            act(copy.machine.answered(edit: n, result, document: copy.live.document, askable: { configured.contains($0) }), for: copy)
        case let .documentError(id, code, text):
            if code == .compacted, let copy = copies[id] {
                // Operations of this device the daemon kept waiting, refused when woken.
                fail(copy, .refused(.compacted, text))
            } else if code == .destroyed, let copy = copies[id] {
                destroyedOnDaemon(copy, text)
            } else if code == .epochMismatch, let copy = copies[id] {
                copy.failure = .documentReset(id, unsent: copy.unacked.count)
            } else {
                lastError = "\(code): \(text)"
            }
        case let .accessEnded(code, text):
            sessionFailure = .accessEnded(code, text)
        case let .presence(id, p):
            copies[id]?.live.receivePresence(p, now: EventLoop.now())
        case let .withdrawn(id, _):
            // Destroyed while this connection was not subscribed to it (or before its error came).
            if let copy = copies[id] { destroyedOnDaemon(copy, "document \(id) was destroyed on the daemon") }
        case .announced, .stability:
            // A daemon's stability table goes only to a peer daemon's link.
            break
        case let .stable(id, floor):
            if let copy = copies[id] { compactCopy(copy, at: floor) }
        case let .parted(id, ranges):
            // A re-sync waiting for acknowledged originals the daemons parted is ready now.
            guard let copy = copies[id] else { break }
            let configured = dialled
            act(copy.machine.learnedParted(ranges, document: copy.live.document, askable: { configured.contains($0) }), for: copy)
        case .operations, .snapshot:
            assertionFailure("operations and snapshots are stored by perform")
        }
    }

    /// What a refusal of `copy` means: a reset, or a failure to report; a lost connection or
    /// a timeout only waits for the next connection.
    func fail(_ copy: LocalCopy, _ error: ClientSessionError) {
        switch error {
        case .refused(.epochMismatch, _):
            copy.failure = .documentReset(copy.id, unsent: copy.unacked.count)
        case let .refused(.destroyed, text):
            destroyedOnDaemon(copy, text)
        case let .refused(.compacted, text):
            // Left behind a compaction (retired while offline), or unaccounted for on a peered
            // document: the machine decides (wait for the later edits' answers, ask another
            // daemon that may hold them, or re-sync and make them again). A daemon no longer
            // configured cannot be asked: what it may hold is given up.
            let configured = dialled
            act(copy.machine.refusedForFloor(text, document: copy.live.document, askable: { configured.contains($0) }), for: copy)
        case let .refused(code, text) where code == .limit || code == .storage:
            // Nothing was done: try again on a new connection (after the backoff).
            lastError = "\(code): \(text)"
            if let t = connection?.transport { Task { await t.close(reason: "retry after \(code)") } }
        case let .refused(code, text):
            copy.failure = .refused(copy.id, code, text)
        case let .timeout(what):
            lastError = "no answer from the daemon for \(what)"
            if let t = connection?.transport { Task { await t.close(reason: "timeout") } }
        case .disconnected, .malformed:
            break
        }
    }

    /// Reports what `copy` holds to the daemon (coalesced by the session: at most once a second
    /// per document), so that it can tell when everything is stable and compact.
    func reportSeen(_ copy: LocalCopy, on c: Connection) {
        send(c.session.reportSeen(copy.id, replica: replica, version: copy.live.document.version, role: .compactingDevice,
                                  now: EventLoop.now()), on: c)
    }

    /// The daemon's catch-up for `copy` is a snapshot: the copy was behind its compaction floor.
    /// The snapshot becomes the copy, with the edits the daemon lacks made again on it
    /// (``ListCRDT/ListDocument/remake(_:from:)``), written durably (replacing the store's
    /// generation) before the copy changes; `synced` then sends the remade edits.
    func resync(_ copy: LocalCopy, from bytes: [UInt8], on c: Connection) {
        do {
            try copy.machine.snapshot(bytes)
        } catch {
            copy.failure = .refused(copy.id, .malformed, "the daemon's snapshot did not load: \(error)")
        }
    }

    /// The re-sync's outcome (``ListSync/CopyResync/outcome(local:acknowledged:prepare:)``: the
    /// daemon's copy with the edits it lacked made again on it, once it holds all `synced` said
    /// and every edit of this device a daemon acknowledged) becomes `copy`, written durably
    /// first; then the copy is caught up (``ListSync/DeviceClientMachine/replaced(_:document:)``).
    func resync(_ copy: LocalCopy, with outcome: CopyResync.Outcome) {
        do { try copy.store.replace(with: outcome.document) } catch {
            copy.failure = .storage(error.description)
            return
        }
        copy.live.replace(with: outcome.document)
        let more = copy.machine.replaced(outcome, document: copy.live.document)
        copy.noteMachine(replica: replica)
        copy.recount(replica: replica)
        assert(copy.unacked.count == outcome.made.count, "\(outcome.made.count) edits made again, \(copy.unacked.count) unacknowledged")
        lastError = nil
        act(more, for: copy)
    }

    func writeRecord(_ copy: LocalCopy) {
        do {
            try folder.write(copy.record, for: copy.id)
            copy.recordDirty = false
        } catch {
            // Losing the record only costs a resend; the next write tries again.
            copy.recordDirty = true
        }
    }
}
