import ListCRDT

// The document core's outgoing operations (Docs/Protocol.md, "The document core"): a
// subscriber's catch-up, read from the log a step at a time, and the live operations queued
// behind it; the steps of ``DocumentCore/stepBytes`` and the slow-consumer limit.

extension DocumentCore {
    /// What is to be sent to one subscriber, in order: the operations ``held`` (from ``next`` on),
    /// then the ``parts`` behind them: catch-ups still in the log, read a frame's worth at a time,
    /// and live operations queued behind a catch-up. A catch-up costs its cursor, not its
    /// operations: memory follows what is in flight, not the history.
    ///
    /// Positions (``sent``, ``queued``, ``catchUp``) count operations since the outbox was last
    /// empty, as if every part were one queue.
    struct Outbox {
        /// A catch-up still in the log: the operations `version` lacks at log positions
        /// `position..<end` (`left` of them). `end` is the durable count when it began: what
        /// became durable since comes behind it, forwarded.
        struct LogRange {
            let version: VersionVector
            var position: Int
            let end: Int
            var left: Int
        }

        enum Part {
            case log(LogRange)
            case held([ListOperation])
        }

        /// Operations to send, from ``next`` on: live operations queued when no part waits, and
        /// those taken out of the parts for the next frames.
        private(set) var held: [ListOperation] = []
        private(set) var next = 0
        /// What follows ``held``, in order.
        private(set) var parts: [Part] = []
        /// Operations sent, and queued, since the outbox was last empty.
        private(set) var sent = 0, queued = 0
        /// The positions of the latest catch-up (a subscribe's or a hello's): those not sent yet
        /// do not count toward ``maxQueuedOperations``. Only the latest: a hello sent again and
        /// again cannot make the queue grow without bound.
        private(set) var catchUp = 0..<0

        var isEmpty: Bool { sent == queued }

        /// Whether a catch-up still waits in the log.
        var readsLog: Bool { parts.contains { if case .log = $0 { true } else { false } } }

        /// Operations queued and not sent, but the latest catch-up's.
        var queuedBeyondCatchUp: Int {
            queued - sent - max(0, catchUp.upperBound - max(sent, catchUp.lowerBound))
        }

        /// Queues live operations.
        mutating func append(_ ops: [ListOperation]) {
            queued += ops.count
            if parts.isEmpty {
                held += ops
            } else if case .held(var last) = parts.last {
                parts.removeLast()   // so that `last` is the array's only reference, appended in place
                last += ops
                parts.append(.held(last))
            } else {
                parts.append(.held(ops))
            }
        }

        /// Queues a catch-up of `count` operations: the latest.
        mutating func appendCatchUp(_ range: LogRange) {
            catchUp = queued..<queued + range.left
            queued += range.left
            if range.left > 0 { parts.append(.log(range)) }
        }

        /// Queues a catch-up already rebuilt (``Variant/materialisedCatchUp``): the latest.
        mutating func appendCatchUp(_ ops: [ListOperation]) {
            catchUp = queued..<queued + ops.count
            append(ops)
        }

        /// Makes ``held`` hold at least `count` operations from ``next`` on, or every one left,
        /// taking them out of the parts (reading catch-ups from `document`'s log).
        ///
        /// - Complexity: O(k + s + log r) for k operations taken, s log records looked at.
        mutating func fill(_ count: Int, from document: ListDocument) {
            guard held.count - next < count, !parts.isEmpty else { return }
            held.removeSubrange(0..<next)
            next = 0
            while held.count < count, let part = parts.first {
                switch part {
                case let .held(ops):
                    held += ops
                    parts.removeFirst()
                case var .log(range):
                    let before = held.count
                    range.position = document.appendOperations(since: range.version, from: range.position, before: range.end,
                                                               limit: count - held.count, into: &held)
                    range.left -= held.count - before
                    assert(range.left >= 0 && (range.left == 0 || range.position < range.end),
                           "a catch-up of the log did not read its count (\(range.left) left at its end)")
                    if range.left <= 0 || range.position == range.end { parts.removeFirst() } else { parts[0] = .log(range) }
                }
            }
        }

        /// `count` operations of ``held`` were sent.
        mutating func markSent(_ count: Int) {
            next += count
            sent += count
            assert(next <= held.count && sent <= queued)
            if isEmpty { removeAll() }
        }

        mutating func removeAll() { self = Outbox() }
    }

    /// The durable operations `version` lacks, then `synced`; or, when the history no longer goes
    /// back to `version` (``ListDocument/hasHistory(since:)``), or `version` holds operations this
    /// copy parted in a merge back (``holdsParted(_:)``), the document as a snapshot. Not for the
    /// latter to this daemon's own link to a peer (`ownLink`): it relays operations only, never
    /// a snapshot, and the parted operations its version counts are those the peer merged back
    /// too (its `subscribed` says what it held before, ``advertisedVersion``); it gets the
    /// operations, among them those this copy made again, which the peer would otherwise never
    /// get. (A peer's link that subscribes here holding parted operations does get the snapshot:
    /// its daemon merges back onto it, and gets this daemon's stability table first,
    /// ``tableFor(_:)``.)
    ///
    /// - Complexity: O(r) for the log's r records (counting what `version` lacks, nothing rebuilt:
    ///   ``pump(_:)`` reads the operations a step at a time).
    mutating func catchUp(_ subscriber: SubscriberID, from version: VersionVector) -> [Action] {
        guard document.hasHistory(since: version), subscribers[subscriber]!.ownLink || !holdsParted(version) else {
            subscribers[subscriber]!.snapshotDue = true
            return tableFor(subscriber) + sendSnapshotIfQuiet(subscriber)
        }
        if variant == .materialisedCatchUp {
            subscribers[subscriber]!.outbox.appendCatchUp(document.operations(since: version, before: durableCount))
        } else {
            let count = document.countOperations(since: version, before: durableCount)
            subscribers[subscriber]!.outbox.appendCatchUp(.init(version: version, position: 0, end: durableCount, left: count))
        }
        subscribers[subscriber]!.syncedDue = true
        return queued(subscriber)
    }

