import ListCRDT

/// Who a ``DocumentCore`` talks to: one connection (a client's or a peer's) of the daemon.
public struct SubscriberID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The connection's number, unique within the daemon.
    public var raw: Int
    /// The subscriber with number `raw`.
    public init(_ raw: Int) { self.raw = raw }
    public static func < (a: Self, b: Self) -> Bool { a.raw < b.raw }
    public var description: String { "subscriber \(raw)" }
}

/// One document on the daemon as a state machine with no I/O: batches in, durable appends and
/// messages out (Docs/Protocol.md, "The document core").
///
/// A batch goes through four steps, in this order and no other:
/// 1. **validated and applied in memory** (``receive(_:batch:from:)``): the engine refuses what is
///    malformed, an equivocation or over its causal buffer's limits, and changes nothing for those;
///    only what it accepted (applied, or kept waiting for its causes) is to be logged;
/// 2. **appended**: the core asks its driver to make the accepted operations durable
///    (``Action/append(ticket:operations:)``); nothing of the batch is visible to anyone yet: not in
///    ``durableVersion``, not in a catch-up, not forwarded;
/// 3. **durable** (``durable(ticket:)``): batches are released in the order they were received,
///    once every batch before them is durable too;
/// 4. **forwarded and acknowledged**: the operations a released batch applied go to every other
///    subscriber (and those it woke from the causal buffer, which others sent, to its sender too),
///    and its sender gets exactly one answer, an `ack` or an `error`.
///
/// A failed append (``appendFailed(ticket:reason:)``) fails every batch in flight with a storage
/// error and stops the core until its driver reloads it from disk (``recovered(_:)``): what the
/// disk holds is the truth.
///
/// Subscribers get their catch-up in steps of at most ``stepBytes`` bytes; after each step the core
/// asks its driver to say when the subscriber's connection has room again
/// (``Action/awaitRoom(_:)`` then ``roomAvailable(_:)``), so a large document streams to a slow
/// link without filling the send queue. The catch-up is read from the document's log a frame's
/// worth at a time (DocumentCore+CatchUp.swift): the core holds a cursor per catch-up, not its
/// operations.
public struct DocumentCore: Sendable {
    /// What the core asks its driver to do, in order.
    public enum Action: Equatable, Sendable {
        /// Make `operations` durable (in the document's log), then call ``durable(ticket:)`` or
        /// ``appendFailed(ticket:reason:)`` with `ticket`. Appends must reach the log in ticket order.
        /// `relayed`: they came through a peer link; the log says so beside them (``relayedRuns``),
        /// and the driver gives that back after a restart (``noteRelayed(_:)``).
        case append(ticket: UInt64, operations: [ListOperation], relayed: Bool)
        /// Send this frame (an encoded ``SyncMessage``) to the subscriber.
        case send(SubscriberID, [UInt8])
        /// Call ``roomAvailable(_:)`` once the subscriber's connection can take more.
        case awaitRoom(SubscriberID)
        /// Close the subscriber's connection: it fell too far behind.
        case close(SubscriberID, reason: String)
    }

