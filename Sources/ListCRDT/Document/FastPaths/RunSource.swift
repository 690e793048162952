import Foundation

/// Received operations as the run fast paths read them (README.md in this folder): an array of
/// operations (``OperationList``: a received batch, or one operation) or one run of a decoded
/// batch (``DecodedInsertRun``, ``DecodedDeleteRun``: read in place, never expanded into
/// ``ListOperation``s). The insert and delete run routes (``ListDocument/applyInsertRun(_:from:context:)``,
/// ``ListDocument/applyDeleteRun(_:from:context:)``) are written once against this protocol.
///
/// Indices are `0 ..< count`. Every query is O(1) unless it says otherwise.
protocol RunSource {
    /// The number of operations.
    var count: Int { get }
    /// Operation `k`, built whole (for the general path).
    func operation(_ k: Int) -> ListOperation
    /// The id of operation `k`.
    func id(_ k: Int) -> OpID
    /// Whether operation `k` depends on exactly `{id}`.
    func dependsOnlyOn(_ k: Int, _ id: OpID) -> Bool
    /// Which run fast path could take operation `k`.
    func runKind(_ k: Int) -> RunKind
    /// Whether operation 0 may continue the item insert applied last (an operation received
    /// alone may; a decoded insert run practically never does, since the encoder makes such an
    /// insert part of the run before, and ``ListDocument/applyInsertRun(_:from:context:)`` takes
    /// it the other way then). Likewise a decoded delete run's first operation practically never
    /// deletes the item next to the one the delete applied last deleted: the delete run route
    /// then looks its slot up at once (``ListDocument/applyDeleteRun(_:from:context:)``).
    static var firstMayContinue: Bool { get }

    /// Operation `k` when it is an item insert: its dependencies, section, origins and value size.
    func itemInsert(_ k: Int) -> (deps: Frontier, section: SectionID, origins: ListOperation.Origins, valueSize: Int)?
    /// How many operations from `k` on continue a typed run whose previous operation is `previous`
    /// (the item insert applied last, in `section`, with right origin `right`): each the next id
    /// of `previous`'s author, depending on exactly the one before, an item insert in `section`
    /// right after the one before's slot and before `right`, with a value of at most
    /// `maxValueSize` bytes. O(n) for the n counted.
    func typedRun(from k: Int, after previous: OpID, section: SectionID, right: SlotID?, maxValueSize: Int) -> Int
    /// Appends the entity rows and values of the items of operations `k ..< k + n` (which
    /// ``typedRun(from:after:section:right:maxValueSize:)`` counted, or the first of which was
    /// checked as a whole), placed at slots `lv ...` of section `s`. O(n) amortized.
    func appendItems(from k: Int, count n: Int, to items: inout EntityTable, slot lv: LocalVersion, section s: EntityIndex)

    /// The item operation `k` deletes, when it is an item delete that saw the item's insert slot
    /// and comes after that insert (its counter is greater); else nil.
    func deletedItem(_ k: Int) -> OpID?
    /// Whether operation `k` (k ≥ 1) continues operation `k - 1` as a delete run: the next id of
    /// the same author, depending on exactly it.
    func continuesDeletes(_ k: Int) -> Bool
    /// Whether each operation after the first continues the one before as a delete run
    /// (``continuesDeletes(_:)`` holds) and deletes the item next to the one before deleted (the
    /// next or previous id of the same author), in the direction ``deleteStep(from:)`` says: a
    /// decoded delete run, by construction (``ListDocument/applyConsecutiveDeletes(_:from:step:previous:lookUpFirst:startsRecord:after:context:)``).
    static var deletesConsecutiveItems: Bool { get }
    /// Which way the items of the delete run from `k` go, +1 (forward deletes) or -1
    /// (backspaces): where the next item's slot is looked for first. A guess: a wrong one costs a
    /// lookup, never a different result.
    func deleteStep(from k: Int) -> Int32
}

/// Which run fast path could take an operation.
enum RunKind {
    case itemInsert, itemDelete
    /// A field write: a text run's first splice, perhaps (``ListDocument/applyTextRun(_:from:)``
    /// checks; only an array of operations holds them).
    case fieldWrite
    case other
}

// MARK: - An array of operations

/// Operations as received one by one (``ListDocument/receive(_:)-([ListOperation])``, or one
/// operation in a `CollectionOfOne`): every continuation is checked operation by operation.
struct OperationList<Base: RandomAccessCollection<ListOperation>>: RunSource where Base.Index == Int {
    let ops: Base
    static var firstMayContinue: Bool { true }
    static var deletesConsecutiveItems: Bool { false }