    /// Rebuilds the operations of every catch-up still in the log, before the log changes under
    /// it (``compact(at:)``, ``recovered(_:)``): what is sent stays what it was.
    ///
    /// - Complexity: O(k) for the k operations rebuilt.
    mutating func materialiseCatchUps() {
        for s in Array(subscribers.keys) where subscribers[s]!.outbox.readsLog {
            subscribers[s]!.outbox.fill(.max, from: document)
        }
    }

    mutating func forward(_ ops: [ListOperation], except sender: SubscriberID?) -> [Action] {
        guard !ops.isEmpty else { return [] }
        var actions: [Action] = []
        // Live fan-out: a subscriber with nothing queued gets the same frames as every other such
        // subscriber, so they are encoded once (when they fit one step) instead of once each.
        var shared: [[UInt8]]?
        var encoded = false
        for s in subscribers.keys.sorted() where s != sender && !subscribers[s]!.snapshotDue {
            if let sub = subscribers[s], !sub.waiting, !sub.syncedDue, sub.outbox.isEmpty,
               ops.count <= maxQueuedOperations {
                if !encoded {
                    shared = framesInOneStep(ops)
                    encoded = true
                }
                if let frames = shared {
                    for frame in frames { actions.append(.send(s, frame)) }
                    operationsSent += ops.count
                    continue
                }
            }
            actions += enqueue(s, ops)
        }
        return actions
    }

    /// The frames ``pump(_:)`` sends for `ops` to a subscriber with nothing queued, when they all go
    /// in one step; nil when they do not (the subscriber then queues them as usual).
    private func framesInOneStep(_ ops: [ListOperation]) -> [[UInt8]]? {
        var frames: [[UInt8]] = []
        var sent = 0, next = 0
        while next < ops.count {
            guard sent < stepBytes else { return nil }
            let (frame, count) = OperationFrames.first(id, ops[next...], maxFrame: maxFrame)
            frames.append(frame)
            sent += frame.count
            next += count
        }
        return frames
    }

    /// Queues live operations for `s` (behind its catch-up, if one is being sent).
    mutating func enqueue(_ s: SubscriberID, _ ops: [ListOperation]) -> [Action] {
        guard subscribers[s] != nil else { return [] }
        subscribers[s]!.outbox.append(ops)
        return queued(s)
    }

    /// Something was queued for `s`: cut it off if it is too far behind, else send what it can take.
    private mutating func queued(_ s: SubscriberID) -> [Action] {
        guard let sub = subscribers[s] else { return [] }
        if sub.outbox.queuedBeyondCatchUp > maxQueuedOperations {
            subscribers[s] = nil
            return [.close(s, reason: "slow consumer: over \(maxQueuedOperations) operations waiting to be sent")]
                + endPresence(of: s)
        }
        return sub.waiting ? [] : pump(s)
    }

    /// Sends queued operations to `s` up to ``stepBytes``; then asks for room, or says `synced`.
    ///
    /// - Complexity: O(k + s) for the k operations sent (a catch-up's rebuilt from the log) and
    ///   the s log records looked at.
    mutating func pump(_ s: SubscriberID) -> [Action] {
        guard var sub = subscribers[s], !sub.waiting else { return [] }
        subscribers[s] = nil   // `sub` is the outbox's only owner while it is read and sent
        var actions: [Action] = []
        var sent = 0
        while !sub.snapshotFrames.isEmpty, sent < stepBytes {
            let frame = sub.snapshotFrames.removeLast()
            actions.append(.send(s, frame))
            sent += frame.count
        }
        if !sub.snapshotFrames.isEmpty {
            sub.waiting = true
            subscribers[s] = sub
            return actions + [.awaitRoom(s)]
        }
        while !sub.outbox.isEmpty, sent < stepBytes {
            // One frame at a time, so that a step stops near its budget; a frame takes at most
            // `maxOperations` operations, so no more are rebuilt from the log for it.
            sub.outbox.fill(OperationFrames.maxOperations, from: document)
            let (frame, count) = OperationFrames.first(id, sub.outbox.held[sub.outbox.next...], maxFrame: maxFrame)
            actions.append(.send(s, frame))
            sent += frame.count
            sub.outbox.markSent(count)
            operationsSent += count
        }
        if sub.outbox.isEmpty {
            if sub.syncedDue {
                sub.syncedDue = false
                actions.append(.send(s, SyncMessage.synced(document: id, version: durableVersion).encoded()))
            }
        } else {
            sub.waiting = true
            actions.append(.awaitRoom(s))
        }
        subscribers[s] = sub
        return actions
    }
}
