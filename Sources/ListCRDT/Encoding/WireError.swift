/// Why bytes could not be decoded. Every malformed input gives one of these, never a crash, and
/// nothing is applied anywhere: decoding finishes and validates before it returns.
///
/// Offsets count from the first byte of the input.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input ended in the middle of something; `offset` is where more bytes were needed.
    case truncated(offset: Int)
    /// The format version byte is one this build does not read. Upgrade, or ask the peer for an
    /// older version.
    case unsupportedVersion(UInt8)
    /// A record tag, or a flag in it, that means nothing in this version.
    case invalidTag(UInt8, offset: Int)
    /// A count larger than the bytes left (or the caller's limit) could hold.
    case countTooLarge(Int, offset: Int)
    /// A field that decodes but breaks a rule (a zero counter, an unknown replica index, ...).
    case invalidValue(String, offset: Int)
    /// Bytes left over after the last record.
    case trailingBytes(Int)
    /// A varint longer than 10 bytes or above `UInt64.max`.
    case invalidVarint(offset: Int)
    /// A value longer than the caller's limit.
    case valueTooLarge(Int, limit: Int, offset: Int)
    /// A snapshot whose operations do not replay to the version its header states.
    case inconsistentSnapshot(String)

    public var description: String {
        switch self {
        case .truncated(let o): "input truncated: more bytes needed at byte \(o)"
        case .unsupportedVersion(let v): "unsupported format version \(v)"
        case .invalidTag(let t, let o): "invalid tag 0x\(String(t, radix: 16)) at byte \(o)"
        case .countTooLarge(let n, let o): "count \(n) at byte \(o) is more than the input can hold or the limit allows"
        case .invalidValue(let what, let o): "invalid value at byte \(o): \(what)"
        case .trailingBytes(let n): "\(n) unexpected bytes after the end"
        case .invalidVarint(let o): "malformed varint at byte \(o)"
        case .valueTooLarge(let n, let limit, let o): "value of \(n) bytes at byte \(o) is over the limit of \(limit)"
        case .inconsistentSnapshot(let why): "inconsistent snapshot: \(why)"
        }
    }
}
