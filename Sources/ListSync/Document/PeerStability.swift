import ListCRDT

/// What one daemon knows of the other daemons that hold a document (Docs/Semantics.md §7,
/// "Peers"): for each daemon, the latest version at which it was *locally quiescent* and the
/// replicas it accounts for; and which authors reached this daemon only through peer links. No
/// I/O: ``DocumentCore`` keeps one in its ``DocumentStability``, merges what peers gossip
/// (``SyncMessage/stability(document:from:entries:)``) and asks ``allows(_:me:)``.
///
/// A daemon is named by its replica id of the document (`ListDocument.replica`, the daemon's
/// replica, the same for every document of its data folder). Only a daemon writes its own entry
/// (``publish(_:version:claimed:now:)``), with a greater ``Entry/sequence`` each time; a merge
/// keeps, per daemon, the entry of the greater sequence. That is a join-semilattice: a table
/// received twice, late or through a cycle of links changes nothing more.
public struct PeerStability: Sendable, Equatable {
    /// One daemon's report.
    public struct Entry: Sendable, Equatable {
        /// The owner's counter: a greater one replaces the entry (0: a placeholder, a daemon
        /// known to exist that has reported nothing).
        public var sequence: UInt64
        /// The latest version the daemon vouches for: it was locally quiescent there (it held
        /// exactly this, nothing in flight or waiting, every client subscriber and every sender it
        /// counts had said it had seen exactly this), or, taken as a stable prefix while busy
        /// (Docs/Semantics.md §7, "Peers while busy"), nothing was in flight or waiting, every
        /// sender it claims had acknowledged a version including it and every operation each had
        /// made up to that was held there, every client subscriber had seen it, and every operation
        /// the daemon held outside it was causally after it. Only grows. Empty: never.
        public var version: VersionVector
        /// The replicas the daemon accounts for: its senders (devices, authors), those that keep
        /// no copy, and itself.
        public var claimed: Set<ReplicaID>
        /// The sequence of the daemon's latest entry that claimed less than the one before (it
        /// retired a replica, Docs/Semantics.md §7 "Retiring with peers"); 0: none.
        public var retiredAt: UInt64
        /// Per other daemon whose entry had a ``retiredAt``: that ``retiredAt``, as this daemon held
        /// it when it was last locally quiescent (at ``version``): it had the entry without the
        /// replicas retired and checked their edits as unclaimed from then on. Empty from an older
        /// daemon: then nobody it may have taken edits of is retired.
        public var acknowledged: [ReplicaID: UInt64]
        /// The replicas the daemon retired (counted once, silent for the retire period, and not
        /// back since): a relay author elsewhere that no daemon claims and some daemon retired is
        /// retired there too.
        public var retired: Set<ReplicaID>
        /// Per author, the counters of the operations the daemon *parted* when it merged its copy
        /// back onto a peer's compacted copy (Docs/Semantics.md §7, "A copy left out of a peer's
        /// floor"): originals it took before that peer's floor and made again as new operations.
        /// No copy compacted at that floor ever takes them as they are, so a daemon with a floor
        /// that lacks one of them answers a subscriber whose version counts it with a snapshot
        /// (``DocumentCore``'s catch-up), and the subscriber drops it. Only grows; kept in the
        /// stability file. Empty from an older daemon, or one that never merged back. Runs of
        /// counters, several per author where the daemon parted an author's operations twice
        /// (an older daemon's, or an older file's, one run per author: what it parted and what
        /// lies between).
        public var parted: PartedRanges
        /// The stable prefix the daemon could vouch for when it last looked (Docs/Semantics.md §7,
        /// "Peers while busy"): a version its senders acknowledged, whose operations it holds, and
        /// that every operation it held outside was causally after. Only a hint for the daemon that
        /// proposes (``prefixLeader``): the meet of every daemon's offer bounds what it proposes.
        /// Nil: the daemon reports none (a daemon of an older build, or stable prefixes off); then
        /// no daemon proposes, and the document keeps the quiescent rule.
        public var offer: VersionVector?
        /// The proposal (the leader's ``version``) this daemon found it can never take as its own
        /// version (an operation it holds outside it is not causally after it, or it does not include
        /// what this daemon published): the leader then proposes another. Empty: none.
        public var refused: VersionVector
        /// What the daemon's copy held when it wrote ``version`` (Docs/Semantics.md §7,
        /// "Peers compacting under a chain of concurrent edits"): it vouched for ``version``
        /// with operations held outside it that are not causally after it, all within `held`
        /// (every operation its claimed senders made before they saw ``version``). A daemon
        /// compacts at an agreed version only once its copy holds every voucher's `held`. Nil:
        /// ``version`` itself (a quiescent version, a stable prefix every operation held
        /// outside was after, or an entry of an older daemon, which vouches only for those).
        public var held: VersionVector?

