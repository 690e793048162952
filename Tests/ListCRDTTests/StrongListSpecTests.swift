import Foundation
import Testing
@_spi(Testing) @testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// The strong list specification, checked on random multi-replica histories: there is one order of
/// all the items ever inserted into a section such that every replica, at every moment, shows the
/// items of that section in that order. Moves are outside the specification (a move puts its item
/// somewhere else on purpose), so items that any move operation of the history names, in a
/// one-item or a multi-item move, are left out; the same for sections and section moves.
///
/// How it is checked. After every step (a local edit, or a remote operation that was applied), the
/// view of the replica that changed is recorded: the visible sections in order, and the visible
/// items of each section in order. At the end, with the whole history known, moved identities are
/// removed from every view and each view contributes its "before" relation. One order consistent
/// with every view exists exactly when the union of those relations has no cycle. A view's
/// relation is the transitive closure of its consecutive pairs, so the union of all pairs has a
/// cycle exactly when the union of the consecutive pairs has one: the graph keeps one edge per
/// consecutive pair (O(n) per view, not O(n²)) and is searched for a cycle. Looking only for a
/// pair shown both ways would not be enough: `[x y z]` then `[z x]` (y deleted) reverses no
/// consecutive pair, but x → y → z → x is a cycle (`cycleWithoutReversedPair` below).
///
/// Besides the order, every view must show each identity at most once and every unmoved item in
/// the section it was inserted into, and at the end every replica must have converged.
///
/// Replay one seed: `LISTSYNC_SPEC_SEED=123 swift test --filter StrongListSpecTests`.
/// More seeds: `LISTSYNC_SPEC_SEEDS=5000`.
@Suite(.cpuHeavy) struct StrongListSpecTests {
    static let environment = ProcessInfo.processInfo.environment

    static var seeds: [UInt64] {
        if let one = environment["LISTSYNC_SPEC_SEED"].flatMap(UInt64.init) { return [one] }
        return Array(0..<(environment["LISTSYNC_SPEC_SEEDS"].flatMap(UInt64.init) ?? 250))
    }

    @Test("250 seeds × 3–5 replicas × 100 edits: every view fits one order of the unmoved items")
    func strongListSpec() {
        var failures = 0
        var total = StrongListSpec.Stats()
        for seed in Self.seeds where failures < 3 {
            let result = StrongListSpec.run(seed: seed)
            total.add(result.stats)
            if !result.problems.isEmpty {
                failures += 1
                let replay = "LISTSYNC_SPEC_SEED=\(seed) swift test --filter StrongListSpecTests"
                print("strong list spec FAILED, seed \(seed) (replay: \(replay))")
                let problems = result.problems.map(\.description).joined(separator: "\n")
                Issue.record("strong list spec, seed \(seed):\n\(problems)\nreplay: \(replay)")
            }
        }
        print("strong list spec: \(Self.seeds.count) seeds, \(total)")
        // The histories exercise every kind of edit and delivery (checked on a full run only: one
        // replayed seed may lack some).
        guard Self.seeds.count >= 50 else { return }
        #expect(total.itemMoves > 0 && total.crossSectionMoves > 0 && total.multiMoves > 0)
        #expect(total.sectionInserts > 0 && total.sectionMoves > 0 && total.sectionDeletes > 0)
        #expect(total.buffered > 0 && total.duplicates > 0, "out-of-order and duplicate deliveries happen")
        #expect(total.itemEdges > 0 && total.sectionEdges > 0, "views give order observations")
    }

    @Test("250 seeds with compaction at the stable points: every view, before and after each compaction, fits one order of the unmoved items")
    func strongListSpecWithCompaction() {
        var failures = 0
        var total = StrongListSpec.Stats()
        for seed in Self.seeds where failures < 3 {
            let result = StrongListSpec.run(seed: seed, compactPercent: 50)
            total.add(result.stats)
            if !result.problems.isEmpty {
                failures += 1
                let problems = result.problems.map(\.description).joined(separator: "\n")
                Issue.record("strong list spec with compaction, seed \(seed):\n\(problems)\nreplay: LISTSYNC_SPEC_SEED=\(seed) swift test --filter StrongListSpecTests")
            }
        }
        print("strong list spec with compaction: \(Self.seeds.count) seeds, \(total)")
        guard Self.seeds.count >= 50 else { return }
        #expect(total.compactions > 0 && total.itemEdges > 0 && total.buffered > 0)
    }

