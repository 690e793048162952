/// Which daemons may hold operations of a device's own that none has answered for yet, and what
/// a refusal of them means (Docs/Semantics.md §7, "Roaming"). No I/O: a device keeps one per
/// document, durably (``SyncClient``'s record), and the simulator's clients keep one each.
///
/// A daemon's refusal (`compacted`) is its own judgement: on a peered document each daemon checks
/// an edit of a replica no daemon counts against the version *it* published, and those differ
/// while the gossip runs. A device that sent an edit to daemon `W`, lost the connection before the
/// answer, and sends it again to `X` may be refused by `X` while `W` took it. Made again under a
/// new id, the edit would then exist twice. So a refusal is final only once every daemon the
/// operations were sent to without an answer has refused them: until then the device goes back
/// to one of the others (``Verdict/settle(at:)``), which either holds them (and acknowledges them:
/// `X` receives them relayed) or refuses them too.
///
/// `Daemon` names a daemon as the device reaches it (an address; an index in the simulator).
public struct UnansweredSends<Daemon: Hashable & Comparable & Sendable>: Sendable, Equatable {
    /// The daemons sent operations of this device's own that have not answered for all of them.
    public private(set) var daemons: Set<Daemon>

    /// What a refusal asks of the device.
    public enum Verdict: Equatable, Sendable {
        /// Every daemon that may hold the refused operations refused them: none holds them, and
        /// none will take them. Re-sync and make them again.
        case remake
        /// This daemon may hold them: connect there and send them again before deciding.
        case settle(at: Daemon)
    }

    /// Starts from what a record kept (nothing for a new document).
    public init(_ daemons: Set<Daemon> = []) {
        self.daemons = daemons
    }

    /// Whether sending to `daemon` adds it (the caller then makes that durable before sending:
    /// forgotten, a later refusal elsewhere would be taken as final).
    public func adds(_ daemon: Daemon) -> Bool { !daemons.contains(daemon) }

    /// Operations of its own are being sent to `daemon`.
    public mutating func sent(to daemon: Daemon) {
        daemons.insert(daemon)
    }

    /// Every operation of its own is acknowledged (by one daemon or another): nothing waits for
    /// an answer.
    public mutating func allAcknowledged() {
        daemons.removeAll()
    }

    /// `daemon` refused operations of its own for the compaction floor (`compacted`). The
    /// refused operations and those that depend on them are final at `daemon`: it never takes
    /// them later from this device (its published version only grows, and it remembers what it
    /// refused), nor relayed, unless another daemon took them. A daemon `askable` says cannot be
    /// asked (no longer among the device's daemons: its operator took it out, gone for good) is
    /// given up on the way, with what it may hold (Docs/Client.md, "Roaming between daemons").
    ///
    /// - Complexity: O(d) for the d daemons waiting.
    public mutating func refused(by daemon: Daemon, askable: (Daemon) -> Bool = { _ in true }) -> Verdict {
        daemons.remove(daemon)
        while let other = daemons.min() {
            if askable(other) { return .settle(at: other) }
            daemons.remove(other)
        }
        return .remake
    }
}
