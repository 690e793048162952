import Foundation

/// A counter property of a typed item (Docs/Semantics.md §8): stored as a counter field, so that
/// increments made on several devices all count, where a plain `Int` property is a value field
/// whose last write wins.
///
/// ```swift
/// struct Card: Codable, Sendable { var title: String; var votes = FieldCounter() }
/// ```
///
/// A card whose record has no `votes` field decodes with a counter of 0 (see
/// ``KeyedDecodingContainer/decode(_:forKey:)-counter``).
public struct FieldCounter: Hashable, Sendable, Codable, ExpressibleByIntegerLiteral {
    /// The counter's value: the sum of every increment that counts.
    public var value: Int64

    /// A counter at `value` (0 by default).
    public init(_ value: Int64 = 0) { self.value = value }
    public init(integerLiteral value: Int64) { self.value = value }

    /// Adds `amount` (negative to subtract); the typed layer writes the difference as one increment.
    public mutating func increment(by amount: Int64 = 1) { value &+= amount }

    enum CodingKeys: String, CodingKey { case counter = "listsync.counter" }

    public init(from decoder: any Decoder) throws {
        value = try decoder.container(keyedBy: CodingKeys.self).decode(Int64.self, forKey: .counter)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(value, forKey: .counter)
    }
}

/// A set-of-strings property of a typed item (Docs/Semantics.md §8): stored as an add-wins set
/// field, so that tags added on several devices are all kept and a remove takes away only the
/// adds its device had seen.
public struct FieldSet: Hashable, Sendable, Codable, ExpressibleByArrayLiteral {
    /// The members.
    public var members: Set<String>

    /// A set holding `members` (empty by default).
    public init(_ members: Set<String> = []) { self.members = members }
    public init(arrayLiteral elements: String...) { members = Set(elements) }

    /// Adds `member`.
    public mutating func insert(_ member: String) { members.insert(member) }
    /// Removes `member`.
    public mutating func remove(_ member: String) { members.remove(member) }
    /// Whether `member` is in the set.
    public func contains(_ member: String) -> Bool { members.contains(member) }

    enum CodingKeys: String, CodingKey { case set = "listsync.set" }

    public init(from decoder: any Decoder) throws {
        members = Set(try decoder.container(keyedBy: CodingKeys.self).decode([String].self, forKey: .set))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(members.sorted(), forKey: .set)
    }
}

/// A text property of a typed item (Docs/Semantics.md §8.10, Docs/Text.md): stored as a text
/// field, so that two people typing into it on two devices both keep their characters, where a
/// plain `String` property is a value field whose last write wins. Each write is the smallest
/// splice from the text the field holds to the new one.
///
/// ```swift
/// struct Card: Codable, Sendable { var title: String; var notes = FieldText() }
/// ```
///
/// A record without the field decodes as empty text; a field that holds a plain string (written
/// by a type whose property was a `String`) decodes as that text.
public struct FieldText: Hashable, Sendable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The text.
    public var text: String

    /// Text holding `text` (empty by default).
    public init(_ text: String = "") { self.text = text }
    public init(stringLiteral value: String) { text = value }

    public var description: String { text }

    enum CodingKeys: String, CodingKey { case text = "listsync.text" }

    public init(from decoder: any Decoder) throws {
        if let c = try? decoder.container(keyedBy: CodingKeys.self), let t = try? c.decode(String.self, forKey: .text) {
            text = t
        } else {
            text = try decoder.singleValueContainer().decode(String.self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(text, forKey: .text)
    }
}

extension KeyedDecodingContainer {
    /// A missing text decodes as empty, as a missing counter does.
    public func decode(_ type: FieldText.Type, forKey key: Key) throws -> FieldText {
        try decodeIfPresent(type, forKey: key) ?? FieldText()
    }

    /// A missing counter decodes as 0: the synthesized `init(from:)` of a `Codable` item calls
    /// this overload for a `FieldCounter` property, so a record without the field (an item made
    /// by an older app version) still decodes.
    public func decode(_ type: FieldCounter.Type, forKey key: Key) throws -> FieldCounter {
        try decodeIfPresent(type, forKey: key) ?? FieldCounter()
    }

    /// A missing set decodes as empty, as a missing counter does.
    public func decode(_ type: FieldSet.Type, forKey key: Key) throws -> FieldSet {
        try decodeIfPresent(type, forKey: key) ?? FieldSet()
    }
}
