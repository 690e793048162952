import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// SEMANTICS §2 (last paragraph): bad input is a typed error, never a trap and never a partial
/// change. After any error the document is byte-for-byte what it was before.
@Suite("§2 bad input is refused and changes nothing")
struct BadInputTests: ScenarioSupport {
    // MARK: Helpers

    /// Everything observable about a document that an error must not change, refusals included.
    private struct Fingerprint: Equatable {
        var document: DocumentFingerprint
        var rejected: [ListOperation]
        init(_ d: ListDocument) {
            document = DocumentFingerprint(d)
            rejected = d.rejectedOperations
        }
    }



    /// Runs a local edit that must throw exactly `expected` and leave `doc` unchanged.
    private func refuse(_ doc: inout ListDocument, _ expected: ListError,
                        sourceLocation: SourceLocation = #_sourceLocation,
                        _ edit: (inout ListDocument) throws(ListError) -> Void) throws {
        let before = Fingerprint(doc)
        var copy = doc
        do {
            try edit(&copy)
            Issue.record("expected \(expected), but the edit succeeded", sourceLocation: sourceLocation)
        } catch {
            #expect(error == expected, sourceLocation: sourceLocation)
        }
        #expect(Fingerprint(copy) == before, "the document changed after an error", sourceLocation: sourceLocation)
        try copy.checkInvariants()
        doc = copy
    }

    /// Receives a remote operation that must be refused (`matches` decides the error) and leave `doc` unchanged.
    private func refuseRemote(_ doc: inout ListDocument, _ op: ListOperation,
                              sourceLocation: SourceLocation = #_sourceLocation,
                              _ matches: (ApplyError) -> Bool) throws {
        let before = Fingerprint(doc)
        var copy = doc
        do {
            let outcome = try copy.receive(op)
            Issue.record("expected an error for \(op), got \(outcome)", sourceLocation: sourceLocation)
        } catch {
            #expect(matches(error), "unexpected error \(error)", sourceLocation: sourceLocation)
        }
        #expect(Fingerprint(copy) == before, "the document changed after an error", sourceLocation: sourceLocation)
        try copy.checkInvariants()
        doc = copy
    }

    private func malformed(_ id: OpID) -> (ApplyError) -> Bool {
        { if case .malformed(id, _) = $0 { true } else { false } }
    }

    /// [A: a b c] [B: x y] [C: (empty)], with item d deleted from A, and section D deleted.
    private func fixture() throws -> ListDocument {
        var doc = try ListDocument.make(1, sections: [["a", "b", "c", "d"], ["x", "y"], [], ["gone"]],
                                        names: ["A", "B", "C", "D"])
        try doc.deleteItem(at: ip(0, 3))
        try doc.deleteSection(at: 3)
        try doc.checkInvariants()
        #expect(doc.rows == [["a", "b", "c"], ["x", "y"], []])
        return doc
    }

    private func deletedItem(_ doc: ListDocument) -> ItemID {
        for op in doc.operations {
            if case let .insertItem(_, _, value) = op.kind, value.string == "d" { return ItemID(op.id) }
        }
        fatalError("fixture has no d")
    }

    private func deletedSection(_ doc: ListDocument) -> SectionID {
        for op in doc.operations {
            if case let .insertSection(_, value) = op.kind, value.string == "D" { return SectionID(op.id) }
        }
        fatalError("fixture has no D")
    }

    private let ghostItem = ItemID(OpID(counter: 3, replica: ReplicaID(77)))
    private let ghostSection = SectionID(OpID(counter: 3, replica: ReplicaID(77)))

    // MARK: Local edits

    @Test("§2 insertSection out of range or with a value over maxValueSize throws and changes nothing")
    func insertSectionBad() throws {
        var doc = try fixture()
        try refuse(&doc, .sectionIndexOutOfRange(-1, count: 3)) { d throws(ListError) in try d.insertSection(at: -1) }
        try refuse(&doc, .sectionIndexOutOfRange(4, count: 3)) { d throws(ListError) in try d.insertSection(at: 4) }
        let big = Data(repeating: 1, count: doc.maxValueSize + 1)
        try refuse(&doc, .valueTooLarge(size: big.count, limit: doc.maxValueSize)) { d throws(ListError) in
            try d.insertSection(at: 0, value: big)
        }
        // exactly the limit is fine
        var ok = doc
        try ok.insertSection(at: 0, value: Data(repeating: 1, count: doc.maxValueSize))
        try ok.checkInvariants()
    }

