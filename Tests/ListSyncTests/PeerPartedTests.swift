import Foundation
import Testing
import ListCRDT
@testable @_spi(Testing) import ListSync

/// What a daemon parted in a merge back, told to every daemon (Docs/Semantics.md §7, "What a
/// parted original's holder is sent"), with no socket: the daemon's entry says it
/// (``PeerStability/Entry/parted``), on the wire and on disk; a peer with a floor answers a
/// device whose version ends on a parted original it lacks with a snapshot, and cuts off one that
/// caught up before it heard; with `DocumentCore.Variant.sendsPartedOperations` it sends
/// operations, and the device keeps the original beside the edit made again.
@Suite struct PeerPartedTests {
    static let (a, b) = (ReplicaID(101), ReplicaID(102))
    static func v(_ c: [UInt64: UInt64]) -> VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: c.map { (ReplicaID($0.key), $0.value) }))
    }

    /// `table` in a stability file of the current version: it loads the same, and every cut of
    /// it is refused.
    static func expectFileRoundTrip(_ table: PeerStability) throws {
        var stability = DocumentStability()
        stability.peers = table
        let file = stability.encoded()
        #expect(Array(file.prefix(8)) == Array("LSSTAB8\n".utf8))
        #expect(try DocumentStability(decoding: file).peers.entries == table.entries)
        for n in 0 ..< file.count {
            #expect(throws: SyncProtocolError.self) { _ = try DocumentStability(decoding: Array(file[..<n])) }
        }
    }

    @Test("an entry says, per author, the runs of counters its daemon parted; ranges only grow, a run apart from the others kept apart; a version counts a parted operation only where it ends in a range the copy lacks")
    func partedRanges() {
        var t = PeerStability()
        let first = t.noteParted(Self.a, ranges: [ReplicaID(1): 1...9, ReplicaID(3): 2...2], now: 1)
        #expect(first)
        let mine = t.entries[Self.a]!
        #expect(mine.parted == PartedRanges(hulls: [ReplicaID(1): 1...9, ReplicaID(3): 2...2]))
        #expect(mine.sequence == 1 && mine.version == VersionVector(), "a placeholder entry: it published nothing yet")
        let same = t.noteParted(Self.a, ranges: [ReplicaID(1): 1...5], now: 2)
        #expect(!same, "nothing new")
        let wider = t.noteParted(Self.a, ranges: [ReplicaID(1): 11...12], now: 3)
        #expect(wider)
        #expect(t.entries[Self.a]!.parted.runs[ReplicaID(1)] == [1...9, 11...12] && t.entries[Self.a]!.sequence == 2,
                "10 was not parted: not named")
        #expect(!t.countsParted(Self.v([1: 10]), lacking: VersionVector()))
        let joined = t.noteParted(Self.a, ranges: [ReplicaID(1): 10...10], now: 3)
        #expect(joined)
        #expect(t.entries[Self.a]!.parted.runs[ReplicaID(1)] == [1...12], "runs that touch are one")
        // Publishing keeps it.
        _ = t.publish(Self.a, version: Self.v([101: 7]), claimed: [], now: 4)
        #expect(t.entries[Self.a]!.parted.runs[ReplicaID(1)] == [1...12])
        #expect(t.countsParted(Self.v([1: 7]), lacking: VersionVector()))
        #expect(!t.countsParted(Self.v([1: 7]), lacking: Self.v([1: 7])), "held here: not lacking")
        #expect(!t.countsParted(Self.v([1: 40]), lacking: VersionVector()),
                "past the range: a device that re-synced counts it without holding it")
        #expect(!t.countsParted(Self.v([2: 3]), lacking: VersionVector()))
    }

    @Test("parted ranges round-trip in the stability message (absent when there are none: the bytes of before) and in the stability file (version 4); a version-3 file loads with nothing parted; truncations are refused")
    func encodings() throws {
        let doc = DocumentID(high: 0, low: 9)
        var x = PeerStability()
        _ = x.publish(Self.a, version: Self.v([7: 5]), claimed: [], now: 1)
        let plain = SyncMessage.stability(document: doc, from: Self.a, entries: x.entries).encoded()
        _ = x.noteParted(Self.a, ranges: [ReplicaID(7): 6...9, ReplicaID(8): 1...3], now: 2)
        let message = SyncMessage.stability(document: doc, from: Self.a, entries: x.entries)
        let bytes = message.encoded()
        #expect(try SyncMessage(decoding: bytes) == message)
        var stripped = x.entries
        stripped[Self.a]!.parted = PartedRanges()
        let strippedBytes = SyncMessage.stability(document: doc, from: Self.a, entries: stripped).encoded()
        #expect(strippedBytes.count == plain.count, "no parted part without ranges: what an older daemon reads")
        // Cut after the (empty) retirements part, it is a table that parted nothing.
        for n in strippedBytes.count + 2 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        // With a retirements part before it.
        _ = x.merge([Self.b: PeerStability.Entry(sequence: 4, version: Self.v([7: 5]), claimed: [Self.b], retiredAt: 3)],
                    me: Self.a, floor: nil, now: 3)
        let both = SyncMessage.stability(document: doc, from: Self.a, entries: x.entries)
        #expect(try SyncMessage(decoding: both.encoded()) == both)
        // A range that ends before it starts is refused.
        var bad = SyncMessage.stability(document: doc, from: Self.a,
                                        entries: [Self.a: PeerStability.Entry(sequence: 1, version: VersionVector(), claimed: [Self.a])]).encoded()
        bad += [0, 1, 101, 1, 7, 5, 2]   // no retirements; daemon 101: one range, replica 7 from 5 to 2
        #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: bad) }

        try Self.expectFileRoundTrip(x)
        // Version 3: the entries end at `retired`.
        var v3 = [UInt8]("LSSTAB3\n".utf8) + [1, 0, 0, 0]   // relayed; no senders, retired or ephemeral
        v3 += [1, 102, 5, 4, 1, 7, 5, 1, 102, 0, 0, 0]      // daemon 102, heard 5, sequence 4, {7: 5}, claims itself, no retirements
        v3 += [0, 0, 0]                                     // no retired daemons, relay authors or retired authors
        let old = try DocumentStability(decoding: v3)
        #expect(old.peers.entries == [Self.b: PeerStability.Entry(sequence: 4, version: Self.v([7: 5]), claimed: [Self.b])])
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 4")
    }

    @Test("an entry's runs apart: the stability message gives each author's first to last counter in `parted` (what the previous build reads) and the runs in a `runs` part after it; the file (version 7) keeps them; a version-6 file loads one run per author; runs the parted part does not bound, and every truncation, are refused")
    func runsApart() throws {
        let doc = DocumentID(high: 0, low: 9)
        var x = PeerStability()
        _ = x.publish(Self.a, version: Self.v([7: 5]), claimed: [], now: 1)
        _ = x.noteParted(Self.a, ranges: [ReplicaID(7): 1...3], now: 2)
        _ = x.noteParted(Self.a, ranges: [ReplicaID(7): 8...9, ReplicaID(8): 2...2], now: 3)
        #expect(x.entries[Self.a]!.parted.runs == [ReplicaID(7): [1...3, 8...9], ReplicaID(8): [2...2]])
        let message = SyncMessage.stability(document: doc, from: Self.a, entries: x.entries)
        let bytes = message.encoded()
        #expect(try SyncMessage(decoding: bytes) == message)
        // The previous build's reading: the same table with one run per author, and no more bytes.
        var hulls = x.entries
        hulls[Self.a]!.parted = PartedRanges(hulls: [ReplicaID(7): 1...9, ReplicaID(8): 2...2])
        let hullBytes = SyncMessage.stability(document: doc, from: Self.a, entries: hulls).encoded()
        #expect(Array(bytes.prefix(hullBytes.count)) == hullBytes, "parted gives first to last; the runs come after")
        #expect(bytes.count > hullBytes.count)
        guard case let .stability(_, _, read)? = try? SyncMessage(decoding: hullBytes) else { Issue.record("hulls"); return }
        #expect(read[Self.a]!.parted.runs[ReplicaID(7)] == [1...9])
        // Cut inside the runs part: refused (cut right after the empty prefixes part, a table
        // without runs).
        for n in hullBytes.count + 2 ..< bytes.count {
            #expect(throws: SyncProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes[..<n])) }
        }
        // Runs whose first and last counters are not parted's: refused.
        let a = UInt8(Self.a.rawValue)
        #expect(throws: SyncProtocolError.self) {
            _ = try SyncMessage(decoding: hullBytes + [0, 1, a, 3, 7, 1, 3, 7, 8, 10, 8, 2, 2])
        }
        #expect(throws: SyncProtocolError.self) {   // runs out of order
            _ = try SyncMessage(decoding: hullBytes + [0, 1, a, 3, 7, 8, 9, 7, 1, 3, 8, 2, 2])
        }
        let good = hullBytes + [0, 1, a, 3, 7, 1, 3, 7, 8, 9, 8, 2, 2]
        #expect(try SyncMessage(decoding: good) == message)

        try Self.expectFileRoundTrip(x)
        // Version 6: one run per author.
        var v6 = [UInt8]("LSSTAB6\n".utf8) + [1, 0, 0, 0]            // relayed; no senders, retired or ephemeral
        v6 += [1, a, 5, 4, 1, 7, 5, 1, a, 0, 0, 0, 1, 7, 1, 9, 0, 0]  // daemon a, heard 5, sequence 4, {7: 5}, claims itself, no retirements, parted 7: 1...9, no offer, nothing refused
        v6 += [0, 0, 0, 0]                                            // no retired daemons, relay authors or retired authors; not lost
        let old = try DocumentStability(decoding: v6)
        #expect(old.peers.entries[Self.a]?.parted.runs == [ReplicaID(7): [1...9]])
        #expect(try DocumentStability(decoding: old.encoded()) == old, "written again as version 7")
    }

    /// X compacted; Y merged its device's edits back onto X's snapshot; a device holds Y's
    /// parted originals (it took them at Y before the merge back). Returns X, Y and that device's
    /// copy.
    static func partedAtY(xVariant: DocumentCore.Variant = .correct) throws -> (x: DocumentCore, y: DocumentCore, device: ListDocument) {
        var (coreX, coreY, own) = try PeerMergeBackTests.parted()
        coreX.variant = xVariant
        let snapshot = try ListDocument(snapshot: coreX.document.encodedSnapshot(), replica: PeerMergeBackTests.y)
        let (merged, merge) = try #require(coreY.mergeBack(snapshot))
        _ = coreY.replace(with: merged, parting: merge)
        // It never compacted: it holds X's edits (so X's history goes back to its version) and Y's.
        var device = Fixture.typed(3).fork(as: 3)
        #expect(device.receive(Fixture.edits(on: Fixture.typed(3), replica: 1, count: 2)).refused.isEmpty)
        #expect(device.receive(own).refused.isEmpty)
        #expect(coreX.document.hasHistory(since: device.version), "no snapshot for being behind the floor")
        return (coreX, coreY, device)
    }

    static let roamer = SubscriberID(9)

    static func isSnapshot(_ m: SyncMessage) -> Bool {
        if case .snapshot = m { return true }
        return false
    }

    @Test("a device that took Y's parted originals roams to X, which has a floor and holds Y's table: its catch-up is a snapshot, which it loads in place of its copy; before X heard of Y's merge back, or with DocumentCore.Variant.sendsPartedOperations, it is sent operations and keeps the originals")
    func roamerGetsASnapshot() throws {
        let parted = try Self.partedAtY()
        var coreX = parted.x
        let (coreY, device) = (parted.y, parted.device)
        #expect(coreY.stability.peers.entries[PeerMergeBackTests.y]?.parted.isEmpty == false, "Y's entry says what it parted")
        let before = coreX.subscribe(Self.roamer, epoch: 7, version: device.version)
        #expect(!before.sent(to: Self.roamer).contains(where: Self.isSnapshot), "X has not heard of Y's merge back yet")
        _ = coreX.unsubscribe(Self.roamer)
        _ = coreX.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: coreY.stability.peers.entries, now: 3)
        let after = coreX.subscribe(Self.roamer, epoch: 7, version: device.version)
        #expect(after.sent(to: Self.roamer).contains(where: Self.isSnapshot))

        let broken = try Self.partedAtY(xVariant: .sendsPartedOperations)
        var oldX = broken.x
        _ = oldX.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: broken.y.stability.peers.entries, now: 3)
        let old = oldX.subscribe(Self.roamer, epoch: 7, version: device.version)
        #expect(!old.sent(to: Self.roamer).contains(where: Self.isSnapshot), "without the rule: operations")
    }

    @Test("a device that caught up at X before X heard of Y's merge back is cut off by X's housekeeping once it does, if its seen ends on a parted original; a device whose seen does not, and a peer link, are not")
    func caughtUpHolderCutOff() throws {
        let parted = try Self.partedAtY()
        var coreX = parted.x
        let (coreY, device) = (parted.y, parted.device)
        let other = SubscriberID(10)
        _ = coreX.subscribe(Self.roamer, epoch: 7, version: device.version)
        _ = coreX.seen(Self.roamer, replica: ReplicaID(3), version: device.version, role: .compactingDevice, now: 3)
        _ = coreX.subscribe(other, epoch: 7, version: coreX.document.version)
        _ = coreX.seen(other, replica: ReplicaID(4), version: coreX.document.version, role: .compactingDevice, now: 3)
        let rule = CompactionRule(retireAfter: 1_000, minOperations: 1, interval: 0, gossipInterval: 10)
        let quiet = coreX.housekeeping(stabilityNow: 4, now: 4, rule: rule)
        #expect(!quiet.gossip.contains { if case .close = $0 { return true }; return false })
        _ = coreX.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: coreY.stability.peers.entries, now: 5)
        let step = coreX.housekeeping(stabilityNow: 6, now: 6, rule: rule)
        let closed = step.gossip.compactMap { if case let .close(s, _) = $0 { return s }; return nil }
        #expect(closed == [Self.roamer])
        // It subscribes again: a snapshot.
        let again = coreX.subscribe(Self.roamer, epoch: 7, version: device.version)
        #expect(again.sent(to: Self.roamer).contains(where: Self.isSnapshot))

        let broken = try Self.partedAtY(xVariant: .sendsPartedOperations)
        var oldX = broken.x
        _ = oldX.subscribe(Self.roamer, epoch: 7, version: device.version)
        _ = oldX.seen(Self.roamer, replica: ReplicaID(3), version: device.version, role: .compactingDevice, now: 3)
        _ = oldX.peerStability(PeerMergeBackTests.yAtX, from: PeerMergeBackTests.y, entries: broken.y.stability.peers.entries, now: 5)
        let oldStep = oldX.housekeeping(stabilityNow: 6, now: 6, rule: rule)
        #expect(!oldStep.gossip.contains { if case .close = $0 { return true }; return false }, "without the rule: kept")
    }

    @Test("after a restart of Y (its copy and stability file read again, partedVersion forgotten) a device holding Y's parted originals still gets a snapshot there: Y's own entry keeps the ranges")
    func restartedDaemonStillSendsASnapshot() throws {
        let parted = try Self.partedAtY()
        let file = parted.y.stability.encoded()
        let copy = try ListDocument(snapshot: parted.y.document.encodedSnapshot(), replica: PeerMergeBackTests.y)
        var restarted = DocumentCore(id: PeerMergeBackTests.doc, name: "n", epoch: 7, document: copy,
                                     stability: try DocumentStability(decoding: file))
        #expect(restarted.partedVersion == nil && restarted.document.historyFloor != nil)
        let sub = restarted.subscribe(Self.roamer, epoch: 7, version: parted.device.version)
        #expect(sub.sent(to: Self.roamer).contains(where: Self.isSnapshot))
    }
}
