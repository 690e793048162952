import Foundation
import Testing
@testable import ListCRDT
import ListSyncTestSupport

/// A compaction floor that counts counters it never held (Docs/Semantics.md §7, "A floor that
/// counts what it skipped"): a device re-synced at a peer dropped an edit the left-out daemon
/// acknowledged while it waited there for its causes, and made later edits under later
/// counters; the peer's floor counts the dropped one. Found by seed 11336 of `listsync simulate
/// --daemons 2 --compact-after 10 --hide-daemon --roam 30 --crashes 2 --ops 80`.
@Suite struct FloorSkippedTests {
    static func scene() throws -> (hub: ListDocument, parted: ListDocument, p: ListOperation, w: ListOperation) {
        let (hub, parted, p, w, _) = try FloorSkippedFixture.scene()
        return (hub, parted, p, w)
    }

    @Test("a floor remembers the counters it counts but never held: the device's dropped edits, not those the hub holds; a later compaction keeps them")
    func floorRemembersSkipped() throws {
        var (hub, _, p, w) = try Self.scene()
        let skipped = try #require(hub.floorSkipped[ReplicaID(3)])
        #expect(skipped.contains { $0.contains(w.id.counter) })
        #expect(!skipped.contains { $0.contains(p.id.counter) })
        #expect(hub.historyFloor?.contains(w.id) == true && !hub.heldOperations()(w.id) && hub.heldOperations()(p.id))
        #expect(!hub.holdsExactly(w.id) && hub.holdsExactly(p.id))
        #expect(hub.floorSkipped.keys.sorted() == [ReplicaID(3)])
        // Compacted again, after more edits, the floor still names them.
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("z"))
        let before = hub.floorSkipped
        try hub.compact(stable: hub.version)
        #expect(hub.floorSkipped == before)
        // Compacted at a stable prefix too (an edit after it stays in the log).
        var other = hub.fork(as: 5)
        let q = try other.insertItem(at: IndexPath(item: 0, section: 0), value: Data("q"))
        #expect(hub.receive([q]).refused.isEmpty)
        let prefix = hub.version
        _ = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("r"))
        try hub.compact(stable: prefix)
        #expect(hub.historyFloor == prefix && hub.floorSkipped == before)
    }

    @Test("replicas that edit in turns (each edit's counter past the other's, a Lamport clock's gaps) skip nothing: the floor names no counter and the snapshot stays version 3")
    func interleavedEditsSkipNothing() throws {
        var a = try ListDocument.make(1, sections: [["a"]])
        var b = a.fork(as: 2)
        for k in 0..<6 {
            let x = try a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("a\(k)"))
            #expect(b.receive([x]).refused.isEmpty)
            let y = try b.insertItem(at: IndexPath(item: 0, section: 0), value: Data("b\(k)"))
            let z = try b.insertItem(at: IndexPath(item: 0, section: 0), value: Data("c\(k)"))
            #expect(a.receive([y, z]).refused.isEmpty)
        }
        #expect(a.version[ReplicaID(2)] > UInt64(a.operations(since: VersionVector()).filter { $0.id.replica == ReplicaID(2) }.count), "replica 2's counters have gaps")
        try a.compact(stable: a.version)
        #expect(a.floorSkipped.isEmpty)
        #expect(a.encodedSnapshot()[4] == ListDocument.compactedSnapshotFormatVersion)
    }

    @Test("a device whose copy's clock was behind the snapshot's still makes its first edit after the re-sync jump past its causes: the floor names the edit it dropped")
    func resyncBehindTheSnapshotsClock() throws {
        var (hub, parted, p, w, made) = try FloorSkippedFixture.scene(hubGoesOn: 8)
        let first = try #require(made.first)
        let causes = first.deps.map(\.counter).max() ?? 0
        #expect(causes > w.id.counter, "the snapshot's clock was past the device's dropped edit")
        #expect(first.id.counter > causes + 1, "the counter jumps past its causes'")
        #expect(hub.floorSkipped[ReplicaID(3)]?.contains { $0.contains(w.id.counter) } == true)
        var merged = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.parted.map(\.id) == [w.id] && merge.made.count == 1)
        #expect(merged.fields(of: ItemID(p.id))["title"] == .value(.string("T")))
        #expect(hub.receive(merge.made).refused.isEmpty)
    }

    @Test("a re-sync with nothing to make again still makes the device's next edit skip a counter, after edits it received meanwhile; a compaction keeps the flag; the edit after does not skip")
    func skipSurvivesReceivedEdits() throws {
        var hub = try ListDocument.make(1, sections: [["a", "b"]])
        var device = hub.fork(as: 3)
        _ = try device.insertItem(at: IndexPath(item: 0, section: 0), value: Data("dropped"))
        _ = try hub.deleteItem(at: IndexPath(item: 1, section: 0))
        try hub.compact(stable: hub.version)
        var resynced = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(3))
        #expect(resynced.remake([], from: device, refused: true).isEmpty)
        for k in 0..<4 {
            let h = try hub.insertItem(at: IndexPath(item: 0, section: 0), value: Data("h\(k)"))
            #expect(resynced.receive([h]).refused.isEmpty)
        }
        try resynced.compact(stable: resynced.version)
        let first = try resynced.insertItem(at: IndexPath(item: 0, section: 0), value: Data("first"))
        #expect(first.id.counter == (first.deps.map(\.counter).max() ?? 0) + 2)
        let second = try resynced.insertItem(at: IndexPath(item: 0, section: 0), value: Data("second"))
        #expect(second.id.counter == first.id.counter + 1)
    }

    @Test("no fast path continues its run past a re-sync that skips: the next keystroke, typed insert or item delete skips a counter (the clock is past the run's last), the one after does not")
    func fastPathsTakeTheSkip() throws {
        for kind in ["keystroke", "insert", "delete"] {
            var doc = try ListDocument.make(3, sections: [["a", "b", "c", "d"]])
            let item = ItemID(try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("t")).id)
            func edit(_ k: Int) throws -> OpID {
                switch kind {
                case "keystroke": return try doc.typeText("notes", ofItem: item, at: k, insert: "x")
                case "insert": return try doc.insertItem(at: IndexPath(item: 1 + k, section: 0), value: Data("i")).id
                default: return try doc.deleteItem(at: IndexPath(item: 1, section: 0)).id
                }
            }
            _ = try edit(0)
            _ = try edit(1)
            let live = kind == "keystroke" ? doc.localTextRun?.logCount == doc.operationCount
                : kind == "insert" ? doc.localInsertRun != nil : doc.localDeleteRun != nil
            #expect(live, "\(kind): the run is live")
            var old = doc
            _ = try old.insertItem(at: IndexPath(item: 0, section: 0), value: Data("dropped"))
            doc.clockPast(old)
            #expect(doc.skipsCounter)
            let clock = doc.clock
            #expect(try edit(2).counter == clock + 2, "\(kind): the edit after the re-sync skips one")
            #expect(!doc.skipsCounter)
            let next = doc.clock
            #expect(try edit(3).counter == next + 1, "\(kind): the one after does not")
        }
    }

    @Test("the compacted snapshot carries them (version 12) and loads them back; a floor that skipped nothing still writes version 3, byte for byte")
    func snapshotCarriesSkipped() throws {
        let (hub, _, _, _) = try Self.scene()
        let bytes = hub.encodedSnapshot()
        #expect(bytes[4] == ListDocument.compactedSkippedSnapshotFormatVersion)
        let loaded = try ListDocument(snapshot: bytes, replica: ReplicaID(9))
        #expect(loaded.floorSkipped == hub.floorSkipped && loaded.rows == hub.rows)
        #expect(loaded.encodedSnapshot() == bytes)
        // Without them: the bytes of version 3, version 12's less its flags and skipped counters.
        let plain = hub.forgettingFloorSkipped().encodedSnapshot()
        #expect(plain[4] == ListDocument.compactedSnapshotFormatVersion)
        let at = Self.skippedOffset(hub)
        #expect(Array(plain[5...]) == Array(bytes[6..<at]) + Array(bytes[(at + Self.skippedBytes(hub).count)...]))
        #expect(try ListDocument(snapshot: plain, replica: ReplicaID(9)).floorSkipped.isEmpty)
        var clean = try ListDocument.make(1, sections: [["a", "b"]])
        try clean.compact(stable: clean.version)
        #expect(clean.floorSkipped.isEmpty && clean.encodedSnapshot()[4] == ListDocument.compactedSnapshotFormatVersion)
        // With fields: flag 1, the records between the state and the skipped counters.
        var fielded = hub
        _ = try fielded.insertItem(at: IndexPath(item: 0, section: 0), value: Data("f"), fields: ["n": .increment(2)])
        try fielded.compact(stable: fielded.version)
        let fieldBytes = fielded.encodedSnapshot()
        #expect(fieldBytes[4] == ListDocument.compactedSkippedSnapshotFormatVersion && fieldBytes[5] == 1)
        let fieldLoaded = try ListDocument(snapshot: fieldBytes, replica: ReplicaID(2))
        #expect(fieldLoaded.floorSkipped == fielded.floorSkipped && fieldLoaded.encodedSnapshot() == fieldBytes)
    }

    /// The skipped counters' bytes as ``SkippedCountersCoding`` writes them for `doc`.
    static func skippedBytes(_ doc: ListDocument) -> [UInt8] {
        var w = WireWriter()
        SkippedCountersCoding.encode(doc.floorSkipped, to: &w)
        return w.bytes
    }

    /// Where the skipped counters start in `doc`'s version-12 snapshot (a floor without records:
    /// after the magic, the version, the flags and the floor's state).
    static func skippedOffset(_ doc: ListDocument) -> Int {
        let base = doc.compaction!.base
        var w = WireWriter()
        w.count(base.count)
        return 6 + w.bytes.count + base.count
    }

    @Test("bad skipped counters are an error and load nothing: outside the floor, touching, a head of the floor, replicas out of order, a bad flags byte, every cut")
    func badSkippedRefused() throws {
        let (hub, _, _, _) = try Self.scene()
        let bytes = hub.encodedSnapshot()
        let good = Self.skippedBytes(hub)
        let at = Self.skippedOffset(hub)
        #expect(Array(bytes[at..<(at + good.count)]) == good)
        func with(_ write: (inout WireWriter) -> Void) -> [UInt8] {
            var w = WireWriter()
            write(&w)
            return Array(bytes[..<at]) + w.bytes + Array(bytes[(at + good.count)...])
        }
        #expect(throws: Never.self) { try ListDocument(snapshot: with { SkippedCountersCoding.encode(hub.floorSkipped, to: &$0) }, replica: ReplicaID(2)) }
        let top = try #require(hub.historyFloor)[ReplicaID(3)]
        #expect(hub.compaction!.frontier.contains(OpID(counter: top, replica: ReplicaID(3))), "the device's edit made again is the floor's head")
        // replicas, then per replica: id, runs, and per run (start - previous end, length - 1).
        let bad: [(String, [UInt64])] = [
            ("past the floor", [1, 3, 1, top, 1]),
            ("a replica the floor does not count", [1, 77, 1, 1, 0]),
            ("touching", [1, 3, 2, 1, 0, 1, 0]),
            ("overlapping", [1, 3, 2, 2, 0, 0, 0]),
            ("starting at 0", [1, 3, 1, 0, 0]),
            ("no run", [1, 3, 0]),
            ("replicas out of order", [2, 3, 1, 1, 0, 2, 1, 1, 0]),
            ("the floor's head", [1, 3, 1, top, 0]),
        ]
        for (why, numbers) in bad {
            #expect(throws: WireError.self, "\(why)") { try ListDocument(snapshot: with { w in numbers.forEach { w.varint($0) } }, replica: ReplicaID(2)) }
        }
        var flags = bytes
        flags[5] = 2
        #expect(throws: WireError.self) { try ListDocument(snapshot: flags, replica: ReplicaID(2)) }
        for cut in stride(from: 5, to: bytes.count, by: 1) {
            #expect(throws: WireError.self, "cut at \(cut)") { try ListDocument(snapshot: bytes[..<cut], replica: ReplicaID(2)) }
        }
    }

    @Test("the merge back makes again a waiting edit the snapshot's floor counts but skipped; with the floor taken for held (the old behaviour) it is dropped, and the field write is on no copy")
    func waitingSkippedMadeAgain() throws {
        var (hub, parted, p, w) = try Self.scene()
        let snapshot = try ListDocument(snapshot: hub.encodedSnapshot(), replica: ReplicaID(9))
        var merged = snapshot
        #expect(!merged.holdsEverything(of: parted), "the snapshot lacks w: the copy is merged back, not replaced")
        let mergeResult = merged.mergeBack(from: parted, remakes: { _ in true })
        let merge = try #require(mergeResult)
        #expect(merge.parted.map(\.id) == [w.id] && merge.dropped.isEmpty && merge.made.count == 1)
        #expect(merge.made.allSatisfy { $0.id.replica == ReplicaID(9) })
        #expect(merged.fields(of: ItemID(p.id))["title"] == .value(.string("T")))
        #expect(merged.pendingCount == 0)
        try merged.checkInvariants()
        #expect(hub.receive(merge.made).refused.isEmpty)
        #expect(hub.rows == merged.rows && hub.fields(of: ItemID(p.id)) == merged.fields(of: ItemID(p.id)))
        // The old behaviour: the floor is a version, every counter held.
        var old = snapshot.forgettingFloorSkipped()
        #expect(old.holdsEverything(of: parted), "the old check took the waiting edit for held")
        let oldResult = old.mergeBack(from: parted, remakes: { _ in true })
        let oldMerge = try #require(oldResult)
        #expect(oldMerge.parted.isEmpty && oldMerge.made.isEmpty)
        #expect(old.fields(of: ItemID(p.id))["title"] == nil, "the acknowledged write is lost")
    }
}
