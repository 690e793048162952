import Foundation
import ListCRDT
import ListTable
import ListStore
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSync

/// What a simulation does.
public struct SimulationConfiguration: Sendable {
    /// Number of clients (replicas that edit), each connected to one daemon.
    public var replicas = 4
    /// Number of daemons, each peered with the next (a chain): the production state machines.
    public var daemons = 1
    /// With three daemons or more, the first is peered with the last too (a ring: a cycle of links).
    public var ring = false
    /// Daemon crashes (each loses the bytes its disk had not synced, a torn last write, every
    /// connection), at random points; each daemon restarts at once and recovers from its disk.
    public var crashes = 0
    /// Percent of clients that forget their copy after each acknowledged edit (a command-line
    /// client that exits): what they made lives only on the daemons.
    public var forgetfulPercent = 25
    /// With several daemons: percent of clients that know every daemon (a device whose
    /// `Server.alternates` name the others, its own daemon first): the device's connection
    /// policy (``ReconnectMachine``) moves them to the next daemon after each lost connection,
    /// and back to one that may hold edits another refused. The others know only their own
    /// daemon. 0: each client keeps its daemon.
    public var roamPercent = 0
    /// Number of local edits, spread over the replicas at random.
    public var operations = 200
    /// The seed: the same seed and configuration replay the same run exactly.
    public var seed: UInt64 = 1
    /// The network's faults while edits are made (healed and quiet afterwards).
    public var faults = NetworkFaults.standard
    /// Number of partition episodes: each cuts a random link for a random while.
    public var partitions = 2
    /// Percent of edits made as a drag session that receives remote operations before the drop.
    public var dragPercent = 10
    /// Virtual milliseconds between a replica's anti-entropy hellos.
    public var antiEntropyInterval: UInt64 = 60
    /// Virtual milliseconds between edits (drawn from 1 up to this).
    public var editInterval: UInt64 = 8
    /// With compaction: an unpeered daemon also compacts a busy document at the stable prefix its
    /// senders allow (``CompactionRule/stablePrefixes``), as `listsync serve` does by default;
    /// off with `--compact-quiescent-only`.
    public var compactsStablePrefixes = true
    /// The mix of edits.
    public var workload = Workload()
    /// Compaction (Docs/Semantics.md §7): nil, none; otherwise each daemon compacts once this
    /// many operations were logged since its last compaction and every sender has seen all of
    /// them, as a daemon's host does; with several daemons, once every daemon's stability table
    /// (gossiped over the links) says so too (§7, "Peers"). Clients report `seen`;
    /// with one daemon, silent ones are retired, and those left behind the floor re-sync from a
    /// snapshot and make their unsent edits again (``ListDocument/remake(_:from:)``). With
    /// several daemons the same, once every daemon acknowledged the retirement (§7, "Retiring
    /// with peers").
    public var compactAfter: Int?
    /// With compaction: a daemon also compacts once the bytes a compaction would free reach
    /// ``reclaimableShare`` of the document's bytes and this many (nil: only after
    /// ``compactAfter`` operations), the daemon's rule (``CompactionTrigger``), at its defaults.
    public var reclaimableFloor: Int? = CompactionTrigger.defaultFloor
    /// With compaction: the share of ``reclaimableFloor``'s trigger.
    public var reclaimableShare = CompactionTrigger.defaultShare
    /// The log size in bytes past which a daemon snapshots the document (a new generation), the
    /// daemon's ``ListSync/DocumentHostPolicy`` with `listsync serve --snapshot-log-bytes`
    /// scaled down to the simulator's short logs (the daemon's default is 4 MiB).
    public var snapshotLogBytes: Int64 = SimulationConfiguration.defaultSnapshotLogBytes
    /// The simulator's default ``snapshotLogBytes``: 4 KiB, a few snapshots a run.
    public static let defaultSnapshotLogBytes: Int64 = 4 << 10
    /// With compaction: virtual milliseconds after which a silent sender is retired (the
    /// stability's clock counts virtual milliseconds where a daemon's counts seconds).
    public var retireAfter: UInt64 = 30
    /// With compaction: virtual milliseconds between two `seen` reports of one client.
    public var seenInterval: UInt64 = 10
    /// With compaction: clients send as the simulator's clients do without it
    /// (``DeviceClientMachine/Sending/ahead``): each edit's operations at once (even while
    /// subscribing), and what of their own the daemon lacks on `subscribed`. Off: the device's
    /// rule (``DeviceClientMachine/Sending/inOrder``, which SyncClient runs): everything the
    /// daemon has not acknowledged, in order, once caught up (`synced`) and after each edit while
    /// live. On, an edit can reach the daemon before the earlier ones it depends on (a known
    /// issue with compaction: see SimulatorTests).
    public var sendsAhead = false
    /// A deliberately broken engine, for measuring the simulator's power (tests only).
    @_spi(Testing) public var variant = EngineVariant.correct
    /// A deliberately broken engine for the daemons' copies (``variant`` breaks the clients'): kept
    /// across crashes and compactions, not in a copy replaced by a peer's snapshot (tests only).
    @_spi(Testing) public var daemonVariant = EngineVariant.correct
    /// A deliberately broken document core (acknowledge before the sync), likewise.
    @_spi(Testing) public var coreVariant = DocumentCore.Variant.correct
    /// A deliberately broken disk (tests of the harness's power): `fdatasync` makes nothing
    /// durable (``SimulatedFileSystem/ignoresFdatasync``), as if the log acknowledged its appends
    /// without syncing them.
    @_spi(Testing) public var diskSkipsFdatasync = false
    /// A deliberately broken client (tests of the harness's power): it takes every refusal as
    /// final and makes its edits again at once, as clients did before ``UnansweredSends``.
    @_spi(Testing) public var remakesOnFirstRefusal = false
    /// With compaction and several daemons: once quiet, the last daemon is lost for good (its
    /// machine gone), the operator forgets it on one of the others (`--forget-peer`), and the
    /// clients edit on for half as many edits again (``Simulator/loseDaemon()``).
    public var losesDaemon = false
    /// With compaction and several daemons: the last daemon is lost for good (and forgotten, as
    /// with ``losesDaemon``) right after a client counts acknowledged an edit of its own that no
    /// other daemon holds, from the fourth of the edits on (its relay is lost with it;
    /// ``Simulator/loseDaemonIfUnrelayed(from:to:)``); if that never happens, once quiet as
    /// ``losesDaemon`` does. The clients edit on. Docs/Semantics.md §7, "An edit only a
    /// forgotten daemon held".
    public var losesDaemonEarly = false
    /// With compaction and several daemons: the first daemon is hidden (Docs/Semantics.md §7, "A
    /// copy left out of a peer's floor"): no peer ever heard of it (its links' first `seen` never
    /// arrived, no table of it reached anyone) and its links stay down while the clients edit,
    /// its own clients included; once quiet, the others compact without it, then its links come
    /// up: its copy holds acknowledged operations made before their floor, and is merged back
    /// (``Simulator/unhideDaemon()``).
    public var hidesDaemon = false
    /// With ``hidesDaemon``: the hidden daemon is the last one, which only accepts links (each
    /// link's dialer is the lower number), not the first, which dials (Docs/Semantics.md §7, "A
    /// left-out daemon that only accepts links"): its peers' links offer it their snapshot when
    /// their catch-up of it is one or when their core refuses its operations for their floor
    /// (`listsync simulate --hide-accepting-daemon`).
    public var hidesAcceptingDaemon = false
    /// With compaction and several daemons: the last daemon is forgotten while it still runs (an
    /// operator's mistake, Docs/Semantics.md §7, "Forgetting a daemon"): in the second quarter of
    /// the edits its peer links are cut and kept down, and the operator forgets it on one of the
    /// others (`--forget-peer`); its clients keep editing on it; a quarter of the edits or more
    /// later (or once quiet) its links come back (``Simulator/cutAndForgetLive()``,
    /// `listsync simulate --forget-live`).
    public var forgetsLiveDaemon = false
    /// Links of builds before `floorSnapshot` (tests of the harness's power): they never offer
    /// their daemon's snapshot to a peer whose operations it refused for its floor
    /// (``ListSync/PeerSession`` with `offersFloor` false).
    @_spi(Testing) public var linksOfferFloor = true
    /// With compaction and crashes: every crash of a daemon also loses its stability file (a
    /// disk replaced, a backup restored without it; Docs/Semantics.md §7, "The retire rule" and
    /// "A copy left out of a peer's floor"): the daemon restarts counting no sender, no relay
    /// author, and (with peers) no table, its peers' tables holding its entry of before.
    public var losesStability = false
    /// Daemons of the build before ``ListSync/ServerSession/isPeerLink`` (tests of the harness's
    /// power): a daemon notes that it has peers only when a link it already knows as a peer's
    /// (by an earlier `seen` or table) subscribes, not at the link's first subscription, `seen` or
    /// table; one that only accepts links and loses its stability file in between ends the
    /// loss by the retire period.
    @_spi(Testing) public var notesPeerLinksOnlyWhenKnown = false
    /// A deliberately absent operator (tests of the harness's power): the lost daemon is not forgotten.
    @_spi(Testing) public var forgetsLostDaemon = true
    /// A deliberately broken client (tests of the harness's power): after a refusal it keeps the
    /// edits made after the floor as they are, as clients did before `remake(_:from:refused:)`.
    @_spi(Testing) public var keepsRefusedEdits = false
    /// A deliberately broken client (tests of the harness's power): an edit only a daemon lost
    /// since acknowledged stays acknowledged, never sent again, as clients did before
    /// ``ListSync/AcknowledgingDaemons``.
    @_spi(Testing) public var keepsGivenUpAcknowledgements = false
    /// A deliberately broken client (tests of the harness's power): others' operations the daemon
    /// it caught up with lacks are never sent once a daemon is lost, as clients did before
    /// Docs/Semantics.md §7, "Others' edits only a forgotten daemon held"
    /// (``ListSync/DeviceClientMachine/keepsGivenUpCauses``).
    @_spi(Testing) public var keepsGivenUpCauses = false
    /// A deliberately broken client (tests of the harness's power): a copy told what the daemons
    /// parted keeps waiting what waits on it, as clients did before
    /// ``ListSync/DeviceClientMachine/Action/dropPartedWaiting``.
    @_spi(Testing) public var keepsPartedWaiting = false
    /// A deliberately broken client (tests of the harness's power): a copy told what the daemons
    /// parted keeps showing a section or item a range names, as clients did before
    /// ``ListSync/DeviceClientMachine/resyncsForPartedShown(_:)``.
    @_spi(Testing) public var keepsPartedShown = false
    /// Clients whose re-sync for parted originals shown makes every unsent edit again and takes
    /// the snapshot as final (``ListSync/DeviceClientMachine/resyncsForPartedAsRefused``).
    @_spi(Testing) public var resyncsForPartedAsRefused = false
    /// Clients that never tell their daemon which of their edits a re-sync made again
    /// (``ListSync/DeviceClientMachine/keepsRemadeUnannounced``).
    @_spi(Testing) public var keepsRemadeUnannounced = false
    /// Clients whose re-sync makes again an unsent edit of their own that a parted range names
    /// (``ListSync/DeviceClientMachine/remakesPartedUnsent``).
    @_spi(Testing) public var remakesPartedUnsent = false
    /// Notes a line per frame delivered and per step of the run (``Simulator/traceLines``,
    /// `listsync simulate --trace`): the same seed gives the same lines.
    public var trace = false

