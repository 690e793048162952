import Foundation

/// One change to a document, as it travels between replicas.
///
/// Operations are immutable. An operation names what it changes by identity and where it puts
/// things by neighbouring slots (its *origins*), never by index; so it means the same on every
/// replica. `deps` is the author's frontier when it made the operation: the operation is applied
/// only after all of them (causal delivery).
public struct ListOperation: Hashable, Sendable, CustomStringConvertible {
    /// The id of the operation, and of the first slot it makes.
    public var id: OpID
    /// The operations the author had seen last (its frontier): the causal dependencies.
    public var deps: Frontier
    /// What the operation does.
    public var kind: Kind

    /// Makes an operation from its parts.
    public init(id: OpID, deps: Frontier, kind: Kind) {
        self.id = id
        self.deps = deps
        self.kind = kind
    }

    /// Where a new slot goes: right after `after` and before `before` as the author saw them
    /// (either may be nil for an end of the sequence). `after` and `before` are adjacent in the
    /// author's sequence, counting hidden slots.
    public struct Origins: Hashable, Sendable {
        /// The slot right before the new slot, nil for the start.
        public var after: SlotID?
        /// The slot right after the new slot, nil for the end.
        public var before: SlotID?
        /// Makes origins.
        public init(after: SlotID?, before: SlotID?) {
            self.after = after
            self.before = before
        }
    }

    /// The greatest position write of one item that a section delete's author saw.
    public struct SeenItem: Hashable, Sendable {
        /// The item.
        public var item: ItemID
        /// The slot of the greatest position write of `item` the author saw.
        public var seen: SlotID
        /// Makes a record.
        public init(item: ItemID, seen: SlotID) {
            self.item = item
            self.seen = seen
        }
    }

    /// The kinds of operation (SEMANTICS §2).
    public enum Kind: Hashable, Sendable {
        /// A new section with this value, in a new slot of the section sequence. Its id is the op id.
        case insertSection(Origins, value: Data)
        /// A new item with this value, in a new slot of the section's sequence. Its id is the op id.
        case insertItem(section: SectionID, Origins, value: Data)
        /// A new slot for the section; its position register now points there.
        case moveSection(SectionID, Origins)
        /// New slots for these items, contiguous and in this order, in the section's sequence; the
        /// slot of `items[k]` has id `id.advanced(by: k)`. Every item's position register is written
        /// with the operation's id (so the whole selection wins or loses against a concurrent move
        /// of one of its items by operation id, SEMANTICS §3.2).
        case moveItems(ItemIDList, section: SectionID, Origins)
        /// Deletes the item as its author saw it: `seen` is the slot of the winning position write the
        /// author saw (the write is the operation that made that slot).
        case deleteItem(ItemID, seen: SlotID)
        /// Deletes the section and the items its author saw in it.
        case deleteSection(SectionID, seen: SlotID, items: [SeenItem])
        /// Writes the item's value register.
        case setItemValue(ItemID, Data)
        /// Writes the section's value register.
        case setSectionValue(SectionID, Data)
        /// Writes fields of a section's or an item's record, each merged by its own rule
        /// (Docs/Semantics.md §8); fields not named are untouched.
        case writeFields(RecordTarget, FieldWrites)
        /// A new item, as ``insertItem(section:_:value:)``, whose record starts with `fields` (a
        /// new item with its fields is one operation, Docs/Semantics.md §8.1). Boxed: the common
        /// kinds stay as small as they were.
        indirect case insertItemWithFields(section: SectionID, Origins, value: Data, fields: FieldWrites)
        /// A new section, as ``insertSection(_:value:)``, whose record starts with `fields`: a new
        /// section with its fields is one operation (Docs/Semantics.md §8.1), which needs wire
        /// format 5 (Docs/WireFormat.md §2.7). Boxed, as ``insertItemWithFields(section:_:value:fields:)``.
        indirect case insertSectionWithFields(Origins, value: Data, fields: FieldWrites)
    }

    /// How many consecutive ids the operation uses (one per slot it makes, at least one).
    public var span: Int {
        if case .moveItems(let items, _, _) = kind { return max(items.count, 1) }
        if case .writeFields(_, let writes) = kind { return max(writes.insertedCharacters, 1) }  // one id per typed character
        return 1
    }

    /// The id of the operation's last slot (its id when it makes at most one).
    public var lastID: OpID { id.advanced(by: span - 1) }

    /// Whether the operation writes fields (``Kind/writeFields(_:_:)``, or an item or a section
    /// inserted with its fields): a batch holding one needs wire format 4 (Docs/WireFormat.md §2.7),
    /// or 5 for a section inserted with its fields (``needsWireFormat5``).
    public var carriesFields: Bool {
        switch kind {
        case .writeFields, .insertItemWithFields, .insertSectionWithFields: true
        default: false
        }
    }

    /// Whether the operation inserts a section (with or without fields).
    public var insertsSection: Bool {
        switch kind {
        case .insertSection, .insertSectionWithFields: true
        default: false
        }
    }