    /// What the core does differently, for measuring the simulator's power (tests only).
    @_spi(Testing) public enum Variant: Sendable {
        /// As documented.
        case correct
        /// Acknowledges and forwards a batch as soon as it is appended, before it is durable
        /// (breaks Promise 1: a crash loses acknowledged operations).
        case acknowledgeBeforeDurable
        /// Rebuilds a catch-up whole when it begins and queues it, as the core did before it read
        /// catch-ups from the log a step at a time: the frames are the same (the reference the
        /// streamed catch-up is checked against), the memory is the history's.
        case materialisedCatchUp
        /// Compacts a peered document without waiting for every peer to acknowledge a retirement
        /// (Docs/Semantics.md §7, "Retiring with peers"): a retired replica's edit that a peer
        /// took meanwhile is refused where the floor was compacted (the copies split).
        case retiresWithoutAgreement
        /// Does not merge back a copy a peer compacted past (Docs/Semantics.md §7, "A copy left
        /// out of a peer's floor"): ``mergeBack(_:)`` gives nil, and the copy is not synced with
        /// that peer, as before the repair (what only it acknowledged stays on it).
        case partsCopies
        /// Refuses a batch in part without saying what it took (``TakenInPart``), as a daemon of
        /// an older build does: a device takes the whole batch as refused.
        case refusesWithoutTaken
        /// Answers a subscriber whose version counts operations another daemon parted in a merge
        /// back (``PeerStability/Entry/parted``) with operations, as before the repair: a device
        /// that took an original at the daemon that merged back and roams here keeps it beside
        /// the edit made again (Docs/Semantics.md §7, "What a parted original's holder is sent").
        case sendsPartedOperations
        /// Keeps waiting for ever the operations it holds waiting on ones another daemon parted
        /// in a merge back, as before the repair (``waitsOnParted`` false): acknowledged, they
        /// are on no other copy (Docs/Semantics.md §7, "Waiting edits on parted originals").
        case keepsPartedWaiting
        /// Compacts only at a quiescent point, as before compaction at a stable prefix
        /// (Docs/Semantics.md §7, "A stable prefix"): a document its devices keep editing never
        /// compacts.
        case compactsOnlyWhenQuiescent
        /// Compacts a document that is not quiescent only at a stable prefix (every operation held
        /// outside it after it), as before compaction keeping concurrent operations
        /// (Docs/Semantics.md §7, "Compacting under a chain of concurrent edits"): devices that each
        /// edit before taking the others' last edits leave it nothing to compact at.
        case compactsOnlyAtStablePrefixes
        /// Peered: compacts at a version every daemon vouched for without holding what their copies
        /// held when they vouched (``ListSync/PeerStability/Entry/held``): an operation another
        /// daemon's client made before it saw the version comes over a link after the compaction
        /// and is refused (Docs/Semantics.md §7, "Peers compacting under a chain of concurrent edits").
        case ignoresPeersHeld
        /// Tells no device what the daemons parted in merges back (no `parted` message), and
        /// answers a subscriber that holds parted originals with operations where this copy has
        /// no floor, as before the repair: a device re-syncing here waits for ever for its own
        /// acknowledged originals, and one caught up here keeps them beside the edits made again
        /// (Docs/Semantics.md §7, "A device learns what was parted").
        case hidesPartedFromDevices
        /// Compacts a peered document at the stable prefix its own entry names (one it proposed or
        /// took) without waiting for every daemon's entry to name it too (Docs/Semantics.md §7,
        /// "Peers while busy"): an operation another daemon holds that is not after that prefix
        /// is refused here when it is relayed (the copies part).
        case peerPrefixWithoutAgreement
        /// Takes the leader's proposed prefix as its own version without checking that every
        /// operation it holds outside it is causally after it (Docs/Semantics.md §7, "Peers while
        /// busy"): a daemon that compacts there refuses such an operation when it is relayed.
        case peerPrefixIgnoresHeldOperations
        /// Takes a document whose stability file was lost for one without peers: compacts it
        /// as soon as its own senders allow, while a peer it forgot may hold operations made
        /// before that floor (the copies part; Docs/Semantics.md §7, "A lost stability file").
        case compactsWithStabilityLost
        /// Ends a lost stability file after the retire period with no peer's table even on a
        /// daemon with peers (``CompactionRule/peered``), as before that rule: it then compacts
        /// alone at a floor its peers' clients' edits are not after, while they compact without
        /// its own clients' (Docs/Semantics.md §7, "A lost stability file").
        case endsPeeredLossBySilence
        /// Never takes back a daemon forgotten while it still ran, as before the rule
        /// (``PeerStability/merge(_:me:floor:now:takesBack:)`` with `takesBack` false,
        /// Docs/Semantics.md §7, "A daemon forgotten while it runs"): once its links come back,
        /// the relay authors only it claims and its own retirements hold compaction back on every
        /// daemon for ever.
        case keepsForgottenForGood
        /// Checks a client's operations against the version it published even when its copy's
        /// floor includes that version (``currentMark()``), as before the rule: after taking a
        /// peer's snapshot whole, an operation made on it whose dependencies lie in the floor is
        /// refused as not after the version (no causal query answers below the floor), and its
        /// author, re-syncing, is refused again for ever.
        case checksPublishedBelowFloor
        /// Publishes its version to its peers only once an operation was logged past its floor, as
        /// before the rule (``isSettledAtFloor``): a daemon that took a peer's snapshot whole keeps
        /// an entry below that floor while no edit comes, and, forgotten, is never taken back.
        case publishesOnlyAfterAnOperation
        /// Keeps, on a copy that never compacted, the originals a daemon parted in a merge back
        /// when it holds them (relayed just before that merge back), as before the repair
        /// (``holdsPartedOriginals()`` false): what it relays of them or on them, every copy
        /// compacted at that floor refuses (Docs/Semantics.md §7, "Parted originals a copy holds").
        case keepsHeldParted
        /// Keeps, on a compacted copy, the originals a daemon parted in a merge back that it
        /// logged since its floor, as before that repair (only a copy that never compacted took
        /// them out): it relays them, the daemon that parted them drops them, and the copies
        /// never meet (Docs/Semantics.md §7, "Parted originals a copy holds").
        case keepsHeldPartedOnAFloor
        /// Refuses as malformed (`refused`), as before the repair, a client's operation that
        /// edits an operation this copy counts but never holds, and keeps what waits on it in
        /// its batch (Docs/Semantics.md §7, "An edit of an original the copy counts"): its author
        /// records a failure instead of re-syncing, and the waiting ones wait for ever.
        case refusesUnheldNamesAsMalformed
        /// Ignores a device's `remade` (``remade(_:ranges:now:)``), as daemons did before it:
        /// a copy keeps an original its author made again (Docs/Semantics.md §7, "An edit its
        /// author made again").
        case ignoresRemade
        /// Merges back onto a peer's snapshot taking every counter its floor counts for held, as
        /// before the floor said what it skipped (``ListCRDT/ListDocument/floorSkipped``): an
        /// edit this copy keeps waiting that the floor counts without holding is dropped,
        /// acknowledged and on no copy (Docs/Semantics.md §7, "A floor that counts what it
        /// skipped").
        case countsSkippedAsHeld
        /// Keeps in a merge back what a daemon's entry says it parted, after the snapshot's floor,
        /// and sends a peer's link no table before its catch-up, as daemons did before "A merge
        /// back that knows what was parted" (Docs/Semantics.md §7): the copy subscribes again
        /// holding the parted originals, is answered with the snapshot again, and merges back
        /// for ever.
        case keepsNamedInMergeBack
        /// Takes nothing back from the log's relayed records (``noteRelayed(_:)`` does nothing),
        /// as daemons did when they kept which operations came through a peer link in memory
        /// only: after a restart without its stability file, a merge back makes again a peer's
        /// clients' edits that the peer makes again too (a value shown twice;
        /// Docs/Semantics.md §7, "A lost stability file").
        case forgetsRelayedOnRestart
        /// Counts a daemon as vouching for this daemon's entry's version only once its entry was
        /// seen at exactly that version, as before "An agreement not missed" (Docs/Semantics.md
        /// §7): an entry that moved past it first leaves it unagreed here.
        case agreesOnlyAtExactVersions
        /// Keeps its memo of a version's prefix check when it counts a daemon through a version
        /// past it (``noteVouchers()``): operations within that version that came after the check
        /// are not looked at, and the compaction the policy asks for is refused (seed 3094 of
        /// `listsync simulate --daemons 3 --compact-after 10 --hide-daemon --roam 30 --crashes 1
        /// --ops 80`).
        case keepsPrefixCheckOnVouchers
        /// Decides, on a copy with a floor, whether a subscriber's version ends on an operation a
        /// daemon parted that this copy lacks by its version alone, as before "A second merge
        /// back" (Docs/Semantics.md §7): after a second merge back that parted what the first made
        /// again, the version counts those (the second made them again under later counters), and
        /// a device holding them is sent operations, not a snapshot: it shows the edits twice.
        case countsPartedByVersion
    }