    /// The `listsync simulate` arguments that replay this configuration's run (the knobs the
    /// command takes; faults and partitions at their defaults).
    /// The bytes trigger's flags, when not the defaults.
    private var deadBytesArguments: String {
        guard let floor = reclaimableFloor else { return " --compact-dead-share off" }
        return (reclaimableShare != CompactionTrigger.defaultShare ? " --compact-dead-share \(reclaimableShare)" : "")
            + (floor != CompactionTrigger.defaultFloor ? " --compact-dead-floor \(floor)" : "")
    }

    public var replayArguments: String {
        "--seed \(seed) --replicas \(replicas) --ops \(operations) --daemons \(daemons)" + (ring ? " --ring" : "")
            + " --crashes \(crashes)"
            + (snapshotLogBytes != Self.defaultSnapshotLogBytes ? " --snapshot-log-bytes \(snapshotLogBytes)" : "")
            + (compactAfter.map { " --compact-after \($0) --retire-after \(retireAfter)" } ?? "")
            + (compactAfter != nil ? deadBytesArguments : "")
            + (sendsAhead ? " --sends-ahead" : "") + (editInterval == 1 ? " --busy" : "")
            + (!compactsStablePrefixes && compactAfter != nil ? " --compact-quiescent-only" : "") + (roamPercent > 0 ? " --roam \(roamPercent)" : "")
            + (losesDaemon ? " --lose-daemon" : "") + (losesDaemonEarly ? " --lose-daemon-early" : "") + (hidesAcceptingDaemon ? " --hide-accepting-daemon" : hidesDaemon ? " --hide-daemon" : "")
            + (forgetsLiveDaemon ? " --forget-live" : "")
            + (losesStability ? " --lose-stability" : "") + " --field-writes \(workload.fieldWrites)"
            + (workload.textEdits > 0 ? " --text-edits \(workload.textEdits)" : "")
            + (workload.dragFieldWrites > 0 ? " --drag-field-writes \(workload.dragFieldWrites)" : "")
            + (workload.sectionInsertFields > 0 ? " --section-insert-fields \(workload.sectionInsertFields)" : "")
    }

    /// The defaults: 4 replicas, 200 edits, standard faults, 2 partitions.
    public init() {}
}

/// What a simulation found.
public struct SimulationReport: Sendable, CustomStringConvertible {
    public var seed: UInt64 = 0
    public var replicas = 0
    /// Daemons, and the crashes they had.
    public var daemons = 0, crashes = 0
    /// Operations daemons acknowledged to clients, and how many of those a crash lost.
    public var acknowledged = 0, acknowledgedLost = 0
    /// Over the crashes: bytes of files the simulated file system dropped (written, not synced),
    /// bytes of torn writes it kept, and damaged log tails the store's recovery put aside.
    public var crashBytesLost = 0, crashTornBytesKept = 0, crashTailsKeptAside = 0
    /// Edits made (and operations created).
    public var edits = 0, operations = 0, moves = 0, drags = 0
    /// Edits that wrote fields (one operation each), the field changes they made, and how many
    /// of those were counter increments.
    public var fieldWrites = 0, fieldChanges = 0, increments = 0
    /// Of those, the field writes made on an item while it was being dragged
    /// (``Workload/dragFieldWrites``), and how many the dragging client made itself.
    public var dragFieldWrites = 0, dragFieldWritesByDragger = 0
    /// Text splices made (``Workload/textEdits``).
    public var textEdits = 0
    /// Sections inserted with their first fields (``Workload/sectionInsertFields``), one
    /// operation each; counted in ``fieldWrites`` too.
    public var sectionFieldInserts = 0
    /// Presence messages clients sent, and received (relayed by their daemon).
    public var presenceSent = 0, presenceReceived = 0
    public var framesSent = 0, framesDelivered = 0, framesDropped = 0, framesDuplicated = 0, bytesSent = 0
    /// Virtual time at the end, in milliseconds.
    public var virtualTime: UInt64 = 0
    /// Anti-entropy rounds needed after healing.
    public var quiescenceRounds = 0
    /// Visible sections and items at the end.
    public var sections = 0, items = 0
    /// With compaction: compactions, senders retired, snapshot catch-ups clients loaded, edits
    /// they made again on one (operations), and batches refused with `compacted`.
    public var compactions = 0, retired = 0, snapshots = 0, remade = 0, refusedCompacted = 0
    /// Compactions at a stable prefix: at a floor short of the daemon's version, while some
    /// operation it held was not acknowledged by every sender (Docs/Semantics.md §7, "A stable prefix").
    public var prefixCompactions = 0
    /// Snapshots the daemons' policy wrote as their logs grew (``SimulationConfiguration/snapshotLogBytes``).
    public var logSnapshots = 0
    /// Clients that compacted their copy where their daemon had (told by `stable`).
    public var clientCompactions = 0
    /// Re-syncs from a catch-up of operations: a daemon that did not compact refused an edit of
    /// a replica no daemon counts (Docs/Semantics.md §7, "Replicas no daemon counts").
    public var operationResyncs = 0
    /// With compaction: each daemon's compactions, and the stability tables daemons sent each other.
    public var compactionsPerDaemon: [Int] = [], stabilityGossips = 0
    /// Whether the run compacted (the report then says what compaction did).
    public var compacting = false
    /// Reconnects on which a client connected to another daemon than before (``SimulationConfiguration/roamPercent``).
    public var roams = 0
    /// Clients' connections after a wait (every one but each client's first): what their
    /// connection policy (``ListSync/ReconnectMachine``) dialled.
    public var reconnects = 0
    /// Refusals after which a client went back to another daemon it had sent the refused operations to.
    public var settles = 0
    /// Daemons lost for good, and the times a daemon forgot one on its operator's word (the
    /// others forget it through the gossip; ``SimulationConfiguration/losesDaemon``).
    public var daemonsLost = 0, daemonsForgotten = 0
    /// Of the daemons lost, those lost right after acknowledging an edit no other daemon held
    /// (``SimulationConfiguration/losesDaemonEarly``); and the times a client counted edits only
    /// a lost daemon acknowledged unacknowledged again, to send them again.
    public var daemonsLostEarly = 0, givenUpResends = 0
    /// The times a client counted others' operations the daemon it caught up with lacked
    /// unacknowledged again, a daemon that acknowledged its edits being lost.
    public var givenUpCausesResends = 0
    /// Operations only the lost daemon held that it acknowledged to a client that keeps no copy
    /// (a forgetful one): lost with it by design, and left out of ``copiesParted``.
    public var lostWithoutACopy = 0
    /// Daemons forgotten while they still ran (``SimulationConfiguration/forgetsLiveDaemon``);
    /// of those, the episodes that provoked the case (when the cut healed, the forgotten daemon
    /// alone held operations it acknowledged, and the others had compacted without it); the
    /// operations it alone held then, and the others' compactions during the cuts.
    public var daemonsForgottenLive = 0, forgottenLiveProvoked = 0, forgottenLiveAlone = 0, forgottenLiveCompactions = 0
    /// Copies merged back onto a peer's compacted copy they were left out of, and the operations
    /// made again by them (``SimulationConfiguration/hidesDaemon``).
    public var mergesBack = 0, mergedBackOperations = 0
    /// Operations clients dropped from their causal buffers, told what the daemons parted:
    /// originals, and edits on them, that the daemons made again (Docs/Semantics.md §7, "A device
    /// drops what waits on parted originals").
    public var partedWaitingDropped = 0
    /// Times a device told its daemon which of its edits a re-sync made again (`remade`;
    /// Docs/Semantics.md §7, "An edit its author made again").
    public var remadeAnnounced = 0
    /// Operations some daemon acknowledged that are missing, at the end, from some copy (neither
    /// there nor made again by a merge back): copies that parted. Always a failure.
    public var copiesParted = 0