    /// Whether a batch holding the operation needs wire format 5: it is a section inserted with
    /// its fields (``Kind/insertSectionWithFields(_:value:fields:)``), which no earlier version
    /// holds (Docs/WireFormat.md §4).
    public var needsWireFormat5: Bool {
        if case .insertSectionWithFields = kind { return true }
        return false
    }

    public var description: String { "op(\(id) \(kind) deps: \(deps))" }
}

/// A set of operation ids none of which has seen another: a point in causal history.
///
/// Stored sorted; one id needs no heap allocation (the common case: "after my previous operation").
public struct Frontier: Hashable, Sendable, Sequence, CustomStringConvertible {
    private var head: OpID = .none
    private var tail: [OpID] = []

    /// An empty frontier: the start of history.
    public init() {}

    /// A frontier holding these ids (duplicates removed).
    public init<S: Sequence>(_ ids: S) where S.Element == OpID {
        for id in ids { insert(id) }
    }

    /// Number of ids.
    public var count: Int { head == .none ? 0 : 1 + tail.count }
    /// Whether there are no ids.
    public var isEmpty: Bool { head == .none }
    /// The ids, sorted.
    public var ids: [OpID] { head == .none ? [] : [head] + tail }

    /// Whether `id` is one of the ids.
    ///
    /// - Complexity: O(log count).
    public func contains(_ id: OpID) -> Bool {
        guard id != .none, head != .none else { return false }
        if id <= head { return id == head }
        let i = tailIndex(of: id)
        return i < tail.count && tail[i] == id
    }

    /// Adds an id, keeping the order.
    ///
    /// - Complexity: O(log count) to find its place, O(count) to insert it there; no allocation
    ///   unless the storage grows.
    public mutating func insert(_ id: OpID) {
        guard id != .none else { return }
        if head == .none { head = id; return }
        if id <= head {
            if id < head { tail.insert(head, at: 0); head = id }
            return
        }
        let i = tailIndex(of: id)
        if i < tail.count && tail[i] == id { return }
        tail.insert(id, at: i)
    }

    /// Removes an id if present.
    ///
    /// - Complexity: O(log count) to find it, O(count) to remove it.
    public mutating func remove(_ id: OpID) {
        guard id != .none, head != .none else { return }
        if head == id {
            if tail.isEmpty { head = .none } else { head = tail.removeFirst() }
        } else if id > head {
            let i = tailIndex(of: id)
            if i < tail.count && tail[i] == id { tail.remove(at: i) }
        }
    }

    /// The first index of `tail` whose id is not less than `id` (binary search: `tail` is sorted).
    private func tailIndex(of id: OpID) -> Int {
        var lo = 0, hi = tail.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            if tail[mid] < id { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }

    /// The frontier holding just `id` (no allocation).
    init(only id: OpID) {
        head = id
    }

    /// Whether the frontier is exactly `{id}`.
    ///
    /// - Complexity: O(1).
    @inline(__always) func isOnly(_ id: OpID) -> Bool { head == id && tail.isEmpty }

    /// Replaces everything with the single id `id`.
    mutating func set(_ id: OpID) {
        head = id
        if !tail.isEmpty { tail = [] }
    }

    /// Iterates the ids in order without allocating.
    public struct Iterator: IteratorProtocol {
        fileprivate let frontier: Frontier
        fileprivate var index = 0
        public mutating func next() -> OpID? {
            defer { index += 1 }
            if index == 0 { return frontier.head == .none ? nil : frontier.head }
            return index - 1 < frontier.tail.count ? frontier.tail[index - 1] : nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(frontier: self) }
    public var underestimatedCount: Int { count }
    public var description: String { "{" + ids.map(\.description).joined(separator: ", ") + "}" }
}

/// The items of a ``ListOperation/Kind/moveItems(_:section:_:)``, in order.
///
/// An array-like collection that keeps its first item inline, so the common move of one item
/// needs no heap allocation. Build one from an array literal or with ``init(_:)``.
public struct ItemIDList: RandomAccessCollection, ExpressibleByArrayLiteral, Hashable, Sendable,
                          CustomStringConvertible {
    private var head: ItemID?
    private var tail: [ItemID] = []

    /// The items of `ids`, in their order.
    public init<S: Sequence>(_ ids: S) where S.Element == ItemID {
        var it = ids.makeIterator()
        head = it.next()
        while let id = it.next() { tail.append(id) }
    }

    /// The single item `id` (no allocation).
    public init(one id: ItemID) { head = id }

    public init(arrayLiteral ids: ItemID...) { self.init(ids) }

    public var startIndex: Int { 0 }
    public var endIndex: Int { head == nil ? 0 : 1 + tail.count }

    /// The item at position `i` (`0..<count`).
    public subscript(i: Int) -> ItemID {
        precondition(i >= 0 && i < endIndex, "item index \(i) out of range")
        return i == 0 ? head! : tail[i - 1]
    }

    public var description: String { Array(self).description }
}
