import Foundation
import Testing
import ListCRDT
import ListTable
@testable import ListSyncWeb
import ListSyncRandom

@Suite("Web view model: ids, and where a dropped row lands by identity (against a reference model)")
struct WebModelTests {
    @Test("ids read back from their text; other text is refused")
    func ids() {
        let id = OpID(counter: 42, replica: ReplicaID(UInt64.max))
        #expect(WebModel.opID(WebModel.text(id)) == id)
        for bad in ["", "1", "1-", "-1", "a-b", "1-2-3", "18446744073709551616-1"] { #expect(WebModel.opID(bad) == nil, "\(bad)") }
    }

    /// The reference: remove the item, then put it right after `after` if it is in the section,
    /// else right before `before`, else at the top (when the drop was at the top), else at the end.
    static func reference(_ sections: [[ItemID]], item: ItemID, section: Int, after: ItemID?, before: ItemID?) -> [[ItemID]] {
        var s = sections.map { $0.filter { $0 != item } }
        let rows = s[section]
        let at: Int
        if let after, let i = rows.firstIndex(of: after) { at = i + 1 }
        else if let before, let i = rows.firstIndex(of: before) { at = i }
        else if after == nil { at = 0 }
        else { at = rows.count }
        s[section].insert(item, at: at)
        return s
    }

    @Test("seeded: drops placed by neighbours that others moved, deleted or never had land as the reference model says, with one move")
    func destinations() throws {
        var rng = SplitMix64(seed: 0x5eed)
        for _ in 0..<300 {
            var doc = ListDocument(replica: ReplicaID(1))
            let sectionCount = Int(rng.next() % 3) + 1
            for s in 0..<sectionCount { try doc.insertSection(at: s, value: Data("s\(s)".utf8)) }
            for i in 0..<Int(rng.next() % 8) + 1 {
                let s = Int(rng.next() % UInt64(sectionCount))
                try doc.insertItem(at: IndexPath(item: Int(rng.next() % UInt64(try doc.itemCount(inSection: s) + 1)), section: s),
                                   value: Data("i\(i)".utf8))
            }
            let snap = doc.snapshot()
            let all = snap.sections.flatMap { $0.items.map(\.id) }
            let item = all[Int(rng.next() % UInt64(all.count))]
            let section = Int(rng.next() % UInt64(sectionCount))
            // Neighbours: any row (perhaps in another section now, as after a remote move), or none.
            let pick: () -> ItemID? = { rng.next() % 4 == 0 ? nil : all[Int(rng.next() % UInt64(all.count))] }
            let after = pick(), before = pick()
            let place = PresencePlace(section: snap.sections[section].id, after: after, before: before)
            let to = try #require(WebModel.destination(of: item, at: place, in: snap))
            let model = Self.reference(snap.sections.map { $0.items.map(\.id) }, item: item, section: section,
                                       after: after == item ? nil : after, before: before == item ? nil : before)
            let ops = doc.operationCount
            try doc.moveItem(item, to: to)
            #expect(doc.snapshot().sections.map { $0.items.map(\.id) } == model)
            let unmoved = snap.indexPath(of: item) == to
            #expect(doc.operationCount == ops + (unmoved ? 0 : 1), "one move, or none when it lands where it is")
        }
    }

    @Test("a drop whose item or section is gone has no destination")
    func gone() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data())
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("a".utf8))
        let snap = doc.snapshot()
        let item = snap.sections[0].items[0].id
        #expect(WebModel.destination(of: ItemID(OpID(counter: 99, replica: ReplicaID(9))), at: PresencePlace(section: snap.sections[0].id, after: nil, before: nil), in: snap) == nil)
        #expect(WebModel.destination(of: item, at: PresencePlace(section: SectionID(OpID(counter: 99, replica: ReplicaID(9))), after: nil, before: nil), in: snap) == nil)
    }
}