    /// An empty report (runs fill theirs in; tests add reports up in one with ``addCounts(of:)``).
    public init() {}

    /// Adds `other`'s counts (daemons, crashes, acknowledged, edits, frames and bytes, and what
    /// compaction did) to this report's: a total over many runs. Failures and per-run figures
    /// (seed, time, what is visible at the end) are not added.
    public mutating func addCounts(of other: SimulationReport) {
        daemons += other.daemons; crashes += other.crashes
        acknowledged += other.acknowledged; acknowledgedLost += other.acknowledgedLost
        crashBytesLost += other.crashBytesLost; crashTornBytesKept += other.crashTornBytesKept
        crashTailsKeptAside += other.crashTailsKeptAside
        edits += other.edits; operations += other.operations; moves += other.moves; drags += other.drags
        fieldWrites += other.fieldWrites; fieldChanges += other.fieldChanges; increments += other.increments
        dragFieldWrites += other.dragFieldWrites; dragFieldWritesByDragger += other.dragFieldWritesByDragger
        textEdits += other.textEdits; sectionFieldInserts += other.sectionFieldInserts
        framesSent += other.framesSent; bytesSent += other.bytesSent
        compactions += other.compactions; retired += other.retired; snapshots += other.snapshots
        prefixCompactions += other.prefixCompactions
        logSnapshots += other.logSnapshots
        remade += other.remade; refusedCompacted += other.refusedCompacted; operationResyncs += other.operationResyncs
        clientCompactions += other.clientCompactions; stabilityGossips += other.stabilityGossips
        roams += other.roams
        reconnects += other.reconnects
        settles += other.settles
        daemonsLost += other.daemonsLost
        daemonsForgotten += other.daemonsForgotten
        daemonsLostEarly += other.daemonsLostEarly; givenUpResends += other.givenUpResends
        givenUpCausesResends += other.givenUpCausesResends
        lostWithoutACopy += other.lostWithoutACopy
        daemonsForgottenLive += other.daemonsForgottenLive; forgottenLiveProvoked += other.forgottenLiveProvoked
        forgottenLiveAlone += other.forgottenLiveAlone; forgottenLiveCompactions += other.forgottenLiveCompactions
        mergesBack += other.mergesBack; mergedBackOperations += other.mergedBackOperations
        partedWaitingDropped += other.partedWaitingDropped
        remadeAnnounced += other.remadeAnnounced
        copiesParted += other.copiesParted
    }
    /// The daemons forgotten while running, in words (a run's report, the sweep's summary).
    public var forgottenLiveLine: String {
        "forgotten while running: \(daemonsForgottenLive) daemons, \(forgottenLiveProvoked) holding then operations they alone acknowledged"
            + " (\(forgottenLiveAlone) in all) past the others' \(forgottenLiveCompactions) compactions without them"
    }

    /// Every invariant that failed; empty when the run passed.
    public var failures: [String] = []

    /// Whether every check passed.
    public var passed: Bool { failures.isEmpty }

    public var description: String {
        var lines = [
            "seed \(seed): \(daemons) daemons, \(replicas) clients, \(crashes) crashes, \(edits) edits (\(moves) moves, \(drags) drags), \(operations) operations",
            "fields: \(fieldWrites) field writes, \(fieldChanges) field changes (\(increments) increments)"
                + (dragFieldWrites > 0 ? ", \(dragFieldWrites) on a dragged item (\(dragFieldWritesByDragger) by its dragger)" : ""),
            "acknowledged: \(acknowledged) operations, acknowledged lost: \(acknowledgedLost)",
            "presence: \(presenceSent) messages sent, \(presenceReceived) received",
            "network: \(framesSent) frames sent, \(framesDelivered) delivered, \(framesDropped) dropped, \(framesDuplicated) duplicated, \(bytesSent) bytes",
            "virtual time \(virtualTime) ms, quiet after \(quiescenceRounds) anti-entropy rounds; final document: \(sections) sections, \(items) items",
        ]
        if crashes > 0 {
            lines.append("crashes (the store on the simulated file system): \(crashBytesLost) bytes changed back, \(crashTornBytesKept) bytes of torn writes kept, \(crashTailsKeptAside) log tails put aside by recovery")
        }
        lines.append("store: \(logSnapshots) snapshots written by the daemons' policy as their logs grew")
        if roams > 0 { lines.append("roaming: \(roams) reconnects to another daemon, \(settles) back to settle a refusal") }
        if compacting {
            lines.append("compaction: \(compactions) compactions (\(prefixCompactions) at a stable prefix), \(retired) senders retired, \(snapshots) snapshot catch-ups, \(remade) operations remade, \(refusedCompacted) batches refused as compacted, \(operationResyncs) re-syncs from operations, \(clientCompactions) client compactions")
            if daemons > 1 {
                lines.append("peers: compactions per daemon \(compactionsPerDaemon), \(stabilityGossips) stability tables sent")
            }
        }
        if daemonsForgottenLive > 0 { lines.append(forgottenLiveLine) }
        if daemons > 1 {
            lines.append("copies parted: \(copiesParted), \(mergesBack) copies merged back (\(mergedBackOperations) operations made again)")
        }
        lines.append(passed ? "result: converged, all invariants hold" : "result: FAILED\n  " + failures.joined(separator: "\n  "))
        return lines.joined(separator: "\n")
    }
}


/// Runs daemons and clients, the production state machines (``DocumentCore``, ``ServerSession``,
/// ``ClientSession``, ``PeerSession``), over an ``InMemoryNetwork`` with faults and a
/// ``SimulatedDisk`` per daemon (the production store on a simulated file system) that crashes
/// lose unsynced bytes from, then heals everything, runs
/// anti-entropy until quiet, and checks: every operation a daemon acknowledged survived its
/// crashes; every replica (daemons and clients that kept their copy) converged to the same
/// snapshot and encoded state, with every identity once and nothing live lost (against
/// ``SemanticsOracle``); no operation applied twice; nothing pending; every internal invariant; a
/// stale epoch refused.
///
/// Deterministic: a seed replays exactly (the clock is virtual, every draw comes from the seed).
public struct Simulator: Sendable {
    public let configuration: SimulationConfiguration
    var rng: SplitMix64
    var network: InMemoryNetwork
    var daemons: [SimulatedDaemon]
    var clients: [SimulatedClient]
    /// Each client's state machine, the device client's own (``DeviceClientMachine``): what the
    /// daemons acknowledged, which of them owe an answer, a refusal waiting, a re-sync. Beside
    /// `clients`, not in it, so that an event reads the client's document where it lies while
    /// its machine changes (in one array, the document would be copied for each event).
    var machines: [DeviceClientMachine] = []
    var report = SimulationReport()
    var valueCounter = 0
    /// Connection generations, by `min << 32 | max` of the two nodes: a frame of an older one is dropped.
    var generations: [Int: UInt8] = [:]
    var roomDue: [(time: UInt64, daemon: Int, subscriber: Int)] = []
    var linkDue: [Int: UInt64] = [:]
    var nextAntiEntropy: UInt64 = 0
    let document = DocumentID(high: 0x5157_1A7E, low: 1)
    let epoch: UInt64 = 0xE90C
    /// With compaction: every operation a daemon logged, by id (the oracle's input at the end:
    /// the replicas' own logs start at their floors).
    var logged: [OpID: ListOperation] = [:]
    /// Operations a daemon logged (it kept them waiting for their causes) and then never applied,
    /// in a run of it a crash ended: woken, then refused as of a history their author left (it
    /// re-synced and made its edits again under later counters). The oracle leaves them out.
    var unappliedBeforeCrashes: [OpID: ListOperation] = [:]
    /// Operations appended and not yet synced, by daemon and ticket (logged once durable: a
    /// crash loses them, and their ids may yet be counted in by a later operation of their author).
    var appending: [Int: [UInt64: [ListOperation]]] = [:]
    /// The daemon lost for good (``SimulationConfiguration/losesDaemon``): nothing reaches it or
    /// leaves it again, and the checks leave it out.
    var lost: Int?
    /// The daemon no peer knows yet, its links down (``SimulationConfiguration/hidesDaemon``).
    var hidden: Int?
    /// The daemon forgotten while it runs, while its peer links are cut
    /// (``SimulationConfiguration/forgetsLiveDaemon``).
    var cutOff: Int?
    /// The others' compactions when it was cut off.
    var compactionsBeforeCut = 0
    /// While the clients edit, with ``SimulationConfiguration/losesDaemonEarly``: the last
    /// daemon is lost once a client counts acknowledged an edit only it holds.
    var losesDaemonNow = false
    /// What the run did, a line each, when ``SimulationConfiguration/trace`` is on (else empty):
    /// the virtual time, then a frame delivered (from → to: the message) or a step.
    public internal(set) var traceLines: [String] = []
    /// Operations a daemon took and then made again (or left to their own daemon) when it merged
    /// back onto a peer's compacted copy: their edits are on every copy under other ids.
    var mergedBack: [OpID: ListOperation] = [:]
    /// Every id of those operations (a run's each).
    var mergedBackIDs: Set<OpID> = []
    var compacting: Bool { configuration.compactAfter != nil }
    /// Whether clients send as a device does (``DeviceClientMachine/Sending/inOrder``:
    /// everything unacknowledged, in order, once caught up).
    var sendsInOrder: Bool { compacting && !configuration.sendsAhead }

