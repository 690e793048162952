import Foundation
import Testing
@_spi(Testing) import ListCRDT
@testable @_spi(Testing) import ListSync
import ListSyncTestSupport
import ListSyncSimulation
import ListSyncRandom

/// Compaction at a stable prefix on a document peer daemons sync while their devices keep editing
/// (Docs/Semantics.md §7, "Peers while busy"), on document cores with no socket and no disk: the
/// least daemon proposes a prefix within every daemon's offer, each other daemon takes it when
/// it can vouch for it or refuses it, and each compacts once every entry names it.
@Suite struct PeerBusyCompactionTests {
    /// One daemon of a run: its core and its devices' copies.
    struct Daemon {
        var core: DocumentCore
        var docs: [ListDocument]
        /// What each device held a round ago (what it reports as seen: a round late).
        var lastSeen: [VersionVector]
        var compactions = 0
        var atPrefix = 0
        /// Compactions while the devices edited.
        var busyCompactions = 0
    }

    struct Outcome {
        var daemons: [Daemon]
        var made: [ListOperation] = []
        /// Batches a core refused from a peer link as made before its floor (the copies part).
        var refusedRelays = 0
    }

    static func daemonReplica(_ i: Int) -> ReplicaID { ReplicaID(50 + UInt64(i)) }
    static func link(_ peer: Int) -> SubscriberID { SubscriberID(100 + peer) }
    static func device(_ k: Int) -> SubscriberID { SubscriberID(1 + k) }
    static func deviceReplica(_ i: Int, _ k: Int) -> UInt64 { 1 + UInt64(i * 10 + k) }

    /// `n` daemons (replicas 50, 51, …) at `typed(3)` made by daemon 50, linked by `links` (each
    /// link attached both ways, its daemon named), with `m` compacting devices each.
    static func make(daemons n: Int, devices m: Int, links: [(Int, Int)], variant: DocumentCore.Variant) -> [Daemon] {
        let base = Fixture.typed(3, replica: 50)
        var out: [Daemon] = []
        for i in 0..<n {
            var core = DocumentCore(id: Fixture.document, name: "busy", epoch: 7, document: base.fork(as: 50 + UInt64(i)), maxFrame: 1 << 20)
            core.variant = variant
            for (a, b) in links where a == i || b == i {
                let peer = a == i ? b : a
                _ = core.subscribe(link(peer), epoch: 7, version: base.version)
                _ = core.seen(link(peer), replica: daemonReplica(peer), version: base.version, role: .relay, now: 1)
            }
            let docs = (0..<m).map { base.fork(as: deviceReplica(i, $0)) }
            for k in 0..<m {
                _ = core.subscribe(device(k), epoch: 7, version: base.version)
                _ = core.seen(device(k), replica: ReplicaID(deviceReplica(i, k)), version: base.version, role: .compactingDevice, now: 1)
            }
            _ = core.refreshStability(now: 1, retireAfter: 1 << 40)
            out.append(Daemon(core: core, docs: docs, lastSeen: docs.map(\.version)))
        }
        return out
    }

    /// Relays to daemon `to` what daemon `from` holds that it lacks, over `from`'s link there;
    /// counts a refusal as made before the floor.
    static func relay(_ from: Int, _ to: Int, _ o: inout Outcome, batch: inout UInt64) {
        let source = o.daemons[from].core.document, held = o.daemons[to].core.document.version
        guard source.hasHistory(since: held) else {
            Issue.record("daemon \(to) is behind daemon \(from)'s floor")
            return
        }
        let ops = source.operations(since: held)
        guard !ops.isEmpty else { return }
        batch += 1
        var actions = o.daemons[to].core.receive(ops, batch: batch, from: link(from))
        for a in actions.appends { actions += o.daemons[to].core.durable(ticket: a.ticket) }
        if actions.sent(to: link(from)).contains(where: { if case .error(_, _, .compacted, _) = $0 { true } else { false } }) {
            o.refusedRelays += 1
        }
    }

    /// Gossips every daemon's table along the links, both ways.
    static func gossip(_ o: inout Outcome, links: [(Int, Int)], now: UInt64) {
        for (a, b) in links {
            _ = o.daemons[b].core.peerStability(link(a), from: daemonReplica(a), entries: o.daemons[a].core.stability.peers.entries, now: now)
            _ = o.daemons[a].core.peerStability(link(b), from: daemonReplica(b), entries: o.daemons[b].core.stability.peers.entries, now: now)
        }
    }