    @inline(__always) var count: Int { ops.count }
    @inline(__always) func operation(_ k: Int) -> ListOperation { ops[ops.startIndex + k] }
    @inline(__always) func id(_ k: Int) -> OpID { operation(k).id }
    @inline(__always) func dependsOnlyOn(_ k: Int, _ id: OpID) -> Bool { operation(k).deps.isOnly(id) }
    @inline(__always) func runKind(_ k: Int) -> RunKind {
        switch operation(k).kind {
        case .insertItem: .itemInsert
        case .deleteItem: .itemDelete
        case .writeFields: .fieldWrite
        default: .other
        }
    }

    @inline(__always)
    func itemInsert(_ k: Int) -> (deps: Frontier, section: SectionID, origins: ListOperation.Origins, valueSize: Int)? {
        let op = operation(k)
        guard case let .insertItem(section, origins, value) = op.kind else { return nil }
        return (op.deps, section, origins, value.count)
    }

    @inline(__always)
    func typedRun(from k: Int, after previous: OpID, section: SectionID, right: SlotID?, maxValueSize: Int) -> Int {
        var previous = previous
        var end = k
        while end < count {
            let op = operation(end)
            guard op.id.replica == previous.replica, op.id.counter == previous.counter &+ 1,
                  op.id.counter <= OpID.maxCounter, op.deps.isOnly(previous),
                  case let .insertItem(s, origins, value) = op.kind, s == section,
                  origins.after == SlotID(previous), origins.before == right, value.count <= maxValueSize
            else { break }
            previous = op.id
            end += 1
        }
        return end - k
    }

    @inline(__always)
    func appendItems(from k: Int, count n: Int, to items: inout EntityTable, slot lv: LocalVersion, section s: EntityIndex) {
        for j in 0 ..< n {
            guard case let .insertItem(_, _, value) = operation(k + j).kind else { preconditionFailure("not an insert") }
            _ = items.append(id: id(k + j), slot: lv.advanced(by: j), value: value, section: s)
        }
    }

    @inline(__always)
    func deletedItem(_ k: Int) -> OpID? {
        let op = operation(k)
        guard case let .deleteItem(item, seen) = op.kind, seen.opID == item.opID,
              item.opID.counter < op.id.counter, op.id.counter <= OpID.maxCounter else { return nil }
        return item.opID
    }

    @inline(__always)
    func continuesDeletes(_ k: Int) -> Bool {
        let before = operation(k - 1).id, op = operation(k)
        return op.id.replica == before.replica && op.id.counter == before.counter &+ 1 && op.deps.isOnly(before)
    }

    func deleteStep(from k: Int) -> Int32 {
        guard k + 1 < count, let a = deletedItem(k), let b = deletedItem(k + 1), a.replica == b.replica,
              b.counter &+ 1 == a.counter else { return 1 }
        return -1
    }
}

// MARK: - Runs of a decoded batch

/// Insert run `r` of a decoded batch: each operation after the first continues the one before by
/// construction (the decoder built it so), so only the first is checked and the values' sizes.
struct DecodedInsertRun: RunSource {
    /// The batch, valid while the source is (``ListDocument/apply(_:strict:)`` makes both).
    let view: DecodedBatch.View
    let r: Int
    let run: DecodedBatch.InsertRun

    init(_ view: DecodedBatch.View, _ r: Int) { (self.view, self.r, run) = (view, r, view.batch.pointee.insertRuns[r]) }


    static var firstMayContinue: Bool { false }
    static var deletesConsecutiveItems: Bool { false }
    @inline(__always) var count: Int { run.count }
    func operation(_ k: Int) -> ListOperation { view.batch.pointee.operation(insertRun: r, k) }
    @inline(__always) func runKind(_ k: Int) -> RunKind { .itemInsert }
    @inline(__always) func id(_ k: Int) -> OpID { run.id.advanced(by: k) }
    @inline(__always) func dependsOnlyOn(_ k: Int, _ id: OpID) -> Bool {
        k == 0 ? run.deps.isOnly(id) : id == self.id(k - 1)
    }