    /// A client's state machine, the device client's own (``DeviceClientMachine``), for a copy of
    /// `replica`'s: it sends in order with compaction (unless ``SimulationConfiguration/sendsAhead``),
    /// ahead without (carrying operations between daemons), and is broken as the configuration says.
    static func machine(_ replica: ReplicaID, _ configuration: SimulationConfiguration) -> DeviceClientMachine {
        let compacting = configuration.compactAfter != nil
        var machine = DeviceClientMachine(replica: replica, sending: !compacting ? .aheadWithOthers
                                                   : configuration.sendsAhead ? .ahead : .inOrder)
        machine.remakesOnFirstRefusal = configuration.remakesOnFirstRefusal
        machine.keepsRefusedEdits = configuration.keepsRefusedEdits
        machine.keepsGivenUpAcknowledgements = configuration.keepsGivenUpAcknowledgements
        machine.keepsGivenUpCauses = configuration.keepsGivenUpCauses
        machine.keepsPartedWaiting = configuration.keepsPartedWaiting
        machine.keepsPartedShown = configuration.keepsPartedShown
        machine.resyncsForPartedAsRefused = configuration.resyncsForPartedAsRefused
        machine.keepsRemadeUnannounced = configuration.keepsRemadeUnannounced
        machine.remakesPartedUnsent = configuration.remakesPartedUnsent
        return machine
    }

    /// Daemon `d` as its clients' machines name it: its index, two digits (so that names sort
    /// as the indices do: the least is asked first).
    static func daemonName(_ d: Int) -> DeviceClientMachine.Daemon { d < 10 ? "d0\(d)" : "d\(d)" }

    /// The index of the daemon a client's machine names.
    static func daemonIndex(_ name: DeviceClientMachine.Daemon) -> Int {
        guard let d = Int(name.dropFirst()) else { preconditionFailure("not a simulated daemon's name: \(name)") }
        return d
    }

    /// A simulator for one run.
    public init(_ configuration: SimulationConfiguration) {
        self.configuration = configuration
        rng = SplitMix64(seed: configuration.seed)
        network = InMemoryNetwork(seed: configuration.seed ^ 0x5EED, faults: configuration.faults)
        network.inOrder = true
        let d = max(1, configuration.daemons)
        daemons = (0..<d).map { SimulatedDaemon(node: $0, document: DocumentID(high: 0x5157_1A7E, low: 1), epoch: 0xE90C,
                                                 variant: configuration.coreVariant, skipsSyncs: configuration.diskSkipsFdatasync,
                                                 snapshotLogBytes: configuration.snapshotLogBytes, compaction: Self.compactionRule(configuration),
                                                 engineVariant: configuration.daemonVariant) }
        // A daemon that dials a peer has peers (the host's `--peer`, Daemon+Peered.swift).
        for (a, _) in configuration.links(d) { daemons[a].policy.compaction?.peered = true }
        clients = (0..<max(1, configuration.replicas)).map { c in
            var doc = ListDocument(replica: ReplicaID(UInt64(c) + 1))
            doc.variant = configuration.variant
            return SimulatedClient(node: d + c, daemon: c % d, document: doc)
        }
        machines = clients.map { Self.machine($0.document.replica, configuration) }
        // With peers too: a forgetful client's old replica vanishes and is retired by the daemon
        // that counts it, once silent; the daemons agree on it before compacting
        // (Docs/Semantics.md §7, "Retiring with peers").
        for c in clients.indices { clients[c].forgetful = rng.chance(configuration.forgetfulPercent) }
        // The daemons each client knows: its own, and with roaming maybe every other one after it.
        for c in clients.indices {
            let home = clients[c].daemon
            let roams = d > 1 && configuration.roamPercent > 0 && rng.chance(configuration.roamPercent)
            let known = roams ? (0..<d).map { (home + $0) % d } : [home]
            clients[c].reconnect = ReconnectMachine(addresses: known.map(Self.daemonName), backoff: Self.reconnectBackoff)
        }
        report.seed = configuration.seed
        report.replicas = clients.count
        report.daemons = d
        report.compacting = configuration.compactAfter != nil
        report.compactionsPerDaemon = Array(repeating: 0, count: d)
        if d > 1 && configuration.compactAfter != nil {
            // Every daemon starts with the document, as if it had been copied through the links
            // before the run: each has heard of the others (a daemon's copy of a peer's document
            // exists only once its link attached, and the peer noted it then). A hidden daemon's
            // peers have not: its first `seen` never reached them.
            if configuration.hidesDaemon { hidden = configuration.hidesAcceptingDaemon ? d - 1 : 0 }
            for i in daemons.indices {
                for j in daemons.indices where j != i && j != hidden { _ = daemons[i].core.notePeer(daemons[j].replica, now: 0) }
                do throws(StoreError) { try daemons[i].disk.saveStability(daemons[i].core.stability) } catch {
                    preconditionFailure("an empty simulated disk refused the stability: \(error)")
                }
            }
        }
    }

    /// The documents of the clients that kept theirs, then the daemons' (after ``run()``,
    /// converged if the run passed).
    public var replicaDocuments: [ListDocument] {
        clients.filter { !$0.forgetful }.map(\.document) + liveDaemons.map(\.core.document)
    }

    /// The daemons but the one lost for good.
    var liveDaemons: [SimulatedDaemon] { daemons.indices.filter { $0 != lost }.map { daemons[$0] } }

    static func ns(_ ms: UInt64) -> UInt64 { ms &* 1_000_000 }
    /// The virtual millisecond a moment in nanoseconds falls in, rounded up.
    static func ms(_ ns: UInt64) -> UInt64 { ns / 1_000_000 + (ns % 1_000_000 == 0 ? 0 : 1) }

    /// The clients' waits before reconnecting: the device's (0.5 s doubling to 15 s) scaled down
    /// to the simulator's virtual milliseconds, as the rest of its clocks are.
    static let reconnectBackoff = Backoff(initial: .milliseconds(60), maximum: .milliseconds(960))
    var nowNs: UInt64 { Self.ns(network.now) }

    /// Runs the simulation and checks the result.
    ///
    /// - Complexity: O(k · (r + log n)) for k edits on r replicas, plus anti-entropy.
    public mutating func run() -> SimulationReport {
        for (a, b) in configuration.links(daemons.count) where a != hidden && b != hidden { connectLink(a, b) }
        for c in clients.indices { reconnect(c, clients[c].reconnect.start()) }
        let n = clients.count
        let cuts = (0..<configuration.partitions).map { _ in
            (at: rng.below(max(configuration.operations, 1)), a: rng.below(n + daemons.count), b: rng.below(n + daemons.count),
             length: 1 + rng.below(max(configuration.operations / 4, 1)))
        }
        let crashes = (0..<configuration.crashes).map { _ in (at: rng.below(max(configuration.operations, 1)), daemon: rng.below(daemons.count)) }
        let forgetLive = scheduleForgetLive()
        nextAntiEntropy = configuration.antiEntropyInterval
        for edit in 0..<configuration.operations {
            stepToNextEdit()
            for c in cuts where c.a != c.b {
                if c.at == edit { network.partition(c.a, c.b) }
                if c.at + c.length == edit { network.heal(c.a, c.b) }
            }
            for c in crashes where c.at == edit && c.daemon != lost { crash(c.daemon) }
            if let f = forgetLive {
                if f.at == edit { cutAndForgetLive() }
                if f.heal == edit { healForgottenLive(settlingFirst: false) }
            }
            losesDaemonNow = configuration.losesDaemonEarly && edit >= configuration.operations / 4
            editSomewhere()
        }
        losesDaemonNow = false
        if hidden != nil { unhideDaemon() }
        if cutOff != nil { healForgottenLive(settlingFirst: true) }
        quiesce()
        if configuration.losesDaemon || configuration.losesDaemonEarly, compacting, daemons.count > 1, report.failures.isEmpty {
            if lost == nil { loseDaemon() }
            for _ in 0 ..< max(configuration.operations / 2, 1) {
                stepToNextEdit()
                editSomewhere()
            }
            quiesce()
        }
        settleCompaction()
        checkLostDaemonForgotten()
        checkPresenceEnded()
        check()
        report.framesSent = network.framesSent
        report.framesDelivered = network.framesDelivered
        report.framesDropped = network.framesDropped
        report.framesDuplicated = network.framesDuplicated
        report.bytesSent = network.bytesSent
        report.virtualTime = network.now
        report.acknowledged = daemons.reduce(0) { $0 + $1.acknowledged.count }
        report.givenUpResends += machines.reduce(0) { $0 + $1.givenUpResends }
        report.givenUpCausesResends += machines.reduce(0) { $0 + $1.givenUpCausesResends }
        return report
    }

    /// Runs the network up to the next edit's moment.
    mutating func stepToNextEdit() {
        let due = network.now + 1 + rng.next() % max(configuration.editInterval, 1)
        step(until: due)
    }

    /// One edit, or a drag, by a client picked at random.
    mutating func editSomewhere() {
        let r = rng.below(clients.count)
        if rng.chance(configuration.dragPercent) && clients[r].document.totalItemCount > 0 {
            drag(at: r)
        } else {
            makeEdit(at: r)
        }
    }

    // MARK: Time

