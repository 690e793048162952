import Foundation

extension ListDocument {
    /// Makes on this document (a compacted replica's snapshot, loaded by a replica that was left
    /// behind its floor) the edits of `unsent`: operations that `local` made and applied and this
    /// document lacks (Docs/Semantics.md §7, "A replica that comes back"). Returns the operations
    /// made here, to send.
    ///
    /// Those made after this document's floor (and not depending on one made before it) are
    /// received as they are, ids kept (so that a copy of one already on its way to the daemon is
    /// taken once), unless `refused`: the daemon refused the edits (`compacted`), and sent again
    /// as they are it would refuse them again (one made after its floor but before the version
    /// it published to its peers, of a replica no daemon counts: Docs/Semantics.md §7, "Peers";
    /// every answer came, so none is on its way). A document with no floor (a daemon that did not
    /// compact, and refused an edit of a replica no daemon counts) keeps none either: every one is
    /// made again. Each of the others is made again as a new local operation of this
    /// document's replica, from what `local` shows now: an item inserted (and still there) is
    /// inserted with its current value after the nearest item before it that this document
    /// shows (at the start of its section if none; in its section, or a section inserted with
    /// it); a deleted item is deleted if this document still shows it and `local` does not (an
    /// item `local` shows again, brought back by a later move, is not); a written value is
    /// written again; a moved item is moved after the same neighbour; an inserted section is
    /// inserted (at its index, clamped), a deleted one deleted, a section value written again;
    /// field writes are written again with the same changes (on the item or section made again).
    /// Section moves are not made again (the section stays where the others left it). Operations
    /// made again, and every later edit of this document, take counters after `local`'s clock,
    /// never an id `local` has used, even when nothing is made again. An edit of
    /// something this document no longer shows (deleted by another replica) is dropped, as it
    /// would have been by the merge. Operations of other replicas in `unsent` are skipped: `local`
    /// received them from a daemon, which holds them (a copy that roamed between peer daemons may
    /// hold some that this one has not received yet); made again they would exist twice.
    ///
    /// - Complexity: O(k × n) for k operations of `unsent` and n visible items.
    public mutating func remake(_ unsent: [ListOperation], from local: ListDocument, refused: Bool = false) -> [ListOperation] {
        let unsent = unsent.filter { $0.id.replica == local.replica }
        // With nothing to make again too, this document's later edits take ids after every one
        // `local` used: one it made that this document lacks may be held by a daemon (an
        // acknowledged edit not relayed here yet), and an id reused would name two operations.
        guard !unsent.isEmpty else { clockPast(local); return [] }
        // Those made after the floor (and not on one made before it) are taken as they are, ids
        // kept: one of them may also be on its way to the daemon, which then takes it once.
        var stale: [ClosedRange<UInt64>] = [], staleReplicas: [ReplicaID] = []
        var direct: [ListOperation] = [], redo: [ListOperation] = []
        for op in unsent {
            let onStale = op.deps.contains { d in
                zip(staleReplicas, stale).contains { $0.0 == d.replica && $0.1.contains(d.counter) }
            }
            if refused || onStale || isBeforeFloor(op) || compaction == nil {
                redo.append(op)
                staleReplicas.append(op.id.replica)
                stale.append(op.id.counter...op.lastID.counter)
            } else {
                direct.append(op)
            }
        }
        var taken: [ListOperation] = []
        if !direct.isEmpty {
            // All of them or none (then every one is made again).
            if let made = receiveWhole(direct) { taken = made } else { redo = unsent }
        }
        // Each identity once: the operations made again take ids after every one `local` knows,
        // its own refused or unsent ones included (this document's clock only knows what the
        // daemon held; an id reused here would name two operations, and the daemon, which refused
        // the first, would refuse what depends on the second for the floor too).
        clockPast(local)
        var remaker = Remaker(local: local.snapshot())
        for op in redo {
            if op.insertsSection { remaker.sectionInserts[SectionID(op.id)] = op }
        }
        for op in redo { remaker.remake(op, on: &self) }
        return taken + remaker.made
    }

