import ListCRDT

// The document core's stability and compaction (Docs/Semantics.md §7; Docs/Protocol.md,
// "Compaction"): `seen` reports, the senders, the compaction point, compacting, the snapshot
// catch-up of a subscriber behind the floor, and the floor told to devices that compact their
// copies (without it a device's copy would keep the whole history however often its daemon
// compacts).

extension DocumentCore {

    /// `subscriber` says replica `replica` has seen every operation of `version`, at `now`
    /// (seconds of the wall clock, for the retire period). Not attached: nothing.
    ///
    /// - Returns: whether ``stability`` changed in a way to write down at once (a new sender, a
    ///   sender that keeps no copy, a relay); acknowledgements alone may wait for the next write.
    /// - Complexity: O(r log r) for r replicas in the version.
    public mutating func seen(_ subscriber: SubscriberID, replica: ReplicaID, version: VersionVector, role: SeenRole,
                              now: UInt64) -> Bool {
        guard var sub = subscribers[subscriber], destroyedReason == nil else { return false }
        stabilityClock = now
        var v = sub.seen ?? VersionVector()
        v.formUnion(version)
        sub.seen = v
        sub.replica = replica
        sub.role = role
        subscribers[subscriber] = sub
        switch role {
        case .live, .liveCopy: return stability.heardFromLive(replica)
        case .device, .compactingDevice:
            return stability.heardFromDevice(replica, version: version, caughtUp: document.hasHistory(since: version), now: now)
        case .relay:
            let changed = stability.heardFromRelay(replica, me: document.replica, now: now)
            if changed { gossipDirty = true }
            return changed
        }
    }

    /// Brings ``stability`` up to `now` (seconds): every author of the document not known yet
    /// becomes a sender (the daemon's own replica aside), attached devices are heard of, and
    /// senders silent for `retireAfter` seconds are retired. A lost stability file with no peer's
    /// table in that time is taken for one without peers, unless `keepsLoss` (the daemon has
    /// peers: ``CompactionRule/peered``).
    ///
    /// - Returns: whether ``stability`` changed, and the replicas retired now.
    /// - Complexity: O(s log s + r) for s senders and r replicas in the document's version.
    public mutating func refreshStability(now: UInt64, retireAfter: UInt64, keepsLoss: Bool = false) -> (changed: Bool, retired: [ReplicaID]) {
        stabilityClock = now
        var counters = document.version.counters
        counters[document.replica] = nil
        let authors = VersionVector(counters)
        var changed = stability.noteAuthors(of: authors, now: now)
        for sub in subscribers.values where sub.role?.isDevice == true {
            if let r = sub.replica { stability.attached(r, now: now) }
        }
        // With peers too: the daemons then compact only once every peer acknowledged the
        // retirement (Docs/Semantics.md §7, "Retiring with peers"; PeerStability.allows).
        let retired = stability.retireSilent(now: now, after: retireAfter)
        changed = changed || !retired.isEmpty
        // A lost stability file with no peer's table in the retire period: no peer, unless the
        // daemon has some; those are not retired by silence (Docs/Semantics.md §7, "A lost
        // stability file").
        if !keepsLoss || variant == .endsPeeredLossBySilence {
            changed = stability.lostCleared(now: now, after: retireAfter) || changed
        } else if let since = stability.lostSince, now >= since, now - since >= retireAfter {
            lossKeptForPeers = true
        }
        return (changed, retired)
    }

    /// Whether the document is settled enough for ``compactionPoint(_:)`` to answer, and worth
    /// compacting: nothing in flight or waiting for its causes, `trigger` met (operations logged
    /// since the last compaction, or reclaimable bytes: ``reclaimableSinceCompaction``), every
    /// subscriber but the peer links has said it has seen exactly the document's version, and
    /// none has anything queued. The driver asks this before refreshing the senders
    /// (``refreshStability(now:retireAfter:)``), which a busy document need not pay for after
    /// every batch.
    ///
    /// - Complexity: O(n) for n subscribers.
    public func isSettled(_ trigger: CompactionTrigger) -> Bool {
        trigger.isDue(operations: document.operationCount, reclaimable: reclaimableSinceCompaction,
                      documentBytes: document.documentBytes) && isSettledWhateverTheTrigger
    }

    /// Nothing in flight or waiting for its causes, all of it durable, every subscriber settled
    /// (``isSettled(_:)`` without its trigger).
    ///
    /// - Complexity: O(n) for n subscribers.
    private var isSettledWhateverTheTrigger: Bool {
        guard failure == nil, destroyedReason == nil, inFlight.isEmpty, document.pendingCount == 0,
              document.version == durableVersion else { return false }
        return subscribers.values.allSatisfy { isSettled($0) }
    }