    /// Delivers frames and fires timers up to `deadline`.
    mutating func step(until deadline: UInt64) {
        while true {
            let nextTimer = timers()
            let next = min(nextTimer ?? .max, deadline)
            let delivery = network.nextDelivery(until: next)
            // A frame a partition cut on its way: its connection resets, as one whose frame was
            // lost when sent does (a stream never skips a frame and goes on).
            for cut in network.takeCutInFlight() where cut.frame.first == generations[Self.key(cut.from, cut.to), default: 0] {
                let (d, other) = cut.from < daemons.count ? (cut.from, cut.to) : (cut.to, cut.from)
                if d < daemons.count { reset(daemon: d, other: other) }
            }
            if let d = delivery {
                network.advance(to: d.time)
                deliver(d)
                continue
            }
            network.advance(to: next)
            fireTimers()
            if next >= deadline { return }
        }
    }

    /// The earliest pending timer.
    func timers() -> UInt64? {
        var t: UInt64? = nil
        func take(_ x: UInt64?) { if let x, x < (t ?? .max) { t = x } }
        for d in daemons { take(d.disk.syncDue) }
        for r in roomDue { take(r.time) }
        for c in clients {
            take(c.reconnect.wakeAt.map(Self.ms))
            if c.connected { take(c.presence.nextDeadline.map { $0 / 1_000_000 + 1 }) }
            if c.connected, compacting { take(c.session.nextSeenDeadline.map { $0 / 1_000_000 + 1 }) }
        }
        for (_, x) in linkDue { take(x) }
        // A stability table waits for its interval: the host's housekeeping sends it.
        if compacting, daemons.contains(where: { $0.core.gossipDue }) { take(network.now + Self.gossipInterval) }
        take(nextAntiEntropy)
        return t
    }

    mutating func fireTimers() {
        let now = network.now
        for d in daemons.indices where (daemons[d].disk.syncDue ?? .max) <= now {
            daemons[d].disk.syncDue = nil
            daemons[d].disk.files.clockMillis = now
            for (ticket, error) in daemons[d].disk.sync() {
                if let error {
                    // Nothing fails on the simulated disk but by a crash: a failure here is a fault of the store.
                    report.failures.append("daemon \(d): append failed: \(error)")
                    performCore(d, daemons[d].core.appendFailed(ticket: ticket, reason: error.description))
                    continue
                }
                for op in appending[d]?.removeValue(forKey: ticket) ?? [] { logged[op.id] = op }
                // As the host: a snapshot if due, the batches released, then the housekeeping.
                let released = daemons[d].core.durable(ticket: ticket)
                housekeep(d, .committed(logBytes: daemons[d].disk.logSize))
                performCore(d, released)
                housekeep(d, .released)
            }
        }
        let due = roomDue.filter { $0.time <= now }
        roomDue.removeAll { $0.time <= now }
        for r in due { performCore(r.daemon, daemons[r.daemon].core.roomAvailable(SubscriberID(r.subscriber))) }
        for c in clients.indices where (clients[c].reconnect.wakeAt.map(Self.ms) ?? .max) <= now {
            reconnect(c, clients[c].reconnect.timerFired(now: nowNs))
        }
        for (k, t) in linkDue.sorted(by: { $0.key < $1.key }) where t <= now {
            let (a, b) = (k >> 32, k & 0xFFFF_FFFF)
            if a == lost || b == lost || a == hidden || b == hidden || a == cutOff || b == cutOff { linkDue[k] = nil } else { connectLink(a, b) }
        }
        for c in clients.indices where clients[c].connected {
            performClient(c, clients[c].session.tick(now: nowNs))
            for (_, due) in clients[c].presence.tick(now: nowNs) { sendPresence(c, due) }
        }
        for c in clients.indices { _ = clients[c].board.expire(now: nowNs) }
        for d in daemons.indices { housekeep(d, .tick) }
        if now >= nextAntiEntropy {
            nextAntiEntropy = now + configuration.antiEntropyInterval
            antiEntropy()
        }
    }

    mutating func antiEntropy() {
        // Clients are not subscribed again each round: a subscription lasts as long as its
        // connection (a lost frame resets the connection, and the client subscribes on the next).
        for d in daemons.indices {
            for peer in daemons[d].links.keys.sorted() {
                guard var link = daemons[d].links[peer] else { continue }
                var actions = link.start(now: nowNs)
                let (dueResyncs, more) = link.tick(now: nowNs)
                actions += more
                for id in link.attached.union(dueResyncs).sorted() {
                    actions += link.resync(id, version: daemons[d].core.durableVersion, now: nowNs)
                }
                daemons[d].links[peer] = link
                performLink(d, peer, actions)
            }
        }
    }

    // MARK: Connections

    static func key(_ a: Int, _ b: Int) -> Int { min(a, b) << 32 | max(a, b) }

    /// Sends on the connection between two nodes. Connections are streams (TCP): frames keep their
    /// order, and a frame the network loses (or a partition drops) resets the connection, as a
    /// lost segment does once TCP gives up: both ends learn it and the dialing side reconnects.
    mutating func send(_ from: Int, _ to: Int, _ frame: [UInt8]) {
        // A daemon lost for good: its machine is gone, nothing reaches it or comes from it.
        if let lost, from == lost || to == lost { return }
        let dropped = network.framesDropped
        network.send(from: from, to: to, [generations[Self.key(from, to), default: 0]] + frame)
        if network.framesDropped > dropped {
            let (d, other) = from < daemons.count ? (from, to) : (to, from)
            reset(daemon: d, other: other)
        }
    }

    /// The I/O of what client `c`'s connection policy decided (``ReconnectMachine``, SyncClient's):
    /// a dial connects at once (a simulated daemon always answers; a cut link resets the
    /// connection on its first frame); a wait is read from the machine by ``timers()``.
    mutating func reconnect(_ c: Int, _ action: ReconnectMachine.Action?) {
        guard case let .dial(i)? = action else { return }
        connectClient(c, to: Self.daemonIndex(clients[c].reconnect.addresses[i]))
    }

    mutating func connectClient(_ c: Int, to d: Int) {
        // Never the lost daemon: the operator took it out of every client's daemons (``loseDaemon()``).
        assert(d != lost)
        if d != clients[c].daemon { report.roams += 1 }
        if clients[c].reconnect.attempt > 0 { report.reconnects += 1 }
        clients[c].daemon = d
        let node = clients[c].node
        if configuration.trace { trace("c\(c) connects to d\(d)") }
        clients[c].reconnect.connected()
        generations[Self.key(node, d), default: 0] &+= 1
        daemons[d].servers[node] = ServerSession(maxFrame: 1 << 16, rateLimit: nil, now: nowNs)
        clients[c].session = ClientSession(maxFrame: 1 << 16, timeout: Self.ns(2_000))
        clients[c].session.seenReportInterval = Self.ns(configuration.seenInterval)
        clients[c].session.asksForParted = true   // a device, as SyncClient's sessions
        clients[c].connected = true
        machines[c].connected(to: Self.daemonName(d))
        takePartInPresence(c)
        resubscribe(c)
    }

    /// Every client shows the others' drags: it takes part in the document's presence (idle), and
    /// announces itself again after each `subscribed`.
    mutating func takePartInPresence(_ c: Int) {
        guard clients[c].presence.documents.isEmpty else { return }
        publishPresence(c, .idle)
    }

    mutating func resubscribe(_ c: Int) {
        let version = machines[c].subscribing(clients[c].document)
        let actions = clients[c].session.subscribe(document, epoch: clients[c].knowsEpoch ? epoch : 0,
                                                   version: version, now: nowNs)
        performClient(c, actions)
    }

    mutating func connectLink(_ d: Int, _ e: Int) {
        linkDue[Self.key(d, e)] = nil
        generations[Self.key(d, e), default: 0] &+= 1
        if configuration.trace { trace("link d\(d) → d\(e) connects") }
        daemons[e].servers[d] = ServerSession(maxFrame: 1 << 16, rateLimit: nil, now: nowNs)
        var link = PeerSession(maxFrame: 1 << 16, timeout: Self.ns(2_000), resyncDelay: Self.ns(100), daemon: daemons[d].replica,
                               offersFloor: configuration.linksOfferFloor)
        let actions = link.start(now: nowNs)
        daemons[d].links[e] = link
        performLink(d, e, actions)
    }

    /// Cuts the connection between a daemon and another node: both ends learn it, later frames of
    /// it are dropped, and the side that dials reconnects after a while.
    mutating func reset(daemon d: Int, other: Int) {
        if configuration.trace { trace("connection \(nodeName(d)) – \(nodeName(other)) cut") }
        generations[Self.key(d, other), default: 0] &+= 1
        daemons[d].servers[other] = nil
        daemons[d].core.unsubscribe(SubscriberID(other))
        if other < daemons.count {
            // A daemon link: d → e when d < e.
            let (a, b) = d < other ? (d, other) : (other, d)
            if var link = daemons[a].links.removeValue(forKey: b) {
                _ = link.disconnected()
                daemons[a].core.unsubscribe(SubscriberID(b))
            }
            daemons[b].servers[a] = nil
            daemons[b].core.unsubscribe(SubscriberID(a))
            linkDue[Self.key(a, b)] = network.now + 50
        } else {
            let c = other - daemons.count
            _ = clients[c].session.disconnected()
            machines[c].disconnected()
            clients[c].connected = false
            // Its connection policy waits, then dials this daemon again or the next it knows.
            // (Not connected already: nothing changes.)
            reconnect(c, clients[c].reconnect.lost(.closed, now: nowNs, using: &rng))
        }
    }

