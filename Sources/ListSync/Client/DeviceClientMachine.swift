import ListCRDT

/// The device client's decisions for one copy of a document, as a pure state machine: events in
/// (an edit made, connected, subscribed, operations received, `synced`, an edit answered or
/// refused, `stable`, disconnected), actions out (send these operations, save the record,
/// subscribe again from nothing, go back to another daemon, replace the copy with its re-sync,
/// report what it has seen). No I/O: ``SyncClient`` (`ListSyncClient`) drives one per document
/// over its socket and files, and the simulator's clients drive one each over the in-memory
/// network, so that what the simulator checks is what a device decides (Docs/Simulation.md,
/// "The simulator runs the production drivers").
///
/// It keeps what the device knows of the daemons (Docs/Semantics.md §7): what they acknowledged
/// (``acknowledged``), which of them may hold edits of its own without an answer
/// (``UnansweredSends``), a refusal waiting for the answers of later batches (``RefusalWait``),
/// its re-sync (``CopyResync``), and the edits in flight on the current connection with the
/// operations they carry. The document itself is the driver's (a `LiveDocument` and a store on a
/// device): events that need it take it as it is when the event comes.
///
/// A daemon is named as the device reaches it (``Daemon``): its address (`host:port`) on a device,
/// a name per index in the simulator. (Not generic: its callers are in other modules, where a
/// generic machine would run unspecialized.)
public struct DeviceClientMachine: Sendable {
    /// A daemon's name, as the device reaches it; the least is asked first
    /// (``UnansweredSends/refused(by:askable:)``).
    public typealias Daemon = String

    /// When a copy sends its edits.
    public enum Sending: Sendable, Equatable {
        /// The device's rule (``DeviceCopyPolicy/toSend(_:acknowledged:)``): once caught up
        /// (`synced`), everything the daemons have not acknowledged, in the order the copy applied
        /// it, and again after each edit while live. `SyncClient` sends so.
        case inOrder
        /// Each edit's operations at once, even while subscribing, and on `subscribed` those of
        /// its own that no daemon acknowledged: an edit can reach a daemon before the earlier ones
        /// it depends on (the simulator's `--sends-ahead`, which stresses the daemons' causal
        /// buffer; no device sends so).
        case ahead
        /// ``ahead``, and on `subscribed` every operation the daemon lacks, others' too (the
        /// simulator's clients without compaction, which carry operations between daemons; no
        /// device sends so).
        case aheadWithOthers
    }

    /// What the driver does.
    public enum Action: Sendable {
        /// Send these operations as one edit (`ClientSession.send`), then tell the machine the
        /// edit's number (``sent(edit:_:)``). `recordFirst`: the daemon was added to
        /// ``unanswered``; make the record durable before sending (a refusal elsewhere is final
        /// only once this daemon answered), and send nothing if that fails.
        case send([ListOperation], recordFirst: Bool)
        /// Send what the daemons have not acknowledged once every operation the copy applied is
        /// durable (call ``sendUnacknowledged(_:)`` then: at once when nothing is being stored).
        case sendUnacknowledged
        /// Write the record (``acknowledged`` and ``unanswered``).
        case saveRecord
        /// Caught up: the copy is live (a device shows what its catch-up brought in one change).
        case live
        /// Report what the copy holds (`seen`, coalesced by the session).
        case reportSeen
        /// Edits of the device were refused for the compaction floor (the daemon's words): a
        /// status line, a count. What the machine does about it follows in the same actions.
        case refusedForFloor(String)
        /// Close this connection and connect to `daemon` next: it may hold the edits this one
        /// refused (``UnansweredSends/Verdict/settle(at:)``).
        case settle(at: Daemon)
        /// Unsubscribe, and subscribe again (``subscribing(_:)`` gives the version: nothing, for
        /// the daemon's whole copy): the copy re-syncs.
        case resubscribe
        /// The re-sync is ready: make `outcome`'s document the copy (durably first), then call
        /// ``replaced(_:document:)``. Nothing else follows in these actions.
        case replace(CopyResync.Outcome)
        /// The copy's history no longer goes back to what the daemons acknowledged: nothing can
        /// be sent (``DeviceCopyPolicy/toSend(_:acknowledged:)`` never lets that happen).
        case cannotSend
        /// An edit was refused for another reason than the floor, or failed: the driver's to
        /// report (a reset, a destroyed document, a retry on a new connection).
        case editFailed(ClientSessionError)
        /// The copy keeps waiting operations that the daemons parted, or that wait on one they
        /// parted (``ListCRDT/ListDocument/holdsWaitingOnParted(_:)`` with ``parted``): their
        /// causes never come. Drop them (``ListCRDT/ListDocument/dropWaiting(onParted:)``) and
        /// write the copy as a new generation of its store, so that a restart does not keep them
        /// waiting again (Docs/Semantics.md §7, "A device drops what waits on parted originals").
        /// Only once every operation the copy applied is durable; skipped otherwise (asked again
        /// at the next `synced` or `parted`). Nothing is shown differently, nothing is sent.
        case dropPartedWaiting
        /// The re-sync made edits of the device's own again under new ids (their counters, as
        /// runs): tell the daemon (``ClientSession/remade(_:ranges:)``, after the `seen` this
        /// action follows), which names them parted, so that no copy keeps an original as it is
        /// beside its edit made again (Docs/Semantics.md §7, "An edit its author made again").
        case announceRemade(PartedRanges)
    }