    /// Settled as ``isSettled(_:)`` says, on a copy that holds no operation past its floor (a
    /// compacted copy, or a peer's snapshot taken whole), where no trigger is ever due: what its
    /// daemon may publish to its peers (``localQuiescentVersion``). False with
    /// ``Variant/publishesOnlyAfterAnOperation``.
    ///
    /// - Complexity: O(n) for n subscribers.
    var isSettledAtFloor: Bool {
        variant != .publishesOnlyAfterAnOperation && document.operationCount == 0 && document.historyFloor != nil
            && isSettledWhateverTheTrigger
    }

    /// ``isSettled(_:)`` with the operations trigger alone: at least `minOperations` logged.
    ///
    /// - Complexity: O(n) for n subscribers.
    public func isSettled(minOperations: Int) -> Bool { isSettled(.operations(minOperations)) }

    /// The bytes a compaction would free now, less what the last compaction here could not free
    /// (the hidden text characters it keeps as anchors): what the bytes trigger looks at.
    ///
    /// - Complexity: O(1).
    public var reclaimableSinceCompaction: Int { max(0, document.reclaimableBytes - reclaimableKept) }

    /// Whether `sub` is settled: a peer link, or it said it has seen exactly the durable version;
    /// nothing queued for it, no snapshot due.
    func isSettled(_ sub: Subscriber) -> Bool {
        (sub.role == .relay || sub.seen == durableVersion) && sub.outbox.isEmpty && !sub.snapshotDue
    }

    /// The version at which the document may be compacted now (``compact(at:)``), or nil: a
    /// quiescent point (``quiescentPoint(_:)``), or else a stable prefix
    /// (``stablePrefixPoint(_:)``, not peered). A quiescent point must be worth compacting
    /// (`trigger`), quiescent and stable (Docs/Semantics.md §7): nothing in
    /// flight or waiting for its causes, every subscriber but the peer links has said it has seen
    /// exactly the document's version, none has anything queued, every sender that is not
    /// retired has reported exactly that version too, and, with peers, every peer daemon has too
    /// (``peersAllow(_:)``).
    ///
    /// - Complexity: O(n + s × r log r) for n subscribers, s senders and r replicas at a
    ///   quiescent point; looking for a prefix adds that of ``stablePrefixPoint(_:)``.
    public func compactionPoint(_ trigger: CompactionTrigger) -> VersionVector? {
        quiescentPoint(trigger) ?? stablePrefixPoint(trigger)
    }

    /// The quiescent point of ``compactionPoint(_:)``: the document's version, when it is
    /// settled (``isSettled(_:)``), every sender has reported exactly it, and the peers allow it.
    ///
    /// - Complexity: O(n + s × r log r) for n subscribers, s senders and r replicas.
    public func quiescentPoint(_ trigger: CompactionTrigger) -> VersionVector? {
        guard isSettled(trigger), let version = localQuiescentVersion else { return nil }
        guard !isPeered || peersAllow(version) else { return nil }
        return version
    }

    /// Whether the document may be compacted at a stable prefix now, if its senders allow one
    /// (``stablePrefixPoint(_:)``): not peered, nothing in flight or waiting for its causes, all
    /// of it durable, and at least the trigger's operations logged since the floor (the prefix
    /// must hold that many: ``prefixPoint(within:_:)``). Subscribers need not have seen all of it.
    ///
    /// - Complexity: O(n) for n subscribers.
    public func isReadyForPrefix(_ trigger: CompactionTrigger) -> Bool {
        guard variant != .compactsOnlyWhenQuiescent, failure == nil, destroyedReason == nil, inFlight.isEmpty,
              document.pendingCount == 0, document.version == durableVersion, !isPeered,
              document.operationCount >= trigger.minOperations else { return false }
        return true
    }

    /// The stable prefix within `stable` (``ListDocument/compactablePrefix(within:)``), if it
    /// holds at least the trigger's ``CompactionTrigger/minOperations`` operations logged since
    /// the floor. Only the operations trigger takes a prefix: what the bytes trigger counts may
    /// lie after it, and a compaction before a large delete would leave its bytes under the
    /// trigger's floor for good (they wait for a quiescent point instead).
    ///
    /// - Complexity: that of ``ListDocument/compactablePrefix(within:)``, and O(r) for the r
    ///   records of the log.
    func prefixPoint(within stable: VersionVector, _ trigger: CompactionTrigger) -> VersionVector? {
        guard let prefix = prefix(within: stable) else { return nil }
        let count = document.operationCount
        let inPrefix = count - document.countOperations(since: prefix, before: count)
        return inPrefix >= trigger.minOperations ? prefix : nil
    }

