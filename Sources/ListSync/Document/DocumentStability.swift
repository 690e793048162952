import ListCRDT

/// What one document's daemon remembers about who can still send it operations, across restarts
/// (Docs/Semantics.md §7, "Who is a sender"): the ``StabilityTracker`` of its senders, when each
/// was last heard of, which replicas keep no copy, and whether a peer daemon relays it. No I/O:
/// ``DocumentCore`` changes it, its driver stores ``encoded()`` in the document's folder.
///
/// Every replica that authored an operation of the document is a sender until it is heard to
/// keep no copy (``SeenRole/live``) or is retired; a device (``SeenRole/device``) is one from its
/// first report. A sender not heard of for the retire period no longer holds stability back
/// (``retireSilent(now:after:)``); if it comes back behind the floor its operations are refused
/// (``SyncErrorCode/compacted``) and it re-syncs.
public struct DocumentStability: Sendable, Equatable {
    /// The senders' acknowledgements (what each device reported it had seen).
    public private(set) var tracker = StabilityTracker()
    /// When each sender was last heard of (a report, or attached), in seconds of the wall clock.
    public private(set) var lastHeard: [ReplicaID: UInt64] = [:]
    /// Replicas that said they keep no copy: they count only while subscribed.
    public private(set) var ephemeral: Set<ReplicaID> = []
    /// Whether a peer daemon's link was ever attached to the document.
    public private(set) var relayed = false
    /// What this daemon knows of its peers' stability (Docs/Semantics.md §7, "Peers").
    public internal(set) var peers = PeerStability()
    /// When (the stability clock) the daemon found this document's stability lost: a document
    /// it did not create just now and whose stability file is missing or unreadable
    /// (Docs/Semantics.md §7, "A lost stability file"). Until a peer's table arrives or ``lostCleared(now:after:)`` says the retire period
    /// passed, the document is taken as peered with peers not known yet, and is not compacted.
    /// Nil: not lost.
    public private(set) var lostSince: UInt64?

    /// Nothing known: every author found later holds stability back until heard of or retired.
    public init() {}

    /// The stability of a document whose stability file is gone or unreadable, found at `now`
    /// (the stability clock): nothing known, and ``lostSince`` set.
    public static func lost(at now: UInt64) -> DocumentStability {
        var stability = DocumentStability()
        stability.lostSince = now
        return stability
    }

    /// The stability a restarted daemon starts a document from, given its stability file's
    /// bytes (nil: there is none, or it could not be read): the file's, if it decodes; else a
    /// stability lost (``lost(at:)``, at `now`): the daemon writes a document's stability file
    /// when it creates the document, so a document without one may have peers this daemon no
    /// longer knows of (Docs/Semantics.md §7, "A lost stability file"). `problem` says why the
    /// file was not taken (nil when it was): the caller then writes the result at once, so that
    /// a crash keeps it lost.
    ///
    /// - Complexity: O(size) of the file.
    public static func recovered(from file: [UInt8]?, now: UInt64) -> (stability: DocumentStability, problem: String?) {
        var problem = "no stability file"
        if let file {
            do { return (try DocumentStability(decoding: file), nil) } catch { problem = "\(error)" }
        }
        return (lost(at: now), problem)
    }

    /// A peer's table arrived: the document's peers are known from now on (``relayed``), so
    /// the stability is no longer lost. Returns whether it was.
    mutating func peersFound() -> Bool {
        defer { lostSince = nil }
        return lostSince != nil
    }

    /// Clears ``lostSince`` once `after` has passed since it (no peer's table came in the
    /// retire period: the document has no peer, or none that is not as good as gone, the rule
    /// that retires a silent sender). Returns whether it did.
    public mutating func lostCleared(now: UInt64, after: UInt64) -> Bool {
        guard let since = lostSince, now >= since, now - since >= after else { return false }
        lostSince = nil
        return true
    }

    /// A device `replica` reports it has seen `version`, at `now` (seconds). A retired replica
    /// counts again only if `caughtUp` (its version includes the document's floor).
    /// Returns whether the set of senders changed (worth writing down at once).
    public mutating func heardFromDevice(_ replica: ReplicaID, version: VersionVector, caughtUp: Bool, now: UInt64) -> Bool {
        let before = (tracker.acknowledged[replica] == nil, tracker.retired.contains(replica), ephemeral.contains(replica))
        ephemeral.remove(replica)
        _ = peers.local(replica)
        if tracker.retired.contains(replica) {
            guard caughtUp else { return before.2 }
            tracker.reinstate(replica, version: version)
        } else {
            tracker.acknowledge(replica, version: version)
        }
        lastHeard[replica] = now
        return before.0 || before.1 || before.2
    }