    /// An edit in flight: the operations it carries, and the re-syncs done when it was sent.
    struct Edit: Sendable {
        var carried: [ListOperation]
        var generation: Int
    }

    /// The device's replica (the author of its edits).
    public let replica: ReplicaID
    /// When it sends.
    public let sending: Sending
    /// What the daemons said they hold durably (subscribed, synced, acknowledgements, receipts,
    /// a floor): the device's record.
    public private(set) var acknowledged: VersionVector
    /// The daemons that may hold edits of its own without an answer (the device's record).
    public private(set) var unanswered: UnansweredSends<Daemon>
    /// Its re-sync, while one runs.
    public private(set) var resyncing = CopyResync()
    /// A refusal waiting for the answers of the batches after it.
    public private(set) var refusal = RefusalWait()
    /// The daemon of the current connection; nil while not connected.
    public private(set) var daemon: Daemon?
    /// Caught up on the current subscription (`synced`).
    public private(set) var isLive = false
    /// Re-syncs done (a refusal of edits sent before one is answered, and ignored).
    public private(set) var resyncs = 0
    /// Times edits only a daemon given up acknowledged were counted unacknowledged again.
    public private(set) var givenUpResends = 0
    /// Times operations of other authors that the daemon caught up with lacked were counted
    /// unacknowledged again, a daemon being given up (``resendGivenUpCauses(holds:document:askable:)``).
    public private(set) var givenUpCausesResends = 0
    /// What the daemons parted in merges back, as the device learned it (`parted`, from any
    /// daemon: the ranges are the same facts everywhere), in memory: a re-sync does not wait for
    /// an acknowledged edit of its own they name (Docs/Semantics.md §7, "A device learns what
    /// was parted").
    public private(set) var parted = PartedRanges()
    /// Which daemon first acknowledged each of the device's own edits (the device's record): an
    /// edit only a daemon given up since acknowledged goes again (``synced(_:document:prepare:askable:)``).
    public private(set) var acknowledgedBy: AcknowledgingDaemons<Daemon>
    var inFlight: [UInt64: Edit] = [:]
    /// The actions of a receipt, and of an acknowledgement: made once.
    static let reportSeen: [Action] = [.reportSeen]
    static let saveRecordAndReportSeen: [Action] = [.saveRecord, .reportSeen]