    /// Daemons and devices as ``make(daemons:devices:links:variant:)``; for `rounds` rounds every
    /// device takes what its daemon holds, makes one to three random edits and sends them (made
    /// durable at once), the daemons relay along the links what the other lacks, every device
    /// reports what it held a round before (never its daemon's version: no daemon is quiescent),
    /// the tables are gossiped and each daemon's housekeeping runs (an operations trigger of 8, no
    /// interval); a point it finds is compacted at. Then `quiet` rounds without edits.
    static func run(seed: UInt64, daemons n: Int, links: [(Int, Int)], devices m: Int = 2, rounds: Int = 60, quiet: Int = 10,
                    variant: DocumentCore.Variant = .correct, quiescentOnly: Set<Int> = []) throws -> Outcome {
        var rng = SplitMix64(seed: seed)
        var o = Outcome(daemons: make(daemons: n, devices: m, links: links, variant: variant))
        var rule = CompactionRule(retireAfter: 1 << 40, minOperations: 8, interval: 0, gossipInterval: 0)
        rule.stablePrefixes = true
        var batch: UInt64 = 0, counter = 0
        for round in 0..<(rounds + quiet) {
            let now = 2 + UInt64(round)
            for i in 0..<n {
                for k in 0..<m {
                    let core = o.daemons[i].core.document
                    if core.hasHistory(since: o.daemons[i].docs[k].version) {
                        o.daemons[i].docs[k].receive(core.operations(since: o.daemons[i].docs[k].version))
                    }
                    guard round < rounds else { continue }
                    let before = o.daemons[i].docs[k].operationCount
                    for _ in 0..<(1 + rng.below(3)) {
                        let edit = RandomEdit.random(for: o.daemons[i].docs[k], using: &rng) { counter += 1; return "v\(counter)" }
                        _ = try? edit.apply(to: &o.daemons[i].docs[k])
                    }
                    let ops = try o.daemons[i].docs[k].operations(from: before)
                    guard !ops.isEmpty else { continue }
                    o.made += ops
                    batch += 1
                    let actions = o.daemons[i].core.receive(ops, batch: batch, from: device(k))
                    for a in actions.appends { _ = o.daemons[i].core.durable(ticket: a.ticket) }
                }
            }
            // Twice, so that a chain carries an edit end to end within the round.
            for _ in 0..<2 {
                for (a, b) in links {
                    relay(a, b, &o, batch: &batch)
                    relay(b, a, &o, batch: &batch)
                }
            }
            for i in 0..<n {
                for k in 0..<m {
                    _ = o.daemons[i].core.seen(device(k), replica: ReplicaID(deviceReplica(i, k)), version: o.daemons[i].lastSeen[k],
                                               role: .compactingDevice, now: now)
                    o.daemons[i].lastSeen[k] = o.daemons[i].docs[k].version
                }
            }
            gossip(&o, links: links, now: now)
            for i in 0..<n {
                var ruleHere = rule
                ruleHere.stablePrefixes = !quiescentOnly.contains(i)
                let step = o.daemons[i].core.housekeeping(stabilityNow: now, now: now, rule: ruleHere)
                if round < rounds { o.daemons[i].busyCompactions = o.daemons[i].compactions + (step.point == nil ? 0 : 1) }
                guard let point = step.point else { continue }
                let shown = o.daemons[i].core.document.snapshot()
                let version = o.daemons[i].core.document.version
                do {
                    try o.daemons[i].core.compact(at: point)
                } catch {
                    Issue.record("seed \(seed): daemon \(i) refused its own compaction point: \(error)")
                    continue
                }
                o.daemons[i].compactions += 1
                if point != version { o.daemons[i].atPrefix += 1 }
                #expect(o.daemons[i].core.document.snapshot() == shown && o.daemons[i].core.document.version == version)
            }
        }
        return o
    }

    /// Every operation made is on every daemon's copy, the copies show the same, and every device
    /// catches up from its daemon's history and shows it too.
    static func checkNothingLost(_ o: inout Outcome, seed: UInt64) throws {
        #expect(o.refusedRelays == 0, "seed \(seed): \(o.refusedRelays) relays refused as made before a floor")
        let first = o.daemons[0].core.document
        for i in o.daemons.indices {
            let core = o.daemons[i].core.document
            try core.checkInvariants()
            for op in o.made where !core.version.contains(op.lastID) { Issue.record("seed \(seed): daemon \(i) lacks \(op.id)") }
            #expect(core.version == first.version && core.snapshot() == first.snapshot(), "seed \(seed): daemon \(i)'s copy differs")
            for k in o.daemons[i].docs.indices {
                let v = o.daemons[i].docs[k].version
                #expect(core.hasHistory(since: v), "seed \(seed): a device of daemon \(i) is behind the floor")
                o.daemons[i].docs[k].receive(core.operations(since: v))
                #expect(o.daemons[i].docs[k].snapshot() == core.snapshot(), "seed \(seed): a device of daemon \(i) differs")
            }
        }
    }

