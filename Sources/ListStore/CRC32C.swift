/// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of every log record
/// and snapshot file (Docs/Storage.md), with the masking of LevelDB/RocksDB for CRCs stored next to
/// the data they cover.
///
/// Software slicing-by-8: eight 256-entry tables, eight bytes per step.
///
/// ```swift
/// CRC32C.checksum(Array("123456789".utf8))   // 0xE3069283
/// var crc = CRC32C()
/// crc.update(header); crc.update(payload)
/// crc.value                                   // the same as checksum(header + payload)
/// ```
public struct CRC32C: Hashable, Sendable {
    /// The running register (inverted), so that `value` is the CRC of the bytes seen so far.
    private var register: UInt32 = 0xFFFF_FFFF

    /// A checksum of no bytes yet.
    public init() {}

    /// The CRC-32C of the bytes given to ``update(_:)`` so far.
    public var value: UInt32 { ~register }

    /// The CRC-32C of `bytes`.
    ///
    /// - Complexity: O(n).
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.value
    }

    /// Adds `bytes` to the checksum.
    ///
    /// - Complexity: O(n).
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { update(Array(bytes)) }
    }

    /// Adds the bytes of `buffer` to the checksum.
    ///
    /// - Complexity: O(n).
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        var crc = register
        var i = 0
        let n = buffer.count
        Self.tables.withUnsafeBufferPointer { t in
            while n - i >= 8 {
                let lo = crc ^ (UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8
                    | UInt32(buffer[i + 2]) << 16 | UInt32(buffer[i + 3]) << 24)
                let hi = UInt32(buffer[i + 4]) | UInt32(buffer[i + 5]) << 8
                    | UInt32(buffer[i + 6]) << 16 | UInt32(buffer[i + 7]) << 24
                crc = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                crc = t[Int((crc ^ UInt32(buffer[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        register = crc
    }

    /// The masked form of a CRC stored next to the data it covers: a CRC of bytes that themselves
    /// contain CRCs is then not trivially related to them. `((c >> 15) | (c << 17)) &+ 0xa282ead8`.
    @inlinable
    public static func masked(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }

    /// The CRC a masked value was made from: the inverse of ``masked(_:)``.
    @inlinable
    public static func unmasked(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- 0xA282_EAD8
        return (rotated >> 17) | (rotated << 15)
    }

    /// The eight slicing tables, table k at `k * 256`: table 0 is the classic byte table, table k
    /// advances a byte's contribution by k more zero bytes.
    static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for b in 0..<256 {
            var c = UInt32(b)
            for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[b] = c
        }
        for k in 1..<8 {
            for b in 0..<256 {
                let prev = t[(k - 1) * 256 + b]
                t[k * 256 + b] = t[Int(prev & 0xFF)] ^ (prev >> 8)
            }
        }
        return t
    }()
}
