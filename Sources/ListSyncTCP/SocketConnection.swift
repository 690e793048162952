import ListSyncTransport
import Synchronization

/// The I/O of one connection, on its event loop's thread: reads feed the ``ConnectionMachine``,
/// its actions become writes, deliveries, timers and the close.
final class SocketConnection: EventHandler, @unchecked Sendable {
    // @unchecked Sendable: every mutable property is used only on `loop`'s thread (callers hop
    // there with `loop.execute`); `status` is a Mutex and `inbox` a Sendable continuation.

    let fd: Int32
    let remote: SocketAddress
    let loop: EventLoop
    let options: TCPOptions
    var machine: ConnectionMachine
    let status = Mutex<(open: Bool, reason: CloseReason?)>((true, nil))
    /// Bytes written to and read from the socket (frame headers, handshake and tags included).
    let traffic = Mutex<(sent: Int, received: Int)>((0, 0))

    /// Called once when the handshake ends, with the transport to hand out.
    var onEstablished: ((TCPTransport) -> Void)?
    /// Called once if the connection closes before its handshake ended.
    var onFailedHandshake: ((TransportError) -> Void)?
    /// Called once when the socket is closed, established or not (the listener's counts).
    var onClose: ((CloseReason) -> Void)?
    /// Called when the peer fails the key proof (the listener's counts and eviction order).
    var onAuthenticationFailure: (() -> Void)?

    private var inbox: AsyncStream<[UInt8]>.Continuation?
    private var outbound = OutboundBuffer()
    private var connecting = false
    private var watchingWrites = false
    private var closed = false
    private var draining = false
    private var flushScheduled = false
    private var lastReceived = EventLoop.now()
    private var handshakeTimer: TimerQueue.ID?
    private var idleTimer: TimerQueue.ID?
    private var closeWaiters: [() -> Void] = []
    /// Who waits for the send queue to fall below a size (back-pressure for catch-ups).
    private var roomWaiters: [(below: Int, body: () -> Void)] = []

    init(fd: Int32, remote: SocketAddress, machine: ConnectionMachine, options: TCPOptions, loop: EventLoop) {
        self.fd = fd
        self.remote = remote
        self.machine = machine
        self.options = options
        self.loop = loop
    }

    /// Bytes queued and not yet written.
    var queued: Int { outbound.queued }

    // MARK: Starting

    /// Client: starts the non-blocking connect; the handshake follows when it completes.
    func startConnecting(to address: SocketAddress) {
        armHandshakeDeadline()
        do {
            try loop.register(fd, self, writable: true)
            watchingWrites = true
            if try System.connect(fd, address) {
                connected()
            } else {
                connecting = true
            }
        } catch {
            finish(.system(error))
        }
    }

    /// Server: the socket is accepted; wait for HELLO.
    func startAccepted() {
        armHandshakeDeadline()
        do { try loop.register(fd, self, writable: false) } catch { finish(.system(error)) }
    }

    private func armHandshakeDeadline() {
        handshakeTimer = loop.schedule(after: options.handshakeTimeout) { [weak self] in
            self?.finish(.local("handshake not finished within \(self?.options.handshakeTimeout ?? .zero)"))
        }
    }

    private func connected() {
        connecting = false
        perform(machine.start())
    }

    // MARK: EventHandler

    func readable() {
        if closed || draining { return }
        while !closed && !draining {
            let bytes: UnsafeRawBufferPointer?
            do { bytes = try loop.read(fd) } catch {
                finish(.system(error))
                return
            }
            guard let bytes else { return }
            let n = bytes.count
            if n == 0 {
                finish(.peerClosed)
                return
            }
            lastReceived = EventLoop.now()
            traffic.withLock { $0.received += n }
            // The machine copies the bytes before anything else can read into the loop's buffer.
            perform(machine.receive(bytes))
            if n < EventLoop.readSize { return }
        }
    }

    func writable() {
        if closed { return }
        if connecting {
            do {
                let error = try System.socketError(fd)
                if error != 0 { throw TransportError.system(call: "connect", errno: error) }
            } catch {
                finish(.system(error))
                return
            }
            connected()
        }
        flush()
    }

    // MARK: From the transport

    /// Seals and queues a DATA frame.
    func sendData(_ payload: [UInt8]) {
        guard !closed, !draining else { return }
        do { try writeSealed(.data, payload) } catch { finish(.local("send: \(error)")) }
    }

    /// Sends BYE (if the handshake is done) and closes once it is written.
    func sayGoodbye(_ reason: String) {
        guard !closed else { return }
        if machine.isEstablished, !draining { try? writeSealed(.bye, Array(reason.utf8.prefix(200))) }
        finish(.local(reason))
    }

    /// Closes at once without a word (a listener evicting a connection still in its handshake).
    func abort(_ reason: String) { closeNow(.local(reason)) }

    /// Whether any byte came from the peer.
    var hasReceived: Bool { traffic.withLock { $0.received > 0 } }

    /// Nanoseconds since the last bytes from the peer (since the socket was made, if none came).
    /// Loop thread only.
    var quietFor: UInt64 { EventLoop.now() &- lastReceived }

    /// Runs `body` once fewer than `below` bytes are queued, or the socket is closed (at once if so).
    func whenRoom(below: Int, _ body: @escaping () -> Void) {
        if closed || queued < below { body() } else { roomWaiters.append((below, body)) }
    }

    /// Runs the room waiters whose threshold is met (all of them once closed).
    private func wakeRoomWaiters() {
        guard !roomWaiters.isEmpty else { return }
        var kept: [(below: Int, body: () -> Void)] = []
        var ready: [() -> Void] = []
        for w in roomWaiters {
            if closed || queued < w.below { ready.append(w.body) } else { kept.append(w) }
        }
        roomWaiters = kept
        for body in ready { body() }
    }