    static let pair = [(0, 1)]
    static let mesh = [(0, 1), (0, 2), (1, 2)]
    static let chain = [(0, 1), (1, 2)]

    @Test("two peered daemons whose devices edit every round and acknowledge a round late: each compacts at stable prefixes again and again while busy, and nothing is lost")
    func twoDaemonsCompactWhileBusy() throws {
        for seed in UInt64(1)...6 {
            var o = try Self.run(seed: seed, daemons: 2, links: Self.pair)
            for (i, d) in o.daemons.enumerated() {
                #expect(d.atPrefix >= 10, "seed \(seed): daemon \(i) compacted \(d.compactions) times, \(d.atPrefix) at a prefix")
            }
            try Self.checkNothingLost(&o, seed: seed)
        }
    }

    @Test("three peered daemons, all linked or in a chain, whose devices edit every round: each compacts at stable prefixes again and again while busy, and nothing is lost")
    func threeDaemonsCompactWhileBusy() throws {
        for links in [Self.mesh, Self.chain] {
            for seed in UInt64(1)...4 {
                var o = try Self.run(seed: seed, daemons: 3, links: links)
                for (i, d) in o.daemons.enumerated() {
                    #expect(d.atPrefix >= 8, "seed \(seed), \(links.count) links: daemon \(i) compacted \(d.compactions) times, \(d.atPrefix) at a prefix")
                }
                try Self.checkNothingLost(&o, seed: seed)
            }
        }
    }