    /// A deliberately broken client (the simulator's power tests): every refusal is final, as
    /// clients did before ``UnansweredSends``.
    @_spi(Testing) public var remakesOnFirstRefusal = false
    /// A deliberately broken client (the simulator's power tests): after a refusal the edits made
    /// after the floor are kept as they are, as clients did before `remake(_:from:refused:)`.
    @_spi(Testing) public var keepsRefusedEdits = false
    /// A deliberately broken client (the simulator's power tests): an edit only a daemon given up
    /// since acknowledged stays acknowledged, as clients did before ``acknowledgedBy``.
    @_spi(Testing) public var keepsGivenUpAcknowledgements = false
    /// A deliberately broken client (the simulator's power tests): operations of other authors
    /// that the daemon it caught up with lacks stay counted held once a daemon that acknowledged
    /// its edits is given up, as clients did before ``resendGivenUpCauses(holds:document:askable:)``.
    @_spi(Testing) public var keepsGivenUpCauses = false
    /// A deliberately broken client (the simulator's power tests): a copy told what the daemons
    /// parted keeps waiting what waits on it, as clients did before ``Action/dropPartedWaiting``.
    @_spi(Testing) public var keepsPartedWaiting = false
    /// A deliberately broken client (the simulator's power tests): a copy told what the daemons
    /// parted keeps showing a section or item a range names, as clients did before it re-synced
    /// for them (Docs/Semantics.md §7, "A device that shows parted originals").
    @_spi(Testing) public var keepsPartedShown = false
    /// A deliberately broken client (the simulator's power tests): a re-sync for parted
    /// originals shown makes every unsent edit again and takes the snapshot as final, as a
    /// re-sync after a refusal does, as clients did before it kept those after the floor and
    /// asked first a daemon that owed an answer (Docs/Semantics.md §7, "A device that shows
    /// parted originals").
    @_spi(Testing) public var resyncsForPartedAsRefused = false
    /// A deliberately broken client (the simulator's power tests): a re-sync that made edits of
    /// its own again says nothing of it, as clients did before ``Action/announceRemade(_:)``.
    @_spi(Testing) public var keepsRemadeUnannounced = false
    /// A deliberately broken client (the simulator's power tests): a re-sync makes again an
    /// unsent edit of its own that a parted range names, as clients did before
    /// (``CopyResync/outcome(local:acknowledged:parted:remakesParted:prepare:)``).
    @_spi(Testing) public var remakesPartedUnsent = false
    /// The ranges the copy last re-synced for because it showed an entity they name: once per
    /// set of ranges, so that a daemon that still holds them (not yet taken out, or of an older
    /// build) does not make the copy re-sync again and again. In memory.
    var resyncedForParted = PartedRanges()

    /// A copy of `replica`'s, starting from what its record kept (nothing for a new document;
    /// `acknowledgedBy` nil for a record of an older build: who acknowledged what is not known).
    public init(replica: ReplicaID, sending: Sending = .inOrder, acknowledged: VersionVector = VersionVector(),
                unanswered: Set<Daemon> = [], acknowledgedBy: [AcknowledgingDaemons<Daemon>.Run]? = nil) {
        self.replica = replica
        self.sending = sending
        self.acknowledged = acknowledged
        self.unanswered = UnansweredSends(unanswered)
        self.acknowledgedBy = AcknowledgingDaemons(runs: acknowledgedBy, acknowledged: acknowledged[replica])
    }

    /// Whether it re-syncs (it subscribes from nothing, and holds its sends back).
    public var isResyncing: Bool { resyncing.isActive }
    /// Edits sent on the current connection and not yet answered.
    public var inFlightCount: Int { inFlight.count }
    /// Whether edits of the device in `document` are not yet acknowledged.
    public func hasUnacknowledged(_ document: ListDocument) -> Bool {
        acknowledged[replica] < document.version[replica]
    }

    // MARK: Connections

    /// Connected to `daemon` (the driver subscribes next: ``subscribing(_:)``).
    public mutating func connected(to daemon: Daemon) {
        self.daemon = daemon
        inFlight = [:]
        refusal.reset()
        isLive = false
    }

    /// The connection ended: its edits are never answered (the next connection sends them
    /// again), and a refusal that waited is dropped.
    public mutating func disconnected() {
        daemon = nil
        inFlight = [:]
        refusal.reset()
        isLive = false
    }

    /// The copy subscribes: the version to subscribe from
    /// (``DeviceCopyPolicy/subscribeVersion(_:resyncing:)``). Not live until `synced`.
    public mutating func subscribing(_ document: ListDocument) -> VersionVector {
        isLive = false
        return DeviceCopyPolicy.subscribeVersion(document.version, resyncing: isResyncing)
    }

    /// The daemon said what the daemons parted in merges back (`parted`). A re-sync that waits
    /// for acknowledged edits of the device's own that those ranges name (originals the daemon
    /// that parted them made again under its ids: they never come) is ready now. A copy that is
    /// not re-syncing drops what it keeps waiting on them (``Action/dropPartedWaiting``).
    ///
    /// - Complexity: O(p × g²) to merge, and that of ``CopyResync/outcome(local:acknowledged:parted:prepare:)``
    ///   when a re-sync waits, or of ``ListCRDT/ListDocument/holdsWaitingOnParted(_:)``.
    public mutating func learnedParted(_ ranges: PartedRanges, document: ListDocument,
                                       prepare: (inout ListDocument) -> Void = { _ in },
                                       askable: (Daemon) -> Bool = { _ in true }) -> [Action] {
        guard parted.formUnion(ranges) else { return [] }
        guard isResyncing else { return dropsPartedWaiting(document) + resyncsForPartedShown(document) }
        guard resyncing.synced != nil else { return [] }
        return caughtUp(document, prepare: prepare, askable: askable)
    }