    /// Test power: the engine without the id tie-break (concurrent inserts at one place go in
    /// arrival order) must break the order property of items itself, not only the final
    /// convergence check (nor only the order of sections).
    @Test("test power: the item order property catches an engine that orders concurrent inserts by arrival")
    func catchesNoTieBreak() {
        var firstItemOrder: (seed: UInt64, problems: [StrongListSpec.Problem])?
        var tally: [StrongListSpec.Problem.Kind: Int] = [:]
        var beforeAnyError = 0   // seeds whose item order broke before any operation was refused
        let seeds = UInt64(0)..<30
        for seed in seeds {
            let result = StrongListSpec.run(seed: seed, variant: .noTieBreak)
            let problems = result.problems
            for kind in Set(problems.map(\.kind)) { tally[kind, default: 0] += 1 }
            if problems.contains(where: { $0.kind == .itemOrder }),
               result.firstErrorStep == nil || result.itemOrderBeforeError != nil { beforeAnyError += 1 }
            if firstItemOrder == nil, problems.contains(where: { $0.kind == .itemOrder }) { firstItemOrder = (seed, problems) }
        }
        let kinds: [StrongListSpec.Problem.Kind] = [.itemOrder, .sectionOrder, .convergence, .error, .identity, .section]
        print("test power: noTieBreak over \(seeds.count) seeds, seeds with each problem: "
              + kinds.map { "\($0) \(tally[$0, default: 0])" }.joined(separator: ", ")
              + "; item order broken before any refused operation in \(beforeAnyError)")
        guard let found = firstItemOrder else {
            Issue.record("noTieBreak never broke the order of items in \(seeds.count) seeds")
            return
        }
        print("test power: noTieBreak first breaks the item order at seed \(found.seed):\n  "
              + (found.problems.first { $0.kind == .itemOrder }?.description ?? ""))
        #expect(tally[.itemOrder, default: 0] * 2 >= seeds.count, "noTieBreak breaks the item order in most seeds")
        // Replicas that disagree on the order end up refusing operations whose origins are out of
        // order for them; the order must already be broken in the views before that.
        #expect(beforeAnyError > 0, "noTieBreak breaks the item order before any operation is refused")
    }

    /// An engine that cannot wait for missing operations breaks convergence, not the order of
    /// unmoved identities; the check sees it as refused operations or replicas that differ. (The
    /// third broken variant, `.moveAsDeleteAndInsert`, duplicates values under new identities: no
    /// identity is shown twice and no unmoved order changes, so it is for the value checks of the
    /// simulator's oracle, not this file.)
    @Test("test power: an engine without a causal buffer is caught (refused operations, no convergence)")
    func catchesNoCausalBuffer() {
        var caught = 0
        let seeds = UInt64(0)..<30
        for seed in seeds {
            let kinds = Set(StrongListSpec.run(seed: seed, variant: .noCausalBuffer).problems.map(\.kind))
            if kinds.contains(.convergence) || kinds.contains(.error) { caught += 1 }
        }
        #expect(caught * 2 >= seeds.count, "caught in \(caught) of \(seeds.count) seeds")
    }

    /// The check itself: a cycle through three views' pairs, with no pair ever shown both ways.
    @Test("a cycle is found even when no pair is shown both ways")
    func cycleWithoutReversedPair() {
        var graph = OrderGraph<String>()
        graph.add(["x", "y", "z"], witness: 0)
        graph.add(["z", "x"], witness: 1)
        #expect(graph.cycle()?.count == 3)
        var fine = OrderGraph<String>()
        fine.add(["x", "y", "z"], witness: 0)
        fine.add(["x", "z"], witness: 1)
        fine.add(["w", "x"], witness: 2)
        #expect(fine.cycle() == nil)
    }
}

/// The multi-replica histories and the check.
enum StrongListSpec {
    struct Problem: CustomStringConvertible {
        enum Kind: Hashable { case error, identity, section, itemOrder, sectionOrder, convergence }
        var kind: Kind
        var detail: String
        var description: String { "\(kind): \(detail)" }
    }