        public init(sequence: UInt64, version: VersionVector, claimed: Set<ReplicaID>, retiredAt: UInt64 = 0,
                    acknowledged: [ReplicaID: UInt64] = [:], retired: Set<ReplicaID> = [],
                    parted: PartedRanges = PartedRanges(), offer: VersionVector? = nil,
                    refused: VersionVector = VersionVector(), held: VersionVector? = nil) {
            (self.sequence, self.version, self.claimed) = (sequence, version, claimed)
            (self.retiredAt, self.acknowledged, self.retired) = (retiredAt, acknowledged, retired)
            (self.parted, self.offer, self.refused) = (parted, offer, refused)
            self.held = held
        }

        /// What an agreement on a version this entry vouches for needs a copy to hold:
        /// ``held``, or ``version`` where the entry says nothing more.
        public var holds: VersionVector { held ?? version }

        /// Whether `version` ends, for some author, on an operation this entry says its daemon
        /// parted (``parted``) that a copy at `held` lacks. Only its last counter of each author
        /// is looked at: a version counts every counter up to the greatest, and one that goes past
        /// a parted range may hold none of it (a device that re-synced dropped the originals and
        /// made its edits again under later counters).
        ///
        /// - Complexity: O(p) for p authors parted.
        public func countsParted(_ version: VersionVector, lacking held: VersionVector) -> Bool {
            parted.runs.contains { r, runs in version[r] > held[r] && runs.contains { $0.contains(version[r]) } }
        }
    }

    /// Every daemon known and not retired, this one's included once it published.
    public private(set) var entries: [ReplicaID: Entry] = [:]
    /// When each daemon's entry last changed here, and when each relay author was last
    /// claimed, in the stability clock's seconds (for the retire period).
    public private(set) var heard: [ReplicaID: UInt64] = [:]
    /// Daemons declared gone: they no longer hold compaction back.
    public private(set) var retired: Set<ReplicaID> = []
    /// Authors whose operations reached this daemon only through peer links: each must be
    /// claimed by a daemon's entry (or retired) before this daemon compacts.
    public private(set) var relayAuthors: Set<ReplicaID> = []
    /// Relay authors declared gone.
    public private(set) var retiredAuthors: Set<ReplicaID> = []
    /// Daemons forgotten here that came back (``merge(_:me:floor:now:takesBack:)``): the operator's
    /// word (`--forget-peer`) no longer forgets them. In memory only: after a restart the word
    /// forgets such a daemon again, and it comes back again the same way.
    public private(set) var returned: Set<ReplicaID> = []

    /// Nothing known.
    public init() {}

    /// Whether there is anything of peers here (a document no peer ever touched has nothing).
    public var isEmpty: Bool { entries.isEmpty && relayAuthors.isEmpty && retired.isEmpty && retiredAuthors.isEmpty }

    /// Notes that daemon `daemon` exists (a link of it attached): until it reports, its
    /// placeholder entry holds compaction back. Nothing for a known or retired daemon, or `me`.
    /// Returns whether that is new.
    public mutating func note(daemon: ReplicaID, me: ReplicaID, now: UInt64) -> Bool {
        guard daemon != me, entries[daemon] == nil, !retired.contains(daemon) else { return false }
        entries[daemon] = Entry(sequence: 0, version: VersionVector(), claimed: [])
        heard[daemon] = now
        return true
    }

