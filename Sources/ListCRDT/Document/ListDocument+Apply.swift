import Foundation

/// What the run routes carry from one operation to the next within one receive: the section an
/// item insert referred to last, and its index (see
/// ``ListDocument/itemInsertReferences(_:section:origins:valueSize:context:)``), and where the last
/// id look-up found its id (``SlotStore/IDHint``), guesses checked before use (any value gives the
/// same results); and, in a load into an empty document, the slots to hide later.
struct RunContext {
    var section: (id: SectionID, entity: EntityIndex)?
    var ids = SlotStore.IDHint()
    /// When not nil, the delete run route leaves the winning slots of the items that die visible
    /// in the trees and gathers them here, with their sections, for
    /// ``ListDocument/settle(_:)`` to hide later, all at once (``ListDocument/apply(_:strict:)``
    /// sets it for a load into an empty document).
    var deaths: [(first: LocalVersion, count: Int32, section: EntityIndex)]?
    /// When not nil (with ``deaths``, in a load into an empty document), the insert run route
    /// keeps the order of the item trees it is the first to fill aside (``PendingOrder``), for
    /// ``ListDocument/settle(_:)`` to build them from, once, with the gathered deaths hidden.
    var order: PendingOrder?
}

/// An operation whose references have been checked and turned into dense indices and slots.
enum ResolvedOperation {
    case insertSection(left: LocalVersion, right: LocalVersion, value: Data)
    case insertItem(section: EntityIndex, left: LocalVersion, right: LocalVersion, value: Data)
    case moveSection(EntityIndex, left: LocalVersion, right: LocalVersion)
    case moveItems([EntityIndex], section: EntityIndex, left: LocalVersion, right: LocalVersion)
    /// A `moveItems` of exactly one item (the common case), without an array.
    case moveItem(EntityIndex, section: EntityIndex, left: LocalVersion, right: LocalVersion)
    /// `slot` is the local version of the seen slot (the log keeps it).
    case deleteItem(EntityIndex, seen: OpID, slot: LocalVersion)
    case deleteSection(EntityIndex, seen: OpID, items: [(EntityIndex, OpID)])
    case setItemValue(EntityIndex, Data)
    case setSectionValue(EntityIndex, Data)
    /// `alive`: whether the target is a live item or a section (what its record's count needs).
    case writeFields(RecordTarget, FieldWrites, alive: Bool)
    case insertItemWithFields(section: EntityIndex, left: LocalVersion, right: LocalVersion, value: Data, fields: FieldWrites)
    case insertSectionWithFields(left: LocalVersion, right: LocalVersion, value: Data, fields: FieldWrites)
}

extension ListDocument {
    // MARK: Validation (reads only)