    struct Stats: CustomStringConvertible {
        var edits = 0, itemMoves = 0, crossSectionMoves = 0, multiMoves = 0
        var sectionInserts = 0, sectionMoves = 0, sectionDeletes = 0, itemDeletes = 0
        var deliveries = 0, buffered = 0, duplicates = 0, views = 0
        var items = 0, movedItems = 0, itemEdges = 0, sectionEdges = 0
        /// Replicas compacted at stable points (``run(seed:variant:edits:compactPercent:)``).
        var compactions = 0

        mutating func add(_ o: Stats) {
            edits += o.edits; itemMoves += o.itemMoves; crossSectionMoves += o.crossSectionMoves
            multiMoves += o.multiMoves; sectionInserts += o.sectionInserts; sectionMoves += o.sectionMoves
            sectionDeletes += o.sectionDeletes; itemDeletes += o.itemDeletes; deliveries += o.deliveries
            buffered += o.buffered; duplicates += o.duplicates; views += o.views; items += o.items
            movedItems += o.movedItems; itemEdges += o.itemEdges; sectionEdges += o.sectionEdges
            compactions += o.compactions
        }

        var description: String {
            "\(edits) edits (\(itemMoves) one-item moves, \(multiMoves) multi-item moves, \(crossSectionMoves) of them across sections; "
                + "\(itemDeletes) item deletes; sections: \(sectionInserts) inserts, \(sectionMoves) moves, "
                + "\(sectionDeletes) deletes), \(deliveries) deliveries (\(buffered) buffered, \(duplicates) duplicates), "
                + "\(views) views; \(items) items of which \(movedItems) moved; "
                + "\(itemEdges) item and \(sectionEdges) section order edges, \(compactions) compactions"
        }
    }

    struct Result {
        var stats = Stats()
        var problems: [Problem] = []
        /// The step of the first refused operation or failed edit, if any.
        var firstErrorStep: Int?
        /// The item order checked on the views recorded before ``firstErrorStep`` only: nil when
        /// they fit one order (or there was no error).
        var itemOrderBeforeError: Problem?
    }

    /// Fewer moves than the simulator's default mix (45%), so that more items stay unmoved and take
    /// part in the property; still every kind of edit.
    static let workload: Workload = {
        var w = Workload()
        w.insertSection = 5
        w.insertItem = 40
        w.deleteItem = 12
        w.deleteSection = 3
        w.moveItem = 14
        w.moveSection = 6
        w.moveItems = 8
        w.setItemValue = 6
        w.setSectionValue = 6
        w.maxSections = 6
        return w
    }()