    /// `replica` keeps no copy of its own (``SeenRole/live``): from now on it counts only while
    /// it is subscribed. Returns whether that is new.
    public mutating func heardFromLive(_ replica: ReplicaID) -> Bool {
        guard ephemeral.insert(replica).inserted else { return false }
        _ = peers.local(replica)
        if tracker.acknowledged[replica] != nil { tracker.retire(replica) }
        lastHeard[replica] = nil
        return true
    }

    /// A peer daemon `daemon` (its replica id) relays the document: noted, it holds compaction
    /// back until it reports its stability (``PeerStability``) or is retired. Returns whether
    /// that is new.
    public mutating func heardFromRelay(_ daemon: ReplicaID, me: ReplicaID, now: UInt64) -> Bool {
        let first = !relayed
        relayed = true
        return peers.note(daemon: daemon, me: me, now: now) || first
    }

    /// Counts every author of `version` not known yet as a sender that has acknowledged nothing,
    /// heard of `now`: an older client's replica, or one that never reported, holds stability
    /// back until it reports or is retired. Authors that came only through peer links and peer
    /// daemons are left to ``peers``, and so is an author a peer daemon claims (a relay author
    /// this daemon had not written down before a restart). Returns whether any was new.
    ///
    /// - Complexity: O(r) for the r replicas of `version`.
    public mutating func noteAuthors(of version: VersionVector, now: UInt64) -> Bool {
        var added = false
        for e in version.entries where tracker.acknowledged[e.replica] == nil && !tracker.retired.contains(e.replica)
            && !ephemeral.contains(e.replica) && !isPeerReplica(e.replica) {
            if peers.isClaimed(e.replica) {
                added = peers.noteRelayAuthors([e.replica], now: now, isLocal: { _ in false }) || added
                continue
            }
            tracker.addSender(e.replica)
            lastHeard[e.replica] = now
            added = true
        }
        return added
    }

    /// Authors counted here as senders that never reported anything, which another daemon (not
    /// `me`) claims, become relay authors: they may never report here (their operations came
    /// through a peer before this daemon wrote down that they did: a lost stability file, a
    /// crash), and the daemon that counts them holds its entry back for them. Returns whether
    /// any did.
    ///
    /// - Complexity: O(s × e) for s senders and e entries.
    public mutating func adoptClaimedAuthors(me: ReplicaID, now: UInt64) -> Bool {
        let claimed = tracker.acknowledged.filter { $0.value == VersionVector() && peers.isClaimed($0.key, except: me) }.keys.sorted()
        for r in claimed where tracker.forget(r) {
            lastHeard[r] = nil
            _ = peers.noteRelayAuthors([r], now: now, isLocal: { _ in false })
        }
        return !claimed.isEmpty
    }

    /// Whether `replica` is a peer daemon or an author counted through the peers.
    func isPeerReplica(_ replica: ReplicaID) -> Bool {
        peers.relayAuthors.contains(replica) || peers.retiredAuthors.contains(replica) || peers.entries[replica] != nil
            || peers.retired.contains(replica)
    }

    /// Whether this daemon (replica `me`) may have taken `author`'s edits from it directly, so
    /// that a merge back makes them again: itself, or an author that is neither a relay author
    /// nor a retired relay author it does not count itself (those came through peer links; the
    /// daemon that took them from their author makes them again).
    func tookDirectly(_ author: ReplicaID, me: ReplicaID) -> Bool {
        author == me || !peers.relayAuthors.contains(author) && (!peers.retiredAuthors.contains(author) || isLocal(author))
    }

    /// Whether this daemon counts `replica` itself (a sender, retired or keeping no copy).
    func isLocal(_ replica: ReplicaID) -> Bool {
        tracker.acknowledged[replica] != nil || tracker.retired.contains(replica) || ephemeral.contains(replica)
    }

    /// The replicas this daemon accounts for in its own entry (``PeerStability/Entry/claimed``):
    /// its senders not retired and those that keep no copy.
    ///
    /// - Complexity: O(s).
    public var claimed: Set<ReplicaID> { Set(tracker.acknowledged.keys).union(ephemeral) }

    /// `replica` is attached now (a subscribed device): it is heard of.
    public mutating func attached(_ replica: ReplicaID, now: UInt64) {
        if tracker.acknowledged[replica] != nil { lastHeard[replica] = now }
    }

    /// Retires every sender not heard of for `after` seconds before `now`; returns them, in order.
    ///
    /// - Complexity: O(s log s) for s senders.
    public mutating func retireSilent(now: UInt64, after: UInt64) -> [ReplicaID] {
        let silent = tracker.acknowledged.keys.filter { now &- (lastHeard[$0] ?? 0) >= after && now >= (lastHeard[$0] ?? 0) }.sorted()
        for r in silent {
            tracker.retire(r)
            lastHeard[r] = nil
        }
        return silent
    }

    // MARK: Encoding