    @inline(__always)
    func itemInsert(_ k: Int) -> (deps: Frontier, section: SectionID, origins: ListOperation.Origins, valueSize: Int)? {
        let origins = k == 0 ? run.origins : .init(after: SlotID(id(k - 1)), before: run.origins.before)
        return (k == 0 ? view.batch.pointee.frontier(run.deps) : Frontier(only: id(k - 1)), run.section, origins, valueSize(k))
    }

    @inline(__always) private func valueSize(_ k: Int) -> Int {
        run.oneByte ? 1 : view.valueRanges[run.values + k].count
    }

    @inline(__always)
    func typedRun(from k: Int, after previous: OpID, section: SectionID, right: SlotID?, maxValueSize: Int) -> Int {
        guard k < count, id(k) == previous.advanced(by: 1), id(k).counter <= OpID.maxCounter else { return 0 }
        // The section and the right origin, for every k: when k > 0, the insert applied last has
        // the id of the run's operation k - 1 but may not be it (that one was refused as an
        // equivocation, and a known operation of another section has its id).
        guard run.section == section, run.origins.before == right else { return 0 }
        if k == 0 {
            // The run's first operation: only the decoder's checks hold; the run's relation to
            // the insert applied last is checked here.
            guard run.deps.isOnly(previous), run.origins.after == SlotID(previous) else { return 0 }
        }
        // Operations k + 1 … continue operation k by construction; the values are checked.
        if run.oneByte { return maxValueSize >= 1 ? count - k : 0 }
        for j in k ..< count where valueSize(j) > maxValueSize { return j - k }
        return count - k
    }

    @inline(__always)
    func appendItems(from k: Int, count n: Int, to items: inout EntityTable, slot lv: LocalVersion, section s: EntityIndex) {
        let id = run.id.advanced(by: k), start = run.values + k
        if run.oneByte {
            items.appendRun(id: id, slot: lv, section: s, values: view.oneByteValues(start ..< start + n))
        } else {
            items.appendRun(id: id, slot: lv, section: s, values: view.rangeValues(start ..< start + n))
        }
    }

    func deletedItem(_ k: Int) -> OpID? { nil }
    func continuesDeletes(_ k: Int) -> Bool { false }
    func deleteStep(from k: Int) -> Int32 { 1 }
}

/// Delete run `r` of a decoded batch: its operations continue each other by construction, each
/// deletes the next (or previous) item as seen at its insert slot.
struct DecodedDeleteRun: RunSource, MakesNoItems {
    /// The batch, valid while the source is (``ListDocument/apply(_:strict:)`` makes both).
    let view: DecodedBatch.View
    let r: Int
    let run: DecodedBatch.DeleteRun

    init(_ view: DecodedBatch.View, _ r: Int) { (self.view, self.r, run) = (view, r, view.batch.pointee.deleteRuns[r]) }


    static var firstMayContinue: Bool { false }
    static var deletesConsecutiveItems: Bool { true }
    @inline(__always) var count: Int { run.count }
    func operation(_ k: Int) -> ListOperation { view.batch.pointee.operation(deleteRun: r, k) }
    @inline(__always) func runKind(_ k: Int) -> RunKind { .itemDelete }
    @inline(__always) func id(_ k: Int) -> OpID { run.id.advanced(by: k) }
    @inline(__always) func dependsOnlyOn(_ k: Int, _ id: OpID) -> Bool {
        k == 0 ? run.deps.isOnly(id) : id == self.id(k - 1)
    }


    @inline(__always)
    func deletedItem(_ k: Int) -> OpID? {
        let item = run.item(k), id = self.id(k)
        return item.counter < id.counter && id.counter <= OpID.maxCounter ? item : nil
    }
    @inline(__always) func continuesDeletes(_ k: Int) -> Bool { true }
    @inline(__always) func deleteStep(from k: Int) -> Int32 { run.descending ? -1 : 1 }
}

/// A run source none of whose operations inserts an item (a decoded delete run or text run): the
/// insert run route's queries answer "none".
protocol MakesNoItems: RunSource {}

extension MakesNoItems {
    func itemInsert(_ k: Int) -> (deps: Frontier, section: SectionID, origins: ListOperation.Origins, valueSize: Int)? { nil }
    func typedRun(from k: Int, after previous: OpID, section: SectionID, right: SlotID?, maxValueSize: Int) -> Int { 0 }
    func appendItems(from k: Int, count n: Int, to items: inout EntityTable, slot lv: LocalVersion, section s: EntityIndex) {
        preconditionFailure("a run that makes no items adds none")
    }
}