    /// What `doc` took into its causal buffer and then refused when it woke: dropped, or found to
    /// be another operation with an id its author had used by then.
    static func unapplied(_ doc: ListDocument) -> [ListOperation] {
        doc.droppedOperations.map(\.operation) + doc.rejectedOperations
    }

    /// Resets every connection of daemon `d`: its links to its peers and its clients'.
    mutating func resetConnections(of d: Int) {
        for other in (0..<(daemons.count + clients.count)) where other != d {
            if other < daemons.count ? configuration.areLinked(d, other, daemons: daemons.count) : clients[other - daemons.count].daemon == d {
                reset(daemon: d, other: other)
            }
        }
    }

    mutating func crash(_ d: Int) {
        report.crashes += 1
        if configuration.trace { trace("d\(d) crashes") }
        resetConnections(of: d)
        roomDue.removeAll { $0.daemon == d }
        for op in Self.unapplied(daemons[d].core.document) { unappliedBeforeCrashes[op.id] = op }
        // The power goes before the queued round writes, after its write, or after its sync too.
        let cut = rng.below(3)
        let before = daemons[d].disk.files.stats
        if configuration.losesStability, configuration.trace { trace("d\(d) loses its stability file") }
        if let failure = daemons[d].crashAndRecover(cutAfter: cut, using: &rng, variant: configuration.coreVariant,
                                                    stabilityNow: stabilityNow, losingStability: configuration.losesStability) {
            report.failures.append("daemon \(d): recovery after a crash failed: \(failure)")
        }
        let after = daemons[d].disk.files.stats
        report.crashBytesLost += after.bytesLost - before.bytesLost
        report.crashTornBytesKept += after.tornBytesKept - before.tornBytesKept
        report.crashTailsKeptAside += daemons[d].disk.folder.sharedLog?.recoveryReport.damage.count ?? 0
        appending[d] = nil
        for op in daemons[d].disk.replayed { logged[op.id] = op }
        // Acknowledged means durable: applied, or kept waiting for its causes (in the log either
        // way), or parted by a merge back and made again (as the end's check counts them).
        let pending = Set(daemons[d].core.document.pendingOperations.map(\.lastID))
        let lost = daemons[d].acknowledged.filter {
            !daemons[d].core.document.version.contains($0) && !pending.contains($0) && !mergedBackIDs.contains($0)
        }
        if !lost.isEmpty {
            report.acknowledgedLost += lost.count
            report.failures.append("daemon \(d): \(lost.count) acknowledged operations lost in a crash (first \(lost.first!))")
        }
    }

    // MARK: Frames

    mutating func deliver(_ delivery: InMemoryNetwork.Delivery) {
        let (from, to) = (delivery.from, delivery.to)
        guard let g = delivery.frame.first, g == generations[Self.key(from, to), default: 0] else { return }
        let frame = Array(delivery.frame.dropFirst())
        traceFrame(from, to, frame)
        if to >= daemons.count {
            let c = to - daemons.count
            guard clients[c].connected else { return }
            performClient(c, clients[c].session.receive(frame, now: nowNs))
            if losesDaemonNow { loseDaemonIfUnrelayed(from: from, to: c) }
        } else if daemons[to].links[from] != nil {
            var link = daemons[to].links[from]!
            let actions = link.receive(frame, now: nowNs)
            daemons[to].links[from] = link
            performLink(to, from, actions)
        } else if var server = daemons[to].servers[from] {
            let actions = server.receive(frame, now: nowNs)
            daemons[to].servers[from] = server
            performServer(to, from, actions)
        }
    }

    /// A peer daemon's link said so on daemon `d`'s connection `other`
    /// (``ListSync/ServerSession/isPeerLink``): the daemon has peers from now on, across restarts
    /// (the host's `DIR/peered`, Daemon+Peered.swift), before the subscription or anything the
    /// link relays is taken.
    mutating func notePeerLink(_ d: Int, _ other: Int) {
        guard !configuration.notesPeerLinksOnlyWhenKnown, daemons[d].servers[other]?.isPeerLink == true else { return }
        daemons[d].policy.compaction?.peered = true
    }

    mutating func performServer(_ d: Int, _ other: Int, _ actions: [ServerSession.Action]) {
        let sub = SubscriberID(other)
        for action in actions {
            // The connection was cut by an earlier action (a frame lost): the rest belonged to it.
            guard daemons[d].servers[other] != nil else { return }
            switch action {
            case let .send(frame): send(d, other, frame)
            case .close: reset(daemon: d, other: other)
            case let .subscribe(doc, epoch, version, learnsParted):
                guard doc == document else {
                    send(d, other, SyncMessage.error(request: 0, document: doc, code: .unknownDocument, text: "unknown").encoded())
                    continue
                }
                daemons[d].core.unsubscribe(sub)
                notePeerLink(d, other)
                // A peer daemon's link, known from its earlier subscriptions: marked at once.
                let relay = daemons[d].servers[other].flatMap { server in
                    server.relayDaemon.map { DocumentCore.RelayMark(daemon: $0, gossips: server.relayGossips) }
                }
                performCore(d, daemons[d].core.subscribe(sub, epoch: epoch, version: version, learnsParted: learnsParted, relay: relay))
                if daemons[d].core.isSubscribed(sub) {
                    daemons[d].servers[other]?.attached(doc)
                    // The build before: only a link known from its earlier subscriptions.
                    if configuration.notesPeerLinksOnlyWhenKnown, relay != nil { daemons[d].policy.compaction?.peered = true }
                }
            case .unsubscribe: daemons[d].core.unsubscribe(sub)
            case let .operations(_, batch, ops):
                if batch != 0 { daemons[d].awaitingAck[other, default: [:]][batch] = ops.map(\.lastID) }
                performCore(d, daemons[d].core.receive(ops, batch: batch, from: sub))
            case let .hello(_, version): performCore(d, daemons[d].core.hello(sub, version: version))
            case let .create(request, _, _, id, _):
                let answer = id == document ? daemons[d].servers[other]?.created(request: request, document: document, epoch: epoch)
                    : daemons[d].servers[other]?.failed(request: request, document: id, code: .unsupported, text: "one document")
                performServer(d, other, answer ?? [])
            case let .listDocuments(request, after):
                let info = DocumentInfo(id: document, name: "simulated", epoch: epoch, operations: daemons[d].core.document.operationCount)
                performServer(d, other, daemons[d].servers[other]?.documents(request: request, after.map { $0 >= document } == true ? [] : [info]) ?? [])
            case let .status(request): performServer(d, other, daemons[d].servers[other]?.status(request: request, json: "{}") ?? [])
            case .rateLimited: break
            case let .presence(_, presence): performCore(d, daemons[d].core.presence(presence, from: sub))
            case let .seen(_, replica, version, role):
                notePeerLink(d, other)
                housekeep(d, .seen(sub, replica: replica, version: version, role: role))
            case let .stability(_, from, entries):
                notePeerLink(d, other)
                housekeep(d, .peerStability(sub, from: from, entries: entries))
            case let .remade(_, ranges):
                housekeep(d, .remade(sub, ranges: ranges))
            case let .floorSnapshot(doc, bytes):
                // A peer's link offered its snapshot (this daemon only accepts that link).
                if !takeSnapshot(d, from: other, bytes) {
                    performServer(d, other, daemons[d].servers[other]?.floorRefused(doc, text: "not taken now") ?? [])
                }
            case let .destroy(request, doc, _):
                // The simulated daemons hold one document for the whole run: no destroy events.
                performServer(d, other, daemons[d].servers[other]?.failed(request: request, document: doc, code: .unsupported,
                                                                          text: "the simulated daemons do not destroy") ?? [])
            case let .rename(request, doc, _):
                // Names are not part of the simulated runs.
                performServer(d, other, daemons[d].servers[other]?.failed(request: request, document: doc, code: .unsupported,
                                                                          text: "the simulated daemons do not rename") ?? [])
            }
        }
    }

    mutating func performCore(_ d: Int, _ actions: [DocumentCore.Action]) {
        for action in actions {
            switch action {
            case let .append(ticket, ops, relayed):
                if compacting { appending[d, default: [:]][ticket] = ops }
                daemons[d].disk.write(ticket: ticket, ops, relayed: relayed)
                if daemons[d].disk.syncDue == nil { daemons[d].disk.syncDue = network.now + 1 + UInt64(rng.below(4)) }
            case let .send(sub, frame):
                let other = sub.raw
                if daemons[d].links[other] != nil {
                    // What the daemon's link relays (``PeerSession/relays(_:sendsStability:)``).
                    if PeerSession.relays(frame, sendsStability: true) {
                        if frame[1] == SyncMessage.stabilityTag { report.stabilityGossips += 1 }
                        send(d, other, frame)
                    }
                    continue
                }
                if frame.count > 1, frame[1] == SyncMessage.stabilityTag { report.stabilityGossips += 1 }
                if let message = try? SyncMessage(decoding: frame), case let .ack(_, batch, _) = message,
                   let ids = daemons[d].awaitingAck[other]?.removeValue(forKey: batch) {
                    daemons[d].acknowledged.formUnion(ids)
                }
                send(d, other, frame)
            case let .awaitRoom(sub): roomDue.append((network.now + 1, d, sub.raw))
            case let .close(sub, _): reset(daemon: d, other: sub.raw)
            }
        }
    }

