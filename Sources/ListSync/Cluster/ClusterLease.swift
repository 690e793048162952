/// One node's side of a document's trim lease (Docs/Cluster.md, "Snapshots and trimming"): a
/// key-value entry that names the node allowed to snapshot the document and trim its subject.
/// Pure: the node reads the entry, asks ``decide(entry:now:)`` what to do, does it with a
/// compare-and-set on the entry's revision, and reports the result. No I/O, no clock of its own.
///
/// The lease lapses without any clock shared between nodes. The holder renews it (a new revision)
/// every third of ``duration``. Another node takes it only once it has seen the same revision
/// for a whole ``duration`` on its own monotonic clock, counted from when it first read that
/// revision (after it was written). The holder counts its lease from when it *sent* the write
/// that made its revision, and trusts it for three quarters of ``duration`` only (``isHeld(now:)``).
/// So the holder stops trusting its lease before anyone else may take it, whatever the delays,
/// as long as the nodes' clocks run at about the same rate. Every take and renewal is a
/// compare-and-set on the revision read, so two nodes never both win the same revision.
public struct ClusterLease: Sendable {
    /// What the entry holds: the holder's node name (empty: released).
    public struct Entry: Sendable, Equatable {
        /// The holder's node name (empty: released).
        public var holder: String
        /// The entry's revision in the bucket.
        public var revision: UInt64

        /// An entry naming `holder` at `revision`.
        public init(holder: String, revision: UInt64) {
            self.holder = holder
            self.revision = revision
        }
    }

    /// What the node should do now.
    public enum Decision: Sendable, Equatable {
        /// Write the entry with this node's name, expecting `revision` (0: no entry yet).
        case take(revision: UInt64)
        /// Write the entry again (a new revision), expecting `revision`: the node holds it.
        case renew(revision: UInt64)
        /// The node holds it and needs no write yet.
        case keep
        /// Another node holds it: wait.
        case wait
    }

    /// This node's name in the entry.
    public let node: String
    /// How long a revision must stay unchanged before another node may take the lease (ns).
    public let duration: UInt64
    /// The revision this node holds and when it sent the write that made it (ns).
    public private(set) var held: (revision: UInt64, sentAt: UInt64)?
    /// Another node's revision and when this node first read it (ns).
    private var observed: (revision: UInt64, firstSeen: UInt64)?

    /// The lease of `node`, lapsing after `duration` nanoseconds without a renewal.
    public init(node: String, duration: UInt64) {
        precondition(!node.isEmpty && duration > 0, "a lease needs a node name and a duration")
        self.node = node
        self.duration = duration
    }

    /// What to do given the entry as read now (`nil`: no entry).
    public mutating func decide(entry: Entry?, now: UInt64) -> Decision {
        guard let entry else {
            held = nil
            return .take(revision: 0)
        }
        if let h = held, h.revision == entry.revision, entry.holder == node {
            return Self.elapsed(since: h.sentAt, now) >= duration / 3 ? .renew(revision: entry.revision) : .keep
        }
        held = nil
        // Released, or this node's own name from before it restarted (one daemon per data
        // folder, so that holder is dead): free now.
        if entry.holder.isEmpty || entry.holder == node { return .take(revision: entry.revision) }
        if let o = observed, o.revision == entry.revision {
            return Self.elapsed(since: o.firstSeen, now) >= duration ? .take(revision: entry.revision) : .wait
        }
        observed = (entry.revision, now)
        return .wait
    }

    /// A take or renewal sent at `sentAt` was stored as `revision`.
    public mutating func won(revision: UInt64, sentAt: UInt64) {
        precondition(revision > 0, "a stored entry has a revision")
        held = (revision, sentAt)
        observed = nil
    }

    /// A take or renewal failed (another write came first, or no answer): not held.
    public mutating func lost() { held = nil }

    /// Whether this node may act as the holder at `now`: it holds a revision written less than
    /// three quarters of ``duration`` ago.
    public func isHeld(now: UInt64) -> Bool {
        guard let h = held else { return false }
        return Self.elapsed(since: h.sentAt, now) < duration / 4 * 3
    }

    /// The time from `start` to `now`, 0 if `now` was read before `start` (a caller that read
    /// the clock, then awaited while another task stamped a later time).
    public static func elapsed(since start: UInt64, _ now: UInt64) -> UInt64 { now > start ? now - start : 0 }
}