    @Test("with compaction at a quiescent point only (DocumentCore.Variant.compactsOnlyWhenQuiescent), the same busy peered documents never compact while their devices edit")
    func quiescentOnlyNeverCompactsWhileBusy() throws {
        for seed in UInt64(1)...3 {
            let o = try Self.run(seed: seed, daemons: 3, links: Self.mesh, quiet: 0, variant: .compactsOnlyWhenQuiescent)
            for (i, d) in o.daemons.enumerated() { #expect(d.compactions == 0, "seed \(seed): daemon \(i)") }
        }
    }

    @Test("a daemon that reports no offer (stable prefixes off there, as a daemon of an older build) leaves every daemon the quiescent rule: none compacts while the devices edit, all compact once they stop, and nothing is lost")
    func daemonWithoutOffersKeepsQuiescentRule() throws {
        for seed in UInt64(1)...2 {
            var o = try Self.run(seed: seed, daemons: 3, links: Self.mesh, rounds: 30, quiet: 12, quiescentOnly: [2])
            for (i, d) in o.daemons.enumerated() {
                #expect(d.busyCompactions == 0 && d.compactions >= 1, "seed \(seed): daemon \(i): \(d.busyCompactions) while busy, \(d.compactions) in all")
                #expect(d.core.stability.peers.prefixLeader == nil)
            }
            try Self.checkNothingLost(&o, seed: seed)
        }
    }

    @Test("status says where the peers' stable prefix stands (prefix_waits_for): the leader, this copy's figures and every daemon's entry; no leader while a daemon offers nothing; not peered without peers")
    func prefixBlockInWords() throws {
        let busy = try Self.run(seed: 1, daemons: 3, links: Self.mesh, rounds: 20, quiet: 0)
        let words = busy.daemons[0].core.peerPrefixBlock
        #expect(words.hasPrefix("ready; leader "), "\(words)")
        #expect(words.contains("this daemon: version Σ") && words.components(separatedBy: ": version Σ").count == 4, "\(words)")
        #expect(words.contains("senders' stable version Σ") && words.contains("agreed Σ"), "\(words)")
        let mixed = try Self.run(seed: 1, daemons: 2, links: Self.pair, rounds: 5, quiet: 0, quiescentOnly: [1])
        #expect(mixed.daemons[0].core.peerPrefixBlock.contains("no leader: entries without an offer"), "\(mixed.daemons[0].core.peerPrefixBlock)")
        #expect(HousekeepingTests.core().peerPrefixBlock == "not peered")
    }

    @Test("the leader is the least daemon once every entry offers; the meet of the offers; a proposal refused or passed by another daemon's version")
    func leaderAndOffers() {
        let (x, y) = (ReplicaID(50), ReplicaID(51))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        var table = PeerStability()
        expect(table.publish(y, version: v([1: 2]), claimed: [], now: 1))
        _ = table.note(daemon: x, me: y, now: 1)
        #expect(table.prefixLeader == nil, "x's placeholder offers nothing")
        expect(table.reportPrefix(y, offer: v([1: 5, 2: 3]), refused: VersionVector(), now: 2))
        expect(!table.reportPrefix(y, offer: v([1: 5, 2: 3]), refused: VersionVector(), now: 3), "the same again: no change")
        #expect(table.prefixLeader == nil && table.offersMeet == nil)
        var xs = table.entries
        xs[x] = PeerStability.Entry(sequence: 4, version: v([1: 3]), claimed: [x], offer: v([1: 4, 2: 6]))
        expect(table.merge(xs, me: y, floor: nil, now: 4))
        #expect(table.prefixLeader == x)
        #expect(table.offersMeet == v([1: 4, 2: 3]))
        #expect(!table.isRefused(v([1: 3]), leader: x) && !table.agree(on: v([1: 3])))
        // y publishes what x proposes: they agree; a publish keeps the offer.
        expect(table.publish(y, version: v([1: 3]), claimed: [], now: 5))
        #expect(table.entries[y]?.offer == v([1: 5, 2: 3]) && table.agree(on: v([1: 3])))
        // A proposal y refused, or one that does not include y's version, is refused.
        expect(table.reportPrefix(y, offer: v([1: 5, 2: 3]), refused: v([1: 4]), now: 6))
        #expect(table.isRefused(v([1: 4]), leader: x) && table.isRefused(v([2: 1]), leader: x))
        #expect(!table.isRefused(v([1: 4, 2: 1]), leader: x))
    }

    @Test("offers and refusals round-trip in the stability message (absent when no entry offers, as an older daemon sends) and in the stability file (version 5); a version-4 file loads without them")
    func encodings() throws {
        let doc = DocumentID(high: 0, low: 9)
        let (x, y) = (ReplicaID(50), ReplicaID(51))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        var table = PeerStability()
        expect(table.publish(y, version: v([1: 2]), claimed: [ReplicaID(1)], now: 1))
        let plain = SyncMessage.stability(document: doc, from: y, entries: table.entries)
        #expect(try SyncMessage(decoding: plain.encoded()) == plain)
        expect(table.reportPrefix(y, offer: v([1: 5, 2: 3]), refused: v([1: 4]), now: 2))
        _ = table.note(daemon: x, me: y, now: 2)
        let message = SyncMessage.stability(document: doc, from: y, entries: table.entries)
        let bytes = message.encoded()
        #expect(try SyncMessage(decoding: bytes) == message)
        // Cut where the empty retirements and parted parts end: the entries without offers.
        let stripped = table.entries.mapValues { PeerStability.Entry(sequence: $0.sequence, version: $0.version, claimed: $0.claimed) }
        let entriesEnd = SyncMessage.stability(document: doc, from: y, entries: stripped).encoded().count
        #expect(try SyncMessage(decoding: Array(bytes[..<(entriesEnd + 2)])) == .stability(document: doc, from: y, entries: stripped))
        for n in entriesEnd + 3 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        // A prefixes part naming a daemon the entries lack is refused.
        var bad = SyncMessage.stability(document: doc, from: y,
                                        entries: [y: PeerStability.Entry(sequence: 1, version: VersionVector(), claimed: [y])]).encoded()
        bad += [0, 0, 1, 52, 0, 0]   // no retirements, nothing parted; daemon 52 offers nothing, refused nothing
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: bad) }