    /// Whether a compaction at a prefix keeps the concurrent operations outside it
    /// (``ListDocument/compact(stable:keepingConcurrent:)``, Docs/Semantics.md §7, "Compacting
    /// under a chain of concurrent edits"): a daemon without peers (none linked, and the rule
    /// never said it has some: ``CompactionRule/peered``), whose stable version every
    /// operation to come is after (each sender acknowledged it after sending every operation it
    /// had made); and a peered one, at a version every daemon vouched for, once its copy holds
    /// what each held when it vouched (``PeerStability/Entry/held``; "Peers compacting under a
    /// chain of concurrent edits"). A daemon whose rule says it has peers, none linked yet,
    /// compacts only at stable prefixes: a peer's operation not after the floor may still come.
    /// (``Variant/peerPrefixIgnoresHeldOperations`` and ``Variant/keepsPrefixCheckOnVouchers``
    /// break the stable prefixes' rule, so they keep to it.)
    public var keepsConcurrent: Bool {
        ![.compactsOnlyAtStablePrefixes, .peerPrefixIgnoresHeldOperations, .keepsPrefixCheckOnVouchers].contains(variant)
            && (isPeered || !ruledPeered)
    }

    /// The version within `stable` at which this copy may be compacted as far as the operations
    /// it holds go: ``ListDocument/concurrentPrefix(within:)`` where it keeps concurrent
    /// operations (``keepsConcurrent``), else ``ListDocument/compactablePrefix(within:)``.
    ///
    /// - Complexity: that of the one it calls.
    func prefix(within stable: VersionVector) -> VersionVector? {
        keepsConcurrent ? document.concurrentPrefix(within: stable) : document.compactablePrefix(within: stable)
    }

    /// The version the senders allow compacting at while the document keeps moving
    /// (Docs/Semantics.md §7, "A stable prefix"), before the engine's check: the stable version
    /// of the senders the daemon counts (``StabilityTracker/stableVersion(holding:)``: nil while
    /// it lacks an operation a sender had made when it acknowledged), met with what every
    /// subscriber but the peer links has said it has seen (one that said nothing holds it back;
    /// one whose own operations the daemon does not hold yet too). Nil when there is none.
    ///
    /// - Complexity: O(n × r + s × r log r) for n subscribers, s senders and r replicas.
    public var sendersStableVersion: VersionVector? {
        let version = document.version
        var stable: VersionVector
        if stability.tracker.acknowledged.isEmpty {
            stable = version
        } else {
            guard let s = stability.tracker.stableVersion(holding: version) else { return nil }
            stable = s
        }
        for sub in subscribers.values where sub.role != .relay {
            guard let seen = sub.seen else { return nil }
            if let r = sub.replica, version[r] < seen[r] { return nil }
            stable = stable.meet(seen)
        }
        return stable
    }

    /// The stable prefix at which the document may be compacted now, though it is not
    /// quiescent (``ListDocument/compactablePrefix(within:)`` of ``sendersStableVersion``), or
    /// nil: not ready (``isReadyForPrefix(_:)``), or no prefix past the floor holding the
    /// trigger's operations is stable yet. Never
    /// with peers (their rule needs every daemon quiescent at one version).
    ///
    /// - Complexity: O(n × r + s × r log r) for the senders, then O(m × r) per shrink for m
    ///   operations logged since the floor (``ListDocument/compactablePrefix(within:)``).
    public func stablePrefixPoint(_ trigger: CompactionTrigger) -> VersionVector? {
        guard isReadyForPrefix(trigger), let stable = sendersStableVersion else { return nil }
        if let floor = document.historyFloor, floor.includes(stable) { return nil }
        return prefixPoint(within: stable, trigger)
    }

    /// ``compactionPoint(_:)`` with the operations trigger alone: at least `minOperations`
    /// operations logged since the last compaction.
    ///
    /// - Complexity: that of ``compactionPoint(_:)``.
    public func compactionPoint(minOperations: Int) -> VersionVector? { compactionPoint(.operations(minOperations)) }