    /// This daemon (`me`) was locally quiescent at `version`, accounting for `claimed`: its own
    /// entry becomes that, with the next sequence, if it differs or if the last was published
    /// `heartbeat` seconds ago or more (so that its peers keep hearing of it). Returns whether
    /// the entry changed (gossip it). `held`: what its copy held when it vouched for `version`
    /// with concurrent operations outside it (``Entry/held``; nil or `version` itself: nothing
    /// more); an entry already at `version` keeps the `held` it was written with.
    ///
    /// - Complexity: O(c) for c replicas claimed.
    public mutating func publish(_ me: ReplicaID, version: VersionVector, claimed: Set<ReplicaID>,
                                 retired: Set<ReplicaID> = [], now: UInt64, heartbeat: UInt64 = .max,
                                 held: VersionVector? = nil) -> Bool {
        var claimed = claimed
        claimed.insert(me)
        // The daemons retired here are listed too: every daemon that holds this entry forgets
        // them (``merge(_:me:floor:now:)``).
        let retired = retired.union(self.retired)
        let old = entries[me]
        // The retirements of other daemons this one holds now, at this quiescence.
        let acknowledged = retirementsHeld(except: me)
        if let old, old.version == version, old.claimed == claimed, old.acknowledged == acknowledged, old.retired == retired,
           now &- (heard[me] ?? 0) < heartbeat { return false }
        let sequence = (old?.sequence ?? 0) + 1
        // Claiming less than before: a replica was retired (or another daemon counts it now); or
        // a daemon forgotten.
        // A first entry that already lists forgotten daemons is a retirement too.
        let retiredAt = old.map { o in
            o.claimed.isSubset(of: claimed) && self.retired.isSubset(of: o.retired) ? o.retiredAt : sequence
        } ?? (self.retired.isEmpty ? 0 : sequence)
        entries[me] = Entry(sequence: sequence, version: version, claimed: claimed, retiredAt: retiredAt,
                            acknowledged: acknowledged, retired: retired, parted: old?.parted ?? PartedRanges(),
                            offer: old?.offer, refused: old?.refused ?? VersionVector(),
                            held: old?.version == version ? old?.held : held.flatMap { $0 == version ? nil : $0 })
        heard[me] = now
        assert(entries[me]!.sequence > (old?.sequence ?? 0))
        return true
    }

    /// This daemon (`me`) holds exactly its entry's version still, nothing taken since it was
    /// locally quiescent there (nothing in flight or waiting: the caller checks): its entry
    /// acknowledges the retirements it holds now (``Entry/acknowledged``), with the next sequence,
    /// if that changed. From the moment it holds a retiring entry it checks the replicas retired
    /// as unclaimed, and its copy has not moved since its version, so it took none of their edits
    /// made before it (Docs/Semantics.md §7, "Retiring with peers"). Returns whether the entry
    /// changed.
    ///
    /// - Complexity: O(e) for e entries.
    public mutating func acknowledgeRetirements(_ me: ReplicaID, now: UInt64) -> Bool {
        guard var mine = entries[me] else { return false }
        let acknowledged = retirementsHeld(except: me)
        guard acknowledged != mine.acknowledged else { return false }
        mine.acknowledged = acknowledged
        mine.sequence += 1
        entries[me] = mine
        heard[me] = now
        return true
    }

    /// This daemon's (`me`) ``Entry/offer`` and ``Entry/refused`` become these, with the next
    /// sequence, if they changed (a placeholder entry if it has published nothing: it still holds
    /// compaction back as before). Returns whether the entry changed (gossip it).
    ///
    /// - Complexity: O(r) for r replicas in the versions.
    public mutating func reportPrefix(_ me: ReplicaID, offer: VersionVector, refused: VersionVector, now: UInt64) -> Bool {
        var mine = entries[me] ?? Entry(sequence: 0, version: VersionVector(), claimed: [me])
        guard mine.offer != offer || mine.refused != refused else { return false }
        mine.offer = offer
        mine.refused = refused
        mine.sequence += 1
        entries[me] = mine
        heard[me] = now
        return true
    }

    /// Per daemon other than `me` whose entry here has a retirement, that ``Entry/retiredAt``:
    /// what `me`'s entry acknowledges when it is written.
    ///
    /// - Complexity: O(e) for e entries.
    private func retirementsHeld(except me: ReplicaID) -> [ReplicaID: UInt64] {
        var held: [ReplicaID: UInt64] = [:]
        for (d, e) in entries where d != me && e.retiredAt > 0 { held[d] = e.retiredAt }
        return held
    }

    /// This daemon (`me`) parted the operations of `ranges` (per author, one run of counters),
    /// as ``noteParted(_:runs:now:)`` notes them. A run apart from the author's runs
    /// noted before is kept apart (a single run from the first to the last would name operations
    /// between that were never parted, and a copy without a floor takes out what a range names:
    /// Docs/Semantics.md §7, "Parted originals a copy holds"). Returns whether its entry changed.
    ///
    /// - Complexity: O(p × g) for p authors in `ranges` and g runs of each noted before.
    public mutating func noteParted(_ me: ReplicaID, ranges: [ReplicaID: ClosedRange<UInt64>], now: UInt64) -> Bool {
        noteParted(me, runs: PartedRanges(hulls: ranges), now: now)
    }