    /// ``Action/dropPartedWaiting`` if `document` keeps waiting operations that ``parted`` names
    /// or that wait on one it names and the copy does not hold (Docs/Semantics.md §7, "A device
    /// drops what waits on parted originals").
    ///
    /// - Complexity: O(1) with nothing waiting or nothing parted; else that of
    ///   ``ListCRDT/ListDocument/holdsWaitingOnParted(_:)``.
    func dropsPartedWaiting(_ document: ListDocument) -> [Action] {
        guard !keepsPartedWaiting, document.pendingCount > 0, !parted.isEmpty,
              document.holdsWaitingOnParted(parted.contains) else { return [] }
        return [.dropPartedWaiting]
    }

    /// A live copy that shows a section or an item whose id a parted range names (an entity only
    /// an original made; the daemon that parted it made it again under another id) re-syncs
    /// from nothing, as after a refusal for the floor, once per set of ranges: its copy is
    /// rebuilt from the daemon's, which lacks the originals, its unsent edits are made again on
    /// it, and its acknowledged edits the ranges name are not waited for (Docs/Semantics.md §7,
    /// "A device that shows parted originals"). Neither its version nor its floor tells that
    /// the copy holds them (seed 20112 of `listsync simulate --daemons 3 --ring --hide-daemon
    /// --roam 30 --crashes 2 --ops 80 --compact-after 10`: a device compacted past them, its
    /// version past the range).
    ///
    /// - Complexity: O(1) when nothing was parted or the copy re-synced for these ranges; else
    ///   O(c log n) for the c counters the ranges name (O(n) for n entities past 4,096).
    mutating func resyncsForPartedShown(_ document: ListDocument) -> [Action] {
        guard !keepsPartedShown, !parted.isEmpty, parted != resyncedForParted, daemon != nil, !isResyncing,
              Self.shows(parted, document) else { return [] }
        resyncedForParted = parted
        resyncing.begin(replica: replica, afterRefusal: resyncsForPartedAsRefused)
        return [.saveRecord, .resubscribe]
    }

    /// Whether `document` shows a section or an item whose id `ranges` names.
    static func shows(_ ranges: PartedRanges, _ document: ListDocument) -> Bool {
        let counters = ranges.runs.values.joined().reduce(0) { $0 + Int(clamping: $1.upperBound - $1.lowerBound + 1) }
        guard counters <= 4_096 else {
            return document.snapshot().sections.contains { s in ranges.contains(s.id.opID) || s.items.contains { ranges.contains($0.id.opID) } }
        }
        for (r, runs) in ranges.runs {
            for run in runs {
                for c in run {
                    let id = OpID(counter: c, replica: r)
                    if document.contains(ItemID(id)) || document.contains(SectionID(id)) { return true }
                }
            }
        }
        return false
    }

    // MARK: Sending

    /// An edit was made (durably, on a device): with ``Sending/inOrder``, what the daemons lack
    /// is sent if the copy is live; sending ahead, `made` goes at once.
    public mutating func edited(_ made: [ListOperation], document: ListDocument) -> [Action] {
        guard !made.isEmpty else { return [] }
        if sending == .inOrder { return sendUnacknowledged(document) }
        guard daemon != nil, !isResyncing else { return [] }
        return send(made)
    }

    /// What the copy sends now: if connected, live and not re-syncing, every operation the
    /// daemons have not acknowledged (``DeviceCopyPolicy/toSend(_:acknowledged:)``), as one edit.
    /// Call it only when every operation `document` applied is durable.
    public mutating func sendUnacknowledged(_ document: ListDocument) -> [Action] {
        guard daemon != nil, isLive, !isResyncing else { return [] }
        guard let ops = DeviceCopyPolicy.toSend(document, acknowledged: acknowledged) else { return [.cannotSend] }
        return ops.isEmpty ? [] : send(ops)
    }