    /// One history: 3–5 replicas (by seed) make `editCount` random edits in all; every operation is
    /// sent to every other replica, 15% of the sends twice, and the sends are delivered in random
    /// order (so often before their causes: the receiver buffers them). Then everything left is
    /// delivered, any operation a replica still lacks is sent by anti-entropy, and the views are
    /// checked.
    ///
    /// With `compactPercent` > 0, whenever the network is empty (every replica holds every
    /// operation: a quiescent stable point, Docs/Semantics.md §7), each replica compacts with that
    /// chance before the next edit; the views before and after must fit the same one order.
    static func run(seed: UInt64, variant: EngineVariant = .correct, edits editCount: Int = 100, compactPercent: Int = 0) -> Result {
        var rng = SplitMix64(seed: seed &* 0x2545_F491_4F6C_DD1D &+ 0x5EC)
        let n = 3 + Int(seed % 3)
        var docs = (0..<n).map { r -> ListDocument in
            var d = ListDocument(replica: ReplicaID(UInt64(r) + 1))
            d.variant = variant
            return d
        }
        var result = Result()
        var views = ViewLog()
        var history: [ListOperation] = []
        var inFlight: [(op: ListOperation, to: Int)] = []
        var step = 0
        var counter = 0

        func observe(_ r: Int) {
            result.stats.views += 1
            if let why = views.record(docs[r].snapshot(), replica: r, step: step) {
                report(Problem(kind: .identity, detail: why))
            }
        }
        // A refused operation or a failed edit is a problem, but the history goes on (without it),
        // so that the views still say whether the order broke: a broken engine's first symptom may
        // be a refusal caused by replicas that disagree on the order.
        func report(_ problem: Problem) {
            if !result.problems.contains(where: { $0.kind == problem.kind }) { result.problems.append(problem) }
        }
        func deliver(_ op: ListOperation, to r: Int) {
            step += 1
            result.stats.deliveries += 1
            do {
                let outcome = try docs[r].receive(op)
                if outcome.applied > 0 { observe(r) }
                result.stats.buffered += outcome.buffered
                result.stats.duplicates += outcome.duplicates
            } catch {
                if result.firstErrorStep == nil { result.firstErrorStep = step }
                report(Problem(kind: .error, detail: "replica \(r + 1) at step \(step) refused \(op): \(error)"))
            }
        }

        // How busy the network is, by seed: the replicas make an edit on 20%, 35% or 50% of the
        // steps and deliver one send on the others (with 3–5 replicas an edit makes 2–4 sends, so
        // the network fills up and much of the history is concurrent). A delivery takes one of
        // the 8 oldest sends half the time, any send the other half: out of causal order often,
        // but not always.
        let editPercent = [20, 35, 50][Int(seed / 3 % 3)]
        func deliverNext() {
            let k = rng.chance(50) ? rng.below(min(8, inFlight.count)) : rng.below(inFlight.count)
            let m = inFlight.remove(at: k)
            deliver(m.op, to: m.to)
        }

        while result.stats.edits < editCount || (!inFlight.isEmpty && rng.chance(50)) {
            if compactPercent > 0, inFlight.isEmpty, docs.allSatisfy({ $0.version == docs[0].version }) {
                for r in 0..<n where rng.chance(compactPercent) {
                    do {
                        try docs[r].compact(stable: docs[r].version)
                        result.stats.compactions += 1
                        observe(r)
                    } catch {
                        report(Problem(kind: .error, detail: "replica \(r + 1) at step \(step) did not compact: \(error)"))
                    }
                }
            }
            if result.stats.edits < editCount && (inFlight.isEmpty || rng.chance(editPercent)) {
                let r = rng.below(n)
                let edit = RandomEdit.random(for: docs[r], workload: workload, using: &rng) {
                    counter += 1
                    return "v\(counter)"
                }
                step += 1
                let before = docs[r].operationCount
                let made: [ListOperation]
                result.stats.edits += 1
                do {
                    try edit.apply(to: &docs[r])
                    made = try docs[r].operations(from: before)
                } catch {
                    if result.firstErrorStep == nil { result.firstErrorStep = step }
                    report(Problem(kind: .error, detail: "replica \(r + 1) at step \(step): edit \(edit) threw \(error)"))
                    continue
                }
                tally(edit, into: &result.stats)
                if made.isEmpty { continue }   // a move to where the item already is
                observe(r)
                history += made
                for op in made {
                    for to in 0..<n where to != r {
                        inFlight.append((op, to))
                        if rng.chance(15) { inFlight.append((op, to)) }   // duplicated
                    }
                }
            } else if !inFlight.isEmpty {
                deliverNext()
            }
        }
        while !inFlight.isEmpty { deliverNext() }
        // Nothing is lost in transit, so this sends nothing to a correct engine; an engine that
        // drops operations gets them again here.
        for a in 0..<n {
            for b in 0..<n where a != b {
                var missing = docs[a].operations(since: docs[b].version)
                missing.shuffle(using: &rng)
                for op in missing { deliver(op, to: b) }
            }
        }

        result.problems += check(views, history: history, stats: &result.stats)
        if let cutoff = result.firstErrorStep {
            var ignored = Stats()
            result.itemOrderBeforeError = check(views, history: history, before: cutoff, stats: &ignored)
                .first { $0.kind == .itemOrder }
        }
        if let why = converged(docs, history: history, checkInvariants: variant == .correct) {
            result.problems.append(Problem(kind: .convergence, detail: why))
        }
        return result
    }

