import Foundation

/// A sectioned, reorderable list that replicas edit concurrently and that always converges.
///
/// The document is a list of sections, each a list of items (the shape of a `UITableView` with
/// sections). Every section and item has a stable identity and a value. Edits made here return an
/// ``ListOperation`` to send to the other replicas; operations from them are applied with
/// ``receive(_:)``. Replicas that have applied the same operations show the same document, in any
/// delivery order (see `Docs/Semantics.md`).
///
/// `ListDocument` is a value type: copying it is O(1) and copies share storage until one is changed.
/// It does no I/O and reads no clock or random source.
public struct ListDocument: Sendable {
    /// The replica this document makes operations as.
    public let replica: ReplicaID
    /// The largest value, in bytes, that an edit or a received operation may carry.
    public let maxValueSize: Int

    // Clock and history.
    var clock: UInt64 = 0
    var versionVector = VersionVector()
    var currentFrontier = Frontier()
    var log = OpLog()
    var buffer = PendingBuffer()
    var rejected: [ListOperation] = []
    var dropped: [(ListOperation, ApplyError)] = []
    /// Per replica, the greatest counter of an operation refused here as made before the
    /// compaction floor (or as depending on one): what waits for one of them is dropped
    /// (`Compaction/ListDocument+RefusedCauses.swift`). Empty for a document never compacted.
    var refusedBeforeFloor: [ReplicaID: UInt64] = [:]
    /// A refusal noted while the causal buffer was being woken: what waits for it is dropped
    /// once the wake is over.
    var refusalsToSweep = false
    /// What compaction left of the history (`Compaction/`): nil for a document never compacted.
    var compaction: CompactionFloor?
    /// Whether the next local operation's counter skips one: set by a re-sync that left
    /// operations of this replica out (``clockPast(_:)``), so that the first edit after it
    /// jumps past its causes' counters and every copy can tell what it skipped
    /// (`Compaction/ListDocument+SkippedCounters.swift`). No fast path reads it: while it is
    /// set, the clock is past every counter of this replica the document holds (the re-sync set
    /// it at least to the lacked operations'), so no local run's `clock ==` check passes, and
    /// the next edit goes through `make`, which skips and clears it.
    var skipsCounter = false
    /// Whether the fast paths may run (tests turn it off to compare them with the general path;
    /// the one gate is ``fastPathsEnabled``, Document/FastPaths/README.md).
    var fastPaths = true
    /// The typed run this replica is making, while nothing else happened since its last insert
    /// (see `FastPaths/ListDocument+LocalRuns.swift`).
    var localInsertRun: LocalInsertRun?
    /// The delete run this replica is making, while nothing else happened since its last item
    /// delete (see `FastPaths/ListDocument+LocalRuns.swift`).
    var localDeleteRun: LocalDeleteRun?
    /// The splices of one text field this replica is making, while nothing else happened since
    /// the last one (see `FastPaths/ListDocument+TextRuns.swift`); ``LocalTextRun/none`` before
    /// the first. Not an optional: a keystroke reads and writes it in place (through an optional,
    /// each access tested it again, and moved out and back it was copied whole).
    var textRun = LocalTextRun.none

    // State.
    var slots = SlotStore()
    /// Every sequence's order: tree ``sectionTree`` for the sections, tree `s + 1` for the items of
    /// section `s` (see ``tree(ofSequence:)``).
    var forest = SlotForest()
    var sections = EntityTable()
    /// Whether each section is visible now (§3.5), kept by `refreshSection`.
    var sectionShown: [Bool] = []
    var items = EntityTable()
    /// Every section's and item's fields (`Records/`, Docs/Semantics.md §8).
    var records = RecordStore()
    /// What compaction would free, kept as operations apply (``reclaimableBytes``).
    var byteAccount = ByteAccount()

    /// Where field writes read the time for their hybrid logical clock (nil: the logical clock
    /// alone; ``WallClock/system`` makes the later edit win, Docs/Semantics.md §8.2). The engine
    /// reads no clock it was not handed.
    public var wallClock: WallClock?

    /// A deliberately broken engine, for tests that show the simulator catches such bugs.
    /// Always ``EngineVariant/correct`` outside those tests.
    @_spi(Testing) public var variant = EngineVariant.correct

    /// The default ``maxValueSize``: 64 KiB.
    public static let defaultMaxValueSize = 64 * 1024

    /// An empty document that edits as `replica`.
    public init(replica: ReplicaID, maxValueSize: Int = ListDocument.defaultMaxValueSize) {
        self.replica = replica
        self.maxValueSize = maxValueSize
        _ = forest.addTree()
    }

    // MARK: Version