    /// The document's id.
    public let id: DocumentID
    /// Its name (sent in `subscribed`); changed by a rename.
    public var name: String
    /// Its epoch.
    public private(set) var epoch: UInt64
    /// The document as applied in memory: every durable operation, and those of batches in flight.
    public internal(set) var document: ListDocument
    /// What the daemon advertises: every operation in it is durable.
    public internal(set) var durableVersion: VersionVector
    /// Why the store failed, while the core waits for ``recovered(_:)``.
    public private(set) var failure: String?
    /// The largest frame a subscriber's connection takes.
    public let maxFrame: Int
    /// Bytes of catch-up sent to a subscriber before waiting for room.
    public let stepBytes: Int
    /// Operations queued for one subscriber past which it is cut off as a slow consumer (beyond its
    /// catch-up).
    public let maxQueuedOperations: Int
    /// Known operations received again with other content (equivocations), refused.
    public private(set) var equivocations = 0
    /// The id of the last one.
    public private(set) var lastEquivocation: OpID?
    /// Operations applied here from batches (woken ones included), for metrics.
    public private(set) var operationsApplied = 0
    /// Operations put in frames for subscribers (catch-ups and live fan-out, each subscriber's
    /// counted), for metrics: the driver reports what it grew by after each call.
    public internal(set) var operationsSent = 0
    /// How the core behaves (tests only).
    @_spi(Testing) public var variant = Variant.correct
    /// Why the document was destroyed, once ``destroy(reason:)`` ran: the core takes nothing more.
    public private(set) var destroyedReason: String?
    /// Who can still send the document operations, and what they have seen (Docs/Semantics.md
    /// §7): fed by ``seen(_:replica:version:role:now:)``, kept on disk by the driver.
    public internal(set) var stability: DocumentStability
    /// Compactions made since the core was made (``compact(at:)``), and the last one's report.
    public internal(set) var compactions = 0
    public internal(set) var lastCompaction: CompactionReport?
    /// Operations refused because they were made before the compaction floor (``SyncErrorCode/compacted``).
    public private(set) var refusedBeforeFloor = 0
    /// The greatest counter of each replica refused for the floor: an operation that depends on
    /// one of those (and not on anything known) is refused too, rather than kept waiting for it
    /// in the causal buffer for ever (where it would hold compaction back, and clash with the
    /// edits its author makes again after re-syncing).
    var refusedFloor: [ReplicaID: UInt64] = [:]
    /// The operations this copy took from a peer link since its last compaction, as runs of
    /// counters per author (``noteAuthors(of:from:)``): a merge back makes none of them again
    /// (``mergeBack(_:)``), whoever their author, since the daemon that took each from its author
    /// holds it too and makes it again itself. A roaming device's edits reach one daemon both
    /// ways, some from the device and some relayed, so its author is no relay author there.
    /// The log keeps them beside the batches (``Action/append(ticket:operations:relayed:)``, and
    /// each new generation with ``relayedRuns``), and the driver gives them back after a restart
    /// (``noteRelayed(_:)``): a stability file lost with its relay authors loses none of them
    /// (Docs/Semantics.md §7, "A lost stability file"). Each compaction drops those within its
    /// floor (nothing before the floor is parted again); those after a stable prefix stay.
    var relayedOperations = OperationRuns()
    /// The version this daemon last published to its peers, and what is known to be after it
    /// (``refuseUnaccounted(_:relay:waiting:)``).
    var publishedMark: PublishedMark?
    /// What this copy held before it merged back a peer's snapshot it was left out of
    /// (``replace(with:parting:)``): a subscriber that holds operations of it that the copy lacks
    /// now (made again under other ids) gets a snapshot, and such an operation sent again is
    /// acknowledged as held (its edit is). Kept in memory only.
    public internal(set) var partedVersion: VersionVector?
    /// The parted ranges last told to the subscribers that learn them (``announceParted()``).
    var partedAnnounced = PartedRanges()
    /// The parted ranges ``holdsPartedOriginals()`` last looked for, and the log positions it
    /// found none of them in (reset where the document is replaced).
    var partedHeldChecked: (ranges: PartedRanges, logCount: Int)?
    /// Whether a lost stability file was kept past the retire period because the daemon has
    /// peers (``refreshStability(now:retireAfter:keepsLoss:)``): ``compactionBlock`` says so.
    var lossKeptForPeers = false
    /// Copies merged back (``replace(with:parting:)``), and operations made again by them.
    public internal(set) var mergesBack = 0, operationsMergedBack = 0