    static func tally(_ edit: RandomEdit, into stats: inout Stats) {
        switch edit {
        case let .moveItem(a, b):
            stats.itemMoves += 1
            if a.section != b.section { stats.crossSectionMoves += 1 }
        case let .moveItems(list, to):
            stats.multiMoves += 1
            if list.contains(where: { $0.section != to.section }) { stats.crossSectionMoves += 1 }
        case .moveSection: stats.sectionMoves += 1
        case .insertSection: stats.sectionInserts += 1
        case .deleteSection: stats.sectionDeletes += 1
        case .deleteItem: stats.itemDeletes += 1
        default: break
        }
    }

    /// The order property on the views recorded before step `cutoff`, given the whole history
    /// (which says what moved).
    static func check(_ views: ViewLog, history: [ListOperation], before cutoff: Int = .max,
                      stats: inout Stats) -> [Problem] {
        var movedItems = Set<ItemID>(), movedSections = Set<SectionID>()
        var home: [ItemID: SectionID] = [:]
        for op in history {
            switch op.kind {
            case let .moveItems(list, _, _): movedItems.formUnion(list)
            case let .moveSection(s, _): movedSections.insert(s)
            case let .insertItem(s, _, _): home[ItemID(op.id)] = s
            default: break
            }
        }
        stats.items += home.count
        stats.movedItems += movedItems.count
        var problems: [Problem] = []

        var itemGraph = OrderGraph<ItemID>()
        for (k, v) in views.itemViews.enumerated() where v.step < cutoff {
            let kept = v.items.filter { !movedItems.contains($0) }
            if problems.isEmpty, let stray = kept.first(where: { home[$0] != v.section }) {
                problems.append(Problem(kind: .section, detail:
                    "unmoved \(stray) (inserted into \(home[stray].map { "\($0)" } ?? "?")) shown in \(v.section) "
                        + "by replica \(v.replica + 1) at step \(v.step)"))
            }
            itemGraph.add(kept, witness: k)
        }
        stats.itemEdges += itemGraph.edgeCount
        if let cycle = itemGraph.cycle() {
            let lines = cycle.map { e -> String in
                let v = views.itemViews[itemGraph.witness(of: e)!]
                return "\(e.from.opID) before \(e.to.opID): replica \(v.replica + 1) at step \(v.step) shows "
                    + "\(v.section) as \(show(v.items, moved: movedItems))"
            }
            problems.append(Problem(kind: .itemOrder, detail: "no order of the unmoved items fits every view:\n  "
                                        + lines.joined(separator: "\n  ")))
        }

        var sectionGraph = OrderGraph<SectionID>()
        for (k, v) in views.sectionViews.enumerated() where v.step < cutoff {
            sectionGraph.add(v.sections.filter { !movedSections.contains($0) }, witness: k)
        }
        stats.sectionEdges += sectionGraph.edgeCount
        if let cycle = sectionGraph.cycle() {
            let lines = cycle.map { e -> String in
                let v = views.sectionViews[sectionGraph.witness(of: e)!]
                return "\(e.from.opID) before \(e.to.opID): replica \(v.replica + 1) at step \(v.step) shows sections "
                    + "\(v.sections.map { "\($0.opID)\(movedSections.contains($0) ? "(moved)" : "")" })"
            }
            problems.append(Problem(kind: .sectionOrder, detail: "no order of the unmoved sections fits every view:\n  "
                                        + lines.joined(separator: "\n  ")))
        }
        return problems
    }

    static func show(_ items: [ItemID], moved: Set<ItemID>) -> String {
        "[" + items.map { "\($0.opID)\(moved.contains($0) ? "(moved)" : "")" }.joined(separator: " ") + "]"
    }

    /// Nothing pending, the same snapshot and state everywhere, each identity shown once, and what
    /// shows is what the operations say (``SemanticsOracle``); nil when all holds.
    static func converged(_ docs: [ListDocument], history: [ListOperation], checkInvariants: Bool) -> String? {
        let reference = docs[0].snapshot()
        let state = docs[0].encodedState()
        for (r, doc) in docs.enumerated() {
            if doc.pendingCount != 0 { return "replica \(r + 1) still has \(doc.pendingCount) pending" }
            if checkInvariants {
                do { try doc.checkInvariants() } catch { return "replica \(r + 1): \(error)" }
            }
            if doc.snapshot() != reference { return "replica \(r + 1) shows \(doc.rows), replica 1 \(docs[0].rows)" }
            // Replicas compacted at different floors keep different dead slots: their states are
            // compared by what they show (above); at the same floor, byte for byte.
            if doc.historyFloor == docs[0].historyFloor, doc.encodedState() != state { return "replica \(r + 1) encodes a different state" }
        }
        let items = reference.sections.flatMap { $0.items.map(\.id) }
        if Set(items).count != items.count { return "an item is shown twice" }
        if Set(reference.sections.map(\.id)).count != reference.sections.count { return "a section is shown twice" }
        return SemanticsOracle(history).check(reference)
    }
}