    /// This daemon (`me`) parted the operations of `runs` in a merge back or when it took out or
    /// made again what it kept on parted originals (``Entry/parted``; the core names the
    /// operations it took out, not the difference of its versions, which counts every counter
    /// up to an author's greatest). Its entry says so at once, with the next sequence (a
    /// placeholder entry if it has published nothing: it still holds compaction back as
    /// before). Ranges only grow. Returns whether its entry changed.
    ///
    /// - Complexity: O(p × g²) for p authors of g runs.
    public mutating func noteParted(_ me: ReplicaID, runs: PartedRanges, now: UInt64) -> Bool {
        var mine = entries[me] ?? Entry(sequence: 0, version: VersionVector(), claimed: [me])
        guard mine.parted.formUnion(runs) else { return false }
        mine.sequence += 1
        entries[me] = mine
        heard[me] = now
        return true
    }

    /// Whether some daemon's entry says `version` ends on an operation it parted that a copy at
    /// `held` lacks (``Entry/countsParted(_:lacking:)``).
    ///
    /// - Complexity: O(e × p) for e entries of p authors parted.
    public func countsParted(_ version: VersionVector, lacking held: VersionVector) -> Bool {
        entries.values.contains { $0.countsParted(version, lacking: held) }
    }

    /// Keeps this daemon's entry heard of: published again, unchanged, with the next sequence,
    /// once `every` seconds have passed since it was last (a busy daemon that is never
    /// quiescent must not be retired by its peers). Returns whether it was.
    public mutating func heartbeat(_ me: ReplicaID, now: UInt64, every: UInt64) -> Bool {
        var old = entries[me] ?? Entry(sequence: 0, version: VersionVector(), claimed: [me])
        guard entries[me] == nil || now &- (heard[me] ?? 0) >= every else { return false }
        // Unchanged but its sequence: what it acknowledged stays that of its last quiescence.
        old.sequence += 1
        entries[me] = old
        heard[me] = now
        return true
    }

    /// Merges a table a peer gossiped: per daemon, the entry of the greater sequence; `me`'s own
    /// entry is never taken from others, but if they hold one of a sequence at least `me`'s (this
    /// daemon's stability file was lost or restored from a backup), `me`'s sequence moves past it
    /// (its content unchanged, or empty if it had none) so that its next reports are taken. A
    /// retired daemon counts again only if its new entry's version includes `floor` (it caught up
    /// past every compaction made without it; with no floor, always). Returns whether anything
    /// changed.
    ///
    /// - Complexity: O(e × c) for e entries of c replicas claimed.
    /// A forgotten daemon that still runs comes back (Docs/Semantics.md §7, "A daemon forgotten
    /// while it runs"): its entry is taken again, although entries list it as retired, when it
    /// acknowledges every one of them (``cameBack(_:_:listedIn:)``) and its version includes
    /// `floor`; and a daemon whose entry held here does so is not forgotten again for an entry
    /// listing it. `takesBack` false: never (a deliberately broken table's, as before the rule).
    ///
    /// - Complexity: O(e × c) for e entries of c replicas claimed.
    public mutating func merge(_ incoming: [ReplicaID: Entry], me: ReplicaID, floor: VersionVector?, now: UInt64,
                               takesBack: Bool = true) -> Bool {
        var changed = false
        if let theirs = incoming[me], entries[me] == nil || theirs.sequence > entries[me]!.sequence
            || (theirs.sequence == entries[me]!.sequence && theirs != entries[me]!) {
            var mine = entries[me] ?? Entry(sequence: 0, version: VersionVector(), claimed: [me])
            // A retirement of this daemon's that its peers may hold with a greater sequence
            // than this one knows, or claims it no longer makes (its file lost): taken as a
            // retirement made now, at the new sequence.
            if mine.retiredAt > 0 || theirs.retiredAt > 0 || !theirs.claimed.isSubset(of: mine.claimed) {
                mine.retiredAt = theirs.sequence + 1
            }
            mine.sequence = theirs.sequence + 1
            entries[me] = mine
            heard[me] = now
            changed = true
        }
        // What any entry, held or received, lists as retired (asked only of a retired daemon).
        lazy var listedBefore = Self.retiredListed(in: entries.values).union(Self.retiredListed(in: incoming.values))
        let heldBefore = entries
        for (daemon, entry) in incoming where daemon != me {
            if retired.contains(daemon) {
                // Back only once it caught up past every compaction made without it, and while
                // no daemon lists it as forgotten (a stale entry of it still goes round), unless
                // it acknowledged every entry that lists it: then it ran after it was forgotten.
                guard entry.sequence > 0, floor.map({ entry.version.includes($0) }) ?? true,
                      !listedBefore.contains(daemon)
                        || takesBack && Self.cameBack(daemon, entry, listedIn: heldBefore, incoming) else { continue }
                if listedBefore.contains(daemon) { returned.insert(daemon) }
                retired.remove(daemon)
            } else if let old = entries[daemon], old.sequence >= entry.sequence {
                continue
            }
            entries[daemon] = entry
            heard[daemon] = now
            for a in entry.claimed where relayAuthors.contains(a) { heard[a] = now }
            changed = true
        }
        // A daemon another daemon forgot (``forget(daemon:me:now:)``) is forgotten here too; a
        // relay author that a daemon retired and none claims is retired here too: the daemons
        // agree on it before any compacts (``allows(_:me:)``).
        if changed {
            let listed = Self.retiredListed(in: entries.values)
            for d in listed.sorted() where d != me && entries[d] != nil
                && !(takesBack && Self.cameBack(d, entries[d]!, listedIn: entries, incoming)) {
                returned.remove(d)
                forget(daemon: d, me: me, now: now)
            }
            for a in relayAuthors.sorted() where !isClaimed(a) && listed.contains(a) {
                retireRelayAuthor(a)
            }
        }
        return changed
    }