        try PeerPartedTests.expectFileRoundTrip(table)
        // Version 4: the entries end at `parted`.
        var v4 = [UInt8]("LSSTAB4\n".utf8) + [1, 0, 0, 0]     // relayed; no senders, retired or ephemeral
        v4 += [1, 51, 5, 4, 1, 1, 2, 1, 51, 0, 0, 0, 0]       // daemon 51, heard 5, sequence 4, {1: 2}, claims itself, no retirements, nothing parted
        v4 += [0, 0, 0]                                       // no retired daemons, relay authors or retired authors
        let old = try DocumentStability(decoding: v4)
        #expect(old.peers.entries == [y: PeerStability.Entry(sequence: 4, version: v([1: 2]), claimed: [y])])
        #expect(old.peers.prefixLeader == nil)
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 7")
        // Version 5 (a lost stability file's `lostSince` after the table, no offers): the same
        // entries, then the flag; a version-5 file lost at 9.
        let v5 = [UInt8]("LSSTAB5\n".utf8) + v4.dropFirst(8) + [1, 9]
        let lost = try DocumentStability(decoding: v5)
        #expect(lost.peers.entries == old.peers.entries && lost.lostSince == 9 && lost.peers.prefixLeader == nil)
        #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(v5.dropLast())) }
    }

    @Test("what an entry held when it vouched round-trips in the stability message (a held part, absent when no entry holds more than its version: the bytes of before) and in the stability file (version 8); a version-7 file loads holding nothing more; a held version below the entry's, a daemon the entries lack and every cut are refused")
    func heldEncodings() throws {
        let doc = DocumentID(high: 0, low: 9)
        let (x, y) = (ReplicaID(50), ReplicaID(51))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        var table = PeerStability()
        expect(table.publish(y, version: v([1: 2]), claimed: [ReplicaID(1)], now: 1, held: v([1: 2])))
        #expect(table.entries[y]?.held == nil, "holding exactly its version says nothing more")
        _ = table.note(daemon: x, me: y, now: 1)
        let plainBytes = SyncMessage.stability(document: doc, from: y, entries: table.entries).encoded()
        expect(table.publish(y, version: v([1: 4]), claimed: [ReplicaID(1)], now: 2, held: v([1: 6, 2: 3])))
        #expect(table.entries[y]?.held == v([1: 6, 2: 3]) && table.entries[y]?.holds == v([1: 6, 2: 3]))
        expect(table.publish(y, version: v([1: 4]), claimed: [ReplicaID(1), ReplicaID(2)], now: 3, held: v([1: 9])))
        #expect(table.entries[y]?.held == v([1: 6, 2: 3]), "an entry at the same version keeps what it held when it vouched")
        let message = SyncMessage.stability(document: doc, from: y, entries: table.entries)
        let bytes = message.encoded()
        #expect(try SyncMessage(decoding: bytes) == message)
        // Without the held part: what the entries and empty parts before it give.
        var without = table.entries
        without[y]!.held = nil
        let before = SyncMessage.stability(document: doc, from: y, entries: without).encoded()
        #expect(before.count == plainBytes.count + 1, "no held part when nothing is held beyond the versions")
        let partsEnd = bytes.count - 2 - 5                    // count, daemon 51, then {1: 6, 2: 3}
        #expect(try SyncMessage(decoding: Array(bytes[..<partsEnd])) == .stability(document: doc, from: y, entries: without))
        for n in partsEnd + 1 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        // A held version below the entry's version, and a daemon the entries lack, are refused.
        var below = Array(bytes[..<partsEnd]) + [1, 51, 1, 1, 3]
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: below) }
        below = Array(bytes[..<partsEnd]) + [1, 52, 1, 1, 7]
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: below) }
        #expect(try SyncMessage(decoding: Array(bytes[..<partsEnd]) + [1, 51, 1, 1, 7]) != message, "a well-formed held part is read")

        try PeerPartedTests.expectFileRoundTrip(table)
        // Version 7: each entry ends at `refused`.
        var v7 = [UInt8]("LSSTAB7\n".utf8) + [1, 0, 0, 0]     // relayed; no senders, retired or ephemeral
        v7 += [1, 51, 5, 4, 1, 1, 2, 1, 51, 0, 0, 0, 0]       // daemon 51, heard 5, sequence 4, {1: 2}, claims itself, no retirements, nothing parted
        v7 += [1, 1, 1, 5, 0]                                 // offers {1: 5}, refused nothing
        v7 += [0, 0, 0, 0]                                    // no retired daemons, relay authors or retired authors; not lost
        let old = try DocumentStability(decoding: v7)
        #expect(old.peers.entries == [y: PeerStability.Entry(sequence: 4, version: v([1: 2]), claimed: [y], offer: v([1: 5]))])
        #expect(old.peers.entries[y]?.held == nil)
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 8")
        #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(v7.dropLast())) }
    }

    @Test("an agreement seen over time: once every daemon's entry has been seen at this daemon's version, it is agreed, though the leader moved on to its next proposal before the last answer came; a daemon never seen there leaves it unagreed")
    func agreementSeenOverTime() {
        let (x, y, z) = (ReplicaID(50), ReplicaID(51), ReplicaID(52))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        let (older, agreed, next) = (v([1: 2]), v([1: 4]), v([1: 6]))
        var core = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: Fixture.typed(3, replica: 51))
        func entry(_ sequence: UInt64, _ version: VersionVector, _ d: ReplicaID) -> PeerStability.Entry {
            PeerStability.Entry(sequence: sequence, version: version, claimed: [d], offer: next)
        }
        expect(core.stability.peers.publish(y, version: agreed, claimed: [], now: 1))
        _ = core.stability.peers.merge([x: entry(1, agreed, x), z: entry(1, older, z)], me: y, floor: nil, now: 1)
        core.noteVouchers()
        #expect(core.agreedPrefixNow == nil, "z has not taken it yet")
        // The leader saw z's answer first, compacted and proposed the next; y sees both at once.
        _ = core.stability.peers.merge([x: entry(2, next, x), z: entry(2, agreed, z)], me: y, floor: nil, now: 2)
        #expect(core.stability.peers.agree(on: agreed) == false && core.peersHold(agreed) != nil)
        core.noteVouchers()
        #expect(core.agreedPrefixNow == agreed)
        #expect(core.peersHold(agreed, exactly: false) == nil, "every entry includes it")
        // A new daemon (a placeholder) holds it back.
        _ = core.stability.peers.note(daemon: ReplicaID(53), me: y, now: 3)
        #expect(core.peersHold(agreed, exactly: false) != nil)
        #expect(core.agreedPrefixNow == nil, "53 was never seen at it")
    }

    @Test("an agreement not missed: a daemon whose entry moved past this daemon's version before it was seen there vouches for it once this copy holds its entry's version whole, and only while it does; with DocumentCore.Variant.agreesOnlyAtExactVersions it never does")
    func agreementNotMissed() {
        let (x, y, z) = (ReplicaID(50), ReplicaID(51), ReplicaID(52))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        let start = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: Fixture.typed(3, replica: 51))
        let held = start.document.version
        let (older, agreed) = (VersionVector(), v([51: 1]))
        var beyond = held
        beyond.observe(OpID(counter: 9, replica: ReplicaID(1)))   // past it, not held here
        #expect(held.includes(agreed) && held != agreed && !held.includes(beyond))
        func entry(_ sequence: UInt64, _ version: VersionVector, _ d: ReplicaID) -> PeerStability.Entry {
            PeerStability.Entry(sequence: sequence, version: version, claimed: [d], offer: version)
        }
        for exactOnly in [false, true] {
            var core = start
            if exactOnly { core.variant = .agreesOnlyAtExactVersions }
            expect(core.stability.peers.publish(y, version: agreed, claimed: [], now: 1))
            _ = core.stability.peers.merge([x: entry(1, agreed, x), z: entry(1, older, z)], me: y, floor: nil, now: 1)
            core.noteVouchers()
            #expect(core.agreedPrefixNow == nil, "z has not taken it")
            // z took it and published a quiescent version over it before this daemon saw it there.
            var far = core
            _ = far.stability.peers.merge([z: entry(2, beyond, z)], me: y, floor: nil, now: 2)
            far.noteVouchers()
            #expect(far.agreedPrefixNow == nil, "z's version is not all held here")
            _ = core.stability.peers.merge([z: entry(2, held, z)], me: y, floor: nil, now: 2)
            core.noteVouchers()
            if exactOnly {
                #expect(core.agreedPrefixNow == nil, "with the exact rule z is never seen at it")
            } else {
                #expect(core.agreedPrefixNow == agreed, "z's entry at a version held here whole vouches for it")
                #expect(core.peersHold(agreed, exactly: false) == nil, "every entry includes it")
                // A copy that no longer holds z's version (a merge back took some out) does not compact there.
                var taken = core
                taken.agreedPrefix!.holds = beyond
                #expect(taken.agreedPrefixNow == nil)
            }
        }
    }

    @Test("a daemon restarted with its stability file lost names itself alone in its table: its own entry is no agreement, then or once the peers' table comes (seed 610013 of --lose-stability compacted at a prefix the others never vouched for, which the engine refused)")
    func noAgreementOfOne() {
        let (x, y) = (ReplicaID(50), ReplicaID(51))
        func v(_ c: [UInt64: UInt64]) -> VersionVector { PeerRetirementTests.v(c) }
        var core = DocumentCore(id: Fixture.document, name: "n", epoch: 7, document: Fixture.typed(3, replica: 51))
        core.stability = DocumentStability.lost(at: 1)
        expect(core.stability.peers.publish(y, version: v([1: 3]), claimed: [], now: 1))
        core.noteVouchers()
        #expect(core.agreedPrefixNow == nil, "a table of one while lost")
        // The peers' table: x at another version; the loss ends.
        let entry = PeerStability.Entry(sequence: 4, version: v([1: 2]), claimed: [x], offer: v([1: 2]))
        _ = core.stability.peers.merge([x: entry], me: y, floor: nil, now: 2)
        _ = core.stability.peersFound()
        core.noteVouchers()
        #expect(core.agreedPrefixNow == nil)
        #expect(core.peerPrefixPoint(CompactionTrigger(minOperations: 1)) == nil)
        // Without the loss, a table of one with no peer known yet would be taken for an agreement
        // only by the old rule; a table naming x seen at the version is one.
        _ = core.stability.peers.merge([x: PeerStability.Entry(sequence: 5, version: v([1: 3]), claimed: [x], offer: v([1: 3]))], me: y, floor: nil, now: 3)
        core.noteVouchers()
        #expect(core.agreedPrefixNow == v([1: 3]))
    }

    // MARK: A prefix one daemon cannot vouch for

    /// Two daemons X (50, the leader) and Y (51), a device `a` at X and `b` at Y, at `typed(3)`.
    /// `a` inserts `d` at X and `b` inserts `o` at Y, concurrently; X relays `d` to Y, not yet
    /// `o` to X. `a` acknowledges `typed(3)` + `d`; `b` takes `d`, acknowledges `typed(3)` + `d` +
    /// `o`, and sends `o2` made after, which it has not acknowledged yet (so Y is not quiescent).
    /// X offers `typed(3)` + `d`, Y more; X proposes `typed(3)` + `d`, which Y holds `o` outside
    /// of, not after it.
    static func concurrentAtY(_ variants: (x: DocumentCore.Variant, y: DocumentCore.Variant))
        throws -> (o: Outcome, rule: CompactionRule, a: ListDocument, b: ListDocument, opO: [ListOperation]) {
        var o = Outcome(daemons: make(daemons: 2, devices: 1, links: pair, variant: .correct))
        o.daemons[0].core.variant = variants.x
        o.daemons[1].core.variant = variants.y
        var rule = CompactionRule(retireAfter: 1 << 40, minOperations: 1, interval: 0, gossipInterval: 0)
        rule.stablePrefixes = true
        var a = o.daemons[0].docs[0], b = o.daemons[1].docs[0]
        let base = a.version
        let d = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("d".utf8))
        let opO = try b.insertItem(at: IndexPath(item: 1, section: 0), value: Data("o".utf8))
        try #require(!opO.deps.ids.contains(d.id))
        guard case .ack? = PeerAdmissionTests.send([d], from: device(0), to: &o.daemons[0].core, batch: 1),
              case .ack? = PeerAdmissionTests.send([opO], from: device(0), to: &o.daemons[1].core, batch: 1) else {
            throw PeerRetirementTests.Failure("a device's edit was refused")
        }
        var batch: UInt64 = 10
        relay(0, 1, &o, batch: &batch)
        b.receive([d])
        let acknowledged = b.version
        let o2 = try b.insertItem(at: IndexPath(item: 0, section: 0), value: Data("o2".utf8))
        guard case .ack? = PeerAdmissionTests.send([o2], from: device(0), to: &o.daemons[1].core, batch: 2) else {
            throw PeerRetirementTests.Failure("o2 was refused")
        }
        _ = o.daemons[0].core.seen(device(0), replica: a.replica, version: a.version, role: .compactingDevice, now: 2)
        _ = o.daemons[1].core.seen(device(0), replica: b.replica, version: acknowledged, role: .compactingDevice, now: 2)
        try #require(!base.includes(a.version))
        // Offers, the proposal, the answer: three rounds of housekeeping (compacting where it
        // says so) and gossip.
        for now in UInt64(3)...5 {
            _ = try housekeep(&o, rule: rule, now: now)
            gossip(&o, links: pair, now: now)
        }
        return (o, rule, a, b, [opO])
    }

    /// Housekeeping on both daemons, each compacting at the point it finds; returns how many did.
    static func housekeep(_ o: inout Outcome, rule: CompactionRule, now: UInt64) throws -> Int {
        var compacted = 0
        for i in 0..<2 {
            if let point = o.daemons[i].core.housekeeping(stabilityNow: now, now: now, rule: rule).point {
                try o.daemons[i].core.compact(at: point)
                compacted += 1
            }
        }
        return compacted
    }

    @Test("with stable prefixes only (Variant.compactsOnlyAtStablePrefixes, the rule before concurrent operations were kept), the prefix the leader proposes, one the other daemon holds an operation outside of that is not after it, is refused there and compacted at nowhere; once that operation is in the next proposal both compact, Y at a prefix, and the copies stay the same")
    func refusedProposalThenAgreed() throws {
        var (o, rule, a, _, opO) = try Self.concurrentAtY((.compactsOnlyAtStablePrefixes, .compactsOnlyAtStablePrefixes))
        let x = o.daemons[0].core, y = o.daemons[1].core
        let proposal = try #require(x.stability.peers.entries[Self.daemonReplica(0)]?.version)
        #expect(proposal == a.version, "X proposes typed(3) + d")
        #expect(y.stability.peers.entries[Self.daemonReplica(1)]?.refused == proposal, "Y refuses it")
        _ = try Self.housekeep(&o, rule: rule, now: 6)
        #expect(o.daemons[0].core.document.historyFloor == nil && o.daemons[1].core.document.historyFloor == nil,
                "a daemon compacted at a prefix Y cannot vouch for")
        // o reaches X and a; a acknowledges it: the next proposal holds it.
        var batch: UInt64 = 20
        Self.relay(1, 0, &o, batch: &batch)
        a.receive(opO)
        _ = o.daemons[0].core.seen(Self.device(0), replica: a.replica, version: a.version, role: .compactingDevice, now: 7)
        var compacted = 0
        for now in UInt64(7)...10 {
            compacted += try Self.housekeep(&o, rule: rule, now: now)
            Self.gossip(&o, links: Self.pair, now: now)
        }
        #expect(compacted == 2, "both compact at the agreed prefix")
        #expect(o.daemons[0].core.document.historyFloor == a.version && o.daemons[1].core.document.historyFloor == a.version)
        #expect(o.daemons[1].core.document.version != a.version, "Y compacted at a prefix: o2 stays after it")
        Self.relay(1, 0, &o, batch: &batch)
        #expect(o.refusedRelays == 0)
        #expect(o.daemons[0].core.document.version == o.daemons[1].core.document.version
                && o.daemons[0].core.document.snapshot() == o.daemons[1].core.document.snapshot())
    }

    @Test("the same proposal, with concurrent operations kept: Y takes it, its entry holding o and o2, and compacts keeping o; X waits until it holds them, then compacts there too, keeping o; nothing is refused and the copies stay the same")
    func concurrentProposalTakenOnceHeld() throws {
        var (o, rule, a, b, opO) = try Self.concurrentAtY((.correct, .correct))
        let proposal = try #require(o.daemons[0].core.stability.peers.entries[Self.daemonReplica(0)]?.version)
        #expect(proposal == a.version, "X proposes typed(3) + d")
        let yEntry = try #require(o.daemons[1].core.stability.peers.entries[Self.daemonReplica(1)])
        #expect(yEntry.version == proposal && yEntry.refused == VersionVector(), "Y takes it")
        #expect(yEntry.held == o.daemons[1].core.document.version && yEntry.held!.contains(opO[0].id), "Y's entry holds o (and o2)")
        _ = try Self.housekeep(&o, rule: rule, now: 6)
        #expect(o.daemons[1].core.document.historyFloor == proposal, "Y compacted keeping o")
        #expect(o.daemons[0].core.document.historyFloor == nil, "X compacted without o, which Y held when it vouched")
        #expect(o.daemons[0].core.peerPrefixPoint(CompactionTrigger(minOperations: 1)) == nil)
        var batch: UInt64 = 20
        Self.relay(1, 0, &o, batch: &batch)
        #expect(o.refusedRelays == 0)
        var compacted = 0
        for now in UInt64(7)...9 {
            compacted += try Self.housekeep(&o, rule: rule, now: now)
            Self.gossip(&o, links: Self.pair, now: now)
        }
        #expect(compacted == 1 && o.daemons[0].core.document.historyFloor == proposal, "X compacts once it holds o and o2")
        Self.relay(0, 1, &o, batch: &batch)
        Self.relay(1, 0, &o, batch: &batch)
        #expect(o.refusedRelays == 0)
        let (x, y) = (o.daemons[0].core.document, o.daemons[1].core.document)
        #expect(x.version == y.version && x.snapshot() == y.snapshot())
        #expect(x.version == b.version && x.snapshot() == b.snapshot(), "the compacted copies show what b's copy, never compacted, shows")
    }

    @Test("a daemon that compacts at its own proposal without every daemon's agreement (Variant.peerPrefixWithoutAgreement), one that takes a proposal ignoring an operation it holds that is not after it (Variant.peerPrefixIgnoresHeldOperations, stable prefixes only), or one that compacts at an agreed version without holding what the others held when they vouched (Variant.ignoresPeersHeld) makes the copies part: the operation is refused where the floor was compacted")
    func unsafeVariantsPart() throws {
        for variants in [(DocumentCore.Variant.peerPrefixWithoutAgreement, DocumentCore.Variant.correct),
                         (DocumentCore.Variant.compactsOnlyAtStablePrefixes, DocumentCore.Variant.peerPrefixIgnoresHeldOperations),
                         (DocumentCore.Variant.ignoresPeersHeld, DocumentCore.Variant.correct)] {
            var (o, rule, _, _, _) = try Self.concurrentAtY(variants)
            _ = try Self.housekeep(&o, rule: rule, now: 6)
            #expect(o.daemons[0].core.document.historyFloor != nil, "\(variants): X did not compact")
            var batch: UInt64 = 20
            Self.relay(1, 0, &o, batch: &batch)
            #expect(o.refusedRelays > 0 && o.daemons[0].core.document.version != o.daemons[1].core.document.version,
                    "\(variants): the broken core was not caught: the copies are the same")
        }
    }
}
