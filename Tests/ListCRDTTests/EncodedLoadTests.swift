import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Loading encoded batches without one operation per character (`ListDocument.receive(encoded:)`,
/// ListDocument+Load.swift): the result must be exactly what decoding the batch and receiving the
/// operations gives (the same state bytes, log, version, frontier, buffer, refused operations and
/// errors), and a malformed batch must be refused with the decoder's `WireError`, leaving the
/// document exactly as it was.
@Suite(.cpuHeavy) struct EncodedLoadTests: ScenarioSupport {
    // MARK: Helpers

    /// Everything observable about a document.
    struct Observed: Equatable {
        var state: [UInt8]
        var operations: [ListOperation]
        var version: VersionVector
        var frontier: Frontier
        var pending: [ListOperation]
        var rejected: [ListOperation]
        var dropped: String
        var snapshot: ListSnapshot
        var operationCount: Int
        init(_ d: ListDocument) {
            state = d.encodedState()
            operations = d.operations
            version = d.version
            frontier = d.frontier
            pending = d.pendingOperations
            rejected = d.rejectedOperations
            dropped = "\(d.droppedOperations.map { "\($0.operation) \($0.error)" })"
            snapshot = d.snapshot()
            operationCount = d.operationCount
        }
    }

    /// `bytes` received into `base` with `receive(encoded:)`, with
    /// `receive(ListOperation.decode(bytes))`, and (`oneAtATime`) one decoded operation at a time
    /// with the fast paths off: the same errors and the same document every way. Returns the
    /// document loaded with `receive(encoded:)`.
    @discardableResult
    func bothLoads(_ base: ListDocument, _ bytes: [UInt8], maxOperations: Int = .max, oneAtATime: Bool = true,
                   sourceLocation: SourceLocation = #_sourceLocation) throws -> ListDocument {
        var fast = base
        var slow = base
        var fastReport = ReceiveReport(), slowReport = ReceiveReport()
        var fastWire: WireError?, slowWire: WireError?
        do { fastReport = try fast.receive(encoded: bytes, maxOperations: maxOperations) } catch { fastWire = error }
        var decoded: [ListOperation] = []
        do {
            decoded = try ListOperation.decode(bytes, maxValueSize: slow.maxValueSize, maxOperations: maxOperations)
            slowReport = slow.receive(decoded)
        } catch { slowWire = error }
        #expect(fastWire == slowWire, sourceLocation: sourceLocation)
        #expect(fastReport == slowReport, "\(fastReport) against \(slowReport)", sourceLocation: sourceLocation)
        let same = Observed(fast) == Observed(slow)
        #expect(same, "receive(encoded:) and decode + receive differ", sourceLocation: sourceLocation)
        let sameSnapshot = fast.encodedSnapshot() == slow.encodedSnapshot()
        #expect(sameSnapshot, sourceLocation: sourceLocation)
        if fastWire != nil {
            let unchanged = Observed(fast) == Observed(base)
            #expect(unchanged, "a refused batch changed the document", sourceLocation: sourceLocation)
        }
        if oneAtATime && slowWire == nil {
            var single = base
            single.fastPaths = false
            var singleErrors: [ApplyError] = []
            for op in decoded {
                do { try single.receive(op) } catch { singleErrors.append(error) }
            }
            #expect(fastReport.refused == singleErrors, sourceLocation: sourceLocation)
            let sameAsSingle = Observed(fast) == Observed(single)
            #expect(sameAsSingle, "receive(encoded:) and one at a time differ", sourceLocation: sourceLocation)
            // The general path alone (fast paths off) on the encoded batch gives the same too.
            var general = base
            general.fastPaths = false
            _ = try? general.receive(encoded: bytes, maxOperations: maxOperations)
            let sameGeneral = Observed(general) == Observed(single)
            #expect(sameGeneral, "receive(encoded:) without the fast paths differs", sourceLocation: sourceLocation)
        }
        try valid(fast, sourceLocation: sourceLocation)
        return fast
    }

    /// A malformed `bytes`: `receive(encoded:)` throws `expected` (or, when nil, whatever
    /// `ListOperation.decode` throws), the error `ListOperation.decode` throws, and leaves `doc`
    /// exactly as it was.
    func refused(_ doc: ListDocument, _ bytes: [UInt8], _ expected: WireError?, maxOperations: Int = .max,
                 sourceLocation: SourceLocation = #_sourceLocation) {
        var copy = doc
        var got: WireError?, decoderError: WireError?
        do { try copy.receive(encoded: bytes, maxOperations: maxOperations) } catch { got = error }
        do { _ = try ListOperation.decode(bytes, maxValueSize: doc.maxValueSize, maxOperations: maxOperations) } catch {
            decoderError = error
        }
        #expect(got != nil, "the batch was not refused", sourceLocation: sourceLocation)
        #expect(got == decoderError, sourceLocation: sourceLocation)
        if let expected { #expect(got == expected, sourceLocation: sourceLocation) }
        let unchanged = Observed(copy) == Observed(doc) && copy.encodedSnapshot() == doc.encodedSnapshot()
        #expect(unchanged, "the document changed", sourceLocation: sourceLocation)
    }

    /// `n` backspaces with the cursor after row `row - 1` of `section`.
    func backspace(_ doc: inout ListDocument, _ n: Int, at row: Int, section: Int = 0) throws -> [ListOperation] {
        try (0..<n).map { k in try doc.deleteItem(at: ip(section, row - 1 - k)) }
    }

    /// `n` forward deletes with the cursor before row `row` of `section`.
    func forwardDelete(_ doc: inout ListDocument, _ n: Int, at row: Int, section: Int = 0) throws -> [ListOperation] {
        try (0..<n).map { _ in try doc.deleteItem(at: ip(section, row)) }
    }

    /// A seeded history of three replicas that type runs (one-byte and longer values), backspace,
    /// forward delete, move items and sections, insert, delete and rename sections, and sometimes
    /// sync: every operation, and the replicas.
    func concurrentHistory(seed: UInt64, steps: Int = 24) throws -> (ops: [ListOperation], base: ListDocument,
                                                                      replicas: [ListDocument]) {
        var rng = SplitMix64(seed: seed)
        let base = try ListDocument.make(1, sections: [["a", "m", "z"], ["b", "y"]])
        var replicas = (2...4).map { base.fork(as: UInt64($0)) }
        var all: [ListOperation] = []
        for _ in 0..<steps {
            let r = rng.below(3)
            let sections = replicas[r].sectionCount
            guard sections > 0 else {
                all.append(try replicas[r].insertSection(at: 0, value: Data("S")))
                continue
            }
            let s = rng.below(sections)
            let n = try replicas[r].itemCount(inSection: s)
            var ops: [ListOperation] = []
            switch rng.below(12) {
            case 0, 1, 2:
                let text = String(repeating: "x", count: 1 + rng.below(9))
                ops = try type(&replicas[r], text, at: rng.below(n + 1), section: s)
            case 3:
                // Longer values: an insert run that is not one byte per value.
                let at = rng.below(n + 1)
                for k in 0..<(1 + rng.below(5)) {
                    ops.append(try replicas[r].insertItem(at: ip(s, at + k), value: Data(String(repeating: "w", count: k % 3 + 2))))
                }
            case 4, 5:
                if n > 0 {
                    let row = 1 + rng.below(n)
                    ops = try backspace(&replicas[r], 1 + rng.below(row), at: row, section: s)
                }
            case 6:
                if n > 0 {
                    let row = rng.below(n)
                    ops = try forwardDelete(&replicas[r], 1 + rng.below(n - row), at: row, section: s)
                }
            case 7:
                if n > 0 {
                    let to = rng.below(sections)
                    let toCount = try replicas[r].itemCount(inSection: to) - (to == s ? 1 : 0)
                    let from = ip(s, rng.below(n))
                    if rng.chance(30), n > 1 {
                        // A multi-item move.
                        let ids = [try replicas[r].itemID(at: from), try replicas[r].itemID(at: ip(s, (from.item + 1) % n))]
                        if let op = try? replicas[r].moveItems(ids, to: ip(to, 0)) { ops = [op] }
                    } else if let op = try? replicas[r].moveItem(from: from, to: ip(to, rng.below(toCount + 1))) {
                        ops = [op]
                    }
                }
            case 8:
                if sections > 1, let op = try replicas[r].moveSection(from: s, to: rng.below(sections)) { ops = [op] }
            case 9:
                ops = [try replicas[r].insertSection(at: rng.below(sections + 1), value: Data("T"))]
            case 10:
                if rng.chance(40) {
                    ops = [try replicas[r].deleteSection(at: s)]
                } else if n > 0 {
                    ops = [try replicas[r].setValue(Data("v"), forItem: try replicas[r].itemID(at: ip(s, rng.below(n))))]
                }
            default:
                ops = [try replicas[r].setValue(Data("U"), forSection: try replicas[r].sectionID(at: s))]
            }
            all += ops
            if rng.chance(30) {
                // Sometimes a peer sees another's edits before going on.
                let other = (r + 1 + rng.below(2)) % 3
                replicas[other].receive(ops)
            }
        }
        return (all, base, replicas)
    }

    /// A random order of `ops` that keeps each replica's operations in order (later ones may wait
    /// for others), with some duplicates.
    func shuffledCausally(_ ops: [ListOperation], _ rng: inout SplitMix64) -> [ListOperation] {
        let authors = Array(Set(ops.map(\.id.replica))).sorted()
        var queues = authors.map { r in ops.filter { $0.id.replica == r } }
        var order: [ListOperation] = []
        while queues.contains(where: { !$0.isEmpty }) {
            let q = rng.below(queues.count)
            guard !queues[q].isEmpty else { continue }
            let take = min(queues[q].count, 1 + rng.below(12))
            order += queues[q].prefix(take)
            if rng.chance(25), let dup = queues[q].prefix(take).randomElement(using: &rng) { order.append(dup) }
            queues[q].removeFirst(take)
        }
        return order
    }

    // MARK: Histories

    @Test("the automerge-paper history loads with receive(encoded:) exactly as decode + receive, and as a snapshot")
    func automergePaper() throws {
        let trace = try EditingTrace(named: "automerge-paper", in: tracesDirectory)
        var doc = try ListDocument.make(1, sections: [[]])
        try TraceTests.replay(trace, on: &doc)
        let bytes = ListOperation.encode(doc.operations)
        let loaded = try bothLoads(ListDocument(replica: ReplicaID(99)), bytes, oneAtATime: false)
        let sameState = loaded.encodedState() == doc.encodedState()
        #expect(sameState)
        #expect(loaded.operationCount == doc.operationCount)
        #expect(try loaded.itemCount(inSection: 0) == 104_852)
        // The batch really is runs: far fewer operations built than applied.
        let batch = try DecodedBatch.decode(bytes, maxValueSize: loaded.maxValueSize, maxOperations: .max)
        let built = batch.parts.reduce(0) { n, part in
            if case .operations(let ops) = part { return n + ops.count } else { return n }
        }
        #expect(built < 5_000 && batch.insertRuns.count > 4_000 && batch.deleteRuns.count > 4_000)
        let sameOperations = batch.operations == doc.operations
        #expect(sameOperations)
        // The snapshot loads through the same path.
        let snap = try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(98))
        let sameSnapshot = snap.encodedState() == doc.encodedState() && snap.operations == doc.operations
        #expect(sameSnapshot)
        #expect(snap.version == doc.version && snap.frontier == doc.frontier)
        try snap.checkInvariants()
    }

    @Test("seeded concurrent histories (runs, moves, section operations, deletes) in random causal orders load as decode + receive")
    func concurrentHistories() throws {
        for seed in UInt64(1)...40 {
            var rng = SplitMix64(seed: seed &* 7 &+ 1)
            let (ops, base, replicas) = try concurrentHistory(seed: seed)
            // The whole history in each replica's own order, and in random orders with duplicates.
            for r in replicas { try bothLoads(base.fork(as: 9), ListOperation.encode(r.operations)) }
            let fresh = ListDocument(replica: ReplicaID(9))
            try bothLoads(fresh, ListOperation.encode(base.operations + ops))
            let loaded = try bothLoads(base.fork(as: 9), ListOperation.encode(shuffledCausally(ops, &rng)))
            // Into documents that already hold part of it: a replica's own state, and a slice.
            for r in replicas { try bothLoads(r, ListOperation.encode(shuffledCausally(ops, &rng))) }
            let cut = rng.below(ops.count + 1)
            var part = base.fork(as: 9)
            part.receive(Array(ops[..<cut]))
            try bothLoads(part, ListOperation.encode(ops))
            // Received twice: everything is a duplicate.
            try bothLoads(loaded, ListOperation.encode(ops))
            // In slices, one batch after the other.
            var doc = base.fork(as: 9)
            var slow = doc
            let order = shuffledCausally(ops, &rng)
            var start = 0
            while start < order.count {
                let end = min(order.count, start + 1 + rng.below(20))
                let bytes = ListOperation.encode(order[start..<end])
                doc = try bothLoads(doc, bytes, oneAtATime: false)
                slow.receive(try ListOperation.decode(bytes))
                start = end
            }
            let same = Observed(doc) == Observed(slow)
            #expect(same, "seed \(seed)")
        }
    }

    @Test("seeded random-edit histories of 2 to 5 replicas load as decode + receive, whole and per replica")
    func randomEditHistories() throws {
        for seed in 0..<30 as Range<UInt64> {
            let (ops, doc) = OperationCodingTests.randomHistory(seed: seed, replicas: 2 + Int(seed % 4))
            let loaded = try bothLoads(ListDocument(replica: ReplicaID(777)), ListOperation.encode(ops))
            let sameState = loaded.encodedState() == doc.encodedState()
            #expect(sameState, "seed \(seed)")
            // Its own history, loaded as the same replica (operations with the loader's own id).
            try bothLoads(ListDocument(replica: doc.replica), ListOperation.encode(ops))
        }
    }

    @Test("a batch received while operations wait in the buffer takes the general path and matches")
    func nonEmptyBuffer() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let base = author.fork(as: 2)
        let first = try type(&author, "hello", at: 1)
        let second = try type(&author, "world", at: 3)
        let deletes = try backspace(&author, 4, at: 6)
        var waiting = base
        #expect(try waiting.receive(second[2]) == .buffered)
        let loaded = try bothLoads(waiting, ListOperation.encode(first + second + deletes))
        #expect(loaded.pendingCount == 0)
        #expect(loaded.rows == author.rows)
        // A run that waits for an earlier run, then wakes it.
        try bothLoads(base, ListOperation.encode(second + first + deletes))
        try bothLoads(base, ListOperation.encode(deletes + second + first))
    }

    @Test("duplicates and equivocations inside runs are refused or skipped exactly as by decode + receive")
    func duplicatesAndEquivocations() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let base = author.fork(as: 2)
        let typed = try type(&author, "abcdef", at: 1)
        let deletes = try backspace(&author, 4, at: 7)
        var known = base
        known.receive(Array(typed[..<3]))
        // The first half is known: duplicates, then the run goes on.
        try bothLoads(known, ListOperation.encode(typed + deletes))
        // The same ids with other values: equivocations, first inside the run, then at its start.
        func retyped(_ ops: [ListOperation], _ value: String) -> [ListOperation] {
            ops.map { op in
                guard case let .insertItem(s, o, _) = op.kind else { return op }
                return ListOperation(id: op.id, deps: op.deps, kind: .insertItem(section: s, o, value: Data(value)))
            }
        }
        try bothLoads(known, ListOperation.encode(Array(typed[..<3]) + retyped(Array(typed[3...]), "Q")))
        try bothLoads(known, ListOperation.encode(retyped(typed, "R") + deletes))
        // Known deletes with another item: equivocations inside a delete run.
        var deleted = known
        deleted.receive(Array(typed[3...]) + Array(deletes[..<2]))
        try bothLoads(deleted, ListOperation.encode(deletes))
        // The receiver's own operations come back (a replica reloading what it made).
        var own = author
        try bothLoads(own, ListOperation.encode(author.operations))
        own = ListDocument(replica: ReplicaID(1))
        try bothLoads(own, ListOperation.encode(author.operations))
    }

    /// Found by the `ops` fuzz harness (Tests/Fuzz/Crashes/ops/, Docs/Fuzzing.md): a typed run
    /// whose first operations equivocate with known item inserts of another section; the run's
    /// next operation has the id after the insert applied last, and the run path took it as that
    /// insert's continuation, into the known insert's section, where decode + receive refuses it
    /// (its section is unknown).
    @Test("a run continuing, by id only, a known insert of another section matches decode + receive (fuzz regression)")
    func runContinuingAnotherSectionsInsert() throws {
        let r = ReplicaID(96)
        func id(_ c: UInt64) -> OpID { OpID(counter: c, replica: r) }
        func item(_ c: UInt64, in s: UInt64, after: UInt64?, deps: [UInt64]) -> ListOperation {
            ListOperation(id: id(c), deps: Frontier(deps.map(id)),
                          kind: .insertItem(section: SectionID(id(s)), .init(after: after.map { SlotID(id($0)) }, before: nil),
                                            value: Data("v".utf8)))
        }
        let known = [
            ListOperation(id: id(1), deps: Frontier(), kind: .insertSection(.init(after: nil, before: nil), value: Data("s".utf8))),
            item(2, in: 1, after: nil, deps: []),
        ]
        // 1@96 to 3@96: a typed run in "section 2@96" (an item's id), after the known inserts.
        let run = [item(1, in: 2, after: nil, deps: [2]), item(2, in: 2, after: 1, deps: [1]), item(3, in: 2, after: 2, deps: [2])]
        let bytes = ListOperation.encode(known + run)
        try bothLoads(ListDocument(replica: ReplicaID(99)), bytes)
        // The crash input itself.
        let crash: [UInt8] = [
            0x01, 0x02, 0x60, 0x02, 0x0a, 0x61, 0x00, 0x00, 0x00, 0x04, 0x74, 0x6f, 0x64, 0x6f, 0x02, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x59, 0x03, 0x01, 0x00, 0x00, 0x03, 0x04, 0x6d, 0x69, 0x6c,
            0x01, 0x01, 0xce, 0x01, 0x03, 0x61, 0x00, 0x00, 0x00, 0x04, 0x74, 0x6f, 0x64, 0x6f, 0x71, 0x01,
            0x00, 0x04, 0x64, 0x6f, 0x6e, 0x65, 0x72, 0x02, 0x01, 0x00, 0x01, 0x04, 0x6d, 0x69, 0x6c, 0x64,
            0xf4, 0x00, 0x01, 0x00, 0x02, 0x03, 0x58, 0x78, 0x02, 0x06, 0x05, 0x66, 0x69, 0x72, 0x73, 0x74,
        ]
        try bothLoads(ListDocument(replica: ReplicaID(99)), crash)
    }

    @Test("runs that the general path refuses part-way (unknown items, a value over the limit, the limit 0) match")
    func refusedInsideRuns() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let base = author.fork(as: 2)
        let typed = try type(&author, "abcdefgh", at: 1)
        let deletes = try backspace(&author, 8, at: 9)
        // The typed run without its first operation: everything waits; then an item it deletes
        // is unknown.
        try bothLoads(base, ListOperation.encode(Array(typed[1...]) + deletes))
        try bothLoads(base, ListOperation.encode(deletes))
        // A receiver whose value limit is below the run's values.
        var small = ListDocument(replica: ReplicaID(5), maxValueSize: 0)
        small.receive(base.operations)
        try bothLoads(small, ListOperation.encode(typed + deletes))
        var two = ListDocument(replica: ReplicaID(6), maxValueSize: 2)
        var wide = base
        var longValues: [ListOperation] = []
        for k in 0..<6 { longValues.append(try wide.insertItem(at: ip(0, 1 + k), value: Data(String(repeating: "v", count: 1 + k % 3)))) }
        two.receive(base.operations)
        // Values over the limit in a run that is not one byte per value: refused by the decoder.
        refused(two, ListOperation.encode(longValues), nil)
        #expect(throws: WireError.self) { try ListOperation.decode(ListOperation.encode(longValues), maxValueSize: 2) }
        try bothLoads(two, ListOperation.encode(Array(longValues[..<2])))
    }

    @Test("delete runs longer than the load path's chunk (ListDocument.deleteChunk) match, also when a check fails in a later chunk")
    func longDeleteRuns() throws {
        let chunk = ListDocument.deleteChunk
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let base = author.fork(as: 2)
        let n = 2 * chunk + 40
        let typed = try type(&author, String(repeating: "t", count: n + 10), at: 1)
        let back = try backspace(&author, n, at: n + 11)
        let forward = try forwardDelete(&author, 10, at: 1)
        // Backspaces right after typing, three chunks, then forward deletes.
        try bothLoads(base, ListOperation.encode(typed + back + forward))
        // A batch that starts inside the run, continuing the delete applied last.
        var part = base
        part.receive(typed + Array(back[..<(chunk + 30)]))
        try bothLoads(part, ListOperation.encode(Array(back[(chunk + 30)...]) + forward))

        // A crafted forward-delete run whose items go past the typed ones (into the deletes' own
        // ids, which are no items) inside its second chunk: the checks stop it there and the
        // general path refuses the rest.
        var crafter = try ListDocument.make(1, sections: [["a", "z"]])
        let craftBase = crafter.fork(as: 2)
        let typed2 = try type(&crafter, String(repeating: "u", count: chunk + 30), at: 1)
        let crafted = forwardDeletes(from: typed2, count: chunk + 60)
        let bytes = ListOperation.encode(typed2 + crafted)
        let batch = try DecodedBatch.decode(bytes, maxValueSize: craftBase.maxValueSize, maxOperations: .max)
        #expect(batch.deleteRuns.map(\.count) == [chunk + 60])
        let loaded = try bothLoads(craftBase, bytes)
        #expect(try loaded.itemCount(inSection: 0) == 2)
    }

    @Test("into an empty document, the slots of items that die in delete runs are hidden at the batch's end or before the general path, and match")
    func deathsHiddenTogether() throws {
        // Deletes only (backspaces, forward deletes, across both sections): hidden at the end.
        var author = try ListDocument.make(1, sections: [["a", "z"], ["b", "c", "d"]])
        _ = try type(&author, "hello world, this is typed", at: 1)
        _ = try backspace(&author, 6, at: 20)
        _ = try forwardDelete(&author, 4, at: 2)
        _ = try backspace(&author, 2, at: 3, section: 1)
        let empty = ListDocument(replica: ReplicaID(5))
        var loaded = try bothLoads(empty, ListOperation.encode(author.operations))
        try loaded.checkInvariants()
        #expect(loaded.rows == author.rows)
        // Then operations that take the general path (a move, a value write, a section delete):
        // the slots gathered before them are hidden first, the rest at once.
        _ = try author.moveItem(from: ip(0, 3), to: ip(1, 0))
        _ = try backspace(&author, 3, at: 8)
        _ = try author.setValue(Data("v".utf8), forItem: author.itemID(at: ip(0, 1)))
        _ = try forwardDelete(&author, 2, at: 0, section: 1)
        _ = try author.deleteSection(at: 1)
        _ = try type(&author, "more", at: 2)
        _ = try backspace(&author, 3, at: 6)
        loaded = try bothLoads(empty, ListOperation.encode(author.operations))
        try loaded.checkInvariants()
        #expect(loaded.rows == author.rows)
        // A section deleted while another replica typed into it, which then deletes what it typed
        // (a delete run): the section hides only at the end, when the gathered slots are hidden.
        let base = try ListDocument.make(1, sections: [["a"], ["x"]])
        var deleter = base.fork(as: 2), typist = base.fork(as: 3)
        _ = try deleter.deleteSection(at: 1)
        _ = try type(&typist, "gone", at: 1, section: 1)
        _ = try backspace(&typist, 4, at: 5, section: 1)
        var merged = deleter
        merged.receive(typist.operations)
        loaded = try bothLoads(empty, ListOperation.encode(merged.operations))
        try loaded.checkInvariants()
        #expect(loaded.sectionCount == 1 && merged.sectionCount == 1)
        try bothLoads(base.fork(as: 4), ListOperation.encode(merged.operations))
        // Few deaths among many slots: hidden one by one at the end, not by a rebuild.
        var long = try ListDocument.make(1, sections: [["a", "z"]])
        let n = 4 * ListDocument.slotsPerRebuild
        _ = try type(&long, String(repeating: "y", count: n), at: 1)
        _ = try backspace(&long, 2, at: n / 2)
        _ = try forwardDelete(&long, 1, at: 3)
        #expect(2 * ListDocument.slotsPerRebuild < long.slots.count)
        loaded = try bothLoads(empty, ListOperation.encode(long.operations))
        try loaded.checkInvariants()
        #expect(loaded.rows == long.rows)
    }

    @Test("the decoded form expands to exactly the decoder's operations, with the same errors, for random batches")
    func decodedFormMatchesDecoder() throws {
        var rng = SplitMix64(seed: 41)
        for round in 0..<1_500 {
            let ops = OperationCodingTests.randomOperations(&rng, count: 1 + rng.below(40))
            var bytes = ListOperation.encode(ops)
            if round % 2 == 1 {
                // Corrupt it: flip, insert or remove bytes.
                for _ in 0..<(1 + rng.below(3)) {
                    switch rng.below(3) {
                    case 0: bytes[rng.below(bytes.count)] ^= UInt8(truncatingIfNeeded: 1 + rng.below(255))
                    case 1: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(bytes.count + 1))
                    default: if bytes.count > 1 { bytes.remove(at: rng.below(bytes.count)) }
                    }
                }
            }
            let limit = rng.chance(10) ? rng.below(ops.count + 1) : ListOperation.defaultMaxBatchOperations
            let expected = Result(catching: { () throws(WireError) -> [ListOperation] in
                try ListOperation.decode(bytes, maxValueSize: 3, maxOperations: limit)
            })
            let got = Result(catching: { () throws(WireError) -> [ListOperation] in
                try DecodedBatch.decode(bytes, maxValueSize: 3, maxOperations: limit).operations
            })
            let same = got == expected
            #expect(same, "round \(round)")
            if round % 10 == 0 {
                // Arbitrary operations into a document: almost all refused, the same way.
                let doc = try ListDocument.make(1, sections: [["a"]])
                try bothLoads(doc, bytes, maxOperations: limit)
            }
        }
    }

    // MARK: Malformed input

    /// A small batch with every kind of record the load path treats apart: a section insert, a
    /// one-byte insert run, an insert run of longer values, a single insert (a run of one), a
    /// delete run each way, a move and a delete of the moved item (which saw its move slot: an
    /// operation of its own).
    func smallBatch() throws -> (base: ListDocument, bytes: [UInt8]) {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let base = author.fork(as: 2)
        var ops = try type(&author, "hey", at: 1)
        ops.append(try author.insertItem(at: ip(0, 0), value: Data("long")))
        ops.append(try author.insertItem(at: ip(0, 1), value: Data("er")))
        ops += try backspace(&author, 2, at: 6)      // "y", "e"
        ops += try forwardDelete(&author, 2, at: 0)  // "long", "er"
        ops.append(try author.insertItem(at: ip(0, 0), value: Data("one")))
        ops.append(try #require(try author.moveItem(from: ip(0, 0), to: ip(0, 2))))
        ops.append(try author.deleteItem(at: ip(0, 2)))
        ops.append(try author.insertSection(at: 1, value: Data("S")))
        let bytes = ListOperation.encode(ops)
        let batch = try DecodedBatch.decode(bytes, maxValueSize: 100, maxOperations: 100)
        #expect(batch.insertRuns.count == 3 && batch.deleteRuns.count == 2)
        #expect(batch.parts.count == 6)   // 3 insert runs, 2 delete runs, [move, delete, insertSection]
        #expect(batch.insertRuns.contains { $0.oneByte } && batch.insertRuns.contains { !$0.oneByte })
        #expect(batch.deleteRuns.contains { $0.descending } && batch.deleteRuns.contains { !$0.descending })
        return (base, bytes)
    }

    @Test("a batch truncated at every byte is refused with the decoder's error, and the document is unchanged")
    func truncatedEverywhere() throws {
        let (base, bytes) = try smallBatch()
        try bothLoads(base, bytes)
        for end in 0..<bytes.count {
            let prefix = Array(bytes[..<end])
            let expected: WireError
            do {
                _ = try ListOperation.decode(prefix)
                Issue.record("prefix \(end) decodes")
                continue
            } catch { expected = error }
            switch expected {
            case .truncated, .countTooLarge: break
            default: Issue.record("prefix \(end): \(expected)")
            }
            refused(base, prefix, expected, maxOperations: ListOperation.defaultMaxBatchOperations)
        }
        // And trailing bytes.
        refused(base, bytes + [0], .trailingBytes(1))
    }

    @Test("bad tags are refused with the decoder's error, and the document is unchanged")
    func badTags() throws {
        let (base, bytes) = try smallBatch()
        // The first record starts at byte 4 (version, 1 replica, its id, the count).
        #expect(bytes[0] == 1 && bytes[1] == 1 && bytes[2] == 1)
        let first = 4
        for kind: UInt8 in [0, 12, 13, 14, 15] {
            var b = bytes
            b[first] = (b[first] & 0xf0) | kind
            refused(base, b, .invalidTag(b[first], offset: first))
        }
        // A move run (kind 11) in a version-1 batch.
        var b = bytes
        b[first] = (b[first] & 0xf0) | 11
        refused(base, b, .invalidTag(b[first], offset: first))
        // The variant bit on an insert (kind 2); same-replica on the first record.
        b = bytes
        b[first] = 0x82
        refused(base, b, .invalidTag(0x82, offset: first))
        b = bytes
        b[first] |= RecordFlag.sameReplica
        refused(base, b, .invalidTag(b[first], offset: first))
        // An unsupported version.
        b = bytes
        b[0] = 9
        refused(base, b, .unsupportedVersion(9))
    }

    @Test("bad counts are refused with the decoder's error, and the document is unchanged")
    func badCounts() throws {
        let doc = try ListDocument.make(1, sections: [["a", "z"]])
        // Replica 5 makes runs in section 1@1: the replica table is [5, 1]; the first record is
        // an insert run (kind 9 | next counter | deps previous | one-byte values: 0xE9) by replica
        // index 0 (id 1@5, no deps), in section 1@1 (code 5: replica index 1, not below the
        // operation's counter; distance 0), origins nil and nil, then the count (byte 11).
        func run(_ count: UInt8, total: UInt8 = 2, values: [UInt8] = [0x61, 0x62]) -> [UInt8] {
            [1, 2, 5, 1, total, 0xE9, 0x00, 0x05, 0x00, 0x00, 0x00, count] + values
        }
        refused(doc, run(1, total: 1, values: [0x61]), .invalidValue("a run of 1 operations", offset: 11))
        refused(doc, run(3, values: [0x61, 0x62, 0x63]), .countTooLarge(3, offset: 11))
        refused(doc, run(2, values: [0x61]), .countTooLarge(2, offset: 11))
        // A delete run (kind 10 | next counter | deps previous: 0x6A) of item 2@1 (code 5,
        // distance 1) of 0 operations, and of more than the header has left (count at byte 9).
        let del: [UInt8] = [1, 2, 5, 1, 3, 0x6A, 0x00, 0x05, 0x01]
        refused(doc, del + [0], .invalidValue("a run of 0 operations", offset: 9))
        refused(doc, del + [4], .countTooLarge(4, offset: 9))
        try bothLoads(doc, [1, 2, 5, 1, 2, 0x6A, 0x00, 0x05, 0x01, 2])
        // The operation count over the caller's limit.
        let (base, bytes) = try smallBatch()
        #expect(bytes[3] == 13)
        refused(base, bytes, .countTooLarge(13, offset: 3), maxOperations: 12)
        // A replica count larger than the bytes left.
        refused(base, [1, 200, 1, 2], .countTooLarge(200, offset: 1))
        // A well-formed run loads.
        try bothLoads(doc, run(2))
    }

    @Test("2,000 corrupted batches never crash, and refuse or apply exactly as decode + receive")
    func corruptedBatches() throws {
        let (base, bytes) = try smallBatch()
        var rng = SplitMix64(seed: 5)
        for round in 0..<2_000 {
            var b = bytes
            for _ in 0..<(1 + rng.below(3)) {
                switch rng.below(3) {
                case 0: b[rng.below(b.count)] = UInt8(truncatingIfNeeded: rng.next())
                case 1: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(b.count + 1))
                default: if b.count > 1 { b.remove(at: rng.below(b.count)) }
                }
            }
            try bothLoads(base, b, maxOperations: ListOperation.defaultMaxBatchOperations, oneAtATime: round % 5 == 0)
        }
    }

    @Test("a snapshot whose operations are out of causal order is still refused as inconsistent")
    func inconsistentSnapshot() throws {
        var author = try ListDocument.make(1, sections: [["a", "z"]])
        let first = try type(&author, "abc", at: 1)
        let second = try type(&author, "def", at: 4)
        // The snapshot's batch with the two runs swapped: the second run's first operation is
        // not applied at once.
        var good = author.encodedSnapshot(format: .history)
        let batch = ListOperation.encode(author.operations)
        let swapped = ListOperation.encode(Array(author.operations.dropLast(6)) + second + first)
        #expect(Array(good.suffix(batch.count)) == batch)
        good.removeLast(batch.count)
        #expect(throws: WireError.self) { try ListDocument(snapshot: good + swapped, replica: ReplicaID(3)) }
        do {
            _ = try ListDocument(snapshot: good + swapped, replica: ReplicaID(3))
        } catch {
            guard case .inconsistentSnapshot(let why) = error else { Issue.record("\(error)"); return }
            #expect(why.contains("was not applied in order: 0 applied, 1 buffered"), "\(why)")
        }
        let loaded = try ListDocument(snapshot: good + batch, replica: ReplicaID(3))
        #expect(loaded.encodedState() == author.encodedState())
    }
}

/// A crafted forward-delete run after `typed`: `count` deletes, each of the item with the next id
/// from `typed`'s first on (past the typed ones when `count` exceeds them, into ids that are no
/// items), each depending on the one before.
func forwardDeletes(from typed: [ListOperation], count: Int) -> [ListOperation] {
    var crafted: [ListOperation] = []
    var previous = typed.last!.id
    for j in 0..<count {
        let item = typed[0].id.advanced(by: j)
        crafted.append(ListOperation(id: previous.advanced(by: 1), deps: Frontier([previous]),
                                     kind: .deleteItem(ItemID(item), seen: SlotID(item))))
        previous = crafted.last!.id
    }
    return crafted
}