    /// Whether `entry`, daemon `daemon`'s, was published after every daemon whose entry (of
    /// `held` or `incoming`) lists `daemon` as retired had forgotten it: for each such entry, of
    /// daemon `z`, `entry` acknowledges `z`'s retirement at that entry's ``Entry/retiredAt`` or
    /// later. A daemon's entries list it from the one of the forgetting on, whose `retiredAt` is
    /// that entry's sequence, and a `retiredAt` only grows; so only a daemon that held such an
    /// entry, and published after, acknowledges that much: never a stale copy of an entry it
    /// published before it was forgotten (a daemon lost for good). False if no entry lists it.
    ///
    /// - Complexity: O(e) for e entries.
    static func cameBack(_ daemon: ReplicaID, _ entry: Entry, listedIn held: [ReplicaID: Entry],
                         _ incoming: [ReplicaID: Entry]) -> Bool {
        var listing = false
        for table in [held, incoming] {
            for (z, e) in table where z != daemon && e.retired.contains(daemon) {
                listing = true
                guard (entry.acknowledged[z] ?? 0) >= e.retiredAt else { return false }
            }
        }
        return listing
    }

    /// Relay author `a` is retired: no longer waited for, and its edits checked as unclaimed.
    private mutating func retireRelayAuthor(_ a: ReplicaID) {
        relayAuthors.remove(a)
        heard[a] = nil
        retiredAuthors.insert(a)
    }

    /// Every replica some entry of `entries` lists as retired (``Entry/retired``).
    ///
    /// - Complexity: O(e × r) for e entries of r replicas retired.
    static func retiredListed(in entries: some Sequence<Entry>) -> Set<ReplicaID> {
        entries.reduce(into: Set<ReplicaID>()) { $0.formUnion($1.retired) }
    }

    /// The operator declared daemon `daemon` gone for good (`listsync serve --forget-peer`), or
    /// another daemon's entry lists it so: its entry goes, it is retired (a stale copy of its entry
    /// is not taken again while any entry lists it), and every relay author no daemon left
    /// claims is retired too: those only it claimed, and those it counted without its entry
    /// reaching this daemon (their edits are checked as unclaimed from now on, Docs/Semantics.md
    /// §7, "Forgetting a daemon"). This daemon's entry, if it has one, lists it as retired at once,
    /// with the next sequence and a new ``Entry/retiredAt`` (so that a stale copy of the
    /// forgotten daemon's entry is not taken here again): no daemon compacts until every other
    /// one has acknowledged that, as for a device retired. Nothing for `me`. Returns whether
    /// anything changed.
    ///
    /// - Complexity: O(e × c + a × e) for e entries of c replicas claimed and a relay authors.
    @discardableResult
    public mutating func forget(daemon: ReplicaID, me: ReplicaID, now: UInt64) -> Bool {
        guard daemon != me else { return false }
        var changed = false
        if var mine = entries[me], !mine.retired.contains(daemon) {
            mine.retired.insert(daemon)
            mine.sequence += 1
            mine.retiredAt = mine.sequence
            entries[me] = mine
            heard[me] = now
            changed = true
        }
        let entry = entries.removeValue(forKey: daemon)
        heard[daemon] = nil
        let newly = retired.insert(daemon).inserted || entry != nil
        changed = newly || changed
        // Forgotten now: every relay author no daemon left claims is retired, those only `daemon`
        // claimed and those it counted (or retired) without its entry saying so here before it
        // was lost. The operator's word is that it never reports them; waited for, they would
        // hold compaction back for ever.
        if newly {
            for a in relayAuthors.sorted() where !isClaimed(a) { retireRelayAuthor(a) }
        }
        assert(entries[daemon] == nil && retired.contains(daemon))
        return changed
    }