    /// For each replica, the greatest operation counter applied here.
    public var version: VersionVector { versionVector }
    /// The operations applied last: what the next local operation will depend on.
    public var frontier: Frontier { currentFrontier }
    /// Number of operations applied.
    public var operationCount: Int { log.count }
    /// Number of received operations waiting for their causal dependencies.
    public var pendingCount: Int { buffer.count }
    /// The bytes those operations count for against ``pendingLimits`` (``ListOperation/bufferFootprint``).
    public var pendingBytes: Int { buffer.bytes }
    /// How many operations, and bytes, may wait for their dependencies at once. An operation that
    /// would pass a limit is refused with ``ApplyError/bufferFull(_:_:)`` and changes nothing.
    /// Lowering the limits keeps what waits already.
    public var pendingLimits = PendingLimits.default
    /// How many times a waiting chain of operations (PendingBuffer.swift: one replica's run, or
    /// one operation) was looked at again since this document was made (each is looked at once
    /// per dependency its first operation lacked; tests check the buffer stays linear).
    @_spi(Testing) public var pendingLooks: Int { buffer.looks }
    /// Operations refused because their id was known with other content (SEMANTICS §3.9).
    public var rejectedOperations: [ListOperation] { rejected }
    /// Buffered operations that turned out malformed once their dependencies arrived, with the
    /// reason; they were dropped (the error could not be thrown to whoever sent them earlier).
    public var droppedOperations: [(operation: ListOperation, error: ApplyError)] { dropped.map { ($0.0, $0.1) } }

    // MARK: Sections

    /// Number of visible sections.
    public var sectionCount: Int { forest.visibleCount(Self.sectionTree) }

    /// The identities of the visible sections, in order.
    ///
    /// - Complexity: O(s) for s sections.
    public var sectionIDs: [SectionID] {
        var out: [SectionID] = []
        out.reserveCapacity(sectionCount)
        forEachVisible(in: Self.sectionTree) { out.append(SectionID(sections.rows[slots.entity(of: $0).int].id)) }
        return out
    }

    /// The identity of the section at `index`.
    ///
    /// - Complexity: O(log s).
    public func sectionID(at index: Int) throws(ListError) -> SectionID {
        SectionID(sections.rows[try sectionIndex(at: index).int].id)
    }

    /// The position of a visible section, or nil if it is unknown or not visible.
    ///
    /// - Complexity: O(log s).
    public func index(of section: SectionID) -> Int? {
        guard let s = sectionEntity(section), isSectionVisible(s) else { return nil }
        return visiblePosition(ofSlot: sections.rows[s.int].winner)
    }

    /// The value of a section (visible or not), or nil if the section is unknown.
    public func value(of section: SectionID) -> Data? {
        sectionEntity(section).map { sections.value($0) }
    }

    // MARK: Items

    /// Number of visible items in the section at `section`.
    ///
    /// - Complexity: O(log s).
    public func itemCount(inSection section: Int) throws(ListError) -> Int {
        visibleItemCount(try sectionIndex(at: section))
    }

    /// Number of visible items in all sections.
    ///
    /// - Complexity: O(s) for s sections.
    public var totalItemCount: Int {
        var n = 0
        forEachVisible(in: Self.sectionTree) { n += visibleItemCount(slots.entity(of: $0)) }
        return n
    }

    /// The identities of the visible items of the section at `section`, in order.
    ///
    /// - Complexity: O(k + log s) for k items.
    public func itemIDs(inSection section: Int) throws(ListError) -> [ItemID] {
        let s = try sectionIndex(at: section)
        var out: [ItemID] = []
        out.reserveCapacity(visibleItemCount(s))
        forEachVisible(in: tree(ofSequence: .items(s))) { out.append(ItemID(items.rows[slots.entity(of: $0).int].id)) }
        return out
    }

    /// The identity of the item at `indexPath`.
    ///
    /// - Complexity: O(log n).
    public func itemID(at indexPath: IndexPath) throws(ListError) -> ItemID {
        ItemID(items.rows[try itemIndex(at: indexPath).int].id)
    }

    /// Where a visible item is, or nil if it is unknown or deleted.
    ///
    /// - Complexity: O(log n).
    public func indexPath(of item: ItemID) -> IndexPath? {
        guard let i = itemEntity(item), items.isAlive(i) else { return nil }
        let s = items.rows[i.int].section
        return IndexPath(item: visiblePosition(ofSlot: items.rows[i.int].winner),
                         section: visiblePosition(ofSlot: sections.rows[s.int].winner))
    }

    /// The value of an item (visible or not), or nil if the item is unknown or its value was
    /// collected: a deleted item of a compacted document whose value reads empty (§7: the values
    /// of dead items are collected; undo then brings a deleted item back with the value it
    /// remembers, not an empty one).
    public func value(of item: ItemID) -> Data? {
        guard let i = itemEntity(item) else { return nil }
        let value = items.value(i)
        if value.isEmpty, historyFloor != nil, !items.isAlive(i) { return nil }
        return value
    }

