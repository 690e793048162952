import Foundation
import Testing
@_spi(Testing) import ListCRDT
import ListSyncRandom
import ListSyncTestSupport

/// A text edit made again (`ListDocument.remake`, after a refusal or a snapshot catch-up) is made
/// where it is made again: its insert goes right after its left origin, before what follows that
/// character on the replica that makes it again (Docs/Semantics.md §7, "Edits made again are
/// made here").
@Suite struct RemadeTextTests {
    /// Splices at random places of `name` of `item`: short inserts, some removals.
    static func type(_ doc: inout ListDocument, _ item: ItemID, _ count: Int, _ rng: inout SplitMix64, tag: String) throws {
        for k in 0..<count {
            let n = doc.text("notes", ofItem: item)?.unicodeScalars.count ?? 0
            let at = Int(rng.next() % UInt64(n + 1))
            let delete = n > at && rng.next() % 3 == 0 ? 1 : 0
            try doc.splice("notes", ofItem: item, at: at, delete: delete, insert: "<\(tag)\(k)>")
        }
    }

    /// A card's notes typed by a hub, another replica, and one offline; the hub compacts, the
    /// offline replica makes its edits again on the compacted hub's snapshot. Returns what the
    /// compacted hub, a copy of the hub that never compacted, and the remaking replica show once
    /// each has the edits made again.
    static func run(seed: UInt64, variant: EngineVariant = .correct) throws -> (compacted: String?, uncompacted: String?, remade: String?) {
        var rng = SplitMix64(seed: seed)
        var hub = try ListDocument.make(1, sections: [["card"]])
        let item = try #require(hub.snapshot().itemIdentifier(at: IndexPath(item: 0, section: 0)))
        try hub.splice("notes", ofItem: item, at: 0, insert: "abcdefgh")
        var offline = hub.fork(as: 3)
        var other = hub.fork(as: 2)
        let start = offline.operationCount
        try type(&offline, item, 4, &rng, tag: "y")
        let unsent = try offline.operations(from: start)
        let otherStart = other.operationCount
        try type(&other, item, 4, &rng, tag: "x")
        #expect(hub.receive(try other.operations(from: otherStart)).refused.isEmpty)
        try type(&hub, item, 2, &rng, tag: "h")
        var uncompacted = hub
        try hub.compact(stable: hub.version)
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        copy.variant = variant
        let made = copy.remake(unsent, from: offline)
        #expect(!made.isEmpty, "seed \(seed): nothing made again")
        #expect(hub.receive(made).refused.isEmpty, "seed \(seed)")
        #expect(uncompacted.receive(made).refused.isEmpty, "seed \(seed)")
        return (hub.text("notes", ofItem: item), uncompacted.text("notes", ofItem: item), copy.text("notes", ofItem: item))
    }

    @Test("a text edit made again on a compacted snapshot lands in one place on every replica: the compacted one, one that never compacted, and the one that made it again")
    func remadeTextConverges() throws {
        for seed in UInt64(1)...60 {
            let r = try Self.run(seed: seed)
            #expect(r.compacted == r.uncompacted && r.compacted == r.remade,
                    "seed \(seed): compacted \(r.compacted ?? "nil"), never compacted \(r.uncompacted ?? "nil"), made again \(r.remade ?? "nil")")
        }
    }

    @Test("the variant that keeps the origins an edit was first made with is caught: a compacted replica and one that never compacted place it differently")
    func keptOriginsDiverge() throws {
        var parted = 0
        for seed in UInt64(1)...60 {
            let r = try Self.run(seed: seed, variant: .keepsRemadeTextOrigins)
            if r.compacted != r.uncompacted { parted += 1 }
        }
        #expect(parted > 0, "no seed of 60 told the variant apart")
    }

    @Test("an insert made again goes right after its left origin, before the characters typed there since by others")
    func madeRightAfterItsLeftOrigin() throws {
        var hub = try ListDocument.make(1, sections: [["card"]])
        let item = try #require(hub.snapshot().itemIdentifier(at: IndexPath(item: 0, section: 0)))
        try hub.splice("notes", ofItem: item, at: 0, insert: "ab")
        var offline = hub.fork(as: 3)
        let start = offline.operationCount
        try offline.splice("notes", ofItem: item, at: 1, insert: "Y")   // a|Y|b
        let unsent = try offline.operations(from: start)
        try hub.splice("notes", ofItem: item, at: 1, insert: "X")       // a|X|b
        try hub.compact(stable: hub.version)
        var copy = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        let made = copy.remake(unsent, from: offline)
        #expect(copy.text("notes", ofItem: item) == "aYXb")
        #expect(hub.receive(made).refused.isEmpty)
        #expect(hub.text("notes", ofItem: item) == "aYXb")
    }
}

/// Undo types removed characters again where they stand (Docs/Semantics.md §8.8); it does so
/// with a keystroke's origins, which every compaction keeps.
@Suite struct TextTakeBackAfterCompactionTests {
    @Test("a device that did not compact takes back a removal whose characters its daemon's compaction dropped: the daemon takes the edit, and both show the text whole again")
    func takeBackAfterTheDaemonCompacted() throws {
        var hub = try ListDocument.make(1, sections: [["card"]])
        let item = try #require(hub.snapshot().itemIdentifier(at: IndexPath(item: 0, section: 0)))
        let typed = try hub.splice("notes", ofItem: item, at: 0, insert: "abcdef")
        var device = hub.fork(as: 3)
        let target = RecordTarget.item(item)
        let all = device.textCharacters("notes", of: target, in: [TextRange(first: typed.id, count: 6)])
        let removed = Array(all[1...3])   // "bcd"
        let delete = try device.splice("notes", ofItem: item, at: 1, delete: 3)
        #expect(hub.receive([delete]).refused.isEmpty)
        try hub.compact(stable: hub.version)   // keeps "b" (the first of the removed run), drops "c" and "d"
        #expect(hub.textCharacters("notes", of: target, in: [TextRange(first: removed[2].id, count: 1)]).isEmpty, "compaction dropped \"d\"")
        let (edit, unplaced) = device.takeBackEdit("notes", of: target, typed: [], removed: removed)
        #expect(unplaced == 0)
        let back = try device.writeFields(["notes": .text(try #require(edit))], ofItem: item)
        #expect(device.text("notes", ofItem: item) == "abcdef")
        #expect(hub.receive([back]).refused.isEmpty, "the daemon refused the take-back")
        #expect(hub.text("notes", ofItem: item) == "abcdef")
    }
}
