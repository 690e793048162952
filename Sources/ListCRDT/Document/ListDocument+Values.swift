import Foundation

/// `String` and `Codable` conveniences over the byte values (SEMANTICS §1). Values travel as
/// opaque bytes; these only encode and decode them.
extension ListDocument {
    /// Inserts an item whose value is the UTF-8 bytes of `string`.
    @discardableResult
    public mutating func insertItem(at indexPath: IndexPath, string: String) throws(ListError) -> ListOperation {
        try insertItem(at: indexPath, value: Data(string.utf8))
    }

    /// Inserts a section whose value is the UTF-8 bytes of `string`.
    @discardableResult
    public mutating func insertSection(at index: Int, string: String) throws(ListError) -> ListOperation {
        try insertSection(at: index, value: Data(string.utf8))
    }

    /// Inserts an item whose value is `value` encoded as JSON.
    ///
    /// - Throws: `EncodingError` if `value` does not encode, or ``ListError``.
    @discardableResult
    public mutating func insertItem<T: Encodable>(at indexPath: IndexPath, encoding value: T,
                                                  encoder: JSONEncoder = JSONEncoder()) throws -> ListOperation {
        try insertItem(at: indexPath, value: encoder.encode(value))
    }

    /// Writes an item's value as `value` encoded as JSON.
    ///
    /// - Throws: `EncodingError` if `value` does not encode, or ``ListError``.
    @discardableResult
    public mutating func setValue<T: Encodable>(encoding value: T, forItem id: ItemID,
                                                encoder: JSONEncoder = JSONEncoder()) throws -> ListOperation {
        try setValue(encoder.encode(value), forItem: id)
    }

    /// An item's value as UTF-8 text, or nil if the item is unknown or the bytes are not UTF-8.
    public func string(of item: ItemID) -> String? {
        value(of: item).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// A section's value as UTF-8 text, or nil if the section is unknown or the bytes are not UTF-8.
    public func string(of section: SectionID) -> String? {
        value(of: section).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// An item's value decoded from JSON, or nil if the item is unknown.
    ///
    /// - Throws: `DecodingError` if the bytes are not a JSON `T`.
    public func decodeValue<T: Decodable>(_ type: T.Type, of item: ItemID, decoder: JSONDecoder = JSONDecoder()) throws -> T? {
        guard let data = value(of: item) else { return nil }
        return try decoder.decode(type, from: data)
    }
}
