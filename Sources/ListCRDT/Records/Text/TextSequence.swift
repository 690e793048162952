import Foundation

/// The characters of one text field: a Fugue sequence of Unicode scalars, each with the id of
/// the operation that typed it (plus its offset in that operation's run), kept in the engine's
/// own sequence structures (`Sequence/`): a ``SlotForest`` of one tree for the order, a
/// ``TextSlots`` for ids and origins, and the scalars by local version (``TextScalars``).
///
/// A removed character stays as a hidden slot (a tombstone) until compaction drops it
/// (``compacted()``). A run typed left to right is one slot run, one tree entry and one id run,
/// so an ASCII text costs about one byte per character and a few records per run.
struct TextSequence: Sendable {
    /// The one tree of ``forest``.
    static let tree: Int32 = 0

    /// The order of the characters (one tree).
    var forest = SlotForest()
    /// Per character (by local version): its id, origins and run.
    var slots = TextSlots()
    /// Per character (by local version): the scalar.
    var scalars = TextScalars()

    /// An empty text.
    init() { _ = forest.addTree() }

    /// An empty text to read from, made once (an empty text allocates its tree: a check of an
    /// edit against a field with no text yet made one each time, a tenth of a board's load).
    static let empty = TextSequence()

    /// A text built from its parts (a snapshot's load): `forest` must hold tree 0 of the slots.
    init(forest: SlotForest, slots: TextSlots, scalars: TextScalars) {
        self.forest = forest
        self.slots = slots
        self.scalars = scalars
    }

    // MARK: Reading

    /// The number of characters shown (Unicode scalars).
    var count: Int { forest.visibleCount(Self.tree) }

    /// The number of characters kept, removed ones included.
    var slotCount: Int { slots.count }

