/// What a fast path did.
enum FastPath: Equatable {
    /// It applied this many operations (at least one), exactly as the general path would have.
    case applied(Int)
    /// It does not hold here: nothing changed, and the general path takes the operation.
    case declined
}

/// Received item inserts in one step: the run route (README.md in this folder).
extension ListDocument {
    /// Whether the fast paths may run: the one gate every fast path passes (tests turn
    /// ``fastPaths`` off to compare with the general path; the deliberately broken variants of
    /// ``EngineVariant`` take the general path only).
    @inline(__always) var fastPathsEnabled: Bool { fastPaths && variant == .correct }

    /// Applies operation `k` of `source` and the operations after it that continue it, in one
    /// step, when it is an item insert, item delete or text splice the run routes take
    /// (``applyInsertRun(_:from:context:)``, ``applyDeleteRun(_:from:context:)``,
    /// ``applyTextRun(_:from:)``); else declines.
    ///
    /// - Complexity: O(n + log N) for a run of n operations in a document of N slots, plus
    ///   O(k log N) for k concurrent slots between the first insert's origins.
    @inline(__always)
    mutating func applyRun<S: RunSource>(_ source: S, from k: Int, context: inout RunContext) -> FastPath {
        // Received operations only (this replica's own never arrive as new), and none waiting:
        // an operation of the run could be a buffered one's dependency.
        guard fastPathsEnabled, buffer.count == 0, source.id(k).replica != replica else { return .declined }
        // Operations that may predate the compaction floor take the general path, which refuses them.
        if let floor = compaction {
            // Usually the operation depends on the one before it of its replica, made after the floor.
            let id = source.id(k)
            let previous = OpID(counter: id.counter &- 1, replica: id.replica)
            let afterFloor = id.counter > 1 && !floor.version.contains(previous) && source.dependsOnlyOn(k, previous)
            if !afterFloor && isBeforeFloor(source.operation(k)) { return .declined }
        }
        switch source.runKind(k) {
        case .itemInsert: return applyInsertRun(source, from: k, context: &context)
        case .itemDelete: return applyDeleteRun(source, from: k, context: &context)
        case .fieldWrite:
            // A decoded text run is read in place (`DecodedTextRuns.swift`); operations received
            // one by one are checked one by one.
            if let run = source as? DecodedTextRun { return applyDecodedTextRun(run, from: k) }
            return applyTextRun(source, from: k)
        case .other: return .declined
        }
    }

    /// Applies the item insert `k` of `source` and the ones after it that continue it as a typed
    /// run, in one step, with the general path's effect operation by operation; declines (changing
    /// nothing) when operation `k` would not apply at once.
    ///
    /// Two ways in:
    /// - operation `k` continues the item insert applied last (``RunSource/typedRun(from:after:section:right:maxValueSize:)``):
    ///   every check of the general path holds by construction, and the integration rule puts
    ///   each slot right after the one before (the only slots that could sort between are ones
    ///   whose left origin is a slot of the run, which no applied operation has yet);
    /// - else operation `k` passes the general path's checks (``screen(_:)``'s for a new
    ///   operation, and ``itemInsertReferences(_:section:origins:valueSize:context:)``, the validator
    ///   ``resolve(_:)`` uses) and goes where the integration rule puts it; the operations that
    ///   continue it follow it.
    /// Either way the run's slots are one slot run, one tree entry and one log record (extending
    /// the last one when the first operation continues it, as logging it alone would).
    ///
    /// - Complexity: O(n + log N) for a run of n operations in a document of N slots, plus
    ///   O(k log N) for k concurrent slots between the first operation's origins.
    @inline(__always)
    mutating func applyInsertRun<S: RunSource>(_ source: S, from k: Int, context: inout RunContext) -> FastPath {
        let id = source.id(k)
        if k > 0 || S.firstMayContinue, let last = log.lastItemInsert, last.id.replica == id.replica,
           last.id.counter &+ 1 == id.counter {
            let s = slots.sequence(of: last.slot).section
            let right = slots.origins(of: last.slot).right
            let n = source.typedRun(from: k, after: last.id, section: SectionID(sections.rows[s.int].id),
                                    right: right.exists ? SlotID(slots.id(of: right)) : nil, maxValueSize: maxValueSize)
            if n > 0 {
                let e = EntityIndex(items.count)
                source.appendItems(from: k, count: n, to: &items, slot: LocalVersion(slots.count), section: s)
                commitInsertRun(after: last, count: n, section: s, entity: e, context: &context)
                return .applied(n)
            }
        }
        return startInsertRun(source, from: k, context: &context)
    }

