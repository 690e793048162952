/// Appends bit fields of any width (0 to 64 bits) to a byte array: the packed areas of the wire
/// format (Docs/WireFormat.md, §1 "Bit fields").
///
/// Bits fill each byte from its least significant bit up, and a field's bits are written least
/// significant first, so a field may straddle bytes. ``finish()`` pads the last byte with zero bits.
package struct BitWriter {
    private var bytes: [UInt8] = []
    /// Bits written but not yet appended as a byte (fewer than 8, in the low bits).
    private var pending: UInt64 = 0
    private var pendingBits = 0

    package init() {}

    /// The number of bits written so far.
    package var bitCount: Int { bytes.count * 8 + pendingBits }

    /// Appends the low `width` bits of `value`; `value` must fit in `width` bits.
    ///
    /// - Complexity: O(width / 8).
    package mutating func write(_ value: UInt64, width: Int) {
        precondition(width >= 0 && width <= 64 && (width == 64 || value >> UInt64(width) == 0),
                     "\(value) does not fit in \(width) bits")
        if width > 56 {
            // Keep pending bits (< 8) plus the field within one UInt64.
            write(value & 0xFFFF_FFFF, width: 32)
            write(value >> 32, width: width - 32)
            return
        }
        pending |= value << UInt64(pendingBits)
        pendingBits += width
        while pendingBits >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: pending))
            pending >>= 8
            pendingBits -= 8
        }
    }

    /// The bytes written, the last one padded with zero bits.
    ///
    /// - Complexity: O(1) (the array is moved out, not copied).
    package consuming func finish() -> [UInt8] {
        if pendingBits > 0 { bytes.append(UInt8(truncatingIfNeeded: pending)) }
        return bytes
    }
}

/// Reads bit fields written by ``BitWriter`` from a byte range of the input, throwing a typed error
/// when a field runs past the range, and checking at the end that the range was used up exactly.
package struct BitReader {
    private let bytes: [UInt8]
    private let start: Int
    private let end: Int
    /// The number of bits read so far, from the start of the range.
    package private(set) var position = 0

    /// A reader of `bytes[range]`; `range` must lie within `bytes` (the caller has checked it).
    package init(_ bytes: [UInt8], range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count)
        self.bytes = bytes
        start = range.lowerBound
        end = range.upperBound
    }

    /// The offset in the whole input of the byte holding the next bit (for error messages).
    package var byteOffset: Int { start + position >> 3 }

    /// Reads a field of `width` bits (0 to 64), least significant bit first.
    ///
    /// - Throws: `truncated(offset:)` at the end of the range if fewer than `width` bits are left;
    ///   then nothing is consumed.
    /// - Complexity: O(width / 8).
    package mutating func read(_ width: Int) throws(WireError) -> UInt64 {
        precondition(width >= 0 && width <= 64)
        guard width <= (end - start) * 8 - position else { throw .truncated(offset: end) }
        var result: UInt64 = 0
        var got = 0
        while got < width {
            let shift = position & 7
            let take = min(8 - shift, width - got)
            let chunk = (UInt64(bytes[start + position >> 3]) >> UInt64(shift)) & ((1 << UInt64(take)) - 1)
            result |= chunk << UInt64(got)
            got += take
            position += take
        }
        return result
    }

    /// Reads one bit.
    ///
    /// - Complexity: O(1).
    package mutating func bit() throws(WireError) -> Bool {
        guard position < (end - start) * 8 else { throw .truncated(offset: end) }
        let b = (bytes[start + position >> 3] >> UInt8(position & 7)) & 1
        position += 1
        return b == 1
    }

    /// Checks that the fields read used the range exactly: no whole byte left over, and the
    /// padding bits of the last byte all zero.
    ///
    /// - Complexity: O(1).
    package func finish() throws(WireError) {
        let used = (position + 7) / 8
        guard start + used == end else {
            throw .invalidValue("\(end - start - used) bytes left over in a packed area", offset: start + used)
        }
        if position & 7 != 0, bytes[start + position >> 3] >> UInt8(position & 7) != 0 {
            throw .invalidValue("padding bits not zero", offset: start + position >> 3)
        }
    }
}