    /// Sends `ops` on the current connection; a daemon sent operations of the device's own owes
    /// an answer for them (``UnansweredSends``).
    mutating func send(_ ops: [ListOperation]) -> [Action] {
        guard let daemon else { return [] }
        var recordFirst = false
        if ops.contains(where: { $0.id.replica == replica }) {
            recordFirst = unanswered.adds(daemon)
            unanswered.sent(to: daemon)
        }
        return [.send(ops, recordFirst: recordFirst)]
    }

    /// The driver sent `ops` (a ``Action/send(_:recordFirst:)``) as edit `edit` of its session.
    public mutating func sent(edit: UInt64, _ ops: [ListOperation]) {
        // All of them: the acknowledgement counts the device's own (and shares the sent array).
        inFlight[edit] = Edit(carried: ops, generation: resyncs)
    }

    // MARK: What the daemon says

    /// `subscribed`: the daemon holds `version`. Sending ahead, what of its own the daemon lacks
    /// goes now (with ``Sending/aheadWithOthers``, everything it lacks).
    public mutating func subscribed(_ version: VersionVector, document: ListDocument) -> [Action] {
        acknowledge(version, document)
        guard sending != .inOrder, !isResyncing else { return [] }
        var missing = document.operations(since: version)
        if sending == .ahead {
            missing.removeAll { $0.id.replica != replica || acknowledged.contains($0.lastID) }
        }
        return missing.isEmpty ? [] : send(missing)
    }

    /// Operations of the catch-up or of other devices arrived. Re-syncing, they build the
    /// daemon's copy (and complete the re-sync once `synced` came: ``replace``); otherwise the
    /// driver applies and stores them first (an empty list of actions never says so:
    /// `applies` is true), and what the daemon sent it holds
    /// (``DeviceCopyPolicy/acknowledgedByReceipt(_:)``).
    ///
    /// - Parameter prepare: adjusts the daemon's copy before the edits are made again on it.
    public mutating func received(_ ops: [ListOperation], document: ListDocument,
                                  prepare: (inout ListDocument) -> Void = { _ in },
                                  askable: (Daemon) -> Bool = { _ in true }) -> (applies: Bool, actions: [Action]) {
        if resyncing.receive(ops) {
            guard resyncing.synced != nil else { return (false, []) }
            return (false, caughtUp(document, prepare: prepare, askable: askable))
        }
        // ``DeviceCopyPolicy/acknowledgedByReceipt(_:)``, observed in place (no version built per batch).
        for op in ops { acknowledged.observe(op.lastID) }
        noteAcknowledged(document)
        return (true, Self.reportSeen)
    }

    /// The catch-up is a snapshot: the daemon's copy, for the re-sync.
    ///
    /// - Throws: ``ListCRDT/WireError`` for a snapshot that does not load; nothing changes then.
    public mutating func snapshot(_ bytes: [UInt8]) throws(WireError) {
        try resyncing.snapshot(bytes, replica: replica)
    }

    /// `synced`: the catch-up holds `version`. The copy is caught up (re-syncing, once the
    /// daemon's copy holds all of that and every edit of the device a daemon acknowledged:
    /// ``CopyResync/outcome(local:acknowledged:prepare:)``): it is live, sends what the daemons
    /// lack, and says what it has seen. First, the edits of its own that this daemon lacks and
    /// that only a daemon `askable` gives up acknowledged count as unacknowledged again
    /// (``resendGivenUp(holds:document:askable:)``), and so, once such a daemon is given up, do
    /// the operations of other authors this daemon lacks (``resendGivenUpCauses(holds:document:askable:)``).
    public mutating func synced(_ version: VersionVector, document: ListDocument,
                                prepare: (inout ListDocument) -> Void = { _ in },
                                askable: (Daemon) -> Bool = { _ in true }) -> [Action] {
        // Others' first: ``resendGivenUp(holds:document:askable:)`` cuts the runs it sends again.
        resendGivenUpCauses(holds: version, document: document, askable: askable)
        resendGivenUp(holds: version, document: document, askable: askable)
        acknowledge(version, document)
        resyncing.synced(version)
        return caughtUp(document, prepare: prepare, askable: askable)
    }