    /// Whether the item is known and visible.
    public func contains(_ item: ItemID) -> Bool {
        itemEntity(item).map { items.isAlive($0) } ?? false
    }

    /// Whether the section is known and visible.
    public func contains(_ section: SectionID) -> Bool {
        sectionEntity(section).map { isSectionVisible($0) } ?? false
    }

    // MARK: Internal lookups

    /// The dense index of a known section.
    @inline(__always)
    func sectionEntity(_ id: SectionID) -> EntityIndex? {
        guard let lv = slots.lv(of: id.opID) else { return nil }
        let e = slots.entity(of: lv)
        guard slots.sequence(of: lv) == .sections, sections.rows[e.int].id == id.opID else { return nil }
        return e
    }

    /// The dense index of a known item.
    @inline(__always)
    func itemEntity(_ id: ItemID) -> EntityIndex? {
        guard let lv = slots.lv(of: id.opID) else { return nil }
        let e = slots.entity(of: lv)
        guard slots.sequence(of: lv).isItems, items.rows[e.int].id == id.opID else { return nil }
        return e
    }

    /// A section is visible while its own position write survives or it holds a live item (§3.5).
    @inline(__always)
    func isSectionVisible(_ s: EntityIndex) -> Bool {
        sections.isAlive(s) || visibleItemCount(s) > 0
    }

    /// Number of visible items in section `s`.
    @inline(__always) func visibleItemCount(_ s: EntityIndex) -> Int { forest.visibleCount(tree(ofSequence: .items(s))) }

    /// The tree of the section sequence.
    static let sectionTree: Int32 = 0

    /// The tree of a sequence: -1 is the section sequence, `s` the items of section `s`.
    @inline(__always) func tree(ofSequence sequence: SequenceIndex) -> Int32 { sequence.tree }

    /// The number of visible slots before slot `lv` in its tree (its index, when it is visible).
    ///
    /// - Complexity: O(log n).
    @inline(__always)
    func visiblePosition(ofSlot lv: LocalVersion) -> Int {
        forest.position(of: forest.locate(lv)).visible
    }

    /// The dense index of the visible section at `index`.
    @inline(__always)
    func sectionIndex(at index: Int) throws(ListError) -> EntityIndex {
        guard index >= 0, index < sectionCount else { throw .sectionIndexOutOfRange(index, count: sectionCount) }
        return slots.entity(of: forest.lv(at: forest.findVisible(Self.sectionTree, index)))
    }

    /// The section (dense index) and row an index path names. The section is checked; the row is
    /// not. Reads the index path once (its accessors are calls into Foundation).
    @inline(__always)
    func rowAddress(_ indexPath: IndexPath) throws(ListError) -> (section: EntityIndex, row: Int) {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        let section = indexPath[0], row = indexPath[1]
        return (try sectionOfRow(section, row), row)
    }

    /// The section (dense index) of the visible section at `section`, checked, for an edit of its
    /// row `row` (which is not checked; it only names the index path of the error).
    @inline(__always)
    func sectionOfRow(_ section: Int, _ row: Int) throws(ListError) -> EntityIndex {
        guard section >= 0, section < sectionCount else {
            throw .indexPathOutOfRange(IndexPath(item: row, section: section), count: 0)
        }
        return try sectionIndex(at: section)
    }

    /// The tree and row of the visible item at `indexPath`, both checked.
    @inline(__always)
    func itemRow(_ indexPath: IndexPath) throws(ListError) -> (tree: Int32, row: Int) {
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        let row = indexPath[1]
        return (try itemRow(indexPath[0], row).tree, row)
    }

    /// The section (dense index) and tree of the visible item at row `row` of the visible section
    /// at `section`, both checked.
    @inline(__always)
    func itemRow(_ section: Int, _ row: Int) throws(ListError) -> (section: EntityIndex, tree: Int32) {
        let s = try sectionOfRow(section, row)
        let t = tree(ofSequence: .items(s))
        let count = forest.visibleCount(t)
        guard row >= 0, row < count else {
            throw .indexPathOutOfRange(IndexPath(item: row, section: section), count: count)
        }
        return (s, t)
    }

    /// The dense index of the visible item at `indexPath`.
    @inline(__always)
    func itemIndex(at indexPath: IndexPath) throws(ListError) -> EntityIndex {
        let (t, row) = try itemRow(indexPath)
        return slots.entity(of: forest.lv(at: forest.findVisible(t, row)))
    }

    /// Calls `body` with each visible slot of `tree`, in order.
    func forEachVisible(in tree: Int32, _ body: (LocalVersion) -> Void) {
        forest.forEachRun(tree) { lv, n, visible in
            if visible { for k in 0..<Int32(n) { body(lv.advanced(by: k)) } }
        }
    }
}
