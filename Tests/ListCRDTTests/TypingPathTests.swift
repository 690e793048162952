import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// The typing path of `ListDocument.insertItem(at:value:)` (an insert right after this replica's
/// previous insert, with nothing in between, extends that insert's slot run, tree entry and log
/// record without a search; `ListDocument+Typing.swift`) must make exactly the operation, and
/// reach exactly the state, that the general path makes.
@Suite struct TypingPathTests: ScenarioSupport {
    @Test("typing a run makes the same operations, log and state as the general path, and takes the short path")
    func typedRunMatchesGeneralPath() throws {
        var fast = try ListDocument.make(1, sections: [["x", "y"], ["z"]])
        var general = fast
        general.fastPaths = false
        for (k, c) in "hello world".enumerated() {
            _ = try same(&fast, &general, "char \(k)") { try $0.insertItem(at: ip(0, 1 + k), value: Data(String(c))) }
            // The short path keeps the run current.
            #expect(fast.localInsertRun?.row == 1 + k && fast.localInsertRun?.id == fast.operations.last?.id)
        }
        #expect(fast.operations == general.operations)
        #expect(fast.frontier == general.frontier && fast.version == general.version)
        #expect(fast.snapshot().sections[0].items.map(\.value.string) == ["x"] + "hello world".map(String.init) + ["y"])
        try valid(fast, general)
    }

    /// A tree entry holds at most `SlotForest.maxEntryLength` slots: the insert that would make
    /// it longer goes through the general path, which starts a new entry (and a new typed run).
    @Test("a typed run longer than a tree entry holds matches the general path across the entry boundary")
    func typedRunPastTheEntryLimit() throws {
        var fast = try ListDocument.make(1, sections: [["x", "y"]])
        var general = fast
        general.fastPaths = false
        let n = 3 * SlotForest.maxEntryLength + 5
        for k in 0..<n {
            _ = try same(&fast, &general, "char \(k)") { try $0.insertItem(at: ip(0, 1 + k), value: Data([UInt8(k % 251)])) }
        }
        #expect(fast.operations == general.operations)
        #expect(fast.snapshot().sections[0].items.count == n + 2)
        try valid(fast, general)
    }

    @Test("anything between two inserts ends the typed run: a remote operation, a delete, a move, another row or section")
    func interruptionsEndTheRun() throws {
        var fast = try ListDocument.make(1, sections: [["a", "b", "c"], ["d"]])
        var general = fast
        general.fastPaths = false
        var peer = fast.fork(as: 2)
        _ = try same(&fast, &general, "t1") { try $0.insertItem(at: ip(0, 1), value: Data("1".utf8)) }
        // A remote insert right where the next character goes.
        let remote = try peer.insertItem(at: ip(0, 1), value: Data("r".utf8))
        try fast.receive(remote)
        try general.receive(remote)
        _ = try same(&fast, &general, "after remote") { try $0.insertItem(at: ip(0, 2), value: Data("2".utf8)) }
        _ = try same(&fast, &general, "delete") { try $0.deleteItem(at: ip(0, 0)) }
        _ = try same(&fast, &general, "after delete") { try $0.insertItem(at: ip(0, 2), value: Data("3".utf8)) }
        _ = try same(&fast, &general, "move") { try $0.moveItem(from: ip(0, 0), to: ip(1, 0)) }
        _ = try same(&fast, &general, "after move") { try $0.insertItem(at: ip(0, 2), value: Data("4".utf8)) }
        _ = try same(&fast, &general, "other section") { try $0.insertItem(at: ip(1, 0), value: Data("5".utf8)) }
        _ = try same(&fast, &general, "back") { try $0.insertItem(at: ip(0, 3), value: Data("6".utf8)) }
        _ = try same(&fast, &general, "same row again") { try $0.insertItem(at: ip(0, 3), value: Data("7".utf8)) }
        _ = try same(&fast, &general, "value") { doc in try doc.setValue(Data("v".utf8), forItem: doc.itemID(at: self.ip(0, 3))) }
        _ = try same(&fast, &general, "after value") { try $0.insertItem(at: ip(0, 4), value: Data("8".utf8)) }
        _ = try same(&fast, &general, "section insert") { try $0.insertSection(at: 0) }
        _ = try same(&fast, &general, "after section insert") { try $0.insertItem(at: ip(1, 5), value: Data("9".utf8)) }
        #expect(fast.operations == general.operations)
        try valid(fast, general)
        // And a peer that gets the fast replica's operations agrees.
        var other = fast.fork(as: 3)
        other.receive(fast.operations)
        expectConverged([fast, other])
    }

    @Test("seeded editing sessions with typing bursts, jumps, deletes, moves and remote operations match the general path")
    func seededSessionsMatch() throws {
        for seed in UInt64(1)...12 {
            var rng = SplitMix64(seed: seed &* 104_729)
            var fast = try ListDocument.make(1, sections: [["a", "b"], ["c"], []])
            var general = fast
            general.fastPaths = false
            var peer = fast.fork(as: 2)
            var cursor = (section: 0, row: 0)
            var typed = 0
            for step in 0..<400 {
                let roll = rng.next() % 100
                let sections = fast.sectionCount
                if roll < 60 {
                    // Type at the cursor, which then moves right: the short path's case.
                    let n = try fast.itemCount(inSection: cursor.section)
                    let row = min(cursor.row, n)
                    _ = try same(&fast, &general, "seed \(seed) step \(step) type") {
                        try $0.insertItem(at: self.ip(cursor.section, row), value: Data([UInt8(97 + step % 26)]))
                    }
                    cursor.row = row + 1
                    typed += 1
                } else if roll < 70 {
                    // Jump elsewhere.
                    let s = Int(rng.next() % UInt64(sections))
                    cursor = (s, Int(rng.next() % UInt64(try fast.itemCount(inSection: s) + 1)))
                } else if roll < 80 {
                    // Backspace.
                    if cursor.row > 0, cursor.row <= (try fast.itemCount(inSection: cursor.section)) {
                        _ = try same(&fast, &general, "seed \(seed) step \(step) backspace") {
                            try $0.deleteItem(at: self.ip(cursor.section, cursor.row - 1))
                        }
                        cursor.row -= 1
                    }
                } else if roll < 87 {
                    let s = Int(rng.next() % UInt64(sections))
                    let n = try fast.itemCount(inSection: s)
                    if n > 0 {
                        let to = Int(rng.next() % UInt64(sections))
                        let limit = try fast.itemCount(inSection: to) - (to == s ? 1 : 0)
                        let from = ip(s, Int(rng.next() % UInt64(n))), dest = ip(to, Int(rng.next() % UInt64(limit + 1)))
                        _ = try same(&fast, &general, "seed \(seed) step \(step) move") {
                            try $0.moveItem(from: from, to: dest)
                        }
                    }
                } else {
                    // The peer edits, and its operation arrives (sometimes twice).
                    let s = Int(rng.next() % UInt64(peer.sectionCount))
                    let n = try peer.itemCount(inSection: s)
                    let op = try peer.insertItem(at: ip(s, Int(rng.next() % UInt64(n + 1))), value: Data("p".utf8))
                    try receiveOnBoth(op, &fast, &general, "seed \(seed) step \(step)", times: roll % 2 == 0 ? 2 : 1)
                }
                // The peer hears of our edits now and then.
                if step % 50 == 49 { peer.receive(fast.operations) }
            }
            #expect(typed > 150)
            try expectSameEnd(&fast, general, peer: &peer, "seed \(seed)")
        }
    }
}