    /// The second way into ``applyInsertRun(_:from:context:)``: operation `k` checked as a whole.
    @inline(__always)
    private mutating func startInsertRun<S: RunSource>(_ source: S, from k: Int, context: inout RunContext) -> FastPath {
        guard let insert = source.itemInsert(k) else { return .declined }
        let id = source.id(k)
        // What `screen` checks of a new operation whose dependencies are applied.
        guard id.counter > versionVector[id.replica], id.counter <= OpID.maxCounter else { return .declined }
        for d in insert.deps {
            guard d.counter < id.counter, versionVector.contains(d), !leftBranch(id, d) else { return .declined }
        }
        guard let (s, left, right) = try? itemInsertReferences(id, section: insert.section, origins: insert.origins,
                                                                valueSize: insert.valueSize, checkingSequences: false,
                                                                context: &context)
        else { return .declined }
        // Where the first slot goes: right after the left origin when the right origin follows it
        // (nothing sits between them: the usual case, and then they are in order), else where
        // the integration rule puts it. The origins must be in the section's item sequence, as
        // `itemInsertReferences` checks it when asked: read from the trees (every slot is in its
        // sequence's tree), the left origin's from the leaf `locate` reads anyway, the right
        // origin's from its following the left one (else from its slot), so that neither slot's
        // run, each a cache miss away, is read.
        let t = tree(ofSequence: .items(s))
        if context.order != nil, context.order!.isPending(t) || forest.count(t) == 0 {
            // In a load into an empty document: the order of a tree the forest holds nothing of
            // is kept aside while each run goes right after its left origin.
            if left.exists && slots.sequence(of: left) != .items(s) { return .declined }
            let following = left.exists ? context.order!.next(left) : context.order!.head(t)
            if following == right {
                return applyInsertRunAside(source, from: k, tree: t, section: s, left: left, right: right,
                                           following: following, insert: insert, context: &context)
            }
            // Something sits between the origins: the integration rule reads the trees.
            settle(&context)
        }
        let leftCursor = left.exists ? forest.locate(left) : nil
        if let c = leftCursor, forest.tree(of: c) != t { return .declined }
        let following = leftCursor.map { forest.next($0) } ?? forest.first(t)
        let adjacent = following.map { forest.lv(at: $0) == right } ?? !right.exists
        if !adjacent {
            if right.exists && slots.sequence(of: right) != .items(s) { return .declined }
            if !originsInOrder(left, right) { return .declined }
        }

        let n = 1 + source.typedRun(from: k + 1, after: id, section: insert.section, right: insert.origins.before,
                                    maxValueSize: maxValueSize)
        // `commit` of the first operation, with the others' slots and rows added at once.
        let lv = LocalVersion(slots.count), e = EntityIndex(items.count)
        source.appendItems(from: k, count: n, to: &items, slot: lv, section: s)
        _ = slots.appendRun(id: id, count: n, left: left, right: right, sequence: .items(s), entity: e)
        // The forest learns of the slots as it places them (announced first only for `placement`).
        if !adjacent { forest.addSlots(n) }
        let after = adjacent ? leftCursor
                             : forest.placement(t, id: id, left: left, right: right, slots: slots)
        forest.insert(t, lv, count: n, visible: true, after: after)
        refreshSection(s)
        // What `record` does for the first operation and `advance` for the others: the clock,
        // version and frontier end as after the last one alone (its id is the greatest, and each
        // later operation replaces the one before in the frontier).
        advance(to: id.advanced(by: n - 1), deps: insert.deps)
        log.append(id: id, deps: insert.deps, kind: .insertItem, span: 1, payload: lv)
        if n > 1 { log.extendInsertRun(by: n - 1) }
        return .applied(n)
    }