    /// Caught up: live, or, re-syncing, the outcome once ready. A re-sync from a snapshot that
    /// was not asked for by a refusal (the copy was left behind the daemon's floor) makes again
    /// the unsent edits made before that floor: this daemon will never take them, which is a
    /// refusal of them, and final only as one is (``UnansweredSends``): another daemon they were
    /// sent to without an answer may hold them (a daemon left out of that floor, whose
    /// acknowledgement was lost). Made again here while it holds them, they would exist twice
    /// (a value shown twice, an increment counted twice: seed 3300 of `listsync simulate
    /// --daemons 3 --compact-after 10 --hide-daemon --roam 30 --crashes 1 --ops 80`). So the
    /// re-sync is dropped and the copy goes back to that daemon first (``Action/settle(at:)``).
    mutating func caughtUp(_ document: ListDocument, prepare: (inout ListDocument) -> Void,
                           askable: (Daemon) -> Bool = { _ in true }) -> [Action] {
        if isResyncing {
            guard let outcome = resyncing.outcome(local: document, acknowledged: acknowledged, parted: parted,
                                                  remakesParted: remakesPartedUnsent,
                                                  prepare: prepare) else { return [] }
            if !resyncing.afterRefusal, !remakesOnFirstRefusal, let daemon,
               !unanswered.daemons.subtracting([daemon]).isEmpty,
               outcome.made.map(\.id) != outcome.unsent.map(\.id),
               case let .settle(other) = unanswered.refused(by: daemon, askable: askable) {
                resyncing.finish()
                // A re-sync for parted originals shown is dropped too: asked again at the next
                // `synced` once the other daemon answered.
                resyncedForParted = PartedRanges()
                return [.saveRecord, .settle(at: other)]
            }
            return [.replace(outcome)]
        }
        return goLive(document)
    }

    mutating func goLive() -> [Action] {
        isLive = true
        return [.live] + (sending == .inOrder ? [.sendUnacknowledged] : []) + [.saveRecord, .reportSeen]
    }

    /// Caught up and not re-syncing (`synced`): live, and what it keeps waiting on parted
    /// originals it was told of before this catch-up brought them is dropped
    /// (``dropsPartedWaiting(_:)``).
    mutating func goLive(_ document: ListDocument) -> [Action] {
        goLive() + dropsPartedWaiting(document) + resyncsForPartedShown(document)
    }

    /// The driver made the re-sync's outcome the copy (`document`, durably): the re-sync is
    /// over, the daemon holds what the outcome says, and the copy is caught up. Sending ahead,
    /// the edits made again go at once.
    public mutating func replaced(_ outcome: CopyResync.Outcome, document: ListDocument) -> [Action] {
        resyncing.finish()
        acknowledged.formUnion(outcome.held)
        noteAcknowledged(document)
        resyncs += 1
        var actions: [Action] = [.saveRecord]
        if !outcome.made.isEmpty, sending != .inOrder, daemon != nil { actions += send(outcome.made) }
        actions.append(.reportSeen)
        let remade = Self.remadeOriginals(outcome)
        if !remade.isEmpty, !keepsRemadeUnannounced, daemon != nil { actions.append(.announceRemade(remade)) }
        return actions + goLive()
    }

    /// The device's own edits a re-sync made again under new ids: those of `outcome.unsent` that
    /// are not among `outcome.made` (an edit after a floor the copy holds is kept as it is), as
    /// runs of their counters.
    ///
    /// - Complexity: O(u log u) for u unsent edits.
    static func remadeOriginals(_ outcome: CopyResync.Outcome) -> PartedRanges {
        let kept = Set(outcome.made.map(\.id))
        var runs = PartedRanges()
        for op in outcome.unsent where !kept.contains(op.id) { runs.insert(op) }
        return runs
    }