    @Test("§2 deleteSection out of range, unknown or deleted throws and changes nothing")
    func deleteSectionBad() throws {
        var doc = try fixture()
        try refuse(&doc, .sectionIndexOutOfRange(3, count: 3)) { d throws(ListError) in try d.deleteSection(at: 3) }
        try refuse(&doc, .sectionIndexOutOfRange(-1, count: 3)) { d throws(ListError) in try d.deleteSection(at: -1) }
        try refuse(&doc, .unknownSection(ghostSection)) { d throws(ListError) in try d.deleteSection(ghostSection) }
        let gone = deletedSection(doc)
        try refuse(&doc, .sectionDeleted(gone)) { d throws(ListError) in try d.deleteSection(gone) }
        // an item id is not a section id
        let a = try #require(doc.item("a"))
        try refuse(&doc, .unknownSection(SectionID(a.opID))) { d throws(ListError) in try d.deleteSection(SectionID(a.opID)) }
    }

    @Test("§2 moveSection with from or to out of range throws and changes nothing")
    func moveSectionBad() throws {
        var doc = try fixture()
        try refuse(&doc, .sectionIndexOutOfRange(3, count: 3)) { d throws(ListError) in _ = try d.moveSection(from: 3, to: 0) }
        try refuse(&doc, .sectionIndexOutOfRange(-1, count: 3)) { d throws(ListError) in _ = try d.moveSection(from: -1, to: 0) }
        try refuse(&doc, .sectionIndexOutOfRange(3, count: 3)) { d throws(ListError) in _ = try d.moveSection(from: 0, to: 3) }
        try refuse(&doc, .sectionIndexOutOfRange(-1, count: 3)) { d throws(ListError) in _ = try d.moveSection(from: 1, to: -1) }
    }

    @Test("§2 setValue(forSection:) unknown, deleted or too large throws and changes nothing")
    func setSectionValueBad() throws {
        var doc = try fixture()
        try refuse(&doc, .unknownSection(ghostSection)) { d throws(ListError) in try d.setValue(Data("v"), forSection: ghostSection) }
        let gone = deletedSection(doc)
        try refuse(&doc, .sectionDeleted(gone)) { d throws(ListError) in try d.setValue(Data("v"), forSection: gone) }
        let big = Data(repeating: 7, count: doc.maxValueSize + 1)
        let s = doc.sectionIDs[0]
        try refuse(&doc, .valueTooLarge(size: big.count, limit: doc.maxValueSize)) { d throws(ListError) in
            try d.setValue(big, forSection: s)
        }
    }

    @Test("§2 insertItem at an out-of-range index path or with a value too large throws and changes nothing")
    func insertItemBad() throws {
        var doc = try fixture()
        try refuse(&doc, .indexPathOutOfRange(ip(0, 4), count: 3)) { d throws(ListError) in try d.insertItem(at: ip(0, 4)) }
        try refuse(&doc, .indexPathOutOfRange(ip(0, -1), count: 3)) { d throws(ListError) in try d.insertItem(at: ip(0, -1)) }
        try refuse(&doc, .indexPathOutOfRange(ip(2, 1), count: 0)) { d throws(ListError) in try d.insertItem(at: ip(2, 1)) }
        try refuse(&doc, .indexPathOutOfRange(ip(3, 0), count: 0)) { d throws(ListError) in try d.insertItem(at: ip(3, 0)) }
        try refuse(&doc, .indexPathOutOfRange(ip(-1, 0), count: 0)) { d throws(ListError) in try d.insertItem(at: ip(-1, 0)) }
        let short = IndexPath(index: 0)
        try refuse(&doc, .indexPathOutOfRange(short, count: 0)) { d throws(ListError) in try d.insertItem(at: short) }
        // The row/section spelling refuses the same way, naming the same index path.
        try refuse(&doc, .indexPathOutOfRange(ip(0, 4), count: 3)) { d throws(ListError) in try d.insertItem(atRow: 4, inSection: 0) }
        try refuse(&doc, .indexPathOutOfRange(ip(3, 0), count: 0)) { d throws(ListError) in try d.insertItem(atRow: 0, inSection: 3) }
        try refuse(&doc, .indexPathOutOfRange(ip(-1, 0), count: 0)) { d throws(ListError) in try d.insertItem(atRow: 0, inSection: -1) }
        let big = Data(repeating: 7, count: doc.maxValueSize + 1)
        try refuse(&doc, .valueTooLarge(size: big.count, limit: doc.maxValueSize)) { d throws(ListError) in
            try d.insertItem(at: ip(0, 0), value: big)
        }
    }

