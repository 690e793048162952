import Testing
@testable import ListCRDT
import ListSyncSimulation

/// `SlotStore.load(slots:runs:_:)`, the snapshot decoder's way to build the slot table in place,
/// against the store built by appending the same slot runs one at a time.
@Suite struct SlotStoreLoadingTests {
    /// One slot run to add: consecutive ids and entities, the first with `left`, all with `right`.
    struct Piece {
        var id: OpID
        var count: Int
        var left: LocalVersion
        var right: LocalVersion
        var sequence: SequenceIndex
        var entity: EntityIndex
    }

    /// Seeded slot runs by three replicas: typed runs that continue the last one (which merge
    /// into its run), runs that continue a replica's ids elsewhere, and runs anywhere.
    static func pieces(seed: UInt64, count: Int) -> [Piece] {
        var rng = SplitMix64(seed: seed)
        var out: [Piece] = []
        var next: [UInt64] = [1, 1, 1]
        var slots = 0, entities = 0
        for _ in 0 ..< count {
            let k = Int.random(in: 0 ..< 3, using: &rng)
            let n = Int.random(in: 1 ... 5, using: &rng)
            let sequence: SequenceIndex = Bool.random(using: &rng) ? .sections : .items(EntityIndex(Int32(Int.random(in: 0 ..< 2, using: &rng))))
            var left = slots == 0 ? LocalVersion.none : LocalVersion(Int32(Int.random(in: 0 ..< slots, using: &rng)))
            var right = LocalVersion.none
            var seq = sequence
            if let last = out.last, Int.random(in: 0 ..< 3, using: &rng) > 0 {
                // Continue the last run: its replica's next ids, left origin its last slot.
                left = LocalVersion(Int32(slots - 1))
                right = last.right
                seq = last.sequence
                out.append(Piece(id: OpID(counter: last.id.counter + UInt64(last.count), replica: last.id.replica), count: n,
                                 left: left, right: right, sequence: seq, entity: EntityIndex(Int32(entities))))
                next[Int(last.id.replica.rawValue) - 1] = last.id.counter + UInt64(last.count) + UInt64(n)
            } else {
                let replica = ReplicaID(UInt64(k + 1))
                if Bool.random(using: &rng) { next[k] += UInt64.random(in: 1 ... 3, using: &rng) }
                out.append(Piece(id: OpID(counter: next[k], replica: replica), count: n, left: left, right: right,
                                 sequence: seq, entity: EntityIndex(Int32(entities))))
                next[k] += UInt64(n)
            }
            slots += n
            entities += n
        }
        return out
    }

    static func expectSame(_ a: SlotStore, _ b: SlotStore, _ pieces: [Piece]) {
        #expect(a.count == b.count)
        #expect(a.runs.count == b.runs.count)
        for (x, y) in zip(a.runs, b.runs) {
            #expect(x.lv == y.lv && x.count == y.count && x.id == y.id && x.left == y.left && x.right == y.right && x.sequence == y.sequence)
        }
        for lv in 0 ..< a.count {
            let v = LocalVersion(Int32(lv))
            #expect(a.entity(of: v) == b.entity(of: v) && a.sequence(of: v) == b.sequence(of: v) && a.id(of: v) == b.id(of: v))
        }
        #expect(a.idRuns.count == b.idRuns.count)
        for (x, y) in zip(a.idRuns, b.idRuns) {
            #expect(x.map(\.counter) == y.map(\.counter) && x.map(\.lv) == y.map(\.lv) && x.map(\.count) == y.map(\.count))
        }
        // Every id is found at its slot, in both.
        var lv = 0
        for p in pieces {
            for j in 0 ..< p.count {
                let id = p.id.advanced(by: j)
                #expect(a.lv(of: id) == LocalVersion(Int32(lv)) && b.lv(of: id) == LocalVersion(Int32(lv)))
                lv += 1
            }
        }
    }

    @Test("loaded in place, the slots, runs and id runs are those appending the same runs makes", arguments: 0 ..< 20)
    func sameAsAppending(seed: UInt64) {
        let pieces = Self.pieces(seed: seed, count: 200)
        var appended = SlotStore()
        for p in pieces {
            _ = appended.appendRun(id: p.id, count: p.count, left: p.left, right: p.right, sequence: p.sequence, entity: p.entity)
        }
        let total = pieces.reduce(0) { $0 + $1.count }
        let loaded = SlotStore.load(slots: total, runs: pieces.count) { (s: inout SlotStore.Loading) in
            for p in pieces {
                if p.count == 1 {
                    _ = s.append(id: p.id, left: p.left, right: p.right, sequence: p.sequence, entity: p.entity)
                } else {
                    _ = s.appendRun(id: p.id, count: p.count, left: p.left, right: p.right, sequence: p.sequence, entity: p.entity)
                }
                #expect(s.sequence(of: LocalVersion(Int32(s.count - 1))) == p.sequence)
            }
        }
        #expect(appended.runs.count < pieces.count, "some runs merged (the case the loader must match)")
        Self.expectSame(loaded, appended, pieces)
        // Appending after a load goes on as after appending.
        var a = appended, b = loaded
        let more = OpID(counter: 10_000, replica: ReplicaID(2))
        #expect(a.appendRun(id: more, count: 3, left: .none, right: .none, sequence: .sections, entity: EntityIndex(Int32(total)))
                == b.appendRun(id: more, count: 3, left: .none, right: .none, sequence: .sections, entity: EntityIndex(Int32(total))))
        Self.expectSame(b, a, pieces)
    }

    struct Stop: Error, Equatable {}

    @Test("a body that throws: the error comes out, no store")
    func throwing() {
        #expect(throws: Stop()) {
            _ = try SlotStore.load(slots: 4, runs: 2) { (s: inout SlotStore.Loading) throws(Stop) in
                _ = s.appendRun(id: OpID(counter: 1, replica: ReplicaID(1)), count: 2, left: .none, right: .none,
                                sequence: .sections, entity: EntityIndex(0))
                throw Stop()
            }
        }
        #expect(SlotStore.load(slots: 0, runs: 0) { (_: inout SlotStore.Loading) in }.count == 0)
    }
}