    /// Sets the clock past every id `local` used, so that this document's next edits never reuse
    /// one; and, when `local` made operations of its replica that this document lacks (dropped
    /// or made again here), makes the next edit's counter skip one (``skipsCounter``): it then
    /// jumps past its causes' greatest counter plus one, which tells every copy that takes it
    /// that its author left counters out (``skippedCounters()``, Docs/Semantics.md §7, "A floor
    /// that counts what it skipped"), though an ordinary edit's counter is exactly that.
    ///
    /// - Complexity: O(1).
    mutating func clockPast(_ local: ListDocument) {
        clock = max(clock, local.clock)
        if local.version[local.replica] > version[local.replica] { skipsCounter = true }
    }
}

/// The state of one ``ListDocument/remake(_:from:)`` (or ``ListDocument/mergeBack(from:remakes:relayed:named:)``):
/// what the returning replica shows, and which of its new entities were made again under which id.
struct Remaker {
    let local: ListSnapshot
    var sections: [SectionID: SectionID] = [:]
    var items: [ItemID: ItemID] = [:]
    var made: [ListOperation] = []
    /// The sections inserted by the operations made again, not made yet: an item's insert or
    /// move, made at the item's place now, may come before its section's insert (the item was
    /// moved into it later); that section is then made first.
    var sectionInserts: [SectionID: ListOperation] = [:]
    /// The records made again with every field they show (an item or a section inserted with its
    /// fields): the field writes of `unsent` on them are in what they show, and are not written
    /// again (an increment would count twice).
    var remadeWithFields: Set<OpID> = []

    init(local: ListSnapshot) { self.local = local }

    /// Makes the section that `x` is in on the returning replica now first, if an operation made
    /// again inserts it and it is not made yet.
    private mutating func makeSection(of x: ItemID, on doc: inout ListDocument) {
        guard let at = local.indexPath(of: x), let op = sectionInserts[local.sections[at.section].id] else { return }
        remake(op, on: &doc)
    }

    /// The same changes as `writes`, written again on what `doc` shows of `target` (or of the
    /// record made again for it): what they replace and reset is what `doc` holds.
    mutating func writeAgain(_ writes: FieldWrites, of target: RecordTarget, on doc: inout ListDocument) {
        var changes: [String: FieldChange] = [:]
        for w in writes.writes { changes[w.name] = w.change }
        switch target {
        case .item(let x):
            let here = items[x] ?? x
            guard doc.contains(here) else { return }
            record(try? doc.writeFields(changes, ofItem: here))
        case .section(let s):
            let here = sections[s] ?? s
            guard doc.contains(here) else { return }
            record(try? doc.writeFields(changes, ofSection: here))
        }
    }