    /// Log positions below this are durable.
    var durableCount: Int
    var inFlight: [InFlight] = []
    private var nextTicket: UInt64 = 1
    var subscribers: [SubscriberID: Subscriber] = [:]
    /// What identifies the document's state for ``snapshotFrames()``.
    struct SnapshotKey: Equatable {
        var version: VersionVector
        var pending: Int
        var floor: VersionVector?
    }
    /// The last snapshot catch-up's frames (``snapshotFrames()``), while the document is as it was.
    var snapshotCache: (key: SnapshotKey, frames: [[UInt8]])?
    /// Whether the stability table changed since it was last gossiped to the peer links, and
    /// when that was (``gossip(now:interval:)``).
    var gossipDirty = false
    var lastGossip: UInt64?
    /// The stability clock's last reading (seconds), for what is noted between two readings.
    var stabilityClock: UInt64 = 0
    /// The driver's monotonic time of the last compaction point ``housekeeping(stabilityNow:now:rule:)``
    /// found (nil: none yet); it finds none again before ``compactionWait(_:)`` has passed.
    var lastCompactionPoint: UInt64?
    /// The driver's monotonic time ``housekeeping(stabilityNow:now:rule:)`` last looked for a
    /// stable prefix (a pass over the history: once per ``compactionWait(_:)`` at most).
    var lastPrefixSearch: UInt64?
    /// Whether the rule ever said this daemon has peers (``CompactionRule/peered``): it then
    /// never compacts keeping concurrent operations (``keepsConcurrent``), even before a peer's
    /// link has said anything.
    var ruledPeered = false
    /// The driver's monotonic time this daemon last made its entry's offer of a stable prefix
    /// (Docs/Semantics.md §7, "Peers while busy"; a pass over the history: once per
    /// ``compactionWait(_:)`` at most).
    var lastOffer: UInt64?
    /// This daemon's entry's version and the daemons whose entries vouched for it as seen here
    /// since (at exactly that version, its own and the leader's it took it from included; or at a
    /// version past it this copy held whole, those versions joined in `holds`), in memory
    /// (Docs/Semantics.md §7, "Peers while busy" and "An agreement not missed"; ``noteVouchers()``).
    var prefixVouchers: (version: VersionVector, daemons: Set<ReplicaID>, holds: VersionVector)?
    /// The latest version every daemon's entry vouched for as seen here (``noteVouchers()``): a
    /// stable prefix this daemon may compact at even once the entries moved on to the next
    /// proposal (``peerPrefixPoint(_:)``), with the daemons seen vouching and the versions past it
    /// this copy must still hold (``agreedPrefixNow``). In memory: lost with a restart.
    var agreedPrefix: (version: VersionVector, daemons: Set<ReplicaID>, holds: VersionVector)?
    /// The meet of the offers the leader last looked for a proposal in, and the versions whose
    /// prefix check (``prefixPoint(within:_:)``) this daemon made at its floor, with the answer:
    /// each is a pass over the history, and gives the same answer again for the same versions
    /// (every operation taken later is after an agreed prefix).
    var proposedFrom: VersionVector?
    var prefixChecks: (floor: VersionVector?, checked: [VersionVector: Bool])?
    /// What the last compaction here left reclaimable (hidden text characters it keeps as
    /// anchors), which the bytes trigger does not count again (``reclaimableSinceCompaction``).
    var reclaimableKept = 0
    /// Whether relay authors or the daemons known changed since the driver last wrote the
    /// stability down (``refreshPeers(now:retireAfter:)`` then says it changed).
    var stabilityUnsaved = false
    /// Subscribers that sent a presence since they attached: presence is relayed to them only (a
    /// client of an older version would not read it).
    var presenceListeners: Set<SubscriberID> = []
    /// The last presence of each listener that is not idle: ended for the others when it leaves.
    var activePresence: [SubscriberID: Presence] = [:]

    /// A batch between ``receive(_:batch:from:)`` and its release.
    struct InFlight {
        let ticket: UInt64
        /// The log positions its receive applied (woken operations of earlier batches included).
        let applied: Range<Int>
        let sender: SubscriberID?
        let batch: UInt64
        let refused: [ApplyError]
        /// Operations of earlier batches that its receive woke from the causal buffer: forwarded
        /// with it to everyone, and to its sender too, who may lack them.
        let woken: [ListOperation]
        var durable: Bool
        /// Whether some of its operations were made before the compaction floor (refused).
        var beforeFloor = false
    }