    mutating func performLink(_ d: Int, _ peer: Int, _ actions: [PeerSession.Action]) {
        let sub = SubscriberID(peer)
        for action in actions {
            // The connection was cut by an earlier action (a frame lost): the rest belonged to it.
            guard daemons[d].links[peer] != nil else { return }
            switch action {
            case let .send(frame): send(d, peer, frame)
            case .close: reset(daemon: d, other: peer)
            case let .listed(remote), let .announced(remote):
                let local = PeerSession.LocalDocument(id: document, name: "simulated", epoch: epoch, version: daemons[d].core.durableVersion)
                guard var link = daemons[d].links[peer] else { continue }
                let more = link.reconcile(remote: remote, local: [local], now: nowNs)
                daemons[d].links[peer] = link
                performLink(d, peer, more)
            case .createLocal:
                report.failures.append("daemon \(d): asked to create the document it holds")
            case let .attach(_, remoteVersion):
                daemons[d].core.unsubscribe(sub)
                performCore(d, daemons[d].core.subscribe(sub, epoch: 0, version: remoteVersion, ownLink: true,
                                                         offersFloor: daemons[d].links[peer]?.takesFloor ?? false))
                daemons[d].core.markRelay(sub, daemon: daemons[d].links[peer]?.peerDaemon)
            case .detach: daemons[d].core.unsubscribe(sub)
            case let .stability(_, from, entries):
                housekeep(d, .peerStability(sub, from: from, entries: entries))
            case let .deliver(_, ops): performCore(d, daemons[d].core.receive(ops, batch: 0, from: sub))
            case let .epochConflict(doc, a, b): report.failures.append("daemon \(d): epoch conflict on \(doc): \(a) / \(b)")
            case let .destroyLocal(doc, reason): report.failures.append("daemon \(d): told to destroy \(doc) (\(reason)); no daemon destroys here")
            case let .behindFloor(_, bytes): mergeBack(d, peer, snapshot: bytes)
            case .refusedCompacted: report.refusedCompacted += 1   // the link fetches the peer's snapshot
            }
        }
    }

    mutating func performClient(_ c: Int, _ actions: [ClientSession.Action]) {
        let node = clients[c].node, d = clients[c].daemon
        let variant = configuration.variant
        // A daemon may be asked if the device knows it (SyncClient's rule): one lost for good is
        // no longer among them (its operator took it out), and what it may hold is given up.
        let configured = clients[c].reconnect.addresses
        for action in actions {
            switch action {
            case let .send(frame): send(node, d, frame)
            case .close: reset(daemon: d, other: node)
            case let .subscribed(_, _, _, version):
                clients[c].knowsEpoch = true
                clients[c].presence.announce(document)
                performDevice(c, machines[c].subscribed(version, document: clients[c].document))
            case let .operations(_, ops):
                let (applies, more) = machines[c].received(ops, document: clients[c].document, prepare: { $0.variant = variant }, askable: { configured.contains($0) })
                // No `hello` for operations waiting for their causes: no device sends one (the
                // causes come on this subscription's catch-up, or the next one's).
                if applies { _ = clients[c].document.receive(ops) }
                performDevice(c, more)
            case let .editDone(n, result):
                performDevice(c, machines[c].answered(edit: n, result, document: clients[c].document, askable: { configured.contains($0) }))
                if case .success = result, clients[c].forgetful { forget(c) }
            case .subscribeFailed(_, let error):
                if case let .refused(code, _) = error, code == .epochMismatch {
                    report.failures.append("client \(c): epoch mismatch on its own document")
                }
            case let .presence(_, p):
                report.presenceReceived += 1
                if p.replica == clients[c].document.replica { report.failures.append("client \(c) got its own presence back") }
                _ = clients[c].board.receive(p, now: nowNs)
                // Read by identity against the client's own document (its assertions check the mapping).
                _ = clients[c].board.activities(in: clients[c].document)
            case let .stable(_, floor):
                compactClient(c, at: floor)
            case let .snapshot(_, bytes):
                if compacting {
                    do throws(WireError) {
                        try machines[c].snapshot(bytes)
                        report.snapshots += 1
                    } catch {
                        report.failures.append("client \(c): the daemon's snapshot did not load: \(error)")
                    }
                } else {
                    // The simulated daemons are linked as peers (relays): none compacts.
                    report.failures.append("client \(c): a snapshot catch-up, yet no simulated daemon compacts")
                }
            case let .synced(_, version):
                performDevice(c, machines[c].synced(version, document: clients[c].document, prepare: { $0.variant = variant }, askable: { configured.contains($0) }))
            case let .parted(_, ranges):
                if configuration.trace { trace("c\(c) learns parted \(ranges)") }
                performDevice(c, machines[c].learnedParted(ranges, document: clients[c].document, prepare: { $0.variant = variant },
                                                           askable: { configured.contains($0) }))
            case let .documentError(_, code, text):
                if code == .compacted {
                    performDevice(c, machines[c].refusedForFloor(text, document: clients[c].document, askable: { configured.contains($0) }))
                }
            case .answered, .announced, .withdrawn, .accessEnded, .stability: break
            }
        }
    }

    /// The I/O of what client `c`'s state machine decided (``DeviceClientMachine/Action``), over
    /// the simulated network (SyncClient's is over its socket and files): the sends, the
    /// re-subscription, going back to another daemon, the re-sync's copy (checked by the oracle
    /// first).
    mutating func performDevice(_ c: Int, _ actions: [DeviceClientMachine.Action]) {
        for action in actions {
            switch action {
            case let .send(ops, _):
                let (n, sends) = clients[c].session.send(document, ops, now: nowNs)
                machines[c].sent(edit: n, ops)
                performClient(c, sends)
            case .sendUnacknowledged:
                performDevice(c, machines[c].sendUnacknowledged(clients[c].document))
            case .saveRecord, .live, .editFailed:
                // No record: a simulated client's machine is its record. Other refusals do not
                // happen here (one document, never reset or destroyed).
                break
            case .reportSeen:
                reportSeen(c)
            case let .refusedForFloor(text):
                if configuration.trace { trace("c\(c) refused for the floor: \(text)") }
                report.refusedCompacted += 1
            case let .settle(other):
                if configuration.trace { trace("c\(c) settles at \(other)") }
                // Another daemon may hold what this one refused: settle there first.
                clients[c].reconnect.settle(at: other)
                report.settles += 1
                reset(daemon: clients[c].daemon, other: clients[c].node)
            case .resubscribe:
                if configuration.trace { trace("c\(c) re-syncs from nothing") }
                performClient(c, clients[c].session.unsubscribe(document))
                resubscribe(c)
            case let .replace(outcome):
                if configuration.trace { trace("c\(c) replaces its copy: \(outcome.held) held, made again \(Self.describe(outcome.unsent)) as \(Self.describe(outcome.made))") }
                resync(c, with: outcome)
                performDevice(c, machines[c].replaced(outcome, document: clients[c].document))
            case .cannotSend:
                report.failures.append("client \(c): its history does not go back to what the daemon acknowledged")
            case .dropPartedWaiting:
                // No store: the copy is the document (SyncClient writes it as a new generation).
                let dropped = clients[c].document.dropWaiting(onParted: machines[c].parted.contains)
                if configuration.trace { trace("c\(c) drops what waits on parted operations: \(Self.describe(dropped))") }
                report.partedWaitingDropped += dropped.count
            case let .announceRemade(ranges):
                if configuration.trace { trace("c\(c) tells its daemon it made \(ranges) again") }
                report.remadeAnnounced += 1
                performClient(c, clients[c].session.remade(document, ranges: ranges))
            }
        }
    }

    /// A forgetful client drops its copy once everything it made is acknowledged, and starts afresh
    /// (a new replica id: a command-line client that exits, then runs again).
    mutating func forget(_ c: Int) {
        guard clients[c].session.waitingCount == 0 else { return }
        clients[c].generation += 1
        var doc = ListDocument(replica: ReplicaID(UInt64(10_000 * clients[c].generation + c + 1)))
        doc.variant = configuration.variant
        clients[c].document = doc
        clients[c].knowsEpoch = false
        report.givenUpResends += machines[c].givenUpResends
        report.givenUpCausesResends += machines[c].givenUpCausesResends
        machines[c] = Self.machine(doc.replica, configuration)
        clients[c].presence = PresencePublisher()
        takePartInPresence(c)
        if clients[c].connected {
            machines[c].connected(to: Self.daemonName(clients[c].daemon))
            resubscribe(c)
        }
    }

    // MARK: Edits

    mutating func makeEdit(at r: Int) {
        let before = clients[r].document.operationCount
        let edit = RandomEdit.random(for: clients[r].document, workload: configuration.workload, using: &rng) {
            valueCounter += 1
            return "v\(valueCounter)"
        }
        report.edits += 1
        if edit.isMove { report.moves += 1 }
        if case .spliceItemText = edit {
            report.textEdits += 1
            clients[r].document.wallClock = .fixed(1_700_000_000_000 + network.now + UInt64((r * 53) % 200))
        }
        if case .insertSectionWithFields = edit { report.sectionFieldInserts += 1 }
        if let writes = edit.fieldEdits {
            report.fieldWrites += 1
            report.fieldChanges += writes.count
            report.increments += writes.filter { if case .increment = $0.change { true } else { false } }.count
            // A wall clock per client, some ahead of others (a skew of up to 0.2 s of virtual
            // time), so the hybrid clock of Docs/Semantics.md §8 meets skewed clocks.
            clients[r].document.wallClock = .fixed(1_700_000_000_000 + network.now + UInt64((r * 53) % 200))
        }
        do {
            try edit.apply(to: &clients[r].document)
        } catch {
            report.failures.append("client \(r): \(edit) threw \(error)")
            return
        }
        publish(r, since: before)
    }

