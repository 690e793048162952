import Foundation

/// A run of characters of one text field named by identity: the characters with ids `first`,
/// `first + 1`, … (Docs/Semantics.md §8.10). The characters an operation inserts have ids its
/// own id, its id + 1, …, so one typed run is one range.
public struct TextRange: Hashable, Sendable, CustomStringConvertible {
    /// The first character's id.
    public var first: OpID
    /// The number of characters (at least 1).
    public var count: Int

    /// Makes a range.
    public init(first: OpID, count: Int) {
        self.first = first
        self.count = count
    }

    public var description: String { count == 1 ? "\(first)" : "\(first)+\(count)" }

    /// `ids` as ranges of consecutive ids (same replica, counters one apart), in their order.
    ///
    /// - Complexity: O(k) for k ids.
    public static func runs(of ids: some Sequence<OpID>) -> [TextRange] {
        var out: [TextRange] = []
        for id in ids {
            if let last = out.last, last.first.replica == id.replica, last.first.counter &+ UInt64(last.count) == id.counter {
                out[out.count - 1].count += 1
            } else {
                out.append(TextRange(first: id, count: 1))
            }
        }
        return out
    }
}

/// A change to a text field as it travels: characters removed, by identity, and characters
/// inserted between two neighbours, by identity (Docs/Semantics.md §8.10). A local
/// ``FieldChange/splice(at:delete:insert:)`` is turned into one of these before it leaves.
///
/// The inserted characters get the ids of the operation: the first its id, the next its id + 1,
/// and so on (so the operation spans as many ids as it inserts Unicode scalars). One operation
/// inserts into at most one text field.
public struct TextEdit: Hashable, Sendable, CustomStringConvertible {
    /// The character the insert goes right after as its author saw it (``OpID/none``: the start).
    public var after: OpID
    /// The character right after `after` in its author's sequence, removed or not (``OpID/none``:
    /// the end). Together with `after`, the Fugue origins of the inserted run.
    public var before: OpID
    /// The inserted text (its Unicode scalars are the characters).
    public var insert: String { didSet { insertedCount = Self.scalarCount(of: insert) } }
    /// The characters removed, by identity (the visible ones its author removed).
    public var deletes: [TextRange]

    /// Makes an edit.
    public init(after: OpID = .none, before: OpID = .none, insert: String = "", deletes: [TextRange] = []) {
        self.after = after
        self.before = before
        self.insert = insert
        self.deletes = deletes
        insertedCount = Self.scalarCount(of: insert)
    }

    /// An edit whose `insert` is known to hold `insertedCount` Unicode scalars (a keystroke's
    /// one), not counted again.
    init(after: OpID, before: OpID, insert: String, deletes: [TextRange] = [], insertedCount: Int) {
        assert(insertedCount == Self.scalarCount(of: insert), "\(insertedCount) scalars given for \(insert.debugDescription)")
        self.after = after
        self.before = before
        self.insert = insert
        self.deletes = deletes
        self.insertedCount = insertedCount
    }

    /// The number of characters inserted (Unicode scalars), counted once when `insert` is set:
    /// an operation's span and last id read it often, and counting a pasted text's scalars each
    /// time was a fifth of loading a board of long notes (W17.notes).
    public private(set) var insertedCount: Int

    /// The Unicode scalars of `text`: its UTF-8 bytes that start one.
    ///
    /// - Complexity: O(k) for k bytes.
    static func scalarCount(of text: String) -> Int {
        // An empty edit's and a keystroke's, without a pass (every local splice makes one).
        let bytes = text.utf8.count
        if bytes <= 1 { return bytes }
        var text = text
        return text.withUTF8 { bytes in
            // Eight bytes at a time: a continuation byte is 10xxxxxx, its top bit set and the
            // next one clear (`w & ~w << 1` in each byte's top bit).
            var continuations = 0, i = 0
            if let base = bytes.baseAddress {
                let raw = UnsafeRawPointer(base)
                while i + 8 <= bytes.count {
                    let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    // ASCII words (most) skip the count (a bit count is a dozen instructions
                    // without the CPU's own, which the default target does not assume).
                    if w & 0x8080_8080_8080_8080 != 0 { continuations += (w & ~w << 1 & 0x8080_8080_8080_8080).nonzeroBitCount }
                    i += 8
                }
            }
            while i < bytes.count {
                if bytes[i] & 0xC0 == 0x80 { continuations += 1 }
                i += 1
            }
            return bytes.count - continuations
        }
    }

    /// The number of characters removed.
    ///
    /// - Complexity: O(r) for r ranges.
    public var deletedCount: Int { deletes.reduce(0) { $0 + $1.count } }

    public var description: String {
        var parts: [String] = []
        if !deletes.isEmpty { parts.append("delete \(deletes)") }
        if !insert.isEmpty { parts.append("insert \(insert.debugDescription) after \(after) before \(before)") }
        return "text(" + parts.joined(separator: ", ") + ")"
    }
}

/// A place in a text field that survives others' edits: a cursor or one end of a selection,
/// held by the identity of a neighbouring character rather than by a position
/// (Docs/Semantics.md §8.10). ``ListDocument/position(of:_:ofItem:)`` turns it back into a
/// position.
public struct TextAnchor: Hashable, Sendable, CustomStringConvertible {
    /// Which neighbour the anchor holds on to.
    public enum Side: UInt8, Hashable, Sendable {
        /// Right after ``TextAnchor/character`` (``OpID/none``: the start of the text). Text typed
        /// at the anchor goes after it: a caret left of the typing.
        case after
        /// Right before ``TextAnchor/character`` (``OpID/none``: the end of the text). Text typed
        /// at the anchor goes before it: a caret that follows the typing.
        case before
    }

    /// The character the anchor holds on to (``OpID/none``: an end of the text).
    public var character: OpID
    /// Which side of it.
    public var side: Side

    /// Makes an anchor.
    public init(character: OpID, side: Side) {
        self.character = character
        self.side = side
    }

    /// The start of the text.
    public static let start = TextAnchor(character: .none, side: .after)
    /// The end of the text.
    public static let end = TextAnchor(character: .none, side: .before)

    public var description: String {
        character == .none ? (side == .after ? "start" : "end") : "\(side == .after ? "after" : "before") \(character)"
    }
}

/// The limits every replica checks on text edits (an operation over one is refused, a local edit
/// over one throws ``ListError/invalidField(_:_:)``).
public enum TextLimits {
    /// The most character ranges one edit removes: 65,536 (a removal of scattered text is split
    /// into several operations beyond that).
    public static let maxDeleteRanges = 1 << 16
}

extension FieldWrites {
    /// The number of characters the writes insert into text fields (the ids their operation
    /// spans beyond its own).
    ///
    /// - Complexity: O(w + k) for w writes and k inserted scalars.
    var insertedCharacters: Int {
        var n = 0
        for w in writes { if case .text(let e) = w.change { n += e.insertedCount } }
        return n
    }
}