    /// One subscriber's outgoing operations.
    struct Subscriber {
        /// What is to be sent to it, in order: its catch-up (read from the log a step at a time)
        /// and the live operations queued behind.
        var outbox = Outbox()
        /// Whether the core waits for ``roomAvailable(_:)``.
        var waiting = false
        /// A `synced` follows once the outbox is empty.
        var syncedDue = true
        /// What it said it has seen (``SyncMessage/seen(document:replica:version:role:)``); nil
        /// until it says: it then holds compaction back (an older client, a peer of an older build).
        var seen: VersionVector?
        /// The replica and role of its last `seen`.
        var replica: ReplicaID?
        var role: SeenRole?
        /// A peer link that takes the stability table (``gossip(now:interval:)``): this daemon's
        /// own link, or a peer's that sent one.
        var gossips = false
        /// Its catch-up is a snapshot (its version is behind the floor), sent once nothing is in
        /// flight; nothing is forwarded to it until then (the snapshot holds it).
        var snapshotDue = false
        /// This daemon's own link to a peer (``subscribe(_:epoch:version:ownLink:)``): it relays
        /// operations only, never a snapshot.
        var ownLink = false
        /// It asked for `parted` (``subscribe(_:epoch:version:ownLink:learnsParted:)``).
        var learnsParted = false
        /// The parts of its snapshot catch-up still to send, last part first, before anything
        /// queued (stepped as operations are: ``stepBytes`` at a time, then ``Action/awaitRoom(_:)``).
        var snapshotFrames: [[UInt8]] = []
        /// This daemon's own link to a peer that takes `floorSnapshot` (its subscription there
        /// said `offersFloor`): a catch-up of it that is a snapshot, or a batch it relays that is
        /// refused for the floor, makes this core offer its snapshot to it
        /// (DocumentCore+FloorOffer.swift).
        var offersFloor = false
        /// The offer was made (or is due) on this subscription: once per subscription.
        var floorOffered = false
        /// The offer waits for the batches in flight.
        var floorOfferDue = false
    }

    /// A core for `document`, loaded from disk (everything in it is durable).
    ///
    /// - Parameters:
    ///   - maxFrame: the largest frame subscribers' connections take.
    ///   - stepBytes: catch-up bytes sent before waiting for room (default 1 MiB).
    public init(id: DocumentID, name: String, epoch: UInt64, document: ListDocument, maxFrame: Int = 1 << 20,
                stepBytes: Int = 1 << 20, maxQueuedOperations: Int = 262_144,
                stability: DocumentStability = DocumentStability()) {
        precondition(maxFrame >= 256, "frames of \(maxFrame) bytes are too small")
        self.id = id
        self.name = name
        self.epoch = epoch
        self.document = document
        self.durableVersion = document.version
        self.durableCount = document.operationCount
        self.maxFrame = maxFrame
        self.stepBytes = max(stepBytes, 1)
        self.maxQueuedOperations = maxQueuedOperations
        self.stability = stability
    }

    /// Batches appended and not yet released.
    public var inFlightCount: Int { inFlight.count }
    /// Whether every applied operation is durable (a snapshot of ``document`` holds nothing that is not).
    public var isQuiet: Bool { inFlight.isEmpty && failure == nil }
    /// The subscribers, in order.
    public var subscriberIDs: [SubscriberID] { subscribers.keys.sorted() }

    // MARK: Batches

    /// A batch from `sender` (nil: the daemon itself), with `batch` its request number (0: no answer).
    ///
    /// - Complexity: that of ``ListDocument/receive(_:)-([ListOperation])`` for the batch.
    public mutating func receive(_ ops: [ListOperation], batch: UInt64, from sender: SubscriberID?) -> [Action] {
        if let destroyedReason {
            return answer(sender, .error(request: batch, document: id, code: .destroyed, text: destroyedReason))
        }
        if let failure {
            return answer(sender, .error(request: batch, document: id, code: .storage,
                                        text: "the document's store failed (\(failure)); nothing of batch \(batch) was applied"))
        }
        var seen: [ListOperation] = [], fresh: [ListOperation] = []
        // Operations this core took before and keeps waiting for their causes: durable and
        // acknowledged then, so taken again as they are, never refused now (a refusal would
        // contradict that acknowledgement: the sender would make them again under new ids while
        // these apply once their causes come, relayed by a peer that took them).
        var waiting = VersionVector()
        for op in ops {
            if document.version.contains(op.lastID) {
                seen.append(op)
            } else if isMergedBack(op) {
                continue   // its edit is here, made again (DocumentCore+Parting.swift)
            } else if document.isWaiting(op) {
                waiting.observe(op.lastID)
            } else {
                fresh.append(op)
            }
        }
        // Known operations change nothing; they are checked against what is known (equivocations).
        var refused = seen.isEmpty ? [] : document.receive(seen).refused
        equivocations += refused.count
        for case let .equivocation(id) in refused { lastEquivocation = id }
        var stale = refuseBeforeFloor(&fresh, waiting: waiting)
        if let sender { stale += refuseUnaccounted(&fresh, relay: subscribers[sender]?.role == .relay, waiting: waiting) }
        var beforeFloor = !stale.isEmpty
        refused += stale
        let start = document.operationCount
        let waited = document.pendingCount
        let report = fresh.isEmpty ? ReceiveReport() : document.receive(fresh)
        var applyRefused = report.refused
        if let sender, !applyRefused.isEmpty, subscribers[sender]?.role != .relay {
            // An edit of an original this copy counts but never holds: refused for the floor.
            let unheld = refuseUnheldNames(fresh, refused: applyRefused)
            applyRefused = unheld.refusals
            beforeFloor = beforeFloor || unheld.beforeFloor
        }
        refused += applyRefused
        operationsApplied += document.operationCount - start
        let accepted = Self.accepted(fresh, refused: applyRefused)
        noteAuthors(of: accepted, from: sender)
        let applied = start..<document.operationCount
        // Operations other batches left waiting can only be woken if some waited before.
        let woken = sender != nil && waited > 0 ? Self.woken(document, applied, except: fresh) : []
        let ticket = nextTicket
        nextTicket += 1
        inFlight.append(InFlight(ticket: ticket, applied: applied, sender: sender, batch: batch,
                                 refused: refused, woken: woken, durable: accepted.isEmpty, beforeFloor: beforeFloor))
        var actions: [Action] = []
        if !accepted.isEmpty {
            actions.append(.append(ticket: ticket, operations: accepted, relayed: sender.flatMap { subscribers[$0]?.role } == .relay))
        }
        if variant == .acknowledgeBeforeDurable { markDurable(ticket) }
        actions += release()
        return actions
    }

