import Foundation
import Testing
import Observation
@testable import ListCRDT
import ListTable

/// `ListModel` as an observable: one observation per change of what it shows, none for what
/// changes nothing; identities kept across changes; values decoded once; undecodable values left
/// out and reported; `followChanges()` catching up with the `LiveDocument`'s stream.
@Suite("ListModel: observation, identity, decoding, the change stream")
@MainActor
struct ListModelObservationTests {
    typealias F = ListModelFixtures

    @Test("observation fires once per change: local edits, remote operations, refreshes")
    func oncePerChange() throws {
        let model = try F.model(counts: [4, 2])
        var remote = F.fork(model, as: 2)
        let counter = ObservationCounter { _ = model.sections }
        let a = model.sections[0].id, b = model.sections[1].id
        var expected = 0

        func change(_ what: String, _ body: () throws -> Void) rethrows {
            try body()
            expected += 1
            #expect(counter.count == expected, "\(what): one observation")
        }
        func noChange(_ what: String, _ body: () throws -> Void) rethrows {
            try body()
            #expect(counter.count == expected, "\(what): no observation")
        }

        try change("a move of three items") { _ = try model.moveItems(fromOffsets: [0, 2, 3], toOffset: 0, inSection: a) }
        try change("a delete of two items") { _ = try model.deleteItems(atOffsets: [0, 1], inSection: a) }
        try change("a section move") { _ = try model.moveSections(fromOffsets: [1], toOffset: 0) }
        try change("an insert") { _ = try model.insertItem("n", at: 0, inSection: b) }
        try change("a value") { _ = try model.setValue("N", forSection: b) }
        try change("a move across sections") { _ = try model.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 1, section: 1)) }

        let version = model.live.document.version
        try remote.insertItem("r", at: IndexPath(item: 0, section: 0))
        _ = try remote.document.moveSection(from: 0, to: 1)
        let remoteOps = remote.document.operations(since: version)
        change("two remote operations received together") { model.receive(remoteOps) }
        noChange("the same operations again") { model.receive(remoteOps) }
        noChange("a refresh with nothing new") { model.refresh() }
        try noChange("a move in place") { _ = try model.moveItems(fromOffsets: [0], toOffset: 1, inSection: a) }
        noChange("a refused move") { _ = try? model.moveItems(fromOffsets: [9], toOffset: 0, inSection: a) }
        try change("a change made around the model, then a refresh") {
            try model.live.edit { (doc) throws(ListError) in _ = try doc.insertSection(at: 0, value: Data("\"S9\"".utf8)) }
            #expect(counter.count == expected, "not before the refresh")
            model.refresh()
        }
        #expect(model.snapshot == (try F.decoded(model)))
    }

    @Test("a value written by another replica to a deleted item changes nothing shown: no observation")
    func invisibleOperation() throws {
        let model = try F.model(counts: [2])
        var remote = model.live.document.fork(as: 2)
        let gone = model.sections[0].items[0].id
        // Written concurrently with the delete: applied here after it, the item stays deleted.
        let op = try remote.setValue(Data("\"late\"".utf8), forItem: gone)
        _ = try model.deleteItems(atOffsets: [0], inSection: model.sections[0].id)
        let counter = ObservationCounter { _ = model.snapshot }
        let before = model.live.document.operationCount
        model.receive([op])
        #expect(model.live.document.operationCount == before + 1, "applied")
        #expect(counter.count == 0)
    }

    @Test("syncState is observed on its own; the model never sets it")
    func syncStateHook() throws {
        let model = try F.model(counts: [1])
        #expect(model.syncState == .unknown)
        let rows = ObservationCounter { _ = model.sections }
        let state = ObservationCounter { _ = model.syncState }
        model.syncState = .syncing
        model.syncState = .upToDate
        #expect(state.count == 2 && rows.count == 0)
        _ = try model.insertItem("x", at: 0, inSection: model.sections[0].id)
        #expect(state.count == 2 && rows.count == 1 && model.syncState == .upToDate)
    }

    @Test("identities are stable: an item keeps its id across moves, value writes and remote edits")
    func stableIdentities() throws {
        let model = try F.model(counts: [3, 1])
        let milk = model.sections[0].items[0]
        _ = try model.moveItems(fromOffsets: [0], toOffset: 3, inSection: model.sections[0].id)
        _ = try model.moveItem(from: IndexPath(item: 2, section: 0), to: IndexPath(item: 0, section: 1))
        _ = try model.setValue("milk", forItem: milk.id)
        let entry = try #require(model.snapshot.item(milk.id))
        #expect(entry.value == "milk" && model.snapshot.indexPath(of: milk.id) == IndexPath(item: 0, section: 1))
        #expect(model.sections.map(\.id) == model.live.document.sectionIDs)
    }

    @Test("values are decoded once: a refresh decodes only new or changed values")
    func decodesOnlyWhatChanged() throws {
        let coder = CountingCoder()
        let model = try F.model(counts: [40, 30, 30], coder: coder)
        #expect(coder.decodeCount == 103, "3 sections and 100 items")
        let a = model.sections[0].id
        var decodes = coder.decodeCount
        func expectDecodes(_ n: Int, _ what: String) {
            #expect(coder.decodeCount - decodes == n, "\(what)")
            decodes = coder.decodeCount
        }
        _ = try model.moveItems(fromOffsets: [0, 5, 39], toOffset: 20, inSection: a)
        expectDecodes(0, "a move")
        _ = try model.moveItem(from: IndexPath(item: 0, section: 1), to: IndexPath(item: 0, section: 2))
        expectDecodes(0, "a move across sections")
        _ = try model.moveSections(fromOffsets: [2], toOffset: 0)
        expectDecodes(0, "a section move")
        _ = try model.deleteItems(atOffsets: [1, 2], inSection: a)
        expectDecodes(0, "a delete")
        _ = try model.insertItem("new", at: 3, inSection: a)
        expectDecodes(1, "an insert")
        _ = try model.setValue("renamed", forItem: model.sections[1].items[4].id)
        expectDecodes(1, "a value")
        _ = try model.setValue("Renamed", forSection: a)
        expectDecodes(1, "a section value")
        var remote = F.fork(model, as: 2)
        let version = remote.document.version
        try remote.insertItem("r1", at: IndexPath(item: 0, section: 0))
        try remote.insertItem("r2", at: IndexPath(item: 0, section: 1))
        model.receive(remote.document.operations(since: version))
        expectDecodes(2, "two remote inserts")
    }

    @Test("a section whose bytes did not change keeps its items array (shared, not rebuilt)")
    func untouchedSectionsAreShared() throws {
        let model = try F.model(counts: [5, 5])
        let before = model.sections[1].items
        _ = try model.moveItems(fromOffsets: [0], toOffset: 5, inSection: model.sections[0].id)
        let after = model.sections[1].items
        #expect(before.withUnsafeBufferPointer { $0.baseAddress } == after.withUnsafeBufferPointer { $0.baseAddress })
    }

    @Test("values that do not decode are left out and reported, and come back when they decode")
    func undecodableValues() throws {
        let model = try F.model(counts: [3])
        let a = model.sections[0].id
        // Another writer stores raw bytes that are not a JSON string, in an item and a section.
        let bad = try model.live.edit { (doc) throws(ListError) -> ItemID in
            ItemID(try doc.insertItem(at: IndexPath(item: 1, section: 0), value: Data("not json".utf8)).id)
        }.result
        let badSection = try model.live.edit { (doc) throws(ListError) -> SectionID in
            let op = try doc.insertSection(at: 1, value: Data([0xFF]))
            try doc.insertItem(at: IndexPath(item: 0, section: 1), value: Data("\"hidden\"".utf8))
            return SectionID(op.id)
        }.result
        model.refresh()
        #expect(F.rows(model) == [["s0r0", "s0r1", "s0r2"]])
        #expect(model.decodingFailures.count == 2)
        guard case .undecodableItem(bad, _)? = model.decodingFailures.first,
              case .undecodableSection(badSection, _)? = model.decodingFailures.last else {
            Issue.record("\(model.decodingFailures)")
            return
        }
        // Offsets count the shown rows; the hidden row keeps its place by identity.
        _ = try model.moveItems(fromOffsets: [0], toOffset: 2, inSection: a)
        #expect(F.rows(model) == [["s0r1", "s0r0", "s0r2"]])
        #expect(try model.live.document.itemIDs(inSection: 0).firstIndex(of: bad) == 0,
                "the hidden row stayed between the same rows")
        let counter = ObservationCounter { _ = model.decodingFailures }
        try model.live.edit { (doc) throws(ListError) in
            _ = try doc.setValue(Data("\"fixed\"".utf8), forItem: bad)
            _ = try doc.setValue(Data("\"S1\"".utf8), forSection: badSection)
        }
        model.refresh()
        #expect(F.rows(model) == [["fixed", "s0r1", "s0r0", "s0r2"], ["hidden"]])
        #expect(model.decodingFailures.isEmpty && counter.count == 1)
    }

    // MARK: The change stream

    @Test("followChanges() catches up first, then follows the stream until the document is closed")
    func followChanges() async throws {
        let model = try F.model(counts: [3])
        var remote = model.live.document.fork(as: 2)
        let v0 = remote.version
        _ = try remote.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0))
        // Another thread applies it to the LiveDocument, around the model.
        model.live.receive(remote.operations(since: v0))
        #expect(F.rows(model) == [["s0r0", "s0r1", "s0r2"]], "not shown before a refresh")
        let counter = ObservationCounter { _ = model.sections }
        let follower = Task { await model.followChanges() }
        for step in 0..<3 {
            await Task.yield()
            let v = remote.version
            _ = try remote.insertItem(at: IndexPath(item: 0, section: 0), value: Data("\"r\(step)\"".utf8))
            model.live.receive(remote.operations(since: v))
        }
        _ = try model.insertItem("local", at: 0, inSection: model.sections[0].id)
        model.live.close()
        await follower.value
        #expect(F.rows(model) == [["local", "r2", "r1", "r0", "s0r1", "s0r2", "s0r0"]])
        #expect(model.snapshot == (try F.decoded(model)))
        #expect((2...5).contains(counter.count), "one per refresh that found something new: \(counter.count)")
    }

    @Test("a change already shown is not shown again when its change set arrives")
    func streamAfterLocalEdits() async throws {
        let model = try F.model(counts: [3])
        let counter = ObservationCounter { _ = model.sections }
        _ = try model.moveItems(fromOffsets: [2], toOffset: 0, inSection: model.sections[0].id)
        _ = try model.deleteItems(atOffsets: [0], inSection: model.sections[0].id)
        #expect(counter.count == 2)
        model.live.close()
        await model.followChanges()
        #expect(counter.count == 2, "the catch-up refresh found nothing new")
    }
}