/// Every distinct view recorded during a history, with the first replica and step that showed it.
struct ViewLog {
    struct ItemView: Hashable {
        var section: SectionID
        var items: [ItemID]
    }
    struct SectionView: Hashable {
        var sections: [SectionID]
    }

    private(set) var itemViews: [(section: SectionID, items: [ItemID], replica: Int, step: Int)] = []
    private(set) var sectionViews: [(sections: [SectionID], replica: Int, step: Int)] = []
    private var seenItemViews = Set<ItemView>()
    private var seenSectionViews = Set<SectionView>()

    /// Records a replica's view; returns why it is wrong if it shows an identity twice.
    mutating func record(_ snapshot: ListSnapshot, replica: Int, step: Int) -> String? {
        let sections = snapshot.sections.map(\.id)
        if seenSectionViews.insert(SectionView(sections: sections)).inserted {
            sectionViews.append((sections, replica, step))
        }
        var problem: String?
        if Set(sections).count != sections.count {
            problem = "replica \(replica + 1) at step \(step) shows a section twice: \(sections)"
        }
        var shown = Set<ItemID>()
        for section in snapshot.sections {
            let items = section.items.map(\.id)
            for i in items where !shown.insert(i).inserted && problem == nil {
                problem = "replica \(replica + 1) at step \(step) shows \(i) twice"
            }
            if seenItemViews.insert(ItemView(section: section.id, items: items)).inserted {
                itemViews.append((section.id, items, replica, step))
            }
        }
        return problem
    }
}

/// The union of the "before" relations of many views, kept as one edge per consecutive pair of a
/// view (their transitive closure is the view's whole relation), each edge with the first view
/// that showed it.
struct OrderGraph<ID: Hashable> {
    struct Edge: Hashable {
        var from: ID
        var to: ID
    }

    private var successors: [ID: [ID]] = [:]
    private var nodes: [ID] = []   // the nodes with successors, in first-seen order (deterministic search)
    private var witnesses: [Edge: Int] = [:]

    var edgeCount: Int { witnesses.count }

    /// Adds the order of one view; `witness` identifies the view.
    ///
    /// - Complexity: O(k) for k identities.
    mutating func add(_ order: [ID], witness: Int) {
        guard order.count > 1 else { return }
        for k in 0..<(order.count - 1) {
            let e = Edge(from: order[k], to: order[k + 1])
            guard witnesses[e] == nil else { continue }
            witnesses[e] = witness
            if successors[e.from] == nil { nodes.append(e.from) }
            successors[e.from, default: []].append(e.to)
        }
    }

    /// The view that first showed `e`.
    func witness(of e: Edge) -> Int? { witnesses[e] }

    /// The edges of a cycle, if the union has one (then no order fits every view); nil when one
    /// order fits them all.
    ///
    /// - Complexity: O(V + E), iterative depth-first search.
    func cycle() -> [Edge]? {
        var state: [ID: Bool] = [:]   // false: on the current path, true: finished
        for root in nodes where state[root] == nil {
            var path: [(node: ID, next: Int)] = [(root, 0)]
            state[root] = false
            while let top = path.last {
                let succ = successors[top.node] ?? []
                if top.next < succ.count {
                    path[path.count - 1].next += 1
                    let s = succ[top.next]
                    switch state[s] {
                    case nil:
                        state[s] = false
                        path.append((s, 0))
                    case false?:
                        let start = path.firstIndex { $0.node == s }!
                        let ring = path[start...].map(\.node) + [s]
                        return zip(ring, ring.dropFirst()).map { Edge(from: $0, to: $1) }
                    case true?:
                        break
                    }
                } else {
                    state[top.node] = true
                    path.removeLast()
                }
            }
        }
        return nil
    }
}