    /// Checks every reference of `op` against this document and resolves it. All causal
    /// dependencies of `op` must already be applied. Changes nothing.
    ///
    /// Every route that applies an operation checks it with these functions (the item insert run
    /// route with ``itemInsertReferences(_:section:origins:valueSize:)``).
    @inline(__always)
    func resolve(_ op: ListOperation) throws(ApplyError) -> ResolvedOperation {
        func bad(_ why: String) -> ApplyError { .malformed(op.id, why) }
        func section(_ id: SectionID) throws(ApplyError) -> EntityIndex { try sectionReference(id, by: op.id) }
        func item(_ id: ItemID) throws(ApplyError) -> EntityIndex {
            try checkPast(id.opID, by: op.id)
            guard let i = itemEntity(id) else { throw bad("unknown \(id)") }
            return i
        }
        func origins(_ o: ListOperation.Origins, sequence: SequenceIndex) throws(ApplyError) -> (LocalVersion, LocalVersion) {
            var hint = SlotStore.IDHint()
            let (left, right) = try originReferences(o, sequence: sequence, by: op.id, hint: &hint)
            if !originsInOrder(left, right) { throw bad("origins \(o.after!) and \(o.before!) are out of order") }
            return (left, right)
        }
        /// `seen` must be a slot placing entity `e` of the given level; returns the id of the
        /// operation that made it (the position write it stands for) and the slot's local version.
        func seenSlot(_ seen: SlotID, entity e: EntityIndex, inItems: Bool) throws(ApplyError) -> (OpID, LocalVersion) {
            try checkPast(seen.opID, by: op.id)
            guard let lv = slots.lv(of: seen.opID), slots.entity(of: lv) == e,
                  slots.sequence(of: lv).isItems == inItems else {
                throw bad("\(seen) is not a position of the deleted entity")
            }
            return (writeID(ofSlot: lv), lv)
        }

        switch op.kind {
        case let .insertSection(o, value):
            try checkValue(value.count, of: op.id)
            let (l, r) = try origins(o, sequence: .sections)
            return .insertSection(left: l, right: r, value: value)
        case let .insertItem(sectionID, o, value):
            var noContext = RunContext()
            let (s, l, r) = try itemInsertReferences(op.id, section: sectionID, origins: o, valueSize: value.count,
                                                     context: &noContext)
            if !originsInOrder(l, r) { throw bad("origins \(o.after!) and \(o.before!) are out of order") }
            return .insertItem(section: s, left: l, right: r, value: value)
        case let .moveSection(sectionID, o):
            let s = try section(sectionID)
            let (l, r) = try origins(o, sequence: .sections)
            return .moveSection(s, left: l, right: r)
        case let .moveItems(ids, sectionID, o):
            if ids.isEmpty { throw bad("moves no items") }
            if ids.count == 1 {
                let i = try item(ids[0])
                let s = try section(sectionID)
                let (l, r) = try origins(o, sequence: .items(s))
                return .moveItem(i, section: s, left: l, right: r)
            }
            if ids.count > 1 && Set(ids).count != ids.count { throw bad("moves an item twice") }
            var list: [EntityIndex] = []
            list.reserveCapacity(ids.count)
            for id in ids { list.append(try item(id)) }
            let s = try section(sectionID)
            let (l, r) = try origins(o, sequence: .items(s))
            return .moveItems(list, section: s, left: l, right: r)
        case let .deleteItem(id, seen):
            let i = try item(id)
            let (w, lv) = try seenSlot(seen, entity: i, inItems: true)
            return .deleteItem(i, seen: w, slot: lv)
        case let .deleteSection(id, seen, seenItems):
            let s = try section(id)
            let w = try seenSlot(seen, entity: s, inItems: false).0
            var list: [(EntityIndex, OpID)] = []
            list.reserveCapacity(seenItems.count)
            for record in seenItems {
                let i = try item(record.item)
                list.append((i, try seenSlot(record.seen, entity: i, inItems: true).0))
            }
            return .deleteSection(s, seen: w, items: list)
        case let .setItemValue(id, value):
            try checkValue(value.count, of: op.id)
            return .setItemValue(try item(id), value)
        case let .setSectionValue(id, value):
            try checkValue(value.count, of: op.id)
            return .setSectionValue(try section(id), value)
        case let .writeFields(target, writes):
            var alive = true
            switch target {
            case .item(let id): alive = items.isAlive(try item(id))
            case .section(let id): _ = try section(id)
            }
            if let problem = Self.problem(with: writes, maxValueSize: maxValueSize) {
                throw bad(problem.name.isEmpty ? problem.why : "field \"\(problem.name)\": \(problem.why)")
            }
            for w in writes.writes {
                if w.replaces != .none { try checkPast(w.replaces, by: op.id) }
                for s in w.seen { try checkPast(s, by: op.id) }
            }
            if let why = textProblem(writes, of: target) { throw bad(why) }
            return .writeFields(target, writes, alive: alive)
        case let .insertItemWithFields(sectionID, o, value, writes):
            var noContext = RunContext()
            let (s, l, r) = try itemInsertReferences(op.id, section: sectionID, origins: o, valueSize: value.count,
                                                     context: &noContext)
            if !originsInOrder(l, r) { throw bad("origins \(o.after!) and \(o.before!) are out of order") }
            if let why = insertFieldsProblem(writes) { throw bad(why) }
            return .insertItemWithFields(section: s, left: l, right: r, value: value, fields: writes)
        case let .insertSectionWithFields(o, value, writes):
            try checkValue(value.count, of: op.id)
            let (l, r) = try origins(o, sequence: .sections)
            if let why = insertFieldsProblem(writes) { throw bad(why) }
            return .insertSectionWithFields(left: l, right: r, value: value, fields: writes)
        }
    }