    /// Notes authors of operations that came through a peer link, unless `isLocal` says this
    /// daemon counts them itself. Returns whether any was new.
    ///
    /// - Complexity: O(a) for a authors.
    public mutating func noteRelayAuthors(_ authors: some Sequence<ReplicaID>, now: UInt64,
                                          isLocal: (ReplicaID) -> Bool) -> Bool {
        var added = false
        for a in authors where !relayAuthors.contains(a) && !retiredAuthors.contains(a) && !isLocal(a) {
            relayAuthors.insert(a)
            heard[a] = now
            added = true
        }
        return added
    }

    /// `author` is counted locally from now on (it sent to this daemon itself): no longer a
    /// relay author. Returns whether it was one.
    public mutating func local(_ author: ReplicaID) -> Bool {
        guard relayAuthors.remove(author) != nil else { return false }
        heard[author] = nil
        return true
    }

    /// Whether `author` is claimed by a daemon's entry (or is a daemon), `me`'s aside if given.
    ///
    /// - Complexity: O(e) for e entries.
    public func isClaimed(_ author: ReplicaID, except me: ReplicaID? = nil) -> Bool {
        entries[author] != nil || entries.contains { $0.key != me && $0.value.claimed.contains(author) }
    }

    /// What holds this daemon (`me`) back from compacting at `version`, as far as its peers go
    /// (nil: nothing): its own entry or another daemon's not at exactly `version` (with `exactly`
    /// false, not including it: a stable prefix every entry was seen at, Docs/Semantics.md §7,
    /// "Peers while busy"), a daemon's
    /// retirement not acknowledged by every other (``Entry/acknowledged``; not checked when
    /// `acknowledgedRetirements` is false, a deliberately broken core's), or a relay author no
    /// daemon claims. (Its own local quiescence, and that every peer link attached is a known
    /// daemon, ``DocumentCore`` checks.)
    ///
    /// - Complexity: O(e × r + e² + a × e) for e entries of r replicas and a relay authors.
    public func hold(_ version: VersionVector, me: ReplicaID, acknowledgedRetirements: Bool = true, exactly: Bool = true) -> Hold? {
        guard let mine = entries[me], exactly ? mine.version == version : mine.version.includes(version) else { return .ownEntry }
        if let d = entries.first(where: { exactly ? $0.value.version != version : !$0.value.version.includes(version) })?.key {
            return .daemonAtAnotherVersion(d)
        }
        if acknowledgedRetirements, let (d, w) = unacknowledgedRetirement { return .retirementNotAcknowledged(d, by: w) }
        if let a = relayAuthors.first(where: { !isClaimed($0) }) { return .unclaimedRelayAuthor(a) }
        return nil
    }

    /// Whether this daemon (`me`) may compact at `version`, as far as its peers go: nothing
    /// holds it back (``hold(_:me:acknowledgedRetirements:exactly:)``).
    ///
    /// - Complexity: that of ``hold(_:me:acknowledgedRetirements:exactly:)``.
    public func allows(_ version: VersionVector, me: ReplicaID, acknowledgedRetirements: Bool = true) -> Bool {
        hold(version, me: me, acknowledgedRetirements: acknowledgedRetirements) == nil
    }

    /// What holds a daemon back from compacting, as far as its peers go (``hold(_:me:acknowledgedRetirements:exactly:)``).
    public enum Hold: Equatable, Sendable, CustomStringConvertible {
        /// Its own entry is not at the version (it has not published it).
        case ownEntry
        /// This daemon's entry is at another version.
        case daemonAtAnotherVersion(ReplicaID)
        /// The first daemon's retirement is not acknowledged by the second.
        case retirementNotAcknowledged(ReplicaID, by: ReplicaID)
        /// A relay author no daemon claims.
        case unclaimedRelayAuthor(ReplicaID)

        public var description: String {
            switch self {
            case .ownEntry: "its own entry is not at its quiescent version"
            case let .daemonAtAnotherVersion(d): "daemon \(d) at another version"
            case let .retirementNotAcknowledged(d, w): "a retirement not acknowledged: daemon \(d)'s, by daemon \(w)"
            case let .unclaimedRelayAuthor(a): "relay author \(a) claimed by no daemon"
            }
        }
    }

