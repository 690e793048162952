import ListCRDT
import ListSync

/// A JetStream stream and key-value bucket in the simulator (one document's subject, and its
/// snapshot head and trim lease), with the semantics the cluster relies on: a publish is stored
/// once per message id within the duplicate window (a retry after the window is a second
/// message), a purge keeps the messages from a sequence on, a consumer reads from a sequence and
/// silently starts at the first message still there, and every key-value write is a
/// compare-and-set on the revision read. The server can be killed: the stream and the bucket keep
/// what they acknowledged; what was in flight fails.
public struct SimulatedJetStream: Sendable {
    /// A stored message.
    public struct Message: Sendable {
        /// Its stream sequence.
        public var sequence: UInt64
        /// The `Nats-Msg-Id` it was published with.
        public var messageID: String
        /// Its operations (the payload, already checked).
        public var operations: [ListOperation]
    }

    /// A snapshot in the bucket: its head (the position it covers) and its operations (its chunks).
    public struct Snapshot: Sendable {
        /// What the head says.
        public var head: ClusterMachine.Position
        /// The chunks' operations.
        public var operations: [ListOperation]
        /// Counts the document's snapshots (a loader holding an older head finds its chunks gone).
        public var generation: UInt64
    }

    /// Why a compare-and-set failed.
    public enum WriteError: Error, Sendable, Equatable {
        /// The key's revision was not the one expected: another write came first.
        case wrongLastRevision(expected: UInt64, actual: UInt64)
    }

    /// The messages the stream holds, in sequence order.
    public private(set) var messages: [Message] = []
    /// The last sequence the stream assigned (purges do not lower it).
    public private(set) var lastSequence: UInt64 = 0
    /// Message ids stored within the duplicate window: id → (sequence, when stored).
    private var recentIDs: [String: (sequence: UInt64, at: UInt64)] = [:]
    /// How long a message id is remembered (ns).
    public let duplicateWindow: UInt64
    /// The bucket's revision counter (one per write, as a bucket's stream sequence).
    private var revision: UInt64 = 0
    /// The lease entry: holder ("" released) and revision.
    public private(set) var lease: ClusterLease.Entry?
    /// The snapshot head's revision and the snapshot.
    public private(set) var snapshot: (value: Snapshot, revision: UInt64)?
    /// Whether the server runs.
    public var isUp = true
    /// Messages stored again because their id had left the window (duplicates in the stream).
    public private(set) var duplicatesStored = 0
    /// Messages purged.
    public private(set) var purged = 0

    /// An empty stream and bucket remembering message ids for `duplicateWindow` ns.
    public init(duplicateWindow: UInt64) { self.duplicateWindow = duplicateWindow }

    /// Stores a message (or finds it stored within the window); returns its sequence.
    ///
    /// - Complexity: O(1) amortised, O(ids in the window) when the window is swept.
    public mutating func publish(messageID: String, _ ops: [ListOperation], now: UInt64) -> UInt64 {
        if let r = recentIDs[messageID], now - r.at < duplicateWindow { return r.sequence }
        if recentIDs[messageID] != nil { duplicatesStored += 1 }
        lastSequence += 1
        messages.append(Message(sequence: lastSequence, messageID: messageID, operations: ops))
        recentIDs[messageID] = (lastSequence, now)
        if recentIDs.count > 4_096 { recentIDs = recentIDs.filter { now - $0.value.at < duplicateWindow } }
        return lastSequence
    }

    /// The first message at `sequence` or after, if any (an ordered consumer's next).
    ///
    /// - Complexity: O(log messages).
    public func message(from sequence: UInt64) -> Message? {
        var lo = 0, hi = messages.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if messages[mid].sequence < sequence { lo = mid + 1 } else { hi = mid }
        }
        return lo < messages.count ? messages[lo] : nil
    }

    /// The subject's last message's sequence (0: none left).
    public var lastBySubject: UInt64 { messages.last?.sequence ?? 0 }

    /// Purges the messages below `keepFrom`; returns how many.
    ///
    /// - Complexity: O(messages).
    public mutating func purge(keepFrom: UInt64) -> Int {
        let before = messages.count
        messages.removeAll { $0.sequence < keepFrom }
        purged += before - messages.count
        return before - messages.count
    }

    /// Writes the lease entry if its revision is `expected` (0: no entry); returns the new revision.
    public mutating func setLease(holder: String, expected: UInt64) throws(WriteError) -> UInt64 {
        let actual = lease?.revision ?? 0
        guard actual == expected else { throw .wrongLastRevision(expected: expected, actual: actual) }
        revision += 1
        lease = ClusterLease.Entry(holder: holder, revision: revision)
        return revision
    }

    /// Writes the snapshot head if its revision is `expected` (0: no head); returns the new revision.
    public mutating func setSnapshot(_ s: Snapshot, expected: UInt64) throws(WriteError) -> UInt64 {
        let actual = snapshot?.revision ?? 0
        guard actual == expected else { throw .wrongLastRevision(expected: expected, actual: actual) }
        revision += 1
        snapshot = (s, revision)
        return revision
    }
}