    /// Edit `edit` was answered (`result`, the session's). Acknowledged: what it carried is held
    /// (``DeviceCopyPolicy/acknowledgedByEdit(_:version:acknowledged:local:)``). Refused for the
    /// floor: see ``refusedForFloor(_:document:askable:)``. Either way, a refusal that waited
    /// for this answer may be acted on now.
    ///
    /// - Parameter askable: whether a daemon may still be asked (one no longer among the
    ///   device's daemons is given up, with what it may hold).
    public mutating func answered(edit: UInt64, _ result: Result<VersionVector, ClientSessionError>, document: ListDocument,
                                  askable: (Daemon) -> Bool = { _ in true }) -> [Action] {
        guard let sent = inFlight.removeValue(forKey: edit) else { return [] }
        var actions: [Action] = []
        switch result {
        case let .failure(error):
            if case let .refused(.compacted, text) = error {
                // What the daemon says it took of the edit is acknowledged: only the rest is
                // refused (a daemon of an older build says nothing: all of it is).
                if let taken = TakenInPart(text: text) {
                    acknowledged = DeviceCopyPolicy.acknowledgedByRefusal(sent.carried, taken: taken,
                                                                          acknowledged: acknowledged, local: document)
                    noteAcknowledged(document)
                }
                // A refusal of edits a re-sync made again since (sent ahead) is answered.
                if sent.generation == resyncs { actions += refusedForFloor(text, document: document, askable: askable) }
            } else {
                actions.append(.editFailed(error))
            }
            return actions + answeredAll(document, askable: askable)
        case let .success(version):
            // What the daemon keeps waiting for its causes is acknowledged too, in order.
            acknowledged = DeviceCopyPolicy.acknowledgedByEdit(sent.carried, version: version, acknowledged: acknowledged,
                                                               local: document)
            noteAcknowledged(document)
            let after = answeredAll(document, askable: askable)
            // The common answer without an array built for it.
            if after.isEmpty { return inFlight.isEmpty ? Self.saveRecordAndReportSeen : Self.reportSeen }
            if inFlight.isEmpty { actions.append(.saveRecord) }
            return actions + after + [.reportSeen]
        }
    }

    /// Edits of the device were refused for the compaction floor (an edit's answer, or an error
    /// for the document): it was left behind (retired while away), or its edits are of a replica
    /// no daemon counts. Acted on once every batch in flight is answered (``RefusalWait``), and
    /// final only once every daemon it sent them to refused (``UnansweredSends``): until then it
    /// goes back to one of those (``Action/settle(at:)``). Final, the copy re-syncs from nothing
    /// and makes its unsent edits again (``CopyResync``).
    public mutating func refusedForFloor(_ text: String, document: ListDocument,
                                         askable: (Daemon) -> Bool = { _ in true }) -> [Action] {
        [.refusedForFloor(text)] + actOnRefusal(document, askable: askable)
    }

    mutating func actOnRefusal(_ document: ListDocument, askable: (Daemon) -> Bool) -> [Action] {
        guard let daemon, !isResyncing else { return [] }
        // Every later batch's answer first: one may still take the refused edits.
        guard refusal.refused(inFlight: inFlight.count) else { return [] }
        let verdict = unanswered.refused(by: daemon, askable: askable)
        if case let .settle(other) = verdict, !remakesOnFirstRefusal {
            // Another daemon may hold what this one refused: ask it first.
            return [.saveRecord, .settle(at: other)]
        }
        resyncing.begin(replica: replica, afterRefusal: !keepsRefusedEdits)
        return [.saveRecord, .resubscribe]
    }

    /// A batch was answered: a refusal that waited for every batch is acted on now, unless the
    /// later batches took every edit of the device.
    mutating func answeredAll(_ document: ListDocument, askable: (Daemon) -> Bool) -> [Action] {
        guard refusal.answered(inFlight: inFlight.count, unacknowledged: hasUnacknowledged(document)) else { return [] }
        return actOnRefusal(document, askable: askable)
    }

    /// The daemon compacted at `floor` (`stable`): whether the copy compacts there too
    /// (``DeviceCopyPolicy/compactsAtFloor(_:version:historyFloor:resyncing:)``). The driver
    /// compacts, then calls ``compacted(at:document:)``.
    ///
    /// Only at a stable prefix of the copy (``ListDocument/compactablePrefix(within:)`` is the
    /// floor): a daemon without peers compacts keeping concurrent operations (Docs/Semantics.md
    /// §7, "Compacting under a chain of concurrent edits"), and a copy that holds some outside
    /// the floor keeps its history until a later floor.
    ///
    /// - Complexity: O(m × r) for m operations logged since the copy's floor and r replicas.
    public func compacts(at floor: VersionVector, document: ListDocument) -> Bool {
        DeviceCopyPolicy.compactsAtFloor(floor, version: document.version, historyFloor: document.historyFloor,
                                         resyncing: isResyncing)
            && (document.version == floor || document.compactablePrefix(within: floor) == floor)
    }

    /// The copy compacted at `floor`: the daemon holds it (it compacted there, durably), so what
    /// it acknowledged is at least that; without it, the record could name a version the copy's
    /// history no longer goes back to.
    public mutating func compacted(at floor: VersionVector, document: ListDocument) -> [Action] {
        acknowledge(floor, document)
        return [.saveRecord]
    }

    // MARK: Acknowledgements