    /// The references of an item insert `id` into `section` between `origins`, with a value of
    /// `valueSize` bytes: the value is within ``maxValueSize``, the section and the origin slots
    /// are known and before `id`, and the slots are in that section's sequence. Returns the
    /// section's index and the origins' local versions (``LocalVersion/none``: none). Whether the origins are in
    /// order is ``originsInOrder(_:_:)``, apart (the run route knows it without a search when
    /// they are adjacent). `context` holds the section looked up last (a section's index never
    /// changes once known: sections are never forgotten). Without `checkingSequences`, the
    /// origins' sequences are left to the caller (the run route reads them from the trees: a
    /// slot's tree is its sequence's).
    ///
    /// - Complexity: O(log n).
    @inline(__always)
    func itemInsertReferences(_ id: OpID, section: SectionID, origins: ListOperation.Origins, valueSize: Int,
                              checkingSequences: Bool = true, context: inout RunContext)
        throws(ApplyError) -> (section: EntityIndex, left: LocalVersion, right: LocalVersion) {
        try checkValue(valueSize, of: id)
        let s: EntityIndex
        if let known = context.section, known.id == section {
            try checkPast(section.opID, by: id)
            s = known.entity
        } else {
            s = try sectionReference(section, by: id)
            context.section = (section, s)
        }
        let sequence: SequenceIndex? = checkingSequences ? .items(s) : nil
        let (left, right) = try originReferences(origins, sequence: sequence, by: id, hint: &context.ids)
        return (s, left, right)
    }

    /// Whether origin slots `left` and `right` (``LocalVersion/none``: none) are in order in their sequence.
    ///
    /// - Complexity: O(log n).
    @inline(__always)
    func originsInOrder(_ left: LocalVersion, _ right: LocalVersion) -> Bool {
        !left.exists || !right.exists || forest.isBefore(left, right)
    }

    @inline(__always)
    private func checkValue(_ size: Int, of id: OpID) throws(ApplyError) {
        if size > maxValueSize { throw .valueTooLarge(id, size: size, limit: maxValueSize) }
    }

    @inline(__always)
    private func checkPast(_ reference: OpID, by id: OpID) throws(ApplyError) {
        if reference.counter >= id.counter { throw .malformed(id, "refers to \(reference), which is not before it") }
    }

    @inline(__always)
    private func sectionReference(_ section: SectionID, by id: OpID) throws(ApplyError) -> EntityIndex {
        try checkPast(section.opID, by: id)
        guard let s = sectionEntity(section) else { throw .malformed(id, "unknown \(section)") }
        return s
    }

    /// The origin slots of `origins` (``LocalVersion/none``: none), known, before `id` and in `sequence`
    /// (nil: in any).
    @inline(__always)
    private func originReferences(_ origins: ListOperation.Origins, sequence: SequenceIndex?, by id: OpID,
                                  hint: inout SlotStore.IDHint) throws(ApplyError) -> (LocalVersion, LocalVersion) {
        (try originSlot(origins.after, sequence: sequence, by: id, hint: &hint),
         try originSlot(origins.before, sequence: sequence, by: id, hint: &hint))
    }

