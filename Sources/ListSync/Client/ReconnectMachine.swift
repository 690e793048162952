/// How a device client keeps a connection to its daemons, as a pure state machine: which address
/// it dials, when it tries the next one, when it waits and for how long, when it goes back to a
/// daemon that may hold edits another refused, and when it gives up. Events in (dialled, a dial
/// failed, the connection ended and why, a wait is over), actions out (dial address `i`, wait
/// until `t`, give up). No I/O and no clock: time comes in with each event (nanoseconds, any
/// origin), and the backoff's jitter from the generator the driver hands in. `SyncClient`
/// (`ListSyncClient`) runs one over its sockets and each simulated client one over the in-memory
/// network (Docs/Client.md, "Reconnecting"; Docs/Simulation.md, "One policy").
///
/// The rules:
/// - **Order.** The first dial is to address 0; every dial that fails moves to the next address
///   (in list order, wrapping) at once, as long as this round still has addresses it has not
///   tried; once every address of the round failed, the next one waits for the backoff.
/// - **A connection that ends** moves to the next address too, after the backoff.
/// - **Backoff.** The `n`th wait since the last connection is ``Backoff/delay(attempt:using:)``
///   of attempt `n` (doubling, capped, jittered); a connection resets it to the first wait and
///   starts a new round.
/// - **Going back.** ``settle(at:)`` names a daemon that may hold edits the current one refused:
///   the next dial after this connection ends (or after the next failed dial) goes there, after
///   the backoff, whatever the round; a name that is not one of the addresses is ignored.
/// - **Giving up.** A connection that ended because the daemon ended the device's access
///   (revoked, expired) ends the machine: connecting again cannot help. Nothing else does: a
///   refused handshake (a wrong key) is reported by the driver and tried again, in turn, since
///   the daemon's operator may fix it.
public struct ReconnectMachine: Sendable {
    /// Why a dial failed.
    public enum DialFailure: Sendable, Equatable {
        /// Nothing answered, or the connection broke before its handshake completed.
        case unreachable
        /// The daemon refused what the device proved (a wrong key, an unknown credential).
        case refused
    }

    /// Why a connection that was up ended.
    public enum Loss: Sendable, Equatable {
        /// Either side closed it, or it was lost: a reset, a timeout, a retry asked by the daemon
        /// (`limit`, `storage`), a close to go back to another daemon (``settle(at:)``).
        case closed
        /// The daemon ended the device's access (revoked or expired).
        case accessEnded
    }

    /// Why the machine gave up.
    public enum GiveUp: Error, Sendable, Equatable {
        /// The daemon ended the device's access: connecting again cannot help.
        case accessEnded
        /// There is no address to dial.
        case noAddress
    }

    /// What the driver does.
    public enum Action: Sendable, Equatable {
        /// Connect to ``addresses`` `[i]` (the handshake included), then say how it went:
        /// ``connected()`` or ``dialFailed(_:now:using:)``.
        case dial(Int)
        /// Wait until this moment (nanoseconds, the clock of the events), then call
        /// ``timerFired(now:)``; earlier if the app asks to reconnect now.
        case wait(until: UInt64)
        /// Stop connecting.
        case giveUp(GiveUp)
    }

    /// Where it stands.
    public enum State: Sendable, Equatable {
        /// Not started.
        case idle
        /// Dialling address `i`.
        case dialling(Int)
        /// Connected to address `i`.
        case connected(Int)
        /// Waiting until `until`, then dialling address `next`.
        case waiting(until: UInt64, next: Int)
        /// Gave up.
        case gaveUp(GiveUp)
        /// Closed by the driver.
        case closed
    }

    /// The daemons, as the device reaches them (`host:port`; a name per daemon in the simulator),
    /// in the order they are tried.
    public private(set) var addresses: [String]
    /// The waits between rounds.
    public let backoff: Backoff
    /// Where it stands.
    public private(set) var state = State.idle
    /// Waits since the last connection: the backoff's attempt for the next one.
    public private(set) var attempt = 0
    /// Dials of this round that failed (a connection starts a new round).
    public private(set) var failed = 0
    /// The address to dial next, once the current connection ends: it may hold edits the
    /// current daemon refused (``settle(at:)``).
    public private(set) var goBack: Int?
    /// The address of the current dial or connection, or the last one.
    public private(set) var current = 0

    /// A machine for a device that reaches its daemons at `addresses` (tried in that order),
    /// waiting `backoff` between rounds.
    public init(addresses: [String], backoff: Backoff = Backoff()) {
        self.addresses = addresses
        self.backoff = backoff
    }