    /// A refusal the driver decided (a rate limit, a store it could not reopen): the sender's one
    /// answer for `batch`, nothing applied.
    public func refuse(batch: UInt64, from sender: SubscriberID, code: SyncErrorCode, text: String) -> [Action] {
        answer(sender, .error(request: batch, document: id, code: code, text: text))
    }

    /// The append of `ticket` is durable.
    public mutating func durable(ticket: UInt64) -> [Action] {
        guard destroyedReason == nil else { return [] }
        snapshotCache = nil   // the document moved on: its next snapshot is another
        markDurable(ticket)
        return release()
    }

    /// The append of `ticket` failed: every batch in flight is refused with a storage error and the
    /// core takes nothing until ``recovered(_:)``.
    ///
    /// Every batch, not only those from `ticket` on: the durable batches at the front were released
    /// already, so any batch in flight waits behind one whose append has not been confirmed, and
    /// cannot be released before it. The reload says what reached the disk.
    public mutating func appendFailed(ticket: UInt64, reason: String) -> [Action] {
        guard failure == nil else { return [] }
        failure = reason
        var actions: [Action] = []
        for f in inFlight {
            actions += answer(f.sender, .error(request: f.batch, document: id, code: .storage,
                                               text: "the document's store failed (\(reason)); nothing of batch \(f.batch) was acknowledged"))
        }
        inFlight = []
        return actions
    }

    /// The document as reloaded from disk after a failure: it replaces the one in memory (whatever
    /// of the failed batches reached the disk is durable now, and is forwarded).
    public mutating func recovered(_ reloaded: ListDocument) -> [Action] {
        guard destroyedReason == nil else { return [] }
        let extra = reloaded.operations(since: durableVersion)
        materialiseCatchUps()   // their log positions are the old document's
        document = reloaded
        partedHeldChecked = nil
        durableVersion = reloaded.version
        durableCount = reloaded.operationCount
        inFlight = []
        failure = nil
        return forward(extra, except: nil)
    }

    // MARK: Subscribers

    /// `subscriber` attaches at `epoch` (0: it holds nothing) holding `version`: it gets `subscribed`,
    /// the durable operations it lacks in steps, then `synced`, then every new durable operation.
    /// An epoch other than the document's is refused with `epochMismatch` (re-attach from scratch).
    /// `ownLink`: the subscriber is this daemon's own link to a peer (which then calls
    /// ``markRelay(_:daemon:gossips:)``): its catch-up is never a snapshot for holding what this
    /// copy parted (``catchUp(_:from:)``). `learnsParted`: the subscriber asked for `parted`
    /// (a device): it is told what the daemons parted in merges back, right after `subscribed`
    /// and whenever that grows (``announceParted()``; Docs/Semantics.md §7, "A device learns what
    /// was parted"). `relay`: the subscriber is a peer daemon's link
    /// (``markRelay(_:daemon:gossips:)``, before anything is sent): one that takes the table gets
    /// it before a catch-up that is a snapshot (``tableFor(_:)``). `offersFloor` (with `ownLink`):
    /// the peer takes `floorSnapshot` from this link; a catch-up of it that is a snapshot, or a
    /// batch the link relays here that is refused for the floor, makes this core offer its table
    /// and snapshot to it as `floorSnapshot`, once per subscription
    /// (DocumentCore+FloorOffer.swift; Docs/Semantics.md §7, "A left-out daemon that only
    /// accepts links").
    ///
    /// - Complexity: O(r + k) for the log's r records (counted, not rebuilt) and the k operations of
    ///   the first step; each later step costs what it sends (``roomAvailable(_:)``).
    public mutating func subscribe(_ subscriber: SubscriberID, epoch: UInt64, version: VersionVector, ownLink: Bool = false,
                                   learnsParted: Bool = false, relay: RelayMark? = nil, offersFloor: Bool = false) -> [Action] {
        if let destroyedReason {
            return [.send(subscriber, SyncMessage.error(request: 0, document: id, code: .destroyed, text: destroyedReason).encoded())]
        }
        guard epoch == 0 || epoch == self.epoch else {
            return [.send(subscriber, SyncMessage.error(request: 0, document: id, code: .epochMismatch,
                text: "document \(id) is at epoch \(self.epoch), not \(epoch): it was reset or restored; re-attach").encoded())]
        }
        subscribers[subscriber] = Subscriber()
        subscribers[subscriber]!.ownLink = ownLink
        subscribers[subscriber]!.learnsParted = learnsParted
        subscribers[subscriber]!.offersFloor = ownLink && offersFloor
        presenceListeners.remove(subscriber)
        if let relay { markRelay(subscriber, daemon: relay.daemon, gossips: relay.gossips) }
        let hello = SyncMessage.subscribed(document: id, name: name, epoch: self.epoch, version: advertisedVersion).encoded()
        return [.send(subscriber, hello)] + partedFor(subscriber) + catchUp(subscriber, from: version)
    }