    /// The local version of origin slot `slot` (``LocalVersion/none``: none), known, before `id` and in
    /// `sequence` (nil: in any; looked up with `hint`, ``SlotStore/lv(of:hint:)``).
    @inline(__always)
    private func originSlot(_ slot: SlotID?, sequence: SequenceIndex?, by id: OpID,
                            hint: inout SlotStore.IDHint) throws(ApplyError) -> LocalVersion {
        guard let slot else { return .none }
        try checkPast(slot.opID, by: id)
        guard let lv = slots.lv(of: slot.opID, hint: &hint) else { throw .malformed(id, "unknown \(slot)") }
        if let sequence, slots.sequence(of: lv) != sequence { throw .malformed(id, "\(slot) is in another sequence") }
        return lv
    }

    // MARK: Committing (never fails)

    /// Applies a resolved operation to the state, the log, the clock and the frontier. `hint` is
    /// where a local insert goes, found when its origins were (see
    /// ``SlotForest/localInsertion(_:at:)``); nil means: run the integration rule.
    mutating func commit(_ op: ListOperation, _ resolved: ResolvedOperation, hint: EditHint? = nil) {
        switch resolved {
        case let .insertSection(left, right, value):
            insertSection(op.id, left: left, right: right, value: value, hint: hint)

        case let .insertSectionWithFields(left, right, value, writes):
            insertSection(op.id, left: left, right: right, value: value, hint: hint)
            applyCounting(writes, of: op.id, to: .section(SectionID(op.id)), alive: true)

        case let .insertItem(s, left, right, value):
            insertItem(op.id, section: s, left: left, right: right, value: value, hint: hint)

        case let .insertItemWithFields(s, left, right, value, writes):
            insertItem(op.id, section: s, left: left, right: right, value: value, hint: hint)
            applyCounting(writes, of: op.id, to: .item(ItemID(op.id)), alive: true)

        case let .moveSection(s, left, right):
            let lv = newSlot(op.id, left: left, right: right, sequence: .sections, entity: s)
            if op.id > sections.winnerID(s) {
                forest.setVisible(sections.rows[s.int].winner, false)
                sections.setWinner(lv, write: op.id, of: s)
                sectionShown[s.int] = isSectionVisible(s)
                place(lv, id: op.id, left: left, right: right, sequence: .sections, visible: sectionShown[s.int])
            } else {
                place(lv, id: op.id, left: left, right: right, sequence: .sections, visible: false)
            }

        case let .moveItem(i, s, left, right):
            let lv = newSlot(op.id, left: left, right: right, sequence: .items(s), entity: i)
            let from = placeMove(of: i, slot: lv, id: op.id, write: op.id, left: left, right: right, section: s,
                                 hint: hint)
            refreshSection(s)
            if from.exists { refreshSection(from) }

        case let .moveItems(list, s, left, right):
            var previous = left
            var emptied: [EntityIndex] = []
            for (k, i) in list.enumerated() {
                let id = op.id.advanced(by: k)
                let lv = newSlot(id, left: previous, right: right, sequence: .items(s), entity: i)
                let from = placeMove(of: i, slot: lv, id: id, write: op.id, left: previous, right: right, section: s,
                                     hint: nil)
                if from.exists { emptied.append(from) }
                previous = lv
            }
            refreshSection(s)
            for from in emptied { refreshSection(from) }

        case let .deleteItem(i, seen, _):
            kill(i, seen: seen, at: hint?.slot)

        case let .deleteSection(s, seen, list):
            for (i, w) in list { kill(i, seen: w) }
            if seen > sections.deleted(s) { sections.setDeleted(seen, of: s) }
            refreshSection(s)

        case let .setItemValue(i, value):
            if op.id > items.valueWrite(i) {
                // A dead item's value is reclaimable: its change counts.
                if !items.isAlive(i) { byteAccount.dead += value.count - items.valueLength(i) }
                items.setValue(value, write: op.id, of: i)
            }

        case let .setSectionValue(s, value):
            if op.id > sections.valueWrite(s) { sections.setValue(value, write: op.id, of: s) }

        case let .writeFields(target, writes, alive):
            applyCounting(writes, of: op.id, to: target, alive: alive)
        }
        record(op, resolved)
    }

