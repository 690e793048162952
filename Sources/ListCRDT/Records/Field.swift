import Foundation

/// The typed value of a value field (Docs/Semantics.md §8).
///
/// A value field is a last-writer-wins register per field: the write with the greatest
/// ``FieldStamp`` wins. Values travel as a one-byte type and the value's bytes.
public enum FieldValue: Hashable, Sendable, CustomStringConvertible {
    /// An explicit null (a field that is there and empty; removing a field is ``FieldChange/remove``).
    case null
    case bool(Bool)
    case int(Int64)
    /// A finite double (NaN and infinities are refused: they have no JSON form and NaN is not
    /// equal to itself).
    case double(Double)
    case string(String)
    /// A point in time, to the millisecond (milliseconds since 1970, UTC).
    case date(Date)
    case bytes(Data)

    /// The bytes the value counts for against ``ListDocument/maxValueSize``.
    public var size: Int {
        switch self {
        case .null, .bool: 1
        case .int, .double, .date: 8
        case .string(let s): s.utf8.count
        case .bytes(let d): d.count
        }
    }

    /// The value's kind, as `show --json` and the docs name it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .date: "date"
        case .bytes: "bytes"
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .string(let s): "\"\(s)\""
        case .date(let d): "date(\(Int64((d.timeIntervalSince1970 * 1000).rounded())) ms)"
        case .bytes(let d): "\(d.count) bytes"
        }
    }

    /// The date truncated to the millisecond the wire keeps, so a value compares equal once it
    /// has travelled.
    var normalized: FieldValue {
        if case .date(let d) = self {
            return .date(Date(timeIntervalSince1970: Double(Int64((d.timeIntervalSince1970 * 1000).rounded())) / 1000))
        }
        return self
    }
}

/// What a field shows: a value, a counter's sum, or a set's members.
public enum Field: Hashable, Sendable, CustomStringConvertible {
    /// A value field: the winning write's value.
    case value(FieldValue)
    /// A counter: the sum of every increment not reset by a write its author had seen.
    case counter(Int64)
    /// An add-wins set of strings, sorted.
    case set([String])
    /// A text field: characters merged one by one (Docs/Semantics.md §8.10).
    case text(String)

    public var description: String {
        switch self {
        case .value(let v): v.description
        case .counter(let n): "counter(\(n))"
        case .set(let s): "set(" + s.map { "\"\($0)\"" }.joined(separator: ", ") + ")"
        case .text(let t): "text(\(t.debugDescription))"
        }
    }
}

/// One change to one field, as a local edit asks for it.
public enum FieldChange: Hashable, Sendable {
    /// Writes a value (the field becomes a value field; it resets the counter and the set its
    /// author saw).
    case set(FieldValue)
    /// Removes the field (a write too: ordered like any other by its stamp; it resets what its
    /// author saw).
    case remove
    /// Adds to the counter (negative to subtract). Concurrent increments all count.
    case increment(Int64)
    /// Adds these strings to the set. An add survives a concurrent remove (add-wins).
    case insert([String])
    /// Removes these strings from the set: the adds of them its author saw.
    case delete([String])
    /// Removes `delete` characters at `at` and inserts `insert` there (positions count Unicode
    /// scalars of the text shown; Docs/Semantics.md §8.10). Local only: it travels as ``text(_:)``.
    case splice(at: Int, delete: Int, insert: String)
    /// A text change by identity, as a splice travels (``TextEdit``).
    case text(TextEdit)
}

/// The section or item whose record an operation writes.
public enum RecordTarget: Hashable, Sendable, CustomStringConvertible {
    case item(ItemID)
    case section(SectionID)

    /// The target's id (the operation that inserted it).
    public var opID: OpID {
        switch self {
        case .item(let i): i.opID
        case .section(let s): s.opID
        }
    }

    public var description: String {
        switch self {
        case .item(let i): "\(i)"
        case .section(let s): "\(s)"
        }
    }
}

/// One field's change as it travels in an operation: the change, and what its author had seen of
/// the field (so every replica can tell what it overrides and whether it was concurrent).
public struct FieldWrite: Hashable, Sendable {
    /// The field's name (1 to ``FieldLimits/maxNameBytes`` bytes of UTF-8, no control characters).
    public var name: String
    /// The change.
    public var change: FieldChange
    /// The value write (or removal) that won the field when the author wrote: a write that
    /// replaces another is not a conflict with it. ``OpID/none`` if none.
    public var replaces: OpID
    /// For each replica, the greatest operation whose increments or adds of this field (of the
    /// named strings, for ``FieldChange/delete(_:)``) the author had seen: a `set`, `remove` or
    /// `delete` resets exactly those. Sorted by replica.
    public var seen: [OpID]