extension WebModelTests {
    @Test("the page's state carries each item's and section's fields in show --json's form; a value the page sends reads by its kind, other text is refused")
    func fieldsInTheState() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0, value: Data("Food".utf8))
        try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("milk".utf8))
        let snap0 = doc.snapshot()
        let item = try #require(snap0.itemIdentifier(at: IndexPath(item: 0, section: 0)))
        let section = try #require(snap0.sectionIdentifier(at: 0))
        _ = try doc.writeFields(["title": .set(.string("oat milk")), "qty": .set(.int(2)), "done": .set(.bool(false)),
                                 "votes": .increment(3), "tags": .insert(["dairy", "cold"]), "when": .set(.date(Date(timeIntervalSince1970: 0)))],
                                ofItem: item)
        _ = try doc.writeFields(["color": .set(.string("blue"))], ofSection: section)
        let json = WebModel.stateJSON(id: DocumentID(high: 1, low: 2), name: "g", snapshot: doc.snapshot())
        let o = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let s = try #require((o["sections"] as? [[String: Any]])?.first)
        #expect((s["fields"] as? [String: Any])?["color"] as? String == "blue")
        let f = try #require(((s["items"] as? [[String: Any]])?.first)?["fields"] as? [String: Any])
        #expect(f["title"] as? String == "oat milk" && f["qty"] as? Int == 2 && f["done"] as? Bool == false)
        #expect((f["votes"] as? [String: Any])?["counter"] as? Int == 3)
        #expect((f["tags"] as? [String: Any])?["set"] as? [String] == ["cold", "dairy"])
        #expect((f["when"] as? [String: Any])?["date"] as? String == "1970-01-01T00:00:00.000Z")

        #expect(WebModel.fieldValue(kind: "string", text: "12") == .string("12"))
        #expect(WebModel.fieldValue(kind: "number", text: "12") == .int(12))
        #expect(WebModel.fieldValue(kind: "number", text: "2.5") == .double(2.5))
        #expect(WebModel.fieldValue(kind: "bool", text: "true") == .bool(true))
        #expect(WebModel.fieldValue(kind: "null", text: "") == .null)
        for (kind, text) in [("number", "many"), ("number", "inf"), ("number", "nan"), ("bool", "yes"), ("date", "x"), ("", "")] {
            #expect(WebModel.fieldValue(kind: kind, text: text) == nil, "\(kind) \(text)")
        }
    }
}

@Suite("Web view model: carets in the presence the page draws")
struct WebCaretJSONTests {
    @Test("each person's caret comes with its item, field and UTF-16 offsets, found in one pass over the board")
    func caretsInUTF16() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        try doc.insertSection(at: 0)
        var items: [ItemID] = []
        for k in 0 ..< 50 { items.append(ItemID(try doc.insertItem(atRow: k, inSection: 0, value: Data("c\(k)".utf8)).id)) }
        _ = try doc.splice("notes", ofItem: items[7], at: 0, insert: "a😀bc")
        _ = try doc.splice("notes", ofItem: items[40], at: 0, insert: "plain text")
        let ana = try #require(doc.caret("notes", ofItem: items[7], selection: 2 ..< 3))
        let bo = try #require(doc.caret("notes", ofItem: items[40], selection: 4 ..< 4))
        let activities = [
            RemoteActivity(Presence(replica: ReplicaID(2), name: "Ana", activity: .editing(ana)), in: doc),
            RemoteActivity(Presence(replica: ReplicaID(3), name: "Bo", activity: .editing(bo)), in: doc),
        ]
        let json = WebModel.presenceJSON(activities, snapshot: doc.snapshot())
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(list.count == 2)
        let carets = list.compactMap { $0["caret"] as? [String: Any] }
        #expect(carets.count == 2, "both carets shown")
        #expect(carets[0]["item"] as? String == WebModel.text(items[7].opID))
        #expect(carets[0]["field"] as? String == "notes")
        #expect(carets[0]["anchor"] as? Int == 3 && carets[0]["head"] as? Int == 4, "scalar 2 is UTF-16 offset 3 after the emoji")
        #expect(carets[1]["item"] as? String == WebModel.text(items[40].opID))
        #expect(carets[1]["anchor"] as? Int == 4 && carets[1]["head"] as? Int == 4)
    }

    @Test("a caret in a section's text field comes with its section, field and UTF-16 offsets")
    func sectionCaret() throws {
        var doc = ListDocument(replica: ReplicaID(1))
        let section = SectionID(try doc.insertSection(at: 0).id)
        _ = try doc.splice("notes", ofSection: section, at: 0, insert: "é😀 weekly")
        let caret = try #require(doc.caret("notes", of: .section(section), selection: 2 ..< 4))
        let json = WebModel.presenceJSON([RemoteActivity(Presence(replica: ReplicaID(2), name: "Ana", activity: .editing(caret)), in: doc)],
                                         snapshot: doc.snapshot())
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let shown = try #require(list.first?["caret"] as? [String: Any])
        #expect(shown["section"] as? String == WebModel.text(section.opID) && shown["item"] == nil)
        #expect(shown["field"] as? String == "notes")
        #expect(shown["anchor"] as? Int == 3 && shown["head"] as? Int == 5, "scalars 2 and 4 are UTF-16 offsets 3 and 5 after the emoji")
    }
}
