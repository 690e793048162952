import ListStore
import ListTable
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSync

// The simulator with compaction (`--compact-after`): the daemons' policy (the host's own,
// ``DocumentHostPolicy``) and its I/O, and the I/O of what the devices' state machines
// (``DeviceClientMachine``) decide about the floor and re-syncs, driven by ``Simulator``'s event loop.

extension Simulator {
    // MARK: Compaction

    /// The stability's clock: virtual milliseconds (a daemon's counts seconds; only differences
    /// against ``SimulationConfiguration/retireAfter`` matter).
    var stabilityNow: UInt64 { network.now }

    /// The rule of the daemons' policy: ``SimulationConfiguration/compactAfter`` and the bytes
    /// trigger, retirement in virtual milliseconds, no least interval between compactions; nil
    /// without compaction.
    static func compactionRule(_ configuration: SimulationConfiguration) -> CompactionRule? {
        configuration.compactAfter.map {
            var rule = CompactionRule(retireAfter: configuration.retireAfter, minOperations: $0, interval: 0,
                                      gossipInterval: Self.gossipInterval,
                                      reclaimableFloor: configuration.reclaimableFloor, reclaimableShare: configuration.reclaimableShare)
            // Stable prefixes, as `serve` takes them, unless `--compact-quiescent-only`.
            rule.stablePrefixes = configuration.compactsStablePrefixes
            return rule
        }
    }

    /// Feeds `event` to daemon `d`'s policy (``DocumentHostPolicy``, its host's) and does what
    /// it decides, at the events the host feeds it: a commit and its release, a `seen`, a peer's
    /// table, and the housekeeping timer (here, each timer).
    mutating func housekeep(_ d: Int, _ event: DocumentHostPolicy.Event) {
        performPolicy(d, daemons[d].decide(event, stabilityNow: stabilityNow, now: network.now))
    }

    /// The I/O of daemon `d`'s policy actions, as its host does them: the stability written, the
    /// frames sent, a snapshot written (a new generation), a compaction written and its floor
    /// told once durable.
    mutating func performPolicy(_ d: Int, _ actions: [DocumentHostPolicy.Action]) {
        for action in actions {
            switch action {
            case .snapshot:
                let size = daemons[d].disk.logSize ?? 0
                do throws(StoreError) {
                    try daemons[d].disk.snapshot(daemons[d].core.document, relayed: daemons[d].core.relayedRuns)
                    daemons[d].policy.snapshotWritten(snapshotBytes: daemons[d].disk.snapshotBytes)
                    report.logSnapshots += 1
                } catch {
                    // Nothing fails on the simulated disk but by a crash, and none is in flight.
                    daemons[d].policy.snapshotFailed(logBytes: size, retryNextBatch: false)
                    report.failures.append("daemon \(d): the store's snapshot failed: \(error)")
                }
            case .saveStability:
                do throws(StoreError) { try daemons[d].disk.saveStability(daemons[d].core.stability) } catch {
                    // Nothing fails on the simulated disk but by a crash, and a crash runs between events.
                    report.failures.append("daemon \(d): the stability was not written: \(error)")
                }
            case let .send(frames):
                performCore(d, frames)
            case let .retired(replicas):
                report.retired += replicas.count
            case let .forgotten(peers):
                report.daemonsForgotten += peers.count
            case let .compactionRefused(error):
                if configuration.trace { trace("d\(d) refuses its own compaction point: \(error)") }
                report.failures.append("daemon \(d): compaction at its own compaction point refused: \(error)")
            case .remakeParted:
                remakePartedWaiting(d)
            case let .compact(floor, _):
                if floor != daemons[d].core.document.version { report.prefixCompactions += 1 }
                do throws(StoreError) {
                    try daemons[d].disk.compact(daemons[d].core.document, relayed: daemons[d].core.relayedRuns)
                } catch {
                    report.failures.append("daemon \(d): the store's compaction failed: \(error)")
                    return
                }
                report.compactions += 1
                report.compactionsPerDaemon[d] += 1
                if configuration.trace { trace("d\(d) compacts at \(daemons[d].core.document.historyFloor ?? VersionVector()) holding \(daemons[d].core.document.version)") }
                performPolicy(d, daemons[d].policy.compactionWritten(core: daemons[d].core, snapshotBytes: daemons[d].disk.snapshotBytes))
            }
        }
    }

    /// The daemon compacted at `floor` (`stable`): client `c` compacts its copy there too when
    /// its state machine says so (``DeviceClientMachine/compacts(at:document:)``); its view must
    /// not change.
    mutating func compactClient(_ c: Int, at floor: VersionVector) {
        guard machines[c].compacts(at: floor, document: clients[c].document) else { return }
        let before = clients[c].document.snapshot()
        do { try clients[c].document.compact(stable: floor) } catch {
            report.failures.append("client \(c): compaction at the daemon's floor refused: \(error)")
            return
        }
        if clients[c].document.snapshot() != before { report.failures.append("client \(c): its compaction changed what it shows") }
        performDevice(c, machines[c].compacted(at: floor, document: clients[c].document))
        report.clientCompactions += 1
    }