    /// A peer daemon's link, known as one when it subscribes (``ServerSession/relayDaemon``):
    /// its daemon's id, if known, and whether it takes the stability table.
    public struct RelayMark: Sendable, Equatable {
        public var daemon: ReplicaID?
        public var gossips: Bool
        public init(daemon: ReplicaID?, gossips: Bool) { (self.daemon, self.gossips) = (daemon, gossips) }
    }

    /// The stability table for `subscriber`, before a catch-up that is a snapshot, if it is a
    /// peer's link that takes it and the table names anyone: its daemon merges back onto that
    /// snapshot by what the table says was parted (Docs/Semantics.md §7, "A merge back that
    /// knows what was parted"), and the link takes tables only while attached, which it is not
    /// once the snapshot came.
    ///
    /// - Complexity: O(size) of the table.
    func tableFor(_ subscriber: SubscriberID) -> [Action] {
        guard variant != .keepsNamedInMergeBack, subscribers[subscriber]?.gossips == true,
              !stability.peers.entries.isEmpty else { return [] }
        return stabilityFrame().map { [.send(subscriber, $0)] } ?? []
    }

    /// This daemon's stability table as one `stability` frame, or nil if it would not fit one
    /// (``gossip(now:interval:)``, ``tableFor(_:)``).
    ///
    /// - Complexity: O(size) of the table.
    func stabilityFrame() -> [UInt8]? {
        let frame = SyncMessage.stability(document: id, from: document.replica, entries: stability.peers.entries).encoded()
        return frame.count <= maxFrame ? frame : nil
    }

    /// Anti-entropy from `subscriber`: it holds `version`; the durable operations it lacks follow,
    /// then `synced` (a snapshot instead, if `version` is behind the compaction floor).
    public mutating func hello(_ subscriber: SubscriberID, version: VersionVector) -> [Action] {
        guard subscribers[subscriber] != nil else { return [] }
        return catchUp(subscriber, from: version)
    }

    /// `subscriber` leaves (unsubscribed, or its connection closed). Returns the end of its
    /// presence for the other listeners, if it had one in progress: send it.
    @discardableResult
    public mutating func unsubscribe(_ subscriber: SubscriberID) -> [Action] {
        subscribers[subscriber] = nil
        defer { assert(!presenceListeners.contains(subscriber) && activePresence[subscriber] == nil) }
        for i in inFlight.indices where inFlight[i].sender == subscriber {
            // Its batches are still logged and forwarded; there is nobody to answer.
            inFlight[i] = InFlight(ticket: inFlight[i].ticket, applied: inFlight[i].applied, sender: nil,
                                   batch: 0, refused: inFlight[i].refused, woken: [], durable: inFlight[i].durable,
                                   beforeFloor: inFlight[i].beforeFloor)
        }
        return endPresence(of: subscriber)
    }

    /// The document is being destroyed (Docs/Daemon.md, "Destroying a document"): every
    /// subscriber hears `error(0, document, destroyed, reason)` and is detached; every batch in
    /// flight is answered with the same code (what of it reached the log goes with the files);
    /// from now on every batch and subscription is refused the same way. Nothing is forwarded.
    ///
    /// - Complexity: O(s + b) for s subscribers and b batches in flight.
    public mutating func destroy(reason: String) -> [Action] {
        guard destroyedReason == nil else { return [] }
        destroyedReason = reason
        var actions: [Action] = []
        for f in inFlight where f.batch != 0 {
            actions += answer(f.sender, .error(request: f.batch, document: id, code: .destroyed, text: reason))
        }
        inFlight = []
        let ended = SyncMessage.error(request: 0, document: id, code: .destroyed, text: reason).encoded()
        for s in subscribers.keys.sorted() { actions.append(.send(s, ended)) }
        subscribers = [:]
        presenceListeners = []
        activePresence = [:]
        return actions
    }

    // MARK: Presence

    /// A presence from `subscriber` (Docs/Protocol.md, "Presence"): relayed at once to every other
    /// subscriber that has sent one too, never to its sender; nothing is stored but whether
    /// `subscriber` has a drag or selection in progress, so that its end reaches the others when
    /// it leaves. From now on `subscriber` hears the others' presence. Not attached: nothing.
    ///
    /// - Complexity: O(s) for s subscribers that sent presence (one encoding, shared).
    public mutating func presence(_ presence: Presence, from subscriber: SubscriberID) -> [Action] {
        guard subscribers[subscriber] != nil, destroyedReason == nil else { return [] }
        presenceListeners.insert(subscriber)
        activePresence[subscriber] = presence.activity == .idle ? nil : presence
        return relayPresence(presence, except: subscriber)
    }

