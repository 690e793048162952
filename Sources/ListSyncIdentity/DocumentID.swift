/// A document's identity: 16 bytes, shown as 32 hexadecimal digits. It names the document in the
/// sync protocol, in the daemon's data folder and in the store's files.
public struct DocumentID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The first eight bytes, big-endian (so the hex form reads in byte order).
    public var high: UInt64
    /// The last eight bytes, big-endian.
    public var low: UInt64

    /// The id with these two halves.
    public init(high: UInt64, low: UInt64) { (self.high, self.low) = (high, low) }

    /// The id of 16 bytes; nil for another count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        let b = Array(bytes)
        high = b[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = b[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The id written as 32 hexadecimal digits (either case); nil otherwise.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: 32, by: 2) {
            guard let h = Self.nibble(digits[i]), let l = Self.nibble(digits[i + 1]) else { return nil }
            bytes.append(h << 4 | l)
        }
        self.init(bytes: bytes)
    }

    /// A random id from `generator`.
    public static func random(using generator: inout some RandomNumberGenerator) -> DocumentID {
        DocumentID(high: generator.next(), low: generator.next())
    }

    /// The 16 bytes.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// 32 lowercase hexadecimal digits.
    public var description: String {
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }

    public static func < (a: DocumentID, b: DocumentID) -> Bool { (a.high, a.low) < (b.high, b.low) }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
