import Foundation
import ListCRDT

/// Turns typed values into the bytes a ``ListDocument`` stores and back.
///
/// The document stores every section's and item's value as opaque `Data` (SEMANTICS §1); a
/// coder is how ``TypedDocument`` and ``TypedSnapshot`` see those bytes as Swift values. The
/// default is ``JSONValueCoder``; conform your own type to store a binary format (property
/// lists, protocol buffers, a hand-rolled layout) instead.
///
/// Every replica that reads a document must use a coder that decodes what the others wrote.
/// A coder should be deterministic (the same value gives the same bytes), so that equal values
/// written on different replicas are equal bytes.
///
/// Conforming types wrap whatever their underlying encoder throws in a ``ValueCodingError``
/// (see ``ValueCodingError/init(_:_:underlying:)``).
public protocol ValueCoder: Sendable {
    /// The bytes that store `value`.
    ///
    /// - Throws: ``ValueCodingError`` (direction ``ValueCodingError/Direction/encoding``) if
    ///   `value` cannot be encoded.
    func encode<T: Encodable>(_ value: T) throws(ValueCodingError) -> Data

    /// The value of type `type` that `data` stores.
    ///
    /// - Throws: ``ValueCodingError`` (direction ``ValueCodingError/Direction/decoding``) if
    ///   `data` is not a `type` in this coder's format.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ValueCodingError) -> T
}

/// Why a ``ValueCoder`` could not encode or decode a value.
public struct ValueCodingError: Error, CustomStringConvertible {
    /// Which way the coder was going.
    public enum Direction: Hashable, Sendable {
        /// From a value to bytes.
        case encoding
        /// From bytes to a value.
        case decoding
    }

    /// Which way the coder was going.
    public var direction: Direction
    /// The name of the Swift type that was being encoded or decoded (`String(reflecting:)`).
    public var typeName: String
    /// What the underlying encoder or decoder threw (an `EncodingError`, a `DecodingError`, or
    /// whatever a value's own `encode(to:)` or `init(from:)` threw).
    public var underlying: any Error

    /// Makes an error for a failure to encode or decode a value of type `type`.
    public init(_ direction: Direction, _ type: Any.Type, underlying: any Error) {
        self.direction = direction
        self.typeName = String(reflecting: type)
        self.underlying = underlying
    }

    /// What failed, for which type, and why (the underlying error).
    public var description: String {
        "\(direction == .encoding ? "cannot encode" : "cannot decode") a value of type \(typeName): \(underlying)"
    }
}

/// The default ``ValueCoder``: JSON, with keys sorted so that the same value always gives the
/// same bytes.
///
/// Dates are encoded as `JSONEncoder` does by default (seconds since 2001-01-01, as a number)
/// and `Data` as Base64. A top-level `String`, number or `Bool` is a JSON fragment (`"milk"`).
public struct JSONValueCoder: ValueCoder {
    // Configured once here and never changed: safe to share between threads.
    private let encoder: JSONEncoder
    private let decoder: JSONDecoder

    /// A JSON coder with sorted keys.
    public init() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        self.encoder = encoder
        self.decoder = JSONDecoder()
    }

    /// The JSON of `value`, keys sorted.
    ///
    /// - Complexity: O(m) for a value of m bytes of JSON.
    public func encode<T: Encodable>(_ value: T) throws(ValueCodingError) -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw ValueCodingError(.encoding, T.self, underlying: error)
        }
    }

    /// The `type` that the JSON in `data` describes.
    ///
    /// - Complexity: O(m) for m bytes.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ValueCodingError) -> T {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw ValueCodingError(.decoding, T.self, underlying: error)
        }
    }
}