    /// The subscribers that hear presence, in order.
    public var presenceListenerIDs: [SubscriberID] { presenceListeners.sorted() }

    private func relayPresence(_ presence: Presence, except sender: SubscriberID) -> [Action] {
        let frame = SyncMessage.presence(document: id, presence).encoded()
        return presenceListeners.sorted().filter { $0 != sender }.map { .send($0, frame) }
    }

    /// Forgets `subscriber`'s presence; if it had one in progress, its end goes to the others.
    mutating func endPresence(of subscriber: SubscriberID) -> [Action] {
        presenceListeners.remove(subscriber)
        guard let last = activePresence.removeValue(forKey: subscriber) else { return [] }
        return relayPresence(Presence(replica: last.replica, name: last.name, activity: .idle), except: subscriber)
    }

    /// Whether `subscriber` is attached.
    public func isSubscribed(_ subscriber: SubscriberID) -> Bool { subscribers[subscriber] != nil }

    /// `subscriber`'s connection has room again: the next step of what is queued for it.
    public mutating func roomAvailable(_ subscriber: SubscriberID) -> [Action] {
        guard subscribers[subscriber] != nil else { return [] }
        subscribers[subscriber]!.waiting = false
        return pump(subscriber)
    }

    // MARK: Internals

    private static func accepted(_ fresh: [ListOperation], refused: [ApplyError]) -> [ListOperation] {
        guard !refused.isEmpty else { return fresh }
        var ids: [OpID] = []
        for e in refused {
            switch e {
            case let .equivocation(i), let .malformed(i, _), let .valueTooLarge(i, _, _), let .bufferFull(i, _): ids.append(i)
            }
        }
        return fresh.filter { op in !ids.contains { $0.replica == op.id.replica && $0.counter >= op.id.counter && $0.counter <= op.lastID.counter } }
    }

    /// The operations in log positions `applied` that are not among `fresh`: those the receive woke
    /// from the causal buffer, sent earlier by someone else.
    ///
    /// - Complexity: O(k) for the k operations applied.
    private static func woken(_ document: ListDocument, _ applied: Range<Int>, except fresh: [ListOperation]) -> [ListOperation] {
        guard !applied.isEmpty else { return [] }
        let own = Set(fresh.map(\.id))
        return document.operations(in: applied).filter { !own.contains($0.id) }
    }

    private mutating func markDurable(_ ticket: UInt64) {
        guard let i = inFlight.firstIndex(where: { $0.ticket == ticket }) else { return }
        inFlight[i].durable = true
    }

    /// Releases the durable batches at the front, in order: forwards what each applied and
    /// answers its sender.
    private mutating func release() -> [Action] {
        var actions: [Action] = []
        while let first = inFlight.first, first.durable {
            inFlight.removeFirst()
            assert(first.applied.lowerBound == durableCount || variant == .acknowledgeBeforeDurable,
                   "batch \(first.ticket) released out of log order")
            let applied = document.operations(in: first.applied)
            for op in applied { durableVersion.observe(op.lastID) }
            durableCount = first.applied.upperBound
            actions += forward(applied, except: first.sender)
            if let sender = first.sender, !first.woken.isEmpty { actions += enqueue(sender, first.woken) }
            if !first.refused.isEmpty {
                // What it took of the batch, as an `ack` would say, at the end of the text
                // (``TakenInPart``): the device then makes again only what was refused.
                var text = "\(first.refused.count) operation(s) of batch \(first.batch) refused, the first: \(first.refused[0]); the others are durable and applied"
                if variant != .refusesWithoutTaken { text = TakenInPart(version: durableVersion, refused: first.refused).appended(to: text) }
                if first.beforeFloor { refusedBeforeFloor += first.refused.count }
                actions += answer(first.sender, .error(request: first.batch, document: id,
                                                       code: first.beforeFloor ? .compacted : .refused, text: text))
                if first.beforeFloor, let sender = first.sender { actions += noteFloorRefusal(of: sender) }
            } else if first.batch != 0 {
                actions += answer(first.sender, .ack(document: id, batch: first.batch, version: durableVersion))
            }
        }
        assert(!inFlight.isEmpty || variant == .acknowledgeBeforeDurable || failure != nil || durableVersion == document.version,
               "quiet, yet the durable version \(durableVersion) is not the document's \(document.version)")
        if inFlight.isEmpty {
            for s in subscribers.keys.sorted() where subscribers[s]!.snapshotDue { actions += sendSnapshotIfQuiet(s) }
            for s in subscribers.keys.sorted() where subscribers[s]!.floorOfferDue { actions += offerFloorIfDue(s) }
        }
        return actions
    }

    private func answer(_ to: SubscriberID?, _ message: SyncMessage) -> [Action] {
        guard let to else { return [] }
        return [.send(to, message.encoded())]
    }

    /// Every durable operation, in the order applied (what ``durableVersion`` counts): a copy of
    /// the document that never includes a batch still in flight.
    ///
    /// - Complexity: O(operations).
    public var durableOperations: [ListOperation] { document.operations(since: VersionVector(), before: durableCount) }
}