    /// A drag session on client `r`: lift a random item, hover a few times while remote
    /// operations arrive, then drop (one operation, or none if cancelled or dropped in place).
    mutating func drag(at r: Int) {
        report.edits += 1
        report.drags += 1
        var before = clients[r].document.operationCount
        let generation = clients[r].generation
        var session = DragSession()
        let doc = clients[r].document
        let shape = (0..<doc.sectionCount).map { (try? doc.itemCount(inSection: $0)) ?? 0 }
        var k = rng.below(doc.totalItemCount)
        var start = IndexPath(item: 0, section: 0)
        for (s, rows) in shape.enumerated() {
            if k < rows { start = IndexPath(item: k, section: s); break }
            k -= rows
        }
        do {
            let dragged = try clients[r].document.itemID(at: start)
            try session.begin(at: start, in: clients[r].document)
            publishPresence(r, session.presenceActivity)
            for _ in 0..<(1 + rng.below(4)) {
                step(until: network.now + 1 + rng.next() % max(configuration.editInterval, 1))
                // A forgetful client that started afresh meanwhile drops the drag (its rows are gone).
                guard clients[r].generation == generation else { return }
                // Fields of the dragged item written meanwhile, here or elsewhere; the dragging
                // client's own write is sent at once (not again with the drop).
                if writeFieldsOfDraggedItem(dragged, draggedBy: r) { before = clients[r].document.operationCount }
                session.documentDidChange(clients[r].document)
                guard session.isDragging else { break }
                let visible = session.visibleSnapshot
                let s = rng.below(visible.numberOfSections)
                let rows = visible.sections[s].items.count
                let target = IndexPath(item: rng.below(rows + 1), section: s)
                if (try? session.update(to: target)) == nil {
                    try? session.update(to: IndexPath(item: max(rows - 1, 0), section: s))
                }
                publishPresence(r, session.presenceActivity)
            }
            // Compacted meanwhile (the daemon's floor reached): its log starts at the floor now,
            // shorter than when the drag began.
            before = min(before, clients[r].document.operationCount)
            if session.isDragging {
                _ = try session.drop(into: &clients[r].document)
                report.moves += 1
            }
        } catch {
            report.failures.append("client \(r): drag from \(start) failed: \(error)")
            return
        }
        publishPresence(r, .idle)
        publish(r, since: before)
    }

    /// Client `r`'s drag as presence, through its coalescing outbox (sent now or on a later tick).
    mutating func publishPresence(_ r: Int, _ activity: PresenceActivity) {
        let replica = clients[r].document.replica
        if let due = clients[r].presence.publish(document, activity, replica: replica, name: "client \(r)", now: nowNs) {
            sendPresence(r, due)
        }
    }

    mutating func sendPresence(_ c: Int, _ presence: Presence) {
        let actions = clients[c].session.publish(document, presence)
        report.presenceSent += actions.count
        performClient(c, actions)
    }

    /// Sends client `r`'s operations from log position `before` on, as one edit.
    mutating func publish(_ r: Int, since before: Int) {
        let made = clients[r].document.operations(in: before..<clients[r].document.operationCount)
        report.operations += made.count
        if configuration.trace { trace("c\(r) edits: \(Self.describe(made))") }
        performDevice(r, machines[r].edited(made, document: clients[r].document))
    }

    // MARK: The end

    /// Heals the network, stops faults, and runs anti-entropy until every replica has everything.
    mutating func quiesce() {
        network.healAll()
        network.faults = NetworkFaults(latency: configuration.faults.latency)
        for round in 1...60 {
            step(until: network.now + 4 * configuration.antiEntropyInterval)
            let docs = replicaDocuments
            let v = docs[0].version
            // With compaction, a forgetful client may still hold edits to make again and send.
            let clientsDone = !compacting || clients.indices.allSatisfy { c in
                let (document, acked) = (clients[c].document, machines[c].acknowledged)
                return !machines[c].isResyncing && document.hasHistory(since: acked) && document.operations(since: acked).isEmpty
            }
            if clientsDone && docs.allSatisfy({ $0.version == v && $0.pendingCount == 0 }) && liveDaemons.allSatisfy({ $0.core.isQuiet && !$0.disk.busy }) {
                report.quiescenceRounds = round - 1
                return
            }
        }
        report.failures.append("replicas did not become quiet after 60 anti-entropy rounds")
    }

    /// Every drag ended: after the presence time to live, no client shows another's drag (ended
    /// by its `idle`, or expired when that was lost), and no daemon wrote presence to its disk.
    ///
    /// Running the network for the whole time to live more than doubles a run's frames (hellos
    /// and ticks): one seed in eight does; the others check the boards at the time to live
    /// without running it (what is in flight then is not seen).
    mutating func checkPresenceEnded() {
        let written = liveDaemons.map(\.disk.appends)
        let ttl = PresenceBoard.defaultTTL / 1_000_000 + 1
        let runs = configuration.seed % 8 == 0
        if runs { step(until: network.now + ttl) }
        for c in clients.indices {
            _ = clients[c].board.expire(now: runs ? nowNs : nowNs + ttl * 1_000_000)
            if !clients[c].board.isEmpty {
                report.failures.append("client \(c) still shows \(clients[c].board.presences.count) drags after the time to live")
            }
        }
        if liveDaemons.map(\.disk.appends) != written || liveDaemons.contains(where: { !$0.core.isQuiet }) {
            report.failures.append("a daemon wrote to its disk while only presence and anti-entropy ran")
        }
    }

    mutating func check() {
        let docs = replicaDocuments
        let reference = docs[0].snapshot()
        let state = docs[0].encodedState()
        for (r, doc) in docs.enumerated() {
            if doc.pendingCount != 0 { report.failures.append("replica \(r) has \(doc.pendingCount) operations pending") }
            do { try doc.checkInvariants() } catch { report.failures.append("replica \(r): \(error)") }
            if r > 0 && doc.snapshot() != reference { report.failures.append("replica \(r) shows a different document than replica 0") }
            // Replicas compacted at different floors (or not at all) encode differently.
            if r > 0 && !compacting && doc.encodedState() != state { report.failures.append("replica \(r) has a different encoded state than replica 0") }
        }
        let all = docs[0].operations
        var ids = Set<OpID>()
        for op in all where !ids.insert(op.id).inserted { report.failures.append("operation \(op.id) applied twice") }
        // With compaction, the replicas' logs start at their floors: the oracle reads every
        // operation the daemons logged that the document holds.
        // Not those a daemon logged and then never applied (of a history their author left): the
        // version counts their counters, yet their effects are nowhere.
        var unapplied = unappliedBeforeCrashes
        for daemon in daemons { for op in Self.unapplied(daemon.core.document) { unapplied[op.id] = op } }
        for (id, op) in mergedBack { unapplied[id] = op }
        let known = compacting ? logged.values.filter { docs[0].version.contains($0.lastID) && unapplied[$0.id] != $0 } : all
        let oracle = SemanticsOracle(known)
        if let why = oracle.check(reference) { report.failures.append("replica 0: \(why)") }
        report.failures += oracle.checkFieldIntent(reference).map { "replica 0: \($0)" }
        report.failures += oracle.checkText(reference).map { "replica 0: \($0)" }
        checkNoCopyParted(docs)
        for (d, daemon) in daemons.enumerated() {
            // The lost daemon's copy stopped where it was lost, with what it kept waiting: what it
            // acknowledged is checked on the others' copies (``checkNoCopyParted(_:)``).
            let missing = daemon.acknowledged.filter { !daemon.core.document.version.contains($0) && !mergedBackIDs.contains($0) }
            if !missing.isEmpty && d != lost { report.failures.append("daemon \(d) lacks \(missing.count) operations it acknowledged") }
            // A stale epoch is refused, and changes nothing.
            var core = daemon.core
            let refused = core.subscribe(SubscriberID(1 << 30), epoch: epoch &+ 1, version: VersionVector())
            guard case let .send(_, frame)? = refused.first, case .error(_, _, .epochMismatch, _)? = try? SyncMessage(decoding: frame),
                  !core.isSubscribed(SubscriberID(1 << 30)) else {
                report.failures.append("daemon \(d) did not refuse a stale epoch")
                continue
            }
        }
        report.failures += SemanticsOracle.valuesShownTwice(reference)
        report.sections = reference.numberOfSections
        report.items = reference.numberOfItems
    }
}

/// One client in the simulator: a document and the production ``ClientSession`` (its
/// ``DeviceClientMachine`` lies beside it, in ``Simulator/machines``).
struct SimulatedClient {
    let node: Int
    /// The daemon it is, or was last, connected to (another one on a reconnect, with
    /// ``SimulationConfiguration/roamPercent``).
    var daemon: Int
    var document: ListDocument
    var session = ClientSession(maxFrame: 1 << 16)
    var connected = false
    var knowsEpoch = false
    var forgetful = false
    var generation = 0
    /// Which daemon it dials next and when (SyncClient's connection policy), among those it
    /// knows (its own; with roaming, every one): set up by ``Simulator/init(_:)``.
    var reconnect = ReconnectMachine(addresses: [])
    /// Its presence (drags), coalesced; and the others' it shows.
    var presence = PresencePublisher()
    var board = PresenceBoard()
}
