import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The local routes of Document/FastPaths/README.md: typing (`continueTyping`) and delete runs
/// (`continueDeleting`), each compared with the general path (`fastPaths = false`).
@Suite("Local runs (typing, delete runs) against the general path") struct LocalRunTests {
    /// The typing path of `ListDocument.insertItem(at:value:)` (an insert right after this replica's
    /// previous insert, with nothing in between, extends that insert's slot run, tree entry and log
    /// record without a search; `FastPaths/ListDocument+LocalRuns.swift`) must make exactly the operation, and
    /// reach exactly the state, that the general path makes.
    @Suite(.cpuHeavy) struct Typing: ScenarioSupport {
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

    /// The delete-run path of `ListDocument.deleteItem(at:)` (an item delete right after this
    /// replica's previous item delete in the same section, with nothing in between, skips the general
    /// operation machinery; `FastPaths/ListDocument+LocalRuns.swift`) must make exactly the operation, and reach
    /// exactly the state, that the general path makes.
    @Suite(.cpuHeavy) struct Deleting: ScenarioSupport {
        /// A document with one section of `n` typed items (one typed run) and one more section.
        func typed(_ n: Int) throws -> ListDocument {
            var doc = try ListDocument.make(1, sections: [["x", "y"], ["z"]])
            for k in 0..<n { try doc.insertItem(at: ip(0, 1 + k), value: Data([UInt8(k % 251)])) }
            return doc
        }

        @Test("a backspace run makes the same operations, log and state as the general path, and takes the short path")
        func backspaceRunMatchesGeneralPath() throws {
            var fast = try typed(20)
            var general = fast
            general.fastPaths = false
            for k in 0..<20 {
                _ = try same(&fast, &general, "backspace \(k)") { try $0.deleteItem(at: ip(0, 20 - k)) }
                // The first delete takes the general path and starts the run; every later one continues it.
                #expect(fast.localDeleteRun?.id == fast.operations.last?.id)
            }
            #expect(fast.operations == general.operations)
            #expect(fast.frontier == general.frontier && fast.version == general.version)
            #expect(fast.rows == [["x", "y"], ["z"]])
            // One log record holds the whole run of deletes, as on the general path.
            #expect(fast.log.records.count == general.log.records.count)
            try valid(fast, general)
        }

        @Test("a forward-delete run across tree entries matches the general path")
        func forwardRunAcrossEntries() throws {
            let n = 2 * SlotForest.maxEntryLength + 7
            var fast = try typed(n)
            var general = fast
            general.fastPaths = false
            for k in 0..<n {
                _ = try same(&fast, &general, "delete \(k)") { try $0.deleteItem(at: ip(0, 1)) }
            }
            #expect(fast.operations == general.operations)
            #expect(fast.rows == [["x", "y"], ["z"]])
            try valid(fast, general)
        }

        @Test("deletes anywhere in the section continue the run; a bad row throws the same error and changes nothing")
        func scatteredDeletesAndBadRows() throws {
            var fast = try typed(40)
            var general = fast
            general.fastPaths = false
            var rng = SplitMix64(seed: 7)
            for k in 0..<30 {
                let n = try fast.itemCount(inSection: 0)
                let row = Int(rng.next() % UInt64(n))
                _ = try same(&fast, &general, "delete \(k) at \(row)") { try $0.deleteItem(at: ip(0, row)) }
                if k % 7 == 3 {
                    // Out of range, negative, and a bad index path, in the middle of the run.
                    let before = fast.encodedState(), operations = fast.operationCount
                    for bad in [ip(0, n - 1), ip(0, -1), IndexPath(index: 0), ip(5, 0)] {
                        var errors: [String] = []
                        for doc in [fast, general] {
                            var d = doc
                            do { try d.deleteItem(at: bad); errors.append("no error") } catch { errors.append("\(error)") }
                        }
                        #expect(errors[0] == errors[1] && errors[0] != "no error", "\(bad): \(errors)")
                        do { try fast.deleteItem(at: bad) } catch {}
                    }
                    #expect(fast.encodedState() == before && fast.operationCount == operations)
                    // The run goes on after the errors.
                    _ = try same(&fast, &general, "after errors") { try $0.deleteItem(at: ip(0, 0)) }
                    #expect(fast.localDeleteRun?.id == fast.operations.last?.id)
                }
            }
            #expect(fast.operations == general.operations)
            try valid(fast, general)
        }

        @Test("anything between two deletes ends the run: a remote operation, an insert, a move, a value, another section")
        func interruptionsEndTheRun() throws {
            var fast = try typed(12)
            var general = fast
            general.fastPaths = false
            var peer = fast.fork(as: 2)
            _ = try same(&fast, &general, "d1") { try $0.deleteItem(at: ip(0, 3)) }
            let remote = try peer.deleteItem(at: ip(0, 2))
            try fast.receive(remote)
            try general.receive(remote)
            _ = try same(&fast, &general, "after remote") { try $0.deleteItem(at: ip(0, 2)) }
            _ = try same(&fast, &general, "insert") { try $0.insertItem(at: ip(0, 1), value: Data("i".utf8)) }
            _ = try same(&fast, &general, "after insert") { try $0.deleteItem(at: ip(0, 1)) }
            _ = try same(&fast, &general, "move") { try $0.moveItem(from: ip(0, 0), to: ip(0, 3)) }
            _ = try same(&fast, &general, "after move") { try $0.deleteItem(at: ip(0, 3)) }
            _ = try same(&fast, &general, "value") { doc in try doc.setValue(Data("v".utf8), forItem: doc.itemID(at: self.ip(0, 0))) }
            _ = try same(&fast, &general, "after value") { try $0.deleteItem(at: ip(0, 0)) }
            _ = try same(&fast, &general, "other section") { try $0.deleteItem(at: ip(1, 0)) }
            _ = try same(&fast, &general, "back") { try $0.deleteItem(at: ip(0, 0)) }
            _ = try same(&fast, &general, "by id") { doc in try doc.deleteItem(doc.itemID(at: self.ip(0, 0))) }
            _ = try same(&fast, &general, "after by id") { try $0.deleteItem(at: ip(0, 0)) }
            _ = try same(&fast, &general, "section insert") { try $0.insertSection(at: 0) }
            _ = try same(&fast, &general, "after section insert") { try $0.deleteItem(at: ip(1, 0)) }
            #expect(fast.operations == general.operations)
            try valid(fast, general)
            var other = fast.fork(as: 3)
            other.receive(fast.operations)
            expectConverged([fast, other])
        }

        /// SEMANTICS §3.5: a section deleted by a peer stays visible while it holds items the peer
        /// had not seen; deleting the last of them on the delete-run path hides it, as on the general path.
        @Test("deleting the last unseen items of a concurrently deleted section hides it on both paths")
        func runHidesADeletedSection() throws {
            var fast = try ListDocument.make(1, sections: [["a", "b"], ["c"]])
            var peer = fast.fork(as: 2)
            for (k, v) in ["x", "y", "z"].enumerated() { try fast.insertItem(at: ip(0, 2 + k), value: Data(v.utf8)) }
            try fast.receive(try peer.deleteSection(at: 0))
            var general = fast
            general.fastPaths = false
            #expect(fast.rows == [["x", "y", "z"], ["c"]])
            for k in 0..<3 {
                _ = try same(&fast, &general, "delete \(k)") { try $0.deleteItem(at: ip(0, 0)) }
            }
            #expect(fast.rows == [["c"]] && general.rows == [["c"]])
            // Section index 0 now names the other section: the run must not go on in the hidden one.
            _ = try same(&fast, &general, "after the section hid") { try $0.deleteItem(at: ip(0, 0)) }
            #expect(fast.rows == [[]] && general.rows == [[]])
            #expect(fast.operations == general.operations)
            try valid(fast, general)
        }

        @Test("seeded delete-heavy sessions (backspace and forward runs, jumps, typing, remote edits) match the general path")
        func seededSessionsMatch() throws {
            for seed in UInt64(1)...10 {
                var rng = SplitMix64(seed: seed &* 7_919)
                var fast = try typed(60)
                var general = fast
                general.fastPaths = false
                var peer = fast.fork(as: 2)
                var cursor = (section: 0, row: 30)
                var deletes = 0
                for step in 0..<300 {
                    let roll = rng.next() % 100
                    let n = try fast.itemCount(inSection: cursor.section)
                    cursor.row = min(cursor.row, n)
                    if roll < 35, cursor.row > 0 {
                        _ = try same(&fast, &general, "seed \(seed) step \(step) backspace") {
                            try $0.deleteItem(at: self.ip(cursor.section, cursor.row - 1))
                        }
                        cursor.row -= 1
                        deletes += 1
                    } else if roll < 60, cursor.row < n {
                        _ = try same(&fast, &general, "seed \(seed) step \(step) forward delete") {
                            try $0.deleteItem(at: self.ip(cursor.section, cursor.row))
                        }
                        deletes += 1
                    } else if roll < 80 {
                        _ = try same(&fast, &general, "seed \(seed) step \(step) type") {
                            try $0.insertItem(at: self.ip(cursor.section, cursor.row), value: Data([UInt8(97 + step % 26)]))
                        }
                        cursor.row += 1
                    } else if roll < 90 {
                        let s = Int(rng.next() % UInt64(fast.sectionCount))
                        cursor = (s, Int(rng.next() % UInt64(try fast.itemCount(inSection: s) + 1)))
                    } else {
                        let s = Int(rng.next() % UInt64(peer.sectionCount))
                        let m = try peer.itemCount(inSection: s)
                        let op = m > 0 && roll % 2 == 0
                            ? try peer.deleteItem(at: ip(s, Int(rng.next() % UInt64(m))))
                            : try peer.insertItem(at: ip(s, Int(rng.next() % UInt64(m + 1))), value: Data("p".utf8))
                        try receiveOnBoth(op, &fast, &general, "seed \(seed) step \(step)")
                    }
                    if step % 40 == 39 { peer.receive(fast.operations) }
                }
                #expect(deletes > 60)
                try expectSameEnd(&fast, general, peer: &peer, "seed \(seed)")
            }
        }
    }
}