    @Test("§2 deleteItem out of range, unknown or already deleted throws and changes nothing")
    func deleteItemBad() throws {
        var doc = try fixture()
        try refuse(&doc, .indexPathOutOfRange(ip(0, 3), count: 3)) { d throws(ListError) in try d.deleteItem(at: ip(0, 3)) }
        try refuse(&doc, .indexPathOutOfRange(ip(2, 0), count: 0)) { d throws(ListError) in try d.deleteItem(at: ip(2, 0)) }
        try refuse(&doc, .indexPathOutOfRange(ip(5, 0), count: 0)) { d throws(ListError) in try d.deleteItem(at: ip(5, 0)) }
        try refuse(&doc, .unknownItem(ghostItem)) { d throws(ListError) in try d.deleteItem(ghostItem) }
        let d0 = deletedItem(doc)
        try refuse(&doc, .itemDeleted(d0)) { d throws(ListError) in try d.deleteItem(d0) }
        // The row/section spelling refuses the same way, naming the same index path.
        try refuse(&doc, .indexPathOutOfRange(ip(0, 3), count: 3)) { d throws(ListError) in try d.deleteItem(atRow: 3, inSection: 0) }
        try refuse(&doc, .indexPathOutOfRange(ip(0, -1), count: 3)) { d throws(ListError) in try d.deleteItem(atRow: -1, inSection: 0) }
        try refuse(&doc, .indexPathOutOfRange(ip(5, 0), count: 0)) { d throws(ListError) in try d.deleteItem(atRow: 0, inSection: 5) }
        try refuse(&doc, .indexPathOutOfRange(ip(-1, 0), count: 0)) { d throws(ListError) in try d.deleteItem(atRow: 0, inSection: -1) }
        // a section id is not an item id
        let s = doc.sectionIDs[0]
        try refuse(&doc, .unknownItem(ItemID(s.opID))) { d throws(ListError) in try d.deleteItem(ItemID(s.opID)) }
    }