    /// When the current wait ends; nil while not waiting.
    public var wakeAt: UInt64? {
        if case let .waiting(until, _) = state { return until }
        return nil
    }

    /// Whether it still connects (not given up, not closed).
    public var isRunning: Bool {
        switch state {
        case .gaveUp, .closed: return false
        default: return true
        }
    }

    // MARK: Events

    /// Starts connecting: the first address, at once. Nil (nothing changes) once started.
    public mutating func start() -> Action? {
        guard case .idle = state else { return nil }
        guard !addresses.isEmpty else { return giveUp(.noAddress) }
        current = 0
        state = .dialling(0)
        return .dial(0)
    }

    /// The dial succeeded (its handshake done): the backoff starts over, and so does the round.
    public mutating func connected() {
        guard case let .dialling(i) = state else { return }
        attempt = 0
        failed = 0
        state = .connected(i)
    }

    /// The dial failed: the next address at once while this round has addresses left to try,
    /// else a wait (or the daemon to go back to, after a wait). Nil (nothing changes) when not
    /// dialling.
    public mutating func dialFailed(_ why: DialFailure, now: UInt64, using rng: inout some RandomNumberGenerator) -> Action? {
        guard case .dialling = state else { return nil }
        failed += 1
        return next(now: now, using: &rng)
    }

    /// The connection ended: the next address (or the daemon to go back to) after a wait; or,
    /// when the daemon ended the device's access, the end. Nil (nothing changes) when not
    /// connected.
    public mutating func lost(_ why: Loss, now: UInt64, using rng: inout some RandomNumberGenerator) -> Action? {
        guard case .connected = state else { return nil }
        if why == .accessEnded { return giveUp(.accessEnded) }
        return next(now: now, using: &rng)
    }

    /// The daemon at `address` may hold edits the current one refused: once this connection
    /// ends, go there next (the driver closes the connection). Returns false, changing nothing,
    /// when `address` is not one of ``addresses``.
    @discardableResult
    public mutating func settle(at address: String) -> Bool {
        guard let i = addresses.firstIndex(of: address) else { return false }
        goBack = i
        return true
    }

    /// The wait is over (its moment came, or the app asked to reconnect now: `now` may be before
    /// ``wakeAt``): dial the address it waited for. Nil when not waiting.
    public mutating func timerFired(now: UInt64) -> Action? {
        guard case let .waiting(_, i) = state else { return nil }
        current = i
        state = .dialling(i)
        return .dial(i)
    }

    /// The driver stops (the client closed): no action follows.
    public mutating func close() {
        state = .closed
    }

    /// The device's daemons changed (the operator took one out, or put another in): a wait or a
    /// go-back for an address still among `addresses` keeps it; otherwise the wait dials the first.
    /// A connection or a dial in progress goes on (its index is that of `addresses` from now on,
    /// or 0 if its address is gone).
    public mutating func configure(_ addresses: [String]) {
        let old = self.addresses
        func map(_ i: Int) -> Int? { i < old.count ? addresses.firstIndex(of: old[i]) : nil }
        self.addresses = addresses
        goBack = goBack.flatMap(map)
        current = map(current) ?? 0
        switch state {
        case let .waiting(until, next): state = .waiting(until: until, next: map(next) ?? 0)
        case let .dialling(i): state = .dialling(map(i) ?? 0)
        case let .connected(i): state = .connected(map(i) ?? 0)
        default: break
        }
        if addresses.isEmpty, isRunning { state = .gaveUp(.noAddress) }
    }

    // MARK: Rules

    /// After a failed dial or an ended connection: where next, and whether to wait.
    mutating func next(now: UInt64, using rng: inout some RandomNumberGenerator) -> Action {
        if let back = goBack {
            // A daemon that may hold edits this one refused comes next (after the backoff: while
            // it cannot be reached, the others are tried in turn).
            current = back
        } else {
            current = (current + 1) % addresses.count
            if failed > 0 && failed < addresses.count {
                // The next address at once while some of this round are untried.
                state = .dialling(current)
                return .dial(current)
            }
        }
        goBack = nil
        failed = 0
        let delay = backoff.delay(attempt: attempt, using: &rng)
        attempt += 1
        let until = now &+ UInt64(max(0, delay / .nanoseconds(1)))
        state = .waiting(until: until, next: current)
        return .wait(until: until)
    }

    mutating func giveUp(_ why: GiveUp) -> Action {
        state = .gaveUp(why)
        return .giveUp(why)
    }
}