    /// Whether every daemon's retirement (``Entry/retiredAt``) is acknowledged by every other
    /// daemon's entry (``Entry/acknowledged``): each held the retiring daemon's entry without the
    /// replicas retired at a moment its own copy was exactly its entry's version
    /// (Docs/Semantics.md §7, "Retiring with peers").
    ///
    /// - Complexity: O(e²) for e entries.
    public var retirementsAcknowledged: Bool { unacknowledgedRetirement == nil }

    /// A daemon whose retirement another daemon's entry does not acknowledge, and that other
    /// daemon; nil when there is none.
    ///
    /// - Complexity: O(e²) for e entries.
    private var unacknowledgedRetirement: (retiring: ReplicaID, by: ReplicaID)? {
        for (d, e) in entries where e.retiredAt > 0 {
            if let w = entries.first(where: { $0.key != d && ($0.value.acknowledged[d] ?? 0) < e.retiredAt })?.key { return (d, w) }
        }
        return nil
    }

    /// Retires every daemon (not `me`) whose entry has not changed for `after` seconds before
    /// `now`, and every relay author claimed by none that long; returns them, in order.
    ///
    /// The daemon does not call it: daemons and relay authors are not retired by silence (a
    /// retired daemon that comes back could relay operations a daemon that compacted refuses;
    /// Docs/Semantics.md §7, "Peers"); a daemon gone for good is forgotten on its operator's word
    /// (``forget(daemon:me:now:)``). A relay author is retired when the daemon that claimed it
    /// retires it (``merge(_:me:floor:now:)``); devices and authors are retired by the daemon that
    /// counts them (``DocumentStability/retireSilent(now:after:)``), and the daemons agree on it
    /// before any compacts (``allows(_:me:)``).
    ///
    /// - Complexity: O((e + a) × e) for e entries and a relay authors.
    public mutating func retireSilent(me: ReplicaID, now: UInt64, after: UInt64) -> [ReplicaID] {
        func silent(_ r: ReplicaID) -> Bool { now >= (heard[r] ?? 0) && now &- (heard[r] ?? 0) >= after }
        let daemons = entries.keys.filter { $0 != me && silent($0) }.sorted()
        for d in daemons {
            entries[d] = nil
            heard[d] = nil
            retired.insert(d)
        }
        let authors = relayAuthors.filter { !isClaimed($0) && silent($0) }.sorted()
        for a in authors { retireRelayAuthor(a) }
        assert(retired.isDisjoint(with: entries.keys) && retiredAuthors.isDisjoint(with: relayAuthors))
        return daemons + authors
    }

    // MARK: Encoding

    /// Appends the table to `w` (the tail of a version-8 stability file).
    ///
    /// ```
    /// entries:varint (daemon:varint heard:varint sequence:varint version claimed:varint replica:varint×
    ///                 retiredAt:varint acknowledged:varint (daemon:varint sequence:varint)× retired:varint replica:varint×
    ///                 parted:varint (replica:varint first:varint last:varint)× hasOffer:u8 [offer] refused
    ///                 hasHeld:u8 [held])×
    /// retired:varint daemon:varint× relayAuthors:varint (replica:varint heard:varint)×
    /// retiredAuthors:varint replica:varint×
    /// ```
    /// `parted` is written as the `parted` message's ranges (``WireWriter/partedRuns(_:)``:
    /// several runs of one replica, in order, disjoint and not adjacent); a file of version 6 or
    /// older has one run per replica, replicas in increasing order (``WireWriter/partedRanges(_:)``).
    /// (A version-7 file's entries end at `refused`: nothing held beyond their versions; a
    /// version-4 file's at `parted`: no offer, nothing refused; a version-3 file's at `retired`:
    /// nothing parted either; a version-2 file's at `claimed`: no retirements either.)
    /// - Complexity: O(size).
    func encode(into w: inout WireWriter) {
        w.count(entries.count)
        for d in entries.keys.sorted() {
            let e = entries[d]!
            w.varint(d.rawValue); w.varint(heard[d] ?? 0); w.varint(e.sequence); w.version(e.version)
            w.count(e.claimed.count)
            for r in e.claimed.sorted() { w.varint(r.rawValue) }
            w.varint(e.retiredAt)
            w.count(e.acknowledged.count)
            for a in e.acknowledged.keys.sorted() { w.varint(a.rawValue); w.varint(e.acknowledged[a]!) }
            w.count(e.retired.count)
            for r in e.retired.sorted() { w.varint(r.rawValue) }
            w.partedRuns(e.parted)
            w.byte(e.offer == nil ? 0 : 1)
            if let offer = e.offer { w.version(offer) }
            w.version(e.refused)
            w.byte(e.held == nil ? 0 : 1)
            if let held = e.held { w.version(held) }
        }
        w.count(retired.count)
        for d in retired.sorted() { w.varint(d.rawValue) }
        w.count(relayAuthors.count)
        for a in relayAuthors.sorted() { w.varint(a.rawValue); w.varint(heard[a] ?? 0) }
        w.count(retiredAuthors.count)
        for a in retiredAuthors.sorted() { w.varint(a.rawValue) }
    }

