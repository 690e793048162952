import Foundation
import Testing
import ListSyncTestTraits
@testable import ListCRDT
import ListSyncSimulation

/// The history read from the log a step at a time (``ListDocument/appendOperations(since:from:before:limit:into:)``)
/// and encoded straight from it (``ListDocument/encodedOperations(since:)``): the same operations
/// and the same bytes as the whole `[ListOperation]` gives.
@Suite struct HistoryStreamingTests {
    /// Three replicas that edit (every kind of edit, typed runs of inserts, backspaces, forward
    /// deletes and moves) and exchange their operations in rounds; the versions of replica 0
    /// after each round (from nothing on) are in `versions`.
    static func histories(seed: UInt64, rounds: Int = 4) throws -> (docs: [ListDocument], versions: [VersionVector]) {
        var rng = SplitMix64(seed: seed)
        var docs = (1...3).map { ListDocument(replica: ReplicaID(UInt64($0))) }
        var versions = [VersionVector()]
        var n = 0
        for round in 0..<rounds {
            for r in docs.indices {
                for _ in 0..<(4 + rng.below(12)) {
                    let edit = RandomEdit.random(for: docs[r], using: &rng) { n += 1; return "v\(n)" }
                    _ = try? edit.apply(to: &docs[r])
                }
                try typing(&docs[r], rng: &rng, round: round)
            }
            for r in docs.indices {
                for o in docs.indices where o != r {
                    #expect(docs[o].receive(docs[r].operations(since: docs[o].version)).refused.isEmpty)
                }
            }
            versions.append(docs[0].version)
        }
        return (docs, versions)
    }

    /// Runs of edits the log and the batch format keep as runs: typing, backspace, forward
    /// delete, one item moved down step by step.
    static func typing(_ doc: inout ListDocument, rng: inout SplitMix64, round: Int) throws {
        if doc.sectionCount == 0 { try doc.insertSection(at: 0, value: Data("s")) }
        let s = rng.below(doc.sectionCount)
        var at = rng.below(try doc.itemCount(inSection: s) + 1)
        for k in 0..<(20 + rng.below(40)) {
            _ = try doc.insertItem(at: IndexPath(item: at, section: s), value: Data(k % 3 == 0 ? "ab" : "c"))
            at += 1
        }
        for _ in 0..<rng.below(8) where at > 0 {   // backspace
            at -= 1
            _ = try doc.deleteItem(at: IndexPath(item: at, section: s))
        }
        var forward = rng.below(8)
        while forward > 0, at < (try doc.itemCount(inSection: s)) {   // forward delete
            _ = try doc.deleteItem(at: IndexPath(item: at, section: s))
            forward -= 1
        }
        let count = try doc.itemCount(inSection: s)
        if count > 4 {
            for k in 0..<min(count - 1, 3 + round) {
                _ = try doc.moveItem(from: IndexPath(item: k, section: s), to: IndexPath(item: k + 1, section: s))
            }
        }
    }

    @Test("read in steps of any limit, the operations a version lacks are operations(since:before:), in order; the count agrees",
          arguments: [1, 2, 3, 5, 13, 64, 1000])
    func steppedReads(limit: Int) throws {
        let (docs, versions) = try Self.histories(seed: 7)
        let doc = docs[0]
        for version in versions + [docs[1].version, docs[2].version] {
            for end in [0, 1, doc.operationCount / 3, doc.operationCount / 2 + 1, doc.operationCount] {
                let whole = doc.operations(since: version, before: end)
                var stepped: [ListOperation] = []
                var at = 0, calls = 0
                while at < end {
                    let before = stepped.count
                    let next = doc.appendOperations(since: version, from: at, before: end, limit: limit, into: &stepped)
                    #expect(stepped.count - before <= limit)
                    #expect(next > at && next <= end, "from \(at) the next position is \(next), end \(end)")
                    at = next
                    calls += 1
                }
                #expect(stepped == whole, "limit \(limit), end \(end), \(calls) calls")
                #expect(doc.countOperations(since: version, before: end) == whole.count)
            }
        }
        #expect(doc.operations(since: VersionVector()) == doc.operations)
    }

    @Test("encodedOperations(since:) is ListOperation.encode(operations(since:)) byte for byte, whatever the window",
          .cpuHeavy, arguments: [1, 2, 3, 7, 64, ListDocument.encodingWindow])
    func encodedFromTheLog(window: Int) throws {
        for seed in [1, 2, 3] as [UInt64] {
            let (docs, versions) = try Self.histories(seed: seed)
            for doc in docs {
                for version in versions + [doc.version] {
                    var w = WireWriter()
                    doc.appendEncodedOperations(since: version, to: &w, window: window)
                    #expect(w.bytes == ListOperation.encode(doc.operations(since: version)), "seed \(seed), window \(window)")
                }
                if window == ListDocument.encodingWindow {
                    #expect(doc.encodedHistory() == ListOperation.encode(doc.operations))
                    #expect(doc.encodedOperations(since: versions[2]) == ListOperation.encode(doc.operations(since: versions[2])))
                }
            }
        }
    }

    @Test("a compacted document, an empty one and a history of one long typed run encode from the log as from the array")
    func encodedEdgeCases() throws {
        var (docs, _) = try Self.histories(seed: 11, rounds: 2)
        let stable = docs[0].version
        for r in docs.indices { try docs[r].compact(stable: stable) }
        var rng = SplitMix64(seed: 5)
        try Self.typing(&docs[0], rng: &rng, round: 9)
        #expect(docs[1].receive(docs[0].operations(since: docs[1].version)).refused.isEmpty)
        for doc in docs.prefix(2) {
            #expect(doc.encodedHistory() == ListOperation.encode(doc.operations))
            #expect(doc.encodedOperations(since: stable) == ListOperation.encode(doc.operations(since: stable)))
            #expect(try ListDocument(snapshot: doc.encodedSnapshot(), replica: ReplicaID(9)).encodedState() == doc.encodedState())
        }
        let empty = ListDocument(replica: ReplicaID(4))
        #expect(empty.encodedHistory() == ListOperation.encode([ListOperation]()))
        var typed = ListDocument(replica: ReplicaID(4))
        try typed.insertSection(at: 0, value: Data("s"))
        for i in 0..<10_000 { try typed.insertItem(at: IndexPath(item: i, section: 0), value: Data("x")) }
        #expect(typed.encodedHistory() == ListOperation.encode(typed.operations), "a run longer than two windows")
        #expect(try ListDocument(snapshot: typed.encodedSnapshot(format: .history), replica: ReplicaID(9)).encodedState()
                == typed.encodedState())
    }
}
