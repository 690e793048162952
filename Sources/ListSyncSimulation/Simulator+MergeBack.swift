import ListStore
@_spi(Testing) import ListCRDT
@_spi(Testing) import ListSync

// A copy left out of a peer's floor (`listsync simulate --hide-daemon`, Docs/Semantics.md §7):
// the first daemon is one no peer knows, whose clients edit while its links are down; the others
// compact without it, then its links come up. Its link is answered with the peer's snapshot
// (``PeerSession/Action/behindFloor(_:snapshot:)``), or its relayed operations are refused and
// the link fetches that snapshot; the daemon merges its copy back onto it
// (``DocumentCore/mergeBack(_:)``), as the daemon's ``PeerLink`` does, and every acknowledged
// operation must end up on every copy, as itself or made again (``checkNoCopyParted(_:)``).

extension Simulator {
    /// Once quiet, the daemons but the hidden one settle and compact without it (as long as they
    /// have operations to compact, at most 30 anti-entropy intervals per client); then its links
    /// come up.
    mutating func unhideDaemon() {
        guard let h = hidden else { return }
        network.healAll()
        network.faults = NetworkFaults(latency: configuration.faults.latency)
        let minOperations = configuration.compactAfter ?? 0
        for _ in 1...(30 * clients.count) where daemons.indices.contains(where: { $0 != h && daemons[$0].core.document.operationCount >= minOperations }) {
            step(until: network.now + configuration.antiEntropyInterval)
        }
        hidden = nil
        if configuration.trace { trace("d\(h) is shown: its links come up") }
        for (a, b) in configuration.links(daemons.count) where a == h || b == h { connectLink(a, b) }
    }

    /// Daemon `d`'s link to `peer` was answered with the peer's snapshot: the copy takes it (it
    /// holds nothing the snapshot lacks) or is merged back onto it; either way it becomes the
    /// disk's next generation, then the core's document, and the link subscribes again from it.
    /// Nothing while a batch is in flight (the next round's subscription brings the snapshot
    /// again); a copy that cannot be merged back (``DocumentCore/Variant/partsCopies``) stays
    /// parted, which the end's checks find.
    mutating func mergeBack(_ d: Int, _ peer: Int, snapshot bytes: [UInt8]) {
        guard takeSnapshot(d, from: peer, bytes) else { return }
        guard var link = daemons[d].links[peer] else { return }
        let local = PeerSession.LocalDocument(id: self.document, name: "simulated", epoch: epoch, version: daemons[d].core.durableVersion)
        let more = link.localReady(local, now: nowNs)
        daemons[d].links[peer] = link
        performLink(d, peer, more)
    }

    /// Daemon `d` takes `peer`'s snapshot (its link's catch-up, or offered by the peer's link,
    /// `floorSnapshot`) or merges its copy back onto it, as ``mergeBack(_:_:snapshot:)`` says;
    /// every subscriber is cut off. False if nothing changed (not quiet, or not merged).
    mutating func takeSnapshot(_ d: Int, from peer: Int, _ bytes: [UInt8]) -> Bool {
        let replica = daemons[d].core.document.replica
        guard let snapshot = try? ListDocument(snapshot: bytes, replica: replica) else {
            report.failures.append("daemon \(d): a peer's snapshot did not load")
            return false
        }
        guard daemons[d].core.isQuiet, !daemons[d].disk.busy else { return false }
        let document: ListDocument, actions: [DocumentCore.Action]
        if daemons[d].core.isHeld(by: snapshot) {
            if configuration.trace { trace("d\(d) takes d\(peer)'s snapshot at \(snapshot.version) (it holds all of d\(d)'s copy)") }
            document = snapshot
            guard storeCompact(d, document) else { return false }
            actions = daemons[d].core.replace(with: document)
        } else if let (merged, merge) = daemons[d].core.mergeBack(snapshot) {
            document = merged
            guard storeCompact(d, document, replacing: true) else { return false }
            report.mergesBack += 1
            report.mergedBackOperations += merge.made.count
            if configuration.trace { trace("d\(d) merges back onto d\(peer)'s snapshot at \(snapshot.version): kept \(Self.describe(merge.kept)), parted \(Self.describe(merge.parted)), made again \(Self.describe(merge.made))") }
            notePartedForOracle(merge)
            actions = daemons[d].core.replace(with: merged, parting: merge)
        } else {
            return false
        }
        performCore(d, actions)
        return true
    }