    /// The text shown.
    ///
    /// - Complexity: O(n) for n characters kept.
    var string: String {
        var out: [UInt8] = []
        out.reserveCapacity(scalars.count)
        forest.forEachRun(Self.tree) { lv, n, visible in
            if visible { scalars.appendUTF8(lv.int ..< lv.int + n, to: &out) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The local version of the character with id `id`, if this text holds it.
    ///
    /// - Complexity: O(log r) for r id runs of its replica.
    @inline(__always) func lv(of id: OpID) -> LocalVersion? { id == .none ? nil : slots.lv(of: id) }

    /// The shown position of the character `lv`: for a removed one, the number of characters
    /// shown before it.
    ///
    /// - Complexity: O(log n).
    func position(ofSlot lv: LocalVersion) -> (index: Int, visible: Bool) {
        let c = forest.locate(lv)
        return (forest.position(of: c).visible, forest.entry(c).isVisible)
    }

    // MARK: Checking a received edit

    /// Why `edit` cannot apply to this text, or nil: its origins and removed characters must be
    /// characters of this text, the origins in order.
    ///
    /// - Complexity: O(d log r + log n) for d removed characters.
    func problem(with edit: TextEdit) -> String? {
        var left = LocalVersion.none, right = LocalVersion.none
        if edit.after != .none {
            guard let l = lv(of: edit.after) else { return "it inserts after \(edit.after), not a character of the field" }
            left = l
        }
        if edit.before != .none {
            guard let r = lv(of: edit.before) else { return "it inserts before \(edit.before), not a character of the field" }
            right = r
        }
        if left.exists, right.exists, !forest.isBefore(left, right) {
            return "its origins \(edit.after) and \(edit.before) are out of order"
        }
        for r in edit.deletes {
            for k in 0 ..< r.count where lv(of: r.first.advanced(by: k)) == nil {
                return "it removes \(r.first.advanced(by: k)), not a character of the field"
            }
        }
        return nil
    }

    // MARK: Applying

    /// Applies `edit` of operation `id`: hides the removed characters, then puts the inserted
    /// run where the Fugue rule puts it (ids `id`, `id + 1`, …). The edit was checked
    /// (``problem(with:)``).
    ///
    /// - Complexity: O(d log r + log n + k) for d removed and k inserted characters, when no
    ///   concurrent insert sits between the origins; O(s log n) more for s slots scanned.
    mutating func apply(_ edit: TextEdit, id: OpID) {
        for r in edit.deletes { hide(r) }
        guard !edit.insert.isEmpty else { return }
        let left = lv(of: edit.after) ?? .none, right = lv(of: edit.before) ?? .none
        let at = forest.placement(Self.tree, id: id, left: left, right: right, slots: slots)
        let n = scalars.append(contentsOf: edit.insert)
        forest.reserveSlots(more: n)   // one allocation for a paste (the tree takes it in pieces)
        let lv = slots.appendRun(id: id, count: n, left: left, right: right)
        forest.insert(Self.tree, lv, count: n, visible: true, after: at)
    }

    /// Hides the characters of `range` (those already hidden stay so).
    ///
    /// - Complexity: O(k log r + p log n) for k characters in p runs of local versions.
    mutating func hide(_ range: TextRange) {
        var k = 0
        while k < range.count {
            guard let first = lv(of: range.first.advanced(by: k)) else { k += 1; continue }
            // The longest piece whose ids and local versions both go up by one.
            var n = 1
            while k + n < range.count, lv(of: range.first.advanced(by: k + n)) == first.advanced(by: Int32(n)) { n += 1 }
            forest.hideRange(first, count: n)
            k += n
        }
    }

    // MARK: Local edits

    /// The edit that removes `delete` characters at `position` and inserts `insert` there, as
    /// this replica sees the text. The caller checked the range.
    ///
    /// - Complexity: O(log n + d) for d removed characters.
    mutating func edit(at position: Int, delete: Int, insert: String) -> TextEdit {
        var edit = TextEdit(insert: insert)
        if delete > 0 { edit.deletes = ranges(from: position, count: delete) }
        if !insert.isEmpty {
            let o = forest.localInsertion(Self.tree, at: position)
            edit.after = o.left.exists ? slots.id(of: o.left) : .none
            edit.before = o.right.exists ? slots.id(of: o.right) : .none
        }
        return edit
    }

    /// The ids of the `count` characters shown from `position` on, as ranges of consecutive ids.
    ///
    /// - Complexity: O(log n + count).
    func ranges(from position: Int, count: Int) -> [TextRange] {
        var out: [TextRange] = []
        var c: SlotForest.Cursor? = forest.findVisible(Self.tree, position)
        var left = count
        while left > 0, let cur = c {
            let e = forest.entry(cur)
            if e.isVisible {
                let lv = forest.lv(at: cur)
                let id = slots.id(of: lv)
                if let last = out.last, last.first.advanced(by: last.count) == id {
                    out[out.count - 1].count += 1
                } else {
                    out.append(TextRange(first: id, count: 1))
                }
                left -= 1
            }
            c = forest.next(cur)
        }
        return out
    }

    // MARK: Resets (value writes)

    /// Hides every shown character that `covers` says its author saw (a value write or a
    /// conversion splice resets the text it saw, Docs/Semantics.md §8.10).
    ///
    /// - Complexity: O(n log n) at worst for n characters kept.
    mutating func reset(_ covers: (OpID) -> Bool) {
        var dead: [LocalVersion] = []
        forest.forEachRun(Self.tree) { lv, n, visible in
            guard visible else { return }
            for k in 0 ..< Int32(n) where covers(slots.id(of: lv.advanced(by: k))) { dead.append(lv.advanced(by: k)) }
        }
        for lv in dead { forest.setVisible(lv, false) }
    }

    /// For each replica, the greatest id of a shown character (what a reset must say it saw).
    ///
    /// - Complexity: O(n) for n characters kept.
    func liveTops(into top: inout [ReplicaID: UInt64]) {
        forest.forEachRun(Self.tree) { lv, n, visible in
            guard visible else { return }
            for k in 0 ..< Int32(n) {
                let id = slots.id(of: lv.advanced(by: k))
                top[id.replica] = max(top[id.replica] ?? 0, id.counter)
            }
        }
    }

    // MARK: Anchors

    /// The origins a keystroke takes here when typed right after character `after`, shown or
    /// removed (``OpID/none``: at the start): the shown character at or before it, and the
    /// character that follows that one, removed or not (``TextEdit``'s `after` and `before`). An
    /// edit made again takes these (`ListDocument.textWrite`). `after` must be a character of this
    /// text or ``OpID/none``.
    ///
    /// - Complexity: O(log n).
    func origins(typedAfter after: OpID) -> (after: OpID, before: OpID) {
        let at = position(of: TextAnchor(character: after, side: .after)) ?? 0
        let (left, right) = forest.insertionOrigins(Self.tree, at: at, skipping: [])
        return (left.exists ? slots.id(of: left) : .none, right.exists ? slots.id(of: right) : .none)
    }

    /// The anchor of the place before the character shown at `position` (`0...count`): held by
    /// the character before it (``TextAnchor/Side/after``) or the one after it
    /// (``TextAnchor/Side/before``).
    ///
    /// - Complexity: O(log n).
    func anchor(at position: Int, side: TextAnchor.Side) -> TextAnchor {
        switch side {
        case .after:
            guard position > 0 else { return .start }
            return TextAnchor(character: slots.id(of: forest.lv(at: forest.findVisible(Self.tree, position - 1))), side: .after)
        case .before:
            guard position < count else { return .end }
            return TextAnchor(character: slots.id(of: forest.lv(at: forest.findVisible(Self.tree, position))), side: .before)
        }
    }

    /// Where `anchor` is now (`0...count`), or nil when its character is not in this text (never
    /// was, or compaction dropped it).
    ///
    /// - Complexity: O(log n).
    func position(of anchor: TextAnchor) -> Int? {
        guard anchor.character != .none else { return anchor.side == .after ? 0 : count }
        guard let lv = lv(of: anchor.character) else { return nil }
        let (index, visible) = position(ofSlot: lv)
        return anchor.side == .after && visible ? index + 1 : index
    }

    // MARK: Compaction

    /// The same text with its tombstones dropped, for compaction (every edit is causally stable):
    /// the shown characters and the first removed one of every removed run (an insert made later
    /// may name it as its right origin), in order, with their ids. They keep their arrival order
    /// as local versions (so each replica's ids stay in counter order, as the id index needs);
    /// their origins become meaningless but valid (the slot before, the end): no operation still
    /// to come reads them (an insert concurrent with a later one lands between origins both made
    /// after the floor).
    ///
    /// - Complexity: O(n log n) for n characters kept before.
    func compacted() -> TextSequence {
        var kept: [(lv: LocalVersion, visible: Bool)] = []
        var previousShown = true
        forest.forEachRun(Self.tree) { lv, n, visible in
            for k in 0 ..< Int32(n) where visible || previousShown {
                kept.append((lv.advanced(by: k), visible))
                previousShown = visible
            }
            previousShown = visible
        }
        // New local versions in arrival order.
        let byArrival = kept.map(\.lv).sorted { $0.raw < $1.raw }
        var newLV: [Int32: Int32] = [:]
        newLV.reserveCapacity(byArrival.count)
        var out = TextSequence()
        out.forest = SlotForest()
        for (k, old) in byArrival.enumerated() {
            newLV[old.raw] = Int32(k)
            out.scalars.append(scalars[old.int])
            _ = out.slots.appendRun(id: slots.id(of: old), count: 1, left: LocalVersion(Int32(k - 1)), right: .none)
        }
        var entries: [SlotForest.Entry] = []
        for (old, visible) in kept {
            let lv = LocalVersion(newLV[old.raw]!)
            if let last = entries.last, last.isVisible == visible, last.count < SlotForest.maxEntryLength,
               last.lv.advanced(by: Int32(last.count)) == lv {
                entries[entries.count - 1] = SlotForest.Entry(lv: last.lv, count: last.count + 1, visible: visible)
            } else {
                entries.append(SlotForest.Entry(lv: lv, count: 1, visible: visible))
            }
        }
        out.forest.addSlots(byArrival.count)
        out.forest.appendTree(entries)
        return out
    }

    /// The characters in order as (id, scalar, shown): what two replicas that applied the same
    /// edits agree on (the trees' entries may be cut differently).
    ///
    /// - Complexity: O(n).
    var ordered: [(OpID, Unicode.Scalar, Bool)] {
        var out: [(OpID, Unicode.Scalar, Bool)] = []
        out.reserveCapacity(slots.count)
        forest.forEachRun(Self.tree) { lv, n, visible in
            for k in 0 ..< Int32(n) {
                let x = lv.advanced(by: k)
                out.append((slots.id(of: x), scalars[x.int], visible))
            }
        }
        return out
    }

    /// Heap bytes, roughly (``ListDocument/memoryBreakdown``).
    var heapBytes: Int { scalars.heapBytes + slots.heapBytes + forest.memoryParts.reduce(0) { $0 + $1.bytes } }
}

extension TextSequence: Hashable {
    /// Equal when the same characters are in the same order with the same visibility (how each
    /// replica's tree cuts them into entries is not compared).
    ///
    /// - Complexity: O(n).
    static func == (a: TextSequence, b: TextSequence) -> Bool {
        guard a.slots.count == b.slots.count, a.count == b.count else { return false }
        let x = a.ordered, y = b.ordered
        return x.elementsEqual(y) { $0.0 == $1.0 && $0.1 == $1.1 && $0.2 == $1.2 }
    }

    func hash(into hasher: inout Hasher) { hasher.combine(string) }
}