    /// Compacts the document at `stable` (from ``compactionPoint(_:)``): its history
    /// before `stable` and what is dead are collected (``ListDocument/compact(stable:)``). The
    /// driver then writes a snapshot and trims the log; from now on a catch-up behind `stable` is
    /// a snapshot and operations made before it are refused with ``SyncErrorCode/compacted``.
    ///
    /// `stable` is the document's version (quiescent) or a stable prefix of it
    /// (``stablePrefixPoint(_:)``): the operations after it stay, in the log, durable.
    ///
    /// - Throws: ``CompactionError`` if the document may not be compacted at `stable`; nothing changes.
    /// - Complexity: that of ``ListDocument/compact(stable:)``.
    @discardableResult
    public mutating func compact(at stable: VersionVector) throws(CompactionError) -> CompactionReport {
        precondition(inFlight.isEmpty && failure == nil, "compaction with batches in flight")
        // Through compactionPoint nothing is queued (isSettled); called otherwise, a catch-up
        // still in the log is rebuilt first, from the history the compaction drops (and the
        // positions it renumbers): what is sent stays what it was.
        materialiseCatchUps()
        let report = try document.compact(stable: stable, keepingConcurrent: keepsConcurrent)
        durableCount = document.operationCount
        // Nothing within the floor is parted again; what the log keeps after it (a stable
        // prefix) stays marked.
        relayedOperations.remove(within: stable)
        // The log's positions are renumbered: what ``holdsPartedOriginals()`` found clean is
        // looked at again (a copy with a floor is asked too).
        partedHeldChecked = nil
        compactions += 1
        lastCompaction = report
        // What the compaction at the floor kept (anchors), not what the operations after a
        // prefix would free: those count for the next compaction.
        reclaimableKept = report.reclaimableAtFloor
        assert(durableVersion == document.version && document.historyFloor == stable)
        // Operations kept after a prefix are durable (they were before), and go in the
        // compacted snapshot the driver writes: the floor's state, then the operations since.
        return report
    }

    /// Sends `subscriber` the document as a snapshot (in parts under the frame size), then
    /// `synced`, if nothing is in flight (the snapshot then holds only durable operations);
    /// otherwise it waits for ``release()``.
    ///
    /// - Complexity: O(size) of the snapshot.
    mutating func sendSnapshotIfQuiet(_ subscriber: SubscriberID) -> [Action] {
        guard var sub = subscribers[subscriber], sub.snapshotDue, inFlight.isEmpty, failure == nil else { return [] }
        sub.snapshotDue = false
        if sub.offersFloor { return offerFloorAsCatchUp(subscriber) }
        sub.snapshotFrames = snapshotFrames()
        sub.outbox.removeAll()
        sub.syncedDue = true
        subscribers[subscriber] = sub
        return sub.waiting ? [] : pump(subscriber)
    }

    /// The document's snapshot as `snapshot` frames under the frame size, last part first (sent
    /// from the end: popLast is O(1)). Made once per state of the document: subscribers that
    /// catch up from it meanwhile share the same parts (the arrays' storage), not a copy each.
    ///
    /// - Complexity: O(size) of the snapshot the first time, O(parts) after.
    mutating func snapshotFrames() -> [[UInt8]] {
        let key = SnapshotKey(version: document.version, pending: document.pendingCount, floor: document.historyFloor)
        if let cached = snapshotCache, cached.key == key { return cached.frames }
        let frames = Array(snapshotParts(SyncMessage.snapshot).reversed())
        snapshotCache = (key, frames)
        return frames
    }

    /// The document's snapshot in parts under the frame size, in order, each made a frame by
    /// `message` (`snapshot` for a catch-up, `floorSnapshot` for an offer).
    ///
    /// - Complexity: O(size) of the snapshot.
    func snapshotParts(_ message: (DocumentID, [UInt8], Bool) -> SyncMessage) -> [[UInt8]] {
        let bytes = document.encodedSnapshot()
        let part = maxFrame - 32
        var frames: [[UInt8]] = []
        var at = 0
        repeat {
            let end = min(at + part, bytes.count)
            frames.append(message(id, Array(bytes[at..<end]), end < bytes.count).encoded())
            at = end
        } while at < bytes.count
        assert(frames.allSatisfy { $0.count <= maxFrame })
        return frames
    }

    /// The `stable` messages to send after the document was compacted (``compact(at:)``): its
    /// floor, to every subscriber that said `seen` with ``SeenRole/compactingDevice`` or
    /// ``SeenRole/liveCopy`` and has seen exactly it (every subscriber had, or the document would not have compacted; one that
    /// has seen more since keeps the floor for the next compaction). None if never compacted.
    ///
    /// - Complexity: O(n + r) for n subscribers and r replicas in the floor.
    public func floorAnnouncements() -> [Action] {
        guard let floor = document.historyFloor, destroyedReason == nil else { return [] }
        let frame = SyncMessage.stable(document: id, version: floor).encoded()
        return subscribers.filter { $0.value.role?.hearsFloors == true && $0.value.seen == floor }
            .keys.sorted().map { .send($0, frame) }
    }

    /// The answer to a `seen` of `subscriber` as a ``SeenRole/liveCopy``: `stable` with the
    /// document's floor, or the empty version when it was never compacted (a copy kept between
    /// runs learns a compaction made while it was away). Nothing for any other role.
    ///
    /// - Complexity: O(r) for r replicas in the floor.
    public func floorAnswer(to subscriber: SubscriberID) -> [Action] {
        guard subscribers[subscriber]?.role == .liveCopy, destroyedReason == nil else { return [] }
        return [.send(subscriber, SyncMessage.stable(document: id, version: document.historyFloor ?? VersionVector()).encoded())]
    }
}