    /// Daemon `d` keeps operations waiting on ones a peer parted in a merge back
    /// (``DocumentCore/remakePartedWaiting()``, Docs/Semantics.md §7, "Waiting edits on parted
    /// originals"): the copy with them made again becomes the disk's next generation, then the
    /// core's document, as the host does; the originals count as made again for the oracle.
    mutating func remakePartedWaiting(_ d: Int) {
        guard daemons[d].core.isQuiet, !daemons[d].disk.busy, let (remade, merge) = daemons[d].core.remakePartedWaiting(),
              storeCompact(d, remade, replacing: true) else { return }
        report.mergedBackOperations += merge.made.count
        if configuration.trace { trace("d\(d) makes again waiting operations on parted ones: parted \(Self.describe(merge.parted)), made again \(Self.describe(merge.made)), dropped \(Self.describe(merge.dropped))") }
        notePartedForOracle(merge)
        performCore(d, daemons[d].core.replace(with: remade, parting: merge))
    }

    /// What a merge back (or a remake of waiting operations) did, for the oracle: the
    /// operations kept and made again are logged, the parted ones made again count as
    /// themselves.
    mutating func notePartedForOracle(_ merge: ListDocument.MergeBack) {
        for op in merge.kept + merge.made { logged[op.id] = op }
        let dropped = Set(merge.dropped.map(\.id))
        for op in merge.parted where !dropped.contains(op.id) { noteMadeAgain(op) }
    }

    /// `op`, parted, counts as made again for the oracle (its ids, one by one, for the crash's check).
    mutating func noteMadeAgain(_ op: ListOperation) {
        mergedBack[op.id] = op
        for counter in op.id.counter...op.lastID.counter { mergedBackIDs.insert(OpID(counter: counter, replica: op.id.replica)) }
    }

    private mutating func storeCompact(_ d: Int, _ document: ListDocument, replacing: Bool = false) -> Bool {
        do throws(StoreError) {
            let relayed = daemons[d].core.relayedRuns
            if replacing { try daemons[d].disk.replace(with: document, relayed: relayed) } else { try daemons[d].disk.compact(document, relayed: relayed) }
            return true
        } catch {
            report.failures.append("daemon \(d): the store did not take a peer's snapshot: \(error)")
            return false
        }
    }

    /// Every operation a daemon acknowledged is on every copy at the end (`docs`, the live
    /// daemons' and the clients' that kept theirs), as itself, or made again by a merge back
    /// (the lost daemon's acknowledgements too: its device sends such an edit again, or makes it
    /// again under its counters, Docs/Semantics.md §7, "An edit only a forgotten daemon held"):
    /// the report counts those that are not (``SimulationReport/copiesParted``), each a failure.
    mutating func checkNoCopyParted(_ docs: [ListDocument]) {
        var acknowledged = Set<OpID>()
        for daemon in daemons { acknowledged.formUnion(daemon.acknowledged) }
        // What the lost daemon alone acknowledged to a client that keeps no copy (a forgetful
        // one, as the `listsync` commands) is lost with it, by design: no copy of its author's
        // can send it again (Docs/Semantics.md §7, "An edit only a forgotten daemon held").
        if let lost {
            let noCopy = daemons[lost].acknowledged.filter { id in
                let c = Int(id.replica.rawValue % 10_000) - 1
                return clients.indices.contains(c) && clients[c].forgetful
                    && !daemons.indices.contains { $0 != lost && daemons[$0].core.document.version.contains(id) }
            }
            acknowledged.subtract(noCopy)
            report.lostWithoutACopy = noCopy.count
        }
        let parted = acknowledged.filter { id in !mergedBackIDs.contains(id) && docs.contains { !$0.version.contains(id) } }
        report.copiesParted = parted.count
        if !parted.isEmpty {
            report.failures.append("copies parted: \(parted.count) acknowledged operations are missing from some copy, e.g. \(parted.sorted().first!)")
        }
    }
}
