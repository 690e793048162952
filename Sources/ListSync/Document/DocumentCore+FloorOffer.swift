import ListCRDT

// A left-out daemon that only accepts links (Docs/Semantics.md §7): this daemon `X` dials the
// left-out daemon `Y`, its link relays `Y`'s operations here, and this core refuses them for its
// floor (or `Y`'s version is behind the floor, and the link's catch-up here is a snapshot, which
// the link does not relay). `Y` has no link of its own to `X` that would read `X`'s snapshot and
// merge back onto it, so this core offers it over the same connection: its stability table, then its
// snapshot as `floorSnapshot` parts (``SyncMessage/floorSnapshot(document:part:more:)``), sent to
// its own link, which relays them to `Y`; `Y` takes them as its own link takes a peer's snapshot.

extension DocumentCore {
    /// A batch from `subscriber` was refused for the floor (``release()``): if it is this
    /// daemon's own link to a peer that takes offers (``subscribe(_:epoch:version:ownLink:learnsParted:relay:offersFloor:)``)
    /// and the document has a floor, the offer is due, once per subscription; it is sent once
    /// nothing is in flight (the snapshot then holds only durable operations).
    ///
    /// - Complexity: O(1), plus ``offerFloorIfDue(_:)`` when quiet.
    mutating func noteFloorRefusal(of subscriber: SubscriberID) -> [Action] {
        guard var sub = subscribers[subscriber], sub.offersFloor, !sub.floorOffered, document.historyFloor != nil else { return [] }
        sub.floorOffered = true
        sub.floorOfferDue = true
        subscribers[subscriber] = sub
        return offerFloorIfDue(subscriber)
    }

    /// The offer to `subscriber` if it is due and nothing is in flight: the stability table (so
    /// that the peer knows, when it merges back, what the daemons parted, as ``tableFor(_:)``
    /// gives a peer's link before a snapshot catch-up), then the snapshot in `floorSnapshot`
    /// parts under the frame size, in order.
    ///
    /// - Complexity: O(size) of the snapshot and the table.
    mutating func offerFloorIfDue(_ subscriber: SubscriberID) -> [Action] {
        guard subscribers[subscriber]?.floorOfferDue == true, inFlight.isEmpty, failure == nil else { return [] }
        subscribers[subscriber]!.floorOfferDue = false
        var actions: [Action] = []
        if !stability.peers.entries.isEmpty, let table = stabilityFrame() { actions.append(.send(subscriber, table)) }
        for frame in floorSnapshotFrames() { actions.append(.send(subscriber, frame)) }
        return actions
    }

    /// The catch-up of this daemon's own link to a peer that takes offers is a snapshot (the
    /// peer's version is behind this copy's floor: it is a copy left out of it, or one behind it
    /// with nothing of its own): the link relays no `snapshot`, so the snapshot goes as
    /// `floorSnapshot` parts, the offer of this subscription (its table went before it,
    /// ``tableFor(_:)``). What the catch-up queued is dropped (the snapshot holds it); live
    /// operations follow as after any catch-up.
    ///
    /// - Complexity: O(size) of the snapshot.
    mutating func offerFloorAsCatchUp(_ subscriber: SubscriberID) -> [Action] {
        guard var sub = subscribers[subscriber] else { return [] }
        sub.snapshotDue = false
        sub.floorOffered = true
        sub.floorOfferDue = false
        sub.outbox.removeAll()
        sub.syncedDue = true
        subscribers[subscriber] = sub
        let offer = floorSnapshotFrames().map { Action.send(subscriber, $0) }
        return offer + (sub.waiting ? [] : pump(subscriber))
    }

    /// The document's snapshot as `floorSnapshot` frames under the frame size, in order.
    ///
    /// - Complexity: O(size) of the snapshot.
    func floorSnapshotFrames() -> [[UInt8]] { snapshotParts(SyncMessage.floorSnapshot) }
}