    /// Makes a write.
    public init(name: String, change: FieldChange, replaces: OpID = .none, seen: [OpID] = []) {
        self.name = name
        self.change = change
        self.replaces = replaces
        self.seen = seen
    }
}

/// The field writes of one operation, stamped with its author's hybrid logical clock.
public struct FieldWrites: Hashable, Sendable {
    /// The hybrid logical clock of the writes: milliseconds since 1970 in the upper 48 bits, a
    /// logical counter in the lower 16, greater than every clock the author had seen
    /// (Docs/Semantics.md §8.2).
    public var clock: UInt64
    /// The writes, one per field, sorted by name.
    public var writes: [FieldWrite]

    /// Makes the writes of one operation (sorted by name here).
    ///
    /// - Complexity: O(w log w) for w writes.
    public init(clock: UInt64, writes: [FieldWrite]) {
        self.clock = clock
        self.writes = writes.sorted { $0.name < $1.name }
    }

    /// Writes already in strictly increasing name order (the decoder checked it; sorting again
    /// was 7% of a state snapshot's load).
    init(clock: UInt64, sortedWrites writes: [FieldWrite]) {
        assert(zip(writes, writes.dropFirst()).allSatisfy { $0.name < $1.name }, "field writes not sorted")
        self.clock = clock
        self.writes = writes
    }

    /// The bytes the writes count for against the causal buffer's limits.
    var footprint: Int {
        writes.reduce(16) { total, w in
            var n = total + w.name.utf8.count + 24 + w.seen.count * 16
            switch w.change {
            case .set(let v): n += v.size
            case .insert(let s), .delete(let s): n += s.reduce(0) { $0 + $1.utf8.count + 8 }
            case .remove, .increment: break
            case .splice(_, _, let t): n += t.utf8.count
            case .text(let e): n += e.insert.utf8.count + e.deletes.count * 24
            }
            return n
        }
    }
}

/// The limits every replica checks on field writes (an operation over one is refused, a local
/// edit over one throws ``ListError/invalidField(_:_:)``).
public enum FieldLimits {
    /// A field name's longest UTF-8 form: 64 bytes.
    public static let maxNameBytes = 64
    /// The most fields one operation writes: 256.
    public static let maxWrites = 256
    /// The longest set member: 1,024 bytes of UTF-8.
    public static let maxMemberBytes = 1024
    /// The most set members one write adds or removes: 1,024.
    public static let maxMembers = 1024
    /// The most replicas one write's ``FieldWrite/seen`` names: 4,096.
    public static let maxSeen = 4096

    /// Why `name` is not a valid field name, or nil.
    public static func problem(withName name: String) -> String? {
        let n = name.utf8.count
        if n == 0 { return "a field name is empty" }
        if n > maxNameBytes { return "field name \"\(name.prefix(20))…\" is \(n) bytes, over \(maxNameBytes)" }
        // Printable ASCII (most names) has no control character: no scalar properties to look up.
        // (Over the contiguous bytes: `utf8.allSatisfy` walks the view index by index, 4% of a
        // state snapshot's load.)
        if name.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy { $0 >= 0x20 && $0 < 0x7f } }) == true { return nil }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "field name \(name.debugDescription) holds a control character"
        }
        return nil
    }
}

/// A field write of this replica that lost to a concurrent write of another (Docs/Semantics.md
/// §8.3): which field, the value that won, the one that lost, and whose.
public struct FieldConflict: Hashable, Sendable, CustomStringConvertible {
    /// The section or item.
    public var target: RecordTarget
    /// The field.
    public var name: String
    /// What this replica wrote (nil: it removed the field).
    public var lost: FieldValue?
    /// What won (nil: the winner removed the field).
    public var won: FieldValue?
    /// The operation of this replica that lost.
    public var localOperation: OpID
    /// The operation that won; its replica is who wrote it.
    public var winner: OpID

    public var description: String {
        "\(target) field \"\(name)\": your \(lost.map(\.description) ?? "removal") lost to \(won.map(\.description) ?? "a removal") by replica \(winner.replica.rawValue)"
    }
}