    /// Client `c` says what it has seen (coalesced by its session), as a device does; only with
    /// compaction (without, no simulated daemon reads it).
    mutating func reportSeen(_ c: Int) {
        guard compacting, clients[c].connected else { return }
        let doc = clients[c].document
        performClient(c, clients[c].session.reportSeen(document, replica: doc.replica, version: doc.version, role: .compactingDevice, now: nowNs))
    }

    /// Client `c`'s re-sync is ready (``DeviceClientMachine/Action/replace(_:)``): the outcome
    /// becomes its document, after the oracle's checks of it (no id taken twice, no unsent item
    /// lost); a drag in progress ends.
    mutating func resync(_ c: Int, with outcome: CopyResync.Outcome) {
        let local = clients[c].document
        let (base, unsent, made) = (outcome.document, outcome.unsent, outcome.made)
        // Each identity once: nothing made again takes the id of an operation the client made before.
        for op in made where !unsent.contains(where: { $0.id == op.id }) {
            if let old = unsent.first(where: { $0.id.replica == op.id.replica && op.id.counter <= $0.lastID.counter && $0.id.counter <= op.lastID.counter }) {
                report.failures.append("client \(c): an operation made again as \(op.id) takes the id of its unsent \(old.id) (\(old.kind) vs \(op.kind))")
            }
        }
        let shown = Set(base.snapshot().sections.flatMap { $0.items.map { Array($0.value) } })
        let sectionsThere = Set(base.snapshot().sections.map(\.id))
        let localSnapshot = local.snapshot()
        let insertedSections = Set(unsent.filter(\.insertsSection).map { SectionID($0.id) })
        for op in unsent {
            guard case .insertItem = op.kind, let at = localSnapshot.indexPath(of: ItemID(op.id)) else { continue }
            let section = localSnapshot.sections[at.section]
            guard sectionsThere.contains(section.id) || insertedSections.contains(section.id) else { continue }
            let value = section.items[at.item].value
            if !shown.contains(Array(value)) {
                report.failures.append("client \(c): unsent item \(String(decoding: value, as: UTF8.self)) lost in a re-sync")
            }
        }
        // Edits a daemon held (applied or kept waiting; acknowledged, or logged before it could
        // answer) that the device made again here: their edits are on every copy under other
        // ids, as a merge back's are, and the oracle leaves the originals out.
        // - a daemon lost for good: sent again, refused for a floor and made again
        //   (Docs/Semantics.md §7, "An edit only a forgotten daemon held");
        // - a live daemon that keeps them waiting on parted originals (never applied): the device
        //   re-synced there from a snapshot that lacks them, made them again and says so
        //   (`remade`), and the daemon drops them ("An edit its author made again"; seed 19731 of
        //   `--daemons 2 --compact-after 10 --hide-daemon --roam 30 --crashes 2 --ops 80`). One a
        //   live daemon applied stays expected: shown beside the edit made again, it fails the run.
        let kept = Set(made.map(\.id))
        for op in unsent where !kept.contains(op.id) {
            let held = daemons.indices.contains { d in
                let copy = daemons[d].core.document
                return copy.isWaiting(op) || (d == lost && copy.version.contains(op.lastID))
            }
            guard held else { continue }
            noteMadeAgain(op)
        }
        clients[c].document = base
        // A drag in progress ends (its rows may be gone), as when a client forgets its copy; the
        // others hear its end.
        clients[c].generation += 1
        publishPresence(c, .idle)
        report.remade += made.count
        // Remaking does not compact: a copy without a floor was built from operations.
        if base.historyFloor == nil { report.operationResyncs += 1 }
    }

    /// With compaction and several daemons: once quiet, the run goes on until no daemon holds
    /// `compactAfter` operations or more since its last compaction (each daemon's table reached
    /// the others and every daemon compacted), for at most 30 anti-entropy intervals per client; a daemon
    /// that does not get there fails the run (liveness: quiet, everyone has seen everything).
    mutating func settleCompaction() {
        guard let minOperations = configuration.compactAfter, daemons.count > 1, report.failures.isEmpty else { return }
        // A daemon knows nothing of a client's `seen` from a new subscription until it reports
        // again: the more clients on one daemon (roaming puts them together), the more rounds.
        for _ in 1...(30 * clients.count) where liveDaemons.contains(where: { $0.core.document.operationCount >= minOperations }) {
            step(until: network.now + configuration.antiEntropyInterval)
        }
        if configuration.trace {
            for (d, daemon) in daemons.enumerated() where d != lost { trace("d\(d) once quiet: \(daemon.core.compactionBlock)") }
        }
        for (d, daemon) in daemons.enumerated() where d != lost && daemon.core.document.operationCount >= minOperations {
            report.failures.append("daemon \(d) did not compact once quiet (\(daemon.core.document.operationCount) operations since its floor)"
                                   + ": \(daemon.core.compactionBlock)")
        }
    }
}