    /// Runs `body` once the socket is closed (at once if it is).
    func whenClosed(_ body: @escaping () -> Void) {
        if closed { body() } else { closeWaiters.append(body) }
    }

    // MARK: Actions

    private func perform(_ actions: [ConnectionMachine.Action]) {
        for action in actions {
            if closed { return }
            switch action {
            case let .write(bytes):
                write(bytes)
            case let .deliver(payload):
                inbox?.yield(payload)
            case let .established(_, claims):
                if let t = handshakeTimer { loop.cancel(t) }
                handshakeTimer = nil
                let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
                inbox = continuation
                armIdleTimer()
                let transport = TCPTransport(socket: self, incoming: stream, peerClaims: claims)
                onFailedHandshake = nil
                onEstablished?(transport)
                onEstablished = nil
            case let .close(reason):
                finish(reason)
            case let .closeAfterDelay(reply, reason):
                // Stop reading (out of the read interest: a level-triggered poller would report the
                // unread bytes on every turn); answer after the delay, then close.
                draining = true
                loop.setInterest(fd, readable: false, writable: watchingWrites)
                onAuthenticationFailure?()
                loop.schedule(after: options.authenticationFailureDelay) { [weak self] in
                    guard let self, !self.closed else { return }
                    self.draining = false
                    self.write(reply)
                    self.finish(reason)
                }
            }
        }
    }

    private func armIdleTimer() {
        let due = EventLoop.now() &+ options.pingInterval.nanoseconds
        idleTimer = loop.schedule(after: options.pingInterval) { [weak self] in
            guard let self, !self.closed else { return }
            let now = EventLoop.now()
            // A turn this late means this process did not run meanwhile (a machine suspended or
            // too busy to schedule it): that time is not the peer's silence, so it does not count
            // toward the idle limit, and a live peer gets its pings answered before it does.
            let late = now > due ? now - due : 0
            if late > self.options.pingInterval.nanoseconds {
                self.lastReceived = min(now, self.lastReceived &+ late)
            }
            let quiet = now &- self.lastReceived
            if quiet >= self.options.idleTimeout.nanoseconds {
                self.sayGoodbye("idle for \(self.options.idleTimeout)")
                return
            }
            if quiet >= self.options.pingInterval.nanoseconds { try? self.writeSealed(.ping, []) }
            self.armIdleTimer()
        }
    }

    // MARK: Writing and closing

    private func write(_ bytes: [UInt8]) {
        guard admit(bytes.count) else { return }
        outbound.append(bytes)
        flushSoon()
    }

    /// Seals a message of `type` straight into the send queue (no array of the frame's own).
    ///
    /// - Throws: as ``ConnectionMachine/seal(_:_:)``.
    private func writeSealed(_ type: MessageType, _ payload: [UInt8]) throws(TransportError) {
        guard admit(ConnectionMachine.sealedSize(payload.count)) else { return }
        try outbound.appendInPlace { (bytes: inout [UInt8]) throws(TransportError) in
            try machine.seal(type, payload, appendingTo: &bytes)
        }
        flushSoon()
    }

    /// Whether `count` more bytes may be queued; if they would pass the send queue's limit the
    /// connection is closed (false).
    private func admit(_ count: Int) -> Bool {
        guard !closed else { return false }
        if queued + count > options.sendQueueLimit {
            // A peer that does not read is cut off rather than growing our memory.
            outbound.clear()
            finish(.local("slow consumer: over \(options.sendQueueLimit) bytes queued"))
            return false
        }
        return true
    }

    /// Writes what is queued at the end of this loop turn.
    private func flushSoon() {
        // One write per loop turn: frames queued by the same turn leave together.
        if !connecting, !flushScheduled, !watchingWrites {
            flushScheduled = true
            loop.atEndOfTurn { [self] in
                flushScheduled = false
                if !closed { flush() }
            }
        }
    }

    /// Writes what the socket takes; watches for writability while bytes remain.
    private func flush() {
        switch outbound.write(to: fd) {
        case let .success(n):
            if n > 0 { traffic.withLock { $0.sent += n } }
        case let .failure(error):
            closeNow(.system(error))
            return
        }
        wakeRoomWaiters()
        let want = outbound.queued > 0
        if want != watchingWrites {
            watchingWrites = want
            loop.setInterest(fd, readable: !draining, writable: want)
        }
    }

    /// Closes after a best-effort flush of what is queued (a non-blocking write, no waiting).
    private func finish(_ reason: CloseReason) {
        guard !closed else { return }
        if !connecting { flush() }
        closeNow(reason)
    }

    private func closeNow(_ reason: CloseReason) {
        guard !closed else { return }
        closed = true
        machine.markClosed()
        status.withLock { $0 = (false, $0.reason ?? reason) }
        if let t = handshakeTimer { loop.cancel(t) }
        if let t = idleTimer { loop.cancel(t) }
        loop.deregister(fd)
        System.close(fd)
        inbox?.finish()
        inbox = nil
        outbound.clear()
        if let failed = onFailedHandshake {
            onFailedHandshake = nil
            onEstablished = nil
            switch reason {
            case let .system(call, errno): failed(.system(call: call, errno: errno))
            default: failed(.handshake(reason))
            }
        }
        onClose?(reason)
        onClose = nil
        onAuthenticationFailure = nil
        let waiters = closeWaiters
        closeWaiters = []
        for w in waiters { w() }
        wakeRoomWaiters()
    }
}

extension CloseReason {
    /// A socket error as a close reason.
    static func system(_ error: any Error) -> CloseReason {
        if case let .system(call, errno) = error as? TransportError { return .system(call: call, errno: errno) }
        return .local("\(error)")
    }
}