    /// A new section `id` between `left` and `right`.
    @inline(__always)
    private mutating func insertSection(_ id: OpID, left: LocalVersion, right: LocalVersion, value: Data, hint: EditHint?) {
        let s = EntityIndex(sections.count)
        let lv = newSlot(id, left: left, right: right, sequence: .sections, entity: s)
        _ = sections.append(id: id, slot: lv, value: value, section: .none)
        _ = forest.addTree()
        sectionShown.append(true)
        place(lv, id: id, left: left, right: right, sequence: .sections, visible: true, hint: hint)
    }

    /// A new item `id` in section `s` between `left` and `right`.
    @inline(__always)
    private mutating func insertItem(_ id: OpID, section s: EntityIndex, left: LocalVersion, right: LocalVersion, value: Data,
                                     hint: EditHint?) {
        let i = EntityIndex(items.count)
        let lv = newSlot(id, left: left, right: right, sequence: .items(s), entity: i)
        _ = items.append(id: id, slot: lv, value: value, section: s)
        place(lv, id: id, left: left, right: right, sequence: .items(s), visible: true, hint: hint)
        refreshSection(s)
    }

    /// Why the first fields of a new item or section are not ones an insert may carry: the
    /// limits of any field write, and, since its author saw nothing of the record, nothing
    /// replaced or reset, and no text edit (a new record's text is typed after the insert).
    func insertFieldsProblem(_ writes: FieldWrites) -> String? {
        if let problem = Self.problem(with: writes, maxValueSize: maxValueSize) {
            return problem.name.isEmpty ? problem.why : "field \"\(problem.name)\": \(problem.why)"
        }
        for w in writes.writes where w.replaces != .none || !w.seen.isEmpty {
            return "field \"\(w.name)\": an insert's field replaces or resets nothing"
        }
        if writes.insertedCharacters > 0 || writes.writes.contains(where: { if case .text = $0.change { true } else { false } }) {
            return "a new record's fields hold no text edit"
        }
        return nil
    }

    /// The id of the operation that made slot `lv`: its position write.
    ///
    /// - Complexity: O(log m) for m operations of the slot's replica.
    @inline(__always)
    func writeID(ofSlot lv: LocalVersion) -> OpID {
        let id = slots.id(of: lv)
        if let write = log.operationID(containing: id) { return write }
        // A slot kept by compaction whose operation's record is gone (a multi-item move's).
        if let floor = compaction, !floor.writes.isEmpty, let write = floor.writes[id] { return write }
        return id
    }

    /// Logs an applied operation and advances the clock, the version vector and the frontier.
    private mutating func record(_ op: ListOperation, _ resolved: ResolvedOperation) {
        advance(to: op.lastID, deps: op.deps)
        appendToLog(op, resolved)
    }

    /// The clock, version vector and frontier after applying an operation whose last id is `last`
    /// and whose dependencies are `deps`.
    @inline(__always)
    mutating func advance(to last: OpID, deps: Frontier) {
        if last.counter > clock { clock = last.counter }
        versionVector.observe(last)
        if deps == currentFrontier {
            currentFrontier.set(last)
        } else {
            for d in deps { currentFrontier.remove(d) }
            currentFrontier.insert(last)
        }
    }