    mutating func acknowledge(_ version: VersionVector, _ document: ListDocument) {
        acknowledged.formUnion(version)
        noteAcknowledged(document)
    }

    /// Once every edit of the device is acknowledged (by one daemon or another), no daemon owes
    /// an answer. The edits newly counted are the current daemon's (``acknowledgedBy``).
    mutating func noteAcknowledged(_ document: ListDocument) {
        if let daemon { acknowledgedBy.record(through: acknowledged[replica], by: daemon) }
        if !hasUnacknowledged(document) { unanswered.allAcknowledged() }
    }

    /// An edit only a forgotten daemon held (Docs/Semantics.md §7): the daemon caught up with
    /// holds `version`; the device's own edits it lacks, from the first one that only a daemon
    /// `askable` gives up acknowledged (its operator took it out of the device's daemons: lost
    /// for good), count as unacknowledged again, so that they are sent again under their ids
    /// (or, refused for a floor, made again as any unsent edit). Not those before the copy's
    /// floor (every daemon held them), nor one the daemons parted (``parted``: made again by the
    /// daemon that parted it). An edit a live daemon acknowledged is never sent again by this
    /// rule: a daemon left out of a peer's floor may make it again in its merge back.
    ///
    /// - Complexity: O(r + p) for r runs of ``acknowledgedBy`` and p parted counters; when some
    ///   edit is given up, O(l + k) more for the l log records and the k operations of the device
    ///   after what the daemon holds.
    mutating func resendGivenUp(holds version: VersionVector, document: ListDocument, askable: (Daemon) -> Bool) {
        guard !keepsGivenUpAcknowledgements else { return }
        let own = replica, upTo = acknowledged[own]
        let partedRuns = parted.runs[own] ?? []
        let isParted: (UInt64) -> Bool = { c in partedRuns.contains { $0.contains(c) } }
        let after = max(version[own], document.historyFloor?[own] ?? 0)
        guard acknowledgedBy.firstGivenUp(after: after, floor: 0, askable: askable, parted: isParted) != nil else { return }
        // The first operation of the device's own so (counters between operations name none);
        // the acknowledgement goes down to the device's operation before it (or to what the
        // daemon holds): a counter no operation ends on would be waited for by a re-sync.
        var counters = document.version.counters
        counters[own] = after
        var before = after
        var first: UInt64?
        for op in document.operations(since: VersionVector(counters)) where op.id.replica == own && op.id.counter <= upTo {
            if !isParted(op.id.counter), acknowledgedBy.daemon(of: op.id.counter).map({ !askable($0) }) == true {
                first = op.id.counter
                break
            }
            before = op.lastID.counter
        }
        guard first != nil else { return }
        counters = acknowledged.counters
        counters[own] = before   // (a zero counter is dropped)
        acknowledged = VersionVector(counters)
        acknowledgedBy.truncate(through: before)
        givenUpResends += 1
    }

    /// Others' edits only a forgotten daemon held (Docs/Semantics.md §7): the daemon caught up
    /// with holds `version` and lacks edits of the device's own (it keeps them waiting for their
    /// causes, or has not had them yet), and a daemon that acknowledged edits of the device is
    /// given up (`askable` says it cannot be asked: its operator took it out of the device's
    /// daemons). The operations of other authors the copy holds past `version` (and past the
    /// copy's floor: every daemon held that) count as unacknowledged again, so that they go with
    /// the device's own, oldest first, under their ids: the given-up daemon may have been the only
    /// one to hold them (a client that keeps no copy made them there), and the device's edits made
    /// on them would wait for them for ever. One a live daemon holds reaches this one relayed as
    /// well: the same operation, taken once.
    ///
    /// - Complexity: O(r) for r runs of ``acknowledgedBy`` and the replicas of the versions.
    mutating func resendGivenUpCauses(holds version: VersionVector, document: ListDocument, askable: (Daemon) -> Bool) {
        guard !keepsGivenUpCauses, document.version[replica] > version[replica],
              acknowledgedBy.names(where: { !askable($0) }) else { return }
        let floor = document.historyFloor
        var counters = acknowledged.counters
        var lowered = false
        for (r, c) in counters where r != replica {
            let held = max(version[r], floor?[r] ?? 0)
            if c > held {
                counters[r] = held   // (a zero counter is dropped)
                lowered = true
            }
        }
        guard lowered else { return }
        acknowledged = VersionVector(counters)
        givenUpCausesResends += 1
    }
}