    mutating func remake(_ op: ListOperation, on doc: inout ListDocument) {
        switch op.kind {
        case .insertSection, .insertSectionWithFields:
            let s = SectionID(op.id)
            guard sectionInserts.removeValue(forKey: s) != nil else { return }   // made already
            guard let index = local.indexOfSection(s), let shown = local.sections.first(where: { $0.id == s }) else { return }
            let at = min(index, doc.snapshot().numberOfSections)
            // With the fields it shows now, when it was inserted with fields (as an item's, below).
            let withFields = op.needsWireFormat5
            let (fields, texts) = withFields ? ListDocument.insertChanges(showing: shown.fields) : ([:], [:])
            if let made = record(try? doc.insertSection(at: at, value: shown.value, fields: fields)) {
                sections[s] = SectionID(made.id)
                if withFields { remadeWithFields.insert(s.opID) }
                for (name, t) in texts.sorted(by: { $0.key < $1.key }) { record(try? doc.splice(name, ofSection: SectionID(made.id), at: 0, insert: t)) }
            }
        case let .deleteSection(s, _, _):
            // Not one the returning replica shows again (an item moved into it since): deleted
            // now, it would take what the replica shows with it.
            guard local.indexOfSection(s) == nil, doc.snapshot().indexOfSection(s) != nil else { return }
            record(try? doc.deleteSection(s))
        case let .setSectionValue(s, _):
            let here = sections[s] ?? s
            guard doc.snapshot().indexOfSection(here) != nil,
                  let value = local.sections.first(where: { $0.id == s })?.value else { return }
            record(try? doc.setValue(value, forSection: here))
        case .moveSection:
            return
        case .insertItem, .insertItemWithFields:
            let x = ItemID(op.id)
            makeSection(of: x, on: &doc)
            guard let value = value(of: x), let to = place(of: x, in: doc.snapshot()) else { return }
            // With the fields it shows now (values, counters and sets as they are).
            var fields: [String: FieldChange] = [:], texts: [String: String] = [:]
            var withFields = false
            if case .insertItemWithFields = op.kind, let at = local.indexPath(of: x) {
                (fields, texts) = ListDocument.insertChanges(showing: local.sections[at.section].items[at.item].fields)
                withFields = true
            }
            if let made = record(try? doc.insertItem(at: to, value: value, fields: fields)) {
                items[x] = ItemID(made.id)
                if withFields { remadeWithFields.insert(x.opID) }
                for (name, t) in texts.sorted(by: { $0.key < $1.key }) { record(try? doc.splice(name, ofItem: ItemID(made.id), at: 0, insert: t)) }
            }
        case let .deleteItem(x, _):
            // Not one the returning replica shows again: a move it made later, or another
            // replica's move the delete had not seen, brought it back there, and the delete,
            // made again now, would see that move's slot too (seed 651616 of `listsync simulate
            // --daemons 2 --compact-after 10 --crashes 2 --ops 80 --lose-daemon-early --roam 30`:
            // an item deleted, brought back by another's move, moved and tagged, was lost).
            guard local.indexPath(of: x) == nil, let here = doc.snapshot().indexPath(of: items[x] ?? x) else { return }
            record(try? doc.deleteItem(at: here))
        case let .setItemValue(x, _):
            let here = items[x] ?? x
            guard doc.snapshot().indexPath(of: here) != nil, let value = value(of: x) else { return }
            record(try? doc.setValue(value, forItem: here))
        case let .writeFields(target, writes):
            // None on a record made again with the fields it shows, which hold them already.
            guard !remadeWithFields.contains(target.opID) else { return }
            writeAgain(writes, of: target, on: &doc)
        case let .moveItems(list, _, _):
            for x in list where items[x] == nil {
                makeSection(of: x, on: &doc)
                let snapshot = doc.snapshot()
                guard snapshot.indexPath(of: x) != nil, let to = place(of: x, in: snapshot, moving: true) else { continue }
                recordMove(try? doc.moveItem(x, to: to))
            }
        }
    }

    /// What `x` holds on the returning replica now (nil: it no longer shows it).
    private func value(of x: ItemID) -> Data? {
        guard let at = local.indexPath(of: x) else { return nil }
        return local.sections[at.section].items[at.item].value
    }

    /// Where `x` goes in `doc`: right after the nearest item before it on the returning replica
    /// that `doc` shows, in the section it is in there (nil: that section is gone). `moving`: `x`
    /// is in `doc` already, and the index counts as after its move.
    private func place(of x: ItemID, in doc: ListSnapshot, moving: Bool = false) -> IndexPath? {
        guard let at = local.indexPath(of: x) else { return nil }
        let localSection = local.sections[at.section]
        guard let section = doc.indexOfSection(sections[localSection.id] ?? localSection.id) else { return nil }
        var index = 0
        for before in localSection.items[..<at.item].reversed() {
            let id = items[before.id] ?? before.id
            if let p = doc.indexPath(of: id), p.section == section {
                index = p.item + 1
                break
            }
        }
        if moving, let from = doc.indexPath(of: x), from.section == section, from.item < index { index -= 1 }
        return IndexPath(item: index, section: section)
    }

    @discardableResult
    mutating func record(_ op: ListOperation?) -> ListOperation? {
        guard let op else { return nil }
        made.append(op)
        return op
    }

    private mutating func recordMove(_ op: ListOperation??) {
        guard let op = op ?? nil else { return }
        made.append(op)
    }
}