    /// ``startInsertRun(_:from:context:)`` for a run whose first operation was checked, into tree
    /// `t` (section `s`) whose order is kept aside (``RunContext/order``), with nothing between
    /// its origins there (`following`, the slot after `left`, is `right`): the run goes right
    /// after `left` in the list. The section is refreshed when the order is put into the trees
    /// (``settle(_:)``): until then nothing reads it.
    ///
    /// - Complexity: O(n) for a run of n operations.
    private mutating func applyInsertRunAside<S: RunSource>(
        _ source: S, from k: Int, tree t: Int32, section s: EntityIndex, left: LocalVersion, right: LocalVersion,
        following: LocalVersion, insert: (deps: Frontier, section: SectionID, origins: ListOperation.Origins, valueSize: Int),
        context: inout RunContext
    ) -> FastPath {
        let id = source.id(k), deps = insert.deps
        let n = 1 + source.typedRun(from: k + 1, after: id, section: insert.section, right: insert.origins.before,
                                    maxValueSize: maxValueSize)
        let lv = LocalVersion(slots.count), e = EntityIndex(items.count)
        source.appendItems(from: k, count: n, to: &items, slot: lv, section: s)
        _ = slots.appendRun(id: id, count: n, left: left, right: right, sequence: .items(s), entity: e)
        forest.addSlots(n)
        if !context.order!.isPending(t) { context.order!.begin(t) }
        context.order!.insert(t, lv, count: n, after: left, following: following)
        advance(to: id.advanced(by: n - 1), deps: deps)
        log.append(id: id, deps: deps, kind: .insertItem, span: 1, payload: lv)
        if n > 1 { log.extendInsertRun(by: n - 1) }
        return .applied(n)
    }

    /// Applies `n` item inserts that continue the item insert applied last (`last`: its id and
    /// slot) as a typed run (ids `last.id + 1 …`, each depending on exactly the one before, right
    /// after its slot, with `last`'s right origin, in the items of section `s`), whose entity rows
    /// `e ..< e + n` are appended already (their slots are the next local versions): the slots
    /// (one slot run), one tree entry, the section, the clock, version vector and frontier, and
    /// the log record, which it extends.
    ///
    /// - Complexity: O(n + log N) in a document of N slots.
    private mutating func commitInsertRun(after last: (id: OpID, slot: LocalVersion), count n: Int, section s: EntityIndex,
                                          entity e: EntityIndex, context: inout RunContext) {
        let lv = LocalVersion(slots.count)
        let right = slots.origins(of: last.slot).right
        _ = slots.appendRun(id: last.id.advanced(by: 1), count: n, left: last.slot, right: right, sequence: .items(s), entity: e)
        let t = tree(ofSequence: .items(s))
        if context.order?.isPending(t) == true {
            forest.addSlots(n)
            context.order!.insert(t, lv, count: n, after: last.slot, following: context.order!.next(last.slot))
        } else {
            let after = forest.locate(last.slot)  // the insert appends the slots' leaf (SlotForest.setLeaf)
            forest.insert(t, lv, count: n, visible: true, after: after)
            refreshSection(s)
        }
        advance(from: last.id, to: last.id.advanced(by: n))
        log.extendInsertRun(by: n)
    }

    /// The clock, version vector and frontier after a run of operations by one author, each
    /// depending on exactly the one before, the first on `first` (applied last), up to `last`:
    /// what recording each of them one at a time would do.
    @inline(__always)
    mutating func advance(from first: OpID, to last: OpID) {
        if last.counter > clock { clock = last.counter }
        versionVector.observe(last)
        if currentFrontier.isOnly(first) {
            currentFrontier.set(last)
        } else {
            currentFrontier.remove(first)
            currentFrontier.insert(last)
        }
    }
}