    static let magicV1: [UInt8] = Array("LSSTAB1\n".utf8)
    static let magicV2: [UInt8] = Array("LSSTAB2\n".utf8)
    static let magicV3: [UInt8] = Array("LSSTAB3\n".utf8)
    static let magicV4: [UInt8] = Array("LSSTAB4\n".utf8)
    static let magicV5: [UInt8] = Array("LSSTAB5\n".utf8)
    static let magicV6: [UInt8] = Array("LSSTAB6\n".utf8)
    static let magicV7: [UInt8] = Array("LSSTAB7\n".utf8)
    static let magic: [UInt8] = Array("LSSTAB8\n".utf8)

    /// The bytes to keep in the document's folder.
    ///
    /// ```
    /// "LSSTAB8\n" relayed:u8 senders:varint (replica:varint heard:varint version)×
    /// retired:varint replica:varint× ephemeral:varint replica:varint× peers lost:u8 [since:varint]
    /// ```
    /// where `peers` is ``PeerStability``'s table (``PeerStability/encode(into:)``, with each
    /// entry's offer, its parted runs and what it held) and `lost` says whether ``lostSince``
    /// follows. A version-7 file (`LSSTAB7`, no entry holding more than its version), a
    /// version-6 file (`LSSTAB6`, one parted run per author), a version-5 file (`LSSTAB5`,
    /// no offers in `peers`), a version-4 file (`LSSTAB4`, not lost either), a version-3 file
    /// (`LSSTAB3`, nothing parted in `peers`), a version-2 file (`LSSTAB2`, no retirements either)
    /// and a version-1 file (`LSSTAB1`, no `peers`) still load.
    /// - Complexity: O(size).
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.bytes = Self.magic
        w.byte(relayed ? 1 : 0)
        let senders = tracker.acknowledged.keys.sorted()
        w.count(senders.count)
        for r in senders {
            w.varint(r.rawValue); w.varint(lastHeard[r] ?? 0); w.version(tracker.acknowledged[r]!)
        }
        w.count(tracker.retired.count)
        for r in tracker.retired.sorted() { w.varint(r.rawValue) }
        w.count(ephemeral.count)
        for r in ephemeral.sorted() { w.varint(r.rawValue) }
        peers.encode(into: &w)
        w.byte(lostSince == nil ? 0 : 1)
        if let lostSince { w.varint(lostSince) }
        return w.bytes
    }

    /// Reads what ``encoded()`` wrote.
    ///
    /// - Throws: ``SyncProtocolError/malformed(_:)`` for bytes that are not whole and valid; the
    ///   caller then starts from nothing (safe: every author holds stability back again).
    /// - Complexity: O(size).
    public init(decoding bytes: [UInt8]) throws(SyncProtocolError) {
        let v8 = bytes.starts(with: Self.magic)
        let v7 = v8 || bytes.starts(with: Self.magicV7)
        let v6 = v7 || bytes.starts(with: Self.magicV6)
        let v5 = v6 || bytes.starts(with: Self.magicV5)
        let v4 = v5 || bytes.starts(with: Self.magicV4)
        let v3 = v4 || bytes.starts(with: Self.magicV3), v2 = v3 || bytes.starts(with: Self.magicV2)
        guard v2 || bytes.starts(with: Self.magicV1) else { throw .malformed("not a stability file") }
        var r = WireReader(Array(bytes.dropFirst(Self.magic.count)))
        do {
            relayed = try r.flag()
            var acknowledged: [ReplicaID: VersionVector] = [:]
            for _ in 0..<(try r.count(minBytes: 3)) {
                let replica = ReplicaID(try r.varint())
                lastHeard[replica] = try r.varint()
                acknowledged[replica] = try r.version()
            }
            var retired = Set<ReplicaID>()
            for _ in 0..<(try r.count(minBytes: 1)) { retired.insert(ReplicaID(try r.varint())) }
            for _ in 0..<(try r.count(minBytes: 1)) { ephemeral.insert(ReplicaID(try r.varint())) }
            if v2 { peers = try PeerStability(reading: &r, retirements: v3, parted: v4, prefixes: v6, runs: v7, held: v8) }
            if v5, try r.flag() { lostSince = try r.varint() }
            guard r.isAtEnd, Set(acknowledged.keys).isDisjoint(with: retired) else { throw SyncProtocolError.malformed("inconsistent stability file") }
            tracker = StabilityTracker(acknowledged: acknowledged, retired: retired)
        } catch let e as SyncProtocolError {
            throw e
        } catch {
            throw .malformed("stability file: \(error)")
        }
    }

    /// Every sender's acknowledgement lowered to at most `version` (``StabilityTracker/lower(to:)``):
    /// the document was merged back onto a peer's copy that lacks some of what they reported.
    public mutating func lowerAcknowledgements(to version: VersionVector) {
        tracker.lower(to: version)
    }
}