    /// Reads what ``encode(into:)`` wrote (`retirements` false: a version-2 file's table;
    /// `parted` false: a version-3 file's, whose entries end at `retired`; `prefixes` false: a
    /// version-4 file's, whose entries end at `parted`: no offer, nothing refused; `runs` false:
    /// a file of version 6 or older, whose `parted` holds one run per author; `held` false: a
    /// file of version 7 or older, whose entries end at `refused`).
    init(reading r: inout WireReader, retirements: Bool = true, parted: Bool = true, prefixes: Bool = true,
         runs: Bool = true, held: Bool = true) throws(WireError) {
        for _ in 0..<(try r.count(minBytes: 5)) {
            let d = ReplicaID(try r.varint())
            heard[d] = try r.varint()
            let sequence = try r.varint()
            let version = try r.version()
            var claimed = Set<ReplicaID>()
            for _ in 0..<(try r.count(minBytes: 1)) { claimed.insert(ReplicaID(try r.varint())) }
            var entry = Entry(sequence: sequence, version: version, claimed: claimed)
            if retirements {
                entry.retiredAt = try r.varint()
                for _ in 0..<(try r.count(minBytes: 2)) { entry.acknowledged[ReplicaID(try r.varint())] = try r.varint() }
                for _ in 0..<(try r.count(minBytes: 1)) { entry.retired.insert(ReplicaID(try r.varint())) }
            }
            if runs {
                entry.parted = try r.partedRuns()
            } else if parted {
                entry.parted = PartedRanges(hulls: try r.partedRanges())
            }
            if prefixes {
                if try r.flag() { entry.offer = try r.version() }
                entry.refused = try r.version()
            }
            if held, try r.flag() {
                let at = r.offset
                entry.held = try r.version()
                guard entry.held!.includes(entry.version) else { throw .invalidValue("an entry holding less than its version", offset: at) }
            }
            entries[d] = entry
        }
        for _ in 0..<(try r.count(minBytes: 1)) { retired.insert(ReplicaID(try r.varint())) }
        for _ in 0..<(try r.count(minBytes: 2)) {
            let a = ReplicaID(try r.varint())
            relayAuthors.insert(a)
            heard[a] = try r.varint()
        }
        for _ in 0..<(try r.count(minBytes: 1)) { retiredAuthors.insert(ReplicaID(try r.varint())) }
        guard retired.isDisjoint(with: entries.keys), retiredAuthors.isDisjoint(with: relayAuthors) else {
            throw .invalidValue("a daemon or author both counted and retired", offset: 0)
        }
    }
}

extension WireWriter {
    /// An entry's parted ranges (``PeerStability/Entry/parted``): `count:varint (replica:varint
    /// first:varint last:varint)×`, replicas in increasing order.
    mutating func partedRanges(_ parted: [ReplicaID: ClosedRange<UInt64>]) {
        count(parted.count)
        for r in parted.keys.sorted() { varint(r.rawValue); varint(parted[r]!.lowerBound); varint(parted[r]!.upperBound) }
    }
}

extension WireReader {
    /// What ``WireWriter/partedRanges(_:)`` wrote. Refuses a replica 0, replicas out of order, a
    /// counter 0 and a range that ends before it starts.
    mutating func partedRanges() throws(WireError) -> [ReplicaID: ClosedRange<UInt64>] {
        var parted: [ReplicaID: ClosedRange<UInt64>] = [:]
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 3)) {
            let at = offset
            let r = try varint(), first = try varint(), last = try varint()
            guard r > previous, first > 0, first <= last else { throw .invalidValue("parted range of replica \(r)", offset: at) }
            previous = r
            parted[ReplicaID(r)] = first...last
        }
        return parted
    }
}