    /// Puts slot `lv` (id `id`) of item `i`, made by the move operation `write`, into the sequence of
    /// section `s`. When `write` wins the item's position register, the item moves there: the new
    /// slot shows if the item is alive and its old slot is hidden; else the new slot stays hidden.
    /// The new slot is placed before the old one is hidden, so a `hint` found before the operation
    /// still holds. Returns the section the live item left when it is another one, else ``EntityIndex/none``.
    @inline(__always)
    private mutating func placeMove(of i: EntityIndex, slot lv: LocalVersion, id: OpID, write: OpID, left: LocalVersion, right: LocalVersion,
                                    section s: EntityIndex, hint: EditHint?) -> EntityIndex {
        guard write > items.winnerID(i) else {
            place(lv, id: id, left: left, right: right, sequence: .items(s), visible: false, hint: hint)
            return .none
        }
        let wasAlive = items.isAlive(i)
        let old = items.rows[i.int].winner, from = items.rows[i.int].section
        items.setWinner(lv, write: write, of: i)
        items.rows[i.int].section = s
        place(lv, id: id, left: left, right: right, sequence: .items(s), visible: items.isAlive(i), hint: hint)
        if wasAlive != items.isAlive(i) { noteItem(i, died: wasAlive) }   // a move that wins over a delete it had not seen
        guard wasAlive else { return .none }
        forest.setVisible(old, false)
        return from != s ? from : .none
    }

    /// Raises the delete record of item `i` to `seen`; hides it when that kills it. `c` is the
    /// cursor of its winning slot when a local delete found it (visible), else nil.
    private mutating func kill(_ i: EntityIndex, seen: OpID, at c: SlotForest.Cursor? = nil) {
        guard raiseDeleted(i, seen: seen) else { return }
        let row = items.rows[i.int]
        if let c {
            assert(forest.lv(at: c) == row.winner && forest.entry(c).isVisible, "the cursor is not the item's slot")
            forest.flip(at: c, count: 1)
        } else {
            forest.setVisible(row.winner, false)
        }
        refreshSection(row.section)
    }

    /// Raises the delete record of item `i` to `seen` and returns whether that killed it (the
    /// caller then hides its winning slot and refreshes its section).
    @inline(__always)
    mutating func raiseDeleted(_ i: EntityIndex, seen: OpID) -> Bool {
        guard seen > items.deleted(i) else { return false }
        let wasAlive = items.isAlive(i)
        items.setDeleted(seen, of: i)
        guard wasAlive && !items.isAlive(i) else { return false }
        noteItem(i, died: true)
        return true
    }

    /// Shows or hides section `s` by the rule of §3.5.
    mutating func refreshSection(_ s: EntityIndex) {
        let show = isSectionVisible(s)
        if sectionShown[s.int] == show { return }
        sectionShown[s.int] = show
        forest.setVisible(sections.rows[s.int].winner, show)
    }

    private mutating func newSlot(_ id: OpID, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex, entity: EntityIndex) -> LocalVersion {
        forest.addSlots(1)
        return slots.append(id: id, left: left, right: right, sequence: sequence, entity: entity)
    }

    /// Puts slot `lv` into its sequence by the integration rule (or where `hint` says, for a local
    /// insert).
    private mutating func place(_ lv: LocalVersion, id: OpID, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex, visible: Bool,
                                hint: EditHint? = nil) {
        let t = tree(ofSequence: sequence)
        let after: SlotForest.Cursor?
        if case let .after(c)? = hint {
            after = c
        } else {
            after = forest.placement(t, id: id, left: left, right: right, slots: slots,
                                     tieBreak: variant != .noTieBreak)
        }
        forest.insert(t, lv, visible: visible, after: after)
    }
}

/// What a local edit found while resolving its index path, so that applying it searches no more.
enum EditHint {
    /// An insert or move goes right after this slot (nil: at the start), its left origin, which is
    /// adjacent to its right origin, so the integration rule has nothing to scan.
    case after(SlotForest.Cursor?)
    /// A delete hides the slot at this cursor (its item's winning slot).
    case slot(SlotForest.Cursor)

    /// The cursor of a delete's slot, else nil.
    var slot: SlotForest.Cursor? {
        if case let .slot(c) = self { return c }
        return nil
    }
}