    @Test("§2 moveItem with an out-of-range source or destination throws and changes nothing")
    func moveItemBad() throws {
        var doc = try fixture()
        // source
        try refuse(&doc, .indexPathOutOfRange(ip(0, 3), count: 3)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 3), to: ip(0, 0)) }
        try refuse(&doc, .indexPathOutOfRange(ip(2, 0), count: 0)) { d throws(ListError) in _ = try d.moveItem(from: ip(2, 0), to: ip(0, 0)) }
        try refuse(&doc, .indexPathOutOfRange(ip(9, 0), count: 0)) { d throws(ListError) in _ = try d.moveItem(from: ip(9, 0), to: ip(0, 0)) }
        // destination in the same section: 0..<count
        try refuse(&doc, .indexPathOutOfRange(ip(0, 3), count: 3)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 0), to: ip(0, 3)) }
        try refuse(&doc, .indexPathOutOfRange(ip(0, -1), count: 3)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 0), to: ip(0, -1)) }
        // destination in another section: 0...count
        try refuse(&doc, .indexPathOutOfRange(ip(1, 3), count: 2)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 0), to: ip(1, 3)) }
        try refuse(&doc, .indexPathOutOfRange(ip(2, 1), count: 0)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 0), to: ip(2, 1)) }
        try refuse(&doc, .indexPathOutOfRange(ip(3, 0), count: 0)) { d throws(ListError) in _ = try d.moveItem(from: ip(0, 0), to: ip(3, 0)) }
        // by identity
        try refuse(&doc, .unknownItem(ghostItem)) { d throws(ListError) in _ = try d.moveItem(ghostItem, to: ip(0, 0)) }
        let d0 = deletedItem(doc)
        try refuse(&doc, .itemDeleted(d0)) { d throws(ListError) in _ = try d.moveItem(d0, to: ip(0, 0)) }
        let a = try #require(doc.item("a"))
        try refuse(&doc, .indexPathOutOfRange(ip(1, 3), count: 2)) { d throws(ListError) in _ = try d.moveItem(a, to: ip(1, 3)) }
    }

    @Test("§2 moveItems with an empty or duplicate selection, unknown or deleted items, or a bad destination throws and changes nothing")
    func moveItemsBad() throws {
        var doc = try fixture()
        let a = try #require(doc.item("a")), b = try #require(doc.item("b")), x = try #require(doc.item("x"))
        try refuse(&doc, .invalidSelection("the selection is empty")) { d throws(ListError) in _ = try d.moveItems([], to: ip(0, 0)) }
        do {
            var copy = doc
            let before = Fingerprint(doc)
            #expect {
                try copy.moveItems([a, b, a], to: ip(1, 0))
            } throws: { e in
                if case .invalidSelection = e as? ListError { return true } else { return false }
            }
            #expect(Fingerprint(copy) == before)
        }
        try refuse(&doc, .unknownItem(ghostItem)) { d throws(ListError) in _ = try d.moveItems([a, ghostItem], to: ip(1, 0)) }
        let d0 = deletedItem(doc)
        try refuse(&doc, .itemDeleted(d0)) { d throws(ListError) in _ = try d.moveItems([a, d0, x], to: ip(1, 0)) }
        // destination row counts the destination section without the selected items in it: [x y] minus x = 1 row
        try refuse(&doc, .indexPathOutOfRange(ip(1, 2), count: 1)) { d throws(ListError) in _ = try d.moveItems([a, x], to: ip(1, 2)) }
        try refuse(&doc, .indexPathOutOfRange(ip(1, -1), count: 1)) { d throws(ListError) in _ = try d.moveItems([a, x], to: ip(1, -1)) }
        try refuse(&doc, .indexPathOutOfRange(ip(3, 0), count: 0)) { d throws(ListError) in _ = try d.moveItems([a], to: ip(3, 0)) }
    }

    @Test("§2 setValue(forItem:) unknown, deleted or too large throws and changes nothing")
    func setItemValueBad() throws {
        var doc = try fixture()
        try refuse(&doc, .unknownItem(ghostItem)) { d throws(ListError) in try d.setValue(Data("v"), forItem: ghostItem) }
        let d0 = deletedItem(doc)
        try refuse(&doc, .itemDeleted(d0)) { d throws(ListError) in try d.setValue(Data("v"), forItem: d0) }
        let a = try #require(doc.item("a"))
        let big = Data(repeating: 7, count: doc.maxValueSize + 1)
        try refuse(&doc, .valueTooLarge(size: big.count, limit: doc.maxValueSize)) { d throws(ListError) in try d.setValue(big, forItem: a) }
        // and with a small custom limit
        var small = ListDocument(replica: ReplicaID(5), maxValueSize: 4)
        try small.insertSection(at: 0, value: Data("1234"))
        try refuse(&small, .valueTooLarge(size: 5, limit: 4)) { d throws(ListError) in try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("12345")) }
    }

    @Test("§2 a long run of bad local edits leaves the document byte-for-byte unchanged and still editable")
    func manyBadEdits() throws {
        var doc = try fixture()
        let before = Fingerprint(doc)
        var rng = SplitMix64(seed: 0xBAD)
        var errors = 0
        for _ in 0..<300 {
            let p = ip(rng.below(6) - 1, rng.below(8) - 1)
            let q = ip(rng.below(6) - 1, rng.below(8) - 1)
            var copy = doc
            do {
                switch rng.below(4) {
                case 0: _ = try copy.moveItem(from: p, to: q)
                case 1: try copy.deleteItem(at: p)
                case 2: try copy.insertItem(at: p, value: Data("n"))
                default: _ = try copy.moveSection(from: p.section, to: q.section)
                }
            } catch {
                errors += 1
                #expect(Fingerprint(copy) == before, "changed after \(error)")
            }
            try copy.checkInvariants()
        }
        #expect(errors > 50)
        try doc.insertItem(at: ip(2, 0), value: Data("fine"))
        try doc.checkInvariants()
        #expect(doc.rows == [["a", "b", "c"], ["x", "y"], ["fine"]])
    }

    // MARK: Malformed remote operations

    /// The id of the next operation a remote replica 9 could make, depending on everything here.
    private func nextID(_ doc: ListDocument) -> OpID {
        OpID(counter: (doc.operations.map(\.lastID.counter).max() ?? 0) + 1, replica: ReplicaID(9))
    }

    @Test("§2 a remote insert with an unknown origin is refused as malformed and changes nothing")
    func remoteUnknownOrigin() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let s0 = doc.sectionIDs[0]
        let ghost = SlotID(OpID(counter: 2, replica: ReplicaID(77)))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: ghost, before: nil), value: Data("n"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: nil, before: ghost), value: Data("n"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertSection(.init(after: ghost, before: nil), value: Data("S"))),
                         malformed(id))
        // an unknown section
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: ghostSection, .init(after: nil, before: nil), value: Data("n"))),
                         malformed(id))
        // and the same op, well formed, is then fine
        let good = ListOperation(id: id, deps: doc.frontier, kind: .insertItem(section: s0, .init(after: nil, before: SlotID(doc.item("a")!.opID)), value: Data("n")))
        do { let result = try doc.receive(good); #expect(result == .applied(woken: 1)) }
        try doc.checkInvariants()
        #expect(doc.rows == [["n", "a", "b", "c"], ["x", "y"], []])
    }

    @Test("§2 a remote op whose origins are in another sequence is refused as malformed and changes nothing")
    func remoteOriginsInAnotherSequence() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let s0 = doc.sectionIDs[0]
        let x = SlotID(try #require(doc.item("x")).opID)     // a slot of section B
        let a = SlotID(try #require(doc.item("a")).opID)
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: x, before: nil), value: Data("n"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .moveItems([ItemID(a.opID)], section: s0, .init(after: nil, before: x))),
                         malformed(id))
        // an item slot as a section origin, and a section slot as an item origin
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertSection(.init(after: a, before: nil), value: Data("S"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: SlotID(s0.opID), before: nil), value: Data("n"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .moveSection(s0, .init(after: a, before: nil))),
                         malformed(id))
    }

    @Test("§2 a remote op whose origins are out of order is refused as malformed and changes nothing")
    func remoteOriginsOutOfOrder() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let s0 = doc.sectionIDs[0]
        let a = SlotID(try #require(doc.item("a")).opID)
        let c = SlotID(try #require(doc.item("c")).opID)
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: c, before: a), value: Data("n"))),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: a, before: a), value: Data("n"))),
                         malformed(id))
        let s2 = doc.sectionIDs[2]
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .moveSection(s0, .init(after: SlotID(s2.opID), before: SlotID(s0.opID)))),
                         malformed(id))
    }

    @Test("§2 a remote op with a dependency that is not before it, or with counter 0, is refused and changes nothing")
    func remoteBadCounters() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let s0 = doc.sectionIDs[0]
        let kind = ListOperation.Kind.insertItem(section: s0, .init(after: nil, before: nil), value: Data("n"))
        // a dependency at the op's own counter, and one after it
        try refuseRemote(&doc, ListOperation(id: id, deps: Frontier([OpID(counter: id.counter, replica: ReplicaID(1))]), kind: kind),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: Frontier([OpID(counter: id.counter + 5, replica: ReplicaID(3))]), kind: kind),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: Frontier([id]), kind: kind), malformed(id))
        // counter 0
        let zero = OpID(counter: 0, replica: ReplicaID(9))
        try refuseRemote(&doc, ListOperation(id: zero, deps: Frontier(), kind: .insertSection(.init(after: nil, before: nil), value: Data("S"))),
                         malformed(zero))
        // a reference to something not before it (a section with the op's own counter)
        let late = SectionID(OpID(counter: id.counter, replica: ReplicaID(1)))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .insertItem(section: late, .init(after: nil, before: nil), value: Data("n"))),
                         malformed(id))
    }

    @Test("§2 remote moves and deletes naming unknown items, empty or duplicate selections, or wrong seen slots are refused")
    func remoteBadReferences() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let s0 = doc.sectionIDs[0]
        let a = try #require(doc.item("a")), b = try #require(doc.item("b"))
        let top = ListOperation.Origins(after: nil, before: SlotID(a.opID))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .moveItems([ghostItem], section: s0, top)), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .moveItems([], section: s0, top)), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .moveItems([b, b], section: s0, top)), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .moveItems([b], section: ghostSection, top)), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .deleteItem(ghostItem, seen: SlotID(ghostItem.opID))), malformed(id))
        // the seen slot is another item's slot
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .deleteItem(a, seen: SlotID(b.opID))), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .deleteSection(s0, seen: SlotID(a.opID), items: [])), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .deleteSection(s0, seen: SlotID(s0.opID), items: [.init(item: a, seen: SlotID(b.opID))])),
                         malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .setItemValue(ghostItem, Data("v"))), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .setSectionValue(ghostSection, Data("v"))), malformed(id))
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .setSectionValue(SectionID(a.opID), Data("v"))), malformed(id))
    }

    @Test("§2 a remote op with a value over maxValueSize is refused with valueTooLarge and changes nothing")
    func remoteValueTooLarge() throws {
        var doc = try fixture()
        let id = nextID(doc)
        let a = try #require(doc.item("a"))
        let big = Data(repeating: 0, count: doc.maxValueSize + 1)
        let limit = doc.maxValueSize
        let tooLarge: (ApplyError) -> Bool = { $0 == .valueTooLarge(id, size: big.count, limit: limit) }
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .setItemValue(a, big)), tooLarge)
        let s0 = doc.sectionIDs[0]
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier, kind: .setSectionValue(s0, big)), tooLarge)
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertItem(section: s0, .init(after: nil, before: nil), value: big)), tooLarge)
        try refuseRemote(&doc, ListOperation(id: id, deps: doc.frontier,
                                         kind: .insertSection(.init(after: nil, before: nil), value: big)), tooLarge)
    }
}
